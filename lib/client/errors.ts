/**
 * The one error the AIP client throws: AipClientError.
 *
 * - For an HTTP problem answer (RFC 9457 `application/problem+json`), `code`,
 *   `status`, `retryable` and `details` come from the problem body: the
 *   server's catalogued code (docs/error-catalogue.md).
 * - For failures with no problem body, `code` is one of the client-side
 *   codes below. They never come from a server and are not part of the
 *   runtime's error catalogue.
 */
export const CLIENT_ERROR_CODES = {
  /** The server could not be reached, or the connection broke. status 0. */
  network: 'client.network_error',
  /** The request did not finish within the client's timeout. status 0. */
  timeout: 'client.timeout',
  /** waitForAction reached its deadline before the action finished. status 0. */
  waitTimeout: 'client.wait_timeout',
  /** An error status without a problem body (e.g. a proxy's HTML page). */
  http: 'client.http_error',
  /** A success status whose body is not the JSON the route documents. */
  badResponse: 'client.bad_response',
  /** The client was called with arguments it refuses before sending anything. */
  badRequest: 'client.invalid_argument',
} as const;

/** @public */
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[keyof typeof CLIENT_ERROR_CODES];

/** An RFC 9457 problem as the API sends it (lib/protocol/problem.ts `Problem`), read leniently. */
export interface ProblemBody {
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  readonly instance?: string;
  readonly code?: string;
  readonly category?: string;
  readonly retryable?: boolean;
  readonly retry_after_ms?: number;
  readonly details?: Record<string, unknown>;
  readonly [key: string]: unknown;
}

export interface AipClientErrorInit {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly retryable?: boolean;
  readonly retryAfterMs?: number;
  readonly details?: Record<string, unknown>;
  readonly problem?: ProblemBody;
  /** Method and path of the request (no query string, no host). */
  readonly request?: string;
  readonly cause?: unknown;
}

export class AipClientError extends Error {
  /** HTTP status; 0 when no response arrived. */
  readonly status: number;
  /** The server's catalogued code, or a client-side code (CLIENT_ERROR_CODES). */
  readonly code: string;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly details: Record<string, unknown> | undefined;
  /** The parsed problem body, when the server sent one. */
  readonly problem: ProblemBody | undefined;
  readonly request: string | undefined;

  constructor(init: AipClientErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AipClientError';
    this.status = init.status;
    this.code = init.code;
    this.retryable = init.retryable ?? false;
    this.retryAfterMs = init.retryAfterMs;
    this.details = init.details;
    this.problem = init.problem;
    this.request = init.request;
  }

  /** True for a client-side failure (no problem from the server). */
  get isClientSide(): boolean {
    return this.code.startsWith('client.');
  }
}

/** @public */
export function isAipClientError(err: unknown, code?: string): err is AipClientError {
  return err instanceof AipClientError && (code === undefined || err.code === code);
}

/** Builds the error for a non-2xx answer from its body (already read as text). */
export function errorFromResponse(status: number, contentType: string, text: string, request: string, retryAfterHeader?: string | null): AipClientError {
  let problem: ProblemBody | undefined;
  if (/json/i.test(contentType)) {
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) problem = value as ProblemBody;
    } catch {
      problem = undefined;
    }
  }
  const retryAfterSeconds = retryAfterHeader != null && /^\d{1,6}$/.test(retryAfterHeader.trim()) ? Number(retryAfterHeader.trim()) * 1000 : undefined;
  if (problem && typeof problem.code === 'string') {
    const detail = typeof problem.detail === 'string' && problem.detail.length > 0 ? problem.detail : (problem.title ?? problem.code);
    return new AipClientError({
      status,
      code: problem.code,
      message: `${problem.code}: ${detail}`,
      retryable: problem.retryable === true,
      ...(typeof problem.retry_after_ms === 'number'
        ? { retryAfterMs: problem.retry_after_ms }
        : retryAfterSeconds !== undefined
          ? { retryAfterMs: retryAfterSeconds }
          : {}),
      ...(problem.details && typeof problem.details === 'object' ? { details: problem.details } : {}),
      problem,
      request,
    });
  }
  return new AipClientError({
    status,
    code: CLIENT_ERROR_CODES.http,
    message: `HTTP ${status} without a problem body from ${request}`,
    retryable: status === 429 || status === 502 || status === 503 || status === 504,
    ...(retryAfterSeconds !== undefined ? { retryAfterMs: retryAfterSeconds } : {}),
    request,
  });
}
