/**
 * An operator's resolution is checked with the provider first
 * (lib/runtime/provider-lookup.ts), on DynamoDB Local: each kind of answer
 * the lookup can get and what the resolution's receipt records for it.
 *
 * - The provider answers terminally: a resolution that agrees applies
 *   (`provider_verdict: agrees`); one it contradicts is refused
 *   (`operator.resolution_contradicts_provider`, the record unchanged).
 * - The provider answers, but not terminally (`provider_pending`), or fails
 *   (`provider_unavailable` with the connector's code): the resolution
 *   applies on the operator's word, the receipt says no answer was obtained.
 * - Nothing can be asked (no checkpointed operation, and the connector looks
 *   operations up only by ID): `no_provider_operation`, no connector call.
 *
 * The lookup is a read: it runs the connector's reconcile once, as the
 * runtime's service principal, and writes no action, route or checkpoint.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer, type ReconcileAnswer, type ScenarioName } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, errorOf, operator, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({
    connectors: [testConnector(provider)],
    prefix: 'rt-resolve-provider',
    config: { reconcile: { max_attempts: 1, base_delay_ms: 5_000, max_delay_ms: 60_000 } },
  });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const receipts = async (tx: string) => (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items.map((r) => r.receipt);

/** An execute whose answer is lost (`uncertain`: after a checkpoint; `uncertain_silent`: nothing checkpointed), escalated after one unanswered round. */
async function escalated(scenario: ScenarioName) {
  const tx = uid('tx');
  await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario }));
  await h.drain();
  let rec = await record(tx);
  expect(rec?.status).toBe('outcome_unknown');
  if (rec?.provider_operation !== undefined) provider.operations.set(rec.provider_operation.operation_id, 'pending');
  if (rec?.next_reconcile_at !== undefined) h.clock.advance(Math.max(0, Date.parse(rec.next_reconcile_at) - h.clock.now().getTime()));
  await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
  rec = await record(tx);
  expect(rec?.escalated_at).toBeDefined();
  return { tx, operation_id: rec?.provider_operation?.operation_id };
}

/** Resolves `tx` as the operator; the last receipt's evidence. */
async function resolveWith(tx: string, resolution: Record<string, unknown>) {
  await h.runtime.resolve(operator, TENANT, tx, { reason: 'checked by hand', ...resolution });
  const last = (await receipts(tx)).at(-1);
  expect(last?.event).toBe('transaction.resolved');
  expect((await record(tx))?.status).toBe('reconciled');
  return last?.evidence as Record<string, unknown>;
}

const reconcileCalls = (tx: string) => provider.calls.filter((c) => c.method === 'reconcile' && c.transaction_id === tx);

describe('the provider answers terminally', () => {
  it.each<[ReconcileAnswer, 'committed' | 'not_committed']>([
    ['committed', 'committed'],
    ['not_committed', 'not_committed'],
  ])('it says %s: a resolution that agrees applies, its answer and verdict in the receipt', async (answer, effect) => {
    const { tx, operation_id } = await escalated('uncertain');
    provider.operations.set(operation_id as string, answer);
    const before = reconcileCalls(tx).length;
    const evidence = await resolveWith(tx, { effect });
    expect(evidence).toMatchObject({
      provider_answer: {
        obtained: true,
        capability_id: 'pay.transfer',
        effect,
        provider_operation: { provider: 'testpay', operation_id },
        evidence: { provider_state: answer },
      },
      provider_verdict: 'agrees',
    });
    // One lookup, by the checkpointed operation, as the runtime's service principal.
    const lookups = reconcileCalls(tx).slice(before);
    expect(lookups).toHaveLength(1);
    expect(lookups[0]).toMatchObject({ mode: 'reconcile', provider_operation_id: operation_id, actor: 'aip-runtime' });
    expect((await record(tx))?.result?.metadata).toMatchObject({
      reconciliation: { original_commit_completed: effect === 'committed', provider_verdict: 'agrees' },
    });
  });

  it('it contradicts the resolution: refused, the record, its receipts and the routes unchanged', async () => {
    const { tx, operation_id } = await escalated('uncertain');
    provider.operations.set(operation_id as string, 'committed');
    const before = await record(tx);
    const count = (await receipts(tx)).length;
    const err = await errorOf(h.runtime.resolve(operator, TENANT, tx, { effect: 'not_committed', reason: 'no debit seen' }));
    expect(err).toMatchObject({
      code: 'operator.resolution_contradicts_provider',
      details: { transaction_id: tx, contradicted: ['effect'], resolution: { effect: 'not_committed' }, provider_answer: { effect: 'committed' } },
    });
    expect(await record(tx)).toEqual(before);
    expect(await receipts(tx)).toHaveLength(count);
    // The lookup pinned no route for its own action ID (it is not an action).
    const lookup = reconcileCalls(tx).at(-1);
    expect(await h.stores.routes.get({ tenant_id: TENANT, action_id: lookup?.action_id as string })).toBeUndefined();
    expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: lookup?.action_id as string })).toBeUndefined();
  });
});

describe('the provider cannot answer', () => {
  it('still pending: provider_pending; the resolution applies on the operator’s word', async () => {
    const { tx } = await escalated('uncertain');
    const evidence = await resolveWith(tx, { effect: 'not_committed' });
    expect(evidence).toMatchObject({
      provider_answer: { obtained: false, reason: 'provider_pending', code: 'transaction.reconciliation_pending' },
      provider_verdict: 'no_answer',
    });
  });

  it('the lookup fails: provider_unavailable with the connector’s code', async () => {
    const { tx, operation_id } = await escalated('uncertain');
    provider.operations.set(operation_id as string, 'error');
    const evidence = await resolveWith(tx, { effect: 'committed' });
    expect(evidence).toMatchObject({
      provider_answer: { obtained: false, reason: 'provider_unavailable', code: 'pay.lookup_failed' },
      provider_verdict: 'no_answer',
    });
  });

  it('no operation was checkpointed and the connector looks up by ID only: no_provider_operation, the connector is not called', async () => {
    const { tx, operation_id } = await escalated('uncertain_silent');
    expect(operation_id).toBeUndefined();
    const before = reconcileCalls(tx).length;
    const evidence = await resolveWith(tx, { effect: 'not_committed' });
    expect(evidence).toMatchObject({ provider_answer: { obtained: false, reason: 'no_provider_operation' }, provider_verdict: 'no_answer' });
    expect(reconcileCalls(tx)).toHaveLength(before);
  });

  it('a record that is not escalated is refused before the provider is asked', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
    await h.drain();
    const before = reconcileCalls(tx).length;
    expect(await codeOf(h.runtime.resolve(operator, TENANT, tx, { effect: 'committed', reason: 'x' }))).toBe('runtime.resolve_not_escalated');
    expect(reconcileCalls(tx)).toHaveLength(before);
  });
});
