/**
 * Classifying a failed compare-and-set write of a transaction item, from the
 * item DynamoDB returned with the failure (ALL_OLD), never a second read:
 * absent → `transaction.not_found`; another status or revision →
 * `transaction.state_conflict` naming the current ones; then the write's own
 * checks (a different provider operation, a live lease, another plan); then
 * a receipt that does not extend the stored chain → `transaction.invalid_receipt`.
 */
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { GENESIS_RECEIPT_HASH, type ProviderOperationRef } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ItemsRetention } from '../../ports/transaction-store.js';
import type { ReceiptAppend } from '../../transactions/record.js';
import type { TransactionOperation } from '../../transactions/state-machine.js';
import type { TransactionStatus } from '../../transactions/status.js';
import { unpack } from './packed-attributes.js';

type Item = Record<string, unknown>;

/** One compare-and-set write of a transaction item: what it expects, and how its failure is classified. */
export interface CasSpec {
  readonly operation: TransactionOperation;
  readonly tenant_id: string;
  readonly transaction_id: string;
  readonly from: readonly TransactionStatus[];
  readonly expected_revision: number;
  readonly receipt?: ReceiptAppend;
  /** Checked before the status/revision check (e.g. a different provider operation). */
  readonly classifyFirst?: (old: Item) => AipError | undefined;
  /** Checked when status and revision matched (e.g. live lease, plan mismatch). */
  readonly classifyAfter?: (old: Item) => AipError | undefined;
  /** A terminal write of a capability with a retention: the record's ttl (and its plan ID, for the stamps). */
  readonly retention?: { readonly ttl: number; readonly plan_id?: string };
  /** What the write does to the ttl of the record's other items (lib/ports/transaction-store.ts ItemsRetention). */
  readonly items?: ItemsRetention;
}

/** The details naming the item's current status and revision. */
export function currentOf(old: Item) {
  return { current_status: old.status, current_revision: old.revision };
}

/** `transaction.state_conflict` for `spec`; without `old`, a concurrent write won the race. */
export function stateConflict(spec: CasSpec, old: Item | undefined, reason?: string): AipError {
  const current = old ? currentOf(old) : {};
  const message = old
    ? `${spec.operation}: transaction is ${String(old.status)} at revision ${String(old.revision)}; expected ${spec.from.join('|')} at revision ${spec.expected_revision}`
    : `${spec.operation}: a concurrent write to the transaction won the race`;
  return new AipError('transaction.state_conflict', message, {
    details: {
      transaction_id: spec.transaction_id,
      operation: spec.operation,
      ...current,
      expected_revision: spec.expected_revision,
      allowed_statuses: [...spec.from],
      ...(reason ? { reason } : {}),
    },
  });
}

export function classifyCasFailure(spec: CasSpec, old: Item | undefined): AipError {
  if (old === undefined) {
    return new AipError('transaction.not_found', `No transaction ${spec.transaction_id}`, {
      details: { transaction_id: spec.transaction_id, operation: spec.operation },
    });
  }
  const first = spec.classifyFirst?.(old);
  if (first) return first;
  if (!spec.from.includes(old.status as TransactionStatus) || old.revision !== spec.expected_revision) return stateConflict(spec, old);
  const after = spec.classifyAfter?.(old);
  if (after) return after;
  if (spec.receipt) {
    const r = spec.receipt.receipt;
    // Stored as its 32 bytes, or as the hex string by an item written before (./transaction-store.ts HEAD).
    const head = (unpack(old.receipt_head, 'receipt_head') as string | undefined) ?? GENESIS_RECEIPT_HASH;
    if ((old.receipt_count ?? 0) !== r.seq || head !== r.prev_hash) {
      return new AipError('transaction.invalid_receipt', 'The receipt does not extend the stored chain (seq or prev_hash)', {
        details: { transaction_id: spec.transaction_id, ...currentOf(old), receipt_count: old.receipt_count ?? 0, seq: r.seq },
      });
    }
  }
  return stateConflict(spec, old, 'condition_failed');
}

/** The error for a TransactionConflict on `spec`'s item (the current item is not available then). */
export function raceConflictFor(spec: CasSpec): () => AipError {
  return () => stateConflict(spec, undefined, 'transaction_conflict');
}

function sameRef(a: unknown, b: ProviderOperationRef): boolean {
  if (a === null || typeof a !== 'object') return false;
  const x = a as Record<string, unknown>;
  return x.provider === b.provider && x.operation_id === b.operation_id && (x.request_id ?? undefined) === (b.request_id ?? undefined);
}

/** classifyFirst of a write recording `ref`: the item already holds a different provider operation. */
export function providerConflict(txn: string, ref: ProviderOperationRef): (old: Item) => AipError | undefined {
  return (old) =>
    old.provider_operation !== undefined && !sameRef(old.provider_operation, ref)
      ? new AipError('transaction.provider_operation_conflict', `Transaction ${txn} already has a different provider operation`, {
          details: { transaction_id: txn, ...currentOf(old), current_provider_operation: old.provider_operation as Record<string, unknown> },
        })
      : undefined;
}
