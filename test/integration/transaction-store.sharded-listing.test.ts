/**
 * The merged listing of the write-sharded status index (lib/aws/dynamo/pagination.ts
 * `queryMergedPartitions`) against DynamoDB Local, with the shards chosen on
 * purpose: one shard holding more records than a page reads from it, others
 * with one or two, and the legacy unsharded partition. Every page continues
 * exactly where the last one stopped, in index order, with and without a time
 * bound, whatever the page size.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../lib/aws/dynamo/table-design.js';
import type { ListByStatusQuery } from '../../lib/ports/transaction-store.js';
import { createTestTable, type TestTable } from '../support/dynamo.js';
import { TENANT, manualClock, preparedInput } from '../support/transaction-fixtures.js';

const clock = manualClock('2032-01-01T00:00:00.000Z');
const T0 = Date.parse('2032-01-01T00:00:00.000Z');
let t: TestTable;
beforeAll(async () => {
  t = await createTestTable({ now: clock.now, prefix: 'txshards' });
});
afterAll(async () => t?.destroy());

/** Transaction IDs of `tenant` whose shard is `shard`. */
function idsOnShard(tenant: string, shard: number, n: number, prefix: string): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (keys.statusIndexShard(tenant, `${prefix}-${i}`) === shard) out.push(`${prefix}-${i}`);
  return out;
}

/** Every page of a listing, with the number of pages. */
async function pages(query: Omit<ListByStatusQuery, 'cursor'>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let n = 1; n <= 100; n++) {
    const page = await t.store.listByStatus({ ...query, ...(cursor ? { cursor } : {}) });
    ids.push(...page.items.map((r) => r.transaction_id));
    cursor = page.cursor;
    if (cursor === undefined) return { ids, pages: n };
  }
  throw new Error('more than 100 pages');
}

describe('listByStatus over the shards', () => {
  /** [tenant, transaction ID, minutes after T0 of its reconciliation], in index order once sorted. */
  const records: [string, string, number][] = [];

  beforeAll(async () => {
    // Shard 5: seven records interleaved in time with the others; shard 9: two; shard 20 (another tenant): one.
    const crowded = idsOnShard(TENANT, 5, 7, 'c');
    const pair = idsOnShard(TENANT, 9, 2, 'p');
    const other = idsOnShard('tenant-z', 20, 1, 'o');
    for (const [i, id] of crowded.entries()) records.push([TENANT, id, 2 * i + 1]);
    for (const [i, id] of pair.entries()) records.push([TENANT, id, 4 * i + 2]);
    records.push(['tenant-z', other[0] as string, 6]);
    records.push([TENANT, 'legacy-1', 8]);
    for (const [tenant, id, minutes] of records) {
      const r = await t.store.claimDirectCommit({ ...preparedInput(id), tenant_id: tenant, mode: 'commit' });
      await t.store.settle({
        tenant_id: tenant,
        transaction_id: r.transaction_id,
        expected_revision: r.revision,
        to: 'outcome_unknown',
        next_reconcile_at: new Date(T0 + minutes * 60_000).toISOString(),
      });
    }
    // As an earlier version wrote it: the unsharded partition.
    await t.client.send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: keys.transaction(TENANT, 'legacy-1'),
        UpdateExpression: 'SET GSI3PK = :legacy',
        ExpressionAttributeValues: { ':legacy': keys.statusIndexLegacy('outcome_unknown') },
      }),
    );
    records.sort((a, b) => a[2] - b[2]);
  });

  it('pages of every size return every record once, in index order, across shards and the legacy partition', async () => {
    const expected = records.map((r) => r[1]);
    for (const limit of [1, 2, 3, 5, 100]) {
      const out = await pages({ status: 'outcome_unknown', limit });
      expect(out.ids, `limit ${limit}`).toEqual(expected);
      expect(out.pages).toBeLessThanOrEqual(Math.ceil(expected.length / limit) + 1);
    }
  });

  it('a time bound with a cursor (the sweeper) stops at the bound on every shard', async () => {
    const until = new Date(T0 + 7 * 60_000).toISOString();
    const expected = records.filter((r) => r[2] <= 7).map((r) => r[1]);
    for (const limit of [1, 2, 4]) expect((await pages({ status: 'outcome_unknown', until, limit })).ids, `limit ${limit}`).toEqual(expected);
    // A bound at a record's own time includes it.
    const exactly = new Date(T0 + 3 * 60_000).toISOString();
    expect((await pages({ status: 'outcome_unknown', until: exactly, limit: 1 })).ids).toEqual(records.filter((r) => r[2] <= 3).map((r) => r[1]));
  });

  it('the tenant filter keeps the order and drops the other tenant', async () => {
    const out = await pages({ status: 'outcome_unknown', tenants: ['tenant-z'], limit: 2 });
    expect(out.ids).toEqual(records.filter((r) => r[0] === 'tenant-z').map((r) => r[1]));
    const mine = await pages({ status: 'outcome_unknown', tenants: [TENANT], limit: 3 });
    expect(mine.ids).toEqual(records.filter((r) => r[0] === TENANT).map((r) => r[1]));
  });

  it("a cursor must name this listing's partition and a full key", async () => {
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const sk = `2032-01-01T00:01:00.000Z#${TENANT}#x`;
    for (const cursor of [
      b64({ GSI3PK: 'STATUS#committing', GSI3SK: sk, PK: 'TXN#a#x', SK: 'TXN' }),
      b64({ GSI3PK: 'STATUS#outcome_unknown#05', GSI3SK: sk, PK: 'TXN#a#x', SK: 'TXN' }),
      b64({ GSI3PK: 'STATUS#outcome_unknown', GSI3SK: '', PK: 'TXN#a#x', SK: 'TXN' }),
      b64({ GSI3PK: 'STATUS#outcome_unknown', GSI3SK: sk }),
    ]) {
      await expect(t.store.listByStatus({ status: 'outcome_unknown', limit: 1, cursor })).rejects.toMatchObject({ code: 'transaction.invalid_listing' });
    }
  });
});
