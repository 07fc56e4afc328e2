/**
 * The sharded byStatus index (docs/table-design.md, "byStatus") against
 * DynamoDB Local, through the Runtime:
 * - records written by an earlier version under the unsharded key
 *   (`STATUS#<status>`) are still swept and listed, their store cursors still
 *   page, and their next status write moves them to their shard;
 * - concurrent tenants spread over the shards, and the sweeper and the
 *   operator listings (paged, per tenant) see every record exactly once, in
 *   index order;
 * - pending approvals under the unsharded expiry key (`EXPIRY#approval`) are
 *   still expired by the sweeper.
 */
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import type { TransactionStatus } from '../../../lib/transactions/status.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { ACCOUNTS, TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-shards', config: { stall_after_ms: 60_000 } });
});
afterAll(async () => h.destroy());

const rawItem = async (tenant: string, tx: string) =>
  (await h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: keys.transaction(tenant, tx), ConsistentRead: true }))).Item as Record<
    string,
    unknown
  >;

/** Moves a record's index entry to the unsharded partition an earlier version wrote (same sort key). */
async function toLegacyKey(tenant: string, tx: string, status: TransactionStatus): Promise<void> {
  await h.table.client.send(
    new UpdateCommand({
      TableName: h.table.tableName,
      Key: keys.transaction(tenant, tx),
      UpdateExpression: 'SET GSI3PK = :legacy',
      ConditionExpression: 'begins_with(GSI3PK, :sharded)',
      ExpressionAttributeValues: { ':legacy': keys.statusIndexLegacy(status), ':sharded': `${keys.statusIndexLegacy(status)}#` },
    }),
  );
}

async function executeUncertain(who: CallerIdentity, tenant: string): Promise<string> {
  const tx = uid('tx');
  const out = await h.runtime.submit(
    who,
    transfer(
      uid('a'),
      { identity: { tenant_id: tenant, external_account_id: ACCOUNTS[0] }, transaction: { mode: 'execute', transaction_id: tx } },
      { scenario: 'uncertain' },
    ),
  );
  expect(out.disposition).toBe('accepted');
  return tx;
}

type Page = { items: unknown[]; cursor?: string };
async function allPages(list: (cursor?: string) => Promise<Page>): Promise<unknown[]> {
  const items: unknown[] = [];
  let cursor: string | undefined;
  for (let n = 0; n < 100; n++) {
    const page = await list(cursor);
    items.push(...page.items);
    cursor = page.cursor;
    if (cursor === undefined) return items;
  }
  throw new Error('more than 100 pages');
}
const txIdsOf = (items: unknown[]) => items.map((i) => (i as { transaction: { transaction_id: string } }).transaction.transaction_id);

/** Moves the clock past every outcome_unknown record's next_reconcile_at. */
async function allDue(): Promise<void> {
  const page = await h.table.store.listByStatus({ status: 'outcome_unknown', limit: 100 });
  const last = Math.max(...page.items.map((r) => Date.parse(r.next_reconcile_at as string)));
  h.clock.advance(Math.max(0, last - h.clock.now().getTime()) + 1);
}

describe('byStatus: records under the legacy unsharded key', () => {
  it('are swept, listed and paged with the sharded ones, and move to their shard on their next write', async () => {
    // Three outcome_unknown records; two of them as an earlier version left them.
    const submitted: string[] = [];
    for (let i = 0; i < 3; i++) submitted.push(await executeUncertain(caller(), TENANT));
    await h.drain();
    for (const tx of submitted) expect((await h.table.store.get({ tenant_id: TENANT, transaction_id: tx }))?.status).toBe('outcome_unknown');
    // In index order (next_reconcile_at, then tenant and transaction ID).
    const sortKeys = new Map(await Promise.all(submitted.map(async (tx) => [tx, String((await rawItem(TENANT, tx)).GSI3SK)] as const)));
    const txs = [...submitted].sort((a, b) => ((sortKeys.get(a) as string) < (sortKeys.get(b) as string) ? -1 : 1));
    const [legacy0, sharded, legacy2] = txs as [string, string, string];
    await toLegacyKey(TENANT, legacy0, 'outcome_unknown');
    await toLegacyKey(TENANT, legacy2, 'outcome_unknown');
    expect((await rawItem(TENANT, legacy0)).GSI3PK).toBe('STATUS#outcome_unknown');
    expect((await rawItem(TENANT, sharded)).GSI3PK).toMatch(/^STATUS#outcome_unknown#\d\d$/);

    // A crash between admission and enqueue leaves a prepared record nobody will run, written under the legacy key.
    h.crash.arm('after_admission_before_enqueue');
    const stalled = uid('tx');
    expect(await codeOf(h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: stalled } })))).toBe(
      'runtime.crash_injected',
    );
    await toLegacyKey(TENANT, stalled, 'prepared');
    expect(await h.receiveInvokes()).toEqual([]);

    // The operator listing pages through both partitions in index order, one item at a time.
    const listed = await allPages((cursor) => h.runtime.listOperator(operator, { view: 'outcome_unknown', limit: 1, ...(cursor ? { cursor } : {}) }));
    expect(txIdsOf(listed)).toEqual(txs);

    // A store cursor issued before the sharding (the legacy partition's LastEvaluatedKey) still continues the listing.
    const first = await h.table.client.send(
      new QueryCommand({
        TableName: h.table.tableName,
        IndexName: 'byStatus',
        KeyConditionExpression: 'GSI3PK = :p',
        ExpressionAttributeValues: { ':p': 'STATUS#outcome_unknown' },
        Limit: 1,
      }),
    );
    expect(first.LastEvaluatedKey?.PK).toBe(keys.transaction(TENANT, legacy0).PK);
    const oldCursor = Buffer.from(JSON.stringify(first.LastEvaluatedKey)).toString('base64url');
    const rest = await h.table.store.listByStatus({ status: 'outcome_unknown', limit: 10, cursor: oldCursor });
    expect(rest.items.map((r) => r.transaction_id)).toEqual([sharded, legacy2]);
    expect(rest.cursor).toBeUndefined();

    // The sweeper enqueues every overdue record and the stalled attempt, whichever partition holds it.
    await allDue();
    h.clock.advance(60_001);
    const swept = await h.runtime.sweep(h.clock.now());
    expect(swept.enqueued).toBe(4);
    expect((await h.receiveReconciles()).map((m) => m.transaction_id).sort()).toEqual([...txs].sort());

    // The re-driven attempt (the only invoke message) settles the stalled record: it leaves the index.
    expect((await h.drain()).map((o) => o.transaction_id)).toEqual([stalled]);
    expect((await h.table.store.get({ tenant_id: TENANT, transaction_id: stalled }))?.status).toBe('committed');
    expect(provider.count('invoke', stalled)).toBe(1);
    expect((await rawItem(TENANT, stalled)).GSI3PK).toBeUndefined();

    // An inconclusive reconciliation rewrites the legacy record's index entry: it is on its shard now.
    const op = (await h.table.store.get({ tenant_id: TENANT, transaction_id: legacy0 }))?.provider_operation?.operation_id as string;
    provider.operations.set(op, 'pending');
    expect((await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: legacy0, reason: 'sweeper' })).disposition).toBe('still_unknown');
    expect((await rawItem(TENANT, legacy0)).GSI3PK).toBe(keys.statusIndex('outcome_unknown', false, keys.statusIndexShard(TENANT, legacy0)));
    const again = await allPages((cursor) => h.runtime.listOperator(operator, { view: 'outcome_unknown', limit: 2, ...(cursor ? { cursor } : {}) }));
    expect(txIdsOf(again).sort()).toEqual([...txs].sort());

    // Settled: reconciled records leave the index, legacy or not.
    for (const tx of txs) {
      const r = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
      provider.operations.set(r?.provider_operation?.operation_id as string, 'committed');
    }
    await allDue();
    for (const tx of txs) {
      expect((await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'sweeper' })).disposition).toBe('reconciled');
    }
    expect((await h.table.store.listByStatus({ status: 'outcome_unknown' })).items).toEqual([]);
  });
});

describe('byStatus: concurrent tenants', () => {
  const TENANTS = ['shard-t1', 'shard-t2', 'shard-t3', 'shard-t4', 'shard-t5', 'shard-t6'];
  const PER_TENANT = 4;

  it('spread over the shards; the sweeper and the paged, per-tenant operator listings see each record once, in index order', async () => {
    const byTenant = new Map<string, string[]>();
    await Promise.all(
      TENANTS.flatMap((tenant) =>
        Array.from({ length: PER_TENANT }, async () => {
          const tx = await executeUncertain(caller('agent-1', { tenants: [tenant] }), tenant);
          byTenant.set(tenant, [...(byTenant.get(tenant) ?? []), tx]);
        }),
      ),
    );
    await h.drain();
    const all = [...byTenant.entries()].flatMap(([tenant, txs]) => txs.map((tx) => ({ tenant, tx })));
    expect(all).toHaveLength(TENANTS.length * PER_TENANT);

    const entries = await Promise.all(all.map(async ({ tenant, tx }) => ({ tenant, tx, item: await rawItem(tenant, tx) })));
    for (const { tenant, tx, item } of entries) {
      expect(item.status).toBe('outcome_unknown');
      expect(item.GSI3PK).toBe(keys.statusIndex('outcome_unknown', false, keys.statusIndexShard(tenant, tx)));
    }
    expect(new Set(entries.map((e) => e.item.GSI3PK)).size).toBeGreaterThan(1);
    const indexOrder = [...entries].sort((a, b) => (String(a.item.GSI3SK) < String(b.item.GSI3SK) ? -1 : 1)).map((e) => e.tx);

    // An operator of every tenant pages through all of them in index order (across shards).
    const everyone: CallerIdentity = { ...operator, principal: { id: 'ops-all', kind: 'user' }, tenants: TENANTS };
    const listed = await allPages((cursor) => h.runtime.listOperator(everyone, { view: 'outcome_unknown', limit: 5, ...(cursor ? { cursor } : {}) }));
    expect(txIdsOf(listed)).toEqual(indexOrder);
    // Per tenant: exactly that tenant's records, also for an operator of that tenant alone.
    for (const tenant of TENANTS) {
      const mine = await allPages((cursor) =>
        h.runtime.listOperator(everyone, { view: 'outcome_unknown', tenant_id: tenant, limit: 3, ...(cursor ? { cursor } : {}) }),
      );
      expect(txIdsOf(mine)).toEqual(indexOrder.filter((tx) => byTenant.get(tenant)?.includes(tx)));
      const own = await allPages((cursor) =>
        h.runtime.listOperator(
          { ...operator, principal: { id: `ops-${tenant}`, kind: 'user' }, tenants: [tenant] },
          { view: 'outcome_unknown', limit: 7, ...(cursor ? { cursor } : {}) },
        ),
      );
      expect(txIdsOf(own)).toEqual(indexOrder.filter((tx) => byTenant.get(tenant)?.includes(tx)));
    }

    // The sweeper enqueues each overdue record exactly once.
    await allDue();
    const swept = await h.runtime.sweep(h.clock.now());
    const messages = await h.receiveReconciles();
    expect(messages.map((m) => m.transaction_id).sort()).toEqual(all.map((e) => e.tx).sort());
    expect(swept.enqueued).toBe(all.length);
  });
});

describe('byExpiry: pending approvals under the legacy unsharded key', () => {
  it('are expired by the sweeper with the sharded ones', async () => {
    const pending: string[] = [];
    for (let i = 0; i < 3; i++) {
      const out = await h.runtime.submit(caller(), {
        ...transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: uid('tx') } }),
        capability_id: 'pay.approved',
      });
      expect(out.disposition).toBe('requires_human');
      pending.push((out.action_result.metadata as { approval_id: string }).approval_id);
    }
    const approvalKey = (id: string) => keys.approval(TENANT, id);
    const [legacy, ...sharded] = pending as [string, ...string[]];
    await h.table.client.send(
      new UpdateCommand({
        TableName: h.table.tableName,
        Key: approvalKey(legacy),
        UpdateExpression: 'SET GSI4PK = :legacy',
        ConditionExpression: 'begins_with(GSI4PK, :sharded)',
        ExpressionAttributeValues: { ':legacy': 'EXPIRY#approval', ':sharded': 'EXPIRY#approval#' },
      }),
    );
    for (const id of sharded) {
      const item = (await h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: approvalKey(id), ConsistentRead: true }))).Item;
      expect(item?.GSI4PK).toBe(keys.approvalExpiryIndex(keys.approvalExpiryIndexShard(TENANT, id)));
    }
    const expiring = await h.stores.approvals.listExpiring({ expires_before: '2999-01-01T00:00:00.000Z', limit: 1 });
    expect(expiring.items).toHaveLength(1);
    expect(expiring.cursor).toBeDefined();

    const latest = Math.max(
      ...(await Promise.all(
        pending.map(async (id) => Date.parse((await h.stores.approvals.get({ tenant_id: TENANT, approval_id: id }))?.expires_at as string)),
      )),
    );
    h.clock.advance(latest - h.clock.now().getTime() + 1);
    await h.runtime.sweep(h.clock.now());
    for (const id of pending) expect((await h.stores.approvals.get({ tenant_id: TENANT, approval_id: id }))?.status).toBe('expired');
    expect((await h.stores.approvals.listExpiring({ expires_before: h.clock.iso(), limit: 10 })).items).toEqual([]);
  });
});
