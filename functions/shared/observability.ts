/**
 * Powertools Logger, Metrics and Tracer shared by the Lambda entrypoints (the
 * HTTP routes and authorizer here; the queue consumers and the sweeper use
 * the same instances through ./consumer-middleware.ts). Safe to run anywhere:
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
 * even imported unless tracing is on: {@link withTracer} imports it when the
 * handler builds its middleware chain, on the first invocation (a chunk of
 * its own in the bundle, infra/bundling.ts).
 *
 * Logging rule: identifiers, statuses, codes and durations. Never a token, a
 * request body, query values or the message of a foreign error.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { MiddlewareObj } from '@middy/core';
import { once } from './lazy.js';
import type { LoggerLike } from './logger.js';

export { MetricUnit };
export type { LoggerLike };

export const SERVICE_NAME = 'aip-runtime';
export const METRICS_NAMESPACE = 'AIP';

export interface Observability {
  logger: LoggerLike;
  metrics?: Metrics;
  tracer?: Tracer;
}

export function inLambda(env: NodeJS.ProcessEnv = process.env): boolean {
  return typeof env.AWS_LAMBDA_FUNCTION_NAME === 'string' && env.AWS_LAMBDA_FUNCTION_NAME.length > 0;
}

let shared: Observability | undefined;

/** Process-wide Powertools instances (created on first use). */
export function defaultObservability(): Observability {
  if (shared !== undefined) return shared;
  const lambda = inLambda();
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME;
  const logger = new Logger({ serviceName, ...(process.env.POWERTOOLS_LOG_LEVEL === undefined && !lambda ? { logLevel: 'WARN' as const } : {}) });
  const created: Observability = lambda
    ? {
        logger,
        metrics: new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE, serviceName }),
      }
    : { logger };
  shared = created;
  return created;
}

/** Whether the process-wide Observability traces: in Lambda, unless POWERTOOLS_TRACE_ENABLED is `false`. */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return inLambda(env) && (env.POWERTOOLS_TRACE_ENABLED ?? '').trim().toLowerCase() !== 'false';
}

/** Imports the tracer module and gives the shared Observability its Tracer, once (a failed import is tried again). */
const loadTracer = once(async () => {
  const { Tracer: TracerClass } = await import('@aws-lambda-powertools/tracer');
  const target = shared as Observability;
  target.tracer ??= new TracerClass({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME, captureHTTPsRequests: true });
});

/**
 * `obs`, with the Powertools Tracer added when it is the process-wide
 * instance and tracing is enabled: the tracer module is imported here, once,
 * so a function that does not trace never loads it. Other Observability
 * objects (tests, in-process hosts) are returned as they are.
 */
export async function withTracer(obs: Observability): Promise<Observability> {
  if (obs !== shared || obs.tracer !== undefined || !tracingEnabled()) return obs;
  await loadTracer();
  return obs;
}

/**
 * The Powertools middlewares of an Observability, outermost first: Lambda
 * context on the logger, handler tracing (responses never captured), metrics
 * flush. Each only when the corresponding instance is present.
 */
export function powertoolsMiddlewares<TEvent, TResult>(obs: Observability): MiddlewareObj<TEvent, TResult>[] {
  // The Powertools middlewares read only the Lambda context and the handler's outcome: any event and result type fits.
  type Mw = MiddlewareObj<TEvent, TResult>;
  const out: Mw[] = [];
  if (obs.logger instanceof Logger) out.push(injectLambdaContext(obs.logger, { logEvent: false, resetKeys: true }) as Mw);
  if (obs.tracer) out.push(captureLambdaHandler(obs.tracer, { captureResponse: false }) as Mw);
  if (obs.metrics) out.push(logMetrics(obs.metrics, { throwOnEmptyMetrics: false }) as Mw);
  return out;
}
