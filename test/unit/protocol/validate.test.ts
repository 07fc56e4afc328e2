import { describe, expect, it } from 'vitest';
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ErrorCode } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { ENVELOPE_LIMITS, transactionRequestAction, validateAction, validateTransactionRequest } from '../../../packages/connector-sdk/src/protocol/index.js';

function codeOf(fn: () => unknown): ErrorCode | 'no error' {
  try {
    fn();
    return 'no error';
  } catch (e) {
    if (!(e instanceof AipError)) throw e;
    return e.code;
  }
}

function errorOf(fn: () => unknown): AipError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AipError) return e;
    throw e;
  }
  throw new Error('expected an AipError');
}

const action = (transaction?: Record<string, unknown>) => ({
  id: 'act-1',
  capability_id: 'payments.charge',
  input: { amount: 100, currency: 'EUR' },
  ...(transaction === undefined ? {} : { transaction }),
});
const wrap = (a: unknown, extra: Record<string, unknown> = {}) => ({
  action: a,
  transaction_id: 'tx-1',
  requested_by: { id: 'agent-1', kind: 'agent' },
  ...extra,
});

describe('the public commit rule: every commit needs a plan_id', () => {
  it('native action: commit without plan_id is rejected', () => {
    expect(codeOf(() => validateAction(action({ mode: 'commit' })))).toBe('envelope.commit_requires_plan_id');
    expect(codeOf(() => validateAction(action({ mode: 'commit', transaction_id: 'tx-1' })))).toBe('envelope.commit_requires_plan_id');
  });
  it('native action: commit with plan_id is accepted', () => {
    expect(validateAction(action({ mode: 'commit', plan_id: 'plan:tx-1' })).transaction).toEqual({ mode: 'commit', plan_id: 'plan:tx-1' });
  });
  it('wrapped in a TransactionRequest: commit without plan_id is rejected too', () => {
    expect(codeOf(() => validateTransactionRequest(wrap(action({ mode: 'commit' }))))).toBe('envelope.commit_requires_plan_id');
    expect(codeOf(() => validateTransactionRequest(wrap(action({ mode: 'commit', transaction_id: 'tx-1' }))))).toBe('envelope.commit_requires_plan_id');
  });
  it('wrapped: commit with plan_id is accepted', () => {
    const req = validateTransactionRequest(wrap(action({ mode: 'commit', plan_id: 'plan:tx-1' })));
    expect(req.transaction_id).toBe('tx-1');
  });
  it('the rule error is a 400 validation error naming the path', () => {
    const e = errorOf(() => validateAction(action({ mode: 'commit' })));
    expect(e.httpStatus).toBe(400);
    expect(e.category).toBe('validation');
    expect(e.retryable).toBe(false);
    expect(e.details).toEqual({ path: '/transaction/plan_id' });
  });
  it('other modes do not need a plan_id', () => {
    for (const mode of ['dry_run', 'plan', 'execute', 'reconcile', 'rollback_not_supported']) {
      expect(codeOf(() => validateAction(action({ mode })))).toBe('no error');
    }
    expect(codeOf(() => validateAction(action()))).toBe('no error');
  });
});

describe('compensate needs compensation_for', () => {
  it('native and wrapped', () => {
    expect(codeOf(() => validateAction(action({ mode: 'compensate' })))).toBe('envelope.compensate_requires_compensation_for');
    expect(codeOf(() => validateTransactionRequest(wrap(action({ mode: 'compensate' }))))).toBe('envelope.compensate_requires_compensation_for');
    expect(codeOf(() => validateAction(action({ mode: 'compensate', compensation_for: 'act-0' })))).toBe('no error');
  });
});

describe('TransactionRequest wrapper rules', () => {
  it('the wrapped action needs a transaction context', () => {
    expect(codeOf(() => validateTransactionRequest(wrap(action())))).toBe('envelope.transaction_context_required');
  });
  it('wrapper and action transaction IDs must match when both are present', () => {
    expect(codeOf(() => validateTransactionRequest(wrap(action({ mode: 'execute', transaction_id: 'tx-2' }))))).toBe('envelope.transaction_id_mismatch');
    expect(codeOf(() => validateTransactionRequest(wrap(action({ mode: 'execute', transaction_id: 'tx-1' }))))).toBe('no error');
  });
  it('transactionRequestAction copies the wrapper transaction ID into the action when it is absent', () => {
    const req = validateTransactionRequest(wrap(action({ mode: 'execute' })));
    expect(transactionRequestAction(req).transaction).toEqual({ mode: 'execute', transaction_id: 'tx-1' });
    expect(req.action.transaction).toEqual({ mode: 'execute' });
    const req2 = validateTransactionRequest(wrap(action({ mode: 'execute', transaction_id: 'tx-1' })));
    expect(transactionRequestAction(req2)).toBe(req2.action);
  });
  it('requested_by is required and structurally checked', () => {
    const a = action({ mode: 'plan' });
    expect(codeOf(() => validateTransactionRequest({ action: a, transaction_id: 'tx-1' }))).toBe('envelope.invalid');
    expect(codeOf(() => validateTransactionRequest(wrap(a, { requested_by: { id: 'x', kind: 'root' } })))).toBe('envelope.invalid');
  });
});

describe('envelope.invalid details never echo input values', () => {
  it('renders a bounded {path, message} list', () => {
    const secret = 'sk_live_SUPERSECRET_value';
    const bad = {
      id: `${secret} with spaces`,
      capability_id: 42,
      input: { card: secret },
      idempotency_key: `${secret}\n`,
      identity: { tenant_id: `${secret}#` },
      metadata: { observability: { original_completed_at: secret } },
      transaction: { mode: secret },
      unknown_field: secret,
    };
    const e = errorOf(() => validateAction(bad));
    expect(e.code).toBe('envelope.invalid');
    const rendered = JSON.stringify(e.details) + e.message;
    expect(rendered).not.toContain('SUPERSECRET');
    // Unknown field *names* are reported (sanitized); their values never are.
    expect(rendered).toContain('unknown_field');
    const issues = e.details.issues as { path: string; message: string }[];
    expect(issues.map((i) => i.path).sort()).toEqual(
      ['', '/capability_id', '/id', '/identity/tenant_id', '/idempotency_key', '/metadata/observability/original_completed_at', '/transaction/mode'].sort(),
    );
    for (const i of issues) {
      expect(typeof i.message).toBe('string');
      expect(i.message.length).toBeGreaterThan(0);
    }
  });
  it('unknown keys are reported sanitized and truncated', () => {
    const longKey = `${'k'.repeat(500)} x`;
    const e = errorOf(() => validateAction({ ...action(), [longKey]: 1 }));
    const msg = (e.details.issues as { message: string }[])[0]?.message ?? '';
    expect(msg.length).toBeLessThan(120);
    expect(msg).toContain('unrecognized key');
  });
  it('non-objects are envelope.invalid', () => {
    for (const v of [null, undefined, 1, 'x', true, [], [action()]]) {
      expect(codeOf(() => validateAction(v))).toBe('envelope.invalid');
      expect(codeOf(() => validateTransactionRequest(v))).toBe('envelope.invalid');
    }
  });
});

describe('pollution, depth and size guards', () => {
  it('rejects __proto__, constructor and prototype keys anywhere (from parsed JSON)', () => {
    const docs = [
      '{"__proto__":{"polluted":true},"id":"a","capability_id":"c","input":{}}',
      '{"id":"a","capability_id":"c","input":{"__proto__":{"polluted":true}}}',
      '{"id":"a","capability_id":"c","input":{"x":[{"constructor":{"prototype":{"polluted":true}}}]}}',
      '{"id":"a","capability_id":"c","input":{"prototype":1}}',
      '{"id":"a","capability_id":"c","input":{},"metadata":{"labels":{"__proto__":"x"}}}',
    ];
    for (const d of docs) {
      expect(codeOf(() => validateAction(JSON.parse(d)))).toBe('envelope.forbidden_key');
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const e = errorOf(() => validateAction(JSON.parse(docs[1] as string)));
    expect(e.details).toEqual({ path: '/input/__proto__' });
  });
  it('rejects nesting deeper than the limit without overflowing the stack', () => {
    const nest = (n: number) => {
      let v: Record<string, unknown> = {};
      for (let i = 0; i < n; i++) v = { a: v };
      return v;
    };
    // envelope (1) > input (2) > nested objects
    expect(codeOf(() => validateAction({ ...action(), input: nest(ENVELOPE_LIMITS.maxDepth - 2) }))).toBe('no error');
    expect(codeOf(() => validateAction({ ...action(), input: nest(ENVELOPE_LIMITS.maxDepth - 1) }))).toBe('envelope.too_deep');
    expect(codeOf(() => validateAction({ ...action(), input: nest(200_000) }))).toBe('envelope.too_deep');
    let arr: unknown = [];
    for (let i = 0; i < 200_000; i++) arr = [arr];
    expect(codeOf(() => validateTransactionRequest(wrap({ ...action({ mode: 'plan' }), input: { arr } })))).toBe('envelope.too_deep');
  });
  it('rejects cycles as too deep', () => {
    const input: Record<string, unknown> = {};
    input.self = input;
    expect(codeOf(() => validateAction({ ...action(), input }))).toBe('envelope.too_deep');
  });
  it('rejects oversized envelopes with 413', () => {
    const big = { ...action(), input: { blob: 'x'.repeat(ENVELOPE_LIMITS.maxSize + 1) } };
    const e = errorOf(() => validateAction(big));
    expect(e.code).toBe('envelope.too_large');
    expect(e.httpStatus).toBe(413);
    const wide = { ...action(), input: { list: Array.from({ length: ENVELOPE_LIMITS.maxNodes + 1 }, () => 0) } };
    expect(codeOf(() => validateAction(wide))).toBe('envelope.too_large');
  });
  it('rejects non-plain values: class instances, Maps, functions, symbols, bigint, NaN, accessors, sparse arrays, proxies that throw', () => {
    const values: unknown[] = [
      new Date(),
      new Map(),
      () => 1,
      Symbol('s'),
      10n,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Object.defineProperty({}, 'x', { get: () => 1, enumerable: true }),
      // biome-ignore lint/suspicious/noSparseArray: the hole is the input under test
      [1, , 3],
      [undefined],
      new Proxy(
        {},
        {
          ownKeys: () => {
            throw new Error('trap');
          },
        },
      ),
      Object.create({ inherited: 1 }),
    ];
    for (const v of values) {
      const c = codeOf(() => validateAction({ ...action(), input: { v } }));
      expect(c, String(typeof v)).toBe('envelope.invalid');
    }
  });
  it('objects with a null prototype are plain JSON', () => {
    const input = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
    expect(validateAction({ ...action(), input }).input).toEqual({ a: 1 });
  });
  it('a hostile proxy envelope is a typed error, not a crash', () => {
    const hostile = new Proxy(action(), {
      get() {
        throw new Error('boom');
      },
      getOwnPropertyDescriptor() {
        throw new Error('boom');
      },
    });
    expect(isAipError(errorOf(() => validateAction(hostile)))).toBe(true);
  });
});

describe('validated envelopes are detached from the caller', () => {
  it('mutating the caller object afterwards does not change the validated action', () => {
    const input = { amount: 1, nested: { list: [1, 2] } };
    const a = { id: 'a1', capability_id: 'c', input };
    const v = validateAction(a);
    input.amount = 999;
    input.nested.list.push(3);
    expect(v.input).toEqual({ amount: 1, nested: { list: [1, 2] } });
    expect(v.input).not.toBe(input);
  });
});
