/**
 * Safe JSON body parsing (middy `before`). The parsed value goes to
 * `event.aip.json`; `event.body` is left as received.
 *
 * - base64-encoded bodies are decoded, and the bytes must be valid UTF-8
 *   (a fatal decoder: no replacement characters);
 * - a leading byte-order mark is ignored;
 * - a syntax error is a 400 `request.malformed_json` whose detail never
 *   quotes the input (V8's messages do, so they are dropped);
 * - strings and keys must be well-formed Unicode (no lone surrogates,
 *   which JSON escapes can produce and which cannot be stored as UTF-8);
 * - the protocol's structural guard then applies (lib/protocol/validate.ts
 *   `guardEnvelope`): no `__proto__` / `constructor` / `prototype` keys
 *   anywhere, bounded depth, node count and size.
 *
 * Every failure is a 4xx AipError. Nothing here recurses on the JS stack:
 * V8's JSON.parse is iterative and the checks walk with an explicit stack.
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { guardEnvelope } from '../../packages/connector-sdk/src/protocol/validate.js';
import { requestState, type AipHttpEvent } from './http.js';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const LONE_SURROGATE = /\p{Surrogate}/u;

function malformed(reason: string): AipError {
  return new AipError('request.malformed_json', undefined, { details: { reason } });
}

/** Decodes the event body to text; throws `request.malformed_json` for bytes that are not UTF-8. */
export function bodyText(body: string, isBase64Encoded: boolean | undefined): string {
  if (!isBase64Encoded) return body;
  const compact = body.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) throw malformed('the base64 body encoding is invalid');
  const bytes = Buffer.from(compact, 'base64');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw malformed('the body is not valid UTF-8');
  }
}

/** First string or key with a lone surrogate, found iteratively. */
function hasIllFormedString(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) return true;
    } else if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        if (LONE_SURROGATE.test(k)) return true;
        stack.push(x);
      }
    }
  }
  return false;
}

/** Text → JSON value, with every check above. Throws a 4xx AipError. */
export function parseJsonBody(text: string): unknown {
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch {
    throw malformed('the body is not valid JSON');
  }
  // Structural guard first: it bounds depth and size before any other walk.
  guardEnvelope(value);
  if (hasIllFormedString(value)) throw malformed('the body contains a lone UTF-16 surrogate escape');
  return value;
}

export function jsonBody(): MiddlewareObj<AipHttpEvent, APIGatewayProxyResult> {
  return {
    name: 'jsonBody',
    before: (request) => {
      const { body, isBase64Encoded } = request.event;
      if (typeof body !== 'string' || body.length === 0) return;
      requestState(request.event).json = parseJsonBody(bodyText(body, isBase64Encoded));
    },
  };
}
