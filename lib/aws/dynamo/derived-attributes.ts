/**
 * Attributes not stored again because the same item says them already (docs/table-design.md, "Attributes
 * that repeat the item"). A value equal to what the rest of the item, or its key, holds is stored as the
 * marker `true` and rebuilt on read. Only values whose source never changes after they are written are
 * derived (the key, a record's `mode`, `compensation_for`, `plan_id` and `capability_id`, an action's
 * `capability_id`, `mode` and `idempotency_key`: no write sets them again; the result a terminal settlement
 * stores on its record, and the `result_ref` naming the record's bound action `action_id`: a terminal record
 * takes no transition, and only a plan claim, never a terminal record's, rebinds `action_id`), so the value
 * read is the value written for the whole life of the item.
 *
 * A marker replaces a value of another type only (every derived value is a string or a map, never the
 * boolean `true`), so an item written before reads exactly as before: its values are kept as they are.
 */
import { canonicalJson } from '../../../packages/connector-sdk/src/protocol/index.js';
import { isTerminalStatus } from '../../transactions/state-machine.js';
import type { TransactionStatus } from '../../transactions/status.js';

type Item = Record<string, unknown>;

/** The marker stored in place of a value the item says already. */
const DERIVED = true;

/** Equal as JSON; a value that is no JSON (never stored) is equal to nothing. */
function same(a: unknown, b: unknown): boolean {
  if (b === undefined) return false;
  try {
    return canonicalJson(a) === canonicalJson(b);
  } catch {
    return false;
  }
}
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
function ownContext(r: Item): Item | undefined {
  if (r.mode === undefined || r.transaction_id === undefined) return undefined;
  return { mode: r.mode, transaction_id: r.transaction_id, ...(r.compensation_for !== undefined ? { compensation_for: r.compensation_for } : {}) };
}

/** The commit's transaction context a plan claim copies from its envelope. */
function commitContext(r: Item): Item | undefined {
  if (r.transaction_id === undefined) return undefined;
  return { mode: 'commit', transaction_id: r.transaction_id, ...(r.plan_id !== undefined ? { plan_id: r.plan_id } : {}) };
}

/** The `data` keys of a transaction record with the values the record says already replaced (`fn`: lean or full). */
function transactionData(data: unknown, r: Item, fn: (value: unknown, derived: unknown) => unknown): unknown {
  if (!isMap(data)) return data;
  const out: Item = { ...data };
  if (out.transaction_context !== undefined) out.transaction_context = fn(out.transaction_context, ownContext(r));
  if (out.commit_transaction_context !== undefined) out.commit_transaction_context = fn(out.commit_transaction_context, commitContext(r));
  if (out.compensation !== undefined) out.compensation = mapFields(out.compensation, { target_action_id: r.compensation_for }, fn);
  // A reconcile's terminal settlement: its answer and its evidence are the record's result (final: a terminal record takes no write).
  if (out.last_reconcile_result !== undefined) out.last_reconcile_result = fn(out.last_reconcile_result, r.result);
  // The last attempt's action, when it is the action a final record is bound to (`final_action_id`: a terminal record's
  // `action_id`, which no write changes again; only a plan claim rebinds it, and never a terminal record's).
  // Its outcome, when it is the status a final record settled in (a terminal status is never left).
  if (out.last_attempt !== undefined) out.last_attempt = mapFields(out.last_attempt, { action_id: r.final_action_id, outcome: r.final_status }, fn);
  if (out.last_reconciliation !== undefined) out.last_reconciliation = fn(out.last_reconciliation, reconciliationOf(r.result));
  return out;
}

function reconciliationOf(result: unknown): unknown {
  const metadata = isMap(result) ? result.metadata : undefined;
  return isMap(metadata) ? metadata.reconciliation : undefined;
}

function transactionPlan(plan: unknown, r: Item, fn: (value: unknown, derived: unknown) => unknown): unknown {
  return mapFields(plan, { transaction_id: r.transaction_id, plan_id: r.plan_id, capability_id: r.capability_id }, fn);
}

/**
 * A transaction record's fields as its item stores them. `record`: the record (with its key attributes);
 * only `data` and `plan` change.
 */
export function leanTransaction<T extends Item>(record: T): T {
  // A created record's result is not final (only a terminal settlement's is): nothing is derived from it. Its bound
  // action is final if the record is created terminal (a dry run's).
  const final = isTerminalStatus(record.status as TransactionStatus);
  const own = { ...record, result: undefined, final_action_id: final ? record.action_id : undefined, final_status: final ? record.status : undefined };
  return {
    ...record,
    ...(record.data !== undefined ? { data: transactionData(record.data, own, lean) } : {}),
    ...(record.plan !== undefined ? { plan: transactionPlan(record.plan, record, lean) } : {}),
  };
}

/**
 * The `data` keys an update merges into a record, as its item stores them (`record`: its key and the attributes
 * named above; `result` only for a terminal settlement that stores it on the record, whose result is final;
 * `final_action_id` only for a terminal settlement whose write is conditioned on the record's `action_id` being it;
 * `final_status` for a terminal settlement, whose status is never left).
 */
export function leanTransactionData<T>(data: T, record: Item): T {
  return transactionData(data, record, lean) as T;
}

/** A transaction item (with its key attributes filled in) with every marker replaced by the value it stands for. */
export function fullTransaction<T extends Item>(item: T): T {
  return {
    ...item,
    // A settlement's reference to the action it is bound to (written only with the condition that it is that action).
    ...(item.result_ref === DERIVED ? { result_ref: item.action_id } : {}),
    ...(item.data !== undefined ? { data: transactionData(item.data, { ...item, final_action_id: item.action_id, final_status: item.status }, full) } : {}),
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
