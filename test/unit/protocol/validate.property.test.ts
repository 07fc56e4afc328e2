import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { ERROR_CATALOGUE } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { FORBIDDEN_KEYS, validateAction, validateTransactionRequest } from '../../../packages/connector-sdk/src/protocol/index.js';
import { actionArb, transactionRequestArb } from './arbitraries.js';

/** Runs fn; returns 'ok' or the AipError. Anything else thrown fails the property. */
function outcome(fn: () => unknown): 'ok' | AipError {
  try {
    fn();
    return 'ok';
  } catch (e) {
    if (e instanceof AipError) return e;
    throw new Error(`non-AipError thrown: ${String(e)}`);
  }
}

function expect4xx(r: 'ok' | AipError): void {
  if (r === 'ok') return;
  const status = ERROR_CATALOGUE[r.code].http;
  expect(status).toBeGreaterThanOrEqual(400);
  expect(status).toBeLessThan(500);
}

/** Junk that looks a bit like an envelope: real field names with arbitrary values. */
const nearEnvelopeArb = fc.dictionary(
  fc.oneof(
    fc.constantFrom(
      'id',
      'capability_id',
      'input',
      'idempotency_key',
      'identity',
      'metadata',
      'transaction',
      'action',
      'transaction_id',
      'requested_by',
      'mode',
      'plan_id',
    ),
    fc.string(),
  ),
  fc.anything({
    withBigInt: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withObjectString: true,
    withTypedArray: true,
    withSparseArray: true,
    maxDepth: 4,
  }),
);

describe('validators: arbitrary junk only ever yields a 4xx AipError', () => {
  it('validateAction', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything({ withBigInt: true, withDate: true, withMap: true, withNullPrototype: true, withObjectString: true, withSparseArray: true }),
          nearEnvelopeArb,
        ),
        (v) => {
          expect4xx(outcome(() => validateAction(v)));
        },
      ),
      { numRuns: 1000 },
    );
  });
  it('validateTransactionRequest', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything({ withNullPrototype: true, withObjectString: true }),
          nearEnvelopeArb,
          fc.record({ action: nearEnvelopeArb, transaction_id: fc.anything(), requested_by: fc.anything() }),
        ),
        (v) => {
          expect4xx(outcome(() => validateTransactionRequest(v)));
        },
      ),
      { numRuns: 1000 },
    );
  });
  it('arbitrary JSON text, parsed, only ever yields a 4xx AipError', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 6 }), (text) => {
        const v: unknown = JSON.parse(text);
        expect4xx(outcome(() => validateAction(v)));
        expect4xx(outcome(() => validateTransactionRequest(v)));
      }),
      { numRuns: 500 },
    );
  });
});

const jsonCopy = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

describe('valid generated envelopes round-trip', () => {
  it('Action: validate(a) equals a, and survives JSON serialization', () => {
    fc.assert(
      fc.property(actionArb, (a) => {
        // Validation detaches through JSON, so the only normalization is -0 → 0 (RFC 8785 hashes both alike).
        expect(validateAction(a)).toEqual(jsonCopy(a));
        expect(validateAction(JSON.parse(JSON.stringify(a)))).toEqual(jsonCopy(a));
      }),
      { numRuns: 300 },
    );
  });
  it('TransactionRequest: validate(r) equals r', () => {
    fc.assert(
      fc.property(transactionRequestArb, (r) => {
        expect(validateTransactionRequest(r)).toEqual(jsonCopy(r));
        expect(validateTransactionRequest(JSON.parse(JSON.stringify(r)))).toEqual(jsonCopy(r));
      }),
      { numRuns: 300 },
    );
  });
});

describe('the commit rule holds for every generated envelope', () => {
  it('removing plan_id from any commit is rejected, native and wrapped', () => {
    fc.assert(
      fc.property(actionArb, transactionRequestArb, (a, r) => {
        const { plan_id: _p, ...tx } = a.transaction ?? { mode: 'commit' as const };
        const commit = { ...a, transaction: { ...tx, mode: 'commit' as const } };
        const e1 = outcome(() => validateAction(commit));
        expect(e1 !== 'ok' && e1.code).toBe('envelope.commit_requires_plan_id');
        const { plan_id: _q, ...rtx } = r.action.transaction ?? { mode: 'commit' as const };
        const wrapped = { ...r, action: { ...r.action, transaction: { ...rtx, mode: 'commit' as const } } };
        const e2 = outcome(() => validateTransactionRequest(wrapped));
        expect(e2 !== 'ok' && e2.code).toBe('envelope.commit_requires_plan_id');
      }),
      { numRuns: 300 },
    );
  });
});

/**
 * Adds an own `key: {polluted: true}` property to one (chosen) plain object
 * inside a JSON copy of v, then round-trips through JSON text so the key
 * arrives exactly as a parsed request body would carry it.
 */
function injectAt(v: unknown, key: string, choice: number): unknown {
  const copy: unknown = JSON.parse(JSON.stringify(v));
  const objects: object[] = [];
  const stack: unknown[] = [copy];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === 'object' && x !== null) {
      if (!Array.isArray(x)) objects.push(x);
      stack.push(...Object.values(x));
    }
  }
  const target = objects[choice % objects.length] as object;
  Object.defineProperty(target, key, { value: { polluted: true }, enumerable: true, writable: true, configurable: true });
  const text = JSON.stringify(copy);
  expect(text).toContain(JSON.stringify(key));
  return JSON.parse(text);
}

describe('prototype-pollution keys are rejected and inert', () => {
  it('a forbidden key injected at any object position is rejected with envelope.forbidden_key', () => {
    fc.assert(
      fc.property(fc.oneof(actionArb, transactionRequestArb), fc.constantFrom(...FORBIDDEN_KEYS), fc.nat(), (env, key, choice) => {
        const parsed = injectAt(env, key, choice);
        const r = 'action' in env ? outcome(() => validateTransactionRequest(parsed)) : outcome(() => validateAction(parsed));
        expect(r).not.toBe('ok');
        if (r !== 'ok') expect(r.code).toBe('envelope.forbidden_key');
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
