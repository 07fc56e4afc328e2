/**
 * Transactions page: "Capabilities declare transaction support" (fidelity),
 * "Preview comes before approval; mutation does not", "A durable plan binds
 * a bounded set of facts" (+ spec README lists 3 and 4).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import { PLAN_TTL_MS, planInputHash } from '../../../packages/connector-sdk/src/protocol/index.js';
import { GENESIS_RECEIPT_ATTRIBUTE, TTL_ATTRIBUTE, keys } from '../../../lib/aws/dynamo/table-design.js';
import { CapabilityRegistry } from '../../../lib/runtime/registry.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-preview' });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const plan = (id: string, tx: string | undefined, capability = 'pay.transfer', input: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  ...transfer(id, { transaction: { mode: 'plan', ...(tx ? { transaction_id: tx } : {}) }, ...extra }, input),
  capability_id: capability,
});

describe('Capabilities declare transaction support: dry-run fidelity', () => {
  it('for schema_only and policy_and_schema the runtime creates its own preview without invoking the handler', async () => {
    const tx = uid('tx');
    const before = provider.calls.length;
    const out = await h.runtime.submit(caller(), transfer(uid('d'), { transaction: { mode: 'dry_run', transaction_id: tx } }));
    expect(out.disposition).toBe('completed');
    expect(out.action_result.output).toMatchObject({ dry_run: { fidelity: 'schema_only', handler_invoked: false } });
    expect(provider.calls.length).toBe(before);
    expect((await record(tx))?.status).toBe('dry_run_completed');
  });

  it('for downstream_validation and full_simulation it calls the handler and records the returned status and output inside a dry-run result', async () => {
    const tx = uid('tx');
    const out = await h.runtime.submit(caller(), {
      ...transfer(uid('d'), { transaction: { mode: 'dry_run', transaction_id: tx } }),
      capability_id: 'pay.quote',
    });
    expect(out.action_result.output).toMatchObject({ dry_run: { fidelity: 'full_simulation', status: 'completed', output: { fee: 1, total: 101 } } });
    expect(provider.count('plan', tx)).toBe(1);
    expect((await record(tx))?.data.downstream_validation).toMatchObject({ fidelity: 'full_simulation', status: 'completed' });
  });

  it("a dry run's record holds its only receipt (one item, the record's 7-day ttl); a plan's record keeps its receipt as an item; both chains read and verify", async () => {
    // docs/table-design.md, "The first receipt inside the record".
    const dry = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('d'), { transaction: { mode: 'dry_run', transaction_id: dry } }));
    const planned = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), planned));
    const items = async (tx: string) =>
      (
        await h.table.client.send(
          new QueryCommand({
            TableName: h.table.tableName,
            KeyConditionExpression: 'PK = :pk',
            ExpressionAttributeValues: { ':pk': keys.transaction(TENANT, tx).PK },
            ConsistentRead: true,
          }),
        )
      ).Items ?? [];
    const dryItems = await items(dry);
    expect(dryItems.map((i) => i.SK)).toEqual(['TXN']);
    expect(dryItems[0]?.[GENESIS_RECEIPT_ATTRIBUTE]).toBeDefined();
    expect(dryItems[0]?.[TTL_ATTRIBUTE]).toBe(Math.floor(h.clock.now().getTime() / 1000) + 7 * 24 * 3600);
    expect((await items(planned)).map((i) => i.SK)).toEqual(['RCPT#00000000', 'TXN']);
    for (const [tx, status] of [
      [dry, 'dry_run_completed'],
      [planned, 'planned'],
    ] as const) {
      const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { receipts: true });
      expect(view.receipts?.map((r) => [r.seq, r.status, r.transaction_id])).toEqual([[0, status, tx]]);
      expect(view.receipt_head).toBe(view.receipts?.[0]?.hash);
      expect((await h.verifyChain(tx)).valid).toBe(true);
    }
  });

  it('a capability that does not declare a transaction mode cannot be used with it', async () => {
    expect(await codeOf(h.runtime.submit(caller(), { ...transfer(uid('d'), { transaction: { mode: 'execute' } }), capability_id: 'pay.quote' }))).toBe(
      'runtime.mode_unsupported',
    );
  });
});

describe('Preview comes before approval; mutation does not', () => {
  it('the runtime handles dry_run and plan before creating a pending approval', async () => {
    const tx = uid('tx');
    const out = await h.runtime.submit(caller(), plan(uid('p'), tx, 'pay.approved'));
    expect(out.disposition).toBe('completed');
    expect((await record(tx))?.status).toBe('planned');
    expect((await h.runtime.listApprovals(caller(), TENANT)).items.filter((a) => a.transaction_id === tx)).toEqual([]);
  });

  it('their result records whether later execution requires approval and retains the applicable approval policy', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), tx, 'pay.approved'));
    const rec = await record(tx);
    expect(rec?.plan?.approval_required).toBe(true);
    expect(rec?.plan?.approval_policy).toMatchObject({ policy_id: 'treasury-two-person', source: 'capability', approver_scopes: ['pay:approve'] });
    const dry = await h.runtime.submit(caller(), { ...transfer(uid('d'), { transaction: { mode: 'dry_run' } }), capability_id: 'pay.approved' });
    expect(dry.action_result.output).toMatchObject({ dry_run: { approval_required: true, approval_policy: { policy_id: 'treasury-two-person' } } });
    const free = await h.runtime.submit(caller(), plan(uid('p'), uid('tx')));
    expect(free.action_result.output).toMatchObject({ approval_required: false });
  });

  it('execute, commit, compensate and reconcile do not use that preview-first exception: they pass the approval gate before their pre-execution state transition', async () => {
    const tx = uid('tx');
    const out = await h.runtime.submit(caller(), {
      ...transfer(uid('e'), { transaction: { mode: 'execute', transaction_id: tx } }),
      capability_id: 'pay.approved',
    });
    expect(out.disposition).toBe('requires_human');
    expect(await record(tx)).toBeUndefined(); // no prepared record before the approval
  });

  it('a plan that records approval_required is not an approved commit', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), tx, 'pay.approved'));
    const commit = await h.runtime.submit(caller(), {
      ...transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }),
      capability_id: 'pay.approved',
    });
    expect(commit.disposition).toBe('requires_human');
    expect((await record(tx))?.status).toBe('planned');
  });
});

describe('A durable plan binds a bounded set of facts', () => {
  it('for plan, the runtime creates a TransactionPlan and stores it in a planned transaction record', async () => {
    const tx = uid('tx');
    const a = uid('p');
    const out = await h.runtime.submit(caller(), { action: plan(a, undefined), transaction_id: tx, requested_by: caller().principal });
    expect(out.transaction_result).toMatchObject({ transaction_id: tx, status: 'planned', plan: { plan_id: `plan:${tx}` } });
    const rec = await record(tx);
    expect(rec).toMatchObject({ status: 'planned', mode: 'plan', plan_id: `plan:${tx}`, action_id: a });
  });

  it('the implementation-generated plan expires after 15 minutes', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), tx));
    const p = (await record(tx))?.plan;
    expect(Date.parse(p?.expires_at as string) - Date.parse(p?.created_at as string)).toBe(PLAN_TTL_MS);
  });

  it('its default ID is plan:<transaction_id> when the action does not supply one', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), tx));
    expect((await record(tx))?.plan_id).toBe(`plan:${tx}`);
    const tx2 = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx2, plan_id: `custom-${tx2}` } }));
    expect((await record(tx2))?.plan_id).toBe(`custom-${tx2}`);
  });

  it('the plan retains plan, transaction and capability IDs, the planning principal and action, hash and snapshot, identity snapshot, approval facts, the contracts, idempotency and service-level metadata, and created/expiry times', async () => {
    const tx = uid('tx');
    const a = uid('p');
    await h.runtime.submit(caller(), { ...plan(a, tx), idempotency_key: `k-${a}` });
    const p = (await record(tx))?.plan;
    expect(p).toMatchObject({
      plan_id: `plan:${tx}`,
      transaction_id: tx,
      capability_id: 'pay.transfer',
      planned_by: { id: 'agent-1', kind: 'agent' },
      planning_action_id: a,
      input_hash: planInputHash('pay.transfer', { amount: 100, to: 'acct-b' }),
      identity_snapshot: { tenant_id: TENANT, external_account_id: 'acct-1' },
      approval_required: false,
      compensation: { mode: 'supported', compensation_capability_id: 'pay.refund' },
      idempotency: { idempotency_key: `k-${a}` },
      service_level: { timeout_ms: 10_000 },
    });
    expect(p?.created_at).toBeDefined();
    expect(p?.expires_at).toBeDefined();
  });

  it('the plan input hash covers the capability ID and action input; it does not include Action.transaction', async () => {
    const tx1 = uid('tx');
    const tx2 = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), tx1));
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx2, plan_id: `x-${tx2}` } }));
    const [p1, p2] = [(await record(tx1))?.plan, (await record(tx2))?.plan];
    expect(p1?.input_hash).toBe(p2?.input_hash);
    expect(p1?.input_hash).toBe(planInputHash('pay.transfer', { amount: 100, to: 'acct-b' }));
  });

  it('when the capability data contract requires redaction, the input snapshot contains only redacted: true and the hash; otherwise it also contains the raw input value', async () => {
    const tx1 = uid('tx');
    const tx2 = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), tx1, 'pay.secret'));
    await h.runtime.submit(caller(), plan(uid('p'), tx2));
    const redacted = (await record(tx1))?.plan?.input_snapshot;
    expect(redacted).toEqual({ redacted: true, hash: planInputHash('pay.secret', { amount: 100, to: 'acct-b' }) });
    expect((await record(tx2))?.plan?.input_snapshot).toEqual({
      redacted: false,
      hash: planInputHash('pay.transfer', { amount: 100, to: 'acct-b' }),
      value: { amount: 100, to: 'acct-b' },
    });
  });

  it('downstream plan validation runs only for downstream_validation or full_simulation', async () => {
    const before = provider.count('plan');
    await h.runtime.submit(caller(), plan(uid('p'), uid('tx')));
    expect(provider.count('plan')).toBe(before);
    const tx = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), tx, 'pay.quote'));
    expect(provider.count('plan', tx)).toBe(1);
  });

  it('the handler has to advertise transaction support: a full_simulation capability without it is never admitted, so it cannot be planned', async () => {
    const noPlan = defineConnector({
      id: 'noplan',
      version: '1.0.0',
      admission: 'defer',
      capabilities: [
        defineCapability({
          id: 'noplan.transfer',
          input: z.strictObject({ amount: z.int() }),
          output: z.strictObject({ ok: z.boolean() }),
          contract: { transaction: { modes: ['plan', 'commit'], dry_run_fidelity: 'full_simulation', requires_plan_before_commit: true } },
        }).implement({ invoke: () => ({ ok: true }), commit: () => ({ ok: true }) }),
      ],
    });
    expect(noPlan.implementation_support('noplan.transfer')?.transaction).toBe(false);
    const registry = CapabilityRegistry.fromManifests([noPlan.manifest()]);
    expect(registry.has('noplan.transfer')).toBe(false);
    expect(registry.report.connectors[0]?.rejected[0]).toMatchObject({ capability_id: 'noplan.transfer', problem: 'admission' });
  });

  it('a failed validation creates a failed transaction record without a plan', async () => {
    const tx = uid('tx');
    const out = await h.runtime.submit(caller(), plan(uid('p'), tx, 'pay.quote', { scenario: 'fail' }));
    expect(out.disposition).toBe('rejected');
    expect(out.action_result).toMatchObject({ status: 'failed', error: { code: 'pay.validation_rejected' } });
    const rec = await record(tx);
    expect(rec?.status).toBe('failed');
    expect(rec?.plan).toBeUndefined();
    expect(rec?.plan_id).toBeUndefined();
  });

  it('a successful validation is retained in plan metadata and the transaction record', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), plan(uid('p'), tx, 'pay.quote'));
    const rec = await record(tx);
    expect(rec?.plan?.downstream_validation).toMatchObject({ fidelity: 'full_simulation', status: 'completed', output: { fee: 1, total: 101 } });
    expect(rec?.data.downstream_validation).toMatchObject({ fidelity: 'full_simulation', status: 'completed' });
  });
});
