/**
 * Key attributes not stored again (docs/table-design.md, "Key attributes not
 * stored again"): the items an action writes carry no attribute their PK/SK
 * already hold, and every store reads them back from the key; items written
 * the old way (with them) read exactly as before and keep working, through a
 * redelivery that recovers an action in flight during the upgrade. Against
 * DynamoDB Local and the real queue, through the Runtime.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENESIS_RECEIPT_ATTRIBUTE, keys, receiptAttributeSeq } from '../../../lib/aws/dynamo/table-design.js';
import { idempotencyKeyHash } from '../../../lib/ports/idempotency-store.js';
import { readableItem } from '../../support/packed-items.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

type Item = Record<string, unknown>;
type Key = { PK: string; SK: string };

const provider = new TestProvider();
const LEASE = 10_000 + 30_000; // capability timeout + lease margin
const PRINCIPAL = caller().principal.id;
let h: Harness;
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-keyattrs', config: { stall_after_ms: 60_000 } });
});
afterAll(async () => h.destroy());

/** An item as stored, its packed attributes decoded (test/support/packed-items.ts): written back, it is the plain shape. */
const raw = async (key: Key): Promise<Item | undefined> => {
  const item = (await h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: key, ConsistentRead: true }))).Item;
  return item === undefined ? undefined : readableItem(item);
};

/** Rewrites an item as the code before the lean item model wrote it: with the attributes its key holds, nested ones included. */
async function writeOldWay(key: Key, repeated: Item, nested: (item: Item) => Item): Promise<void> {
  const item = await raw(key);
  if (item === undefined) throw new Error(`no item ${key.PK} ${key.SK}`);
  await h.table.client.send(new PutCommand({ TableName: h.table.tableName, Item: { ...item, ...repeated, ...nested(item) } }));
}

const none = () => ({});

/**
 * Moves the receipts the record item holds (docs/table-design.md, "Receipts inside the record") to their own `RCPT#`
 * items: the layout of a chain written before (plain shape, as `writeOldWay`).
 */
async function moveInsideToItems(tx: string): Promise<void> {
  const record = (await raw(keys.transaction(TENANT, tx))) as Item;
  for (const [name, held] of Object.entries(record)) {
    const seq = receiptAttributeSeq(name);
    if (seq === undefined) continue;
    const body = held as { receipt: Item; evidence?: unknown };
    expect(body.receipt).toBeDefined();
    await h.table.client.send(new PutCommand({ TableName: h.table.tableName, Item: { ...keys.receipt(TENANT, tx, seq), ...body } }));
    delete record[name];
  }
  await h.table.client.send(new PutCommand({ TableName: h.table.tableName, Item: record }));
}

const legacyRoute = (a: string) => ({ key: keys.routeAssignment(TENANT, a), repeated: { item_type: 'route_assignment', tenant_id: TENANT, action_id: a } });

/**
 * The keys of an execute's items and the attributes the previous code repeated on each (its item_type included).
 * The route is an attribute of the action (it repeats nothing); a ROUTE item of an earlier version: `legacyRoute`.
 */
function itemsOf(a: string, tx: string, idemKey: string, receipts: number, layout: 'inside_record' | 'receipt_items' = 'receipt_items') {
  const items = layout === 'inside_record' ? 0 : receipts;
  const keyHash = idempotencyKeyHash(idemKey);
  return [
    {
      key: keys.action(TENANT, a),
      repeated: { item_type: 'action', tenant_id: TENANT, action_id: a },
      // The envelope's ID and the result's action ID.
      nested: (i: Item) => ({
        action: { ...(i.action as Item), id: a },
        ...(i.result !== undefined ? { result: { ...(i.result as Item), action_id: a } } : {}),
      }),
      absent: (i: Item) => [(i.action as Item).id, (i.result as Item | undefined)?.action_id],
    },
    {
      key: keys.transaction(TENANT, tx),
      repeated: { item_type: 'transaction', tenant_id: TENANT, transaction_id: tx },
      nested: none,
      // The receipts it holds: their transaction ID and seq.
      absent: (i: Item) =>
        Object.entries(i)
          .filter(([name]) => receiptAttributeSeq(name) !== undefined)
          .flatMap(([, held]) => [(held as { receipt?: Item }).receipt?.transaction_id, (held as { receipt?: Item }).receipt?.seq]),
    },
    ...Array.from({ length: items }, (_, seq) => seq).map((seq) => ({
      key: keys.receipt(TENANT, tx, seq),
      repeated: { item_type: 'receipt', tenant_id: TENANT, transaction_id: tx, seq },
      // The receipt's own transaction ID and seq.
      nested: (i: Item) => ({ receipt: { ...(i.receipt as Item), transaction_id: tx, seq } }),
      absent: (i: Item) => [(i.receipt as Item).transaction_id, (i.receipt as Item).seq],
    })),
    {
      key: keys.idempotency(TENANT, PRINCIPAL, keyHash),
      repeated: { item_type: 'idempotency', tenant_id: TENANT, principal_id: PRINCIPAL, key_hash: keyHash },
      nested: none,
      absent: none,
    },
  ];
}

async function submit(idemKey: string) {
  const a = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: idemKey }));
  return { a, tx };
}

/** Everything the stores read of an execute: the action, its route, the record, its receipts and the reservation. */
async function readAll(a: string, tx: string, idemKey: string) {
  const s = h.table.stores;
  return {
    action: await s.actions.get({ tenant_id: TENANT, action_id: a }),
    route: await s.routes.get({ tenant_id: TENANT, action_id: a }),
    record: await h.table.store.get({ tenant_id: TENANT, transaction_id: tx }),
    byAction: await h.table.store.get({ tenant_id: TENANT, action_id: a }),
    receipts: (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items,
    reservation: await s.idempotency.get({ tenant_id: TENANT, principal_id: PRINCIPAL, key: idemKey }),
  };
}

describe('Key attributes not stored again', () => {
  it('a settled execute leaves no attribute its key holds on any item, and every store reads them from the key', async () => {
    const idemKey = uid('key');
    const { a, tx } = await submit(idemKey);
    expect(await h.drain()).toMatchObject([{ disposition: 'settled', transaction_status: 'committed' }]);

    const read = await readAll(a, tx, idemKey);
    expect(read.receipts.length).toBeGreaterThanOrEqual(2);
    // The receipts are inside the record item, not items of their own.
    expect((await raw(keys.transaction(TENANT, tx)))?.[GENESIS_RECEIPT_ATTRIBUTE]).toMatchObject({ receipt: { status: 'prepared' } });
    for (let seq = 0; seq < read.receipts.length; seq++) expect(await raw(keys.receipt(TENANT, tx, seq))).toBeUndefined();
    for (const { key, repeated, absent } of itemsOf(a, tx, idemKey, read.receipts.length, 'inside_record')) {
      const item = (await raw(key)) as Item;
      expect(item, `${key.PK} ${key.SK}`).toBeDefined();
      for (const attribute of Object.keys(repeated)) expect(item, `${key.SK} ${attribute}`).not.toHaveProperty(attribute);
      expect(
        Object.values(absent(item)).filter((v) => v !== undefined),
        `${key.SK} nested`,
      ).toEqual([]);
    }

    expect(read.action).toMatchObject({
      tenant_id: TENANT,
      action_id: a,
      status: 'completed',
      transaction_id: tx,
      action: { id: a },
      result: { action_id: a },
    });
    expect(read.route).toMatchObject({ tenant_id: TENANT, action_id: a, verified_tenant: TENANT });
    expect(read.record).toMatchObject({ tenant_id: TENANT, transaction_id: tx, status: 'committed', action_id: a });
    expect(read.byAction).toEqual(read.record);
    expect(read.receipts.map((r) => [r.tenant_id, r.receipt.seq, r.receipt.transaction_id])).toEqual(read.receipts.map((_, seq) => [TENANT, seq, tx]));
    expect(read.reservation).toMatchObject({ tenant_id: TENANT, principal_id: PRINCIPAL, key_hash: idempotencyKeyHash(idemKey), action_id: a });
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('a settled execute written the old way reads exactly as before; its view, its chain and a replay of its key are unchanged', async () => {
    const idemKey = uid('key');
    const { a, tx } = await submit(idemKey);
    await h.drain();
    const before = await readAll(a, tx, idemKey);
    const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { result: true, receipts: true });
    await moveInsideToItems(tx);
    for (const { key, repeated, nested } of itemsOf(a, tx, idemKey, before.receipts.length)) await writeOldWay(key, repeated, nested);

    expect(await readAll(a, tx, idemKey)).toEqual(before);
    expect(await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { result: true, receipts: true })).toEqual(view);
    expect((await h.verifyChain(tx)).valid).toBe(true);
    const calls = provider.count('invoke', tx);
    const replay = await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: idemKey }));
    expect(replay).toMatchObject({ disposition: 'replayed', action_result: { ...before.action?.result, replayed: true } });
    expect(provider.count('invoke', tx)).toBe(calls);
  });

  it('an action in flight during the upgrade (leased, route pinned, items written the old way) is recovered by its redelivery on the pinned route', async () => {
    const idemKey = uid('key');
    const { a, tx } = await submit(idemKey);
    h.crash.arm('after_lease_before_provider_call');
    await h.drain();
    const before = await readAll(a, tx, idemKey);
    expect(before.action).toMatchObject({ status: 'running', fence: 1 });
    expect(before.route).toMatchObject({ action_id: a, fence_token: 1 });
    // The route as the version before pinned it: a ROUTE item of its own, with the attributes its key holds.
    await h.stores.routes.moveToLegacy({ tenant_id: TENANT, action_id: a });
    await writeOldWay(legacyRoute(a).key, legacyRoute(a).repeated, none);
    await moveInsideToItems(tx);
    for (const { key, repeated, nested } of itemsOf(a, tx, idemKey, before.receipts.length)) await writeOldWay(key, repeated, nested);
    const { action: beforeAction, ...rest } = before;
    const { route: _pinned, ...unpinned } = beforeAction ?? {};
    expect(await readAll(a, tx, idemKey)).toEqual({ ...rest, action: unpinned });

    h.clock.advance(LEASE);
    expect((await h.drain()).map((o) => o.disposition)).toEqual(['recovered_outcome_unknown']);
    const after = await readAll(a, tx, idemKey);
    // The pinned route was reused, not rewritten: the old item, as it was; the new lease carried it onto the action.
    expect(after.route).toEqual(before.route);
    expect(after.action?.route).toEqual(before.route);
    expect(await raw(keys.routeAssignment(TENANT, a))).toMatchObject({ item_type: 'route_assignment', tenant_id: TENANT, action_id: a });
    expect(after.action).toMatchObject({ tenant_id: TENANT, action_id: a, status: 'failed', fence: 2 });
    expect(after.record).toMatchObject({ tenant_id: TENANT, transaction_id: tx, status: 'outcome_unknown' });
    expect(after.reservation).toMatchObject({ status: 'uncertain', key_hash: idempotencyKeyHash(idemKey) });
    expect(provider.count('invoke', tx)).toBe(0);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });
});
