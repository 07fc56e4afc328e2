/**
 * Port: the durable transaction store.
 *
 * Every write is ONE conditional write that names the allowed current
 * statuses and the expected revision (creation: that the record does not
 * exist), and raises the revision by exactly one. Which (operation, from, to)
 * triples are legal comes from the transition table in
 * lib/transactions/state-machine.ts; a write naming any other triple is
 * rejected with `transaction.invalid_transition` before anything is sent.
 *
 * Errors (all AipError):
 * - `transaction.state_conflict`: lost race / wrong status or revision.
 *   details: { transaction_id, current_status, current_revision,
 *   expected_revision, allowed_statuses, reason? }, read from the failed
 *   conditional write itself (never a second read). When the backend reports a
 *   transaction conflict without the current item, details.reason is
 *   `transaction_conflict` and current_status/current_revision are absent.
 * - `transaction.already_exists` (create, claim_direct_commit; or a plan ID
 *   already used by another transaction: details.reason `plan_id_in_use`).
 * - `transaction.not_found`: the record to change does not exist.
 * - `transaction.provider_operation_conflict`: a different provider operation is
 *   already checkpointed (details.current_provider_operation).
 * - `transaction.lease_held`: another owner holds an unexpired lease.
 * - `transaction.invalid_transition`, `transaction.invalid_record`,
 *   `transaction.invalid_provider_operation`, `transaction.invalid_receipt`,
 *   `transaction.invalid_selector`, `transaction.invalid_listing`,
 *   `transaction.record_too_large`, `transaction.store_unavailable`.
 *
 * The DynamoDB adapter is lib/aws/dynamo/transaction-store.ts.
 */
import type {
  ActionResult,
  IdentityContext,
  JsonObject,
  Principal,
  ProtocolError,
  ProviderOperationRef,
  TransactionMode,
  TransactionPlan,
  TransactionStatus,
} from '../../packages/connector-sdk/src/protocol/index.js';
import type { ReceiptAppend, StoredReceipt, TransactionRecord } from '../transactions/record.js';
import type { AttemptStatus, InitialStatus, SettleOutcome, TransactionOperation } from '../transactions/state-machine.js';

export type { ReceiptAppend, StoredReceipt, TransactionRecord } from '../transactions/record.js';

/** Request a fenced attempt lease as part of a write (fence + 1). */
export interface LeaseRequest {
  readonly owner: string;
  /** Lease duration in milliseconds (1 .. 86_400_000). */
  readonly ttl_ms: number;
}

interface RecordRef {
  readonly tenant_id: string;
  readonly transaction_id: string;
}

interface CasWrite extends RecordRef {
  /** The revision the caller read; the write applies only while it is current. */
  readonly expected_revision: number;
  /** Append this receipt atomically with the write. */
  readonly receipt?: ReceiptAppend;
  /** Keys merged into the record's opaque `data` map. */
  readonly data?: JsonObject;
  /** What the write does to the ttl of the record's other items (see ItemsRetention). */
  readonly items?: ItemsRetention;
}

/**
 * The capability's data retention (DataContract.retention_days), applied when
 * a record becomes terminal: the record gets its `ttl` (now + days) in the
 * terminal transition, and its other items (every receipt of its chain and
 * its plan-ID item) are stamped with it in the same atomic write unless they
 * already hold a ttl at least as late (ItemsRetention). A record that is not
 * terminal never expires.
 */
export interface RetentionStamp {
  readonly days: number;
  /** The record's plan ID (its plan-ID uniqueness item expires with it). */
  readonly plan_id?: string;
  /** The record's ttl (epoch seconds) as the journal computed it; absent: the store's now + days. */
  readonly ttl?: number;
}

/**
 * What a write does to the ttl of the record's other items (its receipts and its plan-ID item), decided by the
 * journal from the record it holds (lib/runtime/retention.ts `itemsRetention`; docs/table-design.md, "TTL"):
 * - `keep`: they hold a ttl at or after `ttl` (the record's `items_ttl`): nothing is written to them, and the
 *   write's receipt gets `ttl` (the record's own ttl when the write is terminal);
 * - `stamp`: each gets `ttl` (the terminal record's), and so does the record's `items_ttl`;
 * - `remove`: each loses its ttl, and the record its `items_ttl` (the record may now wait without bound).
 * Absent: a terminal write of a retained record stamps them (a record written before `items_ttl`); any other
 * write leaves them, and its receipt carries no ttl.
 */
export type ItemsRetention =
  | { readonly kind: 'keep'; readonly ttl: number }
  | { readonly kind: 'stamp'; readonly ttl: number; readonly plan_id?: string }
  | { readonly kind: 'remove'; readonly plan_id?: string };

export interface CreateTransactionInput extends RecordRef {
  readonly status: InitialStatus;
  readonly mode: TransactionMode;
  readonly capability_id: string;
  readonly action_id: string;
  readonly principal: Principal;
  readonly identity?: IdentityContext;
  /** Required with `plan`; must equal plan.plan_id. Unique per tenant. */
  readonly plan_id?: string;
  readonly plan?: TransactionPlan;
  readonly compensation_for?: string;
  readonly error?: ProtocolError;
  readonly result?: ActionResult;
  readonly data?: JsonObject;
  /** Lease for an attempt status (`prepared`, `compensating`). */
  readonly lease?: LeaseRequest;
  /** First receipt: seq 0, prev_hash GENESIS_RECEIPT_HASH, revision 1. */
  readonly receipt?: ReceiptAppend;
  /** Applied when the record is created terminal (see RetentionStamp). */
  readonly retention?: RetentionStamp;
  /**
   * Only for a record created open (not terminal) under a retention: the ttl its other items are written with
   * (its first receipt when that is an item, its plan-ID item), stored on the record as `items_ttl`.
   */
  readonly items_ttl?: number;
}

/** claim_direct_commit: like create, straight in `committing`. */
export type ClaimDirectCommitInput = Omit<CreateTransactionInput, 'status' | 'plan_id' | 'plan'>;

export interface ClaimPlanInput extends CasWrite {
  /** The plan being claimed; must be the record's plan ID. */
  readonly plan_id: string;
  /** The commit action that now owns the record (becomes `action_id`). */
  readonly commit_action_id: string;
  readonly lease?: LeaseRequest;
}

/** Operations `transition` accepts; the others have their own methods. */
export type GenericTransitionOperation = Extract<
  TransactionOperation,
  'expire_plan' | 'begin_reconcile' | 'settle' | 'reschedule_reconcile' | 'escalate' | 'refuse_reconcile' | 'request_reconcile' | 'resolve'
>;

export interface TransitionPatch {
  readonly error?: ProtocolError;
  /** Replaces the record's result (and removes a `result_ref`). */
  readonly result?: ActionResult;
  /** Only for settle, never with `result`: the action that holds the result (removes the record's own `result`). */
  readonly result_ref?: string;
  readonly reconciliation_cursor?: string;
  /** RFC 3339. Required by reschedule_reconcile and refuse_reconcile; defaulted for a settle to outcome_unknown and to now for request_reconcile. */
  readonly next_reconcile_at?: string;
  /** Only for settle and resolve: a provider operation (parsed from error details, or found by an operator); may not replace a different one. */
  readonly provider_operation?: ProviderOperationRef;
}

export interface TransitionInput extends CasWrite {
  readonly operation: GenericTransitionOperation;
  /** Allowed current statuses (each must reach `to` via `operation` in the table). */
  readonly from: readonly TransactionStatus[];
  readonly to: TransactionStatus;
  readonly patch?: TransitionPatch;
  /** Only when `to` is an attempt status (begin_reconcile). */
  readonly lease?: LeaseRequest;
  /** Applied when `to` is terminal (see RetentionStamp). */
  readonly retention?: RetentionStamp;
}

export interface SettleInput extends CasWrite {
  readonly to: SettleOutcome;
  /** Defaults to every status the table lets settle into `to`. */
  readonly from?: readonly TransactionStatus[];
  readonly result?: ActionResult;
  /**
   * Instead of `result`: the ID of the action whose settlement, committed with this one, stores the result
   * (the record keeps a reference, not a copy). The receipt's `result_digest` is still of the result.
   */
  readonly result_ref?: string;
  readonly error?: ProtocolError;
  readonly provider_operation?: ProviderOperationRef;
  readonly reconciliation_cursor?: string;
  /** For outcome_unknown; default now + (error.retry_after_ms ?? DEFAULT_RECONCILE_DELAY_MS). */
  readonly next_reconcile_at?: string;
  /** Applied when `to` is terminal (see RetentionStamp). */
  readonly retention?: RetentionStamp;
}

export interface CheckpointProviderOperationInput extends CasWrite {
  readonly provider_operation: ProviderOperationRef;
  readonly reconciliation_cursor?: string;
  /** Defaults to all four attempt statuses. */
  readonly from?: readonly AttemptStatus[];
}

export interface AcquireLeaseInput extends CasWrite {
  readonly owner: string;
  readonly ttl_ms: number;
  /** Defaults to all four attempt statuses. */
  readonly from?: readonly AttemptStatus[];
}

/**
 * Exactly one of transaction_id, plan_id, action_id, always within a tenant.
 * Loose on purpose (it is checked at run time): invalid → `transaction.invalid_selector`.
 */
export interface TransactionSelector {
  readonly tenant_id: string;
  readonly transaction_id?: string;
  readonly plan_id?: string;
  readonly action_id?: string;
}

export interface ListByStatusQuery {
  /** A non-terminal status (terminal records are not indexed). */
  readonly status: TransactionStatus;
  /** List the records parked for a human (escalated outcome_unknown) instead. */
  readonly escalated?: boolean;
  /**
   * Inclusive upper time bound (RFC 3339). The index time is next_reconcile_at
   * for outcome_unknown, otherwise the time the record entered its status.
   * The sweeper passes now to find overdue outcome_unknown records.
   */
  readonly until?: string;
  /**
   * Only these tenants' records (an operator's tenant scope). The listing then
   * reads on past other tenants' index entries until the page holds `limit`
   * records of these tenants, so a page is short only at the end and the
   * number of pages follows these tenants' records alone
   * (docs/table-design.md, "Listing one tenant's records"). Empty: nothing.
   * Absent: every tenant's records (the sweeper).
   */
  readonly tenants?: readonly string[];
  /** 1 .. 100, default 25. */
  readonly limit?: number;
  readonly cursor?: string;
}

export interface Page<T> {
  readonly items: T[];
  /** Opaque; absent on the last page. */
  readonly cursor?: string;
}

export interface ListReceiptsQuery extends RecordRef {
  readonly limit?: number;
  readonly cursor?: string;
}

export interface TransactionStore {
  /** Look up by exactly one of transaction ID, plan ID or action ID; undefined when none matches. */
  get(selector: TransactionSelector): Promise<TransactionRecord | undefined>;
  /** Operator / sweeper listing through the sparse status index. */
  listByStatus(query: ListByStatusQuery): Promise<Page<TransactionRecord>>;
  /**
   * Several listings together, each page as `listByStatus` gives it (the operator overview): a store may read what
   * two of them read alike once.
   */
  listByStatuses(queries: readonly ListByStatusQuery[]): Promise<Page<TransactionRecord>[]>;
  /** The receipt chain in order (strongly consistent). */
  listReceipts(query: ListReceiptsQuery): Promise<Page<StoredReceipt>>;
}
