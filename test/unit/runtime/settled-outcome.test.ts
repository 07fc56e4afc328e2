/**
 * What a settled action says about its record (lib/runtime/settled-outcome.ts): the outcome a record still in its
 * attempt status settles to from its bound action, which settled first, and the view of it before it is written.
 */
import { describe, expect, it } from 'vitest';
import type { ActionResult, TransactionMode } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { TransactionRecord } from '../../../lib/ports/transaction-store.js';
import { asSettled, definitiveOutcome, pendingSettlement, settlingAttemptId, type SettledAction } from '../../../lib/runtime/settled-outcome.js';

const OP = { provider: 'pay', operation_id: 'op_1' };
const done: ActionResult = { action_id: 'a1', status: 'completed', output: { ok: true } };
const declined: ActionResult = {
  action_id: 'a1',
  status: 'failed',
  error: { code: 'provider.declined', message: 'no', category: 'permanent', retryable: false },
};
const lost: ActionResult = {
  action_id: 'a1',
  status: 'failed',
  error: { code: 'provider.unavailable', message: 'lost', category: 'temporary', retryable: true, uncertain_outcome: true },
};

function record(status: TransactionRecord['status'], extra: Partial<TransactionRecord> = {}): TransactionRecord {
  return {
    tenant_id: 't1',
    transaction_id: 'tx1',
    action_id: 'a1',
    status,
    revision: 2,
    receipt_count: 1,
    data: {},
    ...extra,
  } as unknown as TransactionRecord;
}

function action(result: ActionResult, mode: TransactionMode = 'execute', extra: Partial<SettledAction> = {}): SettledAction {
  return {
    tenant_id: 't1',
    action_id: 'a1',
    capability_id: 'pay.charge',
    status: result.status === 'completed' ? 'completed' : result.status === 'cancelled' ? 'cancelled' : 'failed',
    fence: 1,
    result,
    settlement: { attempt_id: 'att-1' },
    action: { capability_id: 'pay.charge', transaction: { mode, transaction_id: 'tx1' } },
    ...extra,
  } as SettledAction;
}

describe('definitiveOutcome', () => {
  it('completed settles committed (compensated for a compensation); a certain failure or a cancellation failed', () => {
    expect(definitiveOutcome('execute', done)).toBe('committed');
    expect(definitiveOutcome('commit', done)).toBe('committed');
    expect(definitiveOutcome('compensate', done)).toBe('compensated');
    expect(definitiveOutcome('execute', declined)).toBe('failed');
    expect(definitiveOutcome('compensate', { action_id: 'a1', status: 'cancelled' })).toBe('failed');
  });

  it('an uncertain failure, a reconcile and the other modes have none (they settle in one write with the action)', () => {
    expect(definitiveOutcome('execute', lost)).toBeUndefined();
    expect(
      definitiveOutcome('execute', { ...declined, error: { code: 'sla.timeout_exceeded', message: 't', category: 'timeout', retryable: true } }),
    ).toBeUndefined();
    expect(definitiveOutcome('reconcile', done)).toBeUndefined();
    expect(definitiveOutcome('rollback_not_supported', done)).toBeUndefined();
    expect(definitiveOutcome(undefined, done)).toBeUndefined();
  });
});

describe('pendingSettlement and asSettled', () => {
  it('a record in its attempt status bound to an action that settled first is pending; the view shows it settled', () => {
    expect(pendingSettlement(record('prepared'), action(done))).toBe('committed');
    expect(pendingSettlement(record('committing'), action(done, 'commit'))).toBe('committed');
    expect(pendingSettlement(record('compensating'), action(declined, 'compensate'))).toBe('failed');
    const shown = asSettled(record('prepared'), action(done, 'execute', { settlement: { attempt_id: 'att-1', provider_operation: OP } }));
    expect(shown).toMatchObject({ status: 'committed', provider_operation: OP, revision: 2, receipt_count: 1 });
  });

  it('a checkpointed operation stays as the record holds it; an operation the error names is shown', () => {
    const held = { provider: 'pay', operation_id: 'op_0' };
    expect(
      asSettled(record('prepared', { provider_operation: held }), action(done, 'execute', { settlement: { attempt_id: 'att-1', provider_operation: OP } }))
        .provider_operation,
    ).toEqual(held);
    const named = { ...declined, error: { ...(declined.error as object), provider_operation: OP } } as ActionResult;
    expect(asSettled(record('prepared'), action(named)).provider_operation).toEqual(OP);
  });

  it('the settling attempt named by the route it pinned (the marker) is resolved only for the same fence', () => {
    const route = { admission_reservation: 'att-9', fence_token: 1 } as SettledAction['route'];
    const marked = action(done, 'execute', { settlement: { attempt_id: true }, route });
    expect(settlingAttemptId(marked)).toBe('att-9');
    expect(pendingSettlement(record('prepared'), marked)).toBe('committed');
    const moved = action(done, 'execute', { settlement: { attempt_id: true }, route, fence: 2 });
    expect(settlingAttemptId(moved)).toBeUndefined();
    expect(pendingSettlement(record('prepared'), moved)).toBeUndefined();
    expect(settlingAttemptId(action(done))).toBe('att-1');
  });

  it('nothing is pending for a settled record, another action, an action without settlement facts, or a running action', () => {
    const rec = record('prepared');
    expect(pendingSettlement(record('committed'), action(done))).toBeUndefined();
    expect(pendingSettlement(rec, action(done, 'execute', { action_id: 'a2' }))).toBeUndefined();
    expect(pendingSettlement(rec, action(done, 'execute', { tenant_id: 't2' }))).toBeUndefined();
    expect(pendingSettlement(rec, action(done, 'execute', { settlement: undefined }))).toBeUndefined();
    expect(pendingSettlement(rec, action(done, 'execute', { status: 'running' }))).toBeUndefined();
    expect(pendingSettlement(rec, undefined)).toBeUndefined();
    expect(asSettled(rec, action(lost))).toBe(rec);
  });
});
