/**
 * Attributes not stored again because the same item says them already (docs/table-design.md, "Attributes
 * that repeat the item"). A value equal to what the rest of the item, or its key, holds is stored as the
 * marker `true` and rebuilt on read. Only values whose source never changes after they are written are
 * derived (the key, a record's `mode`, `compensation_for`, `plan_id` and `capability_id`, an action's
 * `capability_id`, `mode` and `idempotency_key`: no write sets them again), so the value read is the value
 * written for the whole life of the item.
 *
 * A marker replaces a value of another type only (every derived value is a string or a map, never the
 * boolean `true`), so an item written before reads exactly as before: its values are kept as they are.
 */
import { canonicalJson } from '../../../packages/connector-sdk/src/protocol/index.js';

type Item = Record<string, unknown>;

/** The marker stored in place of a value the item says already. */
const DERIVED = true;

const same = (a: unknown, b: unknown) => b !== undefined && canonicalJson(a as never) === canonicalJson(b as never);
const isMap = (v: unknown): v is Item => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `value`, or the marker when it equals `derived`. */
function lean(value: unknown, derived: unknown): unknown {
  return value !== undefined && same(value, derived) ? DERIVED : value;
}

/** `value`, or `derived` when the value is the marker. */
function full(value: unknown, derived: unknown): unknown {
  return value === DERIVED ? derived : value;
}

/** The fields of a map replaced as `fn` says (the map itself when it is none). */
function mapFields(m: unknown, fields: Record<string, unknown>, fn: (value: unknown, derived: unknown) => unknown): unknown {
  if (!isMap(m)) return m;
  const out: Item = { ...m };
  for (const [k, d] of Object.entries(fields)) if (out[k] !== undefined) out[k] = fn(out[k], d);
  return out;
}

/** The transaction context an admission of this record's own mode copies from its envelope. */
function ownContext(r: Item): Item {
  return { mode: r.mode, transaction_id: r.transaction_id, ...(r.compensation_for !== undefined ? { compensation_for: r.compensation_for } : {}) };
}

/** The commit's transaction context a plan claim copies from its envelope. */
function commitContext(r: Item): Item {
  return { mode: 'commit', transaction_id: r.transaction_id, ...(r.plan_id !== undefined ? { plan_id: r.plan_id } : {}) };
}

/** The `data` keys of a transaction record with the values the record says already replaced (`fn`: lean or full). */
function transactionData(data: unknown, r: Item, fn: (value: unknown, derived: unknown) => unknown): unknown {
  if (!isMap(data)) return data;
  const out: Item = { ...data };
  if (out.transaction_context !== undefined) out.transaction_context = fn(out.transaction_context, ownContext(r));
  if (out.commit_transaction_context !== undefined) out.commit_transaction_context = fn(out.commit_transaction_context, commitContext(r));
  if (out.compensation !== undefined) out.compensation = mapFields(out.compensation, { target_action_id: r.compensation_for }, fn);
  return out;
}

function transactionPlan(plan: unknown, r: Item, fn: (value: unknown, derived: unknown) => unknown): unknown {
  return mapFields(plan, { transaction_id: r.transaction_id, plan_id: r.plan_id, capability_id: r.capability_id }, fn);
}

/**
 * A transaction record's fields as its item stores them. `record`: the record (with its key attributes);
 * only `data` and `plan` change.
 */
export function leanTransaction<T extends Item>(record: T): T {
  return {
    ...record,
    ...(record.data !== undefined ? { data: transactionData(record.data, record, lean) } : {}),
    ...(record.plan !== undefined ? { plan: transactionPlan(record.plan, record, lean) } : {}),
  };
}

/** The `data` keys an update merges into a record, as its item stores them (`record`: its key and the attributes named above). */
export function leanTransactionData<T>(data: T, record: Item): T {
  return transactionData(data, record, lean) as T;
}

/** A transaction item (with its key attributes filled in) with every marker replaced by the value it stands for. */
export function fullTransaction<T extends Item>(item: T): T {
  return {
    ...item,
    ...(item.data !== undefined ? { data: transactionData(item.data, item, full) } : {}),
    ...(item.plan !== undefined ? { plan: transactionPlan(item.plan, item, full) } : {}),
  };
}

function actionEnvelope(envelope: unknown, item: Item, fn: (value: unknown, derived: unknown) => unknown): unknown {
  if (!isMap(envelope)) return envelope;
  const out = mapFields(envelope, { capability_id: item.capability_id, idempotency_key: item.idempotency_key }, fn) as Item;
  if (out.transaction !== undefined) out.transaction = mapFields(out.transaction, { mode: item.mode }, fn);
  return out;
}

/** An action item's envelope (`action`) as stored: its `capability_id`, `idempotency_key` and `transaction.mode` are the item's own. */
export function leanActionEnvelope(envelope: Item, item: Item): Item {
  return actionEnvelope(envelope, item, lean) as Item;
}

/** An action item's envelope with every marker replaced by the value it stands for. */
export function fullActionEnvelope(envelope: unknown, item: Item): unknown {
  return actionEnvelope(envelope, item, full);
}
