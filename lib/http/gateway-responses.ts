/**
 * API Gateway (REST) gateway responses as RFC 9457 problems.
 *
 * Some answers never reach a handler: a missing or rejected token, an
 * authorizer Deny, an unknown route, a body over API Gateway's 10 MB limit,
 * throttling, the 29 s integration timeout. API Gateway answers those itself
 * with `{"message": ...}` unless the API customises its gateway responses.
 * The CDK stack sets one per entry below (status, `Content-Type:
 * application/problem+json`, the body template), and the local HTTP server
 * answers the same way, so clients always get a problem document.
 */
import { ERROR_CATALOGUE, type ErrorCode } from '../errors/catalogue.js';
import { PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_PREFIX } from '../errors/wire.js';

/** API Gateway `ResponseType` names (aws-cdk-lib `apigateway.ResponseType`). */
export type GatewayResponseType =
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'MISSING_AUTHENTICATION_TOKEN'
  | 'REQUEST_TOO_LARGE'
  | 'THROTTLED'
  | 'QUOTA_EXCEEDED'
  | 'AUTHORIZER_FAILURE'
  | 'AUTHORIZER_CONFIGURATION_ERROR'
  | 'INTEGRATION_TIMEOUT'
  | 'INTEGRATION_FAILURE'
  | 'DEFAULT_5XX';

export interface GatewayResponseSpec {
  readonly type: GatewayResponseType;
  readonly status: number;
  readonly code: ErrorCode;
  readonly detail: string;
  /** Extra response headers (header name → value, unquoted). */
  readonly headers?: Readonly<Record<string, string>>;
}

export const GATEWAY_RESPONSES: readonly GatewayResponseSpec[] = [
  {
    type: 'UNAUTHORIZED',
    status: 401,
    code: 'auth.unauthenticated',
    detail: 'Send a valid bearer token in the Authorization header',
    headers: { 'WWW-Authenticate': 'Bearer realm="aip"' },
  },
  { type: 'ACCESS_DENIED', status: 403, code: 'auth.forbidden', detail: 'The token was verified but grants no access to this API' },
  // API Gateway answers an unknown path or method with MISSING_AUTHENTICATION_TOKEN.
  { type: 'MISSING_AUTHENTICATION_TOKEN', status: 404, code: 'request.route_not_found', detail: 'No route matches the method and path' },
  { type: 'REQUEST_TOO_LARGE', status: 413, code: 'request.body_too_large', detail: 'The request exceeds the gateway size limit' },
  { type: 'THROTTLED', status: 429, code: 'request.throttled', detail: 'Too many requests', headers: { 'Retry-After': '1' } },
  { type: 'QUOTA_EXCEEDED', status: 429, code: 'request.throttled', detail: 'The request quota is exhausted', headers: { 'Retry-After': '60' } },
  { type: 'AUTHORIZER_FAILURE', status: 503, code: 'auth.authorizer_unavailable', detail: 'The token could not be verified right now', headers: { 'Retry-After': '1' } },
  { type: 'AUTHORIZER_CONFIGURATION_ERROR', status: 503, code: 'auth.authorizer_unavailable', detail: 'The token could not be verified right now', headers: { 'Retry-After': '1' } },
  { type: 'INTEGRATION_TIMEOUT', status: 504, code: 'request.timeout', detail: 'The request did not complete within the gateway time limit' },
  { type: 'INTEGRATION_FAILURE', status: 500, code: 'internal.unexpected', detail: 'An unexpected internal error occurred' },
  { type: 'DEFAULT_5XX', status: 500, code: 'internal.unexpected', detail: 'An unexpected internal error occurred' },
];

export function gatewayResponse(type: GatewayResponseType): GatewayResponseSpec {
  const spec = GATEWAY_RESPONSES.find((r) => r.type === type);
  if (!spec) throw new Error(`no gateway response for ${type}`);
  return spec;
}

/** The problem document of a gateway response (a static body: no request data in it). */
export function gatewayProblem(spec: GatewayResponseSpec): Record<string, unknown> {
  const e = ERROR_CATALOGUE[spec.code];
  const problem: Record<string, unknown> = {
    type: `${PROBLEM_TYPE_PREFIX}${spec.code}`,
    title: e.title,
    status: spec.status,
    detail: spec.detail,
    code: spec.code,
    category: e.category,
    retryable: e.retryable,
  };
  if ('retryAfterMs' in e && e.retryAfterMs !== undefined) problem.retry_after_ms = e.retryAfterMs;
  return problem;
}

/** The body template for the stack (`templates: {'application/json': ...}`). */
export function gatewayResponseTemplate(spec: GatewayResponseSpec): string {
  return JSON.stringify(gatewayProblem(spec));
}

/** Response headers for the stack's `responseHeaders` (values single-quoted, as API Gateway mapping expressions want). */
export function gatewayResponseHeaders(spec: GatewayResponseSpec): Record<string, string> {
  const headers: Record<string, string> = { 'Content-Type': `'${PROBLEM_CONTENT_TYPE}'`, 'Cache-Control': "'no-store'" };
  for (const [k, v] of Object.entries(spec.headers ?? {})) headers[k] = `'${v.replace(/'/g, "\\'")}'`;
  return headers;
}
