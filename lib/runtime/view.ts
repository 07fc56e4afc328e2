/**
 * The transaction view: a durable record projected to the wire
 * TransactionResult. `requires_human` and `cancelled` are projected from the
 * surrounding action (and escalation); they are never durable statuses.
 */
import type { ActionResult, Receipt, TransactionResult } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ActionRecord } from '../ports/action-store.js';
import type { TransactionRecord } from '../ports/transaction-store.js';
import { projectProtocolStatus } from '../transactions/state-machine.js';
import type { Kernel } from './kernel.js';

export interface ViewOptions {
  /** Status of the surrounding action (e.g. `requires_human`, `cancelled`). */
  readonly action_status?: string;
  /** The terminal action result to include. */
  readonly action_result?: ActionResult;
  readonly receipts?: readonly Receipt[];
}

export function toTransactionResult(record: TransactionRecord, options: ViewOptions = {}): TransactionResult {
  const status = projectProtocolStatus(record.status, { action_status: options.action_status, escalated: record.escalated_at !== undefined });
  return {
    transaction_id: record.transaction_id,
    ...(record.plan_id !== undefined ? { plan_id: record.plan_id } : {}),
    status,
    ...(options.action_result !== undefined ? { action_result: options.action_result } : {}),
    ...(record.plan !== undefined ? { plan: record.plan } : {}),
    ...(record.provider_operation !== undefined ? { provider_operation: record.provider_operation } : {}),
    ...(record.reconciliation_cursor !== undefined ? { reconciliation_cursor: record.reconciliation_cursor } : {}),
    // An escalated record is parked for a human: nothing is scheduled, so it names no next reconciliation.
    ...(record.status === 'outcome_unknown' && record.next_reconcile_at !== undefined && record.escalated_at === undefined
      ? { earliest_reconcile_at: record.next_reconcile_at }
      : {}),
    ...(options.receipts !== undefined ? { receipts: [...options.receipts] } : {}),
    receipt_count: record.receipt_count,
    ...(record.receipt_head !== undefined ? { receipt_head: record.receipt_head } : {}),
    links: {
      action_id: record.action_id,
      ...(record.plan?.planning_action_id !== undefined ? { planning_action_id: record.plan.planning_action_id } : {}),
      ...(record.compensation_for !== undefined ? { compensation_for: record.compensation_for } : {}),
      ...(typeof record.data.reconcile_action_id === 'string' ? { reconcile_action_id: record.data.reconcile_action_id } : {}),
    },
    ...(record.escalated_at !== undefined
      ? { escalated: { at: record.escalated_at, ...(typeof record.data.escalation_reason === 'string' ? { reason: record.data.escalation_reason } : {}) } }
      : {}),
    ...(record.reconcile_attempts > 0 ? { reconcile_attempts: record.reconcile_attempts } : {}),
  };
}

/** Receipts per listReceipts page (the store's maximum). */
const RECEIPT_PAGE = 100;

/**
 * The whole receipt chain of a record, in order. With the record's
 * `receipt_count`, a full page that completes the chain ends the listing: a
 * page of exactly the limit comes back with a cursor, and the next Query
 * would find nothing (a chain of exactly 100 receipts).
 */
export async function readReceipts(
  k: Kernel,
  record: Pick<TransactionRecord, 'tenant_id' | 'transaction_id'> & { readonly receipt_count?: number },
): Promise<Receipt[]> {
  const out: Receipt[] = [];
  let cursor: string | undefined;
  do {
    const page = await k.deps.transactions.listReceipts({
      tenant_id: record.tenant_id,
      transaction_id: record.transaction_id,
      limit: RECEIPT_PAGE,
      ...(cursor !== undefined ? { cursor } : {}),
    });
    for (const r of page.items) out.push(r.receipt);
    cursor = page.cursor;
    if (record.receipt_count !== undefined && out.length >= record.receipt_count) break;
  } while (cursor !== undefined);
  return out;
}

/**
 * The record with its result in place: a record whose result is stored once, on the action that settled it
 * (`result_ref`, docs/table-design.md "The result stored once"), gets that action's result; any other record is
 * returned as it is (a record written before the reference, or one that keeps its own result). `known`: action
 * records this request already read (the one the reference names is used instead of a read).
 *
 * A reference whose action is gone (both items past their retention, deleted by TTL at different times) reads
 * as a record without a result.
 */
export async function withStoredResult(k: Kernel, record: TransactionRecord, ...known: (ActionRecord | undefined)[]): Promise<TransactionRecord> {
  const ref = record.result_ref;
  if (ref === undefined || record.result !== undefined) return record;
  const holder =
    known.find((a) => a !== undefined && a.tenant_id === record.tenant_id && a.action_id === ref) ??
    (await k.deps.actions.get({ tenant_id: record.tenant_id, action_id: ref }));
  return holder?.result !== undefined ? { ...record, result: holder.result } : record;
}

/** {@link withStoredResult} for a record that may be absent. */
export async function withStoredResultOf(k: Kernel, record: TransactionRecord | undefined, ...known: (ActionRecord | undefined)[]) {
  return record === undefined ? undefined : withStoredResult(k, record, ...known);
}
