/** Small node:http helpers for the payments simulator (no framework). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as z from 'zod';
import { providerError, type ProviderError } from './state.js';

export const MAX_BODY_BYTES = 64 * 1024;

export class BodyTooLarge extends Error {}
export class BodyAborted extends Error {}

/** Reads the whole body, refusing more than `limit` bytes. */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | undefined, value?: Buffer): void => {
      if (done) return;
      done = true;
      if (err) reject(err);
      else resolve(value ?? Buffer.alloc(0));
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        finish(new BodyTooLarge('body too large'));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => finish(undefined, Buffer.concat(chunks)));
    req.on('error', () => finish(new BodyAborted('request aborted')));
    req.on('close', () => finish(new BodyAborted('request closed before its body ended')));
  });
}

/** Deterministic JSON: object keys sorted, so equal bodies give equal fingerprints. */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify(obj[k])}`).join(',')}}`;
}

export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return true; // tolerated: the body must still parse as JSON
  const media = header.split(';')[0]?.trim().toLowerCase();
  return media === 'application/json';
}

export interface SendOptions {
  readonly headers?: Record<string, string>;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, opts: SendOptions = {}): void {
  if (res.headersSent || res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    'cache-control': 'no-store',
    ...opts.headers,
  });
  res.end(payload);
}

export function errorBody(err: ProviderError, requestId: string): { error: Record<string, unknown> } {
  return {
    error: {
      type: err.type,
      message: err.message,
      ...(err.param === undefined ? {} : { param: err.param }),
      ...(err.extra ?? {}),
      request_id: requestId,
    },
  };
}

/** A zod failure as a typed 400. Issue messages name fields, never echo values. */
export function validationError(error: z.ZodError, where: string): ProviderError {
  const issues = error.issues.slice(0, 20).map((i) => ({
    path: i.path.map(String).join('.'),
    code: i.code,
    message: i.message,
  }));
  const first = issues[0];
  return providerError(400, 'invalid_request', `Invalid ${where}${first ? `: ${first.path || '(root)'} ${first.message}` : ''}`, {
    ...(first?.path ? { param: first.path } : {}),
    extra: { issues },
  });
}
