/**
 * Shared HTTP plumbing for the API Gateway proxy handlers (REST, and HTTP API
 * events once ./http-api-event.ts put them in the REST shape): the
 * per-request state the middlewares fill in, case-insensitive header access,
 * and response builders (JSON and RFC 9457 problems).
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { CallerIdentity } from '../../lib/auth/identity.js';
import { AipError, toAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { isErrorCode } from '../../packages/connector-sdk/src/errors/catalogue.js';
import { isConnectorFailure } from '../../packages/connector-sdk/src/failure.js';
import { PROBLEM_CONTENT_TYPE, toProblem } from '../../packages/connector-sdk/src/protocol/problem.js';

/** What the middlewares learn about a request, attached to the event. */
export interface AipRequestState {
  /** Parsed JSON body (jsonBody), before route validation. */
  json?: unknown;
  /** Validated path parameters, query and body (validateRequest). */
  path?: unknown;
  query?: unknown;
  body?: unknown;
  /** From requestContext.authorizer, or from `gatewayJwt`, only (callerIdentity). */
  caller?: CallerIdentity;
  /**
   * HTTP API only: the claims API Gateway's JWT authorizer verified
   * (`requestContext.authorizer.jwt.claims` of a 2.0 event), set by
   * ./http-api-event.ts. Absent on REST events and on public routes.
   */
  gatewayJwt?: { readonly claims: Readonly<Record<string, unknown>> };
  /** The tenant selected for the request (tenantSelection). */
  tenant_id?: string;
}

export type AipHttpEvent = APIGatewayProxyEvent & { aip?: AipRequestState };

export function requestState(event: AipHttpEvent): AipRequestState {
  if (event.aip === undefined) {
    Object.defineProperty(event, 'aip', { value: {}, enumerable: false, writable: true, configurable: true });
  }
  return event.aip as AipRequestState;
}

/** All values of a header, case-insensitively (multiValueHeaders first, then headers). */
export function headerValues(event: Pick<APIGatewayProxyEvent, 'headers' | 'multiValueHeaders'>, name: string): string[] {
  const lower = name.toLowerCase();
  const out: string[] = [];
  const multi = event.multiValueHeaders ?? {};
  for (const [k, vs] of Object.entries(multi)) {
    if (k.toLowerCase() === lower && Array.isArray(vs)) for (const v of vs) if (typeof v === 'string') out.push(v);
  }
  if (out.length > 0) return out;
  for (const [k, v] of Object.entries(event.headers ?? {})) {
    if (k.toLowerCase() === lower && typeof v === 'string') out.push(v);
  }
  return out;
}

/** The single value of a header; several distinct values count as one comma-joined value. */
export function header(event: Pick<APIGatewayProxyEvent, 'headers' | 'multiValueHeaders'>, name: string): string | undefined {
  const vs = headerValues(event, name);
  if (vs.length === 0) return undefined;
  return [...new Set(vs)].join(', ');
}

/** Headers on every response. */
export const BASE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
});

export const JSON_CONTENT_TYPE = 'application/json';

export interface HttpResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyResult {
  return {
    statusCode: status,
    headers: { ...BASE_HEADERS, 'Content-Type': JSON_CONTENT_TYPE, ...headers },
    body: body === undefined ? '' : JSON.stringify(body),
  };
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A connector's failure that reached the edge. Only the runtime's composition
 * lets one through: a remote connector host it asks for its manifest at a
 * cold start and cannot reach (`connector.remote_unavailable`). A retryable
 * failure with a catalogued code is that code's problem (503, Retry-After),
 * with the catalogue's wording and none of the failure's own; anything else
 * stays a 500.
 */
export function edgeError(err: unknown): AipError {
  if (isConnectorFailure(err) && err.retryable && isErrorCode(err.code)) return new AipError(err.code, undefined, { cause: err });
  return toAipError(err);
}

/**
 * Any thrown value → an `application/problem+json` response. AipErrors keep
 * their catalogue status, and so does a retryable connector failure
 * ({@link edgeError}); anything else is a 500 `internal.unexpected` whose
 * body says nothing about the cause.
 */
export function problemResponse(err: unknown, requestId?: string): APIGatewayProxyResult {
  const e = edgeError(err);
  const instance = requestId !== undefined && REQUEST_ID.test(requestId) ? `urn:aip:request:${requestId}` : undefined;
  const problem = toProblem(e, instance);
  const headers: Record<string, string> = { ...BASE_HEADERS, 'Content-Type': PROBLEM_CONTENT_TYPE };
  if (problem.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="aip"';
  if (problem.retryable && problem.retry_after_ms !== undefined) {
    headers['Retry-After'] = String(Math.max(1, Math.ceil(problem.retry_after_ms / 1000)));
  }
  return { statusCode: problem.status, headers, body: JSON.stringify(problem) };
}
