/**
 * Section 5: scaling.
 *
 * (a) Table size. One table is filled, cumulatively, up to each size in
 *     BENCH_SCALE_SIZES with transaction and action items cloned from a real
 *     committed execute written by the runtime itself (the stores' own item
 *     shapes: keys, status, result or its reference, data, receipt anchor;
 *     the action naming its transaction; only the IDs differ), bulk-loaded
 *     with BatchWriteItem (24 items per request, several requests in flight,
 *     unprocessed items resubmitted). At each size the benchmark measures an
 *     execute (submit + attempt), a transaction view with receipts looked up
 *     by action ID (the action item names its transaction), and one sweeper
 *     run (the sparse byStatus index).
 *     Loading stops at BENCH_LOAD_BUDGET_S seconds; the report then says
 *     which size was reached.
 * (b) Receipt chains. A transaction record with a chain of 1, 10 and 100
 *     receipts (built through the journal, one provider-operation checkpoint
 *     per extra receipt): the cost of appending one receipt and of reading
 *     the transaction view with include=receipts.
 */
import { GetCommand, BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../lib/aws/dynamo/table-design.js';
import { commitOne } from '../../lib/ports/unit-of-work.js';
import { RECEIPT_EVENTS, TransactionJournal } from '../../lib/runtime/journal.js';
import type { TransactionRecord } from '../../lib/ports/transaction-store.js';
import { TENANT, uid, type Harness } from '../lib/harness.js';
import { meanSummary, summarize, type CostSummary } from '../lib/meter.js';
import { distribution, type Distribution } from '../lib/stats.js';
import { chargeAction } from './cost.js';

export interface MeasuredOp {
  readonly cost: CostSummary;
  readonly latency_ms: Distribution;
}

export interface TableSizeFigures {
  /** Transactions stored before the measurement (bulk-loaded + those earlier measurements wrote). */
  readonly stored: number;
  readonly execute: MeasuredOp;
  readonly view_by_action: MeasuredOp;
  readonly sweep: MeasuredOp;
}

export interface ChainFigures {
  readonly receipts: number;
  readonly append: MeasuredOp;
  readonly read_view: MeasuredOp;
}

export interface ScalingFigures {
  readonly requested_sizes: number[];
  readonly sizes: TableSizeFigures[];
  readonly load: {
    readonly items: number;
    readonly seconds: number;
    readonly items_per_second: number;
    readonly item_bytes: number;
    readonly stopped_early: boolean;
    readonly note?: string;
  };
  readonly chains: ChainFigures[];
}

/** Runs `fn` unmetered and outside the clock (e.g. receiving the queued message). */
type Untimed = <T>(fn: () => Promise<T>) => Promise<T>;

async function measure(h: Harness, runs: number, op: (untimed: Untimed) => Promise<void>): Promise<MeasuredOp> {
  const costs: CostSummary[] = [];
  const ms: number[] = [];
  let excluded = 0;
  const untimed: Untimed = async (fn) => {
    const t = performance.now();
    try {
      return await h.meter.quiet(fn);
    } finally {
      excluded += performance.now() - t;
    }
  };
  await h.meter.quiet(() => op(untimed)); // warm-up
  for (let i = 0; i < runs; i++) {
    const mark = h.meter.mark();
    excluded = 0;
    const t0 = performance.now();
    await op(untimed);
    ms.push(performance.now() - t0 - excluded);
    costs.push(summarize(h.meter.since(mark)));
    h.meter.clear();
  }
  return { cost: meanSummary(costs), latency_ms: distribution(ms) };
}

type Item = Record<string, unknown>;

/** A committed execute written by the runtime: its transaction and action items, read back raw (the template). */
interface Template {
  readonly txn: Item;
  readonly action: Item;
}

async function templateItems(h: Harness): Promise<Template> {
  return h.meter.quiet(async () => {
    const action = chargeAction('execute');
    await h.runtime.submit(h.caller, action);
    await h.drain();
    const txn = await h.transactions.get({ tenant_id: TENANT, action_id: action.id as string });
    if (txn?.status !== 'committed') throw new Error('section 5: template execute did not commit');
    const read = async (Key: { PK: string; SK: string }) => {
      const out = await h.doc.send(new GetCommand({ TableName: h.tableName, Key, ConsistentRead: true }));
      if (out.Item === undefined) throw new Error('section 5: template item missing');
      return out.Item;
    };
    return { txn: await read(keys.transaction(TENANT, txn.transaction_id)), action: await read(keys.action(TENANT, action.id as string)) };
  });
}

/** The n-th clone: a transaction and the action bound to it (a lookup by action ID reads the action item's transaction_id). */
function cloneItems(template: Template, n: number): Item[] {
  const transaction_id = `txn-bulk-${n.toString(36).padStart(8, '0')}`;
  const action_id = `act-bulk-${n.toString(36).padStart(8, '0')}`;
  const result = template.txn.result as Item | undefined;
  const txn = {
    ...template.txn,
    ...keys.transaction(TENANT, transaction_id),
    // The key holds the IDs; an item repeats them only when written before the lean item model.
    ...(template.txn.transaction_id !== undefined ? { transaction_id } : {}),
    action_id,
    ...(result ? { result: { ...result, action_id } } : {}),
    // A result stored once names the settling action: the clone's own.
    ...(typeof template.txn.result_ref === 'string' ? { result_ref: action_id } : {}),
  };
  const action = {
    ...template.action,
    ...keys.action(TENANT, action_id),
    ...(template.action.action_id !== undefined ? { action_id } : {}),
    transaction_id,
  };
  return [txn, action];
}

async function bulkLoad(h: Harness, template: Template, from: number, to: number, deadline: number): Promise<number> {
  let next = from;
  const width = 8;
  const perRequest = 12; // transactions: 24 items, BatchWriteItem takes 25
  const workers = Array.from({ length: width }, async () => {
    for (;;) {
      if (Date.now() > deadline) return;
      const start = next;
      next += perRequest;
      if (start >= to) return;
      let items = [] as { PutRequest: { Item: Item } }[];
      for (let i = start; i < Math.min(to, start + perRequest); i++) for (const Item of cloneItems(template, i)) items.push({ PutRequest: { Item } });
      for (let round = 0; items.length > 0; round++) {
        const out = await h.doc.send(new BatchWriteCommand({ RequestItems: { [h.tableName]: items } }));
        items = (out.UnprocessedItems?.[h.tableName] ?? []) as typeof items;
        if (round > 20) throw new Error('section 5: BatchWriteItem keeps leaving items unprocessed');
      }
    }
  });
  await Promise.all(workers);
  return Math.min(next, to);
}

export async function runScalingSection(
  h: Harness,
  options: { sizes: readonly number[]; chains: readonly number[]; runs: number; loadBudgetSeconds: number },
  log: (line: string) => void,
): Promise<ScalingFigures> {
  const template = await templateItems(h);
  const itemBytes = Buffer.byteLength(JSON.stringify(template.txn));
  const sizes: TableSizeFigures[] = [];
  const sorted = [...options.sizes].sort((a, b) => a - b);
  let loaded = 0;
  let loadMs = 0;
  let stoppedEarly = false;
  let note: string | undefined;
  const deadline = Date.now() + options.loadBudgetSeconds * 1000;
  let written = 1; // the template's own execute (and everything the measurements add)

  for (const size of sorted) {
    const target = size - written;
    if (target > loaded) {
      const t0 = performance.now();
      const reached = await h.meter.quiet(() => bulkLoad(h, template, loaded, target, deadline));
      loadMs += performance.now() - t0;
      loaded = reached;
      log(`  loaded ${loaded + written} transactions (${Math.round(loadMs / 1000)} s of loading so far)`);
      if (reached < target) {
        stoppedEarly = true;
        note = `bulk loading stopped at the ${options.loadBudgetSeconds} s budget with ${loaded + written} of ${size} transactions stored; larger sizes were not measured`;
        log(`  ${note}`);
      }
    }
    const stored = loaded + written;
    const execute = await measure(h, options.runs, async (untimed) => {
      await h.runtime.submit(h.caller, chargeAction('execute'));
      const [m] = await untimed(() => h.receiveInvokes());
      await h.worker.runAttempt(m!);
    });
    written += options.runs + 1;
    const someAction = `act-bulk-${Math.floor(loaded / 2)
      .toString(36)
      .padStart(8, '0')}`;
    const view = await measure(h, options.runs, async () => {
      await h.runtime
        .getTransaction(h.operator, { tenant_id: TENANT, action_id: loaded > 0 ? someAction : uid('none') }, { result: true, receipts: true })
        .catch((err: unknown) => {
          if (loaded > 0) throw err;
        });
    });
    const sweep = await measure(h, Math.min(options.runs, 5), async () => {
      await h.runtime.sweep();
    });
    sizes.push({ stored, execute, view_by_action: view, sweep });
    if (stoppedEarly) break;
  }

  // (b) receipt chains
  const journal = new TransactionJournal(h.clock);
  const chains: ChainFigures[] = [];
  const op = { provider: 'payments-simulator', operation_id: 'op_bench_chain' };
  for (const n of [...options.chains].sort((a, b) => a - b)) {
    const transaction_id = uid('txn-chain');
    let record: TransactionRecord = await h.meter.quiet(async () => {
      let r = await commitOne(
        h.uow,
        journal.create(
          {
            tenant_id: TENANT,
            transaction_id,
            status: 'prepared',
            mode: 'execute',
            capability_id: 'payments.charge',
            action_id: uid('act-chain'),
            principal: h.caller.principal,
            data: {},
          },
          RECEIPT_EVENTS.prepared,
        ),
      );
      for (let i = 1; i < n; i++) r = await commitOne(h.uow, journal.checkpoint(r, op));
      return r;
    });
    if (record.receipt_count !== n) throw new Error(`section 5: chain has ${record.receipt_count} receipts, wanted ${n}`);
    const read_view = await measure(h, options.runs, async () => {
      const view = await h.runtime.getTransaction(h.caller, { tenant_id: TENANT, transaction_id }, { receipts: true });
      if ((view.receipts?.length ?? 0) < n) throw new Error('section 5: short receipt chain');
    });
    const append = await measure(h, options.runs, async () => {
      record = await commitOne(h.uow, journal.checkpoint(record, op));
    });
    chains.push({ receipts: n, append, read_view });
  }

  return {
    requested_sizes: [...options.sizes],
    sizes,
    load: {
      items: loaded,
      seconds: Math.round(loadMs / 100) / 10,
      items_per_second: loadMs > 0 ? Math.round(loaded / (loadMs / 1000)) : 0,
      item_bytes: itemBytes,
      stopped_early: stoppedEarly,
      ...(note !== undefined ? { note } : {}),
    },
    chains,
  };
}
