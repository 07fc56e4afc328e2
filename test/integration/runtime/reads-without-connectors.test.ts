/**
 * Per-route composition (lib/runtime/runtime.ts, functions/shared/compose-runtime.ts):
 * a Runtime whose connectors load on first need serves every read from a
 * kernel without connectors, and loads them once, on the first method that
 * needs them. Against DynamoDB Local and fauxqs, next to a Runtime built with
 * its connectors on the same table: the reads answer alike, and the loader
 * is never called for them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorParts } from '../../../lib/runtime/deps.js';
import { Runtime } from '../../../lib/runtime/runtime.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();

/** A loader that counts its calls and fails the calls it is told to. */
function loader(failFirst = 0) {
  let calls = 0;
  const load = async (): Promise<ConnectorParts> => {
    calls += 1;
    if (calls <= failFirst) throw new Error(`connector composition failed (call ${calls})`);
    return { registry: h.registry, connectors: h.connectors, config: h.readDeps.config };
  };
  return { load, calls: () => calls };
}

let settled: { a: string; tx: string };
let pending: string;

beforeAll(async () => {
  h = await createHarness({
    connectors: [testConnector(provider)],
    prefix: 'rt-reads',
    config: {
      tenants: { [TENANT]: { approvals: [{ policy_id: 'echo-gate', capabilities: ['pay.echo'], modes: ['none'], approver_scopes: ['aip:approve'] }] } },
    },
  });
  // A settled execute (with its receipts) and an action waiting for approval, written by the Runtime with connectors.
  settled = { a: uid('a'), tx: uid('tx') };
  await h.runtime.submit(caller(), transfer(settled.a, { transaction: { mode: 'execute', transaction_id: settled.tx }, idempotency_key: uid('key') }));
  await h.drain();
  pending = uid('a');
  await h.runtime.submit(caller(), { ...transfer(pending), capability_id: 'pay.echo' });
});
afterAll(async () => h.destroy());

describe('a Runtime whose connectors load on first need', () => {
  it('answers every read as the Runtime with connectors does, without loading them', async () => {
    const parts = loader();
    const reads = new Runtime(h.readDeps, parts.load);
    const both = async <T>(read: (rt: Runtime) => Promise<T>) => {
      const [deferred, full] = await Promise.all([read(reads), read(h.runtime)]);
      expect(deferred).toEqual(full);
      return deferred;
    };
    expect(await both((rt) => rt.getAction(caller(), TENANT, settled.a))).toMatchObject({ action_result: { status: 'completed' } });
    await both((rt) => rt.getActionResult(caller(), TENANT, settled.a));
    expect(await both((rt) => rt.pollAction(caller(), TENANT, settled.a, new Set(['completed'])))).toHaveProperty('state.action_result.status', 'completed');
    await both((rt) => rt.getAction(caller(), TENANT, pending));
    const view = await both((rt) => rt.getTransaction(caller(), { tenant_id: TENANT, transaction_id: settled.tx }, { result: true, receipts: true }));
    expect(view).toMatchObject({ status: 'committed' });
    expect(view.receipts?.length).toBeGreaterThan(0);
    await both((rt) => rt.readStream(caller(), TENANT, settled.a));
    await both((rt) => rt.listOperator(operator, { view: 'pending_approvals', tenant_id: TENANT }));
    await both((rt) => rt.operatorOverview(operator, TENANT));
    // A read of a missing or foreign target answers as before, still without connectors.
    expect(await codeOf(reads.getAction(caller('agent-2'), TENANT, settled.a))).toBe(await codeOf(h.runtime.getAction(caller('agent-2'), TENANT, settled.a)));
    expect(parts.calls()).toBe(0);
  });

  it('lists approvals without them when nothing listed is overdue, doomed or shows its input', async () => {
    const parts = loader();
    const reads = new Runtime(h.readDeps, parts.load);
    // Neither an approver nor the requester: the pending approval is read, checked, and not shown.
    const bystander = caller('agent-2', { scopes: ['pay:write'] });
    expect(await reads.listApprovals(bystander, TENANT)).toEqual(await h.runtime.listApprovals(bystander, TENANT));
    expect((await reads.listApprovals(bystander, TENANT)).items).toEqual([]);
    expect(parts.calls()).toBe(0);
  });

  it('loads them for the facts of a listed approval (the data contract shows its input), and answers alike', async () => {
    const parts = loader();
    const reads = new Runtime(h.readDeps, parts.load);
    const listed = await reads.listApprovals(operator, TENANT);
    expect(listed).toEqual(await h.runtime.listApprovals(operator, TENANT));
    expect(listed.items.map((r) => r.action_id)).toContain(pending);
    const one = listed.items.find((r) => r.action_id === pending);
    expect(await reads.getApproval(operator, TENANT, one?.approval_id as string)).toEqual(
      await h.runtime.getApproval(operator, TENANT, one?.approval_id as string),
    );
    expect(parts.calls()).toBe(1);
  });

  it('refuses a malformed submission before loading them', async () => {
    const parts = loader();
    const reads = new Runtime(h.readDeps, parts.load);
    expect(await codeOf(reads.submit(caller(), { not: 'an action' }))).toBe(await codeOf(h.runtime.submit(caller(), { not: 'an action' })));
    expect(parts.calls()).toBe(0);
  });

  it('loads them once for concurrent first needs, and then runs with them', async () => {
    const parts = loader();
    const runtime = new Runtime(h.readDeps, parts.load);
    const lists = await Promise.all(Array.from({ length: 5 }, () => runtime.capabilities(caller(), TENANT)));
    for (const list of lists) expect(list).toEqual(await h.runtime.capabilities(caller(), TENANT));
    const a = uid('a');
    expect(
      await runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: uid('tx') }, idempotency_key: uid('key') })),
    ).toMatchObject({
      http_status: 202,
    });
    expect(parts.calls()).toBe(1);
  });

  it('does not keep a failed load: the next call loads again', async () => {
    const parts = loader(1);
    const runtime = new Runtime(h.readDeps, parts.load);
    await expect(runtime.capabilities(caller(), TENANT)).rejects.toThrow('connector composition failed (call 1)');
    expect(await runtime.capabilities(caller(), TENANT)).toEqual(await h.runtime.capabilities(caller(), TENANT));
    expect(parts.calls()).toBe(2);
  });

  it('loads them to withdraw a doomed approval on the way (its doom read without them)', async () => {
    const a = uid('a');
    await h.runtime.submit(caller(), { ...transfer(a), capability_id: 'pay.echo' });
    const waiting = await h.stores.actions.get({ tenant_id: TENANT, action_id: a });
    const approval_id = waiting?.approval_id as string;
    // The action moved on while its approval is still pending (arranged): it can no longer succeed.
    await h.stores.actions.transition({
      tenant_id: TENANT,
      action_id: a,
      from: ['requires_human'],
      to: 'accepted',
      expected_revision: waiting?.revision as number,
    });
    const parts = loader();
    const reads = new Runtime(h.readDeps, parts.load);
    expect((await reads.listApprovals(operator, TENANT)).items.map((r) => r.approval_id)).not.toContain(approval_id);
    expect(parts.calls()).toBe(1);
    expect(await h.stores.approvals.get({ tenant_id: TENANT, approval_id })).toMatchObject({
      status: 'withdrawn',
      withdrawal: { reason: 'action_ended', details: { action_status: 'accepted' } },
    });
  });

  // Last: it moves the shared clock past every pending approval's expiry.
  it('loads them to expire an overdue approval on the way, as the Runtime with connectors does', async () => {
    const a = uid('a');
    await h.runtime.submit(caller(), { ...transfer(a), capability_id: 'pay.echo' });
    const approval_id = (await h.stores.actions.get({ tenant_id: TENANT, action_id: a }))?.approval_id as string;
    expect((await h.stores.approvals.get({ tenant_id: TENANT, approval_id }))?.status).toBe('pending');
    h.clock.advance(24 * 3_600_000 + 1); // the default approvals.ttl_ms
    const parts = loader();
    const reads = new Runtime(h.readDeps, parts.load);
    // Expired before anything is shown: even a caller who may see none of them expires them.
    expect((await reads.listApprovals(caller('agent-2', { scopes: ['pay:write'] }), TENANT)).items).toEqual([]);
    expect(parts.calls()).toBe(1);
    expect((await h.stores.approvals.get({ tenant_id: TENANT, approval_id }))?.status).toBe('expired');
    expect((await reads.getAction(caller(), TENANT, a)).action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.approval_expired' } });
    expect((await reads.listApprovals(operator, TENANT)).items).toEqual([]);
  });
});
