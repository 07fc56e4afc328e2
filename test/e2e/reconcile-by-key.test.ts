/**
 * Reconciliation by idempotency key, over HTTP on the local stack with the payments connector
 * and simulator: a timeout with no provider operation known is no longer
 * escalated at once. The reconcile consumer asks the provider by the
 * idempotency key the runtime sent, finds the operation, binds it to the
 * record (checkpointed in the settlement receipt) and reconciles; no second
 * charge request is ever sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { verifyReceiptChain } from '../../lib/runtime/receipts.js';
import { executed, RW, securityStack, uid, type SecurityStack } from '../security/support.js';

const T = 'demo';
const clock = new SteppedClock();
let s: SecurityStack;
let alice: string;

beforeAll(async () => {
  s = await securityStack('e2e-bykey', T, { clock });
  alice = await s.token('alice', RW);
});
afterAll(async () => s?.stop());

describe('reconciliation by idempotency key', () => {
  it('an outcome_unknown charge with no operation ID is found by its key and reconciled, with one charge at the provider', async () => {
    const mark = s.stack.simulator.ledger().length;
    // The charge commits, its answer is lost (504), and the in-attempt probe by key fails too: no operation is known.
    s.stack.simulator.setFaults([
      { match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 },
      { match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'error_before_commit', status: 503 }, times: 1 },
    ]);
    const key = uid('key');
    const done = await executed(s, alice, { idempotency_key: key });
    s.stack.simulator.setFaults([]);
    expect(done.transaction.status).toBe('outcome_unknown');
    expect(done.transaction.provider_operation).toBeUndefined();
    const charged = s.stack.simulator.ledger().slice(mark);
    expect(charged).toHaveLength(1);

    const txId = done.transaction.transaction_id;
    const view = await s.call(alice, 'GET', `/v1/transactions?transaction_id=${txId}`);
    clock.advanceTo(Date.parse((view.body as { earliest_reconcile_at: string }).earliest_reconcile_at) + 1);
    const out = await s.stack.runtime.reconcile({ kind: 'reconcile', tenant_id: T, transaction_id: txId, reason: 'schedule' });
    expect(out.disposition).toBe('reconciled');

    const after = await s.call(alice, 'GET', `/v1/transactions?transaction_id=${txId}&include=result,receipts`);
    const body = after.body as {
      status: string;
      provider_operation?: { operation_id: string };
      receipts: unknown[];
      receipt_count: number;
      receipt_head: string;
      action_result?: unknown;
    };
    expect(body.status).toBe('reconciled');
    expect(body.provider_operation?.operation_id).toBe((charged[0] as { operation_id: string }).operation_id);
    expect(verifyReceiptChain(body.receipts, { transaction_id: txId, expected_count: body.receipt_count, expected_head: body.receipt_head })).toMatchObject({
      valid: true,
    });
    // Still one charge: reconciliation only looked the operation up.
    expect(s.stack.simulator.ledger().slice(mark)).toHaveLength(1);
  });
});
