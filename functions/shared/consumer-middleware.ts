/**
 * The middy chain of the non-HTTP entrypoints (SQS consumers, the sweeper).
 *
 * It uses the process-wide Powertools instances of ./observability.ts (shared
 * with the HTTP edge): in Lambda a Logger with the Lambda context injected,
 * EMF metrics flushed once per invocation (cold start included) and X-Ray
 * tracing of the handler (the tracer loaded on the first sampled invocation:
 * ./observability-base.ts); elsewhere (the local stack, tests) the logger only,
 * since Powertools' tracer and EMF output have no receiver there.
 *
 * middy's early-timeout is off: an attempt that outlives the function is
 * handled by the Runtime's leases and deadlines, not by rejecting the batch a
 * few milliseconds before Lambda would.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { tracingMiddleware } from './observability-base.js';
import type { Observability } from './observability.js';

export { MetricUnit } from '@aws-lambda-powertools/metrics';

export function withConsumerObservability<E, R>(
  fn: (event: E, context: Context) => Promise<R>,
  obs: Observability,
): (event: E, context: Context) => Promise<R> {
  const handler = middy<E, R, Error, Context>(fn, { timeoutEarlyInMillis: 0 });
  const tracing = tracingMiddleware<E, R>(obs);
  if (tracing) handler.use(tracing);
  if (obs.logger instanceof Logger) handler.use(injectLambdaContext(obs.logger, { logEvent: false, resetKeys: true }));
  if (obs.metrics) handler.use(logMetrics(obs.metrics, { captureColdStartMetric: true, throwOnEmptyMetrics: false }));
  return (event, context) => handler(event, context);
}
