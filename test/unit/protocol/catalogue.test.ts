import { describe, expect, it } from 'vitest';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  ERROR_CATALOGUE,
  ERROR_CATEGORIES,
  isErrorCode,
  type CatalogueEntry,
  type ErrorCategory,
  type ErrorCode,
} from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { toAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { PROBLEM_TYPE_PREFIX, ProblemSchema, toProblem, toProtocolError } from '../../../packages/connector-sdk/src/protocol/problem.js';
import { ERROR_CODE_PATTERN, ProtocolErrorSchema } from '../../../packages/connector-sdk/src/protocol/index.js';

const entries = Object.entries(ERROR_CATALOGUE) as [ErrorCode, CatalogueEntry][];

/** HTTP statuses each category may use. */
const allowedHttp: Record<ErrorCategory, (s: number) => boolean> = {
  validation: (s) => s >= 400 && s < 500 && ![401, 403, 404, 409, 429].includes(s),
  authentication: (s) => s === 401,
  authorization: (s) => s === 403,
  not_found: (s) => s === 404 || s === 410,
  conflict: (s) => s === 409 || s === 412 || s === 423,
  approval: (s) => s >= 400 && s < 500,
  rate_limited: (s) => s === 429,
  timeout: (s) => s === 408 || s === 504,
  temporary: (s) => s >= 500 && s < 600,
  permanent: (s) => s >= 400 && s < 600,
  internal: (s) => s >= 500 && s < 600,
};

describe('error catalogue invariants', () => {
  it('has codes', () => expect(entries.length).toBeGreaterThan(0));
  it.each(entries)('%s is namespaced, has a title and a known category', (code, e) => {
    expect(code).toMatch(ERROR_CODE_PATTERN);
    expect(ERROR_CATEGORIES).toContain(e.category);
    expect(e.title.trim().length).toBeGreaterThan(0);
    expect(e.title).not.toMatch(/\.$/);
  });
  it.each(entries)('%s: HTTP status is consistent with its category', (_code, e) => {
    expect(Number.isInteger(e.http)).toBe(true);
    expect(allowedHttp[e.category](e.http)).toBe(true);
  });
  it.each(entries)('%s: retryable codes are never validation errors; retry-after only on retryable codes', (_code, e) => {
    if (e.retryable) expect(e.category).not.toBe('validation');
    if (e.category === 'validation' || e.category === 'authentication' || e.category === 'authorization') {
      expect(e.retryable).toBe(false);
    }
    if (e.retryAfterMs !== undefined) {
      expect(e.retryable).toBe(true);
      expect(Number.isInteger(e.retryAfterMs) && e.retryAfterMs >= 0).toBe(true);
    }
  });
  it('codes quoted by the pages are spelled as the pages spell them', () => {
    expect(ERROR_CATALOGUE['connector.operation_unsupported']).toMatchObject({ category: 'permanent', retryable: false });
    expect(ERROR_CATALOGUE['transaction.reconciliation_pending']).toMatchObject({ category: 'temporary', retryable: true, retryAfterMs: 5000 });
    expect(isErrorCode('sla.timeout_exceeded')).toBe(true);
  });
  it('every envelope code the protocol layer throws is catalogued as a 4xx validation error', () => {
    for (const code of [
      'envelope.invalid',
      'envelope.commit_requires_plan_id',
      'envelope.compensate_requires_compensation_for',
      'envelope.transaction_context_required',
      'envelope.transaction_id_mismatch',
      'envelope.forbidden_key',
      'envelope.too_deep',
      'envelope.too_large',
    ]) {
      expect(isErrorCode(code), code).toBe(true);
      const e = ERROR_CATALOGUE[code as ErrorCode];
      expect(e.category).toBe('validation');
      expect(e.http >= 400 && e.http < 500).toBe(true);
    }
  });
  it('isErrorCode ignores inherited properties', () => {
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode('__proto__')).toBe(false);
  });
});

describe('toProtocolError', () => {
  it.each(entries)('%s converts to a schema-valid ProtocolError carrying catalogue fields', (code, e) => {
    const pe = toProtocolError(new AipError(code, undefined, { details: { path: '/x' } }));
    expect(ProtocolErrorSchema.parse(pe)).toEqual(pe);
    expect(pe).toMatchObject({ code, category: e.category, retryable: e.retryable, message: e.title, details: { path: '/x' } });
    if (e.retryAfterMs !== undefined) expect(pe.retry_after_ms).toBe(e.retryAfterMs);
  });
  it('keeps provider extras and drops non-JSON details', () => {
    const err = new AipError('sla.timeout_exceeded', 'timed out after 30 s', {
      details: { uncertain_outcome: true, fn: () => 1, n: 10n, ok: 'yes' },
    });
    const pe = toProtocolError(err, {
      provider_request_id: 'req_1',
      provider_operation: { provider: 'p', operation_id: 'op' },
      remote_status: 504,
      uncertain_outcome: true,
      source: 'connector.payments',
    });
    expect(pe).toEqual({
      code: 'sla.timeout_exceeded',
      message: 'timed out after 30 s',
      category: 'timeout',
      retryable: false,
      provider_request_id: 'req_1',
      provider_operation: { provider: 'p', operation_id: 'op' },
      remote_status: 504,
      uncertain_outcome: true,
      details: { uncertain_outcome: true, ok: 'yes' },
      source: 'connector.payments',
    });
    expect(ProtocolErrorSchema.safeParse(pe).success).toBe(true);
  });
  it('omits empty details', () => {
    expect(toProtocolError(new AipError('envelope.invalid'))).not.toHaveProperty('details');
  });
});

describe('toProblem (RFC 9457)', () => {
  it('renders an AipError as a problem body', () => {
    const p = toProblem(new AipError('envelope.commit_requires_plan_id', undefined, { details: { path: '/transaction/plan_id' } }), '/v1/actions/a1');
    expect(ProblemSchema.parse(p)).toEqual(p);
    expect(p).toEqual({
      type: `${PROBLEM_TYPE_PREFIX}envelope.commit_requires_plan_id`,
      title: ERROR_CATALOGUE['envelope.commit_requires_plan_id'].title,
      status: 400,
      detail: ERROR_CATALOGUE['envelope.commit_requires_plan_id'].title,
      instance: '/v1/actions/a1',
      code: 'envelope.commit_requires_plan_id',
      category: 'validation',
      retryable: false,
      details: { path: '/transaction/plan_id' },
    });
  });
  it('carries retry_after_ms for retryable codes', () => {
    const p = toProblem(new AipError('transaction.reconciliation_pending'));
    expect(p.status).toBe(503);
    expect(p.retryable).toBe(true);
    expect(p.retry_after_ms).toBe(5000);
    expect(p).not.toHaveProperty('instance');
  });
  it('maps anything else to internal.unexpected without leaking its message', () => {
    const p = toProblem(new Error('password=hunter2'));
    expect(p.code).toBe('internal.unexpected');
    expect(p.status).toBe(500);
    expect(JSON.stringify(p)).not.toContain('hunter2');
    expect(toAipError('x').code).toBe('internal.unexpected');
    const e = new AipError('transaction.not_found');
    expect(toAipError(e)).toBe(e);
  });
  it.each(entries)('%s: problem status equals the catalogue HTTP status', (code, e) => {
    const p = toProblem(new AipError(code));
    expect(p.status).toBe(e.http);
    expect(ProblemSchema.safeParse(p).success).toBe(true);
  });
});
