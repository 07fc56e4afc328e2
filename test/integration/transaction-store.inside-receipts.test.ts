/**
 * Receipts inside the record (docs/table-design.md, "Receipts inside the record", issue 21 change 21): a write that
 * appends a receipt stores it inside the record item (`receipt<seq>`) when the record stays within 2 write units,
 * otherwise as its own `RCPT#` item; every reader merges the two in seq order. Against DynamoDB Local, through the
 * store's unit of work.
 */
import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemSize } from '../../lib/aws/dynamo/packed-attributes.js';
import { createDynamoStores, type DynamoStores } from '../../lib/aws/dynamo/stores.js';
import { TTL_ATTRIBUTE, keys, receiptAttribute, receiptAttributeSeq } from '../../lib/aws/dynamo/table-design.js';
import type { TransactionRecord } from '../../lib/transactions/record.js';
import { createTestTable, type TestTable } from '../support/dynamo.js';
import { chainInPages, verifiedChain as verified } from '../support/receipt-chain.js';
import { readableItem } from '../support/packed-items.js';
import { TENANT, manualClock, nextReceipt, preparedInput, uid } from '../support/transaction-fixtures.js';
import type { JsonObject } from '../../packages/connector-sdk/src/protocol/index.js';

type Item = Record<string, unknown>;

const clock = manualClock();
let t: TestTable;
/** DynamoDB commands sent, by name (SDK middleware on the test client). */
const sent: string[] = [];
/** How many of the next UpdateItem requests fail as DynamoDB fails a write on an item in a transaction in flight. */
let conflicts = 0;

beforeAll(async () => {
  t = await createTestTable({ now: clock.now, prefix: 'inside' });
  t.raw.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(String(context.commandName).replace(/Command$/, ''));
      if (conflicts > 0 && context.commandName === 'UpdateItemCommand') {
        conflicts--;
        throw Object.assign(new Error('Transaction is ongoing for the item'), { name: 'TransactionConflictException' });
      }
      return next(args);
    },
    { step: 'initialize', name: 'insideTestCounter' },
  );
});
afterAll(async () => t?.destroy());

/** Another container's stores: no image of the items this one wrote (a step then names the record it read, `held`). */
const blind = (options: { verifyKnownImages?: boolean } = {}): DynamoStores =>
  createDynamoStores({ client: t.client, tableName: t.tableName, now: clock.now, transactions: { knownImages: 0, ...options } });

async function rawItem(key: { PK: string; SK: string }): Promise<Item | undefined> {
  return (await t.client.send(new GetCommand({ TableName: t.tableName, Key: key, ConsistentRead: true }))).Item;
}

/** The record's partition: its receipt items' seqs, the seqs inside the record item, and the record item as stored. */
async function layout(txn: string): Promise<{ items: number[]; inside: number[]; record: Item }> {
  const out = await t.client.send(
    new QueryCommand({
      TableName: t.tableName,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': keys.transaction(TENANT, txn).PK },
      ConsistentRead: true,
    }),
  );
  const all = out.Items ?? [];
  const record = all.find((i) => i.SK === 'TXN') as Item;
  return {
    items: all.filter((i) => String(i.SK).startsWith('RCPT#')).map((i) => Number(String(i.SK).slice('RCPT#'.length))),
    inside: Object.keys(record)
      .map((name) => receiptAttributeSeq(name))
      .filter((seq): seq is number => seq !== undefined)
      .sort((a, b) => a - b),
    record,
  };
}

/** Random text that does not compress: `bytes` bytes of it. */
const noise = (bytes: number) =>
  randomBytes(Math.ceil((bytes * 3) / 4))
    .toString('base64')
    .slice(0, bytes);

/** A committing record (a direct commit, created with its first receipt), optionally carrying `data` that makes it large. */
async function committing(data?: JsonObject): Promise<TransactionRecord> {
  const id = uid('txn');
  return t.store.claimDirectCommit({
    ...preparedInput(id, data !== undefined ? { data } : {}),
    mode: 'commit',
    lease: { owner: 'w', ttl_ms: 60_000 },
    receipt: nextReceipt({ transaction_id: id }, 1, 'committing', 'transaction.commit_claimed'),
  });
}

/** A checkpoint with its receipt, its evidence `evidence` (large evidence makes a large receipt), merging `data` into the record. */
async function checkpoint(r: TransactionRecord, evidence: JsonObject, data?: JsonObject): Promise<TransactionRecord> {
  return t.store.checkpointProviderOperation({
    tenant_id: TENANT,
    transaction_id: r.transaction_id,
    expected_revision: r.revision,
    provider_operation: { provider: 'p', operation_id: 'o' },
    ...(data !== undefined ? { data } : {}),
    receipt: { ...nextReceipt(r, r.revision + 1, 'committing', 'transaction.checkpointed'), evidence },
  });
}

/**
 * A chain item, inside, item, item, inside: seq 0 an item (the record created too large for its first receipt's
 * budget, within the 2 KB cap), seq 1 inside, seq 2 and 3 items (evidence too large to fit), seq 4 inside.
 */
async function mixedChain(): Promise<TransactionRecord> {
  let r = await committing({ note: noise(500) });
  r = await checkpoint(r, { n: 1 });
  r = await checkpoint(r, { n: 2, blob: noise(1200) });
  r = await checkpoint(r, { n: 3, blob: noise(1200) });
  r = await checkpoint(r, { n: 4 });
  const { items, inside } = await layout(r.transaction_id);
  expect({ items, inside }).toEqual({ items: [0, 2, 3], inside: [1, 4] });
  return r;
}

describe('Receipts inside the record', () => {
  it("a settled execute's chain is inside its record: the settlement is one conditional UpdateItem, the chain verifies", async () => {
    const id = uid('txn');
    const r0 = await t.store.create({ ...preparedInput(id), receipt: nextReceipt({ transaction_id: id }, 1, 'prepared', 'transaction.prepared') });
    sent.length = 0;
    const r1 = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: id,
      expected_revision: 1,
      to: 'committed',
      receipt: { ...nextReceipt(r0, 2, 'committed', 'transaction.committed'), evidence: { operation_id: 'op-1' } },
    });
    expect(sent).toEqual(['UpdateItem']);
    const { items, inside, record } = await layout(id);
    expect({ items, inside }).toEqual({ items: [], inside: [0, 1] });
    expect(record[receiptAttribute(1)]).toBeInstanceOf(Uint8Array);
    expect(readableItem(record)[receiptAttribute(1)]).toMatchObject({
      receipt: { status: 'committed', event: 'transaction.committed' },
      evidence: { operation_id: 'op-1' },
    });
    expect(itemSize(record)).toBeLessThanOrEqual(2048);
    const chain = await chainInPages(t.store, TENANT, id, 100);
    expect(chain.map((c) => [c.receipt.seq, c.receipt.status])).toEqual([
      [0, 'prepared'],
      [1, 'committed'],
    ]);
    expect(chain[1]?.evidence).toEqual({ operation_id: 'op-1' });
    expect(verified(r1, chain)).toMatchObject({ valid: true });
  });

  it("a settlement sent alone that meets another writer's transaction in flight is retried, then reported as a lost race", async () => {
    for (const [times, lands] of [
      [2, true],
      [100, false],
    ] as const) {
      const id = uid('txn');
      const r0 = await t.store.create({ ...preparedInput(id), receipt: nextReceipt({ transaction_id: id }, 1, 'prepared', 'transaction.prepared') });
      conflicts = times;
      const settle = t.store.settle({
        tenant_id: TENANT,
        transaction_id: id,
        expected_revision: 1,
        to: 'committed',
        receipt: nextReceipt(r0, 2, 'committed', 'transaction.committed'),
      });
      if (lands) expect(await settle).toMatchObject({ status: 'committed', revision: 2, receipt_count: 2 });
      else await expect(settle).rejects.toMatchObject({ code: 'transaction.state_conflict', details: { reason: 'transaction_conflict' } });
      conflicts = 0;
      expect((await layout(id)).inside).toEqual(lands ? [0, 1] : [0]);
    }
  });

  it('a write whose record would exceed 2 write units with its receipt writes the receipt as its own item, and reads alike', async () => {
    const r0 = await committing();
    sent.length = 0;
    const r1 = await checkpoint(r0, { blob: noise(1800) });
    expect(sent).toEqual(['TransactWriteItems']);
    const { items, inside, record } = await layout(r0.transaction_id);
    expect({ items, inside }).toEqual({ items: [1], inside: [0] });
    expect(itemSize(record)).toBeLessThanOrEqual(2048);
    const chain = await chainInPages(t.store, TENANT, r0.transaction_id, 100);
    expect(chain.map((c) => c.receipt.seq)).toEqual([0, 1]);
    expect(verified(r1, chain)).toMatchObject({ valid: true });
  });

  it('a mixed chain (item, inside, item, item, inside) pages correctly for every page size, with and without the record in the first page', async () => {
    const r = await mixedChain();
    const id = r.transaction_id;
    const whole = await chainInPages(t.store, TENANT, id, 100);
    expect(whole.map((c) => c.receipt.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(whole[2]?.evidence).toMatchObject({ n: 2 });
    expect(verified(r, whole)).toMatchObject({ valid: true });
    for (let limit = 1; limit <= 6; limit++) expect(await chainInPages(t.store, TENANT, id, limit), `limit ${limit}`).toEqual(whole);
    // A page whose items follow the cursor without a gap needs nothing of the record.
    sent.length = 0;
    const one = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id, limit: 1 });
    expect(one.items.map((i) => i.receipt.seq)).toEqual([0]);
    expect(sent).toEqual(['Query']);
    // A page that does not reach the record and has a gap reads the record once (one GetItem) for the receipts inside it.
    sent.length = 0;
    const first = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id, limit: 2 });
    expect(first.items.map((i) => i.receipt.seq)).toEqual([0, 1]);
    expect(sent).toEqual(['Query', 'GetItem']);
    sent.length = 0;
    const second = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id, limit: 2, cursor: first.cursor as string });
    expect(second.items.map((i) => i.receipt.seq)).toEqual([2, 3]);
    expect(sent).toEqual(['Query']); // the Query reached the record
    const rest = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id, limit: 5, cursor: second.cursor as string });
    expect(rest.items.map((i) => i.receipt.seq)).toEqual([4]);
    expect(rest.cursor).toBeUndefined();
  });

  it('a chain of items only (written before) pages without reading the record when the page has no gap', async () => {
    const r = await mixedChain();
    const id = r.transaction_id;
    const whole = await chainInPages(t.store, TENANT, id, 100);
    // Every receipt inside moved to its own item, as a version before wrote them.
    const record = (await rawItem(keys.transaction(TENANT, id))) as Item;
    for (const [name, held] of Object.entries(record)) {
      const seq = receiptAttributeSeq(name);
      if (seq === undefined) continue;
      await t.client.send(new PutCommand({ TableName: t.tableName, Item: { ...keys.receipt(TENANT, id, seq), ...(readableItem({ g: held }).g as Item) } }));
      delete record[name];
    }
    await t.client.send(new PutCommand({ TableName: t.tableName, Item: record }));
    sent.length = 0;
    const first = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id, limit: 2 });
    expect(first.items.map((i) => i.receipt.seq)).toEqual([0, 1]);
    expect(sent).toEqual(['Query']);
    for (let limit = 1; limit <= 6; limit++) expect(await chainInPages(t.store, TENANT, id, limit), `limit ${limit}`).toEqual(whole);
  });

  it('a held image (the worker path) decides inside on its estimate: one UpdateItem, and the chain verifies', async () => {
    const other = blind();
    const id = uid('txn');
    const r0 = await t.store.create({ ...preparedInput(id), receipt: nextReceipt({ transaction_id: id }, 1, 'prepared', 'transaction.prepared') });
    sent.length = 0;
    const out = await other.uow.commit([
      {
        kind: 'transaction.settle',
        input: {
          tenant_id: TENANT,
          transaction_id: id,
          expected_revision: 1,
          to: 'committed',
          receipt: { ...nextReceipt(r0, 2, 'committed', 'transaction.committed'), evidence: { operation_id: 'op-1' } },
        },
        held: r0,
      },
    ]);
    expect(out.committed).toBe(true);
    expect(sent).toEqual(['UpdateItem']);
    expect((await layout(id)).inside).toEqual([0, 1]);
    const record = (await t.store.get({ tenant_id: TENANT, transaction_id: id })) as TransactionRecord;
    expect(verified(record, await chainInPages(other.transactions, TENANT, id, 1))).toMatchObject({ valid: true });
  });

  it('a held image whose unseen receipts could fill the record decides an item: the estimate counts them', async () => {
    // A record of about 1.6 KB with two receipts inside, which the image of a record (held) cannot show: exactly, the
    // next receipt would fit; counted as an unseen first receipt's bound and an allowance, it does not.
    let r = await committing();
    r = await checkpoint(r, { n: 1 }, { note: noise(900) });
    const before = await layout(r.transaction_id);
    expect(before.inside).toEqual([0, 1]);
    expect(itemSize(before.record)).toBeLessThan(2048 - 300);
    const other = blind();
    const out = await other.uow.commit([
      {
        kind: 'transaction.checkpoint',
        input: {
          tenant_id: TENANT,
          transaction_id: r.transaction_id,
          expected_revision: r.revision,
          provider_operation: { provider: 'p', operation_id: 'o' },
          receipt: { ...nextReceipt(r, r.revision + 1, 'committing', 'transaction.checkpointed'), evidence: { n: 2 } },
        },
        held: r,
      },
    ]);
    expect(out.committed).toBe(true);
    const { items, inside, record } = await layout(r.transaction_id);
    expect({ items, inside }).toEqual({ items: [2], inside: [0, 1] });
    expect(itemSize(record)).toBeLessThanOrEqual(2048);
  });

  it('a late terminal write under a retention stamps only the receipt items and never refuses on a receipt inside (known image, and held)', async () => {
    const ttl = Math.floor(clock.now().getTime() / 1000) + 30 * 86_400;
    for (const known of [true, false]) {
      const r = await mixedChain();
      const id = r.transaction_id;
      const settle = {
        tenant_id: TENANT,
        transaction_id: id,
        expected_revision: r.revision,
        to: 'committed' as const,
        receipt: nextReceipt(r, r.revision + 1, 'committed', 'transaction.committed'),
        retention: { days: 30 },
      };
      const writer = known ? t.stores : blind();
      const out = await writer.uow.commit([{ kind: 'transaction.settle', input: settle, ...(known ? {} : { held: r }) }]);
      expect(out.committed).toBe(true);
      const { items, inside, record } = await layout(id);
      // The settlement's receipt: inside with the known image; with the held one, as its estimate decided.
      expect([...items, ...inside].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(items.slice(0, 3)).toEqual([0, 2, 3]);
      expect(record[TTL_ATTRIBUTE]).toBe(ttl);
      for (const seq of items) expect((await rawItem(keys.receipt(TENANT, id, seq)))?.[TTL_ATTRIBUTE], `seq ${seq}`).toBe(ttl);
      if (known) expect(inside).toEqual([1, 4, 5]);
      const settled = (await t.store.get({ tenant_id: TENANT, transaction_id: id })) as TransactionRecord;
      expect(verified(settled, await chainInPages(t.store, TENANT, id, 2))).toMatchObject({ valid: true });
    }
  });

  it('the image computed after a write with a receipt inside is the stored item (AIP_DYNAMO_VERIFY_IMAGES), known and held', async () => {
    const verifying = createDynamoStores({ client: t.client, tableName: t.tableName, now: clock.now, transactions: { verifyKnownImages: true } });
    // Known image: a mixed chain's retained settlement is a TransactWriteItems (the stamps) with the receipt inside.
    let r = await committing({ note: noise(500) });
    const id = r.transaction_id;
    await verifying.transactions.get({ tenant_id: TENANT, transaction_id: id });
    for (const n of [1, 2]) {
      const out = await verifying.uow.commit([
        {
          kind: 'transaction.checkpoint',
          input: {
            tenant_id: TENANT,
            transaction_id: id,
            expected_revision: r.revision,
            provider_operation: { provider: 'p', operation_id: 'o' },
            receipt: { ...nextReceipt(r, r.revision + 1, 'committing', 'transaction.checkpointed'), evidence: { n } },
          },
        },
      ]);
      r = out.committed ? (out.written[0] as TransactionRecord) : r;
    }
    const settled = await verifying.uow.commit([
      {
        kind: 'transaction.settle',
        input: {
          tenant_id: TENANT,
          transaction_id: id,
          expected_revision: r.revision,
          to: 'committed',
          receipt: nextReceipt(r, r.revision + 1, 'committed', 'transaction.committed'),
          retention: { days: 30 },
        },
      },
    ]);
    expect(settled.committed).toBe(true);
    expect(await layout(id)).toMatchObject({ items: [0], inside: [1, 2, 3] });
    // Held image, verifying: a settlement with a receipt inside, sent with another intent (no item image back).
    const other = blind({ verifyKnownImages: true });
    const hid = uid('txn');
    const h0 = await t.store.create({ ...preparedInput(hid), receipt: nextReceipt({ transaction_id: hid }, 1, 'prepared', 'transaction.prepared') });
    const check = await other.uow.commit([
      {
        kind: 'transaction.settle',
        input: {
          tenant_id: TENANT,
          transaction_id: hid,
          expected_revision: 1,
          to: 'committed',
          receipt: nextReceipt(h0, 2, 'committed', 'transaction.committed'),
        },
        held: h0,
      },
      {
        kind: 'transaction.create',
        input: { ...preparedInput(uid('txn')) },
      },
    ]);
    expect(check.committed).toBe(true);
    expect((await layout(hid)).inside).toEqual([0, 1]);
  });
});
