/**
 * A status listing scoped to some tenants (an operator's listing,
 * lib/aws/dynamo/status-listing.ts) against DynamoDB Local: the store reads on
 * past other tenants' entries of the shared, write-sharded byStatus index, so
 * every page but the last holds `limit` records of the scope, the last is
 * never empty, and the number of pages follows the scope's own records
 * however many records other tenants have around them. Entries whose record
 * moved on (index lag) are passed over the same way. The sweeper's listing
 * (no scope) is unchanged: test/integration/transaction-store.sharded-listing.test.ts.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoTransactionStore } from '../../lib/aws/dynamo/transaction-store.js';
import { keys } from '../../lib/aws/dynamo/table-design.js';
import { createTestTable, type TestTable } from '../support/dynamo.js';
import { fullPages, pages } from '../support/listing-pages.js';
import { manualClock, preparedInput } from '../support/transaction-fixtures.js';

const clock = manualClock('2033-01-01T00:00:00.000Z');
const T0 = Date.parse('2033-01-01T00:00:00.000Z');
const A = 'tenant-fill-a';
const B = 'tenant-fill-b';
const C = 'tenant-fill-c';
let t: TestTable;
/** A's records in index order. */
const mine: string[] = [];

/** An outcome_unknown record of `tenant` whose reconciliation is due `seconds` after T0 (its index time). */
async function unknownAt(tenant: string, id: string, seconds: number): Promise<void> {
  const r = await t.store.claimDirectCommit({ ...preparedInput(id), tenant_id: tenant, identity: { tenant_id: tenant }, mode: 'commit' });
  await t.store.settle({
    tenant_id: tenant,
    transaction_id: r.transaction_id,
    expected_revision: r.revision,
    to: 'outcome_unknown',
    next_reconcile_at: new Date(T0 + seconds * 1000).toISOString(),
  });
}

beforeAll(async () => {
  t = await createTestTable({ now: clock.now, prefix: 'txscoped' });
  // A: seven records, one every 100 s from 100 s.
  for (let i = 1; i <= 7; i++) {
    await unknownAt(A, `a-${i}`, i * 100);
    mine.push(`a-${i}`);
  }
});
afterAll(async () => t?.destroy());

describe('a listing scoped to a tenant', () => {
  it("fills every page with the tenant's records: the pages and their number do not depend on another tenant's records", async () => {
    const limits = [1, 2, 3, 7, 10];
    const seen: Record<number, { ids: string[]; sizes: number[] }[]> = {};
    // B's records grow from none to 3 to 75, before, between and after A's (and many between two of A's).
    const plan: [number, number][] = [
      [3, 0],
      [75, 3],
    ];
    const rounds = [0, ...plan.map((p) => p[0])];
    for (const [round, total] of rounds.entries()) {
      if (round > 0) {
        const from = (plan[round - 1] as [number, number])[1];
        for (let j = from; j < total; j++) await unknownAt(B, `b-${j}`, j < 40 ? 150 + j : (j % 9) * 100 + 50);
      }
      for (const limit of limits) {
        const out = await pages(t.store, { status: 'outcome_unknown', tenants: [A], limit });
        expect(out.ids, `B has ${total}, limit ${limit}`).toEqual(mine);
        expect(out.sizes, `B has ${total}, limit ${limit}`).toEqual(fullPages(mine.length, limit));
        (seen[limit] ??= []).push(out);
      }
    }
    for (const limit of limits) for (const out of seen[limit] ?? []) expect(out).toEqual(seen[limit]?.[0]);

    // B's own listing, and a scope of both tenants, fill their pages the same way.
    const b = await pages(t.store, { status: 'outcome_unknown', tenants: [B], limit: 4 });
    expect(b.ids).toHaveLength(75);
    expect(b.sizes).toEqual(fullPages(75, 4));
    const both = await pages(t.store, { status: 'outcome_unknown', tenants: [A, B], limit: 10 });
    expect(both.sizes).toEqual(fullPages(82, 10));
    expect(both.ids.filter((id) => id.startsWith('a-'))).toEqual(mine);
    // A tenant with no record there: one empty page, no cursor.
    expect(await pages(t.store, { status: 'outcome_unknown', tenants: [C], limit: 5 })).toEqual({ ids: [], sizes: [0] });
    expect(await t.store.listByStatus({ status: 'outcome_unknown', tenants: [] })).toEqual({ items: [] });
    // Unscoped (the sweeper): every tenant's records, in index order.
    expect((await pages(t.store, { status: 'outcome_unknown', limit: 25 })).ids).toHaveLength(82);
  });

  it('a cursor is one position: the scoped listing continues after the last record it returned', async () => {
    const first = await t.store.listByStatus({ status: 'outcome_unknown', tenants: [A], limit: 3 });
    expect(first.items.map((r) => r.transaction_id)).toEqual(mine.slice(0, 3));
    const position = JSON.parse(Buffer.from(first.cursor as string, 'base64url').toString('utf8')) as Record<string, string>;
    expect(position).toEqual({
      PK: keys.transaction(A, 'a-3').PK,
      SK: 'TXN',
      GSI3PK: keys.statusIndexLegacy('outcome_unknown'),
      GSI3SK: keys.statusIndexSort(new Date(T0 + 300_000).toISOString(), A, 'a-3'),
    });
    // A cursor of another listing is refused as before.
    await expect(t.store.listByStatus({ status: 'reconciling', tenants: [A], limit: 3, cursor: first.cursor as string })).rejects.toMatchObject({
      code: 'transaction.invalid_listing',
    });
  });

  it('entries whose record moved on (index lag) are passed over and the page is still filled', async () => {
    // Two of A's records settle, but their index entries are put back as a lagging index would still show them.
    for (const id of ['a-2', 'a-5']) {
      const r = await t.store.get({ tenant_id: A, transaction_id: id });
      await t.store.transition({
        tenant_id: A,
        transaction_id: id,
        expected_revision: r?.revision as number,
        operation: 'begin_reconcile',
        from: ['outcome_unknown'],
        to: 'reconciling',
      });
      await t.client.send(
        new UpdateCommand({
          TableName: t.tableName,
          Key: keys.transaction(A, id),
          UpdateExpression: 'SET GSI3PK = :pk, GSI3SK = :sk',
          ExpressionAttributeValues: {
            ':pk': keys.statusIndex('outcome_unknown', false, keys.statusIndexShard(A, id)),
            ':sk': keys.statusIndexSort(new Date(T0 + Number(id.slice(2)) * 100_000).toISOString(), A, id),
          },
        }),
      );
    }
    const current = mine.filter((id) => id !== 'a-2' && id !== 'a-5');
    for (const limit of [1, 2, 4]) {
      const out = await pages(t.store, { status: 'outcome_unknown', tenants: [A], limit });
      expect(out.ids, `limit ${limit}`).toEqual(current);
      expect(out.sizes, `limit ${limit}`).toEqual(fullPages(current.length, limit));
    }
  });

  it('bounded: past its scan budget a page comes back short with a cursor, and paging on still returns every record once, in order', async () => {
    const store = new DynamoTransactionStore({ client: t.client, tableName: t.tableName, now: clock.now, scopedListingScanBudget: 1 });
    const current = (await pages(t.store, { status: 'outcome_unknown', tenants: [A], limit: 1 })).ids;
    const out = await pages(store, { status: 'outcome_unknown', tenants: [A], limit: 1 });
    expect(out.ids).toEqual(current);
    // B's records between A's first two exceed what one round reads: at least one page before the last is short.
    expect(out.sizes.slice(0, -1).some((n) => n === 0)).toBe(true);
  });
});
