/**
 * Defect 2 (reconciling anyone's transaction), over HTTP on the local stack: any writer could
 * reconcile anyone's transaction with an arbitrary provider operation. Now a
 * reconcile may be requested only by the owner, an operator or the runtime;
 * a supplied operation that differs from the checkpointed one is
 * `transaction.provider_operation_conflict`; supplying one where none was
 * checkpointed needs the operator scope and is recorded as evidence in a
 * receipt; an escalated record is an operator's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { receiptAttribute } from '../../lib/aws/dynamo/table-design.js';
import { scanAll } from '../reliability/support.js';
import { readableItem } from '../support/packed-items.js';
import { charge, executed, reconcileUntil, refused, RW, securityStack, uid, writesNothing, type SecurityStack } from './support.js';

const T = 'demo';
const clock = new SteppedClock();
let s: SecurityStack;
let alice: string;
let bob: string;
let operator: string;

beforeAll(async () => {
  s = await securityStack('d2', T, { clock });
  alice = await s.token('alice', RW);
  bob = await s.token('bob', RW);
  operator = await s.token('ops', [...RW, 'aip:operator']);
});
afterAll(async () => s?.stop());

function reconcileRequest(requester: string, transaction_id: string, provider_operation?: { provider: string; operation_id: string }) {
  return {
    transaction_id,
    requested_by: { id: requester, kind: 'user' },
    action: {
      id: uid('rec'),
      capability_id: 'payments.charge',
      input: { amount: 1_000, currency: 'eur', customer: 'cus_sec' },
      transaction: { mode: 'reconcile', transaction_id },
    },
    ...(provider_operation !== undefined ? { provider_operation } : {}),
  };
}

/** A charge whose answer the provider's gateway loses after committing: outcome_unknown, operation checkpointed (found by the probe). */
async function uncertain(token: string, probeFails = false) {
  s.stack.simulator.setFaults([
    { match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 },
    ...(probeFails
      ? [{ match: { method: 'GET' as const, path: '/v1/operations' }, fault: { type: 'error_before_commit' as const, status: 503 as const } }]
      : []),
  ]);
  try {
    const out = await executed(s, token, { idempotency_key: uid('k') });
    expect(out.transaction.status).toBe('outcome_unknown');
    return out.transaction;
  } finally {
    s.stack.simulator.setFaults([]);
  }
}

describe('defect 2: who may reconcile, and with which provider operation', () => {
  it("another principal cannot reconcile Alice's transaction with their own operation: 404 as if it did not exist, nothing written", async () => {
    const txn = await uncertain(alice);
    expect(txn.provider_operation?.operation_id).toMatch(/^op_/);
    // Bob's own declined charge gives him a real operation ID to try.
    s.stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'decline' }, times: 1 }]);
    const bobs = await executed(s, bob);
    s.stack.simulator.setFaults([]);
    const bobOp = {
      provider: 'payments',
      operation_id: (bobs.answer.body.action_result as { error: { provider_operation: { operation_id: string } } }).error.provider_operation.operation_id,
    };
    expect(bobOp.operation_id).toMatch(/^op_/);

    await writesNothing(s, async () => {
      const a = await refused(s.call(bob, 'POST', '/v1/actions', reconcileRequest('bob', txn.transaction_id, bobOp)), 404, 'transaction.not_found');
      expect(JSON.stringify(a.body)).not.toContain(txn.provider_operation?.operation_id as string);
      await refused(s.call(bob, 'POST', '/v1/actions', reconcileRequest('bob', txn.transaction_id)), 404, 'transaction.not_found');
    });
    const view = await s.call(alice, 'GET', `/v1/transactions?transaction_id=${txn.transaction_id}`);
    expect(view.body).toMatchObject({ status: 'outcome_unknown', provider_operation: { operation_id: txn.provider_operation?.operation_id } });
  });

  it('the owner supplying an operation that differs from the checkpointed one: transaction.provider_operation_conflict, nothing written', async () => {
    const txn = await uncertain(alice);
    await writesNothing(s, async () => {
      const a = await refused(
        s.call(alice, 'POST', '/v1/actions', reconcileRequest('alice', txn.transaction_id, { provider: 'payments', operation_id: 'op_not_mine' })),
        409,
        'transaction.provider_operation_conflict',
      );
      expect(a.body.details).toMatchObject({ current_provider_operation: { operation_id: txn.provider_operation?.operation_id } });
    });
  });

  it('supplying an operation where none was checkpointed needs an operator, and the operator is named in a receipt', async () => {
    const txn = await uncertain(alice, true);
    expect(txn.provider_operation).toBeUndefined();
    // A real operation for the bound reference: an operator found it at the provider (here: the ledger).
    const found = s.stack.simulator.ledger().at(-1) as { operation_id: string };
    const supplied = { provider: 'payments', operation_id: found.operation_id };

    await writesNothing(s, async () => {
      await refused(s.call(alice, 'POST', '/v1/actions', reconcileRequest('alice', txn.transaction_id, supplied)), 403, 'runtime.operator_required');
      await refused(s.call(bob, 'POST', '/v1/actions', reconcileRequest('bob', txn.transaction_id, supplied)), 404, 'transaction.not_found');
    });

    const req = reconcileRequest('ops', txn.transaction_id, supplied);
    const worked = s.stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === req.action.id);
    const admitted = await s.call(operator, 'POST', '/v1/actions', req);
    expect(admitted.status, JSON.stringify(admitted.body)).toBe(202);
    await worked;
    const view = await s.call(operator, 'GET', `/v1/transactions?transaction_id=${txn.transaction_id}&include=receipts`);
    expect(view.body).toMatchObject({ status: 'reconciled', provider_operation: { operation_id: found.operation_id } });
    const receipts = view.body.receipts as { seq: number; event: string }[];
    const bound = receipts.find((r) => r.event === 'transaction.provider_operation_checkpointed');
    expect(bound).toBeDefined();
    // The evidence stored with that receipt (its own item, or inside the record: docs/table-design.md, "Receipts
    // inside the record") names the operator who bound the operation.
    const items = await scanAll(s.ddb, s.table);
    const own = items.find((i) => i.PK?.S === `TXN#${T}#${txn.transaction_id}` && i.SK?.S === `RCPT#${String(bound?.seq).padStart(8, '0')}`);
    const record = items.find((i) => i.PK?.S === `TXN#${T}#${txn.transaction_id}` && i.SK?.S === 'TXN');
    const inside = record === undefined ? undefined : readableItem(record)[receiptAttribute(bound?.seq ?? -1)];
    const evidence = JSON.stringify(own === undefined ? inside : readableItem(own));
    for (const fact of [found.operation_id, 'supplied_by', '"ops"', 'reconcile_request']) expect(evidence, fact).toContain(fact);
  });

  it('an escalated record is reconciled by an operator, not by its owner', async () => {
    const txn = await uncertain(alice, true);
    // No operation checkpointed, and the provider cannot be asked by idempotency key either (its lookups fail):
    // reconciliation rounds end at the bound, and the record is escalated to a human.
    s.stack.simulator.setFaults([{ match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'error_before_commit', status: 503 }, times: 'always' }]);
    try {
      await reconcileUntil(s, clock, { token: alice, tenant_id: T, transaction_id: txn.transaction_id });
    } finally {
      s.stack.simulator.setFaults([]);
    }
    const found = s.stack.simulator.ledger().at(-1) as { operation_id: string };
    const supplied = { provider: 'payments', operation_id: found.operation_id };
    await writesNothing(s, async () => {
      await refused(
        s.call(alice, 'POST', '/v1/actions', charge(uid('rec'), { mode: 'reconcile', transaction_id: txn.transaction_id })),
        403,
        'runtime.operator_required',
      );
      await refused(s.call(alice, 'POST', '/v1/actions', reconcileRequest('alice', txn.transaction_id, supplied)), 403, 'runtime.operator_required');
    });
    const req = reconcileRequest('ops', txn.transaction_id, supplied);
    const worked = s.stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === req.action.id);
    const admitted = await s.call(operator, 'POST', '/v1/actions', req);
    expect(admitted.status, JSON.stringify(admitted.body)).toBe(202);
    await worked;
    const view = await s.call(operator, 'GET', `/v1/transactions?transaction_id=${txn.transaction_id}`);
    expect(view.body).toMatchObject({ status: 'reconciled' });
  });
});
