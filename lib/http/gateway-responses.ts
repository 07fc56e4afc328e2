/**
 * API Gateway (REST) gateway responses as RFC 9457 problems.
 *
 * Some answers never reach a handler: a missing or rejected token, an
 * authorizer Deny, an unknown route, a body over API Gateway's 10 MB limit,
 * throttling, the 29 s integration timeout, a rejected request parameter.
 * API Gateway answers those itself with `{"message": ...}` unless the API
 * customises its gateway responses. The CDK stack (infra/api.ts) sets one per
 * entry below for EVERY response type API Gateway has, DEFAULT_4XX and
 * DEFAULT_5XX included (status, `Content-Type: application/problem+json`, the
 * body template), and the local HTTP server (dev/local/http-server.ts)
 * answers the cases it emulates the same way, so clients always get a
 * problem document with a stable `code`. A stack test derives the list of
 * response types from aws-cdk-lib's `ResponseType`, so a type added there
 * fails the tests until it has an entry here.
 */
import { ERROR_CATALOGUE, type ErrorCode } from '../../packages/connector-sdk/src/errors/catalogue.js';
import { PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_PREFIX } from '../../packages/connector-sdk/src/protocol/problem.js';

/** API Gateway `ResponseType` names (aws-cdk-lib `apigateway.ResponseType`): every one of them. */
export const GATEWAY_RESPONSE_TYPES = [
  'ACCESS_DENIED',
  'API_CONFIGURATION_ERROR',
  'AUTHORIZER_CONFIGURATION_ERROR',
  'AUTHORIZER_FAILURE',
  'BAD_REQUEST_BODY',
  'BAD_REQUEST_PARAMETERS',
  'DEFAULT_4XX',
  'DEFAULT_5XX',
  'EXPIRED_TOKEN',
  'INTEGRATION_FAILURE',
  'INTEGRATION_TIMEOUT',
  'INVALID_API_KEY',
  'INVALID_SIGNATURE',
  'MISSING_AUTHENTICATION_TOKEN',
  'QUOTA_EXCEEDED',
  'REQUEST_TOO_LARGE',
  'RESOURCE_NOT_FOUND',
  'THROTTLED',
  'UNAUTHORIZED',
  'UNSUPPORTED_MEDIA_TYPE',
  'WAF_FILTERED',
] as const;
export type GatewayResponseType = (typeof GATEWAY_RESPONSE_TYPES)[number];

export interface GatewayResponseSpec {
  readonly type: GatewayResponseType;
  /** The response status; always the catalogue's status of `code`, so body and status agree. */
  readonly status: number;
  readonly code: ErrorCode;
  readonly detail: string;
  /** Extra response headers (header name → value, unquoted). */
  readonly headers?: Readonly<Record<string, string>>;
}

const BEARER_CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="aip"' } as const;
const INTERNAL = { status: 500, code: 'internal.unexpected', detail: 'An unexpected internal error occurred' } as const;
const AUTHORIZER_DOWN = {
  status: 503,
  code: 'auth.authorizer_unavailable',
  detail: 'The token could not be verified right now',
  headers: { 'Retry-After': '1' },
} as const;

/**
 * One entry per response type. The API authenticates with bearer JWTs (a
 * Lambda TOKEN authorizer), so the AWS-credential types (EXPIRED_TOKEN,
 * INVALID_SIGNATURE: SigV4) answer like any rejected credential, 401 with a
 * bearer challenge; INVALID_API_KEY (no method requires a key) and
 * WAF_FILTERED (when a web ACL is associated) have their own codes. The
 * catch-alls carry explicit statuses: every specific type has an entry, so
 * DEFAULT_4XX and DEFAULT_5XX only answer for a type API Gateway adds later,
 * and a fixed status keeps the body's `status` true.
 */
export const GATEWAY_RESPONSES: readonly GatewayResponseSpec[] = [
  {
    type: 'UNAUTHORIZED',
    status: 401,
    code: 'auth.unauthenticated',
    detail: 'Send a valid bearer token in the Authorization header',
    headers: BEARER_CHALLENGE,
  },
  {
    type: 'EXPIRED_TOKEN',
    status: 401,
    code: 'auth.unauthenticated',
    detail: 'The authentication token has expired: send a valid bearer token in the Authorization header',
    headers: BEARER_CHALLENGE,
  },
  {
    type: 'INVALID_SIGNATURE',
    status: 401,
    code: 'auth.unauthenticated',
    detail: 'The request signature is not valid: send a valid bearer token in the Authorization header',
    headers: BEARER_CHALLENGE,
  },
  { type: 'ACCESS_DENIED', status: 403, code: 'auth.forbidden', detail: 'The token was verified but grants no access to this API' },
  { type: 'INVALID_API_KEY', status: 403, code: 'auth.api_key_invalid', detail: 'The API key is missing or not valid for this API' },
  { type: 'WAF_FILTERED', status: 403, code: 'request.blocked', detail: 'The request was blocked by the web application firewall' },
  // API Gateway answers an unknown path or method with MISSING_AUTHENTICATION_TOKEN.
  { type: 'MISSING_AUTHENTICATION_TOKEN', status: 404, code: 'request.route_not_found', detail: 'No route matches the method and path' },
  { type: 'RESOURCE_NOT_FOUND', status: 404, code: 'request.route_not_found', detail: 'No resource matches the method and path' },
  // The request validator's rejections (a required path or query parameter is missing); the handlers answer the same requests with request.invalid too.
  { type: 'BAD_REQUEST_PARAMETERS', status: 400, code: 'request.invalid', detail: 'A required request parameter is missing' },
  { type: 'BAD_REQUEST_BODY', status: 400, code: 'request.invalid', detail: 'The request body does not match the expected shape' },
  { type: 'REQUEST_TOO_LARGE', status: 413, code: 'request.body_too_large', detail: 'The request exceeds the gateway size limit' },
  { type: 'UNSUPPORTED_MEDIA_TYPE', status: 415, code: 'request.unsupported_media_type', detail: 'The request body media type is not supported' },
  { type: 'THROTTLED', status: 429, code: 'request.throttled', detail: 'Too many requests', headers: { 'Retry-After': '1' } },
  { type: 'QUOTA_EXCEEDED', status: 429, code: 'request.throttled', detail: 'The request quota is exhausted', headers: { 'Retry-After': '60' } },
  { type: 'DEFAULT_4XX', status: 400, code: 'request.rejected', detail: 'The gateway rejected the request' },
  { type: 'AUTHORIZER_FAILURE', ...AUTHORIZER_DOWN },
  { type: 'AUTHORIZER_CONFIGURATION_ERROR', ...AUTHORIZER_DOWN },
  { type: 'INTEGRATION_TIMEOUT', status: 504, code: 'request.timeout', detail: 'The request did not complete within the gateway time limit' },
  { type: 'INTEGRATION_FAILURE', ...INTERNAL },
  { type: 'API_CONFIGURATION_ERROR', ...INTERNAL },
  { type: 'DEFAULT_5XX', ...INTERNAL },
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
