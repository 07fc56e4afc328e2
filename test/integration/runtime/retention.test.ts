/**
 * Retention: DataContract.retention_days on every item of
 * a transaction. The terminal write gives the record its ttl; every receipt and
 * the plan-ID item expire no earlier (written with the creation's ttl plus the
 * allowance, or stamped by that write: retention-items.test.ts); the actions
 * expire after the same number of days; a record that is not terminal
 * (outcome_unknown, escalated) never carries a ttl, and its items keep theirs
 * only while they outlast any prompt settlement.
 */
import { committingJournal } from '../../support/store-writes.js';
import * as z from 'zod';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import { receiptAttributeSeq } from '../../../lib/aws/dynamo/table-design.js';
import { ITEMS_TTL_ALLOWANCE_SECONDS } from '../../../lib/runtime/retention.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

const DAYS = 30;
/** The receipt items one terminal write stamps in its own TransactWriteItems (lib/aws/dynamo/transaction-store.ts STAMP_LIMIT). */
const STAMP_LIMIT_OF_ONE_WRITE = 90;
const In = z.strictObject({ n: z.int(), lose: z.boolean().default(false) });
const fast = { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 10_000 };

function archive() {
  const cap = (id: string, retention?: number) =>
    defineCapability({
      id,
      input: In,
      output: z.strictObject({ ok: z.boolean() }),
      contract: {
        transaction: { modes: ['plan', 'execute', 'commit', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
        data: { redaction_required: false, ...(retention !== undefined ? { retention_days: retention } : {}) },
        execution: fast,
      },
    }).implement({
      invoke: async (input, ctx, call) => {
        await ctx.transaction_checkpoint.checkpoint({ provider: 'archive', operation_id: `op-${call.action.id}` });
        if (input.lose) throw call.failure({ code: 'archive.lost', category: 'temporary', retryable: false, uncertain_outcome: true } as never);
        return { ok: true };
      },
      commit: async (_input, ctx, call) => {
        await ctx.transaction_checkpoint.checkpoint({ provider: 'archive', operation_id: `op-${call.action.id}` });
        return { ok: true };
      },
      reconcile: async () => ({ terminal: true as const, original_commit_completed: true, output: { ok: true } }),
    });
  return defineConnector({ id: 'archive', version: '1.0.0', capabilities: [cap('archive.kept', DAYS), cap('archive.forever')] });
}

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ connectors: [archive()], prefix: 'rt-retain' });
});
afterAll(async () => h.destroy());

async function items(): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await h.table.client.send(
      new ScanCommand({ TableName: h.table.tableName, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start as never } : {}) }),
    );
    out.push(
      ...(page.Items ?? []).map((i) => ({
        PK: i.PK?.S,
        SK: i.SK?.S,
        ttl: i.ttl?.N !== undefined ? Number(i.ttl.N) : undefined,
        // A record: its chain's length, and the receipts it holds inside (docs/table-design.md, "Receipts inside the record").
        ...(i.SK?.S === 'TXN'
          ? { receipt_count: Number(i.receipt_count?.N ?? 0), inside: Object.keys(i).filter((name) => receiptAttributeSeq(name) !== undefined).length }
          : {}),
      })),
    );
    start = page.LastEvaluatedKey as Record<string, unknown> | undefined;
  } while (start !== undefined);
  return out;
}

const ofTransaction = async (tx: string) => (await items()).filter((i) => i.PK === `TXN#${TENANT}#${tx}`);
const expected = () => Math.floor(h.clock.now().getTime() / 1000) + DAYS * 86_400;

/**
 * The record, the receipts inside it, and its last receipt (the terminal write's) if that is an item of its own
 * expire at `recordTtl`; every other item holds the ttl it was written with, `itemsTtl` (the record's creation +
 * retention + the allowance): nothing stamped them.
 */
function expectCovered(txItems: Record<string, unknown>[], recordTtl: number, itemsTtl: number) {
  const record = txItems.find((i) => i.SK === 'TXN');
  const last = `RCPT#${String(Number(record?.receipt_count) - 1).padStart(8, '0')}`;
  for (const i of txItems) expect(i.ttl).toBe(i.SK === 'TXN' || i.SK === last ? recordTtl : itemsTtl);
}

/** The receipts of a transaction's chain stored: items of their own and inside its record. */
const receiptsStored = (txItems: Record<string, unknown>[]) =>
  txItems.filter((i) => String(i.SK).startsWith('RCPT#')).length + Number(txItems.find((i) => i.SK === 'TXN')?.inside ?? 0);

describe('retention_days', () => {
  it('a terminal execute gives the record its ttl and every receipt one no earlier; the action expires after the same days', async () => {
    const id = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(caller(), { id, capability_id: 'archive.kept', input: { n: 1 }, transaction: { mode: 'execute', transaction_id: tx } });
    await h.drain();
    const txItems = await ofTransaction(tx);
    expect(receiptsStored(txItems)).toBeGreaterThanOrEqual(3); // the prepared, checkpoint and settle receipts, inside the record or items
    expectCovered(txItems, expected(), expected() + ITEMS_TTL_ALLOWANCE_SECONDS);
    const action = (await items()).find((i) => i.PK === `ACTION#${TENANT}#${id}` && i.SK === 'ACTION');
    expect(action?.ttl).toBe(expected());
  });

  it('an execute cancelled before its attempt gives its failed record the retention as every terminal write does', async () => {
    const id = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(caller(), { id, capability_id: 'archive.kept', input: { n: 7 }, transaction: { mode: 'execute', transaction_id: tx } });
    expect(await h.runtime.cancel(caller(), TENANT, id)).toMatchObject({ action_result: { status: 'cancelled' } });
    await h.drain();
    expect(await h.table.store.get({ tenant_id: TENANT, transaction_id: tx })).toMatchObject({ status: 'failed' });
    const txItems = await ofTransaction(tx);
    // The record holds its first receipt; the cancellation's receipt is the terminal write's: both expire with it.
    expect(txItems.map((i) => i.ttl)).toEqual(txItems.map(() => expected()));
    expect(receiptsStored(txItems)).toBeGreaterThanOrEqual(2);
  });

  it("a committed plan's plan-ID item expires no earlier than the record", async () => {
    const planned = await h.runtime.submit(caller(), { id: uid('p'), capability_id: 'archive.kept', input: { n: 2 }, transaction: { mode: 'plan' } });
    const plan_id = (planned.action_result.output as { plan_id: string }).plan_id;
    const tx = (planned.action_result.output as { transaction_id: string }).transaction_id;
    await h.runtime.submit(caller(), { id: uid('c'), capability_id: 'archive.kept', input: { n: 2 }, transaction: { mode: 'commit', plan_id } });
    await h.drain();
    const planRef = (await items()).find((i) => i.PK === `PLAN#${TENANT}#${plan_id}`);
    expect(planRef).toBeDefined();
    expectCovered([...(await ofTransaction(tx)), ...(planRef ? [planRef] : [])], expected(), expected() + ITEMS_TTL_ALLOWANCE_SECONDS);
  });

  it('an outcome_unknown record carries no ttl and keeps every item until it is reconciled, then all expire no earlier than it', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), {
      id: uid('a'),
      capability_id: 'archive.kept',
      input: { n: 3, lose: true },
      transaction: { mode: 'execute', transaction_id: tx },
    });
    await h.drain();
    const open = await ofTransaction(tx);
    expect(open.find((i) => i.SK === 'TXN')?.ttl).toBeUndefined();
    // Its receipts keep the creation's ttl plus the allowance, later than any prompt reconciliation gives the record.
    for (const i of open.filter((x) => x.SK !== 'TXN')) expect(i.ttl).toBe(expected() + ITEMS_TTL_ALLOWANCE_SECONDS);
    h.clock.advance(10_000);
    expect((await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' })).disposition).toBe('reconciled');
    expectCovered(await ofTransaction(tx), expected(), expected() - 10 + ITEMS_TTL_ALLOWANCE_SECONDS);
  });

  it('a capability without retention_days keeps its records', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), { id: uid('a'), capability_id: 'archive.forever', input: { n: 4 }, transaction: { mode: 'execute', transaction_id: tx } });
    await h.drain();
    expect((await ofTransaction(tx)).every((i) => i.ttl === undefined)).toBe(true);
  });

  it('a chain longer than one atomic write holds is stamped entirely (the rest right after the write)', async () => {
    const tx = uid('tx');
    const journal = committingJournal(h.table.stores.uow, { now: h.clock.now });
    let record = await journal.create(
      {
        tenant_id: TENANT,
        transaction_id: tx,
        status: 'prepared',
        mode: 'execute',
        capability_id: 'archive.kept',
        action_id: uid('a'),
        principal: { id: 'agent-1', kind: 'agent' },
        data: {},
      },
      'transaction.prepared',
    );
    for (let i = 0; i < 120; i++) record = await journal.checkpoint(record, { provider: 'archive', operation_id: 'op-1' });
    await journal.settle(record, { to: 'committed', from: ['prepared'], retention: { days: DAYS } });
    const all = await ofTransaction(tx);
    // The record (holding the first receipts, up to its cap) and the rest as items: 1 + 120 checkpoints + the settlement.
    expect(receiptsStored(all)).toBe(122);
    expect(all.filter((i) => String(i.SK).startsWith('RCPT#')).length).toBeGreaterThan(STAMP_LIMIT_OF_ONE_WRITE);
    expect([...new Set(all.map((i) => i.ttl))]).toEqual([expected()]);
  });
});

describe('transaction_retention_days (the default of a deployed configuration)', () => {
  let d: Harness;
  beforeAll(async () => {
    d = await createHarness({ connectors: [archive()], prefix: 'rt-retain-d', config: { transaction_retention_days: 7 } });
  });
  afterAll(async () => d.destroy());

  it("stamps a capability without retention_days with the runtime's retention; the contract's own retention_days still wins", async () => {
    const scan = async (tx: string) =>
      ((await d.table.client.send(new ScanCommand({ TableName: d.table.tableName, ConsistentRead: true }))).Items ?? [])
        .filter((i) => i.PK?.S === `TXN#${TENANT}#${tx}`)
        .map((i) => (i.ttl?.N !== undefined ? Number(i.ttl.N) : undefined));
    const now = () => Math.floor(d.clock.now().getTime() / 1000);
    const forever = uid('tx');
    await d.runtime.submit(caller(), {
      id: uid('a'),
      capability_id: 'archive.forever',
      input: { n: 5 },
      transaction: { mode: 'execute', transaction_id: forever },
    });
    await d.drain();
    // The record (with the receipts inside it) and its settlement receipt expire at the record's ttl; a checkpoint
    // receipt of its own item holds the creation's.
    const covered = (ttls: (number | undefined)[], recordTtl: number) => {
      expect(ttls).toContain(recordTtl);
      for (const ttl of ttls) expect([recordTtl, recordTtl + ITEMS_TTL_ALLOWANCE_SECONDS]).toContain(ttl);
    };
    covered(await scan(forever), now() + 7 * 86_400);
    const kept = uid('tx');
    await d.runtime.submit(caller(), { id: uid('a'), capability_id: 'archive.kept', input: { n: 6 }, transaction: { mode: 'execute', transaction_id: kept } });
    await d.drain();
    covered(await scan(kept), now() + DAYS * 86_400);
  });
});
