/**
 * Error mapping (middy `onError`): any thrown value becomes an RFC 9457
 * `application/problem+json` response.
 *
 * - AipError → its catalogue status and code (details are already redacted);
 *   a retryable connector failure with a catalogued code → that code's problem
 *   (./http.ts `problemResponse`: a remote connector host unreachable when the
 *   runtime is composed is a 503, not a 500).
 * - middy's early timeout → 504 `request.timeout`.
 * - anything else → 500 `internal.unexpected`, with no internal detail in the
 *   body; the error's class and stack (not its message) are logged, except
 *   for a configuration error (e.g. `BootstrapConfigError`: the runtime
 *   cannot be built from the function environment), whose message names the
 *   bad variable and never a value (./logger.ts `errorFacts`).
 *
 * It never throws: if building the problem fails, a fixed 500 body is used.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { BASE_HEADERS, edgeError, problemResponse, type AipHttpEvent } from './http.js';
import { errorFacts, isConfigurationError, SILENT_LOGGER, type LoggerLike } from './logger.js';

const FALLBACK: APIGatewayProxyResult = {
  statusCode: 500,
  headers: { ...BASE_HEADERS, 'Content-Type': 'application/problem+json' },
  body: JSON.stringify({
    type: 'urn:aip:error:internal.unexpected',
    title: 'An unexpected internal error occurred',
    status: 500,
    detail: 'An unexpected internal error occurred',
    code: 'internal.unexpected',
    category: 'internal',
    retryable: false,
  }),
};

function isMiddyTimeout(err: unknown): boolean {
  return err instanceof Error && err.name === 'TimeoutError' && (err.cause as { package?: unknown } | undefined)?.package === '@middy/core';
}

export function httpErrorHandler(options: { logger?: LoggerLike } = {}): MiddlewareObj<AipHttpEvent, APIGatewayProxyResult> {
  const logger = options.logger ?? SILENT_LOGGER;
  return {
    name: 'httpErrorHandler',
    onError: (request) => {
      try {
        const err: unknown = request.error;
        const mapped = isMiddyTimeout(err) ? new AipError('request.timeout', undefined, { cause: err }) : err;
        const requestId = request.event?.requestContext?.requestId;
        const error = edgeError(mapped);
        const response = problemResponse(error, typeof requestId === 'string' ? requestId : undefined);
        // A bad function environment (the runtime cannot be built) is logged with the message naming the variable.
        if (error.code === 'internal.unexpected' && !isAipError(mapped))
          logger.error(isConfigurationError(err) ? 'invalid function configuration' : 'unhandled error', errorFacts(err));
        else if (response.statusCode >= 500) logger.warn('request failed', { code: error.code, status: response.statusCode });
        request.response = response;
      } catch {
        request.response = { ...FALLBACK, headers: { ...FALLBACK.headers } };
      }
    },
  };
}
