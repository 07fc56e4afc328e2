/**
 * Transactions page: "Wire status and durable status are not identical
 * enums" (statuses, compare-and-set, the transaction view) and "Connector
 * routing is action-scoped".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DURABLE_TRANSACTION_STATUSES } from '../../../lib/transactions/status.js';
import { verifyReceiptChain } from '../../../lib/runtime/receipts.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer, type ScenarioName } from './connectors.js';
import { OTHER_TENANT, TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-view' });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const receiptsOf = async (tx: string) => (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items.map((r) => r.receipt);

async function executed(scenario: ScenarioName = 'ok') {
  const a = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }, { scenario }));
  await h.drain();
  return { a, tx };
}

describe('Wire status and durable status are not identical enums', () => {
  it('the durable record only ever holds the twelve durable statuses; receipts of the wire-only projection never rewrite it', async () => {
    const { tx } = await executed();
    const statuses = (await receiptsOf(tx)).map((r) => r.status);
    for (const s of statuses) expect(DURABLE_TRANSACTION_STATUSES as readonly string[]).toContain(s);
    expect(DURABLE_TRANSACTION_STATUSES as readonly string[]).toContain((await record(tx))?.status);
  });

  it('requires_human is projected from the surrounding action (waiting for approval), not stored', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), { ...transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }), capability_id: 'pay.approved' });
    const out = await h.runtime.submit(caller(), {
      action: { ...transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }), capability_id: 'pay.approved' },
      transaction_id: tx,
      requested_by: caller().principal,
    });
    expect(out.transaction_result?.status).toBe('requires_human');
    expect((await record(tx))?.status).toBe('planned');
  });

  it('cancelled is projected from the surrounding action result, and cancelling before an attempt fails the durable record', async () => {
    const a = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }));
    const out = await h.runtime.cancel(caller(), TENANT, a);
    expect(out.action_result.status).toBe('cancelled');
    expect((await record(tx))?.status).toBe('failed');
    const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx });
    expect(view.status).toBe('cancelled');
    const drained = await h.drain();
    expect(drained.map((d) => d.disposition)).toEqual(['already_settled']);
    expect(provider.calls.filter((c) => c.action_id === a)).toEqual([]);
  });

  it('every durable transition names the allowed current states and expected revision; the backend applies it only when both match, then increments the revision', async () => {
    const { tx } = await executed();
    const revisions = (await receiptsOf(tx)).map((r) => r.revision);
    expect(revisions).toEqual(revisions.map((_, i) => i + 1));
    const rec = await record(tx);
    expect(await codeOf(h.table.store.settle({ tenant_id: TENANT, transaction_id: tx, expected_revision: (rec?.revision ?? 1) - 1, to: 'failed' }))).toBe(
      'transaction.state_conflict',
    );
  });

  it('every transition appends a receipt: a hash chain the verifier checks, detecting altered, removed or reordered links', async () => {
    const { tx } = await executed('uncertain');
    h.clock.advance(5_000);
    await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    const rec = await record(tx);
    const chain = await receiptsOf(tx);
    expect(chain.map((r) => r.event)).toEqual([
      'transaction.prepared',
      'transaction.provider_operation_checkpointed',
      'transaction.settled.outcome_unknown',
      'transaction.reconcile_started',
      'transaction.settled.reconciled',
    ]);
    const anchor = { transaction_id: tx, expected_count: rec?.receipt_count, expected_head: rec?.receipt_head };
    expect(verifyReceiptChain(chain, anchor).valid).toBe(true);
    const altered = chain.map((r, i) => (i === 2 ? { ...r, status: 'committed' as const } : r));
    expect(verifyReceiptChain(altered, anchor)).toMatchObject({ valid: false, problem: 'altered' });
    expect(verifyReceiptChain([...chain.slice(0, 3), ...chain.slice(4)], anchor)).toMatchObject({ valid: false });
    expect(verifyReceiptChain([chain[1], chain[0], ...chain.slice(2)], anchor)).toMatchObject({ valid: false });
  });
});

describe('The transaction view', () => {
  it('is selected by exactly one of transaction ID, plan ID or action ID', async () => {
    const tx = uid('tx');
    const p = uid('p');
    await h.runtime.submit(caller(), transfer(p, { transaction: { mode: 'plan', transaction_id: tx } }));
    const byTx = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx });
    const byPlan = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, plan_id: `plan:${tx}` });
    const byAction = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, action_id: p });
    expect([byPlan, byAction]).toEqual([byTx, byTx]);
    expect(await codeOf(h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx, plan_id: `plan:${tx}` }))).toBe(
      'transaction.invalid_selector',
    );
    expect(await codeOf(h.runtime.getTransaction(caller(), { tenant_id: TENANT }))).toBe('transaction.invalid_selector');
  });

  it('can optionally include the terminal action result and the receipt chain', async () => {
    const { tx } = await executed();
    const bare = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx });
    expect(bare.action_result).toBeUndefined();
    expect(bare.receipts).toBeUndefined();
    const full = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { result: true, receipts: true });
    expect(full.action_result?.status).toBe('completed');
    expect(full.receipts?.length).toBe((await record(tx))?.receipt_count);
  });

  it('normal identity, owner, tenant and scopes still govern the read', async () => {
    const { a, tx } = await executed();
    expect(await codeOf(h.runtime.getTransaction(caller('agent-2'), { tenant_id: TENANT, transaction_id: tx }))).toBe('transaction.not_found');
    expect(await codeOf(h.runtime.getAction(caller('agent-2'), TENANT, a))).toBe('action.not_found');
    expect(await codeOf(h.runtime.getTransaction(caller('agent-1', { tenants: [OTHER_TENANT] }), { tenant_id: TENANT, transaction_id: tx }))).toBe(
      'runtime.tenant_forbidden',
    );
    expect((await h.runtime.getTransaction(operator, { tenant_id: TENANT, transaction_id: tx })).status).toBe('committed');
  });

  it('operators list what is stuck: outcome_unknown and stalled committing', async () => {
    const { tx } = await executed('uncertain');
    const unknown = await h.runtime.listOperator(operator, { view: 'outcome_unknown', tenant_id: TENANT, limit: 100 });
    expect(unknown.items.some((i) => i.kind === 'transaction' && i.transaction.transaction_id === tx)).toBe(true);
    const tx2 = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx2 } }));
    await h.runtime.submit(caller(), transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx2}` } }));
    h.clock.advance(10 * 60_000);
    const stalled = await h.runtime.listOperator(operator, { view: 'stalled_committing', tenant_id: TENANT, limit: 100 });
    expect(stalled.items.some((i) => i.kind === 'transaction' && i.transaction.transaction_id === tx2)).toBe(true);
    expect(await codeOf(h.runtime.listOperator(caller(), { view: 'outcome_unknown' }))).toBe('runtime.operator_forbidden');
    await h.drain();
  });
});

describe('Connector routing is action-scoped', () => {
  it('the immutable RouteAssignment is keyed by action ID and pins capability, verified tenant, instance and replica, version and manifest, policy and credential revisions and a fence token', async () => {
    const { a } = await executed();
    const route = await h.stores.routes.get({ tenant_id: TENANT, action_id: a });
    const reg = h.registry.lookup('pay.transfer');
    expect(route).toMatchObject({
      action_id: a,
      capability_id: 'pay.transfer',
      verified_tenant: TENANT,
      connector_id: 'testpay',
      connector_instance: 'local',
      replica: 'local-0',
      version: '1.0.0',
      manifest_hash: reg.manifest_hash,
      policy_revision: '1',
      credential_revision: '0',
      fence_token: 1,
    });
  });

  it('resolving the same action ID again reuses the assignment only when capability and tenant still match (retries stay on the pinned route)', async () => {
    const a = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }));
    h.crash.arm('after_lease_before_provider_call');
    await h.drain();
    const pinned = await h.stores.routes.get({ tenant_id: TENANT, action_id: a });
    h.clock.advance(60_000);
    await h.drain();
    expect(await h.stores.routes.get({ tenant_id: TENANT, action_id: a })).toEqual(pinned);

    // An assignment pinned to another capability is never reused: the attempt fails before any provider call.
    const b = uid('a');
    await h.runtime.submit(caller(), transfer(b, { transaction: { mode: 'execute', transaction_id: uid('tx') } }));
    const admitted = await h.stores.actions.get({ tenant_id: TENANT, action_id: b });
    await h.stores.actions.pinRoute({
      tenant_id: TENANT,
      action_id: b,
      expected_revision: admitted?.revision ?? 0,
      route: { ...(pinned as NonNullable<typeof pinned>), action_id: b, capability_id: 'pay.slow' },
    });
    await h.drain();
    expect((await h.runtime.getAction(caller(), TENANT, b)).action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.route_mismatch' } });
    expect(provider.calls.filter((c) => c.action_id === b)).toEqual([]);
  });

  it('there is no transaction-ID or plan-ID lookup: distinct plan, commit and reconciliation action IDs resolve independently', async () => {
    const tx = uid('tx');
    const p = uid('p');
    const c = uid('c');
    await h.runtime.submit(caller(), {
      ...transfer(p, { transaction: { mode: 'plan', transaction_id: tx } }, { scenario: 'uncertain' }),
      capability_id: 'pay.quote',
    });
    await h.runtime.submit(caller(), {
      ...transfer(c, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }, { scenario: 'uncertain' }),
      capability_id: 'pay.quote',
    });
    await h.drain();
    const [rp, rc] = [await h.stores.routes.get({ tenant_id: TENANT, action_id: p }), await h.stores.routes.get({ tenant_id: TENANT, action_id: c })];
    expect(rp?.action_id).toBe(p);
    expect(rc?.action_id).toBe(c);
    expect(rp?.created_at !== undefined && rc?.created_at !== undefined).toBe(true);
  });

  it('a reconciliation action reuses the route only when it carries the same action ID', async () => {
    const { a, tx } = await executed('uncertain');
    h.clock.advance(5_000);
    const out = await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    const original = await h.stores.routes.get({ tenant_id: TENANT, action_id: a });
    const reconcile = await h.stores.routes.get({ tenant_id: TENANT, action_id: out.action_id as string });
    expect(original?.action_id).toBe(a);
    expect(reconcile?.action_id).toBe(out.action_id);
  });

  it('a schema- or policy-only plan does not invoke a connector at all, so it creates no remote assignment', async () => {
    const p = uid('p');
    await h.runtime.submit(caller(), transfer(p, { transaction: { mode: 'plan', transaction_id: uid('tx') } }));
    expect(await h.stores.routes.get({ tenant_id: TENANT, action_id: p })).toBeUndefined();
  });
});

describe('Streaming through the action lifecycle', () => {
  it('chunks a streaming capability publishes are persisted by the runtime and readable by the owner, after a cursor', async () => {
    const a = uid('a');
    await h.runtime.submit(caller(), { ...transfer(a), capability_id: 'pay.statement' });
    await h.drain();
    const all = await h.runtime.readStream(caller(), TENANT, a);
    expect(all.items.map((c) => c.chunk.chunk.type)).toEqual(['progress', 'text']);
    expect((await h.runtime.readStream(caller(), TENANT, a, 0)).items.map((c) => c.seq)).toEqual([1]);
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result).toMatchObject({ status: 'completed', output: { transfer_id: 'statement' } });
    expect(await codeOf(h.runtime.readStream(caller('agent-2'), TENANT, a))).toBe('action.not_found');
  });
});
