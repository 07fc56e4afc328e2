/**
 * Transactions page: "Reconciliation asks the provider what happened", plus
 * the spec README gaps "Reconciliation" (bounded attempts, requires_human)
 * and "Sweeper".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer, type ScenarioName } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({
    connectors: [testConnector(provider)],
    prefix: 'rt-reconcile',
    config: { reconcile: { max_attempts: 3, base_delay_ms: 5_000, max_delay_ms: 60_000 } },
  });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const reconcileMsg = (tx: string) => ({ kind: 'reconcile' as const, tenant_id: TENANT, transaction_id: tx, reason: 'schedule' as const });

async function uncertain(scenario: ScenarioName = 'uncertain') {
  const a = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }, { scenario }));
  await h.drain();
  const rec = await record(tx);
  expect(rec?.status).toBe('outcome_unknown');
  h.clock.advance(5_000);
  return { a, tx, rec: rec! };
}

const publicReconcile = (tx: string, extra: Record<string, unknown> = {}) => ({
  action: transfer(uid('r'), { transaction: { mode: 'reconcile' } }, { scenario: 'uncertain' }),
  transaction_id: tx,
  requested_by: caller().principal,
  ...extra,
});

describe('Reconciliation asks the provider what happened', () => {
  it('a reconcile action requires a transaction ID', async () => {
    expect(await codeOf(h.runtime.submit(caller(), transfer(uid('r'), { transaction: { mode: 'reconcile' } })))).toBe('runtime.transaction_id_required');
  });

  it('a reconcile action requires an existing transaction in outcome_unknown', async () => {
    expect(await codeOf(h.runtime.submit(caller(), publicReconcile(uid('missing'))))).toBe('transaction.not_found');
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }));
    await h.drain();
    expect(await codeOf(h.runtime.submit(caller(), publicReconcile(tx)))).toBe('runtime.reconcile_not_outcome_unknown');
  });

  it('a reconcile action requires a durable provider operation reference', async () => {
    const { tx } = await uncertain('uncertain_silent');
    expect(await codeOf(h.runtime.submit(caller(), publicReconcile(tx)))).toBe('connector.reconcile_requires_provider_operation');
    expect((await record(tx))?.status).toBe('outcome_unknown');
  });

  it('the first-class request can provide the reference and cursor (binding one where none was checkpointed is an operator’s call)', async () => {
    const { tx } = await uncertain('uncertain_silent');
    const supplied = { provider_operation: { provider: 'testpay', operation_id: 'op-known-to-caller' }, reconciliation_cursor: 'c-1' };
    // The owner may reconcile, but not bind an operation the runtime never checkpointed (docs/authority.md).
    expect(await codeOf(h.runtime.submit(caller(), publicReconcile(tx, supplied)))).toBe('runtime.operator_required');
    const ops = { ...operator, scopes: [...operator.scopes, 'pay:write'] };
    const out = await h.runtime.submit(ops, publicReconcile(tx, { ...supplied, requested_by: ops.principal }));
    expect(out.transaction_result).toMatchObject({
      status: 'reconciling',
      provider_operation: { operation_id: 'op-known-to-caller' },
      reconciliation_cursor: 'c-1',
    });
    await h.drain();
    const call = provider.calls.find((c) => c.method === 'reconcile' && c.transaction_id === tx);
    expect(call).toMatchObject({ provider_operation_id: 'op-known-to-caller', cursor: 'c-1' });
    expect((await record(tx))?.status).toBe('reconciled');
  });

  it('otherwise the runtime recovers the reference and cursor from the transaction record', async () => {
    const { tx, rec } = await uncertain();
    await h.runtime.submit(caller(), publicReconcile(tx));
    await h.drain();
    const call = provider.calls.find((c) => c.method === 'reconcile' && c.transaction_id === tx);
    expect(call).toMatchObject({ provider_operation_id: rec.provider_operation?.operation_id, cursor: rec.reconciliation_cursor });
  });

  it('the runtime uses a compare-and-set transition from outcome_unknown to reconciling before invoking the handler', async () => {
    const { tx, rec } = await uncertain();
    const before = provider.count('reconcile', tx);
    await h.runtime.submit(caller(), publicReconcile(tx));
    const reconciling = await record(tx);
    expect(reconciling).toMatchObject({ status: 'reconciling', revision: rec.revision + 1, reconcile_attempts: 1 });
    expect(provider.count('reconcile', tx)).toBe(before);
    // a second reconciler loses the compare-and-set
    expect(await codeOf(h.runtime.submit(caller(), publicReconcile(tx)))).toBe('runtime.reconcile_not_outcome_unknown');
    await h.drain();
  });

  it('the connector receives the provider operation ID and last cursor in its trusted execution context', async () => {
    const { tx, rec } = await uncertain();
    await h.runtime.reconcile(reconcileMsg(tx));
    const call = provider.calls.find((c) => c.method === 'reconcile' && c.transaction_id === tx);
    expect(call).toMatchObject({ mode: 'reconcile', provider_operation_id: rec.provider_operation?.operation_id, cursor: rec.reconciliation_cursor });
  });

  it('a completed handler result settles the record as reconciled', async () => {
    const { tx } = await uncertain();
    const out = await h.runtime.reconcile(reconcileMsg(tx));
    expect(out).toMatchObject({ disposition: 'reconciled', transaction_status: 'reconciled' });
    const rec = await record(tx);
    expect(rec?.status).toBe('reconciled');
    expect(rec?.result?.metadata).toMatchObject({ reconciliation: { terminal: true, original_commit_completed: true } });
    expect(h.scheduler.cancelled.some((c) => c.transaction_id === tx)).toBe(true);
  });

  it('a terminal reconciliation that finds the commit did not complete is still reconciled and records that', async () => {
    const { tx, rec } = await uncertain();
    provider.operations.set(rec.provider_operation?.operation_id as string, 'not_committed');
    await h.runtime.reconcile(reconcileMsg(tx));
    const after = await record(tx);
    expect(after?.status).toBe('reconciled');
    expect(after?.result?.metadata).toMatchObject({ reconciliation: { original_commit_completed: false } });
  });

  it('a failed result returns it to outcome_unknown with updated recovery data', async () => {
    const { tx, rec } = await uncertain();
    provider.operations.set(rec.provider_operation?.operation_id as string, 'pending');
    const out = await h.runtime.reconcile(reconcileMsg(tx));
    expect(out.disposition).toBe('still_unknown');
    const after = await record(tx);
    expect(after).toMatchObject({ status: 'outcome_unknown', reconcile_attempts: 1 });
    expect(after?.reconciliation_cursor).toBe(`cursor-${rec.provider_operation?.operation_id}-pending`);
    expect(after?.error?.code).toBe('transaction.reconciliation_pending');
    expect(Date.parse(after?.next_reconcile_at as string)).toBeGreaterThan(Date.parse(rec.next_reconcile_at as string));
  });

  it('reconciled means a definitive answer: the runtime does not reinterpret it as committed, roll back work, or launch compensation', async () => {
    const { tx } = await uncertain();
    const compensations = provider.count('compensate');
    await h.runtime.reconcile(reconcileMsg(tx));
    const rec = await record(tx);
    expect(rec?.status).toBe('reconciled');
    expect(provider.count('compensate')).toBe(compensations);
    // `reconciled` is terminal: nothing moves it again
    await h.runtime.reconcile(reconcileMsg(tx));
    expect((await record(tx))?.revision).toBe(rec?.revision);
  });

  it('a provider operation ID does not prove that the provider committed: the record stays outcome_unknown until reconciled', async () => {
    const { rec } = await uncertain();
    expect(rec.provider_operation).toBeDefined();
    expect(rec.status).toBe('outcome_unknown');
  });

  it('the reconcile consumer runs as the runtime service principal as a governed reconcile action', async () => {
    const { tx } = await uncertain();
    const out = await h.runtime.reconcile(reconcileMsg(tx));
    const call = provider.calls.find((c) => c.method === 'reconcile' && c.transaction_id === tx);
    expect(call?.actor).toBe('aip-runtime');
    expect(out.action_id).toMatch(/^rcn-/);
  });
});

describe('Reconciliation is bounded (spec README: no endless loop, then a human)', () => {
  it('reconciliation that never reaches a terminal answer backs off, and after the bound escalates with wire status requires_human', async () => {
    const { tx, rec } = await uncertain();
    provider.operations.set(rec.provider_operation?.operation_id as string, 'pending');
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      const cur = await record(tx);
      h.clock.advance(Math.max(0, Date.parse(cur?.next_reconcile_at as string) - Date.parse(h.clock.iso())));
      await h.runtime.reconcile(reconcileMsg(tx));
      const after = await record(tx);
      if (after?.escalated_at === undefined) delays.push(Date.parse(after?.next_reconcile_at as string) - Date.parse(h.clock.iso()));
    }
    expect(delays).toEqual([5_000, 10_000]);
    const final = await record(tx);
    expect(final?.escalated_at).toBeDefined();
    const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx });
    expect(view.status).toBe('requires_human');
    const stuck = await h.runtime.listOperator(operator, { view: 'requires_human', tenant_id: TENANT });
    expect(stuck.items.some((i) => i.kind === 'transaction' && i.transaction.transaction_id === tx)).toBe(true);
    // once escalated, the consumer leaves it to a human
    expect((await h.runtime.reconcile(reconcileMsg(tx))).disposition).toBe('requires_human');
  });
});

describe('The sweeper is the safety net', () => {
  it('sweep enqueues overdue outcome_unknown records on the reconcile queue', async () => {
    const { tx, rec } = await uncertain();
    await h.receiveReconciles();
    const sweptAt = new Date(Date.parse(rec.next_reconcile_at as string) + 1);
    await h.runtime.sweep(sweptAt);
    const messages = await h.receiveReconciles();
    expect(messages).toContainEqual({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'sweeper' });
    const out = await h.runtime.reconcile(messages.find((m) => m.transaction_id === tx)!);
    expect(out.disposition).toBe('reconciled');
  });

  it('a record not yet due is not swept', async () => {
    const a = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
    await h.drain();
    await h.receiveReconciles();
    await h.runtime.sweep(h.clock.now());
    expect((await h.receiveReconciles()).some((m) => m.transaction_id === tx)).toBe(false);
    expect((await h.runtime.reconcile(reconcileMsg(tx))).disposition).toBe('not_due');
  });
});
