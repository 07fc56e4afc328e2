/**
 * Request metering by AWS SDK v3 middleware.
 *
 * `instrumentDynamo` adds two middlewares to a DynamoDBClient's stack (a
 * DynamoDBDocumentClient made with `.from(client)` shares that stack):
 * - at `initialize`, priority high: sets `ReturnConsumedCapacity: 'TOTAL'`
 *   on every data-plane request that accepts it (the caller's own value
 *   wins), starts the clock and records the call site (stack frames under
 *   lib/), then records the outcome: command name, read/write class, the
 *   number of items a TransactWriteItems / Batch* carries, the consumed
 *   capacity from the response, or the error name;
 * - nothing else: no request is changed besides ReturnConsumedCapacity.
 *
 * `instrumentCalls` counts the calls of any other client (SQS, Scheduler, Secrets Manager).
 *
 * Classification (by command name): GetItem, Query, Scan, BatchGetItem,
 * TransactGetItems = reads; PutItem, UpdateItem, DeleteItem,
 * TransactWriteItems, BatchWriteItem = writes; anything else (CreateTable,
 * DescribeTable, ...) = control, reported apart and excluded from the cost.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { round1, type Billed, type Biller } from './billing.js';

export type Service = 'dynamodb' | 'sqs' | 'scheduler' | 'secretsmanager';
export type CallKind = 'read' | 'write' | 'control' | 'call';

export interface CallRecord {
  readonly service: Service;
  /** Operation name without the `Command` suffix (`PutItem`, `SendMessage`, `CreateSchedule`). */
  readonly op: string;
  readonly kind: CallKind;
  /** Items a TransactWriteItems / BatchWriteItem / BatchGetItem / SendMessageBatch carries; 1 otherwise. */
  readonly items: number;
  readonly ok: boolean;
  /** Error name of a failed call (e.g. ConditionalCheckFailedException). */
  readonly error?: string;
  /** Capacity units DynamoDB reported (ReturnConsumedCapacity TOTAL); undefined when the response had none. */
  readonly capacity?: number;
  /** Item kinds touched, from the keys (`TXN`, `RCPT`, `ACTION`, `IDEM`, ...; `idx:<name>` for index queries). */
  readonly targets: readonly string[];
  /** Call site: the adapter method and the runtime function that issued it (frames under lib/). */
  readonly site?: string;
  readonly ms: number;
  readonly table?: string;
  /** Capacity as AWS bills it, from the item images (only while `Meter.billing` is on; see ./billing.ts). */
  readonly billed?: Billed;
}

const READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']);
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);
const CAPACITY_OPS = new Set([...READS, ...WRITES]);

export class Meter {
  readonly calls: CallRecord[] = [];
  /** While false, calls are not recorded (setup traffic). */
  recording = true;
  /** Capture call sites from stack frames (costs a little time per call). */
  captureSites = false;
  /**
   * Bill every DynamoDB request from its item images (./billing.ts): reads the
   * touched items before and after with the biller's own unmetered client, so
   * only on runs whose latency is not measured (the traced warm-up runs).
   */
  billing = false;
  /** The biller `billing` uses (set by the harness). */
  biller: Biller | undefined;

  record(r: CallRecord): void {
    if (this.recording) this.calls.push(r);
  }

  /** Index to pass to {@link since}. */
  mark(): number {
    return this.calls.length;
  }

  since(mark: number): CallRecord[] {
    return this.calls.slice(mark);
  }

  clear(): void {
    this.calls.length = 0;
  }

  /** Runs `fn` with recording off. */
  async quiet<T>(fn: () => Promise<T>): Promise<T> {
    const was = this.recording;
    this.recording = false;
    try {
      return await fn();
    } finally {
      this.recording = was;
    }
  }
}

function opName(commandName: unknown): string {
  return typeof commandName === 'string' ? commandName.replace(/Command$/, '') : 'Unknown';
}

/** The item kind of a key or item: `TXN`, `RCPT`, `ACTION`, `ROUTE`, `IDEM`, `PLAN`, `APPROVAL`, `CHUNK`, or the raw key for foreign tables. */
function kindOf(keyOrItem: Record<string, unknown> | undefined): string {
  if (keyOrItem === undefined) return '?';
  const pk = unwrap(keyOrItem.PK);
  const sk = unwrap(keyOrItem.SK);
  if (typeof pk !== 'string') return keyOrItem.id !== undefined ? 'powertools' : '?';
  const type = pk.split('#')[0] ?? '?';
  if (typeof sk === 'string') {
    if (sk.startsWith('RCPT#')) return 'RCPT';
    if (sk.startsWith('CHUNK#')) return 'CHUNK';
    if (sk === 'ROUTE') return 'ROUTE';
  }
  return type;
}

/** Document-client values are plain; low-level ones are `{S: ...}`. */
function unwrap(v: unknown): unknown {
  if (v !== null && typeof v === 'object' && 'S' in (v as Record<string, unknown>)) return (v as { S: unknown }).S;
  return v;
}

function targetsOf(op: string, input: Record<string, unknown>): { targets: string[]; items: number; table?: string } {
  const table = typeof input.TableName === 'string' ? input.TableName : undefined;
  switch (op) {
    case 'GetItem':
    case 'DeleteItem':
    case 'UpdateItem':
      return { targets: [kindOf(input.Key as Record<string, unknown>)], items: 1, ...(table ? { table } : {}) };
    case 'PutItem':
      return { targets: [kindOf(input.Item as Record<string, unknown>)], items: 1, ...(table ? { table } : {}) };
    case 'Query': {
      if (typeof input.IndexName === 'string') return { targets: [`idx:${input.IndexName}`], items: 1, ...(table ? { table } : {}) };
      const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
      const pk = Object.values(values)
        .map(unwrap)
        .find((v) => typeof v === 'string' && /^[A-Z]+#/.test(v)) as string | undefined;
      const sk = Object.values(values)
        .map(unwrap)
        .find((v) => typeof v === 'string' && /^(RCPT|CHUNK)#?/.test(v)) as string | undefined;
      const base = pk?.split('#')[0] ?? '?';
      return { targets: [sk ? `${base}/${sk.startsWith('RCPT') ? 'RCPT*' : 'CHUNK*'}` : `${base}*`], items: 1, ...(table ? { table } : {}) };
    }
    case 'TransactWriteItems': {
      const items = (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[];
      const targets = items.map((it) => {
        const [verb, body] = Object.entries(it)[0] ?? ['?', {}];
        const k = kindOf((body.Item ?? body.Key) as Record<string, unknown>);
        return `${verb}:${k}`;
      });
      return { targets, items: items.length };
    }
    case 'BatchWriteItem':
    case 'BatchGetItem': {
      const req = (input.RequestItems ?? {}) as Record<string, unknown>;
      let n = 0;
      const kinds = new Set<string>();
      for (const v of Object.values(req)) {
        const list = Array.isArray(v) ? v : ((v as { Keys?: unknown[] }).Keys ?? []);
        n += list.length;
        for (const e of list as Record<string, unknown>[]) {
          const it =
            (e.PutRequest as { Item?: Record<string, unknown> } | undefined)?.Item ??
            (e.DeleteRequest as { Key?: Record<string, unknown> } | undefined)?.Key ??
            e;
          kinds.add(kindOf(it));
        }
      }
      return { targets: [...kinds], items: n };
    }
    default:
      return { targets: [], items: 1, ...(table ? { table } : {}) };
  }
}

function capacityOf(output: Record<string, unknown> | undefined): number | undefined {
  const cc = output?.ConsumedCapacity as { CapacityUnits?: number } | { CapacityUnits?: number }[] | undefined;
  if (cc === undefined) return undefined;
  const list = Array.isArray(cc) ? cc : [cc];
  return list.reduce((s, c) => s + (c.CapacityUnits ?? 0), 0);
}

/** Frames under lib/ (adapter method and runtime function), outermost adapter frame first. */
function siteOf(stack: string | undefined): string | undefined {
  if (!stack) return undefined;
  const frames: string[] = [];
  for (const line of stack.split('\n').slice(1)) {
    const m = /at (?:async )?(?:new )?([\w$.<>]+) \((?:file:\/\/)?[^)]*\/(lib|bench|node_modules\/@aws-lambda-powertools)\/([\w/.-]+)\.[tj]s:\d+:\d+\)/.exec(
      line,
    );
    if (!m) continue;
    const fn = m[1] as string;
    const file = m[3] as string;
    if (file.startsWith('aws/clients') || m[2] === 'bench' || fn === '<anonymous>' || fn.startsWith('Object.')) continue;
    const label = `${fn}`;
    if (frames[frames.length - 1] !== label) frames.push(label);
    if (frames.length >= 6) break;
  }
  return frames.length > 0 ? frames.join(' < ') : undefined;
}

/** Adds the metering middleware to a DynamoDB client (and thus to document clients made from it). */
export function instrumentDynamo(client: DynamoDBClient, meter: Meter, options: { consumedCapacity?: boolean } = {}): void {
  const wantCapacity = options.consumedCapacity !== false;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const op = opName(context.commandName);
      const input = (args.input ?? {}) as Record<string, unknown>;
      if (wantCapacity && CAPACITY_OPS.has(op) && input.ReturnConsumedCapacity === undefined) {
        (args as { input: Record<string, unknown> }).input = { ...input, ReturnConsumedCapacity: 'TOTAL' };
      }
      const site = meter.captureSites ? siteOf(new Error().stack) : undefined;
      const { targets, items, table } = targetsOf(op, input);
      const kind: CallKind = READS.has(op) ? 'read' : WRITES.has(op) ? 'write' : 'control';
      // Billing (warm-up runs only): the touched items' images before a write, outside the request's own time.
      const biller = meter.billing && meter.recording && CAPACITY_OPS.has(op) ? meter.biller : undefined;
      const touched = biller !== undefined ? await biller.targets(op, input) : undefined;
      const before = biller !== undefined && touched !== undefined && kind === 'write' ? await biller.images(touched) : undefined;
      const t0 = performance.now();
      try {
        const out = await next(args);
        const ms = performance.now() - t0;
        const capacity = capacityOf(out.output as unknown as Record<string, unknown>);
        let billed: Billed | undefined;
        if (biller !== undefined) {
          billed =
            touched === undefined
              ? { wru: kind === 'write' ? (capacity ?? 0) : 0, rru: kind === 'read' ? (capacity ?? 0) : 0, index_wru: 0, basis: 'reported', items: [] }
              : await biller.bill(op, input, touched, before ?? (await biller.images(touched)), true);
        }
        meter.record({
          service: 'dynamodb',
          op,
          kind,
          items,
          ok: true,
          ...(capacity !== undefined ? { capacity } : {}),
          targets,
          ...(site ? { site } : {}),
          ms,
          ...(table ? { table } : {}),
          ...(billed ? { billed } : {}),
        });
        return out;
      } catch (err) {
        const ms = performance.now() - t0;
        const error = (err as { name?: string }).name ?? 'Error';
        const refused = error === 'ConditionalCheckFailedException' || error === 'TransactionCanceledException';
        const billed: Billed | undefined =
          biller !== undefined && touched !== undefined && refused ? await biller.bill(op, input, touched, before ?? [], false) : undefined;
        meter.record({
          service: 'dynamodb',
          op,
          kind,
          items,
          ok: false,
          error,
          targets,
          ...(site ? { site } : {}),
          ms,
          ...(table ? { table } : {}),
          ...(billed ? { billed } : {}),
        });
        throw err;
      }
    },
    { step: 'initialize', priority: 'high', name: 'aipBenchMeter', override: true },
  );
}

/** Any SDK client with a middleware stack. */
interface MiddlewareClient {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  middlewareStack: { add(middleware: any, options: any): void };
}

/** Counts every call of an SQS, Scheduler or Secrets Manager client. */
export function instrumentCalls(client: MiddlewareClient, service: Service, meter: Meter): void {
  client.middlewareStack.add(
    (next: (args: { input: unknown }) => Promise<unknown>, context: { commandName?: string }) => async (args: { input: unknown }) => {
      const op = opName(context.commandName);
      const input = (args.input ?? {}) as Record<string, unknown>;
      const items = Array.isArray(input.Entries) ? input.Entries.length : 1;
      const t0 = performance.now();
      try {
        const out = await next(args);
        meter.record({ service, op, kind: 'call', items, ok: true, targets: [], ms: performance.now() - t0 });
        return out;
      } catch (err) {
        meter.record({
          service,
          op,
          kind: 'call',
          items,
          ok: false,
          error: (err as { name?: string }).name ?? 'Error',
          targets: [],
          ms: performance.now() - t0,
        });
        throw err;
      }
    },
    { step: 'initialize', priority: 'high', name: 'aipBenchMeter', override: true },
  );
}

export interface CostSummary {
  /** Successful + failed read requests. */
  readonly reads: number;
  readonly writes: number;
  /** TransactWriteItems requests among the writes, and the items they carried. */
  readonly transact_writes: number;
  readonly transact_items: number;
  /** Write requests whose condition failed (they still cost capacity in AWS; DynamoDB reports none with the error). */
  readonly failed_conditional: number;
  readonly read_capacity: number;
  readonly write_capacity: number;
  /** Requests that returned no ConsumedCapacity (failed ones). */
  readonly capacity_unreported: number;
  /**
   * read + write capacity, plus 1 WCU per failed conditional write: AWS bills a
   * write whose condition fails (at least 1 WCU), while neither AWS nor
   * DynamoDB Local reports ConsumedCapacity with the error. An estimate.
   */
  readonly capacity_total_est: number;
  readonly sqs_sends: number;
  readonly scheduler_calls: number;
}

export function summarize(calls: readonly CallRecord[], table?: string): CostSummary {
  let reads = 0;
  let writes = 0;
  let transact_writes = 0;
  let transact_items = 0;
  let failed_conditional = 0;
  let read_capacity = 0;
  let write_capacity = 0;
  let capacity_unreported = 0;
  let sqs_sends = 0;
  let scheduler_calls = 0;
  for (const c of calls) {
    if (c.service === 'sqs') {
      if (c.op === 'SendMessage' || c.op === 'SendMessageBatch') sqs_sends += c.items;
      continue;
    }
    if (c.service === 'scheduler') {
      scheduler_calls++;
      continue;
    }
    if (table !== undefined && c.table !== undefined && c.table !== table) continue;
    if (c.kind === 'read') reads++;
    else if (c.kind === 'write') writes++;
    else continue;
    if (c.op === 'TransactWriteItems') {
      transact_writes++;
      transact_items += c.items;
    }
    if (!c.ok && (c.error === 'ConditionalCheckFailedException' || c.error === 'TransactionCanceledException')) failed_conditional++;
    if (c.capacity === undefined) capacity_unreported++;
    else if (c.kind === 'read') read_capacity += c.capacity;
    else write_capacity += c.capacity;
  }
  const capacity_total_est = read_capacity + write_capacity + failed_conditional;
  return {
    reads,
    writes,
    transact_writes,
    transact_items,
    failed_conditional,
    read_capacity,
    write_capacity,
    capacity_unreported,
    capacity_total_est,
    sqs_sends,
    scheduler_calls,
  };
}

/** Element-wise mean of summaries (per-action figures over several runs). */
export function meanSummary(list: readonly CostSummary[]): CostSummary {
  const n = Math.max(1, list.length);
  const keys = [
    'reads',
    'writes',
    'transact_writes',
    'transact_items',
    'failed_conditional',
    'read_capacity',
    'write_capacity',
    'capacity_unreported',
    'capacity_total_est',
    'sqs_sends',
    'scheduler_calls',
  ] as const;
  const out = {} as Record<(typeof keys)[number], number>;
  for (const k of keys) out[k] = round(list.reduce((s, x) => s + x[k], 0) / n, 2);
  return out;
}

export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** One line per call: `PutItem ACTION`, `TransactWriteItems [Update:TXN, Put:RCPT]`, for the call traces in the report. */
export function traceLine(c: CallRecord): string {
  const what = c.op === 'TransactWriteItems' || c.op.startsWith('Batch') ? `[${c.targets.join(', ')}]` : c.targets.join(',');
  const status = c.ok ? '' : ` (${c.error})`;
  const cap = c.capacity !== undefined ? ` ${round(c.capacity, 1)} CU` : '';
  const bill = c.billed !== undefined ? ` {billed: ${billedText(c.billed)}}` : '';
  return `${c.service === 'dynamodb' ? '' : `${c.service}:`}${c.op} ${what}${status}${cap}${bill}${c.site ? `  — ${c.site}` : ''}`.replace(/\s+$/, '');
}

/**
 * `12 WRU + 2 index WRU; ACTION 1,032 B, TXN 1,290 B in 1 index` (what one request costs as billed, the item sizes
 * behind it, and how many index entries an item written holds afterwards).
 */
export function billedText(b: Billed): string {
  const units =
    [b.wru > 0 ? `${round1(b.wru)} WRU` : '', b.index_wru > 0 ? `${round1(b.index_wru)} index WRU` : '', b.rru > 0 ? `${round1(b.rru)} RRU` : '']
      .filter((x) => x !== '')
      .join(' + ') || '0';
  if (b.basis === 'refused_estimate') return `${units} (refused: estimate)`;
  if (b.basis === 'reported') return `${units} (as reported)`;
  const sizes = b.items
    .map(
      (i) =>
        `${i.what.replace(/^[A-Za-z]+:/, '')} ${i.before !== i.after && i.before > 0 ? `${i.before}→${i.after}` : `${Math.max(i.before, i.after)}`} B${i.index_entries !== undefined ? ` in ${i.index_entries} index` : ''}`,
    )
    .join(', ');
  return `${units}; ${sizes}`;
}
