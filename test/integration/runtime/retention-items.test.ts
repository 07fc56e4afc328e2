/**
 * A retained record's items carry their ttl from their own write (issue 21, change 19; lib/runtime/retention.ts):
 * a record created open under a retention says what its other items hold (`items_ttl`: its creation + retention +
 * the allowance), each of them is written with it, and a prompt terminal write stamps nothing. A late one stamps
 * every item as before; an escalated record's items lose their ttl until its resolution stamps them; a record
 * written before (no `items_ttl`) is stamped as before. On DynamoDB Local, with the runtime's stepped clock.
 */
import { randomBytes } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamoStores } from '../../../lib/aws/dynamo/stores.js';
import { receiptAttributeSeq } from '../../../lib/aws/dynamo/table-design.js';
import { ITEMS_TTL_ALLOWANCE_SECONDS } from '../../../lib/runtime/retention.js';
import { readableItem } from '../../support/packed-items.js';
import { committingJournal } from '../../support/store-writes.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, operator, type Harness } from './support.js';

const DAYS = 400;
const DAY_S = 86_400;
let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({
    connectors: [testConnector(provider, { compensationWindowMs: 60 * 60_000 })],
    prefix: 'rt-retain-items',
    config: { transaction_retention_days: DAYS, reconcile: { max_attempts: 1, base_delay_ms: 5_000, max_delay_ms: 60_000 } },
  });
});
afterAll(async () => h.destroy());

interface Stored {
  readonly PK: string | undefined;
  readonly SK: string | undefined;
  readonly ttl: number | undefined;
  readonly items_ttl: number | undefined;
  readonly receipt_count?: number;
  readonly inside?: number[];
}

async function scan(): Promise<Stored[]> {
  const out: Stored[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await h.table.client.send(
      new ScanCommand({ TableName: h.table.tableName, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start as never } : {}) }),
    );
    for (const i of page.Items ?? [])
      out.push({
        PK: i.PK?.S,
        SK: i.SK?.S,
        ttl: i.ttl?.N !== undefined ? Number(i.ttl.N) : undefined,
        items_ttl: i.items_ttl?.N !== undefined ? Number(i.items_ttl.N) : undefined,
        // A record: its chain's length, and the seqs of the receipts it holds inside (docs/table-design.md, "Receipts inside the record").
        ...(i.SK?.S === 'TXN'
          ? {
              receipt_count: Number(i.receipt_count?.N ?? 0),
              inside: Object.keys(i)
                .map((name) => receiptAttributeSeq(name))
                .filter((seq): seq is number => seq !== undefined)
                .sort((a, b) => a - b),
            }
          : {}),
      });
    start = page.LastEvaluatedKey as Record<string, unknown> | undefined;
  } while (start !== undefined);
  return out;
}

/** The record item, its receipt items (in seq order), the seqs of the receipts inside the record, and its plan-ID item. */
async function itemsOf(tx: string, plan_id?: string) {
  const all = await scan();
  const own = all.filter((i) => i.PK === `TXN#${TENANT}#${tx}`);
  const record = own.find((i) => i.SK === 'TXN');
  const receipts = own.filter((i) => i.SK?.startsWith('RCPT#')).sort((a, b) => String(a.SK).localeCompare(String(b.SK)));
  const plan = plan_id !== undefined ? all.find((i) => i.PK === `PLAN#${TENANT}#${plan_id}`) : undefined;
  return { record, receipts, inside: record?.inside ?? [], plan };
}

/** Moves every receipt inside the record to its own item, as a chain written before; the store reads the record anew. */
async function asWrittenBefore(tx: string): Promise<void> {
  const key = { PK: `TXN#${TENANT}#${tx}`, SK: 'TXN' };
  const record = (await h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: key, ConsistentRead: true }))).Item as Record<string, unknown>;
  for (const [name, held] of Object.entries(record)) {
    const seq = receiptAttributeSeq(name);
    if (seq === undefined) continue;
    const body = readableItem({ g: held }).g as Record<string, unknown>;
    await h.table.client.send(new PutCommand({ TableName: h.table.tableName, Item: { PK: key.PK, SK: `RCPT#${String(seq).padStart(8, '0')}`, ...body } }));
    delete record[name];
  }
  await h.table.client.send(new PutCommand({ TableName: h.table.tableName, Item: record }));
  await get(tx);
}

const nowS = () => Math.floor(h.clock.now().getTime() / 1000);
const get = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });

async function executed(scenario: 'ok' | 'uncertain' = 'ok') {
  const a = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }, { scenario }));
  return { a, tx };
}

/** Every item of the transaction outlives its record, and the items written before the last hold the creation's ttl (nothing stamped them). */
function expectPromptlySettled(items: Awaited<ReturnType<typeof itemsOf>>, createdS: number) {
  const recordTtl = items.record?.ttl;
  expect(recordTtl).toBe(nowS() + DAYS * DAY_S);
  const itemsTtl = createdS + DAYS * DAY_S + ITEMS_TTL_ALLOWANCE_SECONDS;
  expect(items.record?.items_ttl).toBe(itemsTtl);
  // The terminal write's receipt, when it is an item of its own (inside the record, it shares the record's ttl).
  const last = `RCPT#${String(Number(items.record?.receipt_count) - 1).padStart(8, '0')}`;
  for (const r of items.receipts) expect(r.ttl).toBe(r.SK === last ? recordTtl : itemsTtl);
  if (items.plan !== undefined) expect(items.plan.ttl).toBe(itemsTtl);
  for (const i of [...items.receipts, ...(items.plan ? [items.plan] : [])]) expect(i.ttl).toBeGreaterThanOrEqual(recordTtl ?? Number.POSITIVE_INFINITY);
}

describe('a prompt terminal write stamps nothing: every item already outlasts the record', () => {
  it('execute', async () => {
    const created = nowS();
    const { tx } = await executed();
    await h.drain();
    expect((await get(tx))?.status).toBe('committed');
    const items = await itemsOf(tx);
    expect(items.receipts.length + items.inside.length).toBeGreaterThanOrEqual(2);
    expectPromptlySettled(items, created);
  });

  it('commit of a plan: the plan-ID item and the plan receipt hold the creation ttl', async () => {
    const created = nowS();
    const planned = await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan' } }));
    const { plan_id, transaction_id: tx } = planned.action_result.output as { plan_id: string; transaction_id: string };
    h.clock.advance(10 * 60_000); // committed within the plan's 15 minutes
    await h.runtime.submit(caller(), transfer(uid('c'), { transaction: { mode: 'commit', plan_id } }));
    await h.drain();
    expect((await get(tx))?.status).toBe('committed');
    const items = await itemsOf(tx, plan_id);
    expect(items.plan).toBeDefined();
    expect(items.receipts[0]?.SK).toBe('RCPT#00000000'); // a plan keeps its first receipt as an item
    expectPromptlySettled(items, created);
  });

  it('compensate', async () => {
    const { a } = await executed();
    await h.drain();
    const created = nowS();
    const k = uid('k');
    expect((await h.runtime.submit(caller(), transfer(k, { transaction: { mode: 'compensate', compensation_for: a } }))).disposition).toBe('accepted');
    await h.drain();
    const record = await h.table.store.get({ tenant_id: TENANT, action_id: k });
    expect(record?.status).toBe('compensated');
    const tx = record?.transaction_id as string;
    expectPromptlySettled(await itemsOf(tx), created);
  });

  it('dry run: created terminal, every item with the record ttl', async () => {
    const d = uid('d');
    await h.runtime.submit(caller(), transfer(d, { transaction: { mode: 'dry_run' } }));
    const record = await h.table.store.get({ tenant_id: TENANT, action_id: d });
    expect(record?.status).toBe('dry_run_completed');
    const tx = record?.transaction_id as string;
    const items = await itemsOf(tx);
    expect(items.record?.ttl).toBe(nowS() + DAYS * DAY_S);
    expect(items.record?.items_ttl).toBeUndefined();
    for (const r of items.receipts) expect(r.ttl).toBe(items.record?.ttl);
  });
});

describe('stamped as before when the items do not cover the record', () => {
  it('a settlement later than the allowance stamps every item with the record ttl', async () => {
    const { tx } = await executed();
    h.clock.advance((ITEMS_TTL_ALLOWANCE_SECONDS + 3600) * 1000);
    await h.drain();
    const items = await itemsOf(tx);
    const recordTtl = nowS() + DAYS * DAY_S;
    expect(items.record?.ttl).toBe(recordTtl);
    expect(items.record?.items_ttl).toBe(recordTtl);
    expect(items.receipts.length + items.inside.length).toBeGreaterThanOrEqual(2);
    for (const r of items.receipts) expect(r.ttl).toBe(recordTtl);
  });

  it('an escalated record keeps its items without a ttl; its resolution stamps them all', async () => {
    const created = nowS();
    const { tx } = await executed('uncertain');
    await h.drain();
    let rec = await get(tx);
    expect(rec?.status).toBe('outcome_unknown');
    // Waiting for its reconciliation, the record's items keep the creation's ttl.
    let items = await itemsOf(tx);
    expect(items.record?.items_ttl).toBe(created + DAYS * DAY_S + ITEMS_TTL_ALLOWANCE_SECONDS);
    for (const r of items.receipts) expect(r.ttl).toBe(items.record?.items_ttl);
    if (rec?.provider_operation !== undefined) provider.operations.set(rec.provider_operation.operation_id, 'pending');
    if (rec?.next_reconcile_at !== undefined) h.clock.advance(Math.max(0, Date.parse(rec.next_reconcile_at) - h.clock.now().getTime()));
    await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    rec = await get(tx);
    expect(rec?.escalated_at).toBeDefined();
    items = await itemsOf(tx);
    expect(items.record?.ttl).toBeUndefined();
    expect(items.record?.items_ttl).toBeUndefined();
    expect(items.receipts.length).toBeGreaterThanOrEqual(2);
    for (const r of items.receipts) expect(r.ttl).toBeUndefined();
    // A human resolves it much later than any allowance: every item gets the terminal record's ttl.
    h.clock.advance(30 * DAY_S * 1000);
    await h.runtime.resolve(operator, TENANT, tx, { effect: 'committed', reason: 'seen at the provider' });
    expect((await get(tx))?.status).toBe('reconciled');
    items = await itemsOf(tx);
    const recordTtl = nowS() + DAYS * DAY_S;
    expect(items.record?.ttl).toBe(recordTtl);
    for (const r of items.receipts) expect(r.ttl).toBe(recordTtl);
  });
});

describe('the journal decides from the record it holds', () => {
  const base = (tx: string) => ({
    tenant_id: TENANT,
    transaction_id: tx,
    status: 'prepared' as const,
    mode: 'execute' as const,
    capability_id: 'pay.transfer',
    action_id: uid('a'),
    principal: { id: 'agent-1', kind: 'agent' as const },
    data: {},
  });
  const checkpoints = async (j: ReturnType<typeof committingJournal>, tx: string, n: number) => {
    let record = await j.create(base(tx), 'transaction.prepared');
    for (let i = 0; i < n; i++) record = await j.checkpoint(record, { provider: 'pay', operation_id: 'op-1' });
    return record;
  };

  it('a record written before (no items_ttl) is stamped as before', async () => {
    const tx = uid('tx');
    const before = committingJournal(h.table.stores.uow, h.clock);
    const record = await checkpoints(before, tx, 3);
    expect(record.items_ttl).toBeUndefined();
    // Its receipts as a version before wrote them: items of their own.
    await asWrittenBefore(tx);
    const now = committingJournal(h.table.stores.uow, h.clock, undefined, () => DAYS);
    await now.settle(record, { to: 'committed', from: ['prepared'], retention: { days: DAYS } });
    const items = await itemsOf(tx);
    // Seq 0 to 3 items of their own, every one stamped; the settlement's receipt inside the record, under its ttl.
    expect(items.receipts).toHaveLength(4);
    for (const r of items.receipts) expect(r.ttl).toBe(nowS() + DAYS * DAY_S);
    expect(items.inside).toEqual([4]);
    expect(items.record?.ttl).toBe(nowS() + DAYS * DAY_S);
    expect(items.record?.items_ttl).toBeUndefined();
  });

  it('a retention dropped since the creation: the terminal record is kept, and its items lose their ttl', async () => {
    const tx = uid('tx');
    const j = committingJournal(h.table.stores.uow, h.clock, undefined, () => DAYS);
    const record = await checkpoints(j, tx, 2);
    expect(record.items_ttl).toBe(nowS() + DAYS * DAY_S + ITEMS_TTL_ALLOWANCE_SECONDS);
    await j.settle(record, { to: 'committed', from: ['prepared'] });
    const items = await itemsOf(tx);
    expect(items.record?.ttl).toBeUndefined();
    expect(items.record?.items_ttl).toBeUndefined();
    for (const r of items.receipts) expect(r.ttl).toBeUndefined();
  });

  it('a retention lengthened since the creation stamps every item with the longer ttl', async () => {
    const tx = uid('tx');
    const j = committingJournal(h.table.stores.uow, h.clock, undefined, () => 30);
    const record = await checkpoints(j, tx, 2);
    await j.settle(record, { to: 'committed', from: ['prepared'], retention: { days: DAYS } });
    const items = await itemsOf(tx);
    for (const r of items.receipts) expect(r.ttl).toBe(nowS() + DAYS * DAY_S);
  });

  it("an escalation by a process holding no image of the record removes its first receipt item's ttl before the write: an interrupted one leaves it kept, never expiring", async () => {
    const tx = uid('tx');
    const j = committingJournal(h.table.stores.uow, h.clock, undefined, () => DAYS);
    // Evidence too large for the record's write unit: the first receipt is its own item.
    let record = await j.create(base(tx), 'transaction.prepared', { note: randomBytes(600).toString('base64') });
    record = await j.checkpoint(record, { provider: 'pay', operation_id: 'op-1' });
    record = await j.settle(record, { to: 'outcome_unknown', from: ['prepared'] });
    // Seq 0 its own item; the checkpoint's and the settlement's inside the record.
    expect((await itemsOf(tx)).receipts.map((r) => r.SK)).toEqual(['RCPT#00000000']);
    expect((await itemsOf(tx)).inside).toEqual([1, 2]);
    // Another process (the reconcile consumer): its store holds no image, so it cannot tell where seqs 0 to 2 are.
    const other = createDynamoStores({ client: h.table.client, tableName: h.table.tableName, now: h.clock.now, transactions: { knownImages: 0 } });
    const consumer = committingJournal(other.uow, h.clock, undefined, () => DAYS);
    const escalate = (held: typeof record) =>
      consumer.transition(held, { operation: 'escalate', from: ['outcome_unknown'], to: 'outcome_unknown' }, 'transaction.escalated', { escalated: true });
    // A write that does not land (here: refused, as a crash would leave it) after the removal it could not hold.
    await expect(escalate({ ...record, revision: record.revision + 1 })).rejects.toThrow();
    let items = await itemsOf(tx);
    expect(items.receipts[0]?.ttl).toBeUndefined();
    expect(items.record?.items_ttl).toBe(record.items_ttl);
    await escalate(record);
    items = await itemsOf(tx);
    expect(items.record?.items_ttl).toBeUndefined();
    // Every receipt stored once (the escalation's inside the record or its own item, as its estimate decided); the
    // stamps of seqs 1 and 2, inside the record, were refused and ignored: no item was made for them.
    const seqs = [...items.receipts.map((r) => Number(String(r.SK).slice('RCPT#'.length))), ...items.inside].sort((a, b) => a - b);
    expect(seqs).toEqual([0, 1, 2, 3]);
    expect(items.receipts.map((r) => r.SK)).not.toContain('RCPT#00000001');
    for (const r of items.receipts) expect(r.ttl).toBeUndefined();
  });

  it('a record still open when less than the allowance is left of its items ttl: the next write removes it', async () => {
    const tx = uid('tx');
    const j = committingJournal(h.table.stores.uow, h.clock, undefined, () => 1);
    let record = await checkpoints(j, tx, 1);
    expect(record.items_ttl).toBe(nowS() + DAY_S + ITEMS_TTL_ALLOWANCE_SECONDS);
    h.clock.advance(36 * 3_600_000);
    record = await j.checkpoint(record, { provider: 'pay', operation_id: 'op-1' });
    expect(record.items_ttl).toBeUndefined();
    const items = await itemsOf(tx);
    for (const r of items.receipts) expect(r.ttl).toBeUndefined();
    // Its terminal write stamps them all as before.
    await j.settle(record, { to: 'committed', from: ['prepared'], retention: { days: 1 } });
    for (const r of (await itemsOf(tx)).receipts) expect(r.ttl).toBe(nowS() + DAY_S);
  });
});
