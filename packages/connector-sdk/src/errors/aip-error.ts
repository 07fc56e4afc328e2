import { ERROR_CATALOGUE, type ErrorCode } from './catalogue.js';

/**
 * The one typed error the runtime throws. Its code must be in the catalogue;
 * category, retryability and HTTP status come from there unless a caller has a
 * stricter, documented reason to override `retryable` to false.
 *
 * `details` must already be redacted: it is safe for durable audit storage and
 * for API responses. Never put secrets, credentials or raw input there.
 */
export class AipError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message?: string, options: { details?: Record<string, unknown>; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message ?? ERROR_CATALOGUE[code].title, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AipError';
    this.code = code;
    this.details = Object.freeze({ ...(options.details ?? {}) });
    this.retryAfterMs = options.retryAfterMs ?? ERROR_CATALOGUE[code].retryAfterMs;
  }

  get category() {
    return ERROR_CATALOGUE[this.code].category;
  }

  get retryable(): boolean {
    return ERROR_CATALOGUE[this.code].retryable;
  }

  get httpStatus(): number {
    return ERROR_CATALOGUE[this.code].http;
  }
}

export function isAipError(err: unknown, code?: ErrorCode): err is AipError {
  return err instanceof AipError && (code === undefined || err.code === code);
}

/**
 * Any thrown value → AipError. A non-AipError becomes `internal.unexpected`
 * with a generic message: its own message may carry secrets or input, so it
 * is kept only as `cause` (never serialized).
 */
export function toAipError(err: unknown): AipError {
  if (err instanceof AipError) return err;
  return new AipError('internal.unexpected', undefined, { cause: err });
}
