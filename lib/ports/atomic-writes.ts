/**
 * Port: composite writes that change records of several stores in ONE atomic,
 * conditional write (docs/runtime-stores.md, "Composite writes").
 *
 * Each store port owns its item and its conditions; this port only groups
 * writes those ports already define, so that an admission, an attempt start
 * and a settlement each cost one round trip and leave no window in which one record changed
 * and the others did not. Every part keeps exactly the condition its own
 * store would apply (creation: not exists; reservation: absent or expired;
 * transaction: allowed statuses, revision, receipt chain; action: fence;
 * reservation owner: action ID + fence). Either every part is written or none.
 *
 * Lost races are reported from the failed write itself (the image of each
 * refused item), never by a second read:
 *
 * - `admit` returns `{ admitted: false, ... }` naming every refused part with
 *   the current record that refused it; nothing was written. The caller
 *   decides (resubmission of the same action ID, idempotent replay,
 *   `idempotency.in_flight`, `idempotency.fingerprint_mismatch`, the replay
 *   gate on an existing transaction).
 * - `settle` throws what `TransactionStore.settle` would throw when the
 *   transaction or its receipt refused the write (`transaction.state_conflict`,
 *   `transaction.provider_operation_conflict`, ...). When only the action
 *   and/or the reservation refused it, it returns `{ settled: false, refused }`
 *   with the typed errors those stores would have raised (`action.fence_stale`,
 *   `action.state_conflict`, `idempotency.not_owner`); nothing was written and
 *   the caller may retry without the refused parts.
 * - `startAttempt` returns `{ started: false, refused }` naming every refused
 *   part with its typed error (a route assignment that already exists: the
 *   stored one, as `RouteStore.putIfAbsent` returns it); nothing was written.
 * - A concurrent transaction on the same items (DynamoDB TransactionConflict)
 *   is retried a few times by the adapter, then reported as
 *   `transaction.state_conflict` with details.reason `transaction_conflict`.
 *
 * The DynamoDB adapter is lib/aws/dynamo/atomic-writes.ts (one
 * TransactWriteItems; at most 5 items here, well inside the 100-item and
 * 4 MB limits; every part is a different item, as DynamoDB requires).
 */
import type { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { AcquireActionLeaseInput, ActionRecord, CreateActionInput, SettleActionInput } from './action-store.js';
import type { AdoptInput, CompleteInput, IdempotencyReservation, OwnerInput, ReserveInput, ReserveOutcome } from './idempotency-store.js';
import type { AcquireLeaseInput, ClaimPlanInput, CreateTransactionInput, SettleInput, TransactionRecord } from './transaction-store.js';
import type { PutRouteResult, RouteAssignment } from './route-store.js';

export interface AdmitWriteInput {
  /** Create the action record (not exists). */
  readonly action: CreateActionInput;
  /** Reserve the idempotency key (absent or expired). */
  readonly reservation?: ReserveInput;
  /** Create the transaction record with its first receipt (not exists). */
  readonly transaction?: CreateTransactionInput;
  /** Or claim a planned record for this commit (planned → committing, revision and receipt head conditioned), from the record read. */
  readonly claim?: { readonly input: ClaimPlanInput; readonly held: TransactionRecord };
}

export type AdmitWriteOutcome =
  | {
      readonly admitted: true;
      readonly action: ActionRecord;
      readonly reservation?: IdempotencyReservation;
      readonly transaction?: TransactionRecord;
    }
  | {
      readonly admitted: false;
      /** The action ID already exists: its current record. */
      readonly existing_action?: ActionRecord;
      /** The key is held by an unexpired reservation: what it answers. */
      readonly reservation?: Exclude<ReserveOutcome, { outcome: 'reserved' }>;
      /** The key is held with a different fingerprint (`idempotency.fingerprint_mismatch`). */
      readonly reservation_error?: AipError;
      /** The transaction ID already exists: its current record. */
      readonly existing_transaction?: TransactionRecord;
      /** The plan claim was refused: what TransactionStore.claimPlan would have thrown (transaction.state_conflict, ...). */
      readonly claim_error?: AipError;
    };

export type IdempotencySettlement =
  | { readonly kind: 'complete'; readonly input: CompleteInput }
  | { readonly kind: 'mark_uncertain'; readonly input: OwnerInput };

export interface SettleWriteInput {
  /** Settle the transaction (with its receipt), from the record the attempt holds. */
  readonly transaction?: { readonly input: SettleInput; readonly held: TransactionRecord };
  /** Settle the action (fenced). */
  readonly action?: SettleActionInput;
  /** Complete or mark uncertain the reservation (owner-conditioned). */
  readonly idempotency?: IdempotencySettlement;
}

export type SettleWriteOutcome =
  | { readonly settled: true; readonly transaction?: TransactionRecord }
  | { readonly settled: false; readonly refused: { readonly action?: AipError; readonly idempotency?: AipError } };

export interface StartWriteInput {
  /** Lease the action (fence + 1), from the record read at `expected_revision`. */
  readonly action: { readonly input: AcquireActionLeaseInput; readonly held: ActionRecord };
  /** Lease the transaction (with its `attempt_started` receipt), from the record the attempt read. */
  readonly transaction?: { readonly input: AcquireLeaseInput; readonly held: TransactionRecord };
  /** The new attempt adopts the reservation (stored fence < new fence). */
  readonly idempotency?: AdoptInput;
  /**
   * Write the action's route assignment if none exists (RouteStore.putIfAbsent's
   * item and condition): a first attempt pins its route in the same write that
   * takes its leases, so the route is durable before the provider is called.
   */
  readonly route?: RouteAssignment;
}

export type StartWriteOutcome =
  | { readonly started: true; readonly action: ActionRecord; readonly transaction?: TransactionRecord; readonly route?: PutRouteResult }
  | {
      readonly started: false;
      /**
       * The typed errors each refusing store would have raised (action.lease_held, transaction.lease_held,
       * *.state_conflict, idempotency.not_owner). `route`: an assignment already exists for the action; it is
       * returned (from the cancelled write's image) as putIfAbsent returns it, for the caller's reuse rules.
       */
      readonly refused: { readonly action?: AipError; readonly transaction?: AipError; readonly idempotency?: AipError; readonly route?: PutRouteResult };
    };

export interface AttemptReadInput {
  readonly tenant_id: string;
  readonly action_id: string;
  /** The transaction the invocation message names, read in the same request. */
  readonly transaction_id?: string;
}

export interface AttemptRead {
  /** The action record (undefined: absent), as `ActionStore.get` returns it. */
  readonly action: ActionRecord | undefined;
  /** Present when the transaction item was read (record undefined: absent), as `TransactionStore.get` returns it. */
  readonly transaction?: { readonly transaction_id: string; readonly record: TransactionRecord | undefined };
}

export interface AtomicWrites {
  /**
   * The records an attempt starts from, the action and the transaction its
   * message names, read strongly consistently in ONE request (the same
   * capacity as two reads).
   */
  loadAttempt(input: AttemptReadInput): Promise<AttemptRead>;
  /** Attempt start: action lease + transaction lease (+ receipt) + reservation adoption (+ the route assignment of a first attempt) in one write. Nothing is written when any part refuses. */
  startAttempt(input: StartWriteInput): Promise<StartWriteOutcome>;
  /** Admission: action + reservation + transaction creation or plan claim (+ receipt) in one write. */
  admit(input: AdmitWriteInput): Promise<AdmitWriteOutcome>;
  /** Settlement: transaction (+ receipt) + action + reservation in one write. */
  settle(input: SettleWriteInput): Promise<SettleWriteOutcome>;
}
