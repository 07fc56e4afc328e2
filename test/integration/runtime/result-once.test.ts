/**
 * The result stored once (docs/table-design.md, "The result stored once"): the
 * atomic settlement of an execute, commit or compensate whose record is bound
 * to the settling action writes `result_ref` (that action's ID; stored as the
 * marker `true`, since it is the record's own `action_id`) on the record
 * instead of a copy of the result, when the action is kept at least as long as
 * the record; every reader resolves it through the action. Against DynamoDB
 * Local and the real queue, through the Runtime.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyDocument } from '../../../dev/cli/verify.js';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import { readableItem } from '../../support/packed-items.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

type Item = Record<string, unknown>;

const provider = new TestProvider();
let h: Harness;
/** Actions kept for one day, records for one day: the action outlives nothing, so the record keeps its result. */
let shortActions: Harness;
/** A deployed configuration's retention (lib/runtime/config.ts DEPLOYED_DEFAULTS): records and actions 400 days. */
let deployed: Harness;
beforeAll(async () => {
  [h, shortActions, deployed] = await Promise.all([
    createHarness({ connectors: [testConnector(provider)], prefix: 'rt-once' }),
    createHarness({
      connectors: [testConnector(provider)],
      prefix: 'rt-once-short',
      config: { transaction_retention_days: 2, action_retention_seconds: 86_400 },
    }),
    createHarness({
      connectors: [testConnector(provider)],
      prefix: 'rt-once-deployed',
      config: { transaction_retention_days: 400, action_retention_seconds: 400 * 86_400 },
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([h.destroy(), shortActions.destroy(), deployed.destroy()]);
});

const rawTxn = async (hh: Harness, tx: string): Promise<Item> =>
  readableItem(
    (await hh.table.client.send(new GetCommand({ TableName: hh.table.tableName, Key: keys.transaction(TENANT, tx), ConsistentRead: true }))).Item as Item,
  );

async function executed(hh: Harness = h): Promise<{ a: string; tx: string; envelope: ReturnType<typeof transfer> }> {
  const a = uid('a');
  const tx = uid('tx');
  const envelope = transfer(a, { transaction: { mode: 'execute', transaction_id: tx } });
  await hh.runtime.submit(caller(), envelope);
  const outcomes = await hh.drain();
  expect(outcomes).toMatchObject([{ disposition: 'settled', transaction_status: 'committed' }]);
  return { a, tx, envelope };
}

/** The view with its result and receipts, verified as `aip verify` does (the chain, and the result against its digest). */
async function verifiedView(hh: Harness, tx: string) {
  const view = await hh.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { result: true, receipts: true });
  const verdict = verifyDocument({ transaction: view }, 'api');
  return { view, verdict };
}

describe('The result stored once, on the settling action', () => {
  it("a settled execute's record carries no result, only the reference; the view, the chain and its digest show the action's result", async () => {
    const { a, tx } = await executed();
    const item = await rawTxn(h, tx);
    const action = await h.stores.actions.get({ tenant_id: TENANT, action_id: a });
    expect(action?.result).toMatchObject({ status: 'completed', output: { amount: expect.any(Number) } });
    // The reference is the record's own bound action: the item stores the marker, the store reads the action's ID.
    expect(item).toMatchObject({ status: 'committed', action_id: a, result_ref: true });
    expect(item).not.toHaveProperty('result');
    expect(await h.table.store.get({ tenant_id: TENANT, transaction_id: tx })).toMatchObject({ result_ref: a });

    const { view, verdict } = await verifiedView(h, tx);
    expect(view.action_result).toEqual(action?.result);
    expect(verdict).toMatchObject({ valid: true, verdict: 'valid', result_checked: true });
    // The settlement's receipt still names the digest of the result the action stores.
    const chain = await h.verifyChain(tx);
    expect(chain.valid).toBe(true);
    const receipts = (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items;
    expect(receipts.at(-1)?.receipt.result_digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a resubmission of the settled execute is replayed with the same result (the replay gate reads it through the action)', async () => {
    const { a, tx, envelope } = await executed();
    const action = await h.stores.actions.get({ tenant_id: TENANT, action_id: a });
    const calls = provider.count('invoke', tx);
    const replay = await h.runtime.submit(caller(), envelope);
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result).toMatchObject({ ...action?.result, replayed: true });
    expect(await h.drain()).toEqual([]);
    expect(provider.count('invoke', tx)).toBe(calls);
  });

  it('the compensation of that transaction finds the original result through the action, and its own record references the compensating action', async () => {
    const { a, tx } = await executed();
    const original = (await h.stores.actions.get({ tenant_id: TENANT, action_id: a }))?.result;
    const k = { ...transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: a } }), capability_id: 'pay.transfer' };
    expect((await h.runtime.submit(caller(), k)).disposition).toBe('accepted');
    const [settled] = await h.drain();
    expect(settled).toMatchObject({ disposition: 'settled', transaction_status: 'compensated' });
    const call = provider.calls.find((c) => c.method === 'compensate' && c.action_id === k.id);
    expect(call?.memory?.compensation).toMatchObject({ original_action_id: a, original_transaction_id: tx, original_result: original });

    const own = settled?.transaction_id as string;
    const ownItem = await rawTxn(h, own);
    expect(ownItem).toMatchObject({ status: 'compensated', action_id: k.id, result_ref: true });
    expect(ownItem).not.toHaveProperty('result');
    const { view, verdict } = await verifiedView(h, own);
    expect(view.action_result).toEqual((await h.stores.actions.get({ tenant_id: TENANT, action_id: k.id }))?.result);
    expect(verdict).toMatchObject({ valid: true, verdict: 'valid', result_checked: true });
  });

  it('a planned commit settles its record with the reference to the commit action', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }));
    const c = uid('c');
    await h.runtime.submit(caller(), transfer(c, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }));
    expect(await h.drain()).toMatchObject([{ disposition: 'settled', transaction_status: 'committed' }]);
    const item = await rawTxn(h, tx);
    expect(item).toMatchObject({ status: 'committed', action_id: c, result_ref: true });
    expect(await h.table.store.get({ tenant_id: TENANT, transaction_id: tx })).toMatchObject({ result_ref: c });
    expect(item).not.toHaveProperty('result');
    const { view, verdict } = await verifiedView(h, tx);
    expect(view.action_result).toEqual((await h.stores.actions.get({ tenant_id: TENANT, action_id: c }))?.result);
    expect(verdict).toMatchObject({ valid: true, verdict: 'valid', result_checked: true });
  });

  it('a record written the old way (its own result, no reference) still reads, replays, verifies and is compensated as before', async () => {
    const { a, tx, envelope } = await executed();
    const action = await h.stores.actions.get({ tenant_id: TENANT, action_id: a });
    // As an older runtime left it: the result on the record. A distinct marker shows which copy is read.
    const legacy = { ...action?.result, metadata: { copy: 'record' } };
    await h.table.client.send(
      new UpdateCommand({
        TableName: h.table.tableName,
        Key: keys.transaction(TENANT, tx),
        UpdateExpression: 'SET #r = :r REMOVE #ref',
        ExpressionAttributeNames: { '#r': 'result', '#ref': 'result_ref' },
        ExpressionAttributeValues: { ':r': legacy },
      }),
    );
    const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { result: true });
    expect(view.action_result).toEqual(legacy);
    const replay = await h.runtime.submit(caller(), envelope);
    expect(replay.action_result).toMatchObject({ status: 'completed', output: action?.result?.output, replayed: true });
    expect((await h.verifyChain(tx)).valid).toBe(true);

    const k = { ...transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: a } }), capability_id: 'pay.transfer' };
    expect((await h.runtime.submit(caller(), k)).disposition).toBe('accepted');
    expect(await h.drain()).toMatchObject([{ disposition: 'settled', transaction_status: 'compensated' }]);
    const call = provider.calls.find((c) => c.method === 'compensate' && c.action_id === k.id);
    expect(call?.memory?.compensation).toMatchObject({ original_result: legacy });
  });

  it('an outcome_unknown record under a retention references the failed action; the reconciled record then holds its own result', async () => {
    const a = uid('a');
    const tx = uid('tx');
    await deployed.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
    expect(await deployed.drain()).toMatchObject([{ transaction_status: 'outcome_unknown' }]);
    const open = await rawTxn(deployed, tx);
    const action = await deployed.stores.actions.get({ tenant_id: TENANT, action_id: a });
    // The action is kept 400 days from its settlement, the record 400 days from the write that ends it: it needs the
    // reference only while it is open, and that write stores its own result.
    expect(open).toMatchObject({ status: 'outcome_unknown', result_ref: true });
    expect(open).not.toHaveProperty('result');
    expect(action?.result).toMatchObject({ status: 'failed', error: { uncertain_outcome: true } });
    const { view: openView } = await verifiedView(deployed, tx);
    expect(openView.action_result).toEqual(action?.result);

    deployed.clock.advance(5_000);
    expect(await deployed.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' })).toMatchObject({
      transaction_status: 'reconciled',
    });
    const ended = await rawTxn(deployed, tx);
    expect(ended).toMatchObject({ status: 'reconciled', result: { metadata: { reconciliation: { terminal: true } } } });
    expect(ended).not.toHaveProperty('result_ref');
    const { verdict } = await verifiedView(deployed, tx);
    expect(verdict).toMatchObject({ valid: true, verdict: 'valid' });
  });

  it('an outcome_unknown record whose action is kept for less time than the record will be keeps its own result', async () => {
    const a = uid('a');
    const tx = uid('tx');
    await shortActions.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
    expect(await shortActions.drain()).toMatchObject([{ transaction_status: 'outcome_unknown' }]);
    const open = await rawTxn(shortActions, tx);
    const action = await shortActions.stores.actions.get({ tenant_id: TENANT, action_id: a });
    expect(open).toMatchObject({ status: 'outcome_unknown', result: action?.result });
    expect(open).not.toHaveProperty('result_ref');
  });

  it('an action retained for less time than its record: the record keeps its own result, as before', async () => {
    const { a, tx } = await executed(shortActions);
    const item = await rawTxn(shortActions, tx);
    const action = await shortActions.stores.actions.get({ tenant_id: TENANT, action_id: a });
    expect(item).toMatchObject({ status: 'committed', result: action?.result });
    expect(item).not.toHaveProperty('result_ref');
    const { view, verdict } = await verifiedView(shortActions, tx);
    expect(view.action_result).toEqual(action?.result);
    expect(verdict).toMatchObject({ valid: true, verdict: 'valid', result_checked: true });
  });
});
