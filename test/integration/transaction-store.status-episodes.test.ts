/**
 * One byStatus entry per episode (docs/table-design.md, "`byStatus`", "One entry per episode") against
 * DynamoDB Local:
 * - a plan's claim (`planned → committing`) and a due reconciliation's begin (`outcome_unknown →
 *   reconciling`) write no index entry: the record keeps the entry its episode began with and stores
 *   when it entered its status; a reconciliation begun early, or of an escalated record, or without a
 *   known pre-image, moves the entry as before; every write that sets the record's own entry drops it;
 * - listing by each status returns exactly the records in that status, in index order, in full pages
 *   with working cursors, for every tenant (the sweeper) and for a tenant scope (an operator), with a
 *   time bound applied to the record's own entry time under a kept entry;
 * - entries written before (exact-status keys, sharded and legacy unsharded) are still listed and
 *   moved or removed by the next write;
 * - a property: after random transitions of several records, every listing equals a scan of the
 *   table filtered by status (and time).
 */
import { GetCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoStores } from '../../lib/aws/dynamo/stores.js';
import { STATUS_ENTERED_ATTRIBUTE, keys } from '../../lib/aws/dynamo/table-design.js';
import type { TransactionStore } from '../../lib/ports/transaction-store.js';
import type { TransactionRecord } from '../../lib/transactions/record.js';
import type { TransactionStatus } from '../../lib/transactions/status.js';
import { createTestTable, type TestTable } from '../support/dynamo.js';
import { fullPages, pages } from '../support/listing-pages.js';
import { writableStores, type WritableStores } from '../support/store-writes.js';
import { manualClock, plannedInput, preparedInput } from '../support/transaction-fixtures.js';

type Store = WritableStores['transactions'];

const clock = manualClock('2034-01-01T00:00:00.000Z');
let t: TestTable;
beforeAll(async () => {
  t = await createTestTable({ now: clock.now, prefix: 'txepisodes' });
});
afterAll(async () => t?.destroy());

const raw = async (tenant: string, tx: string) =>
  (await t.client.send(new GetCommand({ TableName: t.tableName, Key: keys.transaction(tenant, tx), ConsistentRead: true }))).Item as Record<string, unknown>;

const ref = (r: Pick<TransactionRecord, 'tenant_id' | 'transaction_id'>) => ({ tenant_id: r.tenant_id, transaction_id: r.transaction_id });

let seq = 0;
const id = (prefix: string) => `${prefix}-${++seq}`;

async function plan(store: Store, tenant: string): Promise<TransactionRecord> {
  const tx = id('plan');
  return store.create(plannedInput(tx, { tenant_id: tenant, identity: { tenant_id: tenant } }));
}
async function claim(store: Store, r: TransactionRecord): Promise<TransactionRecord> {
  return store.claimPlan({ ...ref(r), expected_revision: r.revision, plan_id: r.plan_id as string, commit_action_id: `commit-${r.transaction_id}` });
}
async function prepared(store: Store, tenant: string): Promise<TransactionRecord> {
  return store.create(preparedInput(id('exec'), { tenant_id: tenant, identity: { tenant_id: tenant } }));
}
async function directCommit(store: Store, tenant: string): Promise<TransactionRecord> {
  return store.claimDirectCommit({ ...preparedInput(id('direct'), { tenant_id: tenant, identity: { tenant_id: tenant } }), mode: 'commit' });
}
/** Settles `r` outcome_unknown, due `inMs` from now. */
async function unknown(store: Store, r: TransactionRecord, inMs = 5_000): Promise<TransactionRecord> {
  return store.settle({
    ...ref(r),
    expected_revision: r.revision,
    to: 'outcome_unknown',
    next_reconcile_at: new Date(clock.now().getTime() + inMs).toISOString(),
  });
}
async function begin(store: Store | TransactionStore, r: TransactionRecord): Promise<TransactionRecord> {
  return (store as Store).transition({
    ...ref(r),
    expected_revision: r.revision,
    operation: 'begin_reconcile',
    from: ['outcome_unknown'],
    to: 'reconciling',
    data: { reconcile_action_id: `rcn-${r.transaction_id}` },
  });
}

/** Every transaction item of `t`'s table (a Scan: the listings' oracle). */
async function scanRecords(t: TestTable): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await t.client.send(
      new ScanCommand({
        TableName: t.tableName,
        ConsistentRead: true,
        FilterExpression: 'SK = :txn',
        ExpressionAttributeValues: { ':txn': 'TXN' },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    out.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return out;
}
const txOf = (item: Record<string, unknown>) => String(item.PK).split('#')[2] as string;
const tenantOfItem = (item: Record<string, unknown>) => String(item.PK).split('#')[1] as string;

describe('the index entry on the paths that move on within an episode', () => {
  it('a claim keeps the planned entry and stores its entry time; the settlement removes both', async () => {
    const p = await plan(t.store, 'tenant-e1');
    const before = await raw('tenant-e1', p.transaction_id);
    expect(before.GSI3PK).toBe(keys.statusIndex('planned', false, keys.statusIndexShard('tenant-e1', p.transaction_id)));
    clock.advance(1_000);
    const c = await claim(t.store, p);
    expect(c.status).toBe('committing');
    expect(c).not.toHaveProperty(STATUS_ENTERED_ATTRIBUTE);
    const claimed = await raw('tenant-e1', p.transaction_id);
    expect({ pk: claimed.GSI3PK, sk: claimed.GSI3SK }).toEqual({ pk: before.GSI3PK, sk: before.GSI3SK });
    expect(claimed[STATUS_ENTERED_ATTRIBUTE]).toBe(clock.iso());
    const done = await t.store.settle({ ...ref(c), expected_revision: c.revision, to: 'committed' });
    expect(done.status).toBe('committed');
    const settled = await raw('tenant-e1', p.transaction_id);
    for (const a of ['GSI3PK', 'GSI3SK', STATUS_ENTERED_ATTRIBUTE]) expect(settled).not.toHaveProperty(a);
  });

  it('a claimed plan that settles outcome_unknown moves to its own entry, without the entry time', async () => {
    const c = await claim(t.store, await plan(t.store, 'tenant-e1'));
    const u = await unknown(t.store, c, 7_000);
    const item = await raw('tenant-e1', c.transaction_id);
    expect(item.GSI3PK).toBe(keys.statusIndex('outcome_unknown', false, keys.statusIndexShard('tenant-e1', c.transaction_id)));
    expect(item.GSI3SK).toBe(keys.statusIndexSort(u.next_reconcile_at as string, 'tenant-e1', c.transaction_id));
    expect(item).not.toHaveProperty(STATUS_ENTERED_ATTRIBUTE);
  });

  it('a due reconciliation keeps the outcome_unknown entry; its still-unknown settlement moves the sort time; reconciled removes it', async () => {
    const u = await unknown(t.store, await prepared(t.store, 'tenant-e1'), 5_000);
    const entry = await raw('tenant-e1', u.transaction_id);
    clock.advance(5_000);
    const r = await begin(t.store, u);
    const kept = await raw('tenant-e1', u.transaction_id);
    expect({ pk: kept.GSI3PK, sk: kept.GSI3SK }).toEqual({ pk: entry.GSI3PK, sk: entry.GSI3SK });
    expect(kept[STATUS_ENTERED_ATTRIBUTE]).toBe(clock.iso());
    expect(r).toMatchObject({ status: 'reconciling', reconcile_attempts: 1 });
    expect(r.next_reconcile_at).toBeUndefined();

    const again = await unknown(t.store, r, 9_000);
    const moved = await raw('tenant-e1', u.transaction_id);
    expect(moved.GSI3PK).toBe(entry.GSI3PK);
    expect(moved.GSI3SK).toBe(keys.statusIndexSort(again.next_reconcile_at as string, 'tenant-e1', u.transaction_id));
    expect(moved).not.toHaveProperty(STATUS_ENTERED_ATTRIBUTE);

    clock.advance(9_000);
    const r2 = await begin(t.store, again);
    await t.store.settle({ ...ref(r2), expected_revision: r2.revision, to: 'reconciled', result: { action_id: 'rcn', status: 'completed' } });
    const settled = await raw('tenant-e1', u.transaction_id);
    for (const a of ['GSI3PK', 'GSI3SK', STATUS_ENTERED_ATTRIBUTE]) expect(settled).not.toHaveProperty(a);
  });

  it('a reconciliation begun before it is due, of an escalated record, or without a known pre-image moves the entry to reconciling', async () => {
    const own = (tx: string) => keys.statusIndex('reconciling', false, keys.statusIndexShard('tenant-e1', tx));
    // Early: next_reconcile_at is after the begin.
    const early = await begin(t.store, await unknown(t.store, await prepared(t.store, 'tenant-e1'), 60_000));
    expect((await raw('tenant-e1', early.transaction_id)).GSI3PK).toBe(own(early.transaction_id));
    expect((await raw('tenant-e1', early.transaction_id)).GSI3SK).toBe(keys.statusIndexSort(clock.iso(), 'tenant-e1', early.transaction_id));
    expect(await raw('tenant-e1', early.transaction_id)).not.toHaveProperty(STATUS_ENTERED_ATTRIBUTE);
    // Escalated: its entry is the escalated partition's.
    const u = await unknown(t.store, await prepared(t.store, 'tenant-e1'), 0);
    const escalated = await t.store.transition({
      ...ref(u),
      expected_revision: u.revision,
      operation: 'escalate',
      from: ['outcome_unknown'],
      to: 'outcome_unknown',
    });
    await begin(t.store, escalated);
    expect((await raw('tenant-e1', u.transaction_id)).GSI3PK).toBe(own(u.transaction_id));
    // No pre-image: a store that keeps no images, and a transition that names no held record.
    const blind = writableStores(
      createDynamoStores({ client: t.client, tableName: t.tableName, now: clock.now, transactions: { knownImages: 0 } }),
    ).transactions;
    const due = await unknown(t.store, await prepared(t.store, 'tenant-e1'), 0);
    await begin(blind, due);
    expect((await raw('tenant-e1', due.transaction_id)).GSI3PK).toBe(own(due.transaction_id));
  });
});

describe('listing by status over kept and own entries', () => {
  const A = 'tenant-la';
  const B = 'tenant-lb';
  /** The record IDs per status (and `escalated`), per tenant. */
  const expected = new Map<string, { tenant: string; tx: string }[]>();
  const add = (status: string, r: TransactionRecord) => {
    const list = expected.get(status) ?? [];
    list.push({ tenant: r.tenant_id, tx: r.transaction_id });
    expected.set(status, list);
  };
  let other: TestTable;

  beforeAll(async () => {
    // A table of its own: the listings must see these records only.
    other = await createTestTable({ now: clock.now, prefix: 'txepisodes-list' });
    const s = other.store;
    for (const tenant of [A, B]) {
      for (let i = 0; i < 3; i++) {
        clock.advance(1_000);
        add('planned', await plan(s, tenant));
      }
      for (let i = 0; i < 3; i++) {
        const p = await plan(s, tenant);
        clock.advance(1_000);
        add('committing', await claim(s, p));
      }
      for (let i = 0; i < 2; i++) add('committing', await directCommit(s, tenant));
      for (let i = 0; i < 2; i++) add('prepared', await prepared(s, tenant));
      for (let i = 0; i < 3; i++) add('outcome_unknown', await unknown(s, await prepared(s, tenant), 1_000 * (i + 1)));
      for (let i = 0; i < 3; i++) {
        const u = await unknown(s, await prepared(s, tenant), 500);
        clock.advance(1_000);
        add('reconciling', await begin(s, u)); // due: keeps its outcome_unknown entry
      }
      add('reconciling', await begin(s, await unknown(s, await prepared(s, tenant), 600_000))); // early: its own entry
      const e = await unknown(s, await prepared(s, tenant), 0);
      add(
        'escalated',
        await s.transition({ ...ref(e), expected_revision: e.revision, operation: 'escalate', from: ['outcome_unknown'], to: 'outcome_unknown' }),
      );
      const done = await prepared(s, tenant);
      await s.settle({ ...ref(done), expected_revision: done.revision, to: 'committed' });
    }
  });
  afterAll(async () => other?.destroy());

  /** The expected IDs of `status` for `tenants`, in index order (the raw items' sort keys). */
  async function inIndexOrder(status: string, tenants: readonly string[]): Promise<string[]> {
    const rows = (expected.get(status) ?? []).filter((r) => tenants.includes(r.tenant));
    const sks = await Promise.all(
      rows.map(
        async (r) =>
          [
            r.tx,
            String(
              (await other.client.send(new GetCommand({ TableName: other.tableName, Key: keys.transaction(r.tenant, r.tx), ConsistentRead: true }))).Item
                ?.GSI3SK,
            ),
          ] as const,
      ),
    );
    return sks.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map((x) => x[0]);
  }

  const statuses: { status: TransactionStatus; escalated?: boolean; name: string }[] = [
    { status: 'planned', name: 'planned' },
    { status: 'committing', name: 'committing' },
    { status: 'prepared', name: 'prepared' },
    { status: 'outcome_unknown', name: 'outcome_unknown' },
    { status: 'reconciling', name: 'reconciling' },
    { status: 'outcome_unknown', escalated: true, name: 'escalated' },
  ];

  it('every status: exactly its records, in index order, in full pages, for every tenant and for a scope', async () => {
    for (const { status, escalated, name } of statuses) {
      for (const scope of [undefined, [A], [A, B]]) {
        const want = await inIndexOrder(name, scope ?? [A, B]);
        for (const limit of [1, 3, 100]) {
          const out = await pages(other.store, { status, ...(escalated ? { escalated } : {}), limit, ...(scope ? { tenants: scope } : {}) });
          const label = `${name} scope=${scope?.join(',') ?? 'all'} limit=${limit}`;
          expect(out.ids, label).toEqual(want);
          expect(out.sizes, label).toEqual(fullPages(want.length, limit));
        }
      }
    }
  });

  it('committing and reconciling bounded in time: a kept entry counts from the record’s own entry into its status', async () => {
    const s = other.store;
    const tenant = 'tenant-lt';
    // A plan created before the bound and claimed after it; another claimed before it.
    const lateClaim = await plan(s, tenant);
    const earlyClaim = await claim(s, await plan(s, tenant));
    // A reconciliation due before the bound and begun after it; another begun before it.
    const lateBegin = await unknown(s, await prepared(s, tenant), 0);
    const earlyBegin = await begin(s, await unknown(s, await prepared(s, tenant), 0));
    const until = clock.iso();
    clock.advance(1_000);
    await claim(s, lateClaim);
    await begin(s, lateBegin);
    const scope = { tenants: [tenant], limit: 10 };
    expect((await pages(s, { status: 'committing', until, ...scope })).ids).toEqual([earlyClaim.transaction_id]);
    expect((await pages(s, { status: 'committing', ...scope })).ids.sort()).toEqual([lateClaim.transaction_id, earlyClaim.transaction_id].sort());
    expect((await pages(s, { status: 'reconciling', until, ...scope })).ids).toEqual([earlyBegin.transaction_id]);
    expect((await pages(s, { status: 'reconciling', ...scope })).ids.sort()).toEqual([lateBegin.transaction_id, earlyBegin.transaction_id].sort());
    // The unscoped listing (the sweeper's) applies the same bound.
    expect((await pages(s, { status: 'committing', until, limit: 2 })).ids).toContain(earlyClaim.transaction_id);
    expect((await pages(s, { status: 'committing', until, limit: 2 })).ids).not.toContain(lateClaim.transaction_id);
    expect((await pages(s, { status: 'reconciling', until, limit: 2 })).ids).not.toContain(lateBegin.transaction_id);
  });
});

describe('entries written before (exact-status keys, sharded and unsharded)', () => {
  /** Rewrites a record's entry as the version before wrote it: its own status's key at `time`, no entry time. */
  async function asBefore(r: TransactionRecord, time: string, legacy: boolean): Promise<void> {
    const pk = legacy ? keys.statusIndexLegacy(r.status) : keys.statusIndex(r.status, false, keys.statusIndexShard(r.tenant_id, r.transaction_id));
    await t.client.send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: keys.transaction(r.tenant_id, r.transaction_id),
        UpdateExpression: 'SET GSI3PK = :pk, GSI3SK = :sk REMOVE #entered',
        ExpressionAttributeNames: { '#entered': STATUS_ENTERED_ATTRIBUTE },
        ExpressionAttributeValues: { ':pk': pk, ':sk': keys.statusIndexSort(time, r.tenant_id, r.transaction_id) },
      }),
    );
  }

  it('are listed by their status, bounded by their key time, and moved or removed by the next write', async () => {
    const tenant = 'tenant-old';
    const scope = { tenants: [tenant], limit: 1 };
    const c1 = await claim(t.store, await plan(t.store, tenant));
    await asBefore(c1, clock.iso(), false);
    const c2 = await claim(t.store, await plan(t.store, tenant));
    await asBefore(c2, clock.iso(), true);
    const r1 = await begin(t.store, await unknown(t.store, await prepared(t.store, tenant), 0));
    await asBefore(r1, clock.iso(), false);
    const r2 = await begin(t.store, await unknown(t.store, await prepared(t.store, tenant), 0));
    await asBefore(r2, clock.iso(), true);
    // A plan under the legacy unsharded planned key, claimed now: it keeps that entry.
    const p3 = await plan(t.store, tenant);
    await t.client.send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: keys.transaction(tenant, p3.transaction_id),
        UpdateExpression: 'SET GSI3PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.statusIndexLegacy('planned') },
      }),
    );
    const before = clock.iso();
    clock.advance(1_000);
    const c3 = await claim(t.store, p3);
    expect((await raw(tenant, c3.transaction_id)).GSI3PK).toBe('STATUS#planned');

    const sorted = (ids: string[]) => [...ids].sort();
    expect(sorted((await pages(t.store, { status: 'committing', ...scope })).ids)).toEqual(sorted([c1, c2, c3].map((r) => r.transaction_id)));
    expect(sorted((await pages(t.store, { status: 'committing', until: before, ...scope })).ids)).toEqual(sorted([c1, c2].map((r) => r.transaction_id)));
    expect(sorted((await pages(t.store, { status: 'reconciling', ...scope })).ids)).toEqual(sorted([r1, r2].map((r) => r.transaction_id)));
    expect((await pages(t.store, { status: 'planned', ...scope })).ids).toEqual([]);
    expect((await pages(t.store, { status: 'outcome_unknown', ...scope })).ids).toEqual([]);

    // The next write moves them to the record's own sharded entry, or removes them.
    const back = await unknown(t.store, r2, 1_000);
    const item = await raw(tenant, r2.transaction_id);
    expect(item.GSI3PK).toBe(keys.statusIndex('outcome_unknown', false, keys.statusIndexShard(tenant, r2.transaction_id)));
    expect(item.GSI3SK).toBe(keys.statusIndexSort(back.next_reconcile_at as string, tenant, r2.transaction_id));
    for (const c of [c1, c2, c3]) {
      await t.store.settle({ ...ref(c), expected_revision: c.revision, to: 'committed' });
      expect(await raw(tenant, c.transaction_id)).not.toHaveProperty('GSI3PK');
    }
    await t.store.settle({ ...ref(r1), expected_revision: r1.revision, to: 'reconciled', result: { action_id: 'rcn', status: 'completed' } });
    expect(await raw(tenant, r1.transaction_id)).not.toHaveProperty('GSI3PK');
    expect((await pages(t.store, { status: 'committing', ...scope })).ids).toEqual([]);
    expect((await pages(t.store, { status: 'reconciling', ...scope })).ids).toEqual([]);
    expect((await pages(t.store, { status: 'outcome_unknown', ...scope })).ids).toEqual([r2.transaction_id]);
  });
});

describe('property: every listing equals a scan filtered by status', () => {
  const OPS = ['plan', 'prepare', 'direct', 'claim', 'unknown', 'begin', 'begin_blind', 'escalate', 'request', 'settle', 'advance'] as const;
  type Op = (typeof OPS)[number];
  const LISTINGS: { status: TransactionStatus; escalated?: boolean }[] = [
    { status: 'planned' },
    { status: 'prepared' },
    { status: 'committing' },
    { status: 'outcome_unknown' },
    { status: 'reconciling' },
    { status: 'outcome_unknown', escalated: true },
  ];

  it('after random transitions of several records, for every status, scope, page size and time bound', async () => {
    /** When each record entered its current status (the oracle of a time bound), by transaction ID. */
    const entered = new Map<string, string>();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ rec: fc.nat(3), op: fc.constantFrom(...OPS), ms: fc.integer({ min: 0, max: 20_000 }) }), { minLength: 4, maxLength: 24 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 30_000 }),
        async (steps, limit, back) => {
          // A table per run: the listings of every tenant hold this run's records only (one of them another tenant's).
          const t = await createTestTable({ now: clock.now, prefix: 'txepisodes-prop' });
          try {
            await oneRun(t, steps, limit, back);
          } finally {
            await t.destroy();
          }
        },
      ),
      { numRuns: 15 },
    );

    async function oneRun(t: TestTable, steps: readonly { rec: number; op: Op; ms: number }[], limit: number, back: number): Promise<void> {
      const blind = writableStores(
        createDynamoStores({ client: t.client, tableName: t.tableName, now: clock.now, transactions: { knownImages: 0 } }),
      ).transactions;
      const tenant = `tenant-prop-${++run}`;
      const records: (TransactionRecord | undefined)[] = [undefined, undefined, undefined, undefined];
      const set = (i: number, r: TransactionRecord) => {
        records[i] = r;
        entered.set(r.transaction_id, clock.iso());
      };
      for (const { rec, op, ms } of steps) {
        const r = records[rec];
        const o: Op = op;
        // Record 3 is another tenant's.
        const owner = rec === 3 ? `${tenant}-other` : tenant;
        if (o === 'advance') clock.advance(ms);
        else if (r === undefined) {
          if (o === 'plan') set(rec, await plan(t.store, owner));
          else if (o === 'prepare') set(rec, await prepared(t.store, owner));
          else if (o === 'direct') set(rec, await directCommit(t.store, owner));
        } else if (o === 'claim' && r.status === 'planned') set(rec, await claim(t.store, r));
        else if (o === 'unknown' && ['prepared', 'committing', 'reconciling'].includes(r.status)) set(rec, await unknown(t.store, r, ms));
        else if ((o === 'begin' || o === 'begin_blind') && r.status === 'outcome_unknown') set(rec, await begin(o === 'begin' ? t.store : blind, r));
        else if (o === 'escalate' && r.status === 'outcome_unknown' && r.escalated_at === undefined) {
          set(
            rec,
            await t.store.transition({ ...ref(r), expected_revision: r.revision, operation: 'escalate', from: ['outcome_unknown'], to: 'outcome_unknown' }),
          );
        } else if (o === 'request' && r.status === 'outcome_unknown') {
          set(
            rec,
            await t.store.transition({
              ...ref(r),
              expected_revision: r.revision,
              operation: 'request_reconcile',
              from: ['outcome_unknown'],
              to: 'outcome_unknown',
            }),
          );
        } else if (o === 'settle' && ['prepared', 'committing'].includes(r.status)) {
          set(rec, await t.store.settle({ ...ref(r), expected_revision: r.revision, to: 'committed' }));
        } else if (o === 'settle' && r.status === 'reconciling') {
          set(rec, await t.store.settle({ ...ref(r), expected_revision: r.revision, to: 'reconciled', result: { action_id: 'rcn', status: 'completed' } }));
        }
      }
      const until = new Date(clock.now().getTime() - back).toISOString();
      const items = await scanRecords(t);
      for (const listing of LISTINGS) {
        const escalated = listing.escalated === true;
        const of = (scope: readonly string[] | undefined, bound: string | undefined) =>
          items
            .filter((i) => i.status === listing.status && (i.escalated_at !== undefined) === escalated)
            .filter((i) => scope === undefined || scope.includes(tenantOfItem(i)))
            .filter((i) => {
              if (bound === undefined) return true;
              if (listing.status === 'outcome_unknown' && !escalated) return String(i.next_reconcile_at) <= bound;
              if (escalated) return String(i.escalated_at) <= bound;
              return (entered.get(txOf(i)) as string) <= bound;
            })
            .map(txOf)
            .sort();
        for (const scope of [undefined, [tenant]]) {
          for (const bound of [undefined, until]) {
            const out = await pages(t.store, { ...listing, limit, ...(scope ? { tenants: scope } : {}), ...(bound ? { until: bound } : {}) });
            const want = of(scope, bound);
            expect([...out.ids].sort(), `${listing.status}${escalated ? ' escalated' : ''} ${scope ? 'scoped' : 'all'} ${bound ?? ''}`).toEqual(want);
            expect(out.sizes).toEqual(fullPages(want.length, limit));
          }
        }
      }
    }
  });
});
