/**
 * The decision on an operator's resolution against the provider's answer
 * (lib/runtime/provider-lookup.ts `providerVerdict`): agrees, contradicted
 * (refused unless overridden with a reason), or no answer at all.
 */
import { describe, expect, it } from 'vitest';
import { AipError } from '../../../lib/errors/aip-error.js';
import { ResolutionSchema, type Resolution } from '../../../lib/ports/approval-store.js';
import { contradictions, NO_PROVIDER_ANSWER_REASONS, providerVerdict, type ProviderAnswer } from '../../../lib/runtime/provider-lookup.js';
import { toProblem } from '../../../lib/protocol/problem.js';

const TX = 'txn-1';
const OP = { provider: 'payments-simulator', operation_id: 'op_1' };
const at = '2026-01-01T00:00:00.000Z';

const resolution = (extra: Partial<Resolution> = {}): Resolution => ({ effect: 'committed', reason: 'found it in the dashboard', ...extra });
const answered = (effect: 'committed' | 'not_committed', provider_operation = OP): ProviderAnswer => ({
  obtained: true,
  looked_up_at: at,
  capability_id: 'payments.charge',
  effect,
  provider_operation,
});

function refusal(fn: () => unknown): AipError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AipError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('providerVerdict', () => {
  it('agrees when the provider says what the operator says (effect, and operation when both name one)', () => {
    expect(providerVerdict(TX, resolution(), answered('committed'))).toBe('agrees');
    expect(providerVerdict(TX, resolution({ provider_operation: OP }), answered('committed'))).toBe('agrees');
    expect(providerVerdict(TX, resolution({ effect: 'not_committed' }), answered('not_committed'))).toBe('agrees');
    // The provider's request ID is its detail: the operation is the provider and the ID.
    expect(providerVerdict(TX, resolution({ provider_operation: { ...OP, request_id: 'req_9' } }), answered('committed'))).toBe('agrees');
  });

  it('refuses a contradicted effect with operator.resolution_contradicts_provider (409), naming both', () => {
    const err = refusal(() => providerVerdict(TX, resolution({ effect: 'not_committed' }), answered('committed')));
    expect(err.code).toBe('operator.resolution_contradicts_provider');
    expect(err.httpStatus).toBe(409);
    expect(err.details).toMatchObject({
      transaction_id: TX,
      contradicted: ['effect'],
      resolution: { effect: 'not_committed' },
      provider_answer: { effect: 'committed', provider_operation: OP },
    });
    const problem = toProblem(err);
    expect(problem).toMatchObject({
      status: 409,
      code: 'operator.resolution_contradicts_provider',
      type: 'urn:aip:error:operator.resolution_contradicts_provider',
    });
  });

  it('refuses a resolution naming another operation than the one the provider answered about', () => {
    const other = { provider: OP.provider, operation_id: 'op_other' };
    const err = refusal(() => providerVerdict(TX, resolution({ provider_operation: other }), answered('committed')));
    expect(err.details).toMatchObject({ contradicted: ['provider_operation'], resolution: { provider_operation: other } });
    expect(contradictions(resolution({ effect: 'not_committed', provider_operation: other }), answered('committed'))).toEqual(['effect', 'provider_operation']);
  });

  it('an override with a reason records a contradicted resolution as overridden', () => {
    const overridden = resolution({ effect: 'not_committed', provider_override: { reason: 'provider ledger is stale; refund issued by hand in INC-7' } });
    expect(providerVerdict(TX, overridden, answered('committed'))).toBe('overridden');
    // Given where the provider agrees, the override changes nothing.
    expect(providerVerdict(TX, { ...overridden, effect: 'committed' }, answered('committed'))).toBe('agrees');
  });

  it.each(NO_PROVIDER_ANSWER_REASONS)('no answer (%s): the operator’s word stands alone, whatever it says', (reason) => {
    const none: ProviderAnswer = { obtained: false, looked_up_at: at, capability_id: 'payments.charge', reason };
    expect(providerVerdict(TX, resolution(), none)).toBe('no_answer');
    expect(providerVerdict(TX, resolution({ effect: 'not_committed' }), none)).toBe('no_answer');
    expect(contradictions(resolution(), none)).toEqual([]);
  });

  it('the override needs a reason of its own (the request schema)', () => {
    expect(ResolutionSchema.safeParse(resolution({ provider_override: { reason: '' } })).success).toBe(false);
    expect(ResolutionSchema.safeParse({ ...resolution(), provider_override: {} }).success).toBe(false);
    expect(ResolutionSchema.safeParse({ ...resolution(), provider_override: { reason: 'x', extra: 1 } }).success).toBe(false);
    expect(ResolutionSchema.safeParse(resolution({ provider_override: { reason: 'checked twice' } })).success).toBe(true);
  });
});
