/**
 * Reconcile queue consumer Lambda → Runtime.reconcile.
 *
 * The queue is fed by the one-time EventBridge Scheduler schedules
 * (`reason: 'schedule'`) and by the sweeper (`reason: 'sweeper'`). Each
 * message names one `outcome_unknown` transaction; the Runtime runs the
 * reconciliation as a governed action of its own service principal, with
 * bounded attempts and backoff before `requires_human`. Partial batch
 * failures: see ../shared/queue-consumer.ts.
 */
import { getRuntime } from '../shared/bootstrap.js';
import { createQueueConsumer, type QueueConsumerDeps, type SqsHandler } from '../shared/queue-consumer.js';
import type { WorkerRuntime } from '../shared/runtime-contract.js';

export type ReconcileHandlerDeps = QueueConsumerDeps<Pick<WorkerRuntime, 'reconcile'>>;

export function createReconcileHandler(deps: ReconcileHandlerDeps): SqsHandler {
  return createQueueConsumer(
    { name: 'reconcile-consumer', kind: 'reconcile', metricPrefix: 'ReconcileMessages', run: (runtime, message, budget) => runtime.reconcile(message, budget) },
    deps,
  );
}

/** The deployed handler (`functions/worker/reconcile.handler`). */
export const handler: SqsHandler = createReconcileHandler({ runtime: getRuntime });
