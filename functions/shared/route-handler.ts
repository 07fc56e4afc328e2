/**
 * Builds a route's Lambda handler: its middy chain, in this order, from the
 * route table entry (lib/http/routes.ts), behind the HTTP API adapter
 * (./http-api-event.ts: a payload format 2.0 event is put in the REST shape):
 *
 *   Powertools (logger context, tracer, metrics) → access log → error mapping
 *   → caller identity + route scopes → tenant selection → body size limit
 *   → content type → JSON parse → path/query/body validation → handler
 *
 * Authentication and authorization problems (401/403, tenant) come before
 * anything about the request's shape, so an unauthorised caller learns
 * nothing from validation errors.
 *
 * The handler gets typed, validated inputs and returns `{status, body,
 * headers}`; it never sees the raw event body, and it never builds error
 * responses itself (it throws AipError).
 */
import middy from '@middy/core';
import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import type * as z from '../../packages/connector-sdk/src/common/zod.js';
import type { GatewayJwtPolicy } from '../../lib/auth/gateway-jwt.js';
import type { CallerIdentity } from '../../lib/auth/identity.js';
import type { RouteDefinition } from '../../lib/http/routes.js';
import { bodyLimit, DEFAULT_MAX_BODY_BYTES } from './body-limit.js';
import { callerIdentity } from './caller-identity.js';
import { contentType } from './content-type.js';
import { httpErrorHandler } from './error-handler.js';
import { fromHttpApiEvent, isHttpApiEvent, type HttpApiEvent } from './http-api-event.js';
import { jsonResponse, requestState, type AipHttpEvent, type HttpResult } from './http.js';
import { httpObservability } from './http-observability.js';
import { jsonBody } from './json-body.js';
import { lazyHandler } from './lazy.js';
import { defaultObservability, type Observability } from './observability.js';
import { resolveRuntime, type RuntimeApi, type RuntimeProvider } from './runtime-api.js';
import { tenantSelection } from './tenant.js';
import { parseAt, validateRequest } from './validate-request.js';
import { SYSTEM_CLOCK, type SettleTimes, type WaitClock, type WaitPollOptions } from './wait.js';

export interface HttpDeps {
  /** The runtime, or a memoised factory (production: functions/shared/production-runtime.ts). */
  readonly runtime: RuntimeProvider;
  /** @default the process-wide Powertools instances */
  readonly observability?: Observability;
  /** Clock for waits. @default the system clock */
  readonly clock?: WaitClock;
  /**
   * Poll schedule of `Prefer: wait` / `?wait=` (./wait.ts). @default 25 ms for
   * 250 ms, then ×1.5 per poll up to 1 s; a POST wait's first poll timed to the
   * capability's measured settle time
   */
  readonly waitPoll?: WaitPollOptions;
  /** Settle times measured by waits. @default this execution environment's (./wait.ts SETTLE_TIMES) */
  readonly settleTimes?: SettleTimes;
  /** The handlers' own body limit in bytes. @default 256 KiB */
  readonly maxBodyBytes?: number;
  /** HTTP API requests: what the JWT authorizer's claims are checked against (./caller-identity.ts). @default from AIP_RUNTIME_CONFIG */
  readonly gatewayJwt?: GatewayJwtPolicy | (() => GatewayJwtPolicy);
}

export type ProxyHandler = (event: AipHttpEvent, context: Context) => Promise<APIGatewayProxyResult>;
/** What {@link createRouteHandler} builds: a {@link ProxyHandler} that also takes an HTTP API (payload format 2.0) event. */
export type ApiHandler = (event: AipHttpEvent | HttpApiEvent, context: Context) => Promise<APIGatewayProxyResult>;

type Out<T> = T extends z.ZodMiniType ? z.output<T> : undefined;

export interface RouteRequest<P, Q, B> {
  readonly event: AipHttpEvent;
  readonly context: Context;
  /** Undefined only on public routes. */
  readonly caller: CallerIdentity;
  /** Set on routes whose tenant requirement is `required` (and, when chosen, `optional`). */
  readonly tenant_id: string | undefined;
  readonly path: P;
  readonly query: Q;
  readonly body: B;
  readonly runtime: () => Promise<RuntimeApi>;
  readonly clock: WaitClock;
  /** Milliseconds left before the Lambda times out (undefined outside Lambda). */
  remainingMs(): number | undefined;
}

export interface RouteHandlerOptions<B> {
  /** Custom body validation (default: the route's bodySchema). */
  readonly parseBody?: (json: unknown) => B;
}

/** Time middy keeps back to turn an imminent Lambda timeout into a 504 problem. */
export const TIMEOUT_EARLY_MS = 500;

export function createRouteHandler<P extends z.ZodMiniType, Q extends z.ZodMiniType, B extends z.ZodMiniType, TBody = Out<B>>(
  route: RouteDefinition<P, Q, B>,
  deps: HttpDeps,
  handle: (request: RouteRequest<Out<P>, Out<Q>, TBody>) => Promise<HttpResult>,
  options: RouteHandlerOptions<TBody> = {},
): ApiHandler {
  const clock = deps.clock ?? SYSTEM_CLOCK;
  const runtime = () => resolveRuntime(deps.runtime);

  const parseBody = (json: unknown): unknown => {
    if (options.parseBody) return options.parseBody(json);
    if (route.bodySchema === undefined || route.body === 'none') return undefined;
    return parseAt(route.bodySchema, json === undefined && route.body === 'optional' ? {} : json, 'body');
  };

  const build = async () => {
    const obs = deps.observability ?? defaultObservability();
    const base = async (event: AipHttpEvent, context: Context): Promise<APIGatewayProxyResult> => {
      const state = requestState(event);
      const result = await handle({
        event,
        context,
        caller: state.caller as CallerIdentity,
        tenant_id: state.tenant_id,
        path: state.path as Out<P>,
        query: state.query as Out<Q>,
        body: state.body as TBody,
        runtime,
        clock,
        remainingMs: () => (typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : undefined),
      });
      return jsonResponse(result.status, result.body, result.headers);
    };
    const h = middy<AipHttpEvent, APIGatewayProxyResult>(base, { timeoutEarlyInMillis: TIMEOUT_EARLY_MS });
    h.use(httpObservability(obs, route.id));
    h.use(httpErrorHandler({ logger: obs.logger }));
    if (route.auth === 'jwt') {
      h.use(callerIdentity({ anyOfScopes: route.scopes, ...(deps.gatewayJwt !== undefined ? { gatewayJwt: deps.gatewayJwt } : {}) }));
      h.use(tenantSelection({ requirement: route.tenant }));
    }
    h.use(bodyLimit({ maxBytes: deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES }));
    h.use(contentType({ body: route.body }));
    h.use(jsonBody());
    h.use(validateRequest({ ...(route.pathParams ? { path: route.pathParams } : {}), query: route.query, body: parseBody }));
    return h;
  };

  // Built on the first invocation (the tracer, when on, is imported on the first sampled one: ./observability-base.ts).
  const handler = lazyHandler(build);
  // An HTTP API event is put in the REST shape first (./http-api-event.ts); the chain is the same.
  return (event, context) => handler(isHttpApiEvent(event) ? fromHttpApiEvent(event) : event, context);
}
