/**
 * The HTTP API adapter: lets every route handler (and the console's) take an
 * API Gateway HTTP API event (Lambda payload format 2.0) as well as the REST
 * API's proxy event. It translates shapes and nothing else: no business
 * rule, no check; the middy chain after it is the one REST requests run.
 *
 * - method, path (without the stage prefix; `requestContext.path` keeps it,
 *   as REST's does), headers (the `cookies` array back into `Cookie`),
 *   repeated query parameters (from `rawQueryString`: the 2.0 map joins them
 *   with commas), path parameters and the body;
 * - the JWT authorizer's verified claims go to the request state
 *   (`gatewayJwt`), never to `requestContext.authorizer`, so nothing in a
 *   REST event can pose as them; ./caller-identity.ts derives the caller from
 *   them (lib/auth/gateway-jwt.ts). A 2.0 event of a public route has none.
 *
 * Responses need no translation: `{statusCode, headers, body}` is a valid
 * 2.0 response (the handlers never set `multiValueHeaders`).
 */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyEventV2WithJWTAuthorizer } from 'aws-lambda';
import { requestState, type AipHttpEvent } from './http.js';

/** An HTTP API (payload format 2.0) event, with or without the JWT authorizer's context. */
export type HttpApiEvent = APIGatewayProxyEventV2 | APIGatewayProxyEventV2WithJWTAuthorizer;

export function isHttpApiEvent(event: unknown): event is HttpApiEvent {
  return (
    typeof event === 'object' &&
    event !== null &&
    (event as { version?: unknown }).version === '2.0' &&
    typeof (event as { rawPath?: unknown }).rawPath === 'string'
  );
}

function queryMaps(raw: string): Pick<APIGatewayProxyEvent, 'queryStringParameters' | 'multiValueQueryStringParameters'> {
  if (raw === '') return { queryStringParameters: null, multiValueQueryStringParameters: null };
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  const define = <T>(o: Record<string, T>, k: string, v: T) => Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  for (const [k, v] of new URLSearchParams(raw)) {
    define(multi, k, [...(Object.hasOwn(multi, k) ? multi[k]! : []), v]);
    define(single, k, v);
  }
  return { queryStringParameters: single, multiValueQueryStringParameters: multi };
}

/** The route template of a 2.0 route key (`GET /v1/actions/{id}` → `/v1/actions/{id}`). */
function routePath(routeKey: string): string {
  const space = routeKey.indexOf(' ');
  return space < 0 ? routeKey : routeKey.slice(space + 1);
}

/** A 2.0 event in the REST proxy event's shape. */
export function fromHttpApiEvent(event: HttpApiEvent): AipHttpEvent {
  const ctx = event.requestContext;
  const stage = ctx.stage;
  const stagePrefix = stage && stage !== '$default' ? `/${stage}` : '';
  const rawPath = event.rawPath;
  const path = stagePrefix !== '' && (rawPath === stagePrefix || rawPath.startsWith(`${stagePrefix}/`)) ? rawPath.slice(stagePrefix.length) || '/' : rawPath;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) if (typeof v === 'string') headers[k] = v;
  if (event.cookies !== undefined && event.cookies.length > 0) headers.cookie = event.cookies.join('; ');
  const resource = routePath(event.routeKey);
  const converted = {
    resource,
    path,
    httpMethod: ctx.http.method,
    headers,
    multiValueHeaders: {},
    ...queryMaps(event.rawQueryString ?? ''),
    pathParameters: event.pathParameters ?? null,
    stageVariables: event.stageVariables ?? null,
    body: event.body ?? null,
    isBase64Encoded: event.isBase64Encoded,
    requestContext: {
      accountId: ctx.accountId,
      apiId: ctx.apiId,
      authorizer: null,
      domainName: ctx.domainName,
      httpMethod: ctx.http.method,
      path: rawPath,
      protocol: ctx.http.protocol,
      requestId: ctx.requestId,
      requestTimeEpoch: ctx.timeEpoch,
      resourceId: event.routeKey,
      resourcePath: resource,
      stage,
      identity: { sourceIp: ctx.http.sourceIp, userAgent: ctx.http.userAgent },
    },
  } as unknown as AipHttpEvent;
  const jwt = 'authorizer' in ctx ? ctx.authorizer?.jwt : undefined;
  if (jwt !== undefined) requestState(converted).gatewayJwt = { claims: jwt.claims ?? {} };
  return converted;
}
