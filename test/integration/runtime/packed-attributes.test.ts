/**
 * Opaque attributes stored packed (docs/table-design.md, "Opaque attributes stored packed"): a settled execute, a
 * planned commit, a compensation and a reconcile leave their opaque values as Binary (a format byte and the
 * packed bytes); every store, view, the replay gate and the receipt chain's verification read them as before;
 * and the same items rewritten in the previous, plain shape read identically (migrate on read). Against
 * DynamoDB Local and the real queue, through the Runtime.
 */
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyKeyHash } from '../../../lib/ports/idempotency-store.js';
import { GENESIS_RECEIPT_ATTRIBUTE, keys, receiptAttributeSeq } from '../../../lib/aws/dynamo/table-design.js';
import { readableItem, scanReadable } from '../../support/packed-items.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

type Item = Record<string, unknown>;
type Key = { PK: string; SK: string };

const provider = new TestProvider();
const PRINCIPAL = caller().principal.id;
let h: Harness;
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-packed' });
});
afterAll(async () => h.destroy());

const stored = async (key: Key): Promise<Item> =>
  (await h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: key, ConsistentRead: true }))).Item as Item;

/** Every item of a partition (the transaction's record and receipts, or the action's item, route and chunks). */
async function partition(pk: string): Promise<Item[]> {
  const out = await h.table.client.send(
    new QueryCommand({
      TableName: h.table.tableName,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': 'PK' },
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []) as Item[];
}

/** Rewrites items as the code before this change wrote them: every value plain, a route's fields as attributes of their own. */
async function writePlain(items: readonly Item[]): Promise<void> {
  for (const item of items) {
    const { assignment, ...plain } = readableItem(item);
    const Item = assignment !== undefined && typeof assignment === 'object' ? { ...plain, ...(assignment as Item) } : plain;
    expect(Object.values(Item).some((v) => v instanceof Uint8Array)).toBe(false);
    await h.table.client.send(new PutCommand({ TableName: h.table.tableName, Item }));
  }
}

/** The items of a transaction and its actions (with the reservation of an idempotency key). */
async function itemsOf(tx: string, actionIds: readonly string[], idemKey?: string): Promise<Item[]> {
  const items = [...(await partition(keys.transaction(TENANT, tx).PK))];
  for (const a of actionIds) items.push(...(await partition(keys.action(TENANT, a).PK)));
  if (idemKey !== undefined) items.push(await stored(keys.idempotency(TENANT, PRINCIPAL, idempotencyKeyHash(idemKey))));
  return items;
}

/** What every reader answers of a transaction and its actions. */
async function reads(tx: string, actionIds: readonly string[], idemKey?: string, visible = true) {
  const s = h.table.stores;
  return {
    record: await h.table.store.get({ tenant_id: TENANT, transaction_id: tx }),
    view: await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { result: true, receipts: true }),
    receipts: (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items,
    actions: await Promise.all(actionIds.map((a) => s.actions.get({ tenant_id: TENANT, action_id: a }))),
    routes: await Promise.all(actionIds.map((a) => s.routes.get({ tenant_id: TENANT, action_id: a }))),
    public: visible ? await Promise.all(actionIds.map((a) => h.runtime.getAction(caller(), TENANT, a))) : [],
    reservation: idemKey === undefined ? undefined : await s.idempotency.get({ tenant_id: TENANT, principal_id: PRINCIPAL, key: idemKey }),
    chain: await h.verifyChain(tx),
  };
}

const isPacked = (v: unknown) => v instanceof Uint8Array && (v[0] === 0x01 || v[0] === 0x02);

async function executed(idemKey?: string) {
  const a = uid('a');
  const tx = uid('tx');
  const envelope = transfer(a, { transaction: { mode: 'execute', transaction_id: tx }, ...(idemKey !== undefined ? { idempotency_key: idemKey } : {}) });
  await h.runtime.submit(caller(), envelope);
  expect(await h.drain()).toMatchObject([{ disposition: 'settled', transaction_status: 'committed' }]);
  return { a, tx, envelope };
}

describe('Opaque attributes stored packed', () => {
  it('a settled execute leaves its result, digests, receipts and route packed; every reader and the replay gate read them as before; the plain shape reads identically', async () => {
    const idemKey = uid('key');
    const { a, tx, envelope } = await executed(idemKey);
    const action = await stored(keys.action(TENANT, a));
    expect(isPacked(action.result)).toBe(true);
    expect(isPacked(action.input_hash)).toBe(true);
    expect(typeof action.transaction_id).toBe('string'); // read by a projection: plain
    expect(isPacked(action.route)).toBe(true);
    expect(
      await h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: keys.routeAssignment(TENANT, a) })).then((o) => o.Item),
    ).toBeUndefined();
    expect(isPacked((await stored(keys.idempotency(TENANT, PRINCIPAL, idempotencyKeyHash(idemKey)))).fingerprint)).toBe(true);
    const txn = await stored(keys.transaction(TENANT, tx));
    // Conditioned on its fields: plain.
    expect(isPacked(txn.provider_operation)).toBe(false);
    // The chain's head, compared by the next receipt's write in either form: its 32 bytes, in the packed `hex` format.
    expect(txn.receipt_head).toBeInstanceOf(Uint8Array);
    expect((txn.receipt_head as Uint8Array).length).toBe(33);
    // Updated key by key: `data` stays a map, its values packed one by one where that is smaller.
    expect(isPacked(txn.data)).toBe(false);
    expect(Object.values(txn.data as Item).some(isPacked)).toBe(true);
    // The receipts inside the record (docs/table-design.md, "Receipts inside the record"): packed, body and evidence as one value.
    expect(isPacked(txn[GENESIS_RECEIPT_ATTRIBUTE])).toBe(true);
    const inside = Object.keys(txn).filter((name) => receiptAttributeSeq(name) !== undefined);
    expect(inside.length).toBeGreaterThanOrEqual(2);
    for (const name of inside) expect(isPacked(txn[name]), name).toBe(true);
    // Any receipt of its own item: packed too.
    const receipts = (await partition(keys.transaction(TENANT, tx).PK)).filter((i) => String(i.SK).startsWith('RCPT#'));
    for (const r of receipts) expect(isPacked(r.receipt), String(r.SK)).toBe(true);

    const before = await reads(tx, [a], idemKey);
    expect(before.chain.valid).toBe(true);
    expect(before.actions[0]?.action).toEqual(envelope);
    expect(before.actions[0]?.result).toMatchObject({ action_id: a, status: 'completed' });
    expect(before.view.receipts?.length).toBe(receipts.length + inside.length);
    // The replay gate reads the stored envelope, digest and reservation: the same action is a replay, nothing invoked.
    const calls = provider.count('invoke', tx);
    expect(await h.runtime.submit(caller(), envelope)).toMatchObject({ disposition: 'replayed' });
    expect(await h.runtime.submit(caller(), { ...envelope, id: uid('a') })).toMatchObject({ disposition: 'replayed' });
    expect(provider.count('invoke', tx)).toBe(calls);

    await writePlain(await itemsOf(tx, [a], idemKey));
    expect(typeof (await stored(keys.action(TENANT, a))).input_hash).toBe('string');
    expect(await reads(tx, [a], idemKey)).toEqual(before);
    expect(await h.runtime.submit(caller(), envelope)).toMatchObject({ disposition: 'replayed' });
    expect(provider.count('invoke', tx)).toBe(calls);
  });

  it('a planned commit: the plan is packed, the commit claims and settles it, and the plain shape reads identically', async () => {
    const tx = uid('tx');
    const p = uid('p');
    await h.runtime.submit(caller(), transfer(p, { transaction: { mode: 'plan', transaction_id: tx } }));
    expect(isPacked((await stored(keys.transaction(TENANT, tx))).plan)).toBe(true);
    const planned = await reads(tx, [p]);
    expect(planned.view.plan).toMatchObject({ transaction_id: tx, plan_id: `plan:${tx}`, planning_action_id: p });
    await writePlain(await itemsOf(tx, [p]));
    expect(await reads(tx, [p])).toEqual(planned);

    const c = uid('c');
    await h.runtime.submit(caller(), transfer(c, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }));
    expect(await h.drain()).toMatchObject([{ disposition: 'settled', transaction_status: 'committed' }]);
    const committed = await reads(tx, [p, c]);
    expect(committed.chain.valid).toBe(true);
    expect(committed.view.plan).toEqual(planned.view.plan);
    await writePlain(await itemsOf(tx, [p, c]));
    expect(await reads(tx, [p, c])).toEqual(committed);
  });

  it('a compensation of a packed execute: the worker reads the target, and its own items read identically in the plain shape', async () => {
    const { a } = await executed();
    const k = { ...transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: a } }), capability_id: 'pay.transfer' };
    expect((await h.runtime.submit(caller(), k)).disposition).toBe('accepted');
    const [settled] = await h.drain();
    expect(settled).toMatchObject({ disposition: 'settled', transaction_status: 'compensated' });
    const own = settled?.transaction_id as string;
    expect(isPacked((await stored(keys.action(TENANT, k.id))).result)).toBe(true);
    const before = await reads(own, [k.id]);
    expect(before.chain.valid).toBe(true);
    expect(before.view.links).toMatchObject({ compensation_for: a });
    await writePlain(await itemsOf(own, [k.id]));
    expect(await reads(own, [k.id])).toEqual(before);
  });

  it("a reconcile's record keeps its error and final result packed; the reconciled view and chain read as before, plain or packed", async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
    await h.drain();
    const uncertain = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
    expect(uncertain?.status).toBe('outcome_unknown');
    expect(isPacked((await stored(keys.transaction(TENANT, tx))).error)).toBe(true);
    h.clock.advance(5_000);
    expect(await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' })).toMatchObject({
      disposition: 'reconciled',
      transaction_status: 'reconciled',
    });
    const item = await stored(keys.transaction(TENANT, tx));
    expect(isPacked(item.result)).toBe(true);
    // The reconcile's bookkeeping in `data`, merged key by key, packed value by value.
    expect(isPacked(item.data)).toBe(false);
    expect(Object.values(item.data as Item).some(isPacked)).toBe(true);
    const record = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
    const reconciler = record?.data.reconcile_action_id as string;
    expect(record?.result?.metadata).toMatchObject({ reconciliation: { terminal: true } });
    expect(record?.data.last_reconcile_result).toEqual(record?.result);
    const before = await reads(tx, [reconciler], undefined, false);
    expect(before.chain.valid).toBe(true);
    await writePlain(await itemsOf(tx, [reconciler]));
    expect(await reads(tx, [reconciler], undefined, false)).toEqual(before);
  });

  it('the search helper of the secret tests finds a string planted in a packed attribute of a stored item', async () => {
    const planted = `planted-${uid('s')}`;
    const a = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(
      caller(),
      transfer(a, { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: uid('key') }, { to: `${planted}-${'z'.repeat(16)}` }),
    );
    await h.drain();
    const action = await stored(keys.action(TENANT, a));
    expect(isPacked(action.input)).toBe(true);
    expect(JSON.stringify(action)).not.toContain(planted);
    expect(JSON.stringify(await scanReadable(h.table.client, h.table.tableName))).toContain(planted);
  });
});
