/**
 * Powertools Logger, Metrics and Tracer shared by the Lambda entrypoints (the
 * HTTP routes here; the queue consumers and the sweeper use the same
 * instances through ./consumer-middleware.ts; the authorizer, which publishes
 * no metric, uses ./observability-base.ts alone). Safe to run anywhere:
 *
 * - in Lambda (AWS_LAMBDA_FUNCTION_NAME set): a Powertools Logger, EMF
 *   Metrics and, unless POWERTOOLS_TRACE_ENABLED is `false` (the stack sets
 *   it from the configuration's `tracing`), an X-Ray Tracer;
 * - elsewhere (tests, the local stack): a Powertools Logger at WARN (unless
 *   POWERTOOLS_LOG_LEVEL is set) and no metrics or tracer, since neither has
 *   a receiver there.
 *
 * Instances are created on first use, not at import, so a process can set
 * POWERTOOLS_* variables after importing a handler module. The Tracer (and
 * the X-Ray SDK under it: about 100 KiB of code, tens of ms of import) is not
 * even imported unless tracing is on, and then only on the first invocation
 * that X-Ray samples (./observability-base.ts `tracingMiddleware`; a chunk of
 * its own in the bundle, infra/bundling.ts): an unsampled invocation records
 * nothing.
 *
 * Logging rule: identifiers, statuses, codes and durations. Never a token, a
 * request body, query values or the message of a foreign error.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { MiddlewareObj } from '@middy/core';
import { loggingMiddlewares, SERVICE_NAME, sharedObservability, type Observability } from './observability-base.js';

export { MetricUnit };
export { inLambda, SERVICE_NAME, tracingEnabled, type LoggerLike, type Observability } from './observability-base.js';

export const METRICS_NAMESPACE = 'AIP';

/** Process-wide Powertools instances (created on first use): the Logger, and EMF Metrics in Lambda. */
export function defaultObservability(): Observability {
  return sharedObservability((logger, lambda) =>
    lambda
      ? {
          logger,
          metrics: new Metrics({
            namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE,
            serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME,
          }),
        }
      : { logger },
  );
}

/**
 * The Powertools middlewares of an Observability, outermost first: Lambda
 * context on the logger, handler tracing (responses never captured), metrics
 * flush. Each only when the corresponding instance is present.
 */
export function powertoolsMiddlewares<TEvent, TResult>(obs: Observability): MiddlewareObj<TEvent, TResult>[] {
  type Mw = MiddlewareObj<TEvent, TResult>;
  const out: Mw[] = loggingMiddlewares<TEvent, TResult>(obs);
  if (obs.metrics) out.push(logMetrics(obs.metrics, { throwOnEmptyMetrics: false }) as Mw);
  return out;
}
