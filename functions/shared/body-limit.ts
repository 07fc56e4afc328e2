/**
 * Request body size limit (middy `before`): a body larger than `maxBytes`
 * (decoded bytes, also for base64-encoded bodies) is a 413
 * `request.body_too_large`. Runs before any parsing.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { AipHttpEvent } from './http.js';

/** Default limit of the handlers' own check (API Gateway's hard limit is 10 MB). */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;

/** Decoded size of a proxy event body, in bytes. */
export function bodyByteLength(body: string | null | undefined, isBase64Encoded: boolean | undefined): number {
  if (body === null || body === undefined || body.length === 0) return 0;
  if (isBase64Encoded) {
    const clean = body.replace(/[\s=]+$/, '');
    return Math.floor((clean.length * 3) / 4);
  }
  return Buffer.byteLength(body, 'utf8');
}

export function bodyLimit(options: { maxBytes?: number } = {}): MiddlewareObj<AipHttpEvent, APIGatewayProxyResult> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BODY_BYTES;
  return {
    name: 'bodyLimit',
    before: (request) => {
      const { body, isBase64Encoded } = request.event;
      if (typeof body !== 'string') return;
      // Cheap bound first: UTF-8 needs at least one byte per UTF-16 code unit.
      if ((!isBase64Encoded && body.length > maxBytes) || bodyByteLength(body, isBase64Encoded) > maxBytes) {
        throw new AipError('request.body_too_large', undefined, { details: { max_bytes: maxBytes } });
      }
    },
  };
}
