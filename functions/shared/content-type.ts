/**
 * Content-Type check (middy `before`) for routes that take a JSON body.
 *
 * - A non-empty body needs `application/json` (or a `+json` type); a charset
 *   parameter, when present, must be UTF-8. Otherwise 415
 *   `request.unsupported_media_type`.
 * - A route that takes no body refuses a non-empty one (400 `request.invalid`).
 * - A route whose body is required refuses an empty one (400 `request.invalid`).
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { header, type AipHttpEvent } from './http.js';

export type BodyPolicy = 'none' | 'optional' | 'required';

/** Whether a Content-Type header value names JSON in UTF-8. */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const [type, ...params] = value.split(';').map((s) => s.trim().toLowerCase());
  if (type === undefined || !/^application\/([a-z0-9.!#$&^_-]+\+)?json$/.test(type)) return false;
  for (const p of params) {
    const [k, v] = p.split('=').map((s) => s.trim());
    if (k === 'charset' && v !== undefined && v.replace(/^"|"$/g, '') !== 'utf-8' && v.replace(/^"|"$/g, '') !== 'utf8') return false;
  }
  return true;
}

export function contentType(options: { body: BodyPolicy }): MiddlewareObj<AipHttpEvent, APIGatewayProxyResult> {
  return {
    name: 'contentType',
    before: (request) => {
      const { body } = request.event;
      const hasBody = typeof body === 'string' && body.length > 0;
      if (!hasBody) {
        if (options.body === 'required') {
          throw new AipError('request.invalid', 'A JSON request body is required', { details: { location: 'body' } });
        }
        return;
      }
      if (options.body === 'none') {
        throw new AipError('request.invalid', 'This route takes no request body', { details: { location: 'body' } });
      }
      if (!isJsonContentType(header(request.event, 'content-type'))) {
        throw new AipError('request.unsupported_media_type', undefined, { details: { expected: 'application/json' } });
      }
    },
  };
}
