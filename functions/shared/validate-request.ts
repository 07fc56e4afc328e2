/**
 * Route validation (middy `before`): path parameters, the query string and
 * the parsed JSON body against the route's zod schemas. Results go to
 * `event.aip.path / query / body`.
 *
 * A mismatch is a 400 `request.invalid` with `details.location` (path, query
 * or body) and a bounded, value-free issue list (lib/protocol renderIssues).
 * A body parser (the protocol envelope validator for POST /v1/actions) may
 * throw its own catalogued AipError instead.
 *
 * Query strings: a name given once is a string, a repeated name an array
 * of strings (schemas that accept one value refuse the array).
 */
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import type * as z from '../../packages/connector-sdk/src/common/zod.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { renderIssues } from '../../packages/connector-sdk/src/protocol/validate.js';
import { requestState, type AipHttpEvent } from './http.js';

export type RequestLocation = 'path' | 'query' | 'body';

export interface RequestValidators {
  path?: z.ZodMiniType;
  query?: z.ZodMiniType;
  /** Validates the parsed JSON body (or undefined when there is none). */
  body?: (value: unknown) => unknown;
}

export function invalidRequest(location: RequestLocation, issues: readonly z.core.$ZodIssue[]): AipError {
  return new AipError(
    'request.invalid',
    `The request ${location === 'body' ? 'body' : location === 'path' ? 'path' : 'query string'} does not match the expected shape`,
    {
      details: { location, issues: renderIssues(issues) },
    },
  );
}

/** Parses with a schema; a mismatch becomes `request.invalid` for that location. */
export function parseAt<T>(schema: z.ZodMiniType<T>, value: unknown, location: RequestLocation): T {
  const r = schema.safeParse(value);
  if (!r.success) throw invalidRequest(location, r.error.issues);
  return r.data;
}

/** `multiValueQueryStringParameters` (or the single-value map) → { name: string | string[] }. */
export function queryObject(event: Pick<AipHttpEvent, 'queryStringParameters' | 'multiValueQueryStringParameters'>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const define = (k: string, v: string | string[]) => Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  const multi = event.multiValueQueryStringParameters;
  if (multi) {
    for (const [k, vs] of Object.entries(multi)) {
      if (!Array.isArray(vs) || vs.length === 0) continue;
      define(k, vs.length === 1 ? (vs[0] as string) : [...vs]);
    }
    return out;
  }
  for (const [k, v] of Object.entries(event.queryStringParameters ?? {})) if (typeof v === 'string') define(k, v);
  return out;
}

function pathObject(event: Pick<AipHttpEvent, 'pathParameters'>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(event.pathParameters ?? {})) {
    if (typeof v === 'string') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

export function validateRequest(validators: RequestValidators): MiddlewareObj<AipHttpEvent, APIGatewayProxyResult> {
  return {
    name: 'validateRequest',
    before: (request) => {
      const state = requestState(request.event);
      if (validators.path) state.path = parseAt(validators.path, pathObject(request.event), 'path');
      if (validators.query) state.query = parseAt(validators.query, queryObject(request.event), 'query');
      if (validators.body) state.body = validators.body(state.json);
    },
  };
}
