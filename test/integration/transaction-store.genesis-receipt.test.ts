/**
 * The first receipt inside the record (docs/table-design.md, "The first receipt inside the record"): a record
 * created with its first receipt holds it in its own item when the two fit its write unit, and every reader of
 * the chain reads it as seq 0, exactly as the `RCPT#00000000` item it replaces; a record that does not fit (a plan)
 * and a chain written before keep that item. Against DynamoDB Local, through the store's unit of work.
 */
import { randomBytes } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoStores } from '../../lib/aws/dynamo/stores.js';
import { GENESIS_RECEIPT_ATTRIBUTE, TTL_ATTRIBUTE, keys, receiptAttributeSeq } from '../../lib/aws/dynamo/table-design.js';
import type { CreateTransactionInput } from '../../lib/ports/transaction-store.js';
import type { StoredReceipt, TransactionRecord } from '../../lib/transactions/record.js';
import { createTestTable, type TestTable } from '../support/dynamo.js';
import { chainInPages, verifiedChain as verified } from '../support/receipt-chain.js';
import { readableItem } from '../support/packed-items.js';
import { TENANT, manualClock, nextReceipt, planFor, plannedInput, preparedInput, uid } from '../support/transaction-fixtures.js';

type Item = Record<string, unknown>;

const clock = manualClock();
let t: TestTable;
/** DynamoDB commands sent, by name (SDK middleware on the test client). */
const sent: string[] = [];

beforeAll(async () => {
  t = await createTestTable({ now: clock.now, prefix: 'genesis' });
  t.raw.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(String(context.commandName).replace(/Command$/, ''));
      return next(args);
    },
    { step: 'initialize', name: 'genesisTestCounter' },
  );
});
afterAll(async () => t?.destroy());

/** Every item of the record's partition, as stored (packed values decoded), in key order. */
async function partition(txn: string): Promise<Item[]> {
  const out = await t.client.send(
    new QueryCommand({
      TableName: t.tableName,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': keys.transaction(TENANT, txn).PK },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []).map((i) => readableItem(i));
}

async function rawItem(key: { PK: string; SK: string }): Promise<Item | undefined> {
  return (await t.client.send(new GetCommand({ TableName: t.tableName, Key: key, ConsistentRead: true }))).Item;
}

/** A prepared execute record created with its first receipt. */
async function prepared(overrides: Partial<CreateTransactionInput> = {}): Promise<TransactionRecord> {
  const id = uid('txn');
  return t.store.create({
    ...preparedInput(id, overrides),
    receipt: { ...nextReceipt({ transaction_id: id }, 1, 'prepared', 'transaction.prepared'), evidence: { attempt: 0 } },
  });
}

/** A committing record (a direct commit, created with its first receipt) and `more` checkpoints, each with its receipt. */
async function chainOf(more: number): Promise<TransactionRecord> {
  const id = uid('txn');
  let r = await t.store.claimDirectCommit({
    ...preparedInput(id),
    mode: 'commit',
    lease: { owner: 'w', ttl_ms: 60_000 },
    receipt: nextReceipt({ transaction_id: id }, 1, 'committing', 'transaction.commit_claimed'),
  });
  for (let i = 0; i < more; i++) {
    r = await t.store.checkpointProviderOperation({
      tenant_id: TENANT,
      transaction_id: id,
      expected_revision: r.revision,
      provider_operation: { provider: 'p', operation_id: 'o' },
      receipt: { ...nextReceipt(r, r.revision + 1, 'committing', 'transaction.checkpointed'), evidence: { n: i } },
    });
  }
  return r;
}

/** Moves every receipt the record holds inside to its own `RCPT#` item, as a chain written before changes 16 and 21. */
async function asWrittenBefore(txn: string): Promise<void> {
  const record = (await rawItem(keys.transaction(TENANT, txn))) as Item;
  for (const [name, held] of Object.entries(record)) {
    const seq = receiptAttributeSeq(name);
    if (seq === undefined) continue;
    const body = readableItem({ g: held }).g as Item;
    await t.client.send(new PutCommand({ TableName: t.tableName, Item: { ...keys.receipt(TENANT, txn, seq), ...body } }));
    delete record[name];
  }
  await t.client.send(new PutCommand({ TableName: t.tableName, Item: record }));
}

/** The receipts inside the record item, by attribute name, as stored (packed). */
async function insideAttributes(txn: string): Promise<Item> {
  const record = (await rawItem(keys.transaction(TENANT, txn))) as Item;
  return Object.fromEntries(Object.entries(record).filter(([name]) => receiptAttributeSeq(name) !== undefined));
}

describe('The first receipt inside the record', () => {
  it("an execute's record takes its first receipt in: one conditional PutItem, no receipt item, the chain reads it as seq 0", async () => {
    sent.length = 0;
    const r = await prepared();
    expect(sent).toEqual(['PutItem']);
    expect(r).toMatchObject({ status: 'prepared', revision: 1, receipt_count: 1 });
    const items = await partition(r.transaction_id);
    expect(items.map((i) => i.SK)).toEqual(['TXN']);
    expect(items[0]?.[GENESIS_RECEIPT_ATTRIBUTE]).toMatchObject({ receipt: { status: 'prepared', event: 'transaction.prepared' }, evidence: { attempt: 0 } });

    const page = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: r.transaction_id });
    expect(page.cursor).toBeUndefined();
    expect(page.items).toEqual([
      {
        tenant_id: TENANT,
        receipt: nextReceipt({ transaction_id: r.transaction_id }, 1, 'prepared', 'transaction.prepared').receipt,
        evidence: { attempt: 0 },
      },
    ]);
    expect(verified(r, page.items)).toMatchObject({ valid: true });
  });

  it('the same record created twice: the second is refused with the stored record, and nothing of it written', async () => {
    const r = await prepared();
    const again = t.store.create({
      ...preparedInput(r.transaction_id),
      receipt: nextReceipt({ transaction_id: r.transaction_id }, 1, 'prepared', 'transaction.other'),
    });
    await expect(again).rejects.toMatchObject({ code: 'transaction.already_exists', details: { current_status: 'prepared', current_revision: 1 } });
    expect((await t.store.listReceipts({ tenant_id: TENANT, transaction_id: r.transaction_id })).items.map((i) => i.receipt.event)).toEqual([
      'transaction.prepared',
    ]);
  });

  it('a record created terminal (a dry run) holds its receipt and its ttl covers it: one PutItem', async () => {
    const id = uid('txn');
    sent.length = 0;
    const r = await t.store.create({
      ...preparedInput(id, { status: 'dry_run_completed', mode: 'dry_run' }),
      receipt: nextReceipt({ transaction_id: id }, 1, 'dry_run_completed', 'transaction.dry_run_completed'),
    });
    expect(sent).toEqual(['PutItem']);
    const items = await partition(id);
    expect(items.map((i) => i.SK)).toEqual(['TXN']);
    expect(items[0]?.[TTL_ATTRIBUTE]).toBe(Math.floor(clock.now().getTime() / 1000) + 7 * 24 * 3600);
    const chain = await chainInPages(t.store, TENANT, id, 100);
    expect(chain.map((c) => [c.receipt.seq, c.receipt.status])).toEqual([[0, 'dry_run_completed']]);
    expect(verified(r, chain)).toMatchObject({ valid: true });
  });

  it('a record that does not fit its write unit with its receipt (a plan the size of a real one) keeps its RCPT#00000000 item, and reads as before', async () => {
    const id = uid('txn');
    // A plan's preview and input snapshot: about 300 bytes that do not compress (the bench's plan record is 887 B).
    const plan = { ...planFor(id, `plan:${id}`), preview: { snapshot: randomBytes(300).toString('base64') } };
    const r = await t.store.create({ ...plannedInput(id, { plan }), receipt: nextReceipt({ transaction_id: id }, 1, 'planned', 'transaction.planned') });
    const items = await partition(id);
    expect(items.map((i) => i.SK)).toEqual(['RCPT#00000000', 'TXN']);
    expect(items[1]).not.toHaveProperty(GENESIS_RECEIPT_ATTRIBUTE);
    const chain = await chainInPages(t.store, TENANT, id, 100);
    expect(chain.map((c) => [c.receipt.seq, c.receipt.status])).toEqual([[0, 'planned']]);
    expect(verified(r, chain)).toMatchObject({ valid: true });
  });

  it('a receipt inside the record is never rewritten: later writes of the record leave its bytes as they are, and append theirs inside', async () => {
    const r0 = await prepared();
    const id = r0.transaction_id;
    const bytes = async () => (await rawItem(keys.transaction(TENANT, id)))?.[GENESIS_RECEIPT_ATTRIBUTE];
    const genesis = await bytes();
    expect(genesis).toBeInstanceOf(Uint8Array);
    const r1 = await t.store.acquireLease({
      tenant_id: TENANT,
      transaction_id: id,
      expected_revision: 1,
      owner: 'w',
      ttl_ms: 60_000,
      receipt: nextReceipt(r0, 2, 'prepared', 'transaction.attempt_started'),
    });
    expect(await bytes()).toEqual(genesis);
    const r2 = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: id,
      expected_revision: r1.revision,
      to: 'committed',
      receipt: nextReceipt(r1, 3, 'committed', 'transaction.committed'),
    });
    expect(await bytes()).toEqual(genesis);
    const inside = await insideAttributes(id);
    expect(Object.keys(inside).sort()).toEqual(['receipt0', 'receipt1', 'receipt2']);
    expect(inside.receipt1).toBeInstanceOf(Uint8Array);
    expect((await partition(id)).map((i) => i.SK)).toEqual(['TXN']);
    const chain = await chainInPages(t.store, TENANT, id, 100);
    expect(chain.map((c) => c.receipt.seq)).toEqual([0, 1, 2]);
    expect(verified(r2, chain)).toMatchObject({ valid: true });
  });

  it('a scan of the table after an execute holds each receipt exactly once', async () => {
    const r0 = await prepared();
    const r1 = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: r0.transaction_id,
      expected_revision: 1,
      to: 'committed',
      receipt: nextReceipt(r0, 2, 'committed', 'transaction.committed'),
    });
    const hashes = (await partition(r1.transaction_id)).flatMap((i) => {
      const found: unknown[] = [];
      if (String(i.SK).startsWith('RCPT#')) found.push((i.receipt as Item).hash);
      for (const [name, held] of Object.entries(i)) if (receiptAttributeSeq(name) !== undefined) found.push((held as { receipt: Item }).receipt.hash);
      return found;
    });
    const chain = await chainInPages(t.store, TENANT, r1.transaction_id, 100);
    expect(hashes.sort()).toEqual(chain.map((c) => c.receipt.hash).sort());
    expect(new Set(hashes).size).toBe(2);
  });

  it('paginated listings return every receipt once, in order, for every page size; a chain written before pages identically', async () => {
    const r = await chainOf(5); // 6 receipts, all inside the record (within its 2 KB cap)
    const id = r.transaction_id;
    expect((await partition(id)).map((i) => i.SK)).toEqual(['TXN']);
    expect(Object.keys(await insideAttributes(id))).toHaveLength(6);
    const whole = await chainInPages(t.store, TENANT, id, 100);
    expect(whole.map((c) => c.receipt.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(verified(r, whole)).toMatchObject({ valid: true });
    const pages: Record<number, StoredReceipt[]> = {};
    for (let limit = 1; limit <= 7; limit++) {
      pages[limit] = await chainInPages(t.store, TENANT, id, limit);
      expect(pages[limit], `limit ${limit}`).toEqual(whole);
    }
    // The same chain as written before: every receipt an item of its own.
    await asWrittenBefore(id);
    expect((await partition(id)).map((i) => i.SK)).toEqual([
      'RCPT#00000000',
      'RCPT#00000001',
      'RCPT#00000002',
      'RCPT#00000003',
      'RCPT#00000004',
      'RCPT#00000005',
      'TXN',
    ]);
    for (let limit = 1; limit <= 7; limit++) expect(await chainInPages(t.store, TENANT, id, limit), `limit ${limit}`).toEqual(whole);
  });

  it('a cursor names the last receipt returned: from the record, the next page starts at seq 1; from another listing, refused', async () => {
    const r = await chainOf(2);
    const first = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: r.transaction_id, limit: 1 });
    expect(first.items.map((i) => i.receipt.seq)).toEqual([0]);
    const next = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: r.transaction_id, limit: 1, cursor: first.cursor as string });
    expect(next.items.map((i) => i.receipt.seq)).toEqual([1]);
    await expect(t.store.listReceipts({ tenant_id: TENANT, transaction_id: uid('other'), cursor: first.cursor as string })).rejects.toMatchObject({
      code: 'transaction.invalid_listing',
    });
    const forged = Buffer.from(JSON.stringify(keys.transaction(TENANT, r.transaction_id)), 'utf8').toString('base64url');
    await expect(t.store.listReceipts({ tenant_id: TENANT, transaction_id: r.transaction_id, cursor: forged })).rejects.toMatchObject({
      code: 'transaction.invalid_listing',
    });
  });

  it('a retained terminal settlement stamps the record (and with it the receipts inside) and every receipt item; no item is made', async () => {
    const r0 = await chainOf(2);
    const id = r0.transaction_id;
    // Receipts 1 and 2 as items (a chain written before), receipt 0 left inside: the store reads the record anew.
    const record = (await rawItem(keys.transaction(TENANT, id))) as Item;
    await asWrittenBefore(id);
    await t.client.send(
      new PutCommand({ TableName: t.tableName, Item: { ...((await rawItem(keys.transaction(TENANT, id))) as Item), receipt0: record.receipt0 } }),
    );
    await t.client.send(new DeleteCommand({ TableName: t.tableName, Key: keys.receipt(TENANT, id, 0) }));
    await t.store.get({ tenant_id: TENANT, transaction_id: id });
    const r1 = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: id,
      expected_revision: r0.revision,
      to: 'committed',
      receipt: nextReceipt(r0, r0.revision + 1, 'committed', 'transaction.committed'),
      retention: { days: 30 },
    });
    const ttl = Math.floor(clock.now().getTime() / 1000) + 30 * 86_400;
    const items = await partition(id);
    expect(items.map((i) => [i.SK, i[TTL_ATTRIBUTE]])).toEqual([
      ['RCPT#00000001', ttl],
      ['RCPT#00000002', ttl],
      ['TXN', ttl],
    ]);
    expect(Object.keys(await insideAttributes(id)).sort()).toEqual(['receipt0', 'receipt3']);
    expect(verified(r1, await chainInPages(t.store, TENANT, id, 100))).toMatchObject({ valid: true });
  });

  it('a retained terminal settlement by a store that knows no image of the item: receipts inside or items of their own, the items stamped', async () => {
    // Another container: no image of the items this one wrote; the step names the record it read (`held`).
    const other = createDynamoStores({ client: t.client, tableName: t.tableName, now: clock.now, transactions: { knownImages: 0 } });
    const ttl = Math.floor(clock.now().getTime() / 1000) + 30 * 86_400;
    for (const before of [false, true]) {
      const r0 = await chainOf(1);
      const id = r0.transaction_id;
      if (before) await asWrittenBefore(id);
      const held = (await other.transactions.get({ tenant_id: TENANT, transaction_id: id })) as TransactionRecord;
      const settle = {
        tenant_id: TENANT,
        transaction_id: id,
        expected_revision: r0.revision,
        to: 'committed' as const,
        receipt: nextReceipt(r0, r0.revision + 1, 'committed', 'transaction.committed'),
        retention: { days: 30 },
      };
      const out = await other.uow.commit([{ kind: 'transaction.settle', input: settle, held }]);
      expect(out.committed).toBe(true);
      const items = await partition(id);
      expect(items.map((i) => [i.SK, i[TTL_ATTRIBUTE]])).toEqual([
        ...(before
          ? [
              ['RCPT#00000000', ttl],
              ['RCPT#00000001', ttl],
            ]
          : []),
        ['TXN', ttl],
      ]);
      // The settlement's receipt inside, decided on the held record's estimate.
      expect(Object.keys(await insideAttributes(id)).sort()).toEqual(before ? ['receipt2'] : ['receipt0', 'receipt1', 'receipt2']);
      const record = (await other.transactions.get({ tenant_id: TENANT, transaction_id: id })) as TransactionRecord;
      expect(verified(record, await chainInPages(other.transactions, TENANT, id, 2))).toMatchObject({ valid: true });
    }
  });
});
