/**
 * The part of ./observability.ts that every function needs, the authorizer
 * included: the Powertools Logger, the process-wide instance and the Tracer
 * on demand, without Powertools Metrics (the authorizer publishes no metric,
 * so its bundle does not carry the metrics client: docs/bench/analysis.md,
 * "Cold start and bundles"). The rest of the functions use
 * ./observability.ts, which adds the metrics.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { MiddlewareObj } from '@middy/core';
import { once } from './lazy.js';
import type { LoggerLike } from './logger.js';

export type { LoggerLike };

export const SERVICE_NAME = 'aip-runtime';

export interface Observability {
  logger: LoggerLike;
  metrics?: Metrics;
  tracer?: Tracer;
}

export function inLambda(env: NodeJS.ProcessEnv = process.env): boolean {
  return typeof env.AWS_LAMBDA_FUNCTION_NAME === 'string' && env.AWS_LAMBDA_FUNCTION_NAME.length > 0;
}

let shared: Observability | undefined;

/**
 * The process-wide Observability, made by `create` on first use (one per
 * process: whichever entry point asks first decides what it holds).
 */
export function sharedObservability(create: (logger: Logger, lambda: boolean) => Observability): Observability {
  if (shared !== undefined) return shared;
  const lambda = inLambda();
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME;
  const logger = new Logger({ serviceName, ...(process.env.POWERTOOLS_LOG_LEVEL === undefined && !lambda ? { logLevel: 'WARN' as const } : {}) });
  shared = create(logger, lambda);
  return shared;
}

/** The process-wide Observability of a function that publishes no metric: the Logger (and the Tracer, {@link withTracer}). */
export function loggingObservability(): Observability {
  return sharedObservability((logger) => ({ logger }));
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

/** Lambda context on the logger and handler tracing (responses never captured), outermost first, each when present. */
export function loggingMiddlewares<TEvent, TResult>(obs: Observability): MiddlewareObj<TEvent, TResult>[] {
  // The Powertools middlewares read only the Lambda context and the handler's outcome: any event and result type fits.
  type Mw = MiddlewareObj<TEvent, TResult>;
  const out: Mw[] = [];
  if (obs.logger instanceof Logger) out.push(injectLambdaContext(obs.logger, { logEvent: false, resetKeys: true }) as Mw);
  if (obs.tracer) out.push(captureLambdaHandler(obs.tracer, { captureResponse: false }) as Mw);
  return out;
}
