/**
 * SQS worker Lambda: the connector invocation queue → Runtime.runAttempt.
 *
 * Messages carry identifiers and the fence ({kind:'invoke', tenant_id,
 * action_id, transaction_id?, fence, attempt}), and a fresh admission's also
 * the images of what it wrote (`admitted`); the Runtime starts the first
 * delivery from those (the record's SQS receive count goes with it, in the
 * budget), reloads the action from the store otherwise, and applies the
 * crash-safe attempt rules on a redelivery (docs/runtime.md, "The worker's
 * first read"). Partial batch failures, and the delay of a deferred attempt's
 * redelivery: see ../shared/queue-consumer.ts.
 */
import { getRuntime } from '../shared/bootstrap.js';
import { createQueueConsumer, type QueueConsumerDeps, type SqsHandler } from '../shared/queue-consumer.js';
import type { WorkerRuntime } from '../shared/runtime-contract.js';

export type InvokeHandlerDeps = QueueConsumerDeps<Pick<WorkerRuntime, 'runAttempt' | 'redeliverInvokeAfter'>>;

export function createInvokeHandler(deps: InvokeHandlerDeps): SqsHandler {
  return createQueueConsumer(
    {
      name: 'invoke-worker',
      kind: 'invoke',
      metricPrefix: 'InvokeMessages',
      run: (runtime, message, budget) => runtime.runAttempt(message, budget),
      // A deferred attempt (e.g. a remote host at capacity) comes back after its backoff, not the visibility timeout.
      redeliverAfter: async (runtime, receiptHandle, delayMs) => runtime.redeliverInvokeAfter?.(receiptHandle, delayMs),
    },
    deps,
  );
}

/** The deployed handler (`functions/worker/invoke.handler`). */
export const handler: SqsHandler = createInvokeHandler({ runtime: getRuntime });
