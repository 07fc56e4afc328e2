/**
 * Sweeper Lambda, run by an EventBridge rule every minute → Runtime.sweep.
 *
 * The safety net behind EventBridge Scheduler: the Runtime finds overdue
 * `outcome_unknown` records through the sparse status index and enqueues
 * their reconciliation (`reason: 'sweeper'`). Locally (dev/local/start.ts)
 * a 60 s timer calls this same handler, since LocalStack's Scheduler never
 * fires. A failed sweep throws: the invocation is marked failed (worker
 * error alarm), and the next minute's run tries again.
 *
 * Every run publishes AIP_METRICS.oldestOutcomeUnknownAge (unit Seconds, no
 * dimension besides Powertools' default `service`), the metric the stack's
 * oldest-outcome-unknown alarm watches (infra/alarms.ts).
 */
import type { Context, ScheduledEvent } from 'aws-lambda';
import { AIP_METRICS } from '../../lib/config/function-env.js';
import { getRuntime } from '../shared/bootstrap.js';
import { MetricUnit, withConsumerObservability } from '../shared/consumer-middleware.js';
import { lazyHandler } from '../shared/lazy.js';
import { defaultObservability, type Observability } from '../shared/observability.js';
import type { RuntimeProvider, SweepResult, WorkerRuntime } from '../shared/runtime-contract.js';

export interface SweeperHandlerDeps {
  readonly runtime: RuntimeProvider<Pick<WorkerRuntime, 'sweep'>>;
  readonly observability?: Observability;
}

export type SweeperHandler = (event: ScheduledEvent, context: Context) => Promise<SweepResult>;

export function createSweeperHandler(deps: SweeperHandlerDeps): SweeperHandler {
  const build = async (): Promise<SweeperHandler> => {
    const obs = deps.observability ?? defaultObservability();
    const body = async (): Promise<SweepResult> => {
      const runtime = await deps.runtime();
      // The Runtime's clock decides what is overdue (the event's time is only the rule's schedule).
      const result = await runtime.sweep();
      const age = result.oldest_outcome_unknown_age_seconds;
      obs.metrics?.addMetric('SweeperEnqueued', MetricUnit.Count, result.enqueued);
      obs.metrics?.addMetric(AIP_METRICS.oldestOutcomeUnknownAge, MetricUnit.Seconds, age);
      if (result.enqueued > 0)
        obs.logger.info('sweeper: reconciliation enqueued for overdue records', { enqueued: result.enqueued, oldest_outcome_unknown_age_seconds: age });
      else obs.logger.debug('sweeper: nothing overdue', { oldest_outcome_unknown_age_seconds: age });
      return { enqueued: result.enqueued, oldest_outcome_unknown_age_seconds: age };
    };
    return withConsumerObservability(body, obs);
  };
  return lazyHandler(build);
}

/** The deployed handler (`functions/scheduled/sweeper.handler`). */
export const handler: SweeperHandler = createSweeperHandler({ runtime: getRuntime });
