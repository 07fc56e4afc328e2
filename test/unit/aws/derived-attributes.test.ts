/**
 * Values an item says elsewhere, stored once (lib/aws/dynamo/derived-attributes.ts, docs/table-design.md
 * "Attributes that repeat the item"): a value equal to what the item holds becomes the marker `true` and
 * reads back as the value; any other value, and every value of an item written before, is kept as it is.
 */
import { describe, expect, it } from 'vitest';
import { fullActionEnvelope, fullTransaction, leanActionEnvelope, leanTransaction, leanTransactionData } from '../../../lib/aws/dynamo/derived-attributes.js';

const planned = {
  transaction_id: 'txn-1',
  mode: 'plan',
  capability_id: 'pay.transfer',
  plan_id: 'plan:txn-1',
  plan: { transaction_id: 'txn-1', plan_id: 'plan:txn-1', capability_id: 'pay.transfer', input_hash: 'ab', planning_action_id: 'p-1' },
  data: {
    transaction_context: { mode: 'plan', transaction_id: 'txn-1' },
    commit_transaction_context: { mode: 'commit', transaction_id: 'txn-1', plan_id: 'plan:txn-1' },
  },
};

const compensating = {
  transaction_id: 'txn-2',
  mode: 'compensate',
  capability_id: 'pay.transfer',
  compensation_for: 'a-1',
  data: {
    transaction_context: { mode: 'compensate', transaction_id: 'txn-2', compensation_for: 'a-1' },
    compensation: { target_action_id: 'a-1', target_transaction_id: 'txn-1', compensation_capability_id: 'pay.refund' },
    last_attempt: { action_id: 'k-1', fence: 1 },
  },
};

describe('values an item says elsewhere', () => {
  it('a planned and claimed record stores its contexts and the plan fields equal to its own as markers, and reads them back', () => {
    const lean = leanTransaction(planned);
    expect(lean.data).toEqual({ transaction_context: true, commit_transaction_context: true });
    expect(lean.plan).toEqual({ transaction_id: true, plan_id: true, capability_id: true, input_hash: 'ab', planning_action_id: 'p-1' });
    expect(lean).toMatchObject({ transaction_id: 'txn-1', mode: 'plan', capability_id: 'pay.transfer', plan_id: 'plan:txn-1' });
    expect(fullTransaction(lean)).toEqual(planned);
  });

  it("a compensating record stores its context and its target's action ID as markers; other data is kept", () => {
    const lean = leanTransaction(compensating);
    expect(lean.data).toEqual({
      transaction_context: true,
      compensation: { target_action_id: true, target_transaction_id: 'txn-1', compensation_capability_id: 'pay.refund' },
      last_attempt: { action_id: 'k-1', fence: 1 },
    });
    expect(fullTransaction(lean)).toEqual(compensating);
  });

  it('a value that differs from what the item holds is stored as it is', () => {
    const other = {
      ...planned,
      data: {
        transaction_context: { mode: 'plan', transaction_id: 'txn-1', extra: 'x' },
        commit_transaction_context: { mode: 'commit', transaction_id: 'txn-1', plan_id: 'plan:other' },
      },
      plan: { ...planned.plan, capability_id: 'pay.other' },
    };
    const lean = leanTransaction(other);
    expect(lean.data).toEqual(other.data);
    expect(lean.plan).toEqual({ ...other.plan, transaction_id: true, plan_id: true });
    expect(fullTransaction(lean)).toEqual(other);
    // A compensation target not named by the record (none) stays.
    const noTarget = { ...compensating, compensation_for: undefined };
    expect((leanTransaction(noTarget).data as { compensation: unknown }).compensation).toEqual(compensating.data.compensation);
  });

  it('an item written before (every value in full) reads exactly as it was stored', () => {
    expect(fullTransaction(planned)).toEqual(planned);
    expect(fullTransaction(compensating)).toEqual(compensating);
    expect(fullTransaction({ transaction_id: 'txn-3', mode: 'execute' })).toEqual({ transaction_id: 'txn-3', mode: 'execute' });
  });

  it("a plan claim's merged data stores the commit's context as a marker when it repeats the key and the plan ID", () => {
    const data = { commit_transaction_context: { mode: 'commit', transaction_id: 'txn-1', plan_id: 'plan:txn-1' } };
    expect(leanTransactionData(data, { transaction_id: 'txn-1', plan_id: 'plan:txn-1' })).toEqual({ commit_transaction_context: true });
    expect(leanTransactionData(data, { transaction_id: 'txn-1', plan_id: 'plan:txn-9' })).toEqual(data);
    expect(leanTransactionData(undefined, { transaction_id: 'txn-1' })).toBeUndefined();
  });

  it("an action's envelope stores its capability, idempotency key and mode as markers when they are the item's own", () => {
    const item = { capability_id: 'pay.transfer', mode: 'execute', idempotency_key: 'k-1' };
    const envelope = { capability_id: 'pay.transfer', idempotency_key: 'k-1', transaction: { mode: 'execute', transaction_id: 'txn-1' }, context: { a: 1 } };
    const lean = leanActionEnvelope(envelope, item);
    expect(lean).toEqual({ capability_id: true, idempotency_key: true, transaction: { mode: true, transaction_id: 'txn-1' }, context: { a: 1 } });
    expect(fullActionEnvelope(lean, item)).toEqual(envelope);
    // Written before: kept; an action without a transaction or a key has nothing else to rebuild.
    expect(fullActionEnvelope(envelope, item)).toEqual(envelope);
    const plain = { capability_id: 'pay.transfer' };
    expect(fullActionEnvelope(leanActionEnvelope(plain, { capability_id: 'pay.transfer' }), { capability_id: 'pay.transfer' })).toEqual(plain);
  });
});

describe("a reconcile's terminal settlement", () => {
  const evidence = { cursor: 'c-1', terminal: true, evidence: { provider_status: 'succeeded' } };
  const result = { action_id: 'rcn-1', status: 'completed', output: { ok: true }, metadata: { reconciliation: evidence } };

  it('stores the answer and the evidence that repeat the final result as markers, and reads them from the result', () => {
    const data = { last_reconcile_result: result, last_reconciliation: evidence, last_attempt: { action_id: 'rcn-1' } };
    const lean = leanTransactionData(data, { transaction_id: 'txn-1', result });
    expect(lean).toEqual({ last_reconcile_result: true, last_reconciliation: true, last_attempt: { action_id: 'rcn-1' } });
    expect(fullTransaction({ transaction_id: 'txn-1', result, data: lean })).toEqual({ transaction_id: 'txn-1', result, data });
  });

  it('keeps them in full without a final result (a reconcile back to outcome_unknown, a record created with a result)', () => {
    const data = { last_reconcile_result: result, last_reconciliation: evidence };
    expect(leanTransactionData(data, { transaction_id: 'txn-1' })).toEqual(data);
    expect(leanTransaction({ transaction_id: 'txn-1', mode: 'execute', result, data }).data).toEqual(data);
    expect(leanTransactionData(data, { transaction_id: 'txn-1', result: { ...result, output: { ok: false } } })).toEqual({
      last_reconcile_result: result,
      last_reconciliation: true,
    });
  });
});
