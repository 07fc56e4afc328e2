/**
 * Transactions page: "Direct execution has its own replay gate",
 * "Checkpoint provider acceptance before uncertainty", "Unknown outcome
 * blocks blind execution retry" (+ spec README list 5).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, errorOf, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-exec' });
});
afterAll(async () => h.destroy());

const exec = (id: string, tx: string, input: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  transfer(id, { transaction: { mode: 'execute', transaction_id: tx }, ...extra }, input);
const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });

async function executed(input: Record<string, unknown> = {}, capability = 'pay.transfer') {
  const a = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), { ...exec(a, tx, input), capability_id: capability });
  await h.drain();
  return { a, tx };
}

describe('Direct execution has its own replay gate', () => {
  it('execute creates a prepared record before handler execution', async () => {
    const a = uid('a');
    const tx = uid('tx');
    const before = provider.calls.length;
    const out = await h.runtime.submit(caller(), exec(a, tx));
    expect(out.disposition).toBe('accepted');
    expect((await record(tx))?.status).toBe('prepared');
    expect(provider.calls.length).toBe(before); // no handler ran during admission
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
  });

  it('if the same transaction ID already exists, the action ID, capability ID, full transaction context and identity snapshot have to match the stored execution contract (a conflict names the differing fields)', async () => {
    const { a, tx } = await executed();
    const other = await errorOf(h.runtime.submit(caller(), exec(uid('a'), tx)));
    expect(other.code).toBe('runtime.execution_contract_mismatch');
    expect(other.details.fields).toEqual(['action_id']);
    const cap = await errorOf(h.runtime.submit(caller(), { ...exec(uid('a'), tx), capability_id: 'pay.slow' }));
    expect(cap.details.fields).toEqual(expect.arrayContaining(['action_id', 'capability_id']));
    // Same action ID with another identity snapshot: the action record itself already differs.
    const ident = await errorOf(h.runtime.submit(caller(), { ...exec(a, tx), identity: { tenant_id: TENANT, external_account_id: 'acct-2' } }));
    expect(ident.code).toBe('runtime.action_conflict');
    expect(ident.details.fields).toEqual(['identity']);
  });

  it('a stored execution contract whose transaction context differs is a conflict naming the transaction field', async () => {
    const { tx } = await executed();
    const rec = await record(tx);
    const err = await errorOf(h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx, plan_id: 'plan:other' } })));
    expect(err.code).toBe('runtime.execution_contract_mismatch');
    expect(err.details.fields).toEqual(expect.arrayContaining(['action_id', 'transaction']));
    expect((await record(tx))?.revision).toBe(rec?.revision); // the stored contract is immutable
  });

  it('committed: replay the stored terminal result and do not invoke the connector again', async () => {
    const { a, tx } = await executed();
    const calls = provider.count('invoke', tx);
    const again = await h.runtime.submit(caller(), exec(a, tx));
    expect(again.disposition).toBe('replayed');
    expect(again.action_result).toMatchObject({ status: 'completed', replayed: true, output: { amount: 100 } });
    expect(await h.receiveInvokes()).toEqual([]);
    expect(provider.count('invoke', tx)).toBe(calls);
  });

  it('failed: replay the stored terminal result and do not invoke the connector again', async () => {
    const { a, tx } = await executed({ scenario: 'fail' });
    expect((await record(tx))?.status).toBe('failed');
    const again = await h.runtime.submit(caller(), exec(a, tx, { scenario: 'fail' }));
    expect(again.disposition).toBe('replayed');
    expect(again.action_result).toMatchObject({ status: 'failed', replayed: true, error: { code: 'pay.declined' } });
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('prepared: conflict, an attempt is in flight', async () => {
    const a = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(caller(), exec(a, tx));
    expect(await codeOf(h.runtime.submit(caller(), exec(a, tx)))).toBe('runtime.attempt_in_flight');
    await h.drain();
  });

  it('committing: conflict, an attempt is in flight (execute is rejected while the record is committing)', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }));
    await h.runtime.submit(caller(), transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }));
    const rec = await record(tx);
    expect(rec?.status).toBe('committing');
    const calls = provider.count('invoke', tx) + provider.count('commit', tx);
    const err = await errorOf(h.runtime.submit(caller(), transfer(uid('e'), { transaction: { mode: 'execute', transaction_id: tx } })));
    // An execute can never match a commit's stored contract: the gate answers with a 409 conflict and no attempt.
    expect(err.code).toBe('runtime.execution_contract_mismatch');
    expect(err.httpStatus).toBe(409);
    expect(provider.count('invoke', tx) + provider.count('commit', tx)).toBe(calls);
    await h.drain();
  });

  it('outcome_unknown: reject, reconciliation is required and there is no blind retry', async () => {
    const { a, tx } = await executed({ scenario: 'uncertain' });
    expect((await record(tx))?.status).toBe('outcome_unknown');
    const calls = provider.count('invoke', tx);
    const err = await errorOf(h.runtime.submit(caller(), exec(a, tx, { scenario: 'uncertain' })));
    expect(err.code).toBe('runtime.reconciliation_required');
    expect(provider.count('invoke', tx)).toBe(calls);
  });

  it('reconciling: reject, reconciliation is required', async () => {
    const { a, tx } = await executed({ scenario: 'uncertain' });
    h.clock.advance(10_000);
    provider.operations.set('never', 'pending');
    const rec = await record(tx);
    // Begin a reconcile through the public TransactionRequest path and do not run it yet.
    await h.runtime.submit(caller(), {
      action: transfer(uid('r'), { transaction: { mode: 'reconcile' } }, { scenario: 'uncertain' }),
      transaction_id: tx,
      requested_by: caller().principal,
    });
    expect((await record(tx))?.status).toBe('reconciling');
    expect(rec?.provider_operation).toBeDefined();
    expect(await codeOf(h.runtime.submit(caller(), exec(a, tx, { scenario: 'uncertain' })))).toBe('runtime.reconciliation_required');
    await h.drain();
  });

  it('reconciled: replay the stored terminal state, no new attempt', async () => {
    const { a, tx } = await executed({ scenario: 'uncertain' });
    h.clock.advance(10_000);
    await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    expect((await record(tx))?.status).toBe('reconciled');
    const again = await h.runtime.submit(caller(), exec(a, tx, { scenario: 'uncertain' }));
    expect(again.disposition).toBe('replayed');
    expect(again.action_result.metadata).toMatchObject({ transaction_status: 'reconciled' });
    expect(provider.count('invoke', tx)).toBe(1);
  });
});

describe('Checkpoint provider acceptance before uncertainty', () => {
  it('a connector can publish a ProviderOperationRef through the execution context after a provider accepts work', async () => {
    const { tx } = await executed();
    expect((await record(tx))?.provider_operation).toMatchObject({ provider: 'testpay' });
    const receipts = (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx })).items.map((r) => r.receipt.event);
    expect(receipts).toContain('transaction.provider_operation_checkpointed');
  });

  it('the checkpoint uses the transaction record revision fence and can also retain an opaque reconciliation cursor', async () => {
    const { tx } = await executed({ scenario: 'uncertain' });
    const rec = await record(tx);
    expect(rec?.reconciliation_cursor).toMatch(/^cursor-op-/);
    const receipts = (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx })).items.map((r) => r.receipt);
    const cp = receipts.find((r) => r.event === 'transaction.provider_operation_checkpointed');
    const before = receipts[receipts.indexOf(cp as never) - 1];
    expect(cp?.revision).toBe((before?.revision ?? 0) + 1);
  });

  it('on another attempt, the connector execution context exposes the recovered provider operation ID and cursor', async () => {
    const { tx } = await executed({ scenario: 'uncertain' });
    const rec = await record(tx);
    h.clock.advance(10_000);
    await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    const call = provider.calls.find((c) => c.method === 'reconcile' && c.transaction_id === tx);
    expect(call?.provider_operation_id).toBe(rec?.provider_operation?.operation_id);
    expect(call?.cursor).toBe(rec?.reconciliation_cursor);
  });

  it('if a connector learns the provider operation ID but does not publish it before losing the response, the generic runtime cannot invent that identifier', async () => {
    const { tx } = await executed({ scenario: 'uncertain_silent' });
    const rec = await record(tx);
    expect(rec?.status).toBe('outcome_unknown');
    expect(rec?.provider_operation).toBeUndefined();
    h.clock.advance(10_000);
    const out = await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    expect(out).toMatchObject({ disposition: 'escalated', reason: 'no_provider_operation' });
    expect(provider.count('reconcile', tx)).toBe(0);
  });
});

describe('Unknown outcome blocks blind execution retry', () => {
  it('for execute, a completed action result settles the transaction as committed', async () => {
    const { a, tx } = await executed();
    expect((await record(tx))?.status).toBe('committed');
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result.status).toBe('completed');
  });

  it('for commit, a completed action result settles the transaction as committed', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }));
    await h.runtime.submit(caller(), transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }));
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
  });

  it('a failed result becomes outcome_unknown when its error code is sla.timeout_exceeded', async () => {
    const { tx } = await executed({ scenario: 'hang' }, 'pay.slow');
    const rec = await record(tx);
    expect(rec?.status).toBe('outcome_unknown');
    expect(rec?.error?.code).toBe('sla.timeout_exceeded');
  });

  it('a failed result becomes outcome_unknown when its error details contain uncertain_outcome: true', async () => {
    const { tx } = await executed({ scenario: 'uncertain' });
    const rec = await record(tx);
    expect(rec?.status).toBe('outcome_unknown');
    expect(rec?.error?.details?.uncertain_outcome).toBe(true);
  });

  it('other failed results settle as failed', async () => {
    const { tx } = await executed({ scenario: 'fail' });
    expect((await record(tx))?.status).toBe('failed');
  });

  it('an uncertain record retains the provider operation parsed from error details, the cursor, the redacted error and an earliest reconciliation time', async () => {
    const { tx } = await executed({ scenario: 'uncertain' });
    const rec = await record(tx);
    expect(rec?.provider_operation).toMatchObject({ provider: 'testpay' });
    expect(rec?.reconciliation_cursor).toBeDefined();
    expect(rec?.error).toMatchObject({ code: 'pay.response_lost', uncertain_outcome: true });
    expect(rec?.next_reconcile_at).toBeDefined();
    const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx });
    expect(view.earliest_reconcile_at).toBe(rec?.next_reconcile_at);
  });

  it('the default delay is five seconds when the error does not provide retry_after_ms (and the reconciliation is scheduled)', async () => {
    const { tx } = await executed({ scenario: 'uncertain' });
    const rec = await record(tx);
    expect(Date.parse(rec?.next_reconcile_at as string) - Date.parse(rec?.updated_at as string)).toBe(5_000);
    expect(h.scheduler.for(tx).map((s) => s.at.toISOString())).toEqual([rec?.next_reconcile_at]);
  });

  it('the runtime rejects execute while the record is outcome_unknown, reconciling, or committing: a timeout is not proof that nothing happened', async () => {
    const { a, tx } = await executed({ scenario: 'hang' }, 'pay.slow');
    const calls = provider.count('invoke', tx);
    const err = await codeOf(h.runtime.submit(caller(), { ...exec(a, tx, { scenario: 'hang' }), capability_id: 'pay.slow' }));
    expect(err).toBe('runtime.reconciliation_required');
    expect(provider.count('invoke', tx)).toBe(calls);
  });
});
