/**
 * DynamoDB capacity as AWS bills it, computed from the items themselves.
 *
 * DynamoDB Local's ConsumedCapacity follows AWS's rules only roughly (the
 * report's section 1 shows it), so the meter (./meter.ts) can also bill each
 * request itself: with `meter.billing` on, it reads the image of every item a
 * request touches, strongly consistent, with its own UNMETERED client, before
 * and after the request, and applies AWS's published rules
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
 * and the read/write unit pages):
 *
 * - item size = Σ over attributes of (UTF-8 bytes of the name + size of the
 *   value): string = UTF-8 bytes; number = 1 byte per two significant digits
 *   + 1; binary = raw bytes; boolean / null = 1; list / map = 3 bytes + Σ
 *   (element size + 1 byte); sets = Σ element sizes;
 * - a write unit is 1 KB: PutItem / UpdateItem / DeleteItem bill
 *   ceil(max(size before, size after) / 1 KB) (at least 1); every item of a
 *   TransactWriteItems bills twice that (prepare and commit);
 * - a read unit is 4 KB: a strongly consistent GetItem, and each item of a
 *   consistent BatchGetItem, bills ceil(size / 4 KB) (at least 1, also for an
 *   absent item); eventually consistent reads half that;
 * - a write that changes a global secondary index also writes the index:
 *   1 unit per 1 KB index entry for an entry put or deleted, 2 when an index
 *   key changes (delete + put), 1 when only projected non-key attributes
 *   change (none here: the indexes project KEYS_ONLY). Index entry size =
 *   table key + index key attributes + 100 bytes. Index writes are counted at
 *   the standard rate, also for transactional writes (the index is updated
 *   after the transaction, as any index is);
 * - a write refused by its condition, or a cancelled TransactWriteItems,
 *   reports no capacity; it is estimated at 1 write unit per request, as the
 *   existing `capacity (est.)` column does (an estimate, stated as such);
 * - a Query is billed as DynamoDB Local reports it (the sum of the items it
 *   evaluated, rounded up to 4 KB once): it is not recomputed here.
 *
 * The reads this costs happen on another client, only on runs with billing on
 * (the traced warm-up runs), so no measured latency includes them.
 */
import { DescribeTableCommand, GetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';

export type AttributeMap = Record<string, AttributeValue>;

const UTF8 = new TextEncoder();
const bytes = (s: string) => UTF8.encode(s).length;

/** Significant digits of a DynamoDB number string (leading and trailing zeros trimmed, sign, point and exponent ignored). */
function significantDigits(n: string): number {
  const mantissa = n
    .trim()
    .replace(/^[+-]/, '')
    .replace(/[eE].*$/, '');
  const digits = mantissa.replace('.', '').replace(/^0+/, '');
  const trimmed = digits.replace(/0+$/, '');
  return Math.max(1, trimmed.length);
}

/** Size of one attribute value by AWS's rules (the name is counted by the caller). */
export function valueSize(v: AttributeValue): number {
  if (v.S !== undefined) return bytes(v.S);
  if (v.N !== undefined) return Math.ceil(significantDigits(v.N) / 2) + 1;
  if (v.B !== undefined) return v.B.length;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((s, x) => s + bytes(x), 0);
  if (v.NS !== undefined) return v.NS.reduce((s, x) => s + Math.ceil(significantDigits(x) / 2) + 1, 0);
  if (v.BS !== undefined) return v.BS.reduce((s, x) => s + x.length, 0);
  if (v.L !== undefined) return 3 + v.L.reduce((s, x) => s + valueSize(x) + 1, 0);
  if (v.M !== undefined) return 3 + Object.entries(v.M).reduce((s, [k, x]) => s + bytes(k) + valueSize(x) + 1, 0);
  return 0;
}

/** Item size in bytes by AWS's rules. */
export function itemSize(item: AttributeMap | undefined): number {
  if (item === undefined) return 0;
  return Object.entries(item).reduce((s, [k, v]) => s + bytes(k) + valueSize(v), 0);
}

/** The attributes of an item with their sizes (name + value), largest first. */
export function attributeSizes(item: AttributeMap): { readonly name: string; readonly bytes: number }[] {
  return Object.entries(item)
    .map(([k, v]) => ({ name: k, bytes: bytes(k) + valueSize(v) }))
    .sort((a, b) => b.bytes - a.bytes);
}

export const round1 = (x: number) => Math.round(x * 10) / 10;
export const writeUnits = (size: number) => Math.max(1, Math.ceil(size / 1024));
export const readUnits = (size: number, consistent: boolean) => Math.max(1, Math.ceil(size / 4096)) * (consistent ? 1 : 0.5);

/** One item a request touched, as billed. */
export interface BilledItem {
  /** `Put:TXN`, `Update:ACTION`, `Get:ACTION`, ... (verb and item kind). */
  readonly what: string;
  /** Item size before and after the request, bytes (0: absent). */
  readonly before: number;
  readonly after: number;
  /** Table units billed for this item (a transactional item counts twice). */
  readonly units: number;
  /** Index write units this item's change caused. */
  readonly index_units: number;
  /** Index entries the item holds after a write (absent: none, or a read). */
  readonly index_entries?: number;
  /** The attributes of the larger image, largest first (name + value bytes). */
  readonly attributes: readonly { readonly name: string; readonly bytes: number }[];
}

/** What one request costs as AWS bills it. */
export interface Billed {
  readonly wru: number;
  readonly rru: number;
  /** Index write units (included in neither wru nor rru above). */
  readonly index_wru: number;
  /** The figure is an estimate (a refused write) or DynamoDB Local's own (a Query). */
  readonly basis: 'items' | 'refused_estimate' | 'reported';
  readonly items: readonly BilledItem[];
}

interface IndexSchema {
  readonly name: string;
  readonly keys: readonly string[];
  readonly projection: string;
}

interface TableSchema {
  readonly keys: readonly string[];
  readonly indexes: readonly IndexSchema[];
}

/** A DynamoDB AttributeValue (low-level client input) rather than a plain document value. */
function isAttributeValue(v: unknown): v is AttributeValue {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const k = Object.keys(v);
  return k.length === 1 && ['S', 'N', 'B', 'BOOL', 'NULL', 'M', 'L', 'SS', 'NS', 'BS'].includes(k[0] as string);
}

function toAttributeMap(key: Record<string, unknown>): AttributeMap {
  const out: AttributeMap = {};
  for (const [k, v] of Object.entries(key)) out[k] = isAttributeValue(v) ? v : (marshall({ v }).v as AttributeValue);
  return out;
}

function text(v: AttributeValue | undefined): string | undefined {
  return v?.S ?? v?.N;
}

/** The item kind of a key: `TXN`, `RCPT`, `ACTION`, `ROUTE`, `IDEM`, `PLAN`, ... (Powertools' table: `powertools`). */
export function kindOfKey(key: AttributeMap): string {
  const pk = text(key.PK);
  const sk = text(key.SK);
  if (pk === undefined) return key.id !== undefined ? 'powertools' : '?';
  if (sk?.startsWith('RCPT#')) return 'RCPT';
  if (sk?.startsWith('CHUNK#')) return 'CHUNK';
  if (sk === 'ROUTE') return 'ROUTE';
  return pk.split('#')[0] ?? '?';
}

/** A touched item: its table and key (as an AttributeMap) and the verb. */
interface Target {
  readonly table: string;
  readonly key: AttributeMap;
  readonly verb: string;
  readonly transactional: boolean;
}

/**
 * Bills requests from item images read with its own, unmetered client. One
 * per table set; DescribeTable is asked once per table for its key schema
 * and indexes.
 */
export class Biller {
  private readonly schemas = new Map<string, Promise<TableSchema>>();

  constructor(private readonly client: DynamoDBClient) {}

  private schema(table: string): Promise<TableSchema> {
    let s = this.schemas.get(table);
    if (s === undefined) {
      s = this.client.send(new DescribeTableCommand({ TableName: table })).then((out) => ({
        keys: (out.Table?.KeySchema ?? []).map((k) => k.AttributeName as string),
        indexes: (out.Table?.GlobalSecondaryIndexes ?? []).map((g) => ({
          name: g.IndexName as string,
          keys: (g.KeySchema ?? []).map((k) => k.AttributeName as string),
          projection: g.Projection?.ProjectionType ?? 'ALL',
        })),
      }));
      this.schemas.set(table, s);
    }
    return s;
  }

  private async keyOf(table: string, itemOrKey: Record<string, unknown>): Promise<AttributeMap> {
    const schema = await this.schema(table);
    const all = toAttributeMap(itemOrKey);
    const key: AttributeMap = {};
    for (const k of schema.keys) if (all[k] !== undefined) key[k] = all[k] as AttributeValue;
    return key;
  }

  private async image(t: Target): Promise<AttributeMap | undefined> {
    const out = await this.client.send(new GetItemCommand({ TableName: t.table, Key: t.key, ConsistentRead: true }));
    return out.Item;
  }

  /** The items a request touches (writes and single-item / batch reads); undefined for requests billed as reported. */
  async targets(op: string, input: Record<string, unknown>): Promise<Target[] | undefined> {
    const table = typeof input.TableName === 'string' ? input.TableName : undefined;
    switch (op) {
      case 'PutItem':
        return table ? [{ table, key: await this.keyOf(table, input.Item as Record<string, unknown>), verb: 'Put', transactional: false }] : [];
      case 'UpdateItem':
      case 'DeleteItem':
      case 'GetItem':
        return table
          ? [{ table, key: await this.keyOf(table, input.Key as Record<string, unknown>), verb: op.replace(/Item$/, ''), transactional: false }]
          : [];
      case 'TransactWriteItems': {
        const out: Target[] = [];
        for (const it of (input.TransactItems ?? []) as Record<string, Record<string, unknown>>[]) {
          const [verb, body] = Object.entries(it)[0] ?? ['?', {}];
          const t = body.TableName as string;
          out.push({ table: t, key: await this.keyOf(t, (body.Item ?? body.Key) as Record<string, unknown>), verb, transactional: true });
        }
        return out;
      }
      case 'BatchGetItem': {
        const out: Target[] = [];
        for (const [t, req] of Object.entries((input.RequestItems ?? {}) as Record<string, { Keys?: Record<string, unknown>[] }>)) {
          for (const k of req.Keys ?? []) out.push({ table: t, key: await this.keyOf(t, k), verb: 'Get', transactional: false });
        }
        return out;
      }
      default:
        return undefined;
    }
  }

  /** Images of the targets (before a write, or of the items a read returns). */
  async images(targets: readonly Target[]): Promise<(AttributeMap | undefined)[]> {
    return Promise.all(targets.map((t) => this.image(t)));
  }

  /** The bill of a request from the images before and after it. */
  async bill(
    op: string,
    input: Record<string, unknown>,
    targets: readonly Target[],
    before: readonly (AttributeMap | undefined)[],
    ok: boolean,
  ): Promise<Billed> {
    if (op === 'GetItem' || op === 'BatchGetItem') {
      const consistent =
        op === 'GetItem'
          ? input.ConsistentRead === true
          : Object.values((input.RequestItems ?? {}) as Record<string, { ConsistentRead?: boolean }>).every((r) => r.ConsistentRead === true);
      const items = targets.map((t, i) => {
        const image = before[i];
        const size = itemSize(image);
        return {
          what: `Get:${kindOfKey(t.key)}`,
          before: size,
          after: size,
          units: readUnits(size, consistent),
          index_units: 0,
          attributes: image ? attributeSizes(image) : [],
        };
      });
      return { wru: 0, rru: items.reduce((s, x) => s + x.units, 0), index_wru: 0, basis: 'items', items };
    }
    if (!ok) return { wru: 1, rru: 0, index_wru: 0, basis: 'refused_estimate', items: [] };
    const after = await this.images(targets);
    const items: BilledItem[] = [];
    for (let i = 0; i < targets.length; i++) {
      const t = targets[i] as Target;
      const b = before[i];
      const a = after[i];
      const size = Math.max(itemSize(b), itemSize(a));
      const units = writeUnits(size) * (t.transactional ? 2 : 1);
      const larger = itemSize(a) >= itemSize(b) ? a : b;
      const entries = a !== undefined ? await this.indexEntries(t, a) : 0;
      items.push({
        what: `${t.verb}:${kindOfKey(t.key)}`,
        before: itemSize(b),
        after: itemSize(a),
        units,
        index_units: await this.indexUnits(t, b, a),
        ...(entries > 0 ? { index_entries: entries } : {}),
        attributes: larger ? attributeSizes(larger) : [],
      });
    }
    return { wru: items.reduce((s, x) => s + x.units, 0), rru: 0, index_wru: items.reduce((s, x) => s + x.index_units, 0), basis: 'items', items };
  }

  /** How many of the table's indexes hold an entry for this item image (every key attribute of the index present). */
  private async indexEntries(t: Target, item: AttributeMap): Promise<number> {
    const schema = await this.schema(t.table);
    return schema.indexes.filter((index) => index.keys.every((k) => item[k] !== undefined)).length;
  }

  private async indexUnits(t: Target, before: AttributeMap | undefined, after: AttributeMap | undefined): Promise<number> {
    const schema = await this.schema(t.table);
    let units = 0;
    for (const index of schema.indexes) {
      const entry = (item: AttributeMap | undefined): AttributeMap | undefined => {
        if (item === undefined || index.keys.some((k) => item[k] === undefined)) return undefined;
        const e: AttributeMap = {};
        for (const k of [...schema.keys, ...index.keys]) e[k] = item[k] as AttributeValue;
        return e;
      };
      const b = entry(before);
      const a = entry(after);
      const size = (e: AttributeMap) => writeUnits(itemSize(e) + 100);
      if (b === undefined && a === undefined) continue;
      if (b === undefined && a !== undefined) units += size(a);
      else if (a === undefined && b !== undefined) units += size(b);
      else if (a !== undefined && b !== undefined) {
        const keyChanged = index.keys.some((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
        if (keyChanged) units += size(b) + size(a);
        else if (index.projection !== 'KEYS_ONLY' && JSON.stringify(before) !== JSON.stringify(after)) units += size(a);
      }
    }
    return units;
  }
}

/** Sum of bills (per action or phase). */
export interface BilledSummary {
  readonly wru: number;
  readonly rru: number;
  readonly index_wru: number;
  /** wru + index_wru + rru. */
  readonly total: number;
  /** Requests whose figure is an estimate (refused writes) or DynamoDB Local's (queries). */
  readonly estimated_requests: number;
  readonly reported_requests: number;
}

export function sumBilled(bills: readonly (Billed | undefined)[]): BilledSummary {
  let wru = 0;
  let rru = 0;
  let index_wru = 0;
  let estimated_requests = 0;
  let reported_requests = 0;
  for (const b of bills) {
    if (b === undefined) continue;
    wru += b.wru;
    rru += b.rru;
    index_wru += b.index_wru;
    if (b.basis === 'refused_estimate') estimated_requests++;
    if (b.basis === 'reported') reported_requests++;
  }
  return { wru, rru, index_wru, total: wru + rru + index_wru, estimated_requests, reported_requests };
}
