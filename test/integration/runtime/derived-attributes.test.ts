/**
 * Values an item says elsewhere, stored once (docs/table-design.md, "Attributes that repeat the item"):
 * an execute, a compensation and a planned commit leave markers where their items repeated their own
 * attributes (transaction contexts, the plan's IDs and capability, the compensation target, the envelope's
 * capability, mode and idempotency key), every reader sees the values, and items written the old way
 * (values in full) read, replay, commit and compensate exactly as before. Against DynamoDB Local and the
 * real queue, through the Runtime.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENESIS_RECEIPT_ATTRIBUTE, keys, receiptAttribute } from '../../../lib/aws/dynamo/table-design.js';
import { idempotencyKeyHash } from '../../../lib/ports/idempotency-store.js';
import { readableItem } from '../../support/packed-items.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

type Item = Record<string, unknown>;
type Key = { PK: string; SK: string };

const provider = new TestProvider();
let h: Harness;
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-derived' });
});
afterAll(async () => h.destroy());

/** An item as stored, its packed attributes decoded (test/support/packed-items.ts): written back, it is the plain shape. */
const raw = async (key: Key): Promise<Item> =>
  readableItem((await h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: key, ConsistentRead: true }))).Item as Item);

/** Rewrites a transaction and an action item as the code before wrote them: every value in full, as the stores read them. */
async function writeOldWay(tx: string, actionIds: readonly string[]): Promise<void> {
  const record = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
  const item = await raw(keys.transaction(TENANT, tx));
  await h.table.client.send(
    new PutCommand({
      TableName: h.table.tableName,
      Item: { ...item, data: record?.data, ...(record?.plan !== undefined ? { plan: record.plan } : {}) },
    }),
  );
  for (const a of actionIds) {
    const action = await h.stores.actions.get({ tenant_id: TENANT, action_id: a });
    const { id: _id, input: _input, ...envelope } = action?.action ?? { id: a, input: {} };
    await h.table.client.send(new PutCommand({ TableName: h.table.tableName, Item: { ...(await raw(keys.action(TENANT, a))), action: envelope } }));
  }
}

async function executed(idempotency_key?: string) {
  const a = uid('a');
  const tx = uid('tx');
  const envelope = transfer(a, { transaction: { mode: 'execute', transaction_id: tx }, ...(idempotency_key !== undefined ? { idempotency_key } : {}) });
  await h.runtime.submit(caller(), envelope);
  expect(await h.drain()).toMatchObject([{ disposition: 'settled', transaction_status: 'committed' }]);
  return { a, tx, envelope };
}

/** What the readers answer of a transaction and its actions. */
async function reads(tx: string, actionIds: readonly string[], visible = true) {
  return {
    record: await h.table.store.get({ tenant_id: TENANT, transaction_id: tx }),
    view: await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { result: true, receipts: true }),
    actions: await Promise.all(actionIds.map((a) => h.stores.actions.get({ tenant_id: TENANT, action_id: a }))),
    // The caller's view of its actions (a reconcile action is the runtime service's, not the caller's).
    public: visible ? await Promise.all(actionIds.map((a) => h.runtime.getAction(caller(), TENANT, a))) : [],
  };
}

async function compensated(a: string) {
  const k = { ...transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: a } }), capability_id: 'pay.transfer' };
  expect((await h.runtime.submit(caller(), k)).disposition).toBe('accepted');
  const [settled] = await h.drain();
  expect(settled).toMatchObject({ disposition: 'settled', transaction_status: 'compensated' });
  return { k: k.id, own: settled?.transaction_id as string };
}

describe('Values an item says elsewhere, stored once', () => {
  it('an execute stores its transaction context and its envelope fields as markers; the stores read the values', async () => {
    const idemKey = uid('key');
    const { a, tx, envelope } = await executed(idemKey);
    const actionItem = await raw(keys.action(TENANT, a));
    expect(actionItem.action).toMatchObject({ capability_id: true, idempotency_key: true, transaction: { mode: true, transaction_id: tx } });
    expect((await raw(keys.transaction(TENANT, tx))).data).toMatchObject({ transaction_context: true });

    const read = await reads(tx, [a]);
    expect(read.actions[0]?.action).toEqual({ ...envelope, input: envelope.input });
    expect(read.record?.data.transaction_context).toEqual({ mode: 'execute', transaction_id: tx });
    // The replay gate compares the stored context with the resubmitted envelope's: the same action is a replay.
    const calls = provider.count('invoke', tx);
    expect(await h.runtime.submit(caller(), envelope)).toMatchObject({ disposition: 'replayed' });
    expect(provider.count('invoke', tx)).toBe(calls);
  });

  it("a compensation's record stores its context and its target's action ID as markers; the worker and the view see the values", async () => {
    const { a, tx } = await executed();
    const { k, own } = await compensated(a);
    const item = await raw(keys.transaction(TENANT, own));
    expect(item.data).toMatchObject({ transaction_context: true, compensation: { target_action_id: true, target_transaction_id: tx } });
    const read = await reads(own, [k]);
    expect(read.record?.data).toMatchObject({
      transaction_context: { mode: 'compensate', transaction_id: own, compensation_for: a },
      compensation: { target_action_id: a, target_transaction_id: tx },
    });
    expect(read.view.links).toMatchObject({ compensation_for: a });
    const call = provider.calls.find((c) => c.method === 'compensate' && c.action_id === k);
    expect(call?.memory?.compensation).toMatchObject({ original_action_id: a, original_transaction_id: tx });
  });

  it('a planned commit stores the plan fields its record holds and the commit context as markers; the view shows the plan in full', async () => {
    const tx = uid('tx');
    const p = uid('p');
    await h.runtime.submit(caller(), transfer(p, { transaction: { mode: 'plan', transaction_id: tx } }));
    const planned = await reads(tx, [p]);
    expect((await raw(keys.transaction(TENANT, tx))).plan).toMatchObject({ transaction_id: true, plan_id: true, capability_id: true });
    expect(planned.view.plan).toMatchObject({ transaction_id: tx, plan_id: `plan:${tx}`, capability_id: 'pay.transfer', planning_action_id: p });

    const c = uid('c');
    await h.runtime.submit(caller(), transfer(c, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }));
    expect(await h.drain()).toMatchObject([{ disposition: 'settled', transaction_status: 'committed' }]);
    expect((await raw(keys.transaction(TENANT, tx))).data).toMatchObject({ transaction_context: true, commit_transaction_context: true });
    const committed = await reads(tx, [p, c]);
    expect(committed.view.plan).toEqual(planned.view.plan);
    expect(committed.record?.data).toMatchObject({
      transaction_context: { mode: 'plan', transaction_id: tx },
      commit_transaction_context: { mode: 'commit', transaction_id: tx, plan_id: `plan:${tx}` },
    });
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('items written the old way (every value in full) read exactly as before, replay, and are compensated', async () => {
    const idemKey = uid('key');
    const { a, tx, envelope } = await executed(idemKey);
    const before = await reads(tx, [a]);
    await writeOldWay(tx, [a]);
    expect((await raw(keys.transaction(TENANT, tx))).data).toMatchObject({ transaction_context: { mode: 'execute', transaction_id: tx } });
    expect((await raw(keys.action(TENANT, a))).action).toMatchObject({ capability_id: 'pay.transfer', idempotency_key: idemKey });
    expect(await reads(tx, [a])).toEqual(before);
    expect(await h.runtime.submit(caller(), envelope)).toMatchObject({ disposition: 'replayed' });

    const { k, own } = await compensated(a);
    const compensation = await reads(own, [k]);
    await writeOldWay(own, [k]);
    expect((await raw(keys.transaction(TENANT, own))).data).toMatchObject({ compensation: { target_action_id: a } });
    expect(await reads(own, [k])).toEqual(compensation);
    expect((await h.verifyChain(own)).valid).toBe(true);
  });

  it('a plan written the old way is committed as before, and its view is unchanged', async () => {
    const tx = uid('tx');
    const p = uid('p');
    await h.runtime.submit(caller(), transfer(p, { transaction: { mode: 'plan', transaction_id: tx } }));
    const before = await reads(tx, [p]);
    await writeOldWay(tx, [p]);
    expect((await raw(keys.transaction(TENANT, tx))).plan).toMatchObject({ transaction_id: tx, plan_id: `plan:${tx}` });
    expect(await reads(tx, [p])).toEqual(before);

    const c = uid('c');
    await h.runtime.submit(caller(), transfer(c, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }));
    expect(await h.drain()).toMatchObject([{ disposition: 'settled', transaction_status: 'committed' }]);
    const after = await reads(tx, [p, c]);
    expect(after.view.plan).toEqual(before.view.plan);
    expect(after.record?.data.commit_transaction_context).toEqual({ mode: 'commit', transaction_id: tx, plan_id: `plan:${tx}` });
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it("a reconcile's terminal settlement stores its answer and evidence as markers of the final result; back to outcome_unknown keeps them in full", async () => {
    const uncertain = async () => {
      const tx = uid('tx');
      await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
      await h.drain();
      const rec = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
      expect(rec?.status).toBe('outcome_unknown');
      h.clock.advance(5_000);
      return { tx, operation: rec?.provider_operation?.operation_id as string };
    };
    const reconcile = (tx: string) => h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });

    const { tx } = await uncertain();
    expect(await reconcile(tx)).toMatchObject({ disposition: 'reconciled', transaction_status: 'reconciled' });
    expect((await raw(keys.transaction(TENANT, tx))).data).toMatchObject({ last_reconcile_result: true, last_reconciliation: true });
    const rec = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
    expect(rec?.result?.metadata).toMatchObject({ reconciliation: { terminal: true } });
    expect(rec?.data.last_reconcile_result).toEqual(rec?.result);
    expect(rec?.data.last_reconciliation).toEqual(rec?.result?.metadata?.reconciliation);
    const reconciler = rec?.data.reconcile_action_id as string;
    const before = await reads(tx, [reconciler], false);
    await writeOldWay(tx, [reconciler]);
    expect((await raw(keys.transaction(TENANT, tx))).data).toMatchObject({ last_reconcile_result: rec?.result });
    expect(await reads(tx, [reconciler], false)).toEqual(before);
    expect((await h.verifyChain(tx)).valid).toBe(true);

    const pending = await uncertain();
    provider.operations.set(pending.operation, 'pending');
    expect(await reconcile(pending.tx)).toMatchObject({ disposition: 'still_unknown' });
    const item = await raw(keys.transaction(TENANT, pending.tx));
    expect(item.data).toMatchObject({ last_reconcile_result: { status: 'failed' } });
    expect((item.data as Item).last_reconciliation).not.toBe(true);
  });
  it('an execute stores no time or counter that says nothing new: no reservation updated_at until an update, no receipt created_at, no counter or fence at 0, its result reference and last attempt as markers', async () => {
    const idemKey = uid('key');
    const { a, tx } = await executed(idemKey);
    const principal = caller().principal.id;
    const idemItem = await raw(keys.idempotency(TENANT, principal, idempotencyKeyHash(idemKey)));
    expect(idemItem).not.toHaveProperty('updated_at');
    const reservation = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: principal, key: idemKey });
    expect(reservation?.updated_at).toBe(reservation?.created_at);
    const txnItem = await raw(keys.transaction(TENANT, tx));
    expect(txnItem).not.toHaveProperty('reconcile_attempts');
    expect(txnItem).not.toHaveProperty('fence');
    expect(txnItem.result_ref).toBe(true);
    // The final record's last attempt: its action and outcome are the record's own action_id and status.
    expect((txnItem.data as Item).last_attempt).toMatchObject({ action_id: true, outcome: true });
    const record = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
    expect(record).toMatchObject({ reconcile_attempts: 0, fence: 0, result_ref: a, data: { last_attempt: { action_id: a, outcome: 'committed' } } });
    const receipts = await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx });
    expect(receipts.items.length).toBeGreaterThanOrEqual(2);
    // The receipts are inside the record item (docs/table-design.md, "Receipts inside the record"), with no time of their own.
    expect(receipts.items[0]?.receipt.seq).toBe(0);
    expect(txnItem[GENESIS_RECEIPT_ATTRIBUTE]).toMatchObject({ receipt: { status: 'prepared', event: 'transaction.prepared' } });
    for (const r of receipts.items) expect(txnItem[receiptAttribute(r.receipt.seq)]).not.toHaveProperty('created_at');
    for (const r of receipts.items.slice(1)) expect(txnItem[receiptAttribute(r.receipt.seq)]).toMatchObject({ receipt: { hash: r.receipt.hash } });
    expect((await h.verifyChain(tx)).valid).toBe(true);

    // The counter starts at its first increment (a reconciliation's begin), from an absent attribute.
    const utx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: utx } }, { scenario: 'uncertain' }));
    await h.drain();
    expect(await raw(keys.transaction(TENANT, utx))).not.toHaveProperty('reconcile_attempts');
    h.clock.advance(5_000);
    const op = (await h.table.store.get({ tenant_id: TENANT, transaction_id: utx }))?.provider_operation?.operation_id as string;
    provider.operations.set(op, 'pending');
    expect(await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: utx, reason: 'schedule' })).toMatchObject({
      disposition: 'still_unknown',
    });
    expect((await raw(keys.transaction(TENANT, utx))).reconcile_attempts).toBe(1);
    expect((await h.table.store.get({ tenant_id: TENANT, transaction_id: utx }))?.reconcile_attempts).toBe(1);
  });
});
