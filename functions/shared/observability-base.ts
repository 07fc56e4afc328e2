/**
 * The part of ./observability.ts that every function needs, the authorizer
 * included: the Powertools Logger, the process-wide instance and the Tracer
 * on demand (loaded on the first sampled invocation), without Powertools Metrics (the authorizer publishes no metric,
 * so its bundle does not carry the metrics client: docs/bench/analysis.md,
 * "Cold start and bundles"). The rest of the functions use
 * ./observability.ts, which adds the metrics.
 */
import { LogFormatter, LogItem, Logger } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import { isRequestXRaySampled } from '@aws-lambda-powertools/commons/utils/env';
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

/**
 * Powertools' JSON line without what the log group already says: the
 * function's name, ARN and memory size (each function has its own log group,
 * and the memory is its configuration) and the log sampling rate (not used).
 * Kept: level, message, timestamp, service, cold start, the invocation's
 * request ID (what Lambda's own records carry) and the X-Ray trace ID, then
 * the line's own keys. About 150 bytes less per line (docs/bench/analysis.md,
 * "Issue 22: logs and traces").
 */
export class LeanLogFormatter extends LogFormatter {
  formatAttributes(attributes: UnformattedAttributes, additionalLogAttributes: LogAttributes): LogItem {
    return new LogItem({
      attributes: {
        level: attributes.logLevel,
        message: attributes.message,
        timestamp: this.formatTimestamp(attributes.timestamp),
        service: attributes.serviceName,
        cold_start: attributes.lambdaContext?.coldStart,
        function_request_id: attributes.lambdaContext?.awsRequestId,
        xray_trace_id: attributes.xRayTraceId,
      },
    }).addAttributes(additionalLogAttributes);
  }
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
  const logger = new Logger({
    serviceName,
    logFormatter: new LeanLogFormatter(),
    ...(process.env.POWERTOOLS_LOG_LEVEL === undefined && !lambda ? { logLevel: 'WARN' as const } : {}),
  });
  shared = create(logger, lambda);
  return shared;
}

/** The process-wide Observability of a function that publishes no metric: the Logger (and the Tracer, {@link tracingMiddleware}). */
export function loggingObservability(): Observability {
  return sharedObservability((logger) => ({ logger }));
}

/** Whether the process-wide Observability traces: in Lambda, unless POWERTOOLS_TRACE_ENABLED is `false`. */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return inLambda(env) && (env.POWERTOOLS_TRACE_ENABLED ?? '').trim().toLowerCase() !== 'false';
}

/** Whether an invocation of this execution environment has started (the Tracer's `ColdStart` annotation). */
let invoked = false;

/**
 * Imports the tracer module and gives the shared Observability its Tracer,
 * once (a failed import is tried again). `coldStart`: whether the invocation
 * that loads it is the environment's first; when it is not, the Tracer's own
 * cold-start flag is spent at once, so its `ColdStart` annotation says false.
 */
const loadTracer = once(async (coldStart: boolean) => {
  const { Tracer: TracerClass } = await import('@aws-lambda-powertools/tracer');
  /** The Tracer, told whether the environment's first invocation is past (Powertools keeps the flag protected). */
  class EnvironmentTracer extends TracerClass {
    constructor(options: ConstructorParameters<typeof TracerClass>[0], firstInvocation: boolean) {
      super(options);
      if (!firstInvocation) this.getColdStart();
    }
  }
  const target = shared as Observability;
  // captureHTTPsRequests patches node:http's and node:https's request and get, which the AWS SDK's handler reads from
  // node:https per request (clients made before are traced too), and subscribes to fetch's diagnostics channel.
  target.tracer ??= new EnvironmentTracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? SERVICE_NAME, captureHTTPsRequests: true }, coldStart);
});

/**
 * The handler tracing of the process-wide Observability when tracing is on,
 * with the Tracer loaded on demand: on the first invocation that X-Ray samples
 * (`Sampled=1` in the invocation's trace header, read as the Tracer reads it:
 * Lambda's invoke store, else `_X_AMZN_TRACE_ID`). An unsampled invocation
 * records nothing in X-Ray, so until then nothing imports the tracer and the
 * X-Ray SDK under it (about 100 KB, ~30 ms of CPU). From the invocation that
 * loads it on, every invocation runs Powertools' `captureLambdaHandler`, as
 * when the Tracer is loaded up front. An invocation whose `before` ran without
 * the Tracer (another one loaded it meanwhile) is left alone to its end.
 */
function tracerOnDemand<TEvent, TResult>(obs: Observability): MiddlewareObj<TEvent, TResult> {
  type Mw = MiddlewareObj<TEvent, TResult>;
  let capture: Mw | undefined;
  const captured = new WeakSet<object>();
  return {
    before: async (request) => {
      const coldStart = !invoked;
      invoked = true;
      if (obs.tracer === undefined && isRequestXRaySampled()) await loadTracer(coldStart);
      if (obs.tracer === undefined) return;
      capture ??= captureLambdaHandler(obs.tracer, { captureResponse: false }) as Mw;
      captured.add(request);
      await capture.before?.(request);
    },
    after: async (request) => {
      if (captured.has(request)) await capture?.after?.(request);
    },
    onError: async (request) => {
      if (captured.has(request)) await capture?.onError?.(request);
    },
  };
}

/**
 * Handler tracing (responses never captured), or undefined when `obs` does
 * not trace: Powertools' `captureLambdaHandler` on `obs.tracer` when it has
 * one (tests, in-process hosts); for the process-wide instance with tracing
 * enabled, the same with the Tracer loaded on the first sampled invocation
 * ({@link tracerOnDemand}). So a function that does not trace never loads it.
 */
export function tracingMiddleware<TEvent, TResult>(obs: Observability): MiddlewareObj<TEvent, TResult> | undefined {
  if (obs.tracer !== undefined) return captureLambdaHandler(obs.tracer, { captureResponse: false }) as MiddlewareObj<TEvent, TResult>;
  return obs === shared && tracingEnabled() ? tracerOnDemand<TEvent, TResult>(obs) : undefined;
}

/** Lambda context on the logger and handler tracing (responses never captured), outermost first, each when present. */
export function loggingMiddlewares<TEvent, TResult>(obs: Observability): MiddlewareObj<TEvent, TResult>[] {
  // The Powertools middlewares read only the Lambda context and the handler's outcome: any event and result type fits.
  type Mw = MiddlewareObj<TEvent, TResult>;
  const out: Mw[] = [];
  if (obs.logger instanceof Logger) out.push(injectLambdaContext(obs.logger, { logEvent: false, resetKeys: true }) as Mw);
  const tracing = tracingMiddleware<TEvent, TResult>(obs);
  if (tracing) out.push(tracing);
  return out;
}
