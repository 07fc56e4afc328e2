/**
 * The two wire shapes of an error, and the conversions from the one typed
 * error (AipError, lib/errors) to them: the AIP ProtocolError (its schema is
 * in error.ts) and an RFC 9457 problem body for HTTP responses.
 */
import * as z from '../common/zod.js';
import { toAipError, type AipError } from '../errors/aip-error.js';
import { ERROR_CATALOGUE } from '../errors/catalogue.js';
import { ErrorCategorySchema, type ProtocolError } from './error.js';
import { isJsonValue, type JsonObject, type JsonValue } from './json.js';

/** Media type of problem bodies (RFC 9457). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
/** Problem `type` URIs are `urn:aip:error:<code>`; docs/error-catalogue.md lists every code. */
export const PROBLEM_TYPE_PREFIX = 'urn:aip:error:';

const MAX_MESSAGE = 2048;

/** Keeps only the JSON-serializable entries of already-redacted details. */
function jsonDetails(details: Readonly<Record<string, unknown>>): JsonObject | undefined {
  const out: JsonObject = {};
  let any = false;
  for (const [k, v] of Object.entries(details)) {
    if (k === '__proto__' || k === 'constructor' || k === 'prototype') continue;
    if (isJsonValue(v)) {
      Object.defineProperty(out, k, { value: v as JsonValue, enumerable: true, writable: true, configurable: true });
      any = true;
    }
  }
  return any ? out : undefined;
}

function boundedMessage(m: string): string {
  // The control characters in the pattern are the point: they are what is replaced.
  const clean = m.replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, ' ');
  return clean.length > MAX_MESSAGE ? clean.slice(0, MAX_MESSAGE) : clean;
}

/** Provider-side fields a caller may attach when converting (e.g. from a connector failure). */
export type ProtocolErrorExtras = Pick<ProtocolError, 'provider_request_id' | 'provider_operation' | 'remote_status' | 'uncertain_outcome' | 'source'>;

/** AipError → ProtocolError. Category and retryability come from the catalogue. */
export function toProtocolError(err: AipError, extras: ProtocolErrorExtras = {}): ProtocolError {
  const out: ProtocolError = {
    code: err.code,
    message: boundedMessage(err.message),
    category: err.category,
    retryable: err.retryable,
  };
  if (err.retryAfterMs !== undefined) out.retry_after_ms = err.retryAfterMs;
  if (extras.provider_request_id !== undefined) out.provider_request_id = extras.provider_request_id;
  if (extras.provider_operation !== undefined) out.provider_operation = extras.provider_operation;
  if (extras.remote_status !== undefined) out.remote_status = extras.remote_status;
  if (extras.uncertain_outcome !== undefined) out.uncertain_outcome = extras.uncertain_outcome;
  const details = jsonDetails(err.details);
  if (details !== undefined) out.details = details;
  if (extras.source !== undefined) out.source = extras.source;
  return out;
}

export const ProblemSchema = z.deferred(() =>
  z.strictObject({
    type: z.string().check(z.minLength(1)),
    title: z.string().check(z.minLength(1)),
    status: z.int().check(z.gte(400), z.lte(599)),
    detail: z.string(),
    instance: z.optional(z.string()),
    code: z.string().check(z.minLength(1)),
    category: ErrorCategorySchema,
    retryable: z.boolean(),
    retry_after_ms: z.optional(z.int().check(z.gte(0))),
    details: z.optional(z.record(z.string(), z.unknown())),
  }),
);
export type Problem = z.infer<typeof ProblemSchema>;

/**
 * RFC 9457 problem body for an error. Non-AipErrors map to
 * `internal.unexpected` without leaking their message.
 */
export function toProblem(err: unknown, instance?: string): Problem {
  const e = toAipError(err);
  const problem: Problem = {
    type: `${PROBLEM_TYPE_PREFIX}${e.code}`,
    title: ERROR_CATALOGUE[e.code].title,
    status: e.httpStatus,
    detail: boundedMessage(e.message),
    code: e.code,
    category: e.category,
    retryable: e.retryable,
  };
  if (instance !== undefined) problem.instance = instance;
  if (e.retryAfterMs !== undefined) problem.retry_after_ms = e.retryAfterMs;
  const details = jsonDetails(e.details);
  if (details !== undefined) problem.details = details;
  return problem;
}
