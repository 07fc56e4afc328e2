/**
 * The API stages' access log lines, as plain field → `$context` variable maps
 * (no aws-cdk-lib here: bench/lib/access-log-bytes.ts prices the same lines).
 * infra/api.ts and infra/http-api.ts turn them into the stage's JSON format.
 *
 * One line per request, what an operator needs to find a request and tell
 * where it went wrong: its ID (the problem's `instance` and the route
 * function's `request` line carry the same), when, from where, the route, the
 * status, the latencies, the integration's status, the caller, the gateway's
 * error type and, on the REST API, the X-Ray trace. Never headers, query
 * strings, bodies, tokens or claims.
 *
 * Left out, each because something else records it (docs/infra.md, "Stage"):
 * - `path`: the resource path (or route key) with the IDs filled in; the route
 *   is here, and an execute's path names no ID;
 * - `extendedRequestId`: a second ID for AWS support; `requestId` finds the line;
 * - `protocol`, `responseLength`: nothing to diagnose from;
 * - `userAgent`: the longest field, and the caller is the principal;
 * - `requestTime`: the epoch milliseconds say the same in half the bytes;
 * - `authorizerStatus`, `authorizerLatency` (REST): a refused token shows as the
 *   error type, and the authorizer's own Duration metric (free, per function)
 *   and `responseLatency − integrationLatency` bound its time;
 * - `httpMethod` (HTTP API): the route key starts with it;
 * - `principalId` (HTTP API): the JWT authorizer never sets it (claims stay out).
 */

/** The REST API stage's line. */
export const REST_ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  requestTimeEpoch: '$context.requestTimeEpoch',
  sourceIp: '$context.identity.sourceIp',
  httpMethod: '$context.httpMethod',
  resourcePath: '$context.resourcePath',
  status: '$context.status',
  responseLatency: '$context.responseLatency',
  integrationStatus: '$context.integrationStatus',
  integrationLatency: '$context.integrationLatency',
  principalId: '$context.authorizer.principalId',
  errorResponseType: '$context.error.responseType',
  xrayTraceId: '$context.xrayTraceId',
} as const satisfies Readonly<Record<string, string>>;

/** The HTTP API stage's line (its own context variables). */
export const HTTP_ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  requestTimeEpoch: '$context.requestTimeEpoch',
  sourceIp: '$context.identity.sourceIp',
  routeKey: '$context.routeKey',
  status: '$context.status',
  responseLatency: '$context.responseLatency',
  integrationStatus: '$context.integrationStatus',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  authorizerError: '$context.authorizer.error',
  errorResponseType: '$context.error.responseType',
} as const satisfies Readonly<Record<string, string>>;

/** The format string API Gateway takes: one JSON object per line, each value its `$context` variable. */
export function accessLogFormatString(fields: Readonly<Record<string, string>>): string {
  return JSON.stringify(fields);
}
