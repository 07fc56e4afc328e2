/**
 * Port: the unit of work. Every durable change the runtime makes is a typed
 * write intent, and every intent is written through ONE method, `commit`
 * (docs/runtime-stores.md, "The unit of work").
 *
 * A runtime step does not call store write methods: it builds the intents of
 * one transition (claim the plan, take the attempt's lease, complete the
 * reservation, append the receipt, ...), each carrying the state and revision
 * it expects, and commits them together. Either every intent is written or
 * none is.
 *
 * - One intent is one conditional write; several are one atomic write (the
 *   DynamoDB adapter: a conditional PutItem/UpdateItem, or one
 *   TransactWriteItems). Which one is the adapter's business.
 * - A refused condition is never an exception: `commit` answers
 *   `{ committed: false, refused }`, naming every refusing intent by its index
 *   with the typed error its condition means and, where the refusal carries
 *   it, the current record (an existing action, a held idempotency key, a
 *   stored route). Nothing was written. The classification is done once, in
 *   the adapter, from the images the failed write returned; never by a
 *   second read.
 * - `commit` throws for what is not a refusal: invalid input
 *   (`*.invalid_record`, before anything is sent), an unavailable store, or a
 *   race lost to a concurrent atomic write after the adapter's retries
 *   (`transaction.state_conflict`, details.reason `transaction_conflict`).
 *
 * The intents are listed in one table, `IntentTable`: its input, what a
 * committed intent answers, and what a refusal may carry. A transition then
 * lives in three places: the state machine's table
 * (lib/transactions/state-machine.ts), the step that emits its intent, and the
 * adapter's mapping of that intent (lib/aws/dynamo/unit-of-work.ts).
 *
 * Reads stay on the per-store ports (ActionStore, TransactionStore, ...),
 * which no longer have write methods.
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type {
  AcquireActionLeaseInput,
  ActionRecord,
  CheckFenceInput,
  CreateActionInput,
  RedactTerminalInput,
  PinActionRouteInput,
  ReleaseActionLeaseInput,
  RenewActionLeaseInput,
  RequestCancelInput,
  SettleActionInput,
  TransitionActionInput,
} from './action-store.js';
import type { ApprovalRecord, CreateApprovalInput, DecideApprovalInput, ExpireApprovalInput, WithdrawApprovalInput } from './approval-store.js';
import type { AdoptInput, CompleteInput, IdempotencyReservation, OwnerInput, ReserveInput, ReserveOutcome } from './idempotency-store.js';
import type { AppendChunkInput, StoredStreamChunk } from './stream-store.js';
import type {
  AcquireLeaseInput,
  CheckpointProviderOperationInput,
  ClaimDirectCommitInput,
  ClaimPlanInput,
  CreateTransactionInput,
  SettleInput,
  TransactionRecord,
  TransitionInput,
} from './transaction-store.js';

/**
 * Every kind of intent: its `input`, what a committed intent answers
 * (`written`), and the current record a refusal may carry (`current`).
 * An update answers its record after the write; `undefined` when it was
 * written in one atomic write with other intents and the record after it is
 * not known without a read (a lone intent always answers it; `action.lease`
 * answers it from `held`, and a transaction compare-and-set always does).
 * A transaction compare-and-set may name the record it `held` (read at the
 * expected revision), so that the record after the write is computed without
 * a read back.
 */
export interface IntentTable {
  // The transaction record and its receipt chain (every write appends the next receipt).
  'transaction.create': { input: CreateTransactionInput; written: TransactionRecord; current: TransactionRecord };
  'transaction.claim_direct_commit': { input: ClaimDirectCommitInput; written: TransactionRecord; current: TransactionRecord };
  'transaction.claim_plan': { input: ClaimPlanInput; written: TransactionRecord; current: never };
  'transaction.transition': { input: TransitionInput; written: TransactionRecord; current: never };
  'transaction.settle': { input: SettleInput; written: TransactionRecord; current: never };
  'transaction.lease': { input: AcquireLeaseInput; written: TransactionRecord; current: never };
  'transaction.checkpoint': { input: CheckpointProviderOperationInput; written: TransactionRecord; current: never };
  // The action record.
  'action.create': { input: CreateActionInput; written: ActionRecord; current: ActionRecord };
  'action.transition': { input: TransitionActionInput; written: ActionRecord | undefined; current: never };
  'action.lease': { input: AcquireActionLeaseInput; written: ActionRecord | undefined; current: never };
  'action.renew_lease': { input: RenewActionLeaseInput; written: ActionRecord | undefined; current: never };
  // An attempt certified not to have reached the provider gives its lease back (a remote capacity refusal).
  'action.release_lease': { input: ReleaseActionLeaseInput; written: ActionRecord | undefined; current: never };
  // A preview that calls its handler inline pins the action's route without a lease (an attempt pins it with its lease).
  'action.pin_route': { input: PinActionRouteInput; written: ActionRecord | undefined; current: never };
  'action.settle': { input: SettleActionInput; written: ActionRecord | undefined; current: never };
  'action.redact': { input: RedactTerminalInput; written: ActionRecord | undefined; current: never };
  'action.request_cancel': { input: RequestCancelInput; written: ActionRecord | undefined; current: never };
  // Writes nothing: only in one atomic write with a transaction write of the attempt that holds the fence.
  'action.check_fence': { input: CheckFenceInput; written: undefined; current: never };
  // The idempotency reservation of a key.
  'idempotency.reserve': { input: ReserveInput; written: IdempotencyReservation; current: Exclude<ReserveOutcome, { outcome: 'reserved' }> };
  'idempotency.complete': { input: CompleteInput; written: IdempotencyReservation | undefined; current: never };
  'idempotency.mark_uncertain': { input: OwnerInput; written: IdempotencyReservation | undefined; current: never };
  'idempotency.expire_rejected': { input: OwnerInput; written: IdempotencyReservation | undefined; current: never };
  'idempotency.adopt': { input: AdoptInput; written: IdempotencyReservation | undefined; current: never };
  // Approvals.
  'approval.create': { input: CreateApprovalInput; written: ApprovalRecord; current: never };
  'approval.decide': { input: DecideApprovalInput; written: ApprovalRecord | undefined; current: never };
  'approval.expire': { input: ExpireApprovalInput; written: ApprovalRecord | undefined; current: never };
  'approval.withdraw': { input: WithdrawApprovalInput; written: ApprovalRecord | undefined; current: never };
  // Stream chunks of a streaming action.
  'stream.append': { input: AppendChunkInput; written: StoredStreamChunk; current: never };
}

export type IntentKind = keyof IntentTable;

/** Kinds whose intent may name the record read at the expected revision. */
type HeldKinds = 'transaction.claim_plan' | 'transaction.transition' | 'transaction.settle' | 'transaction.lease' | 'transaction.checkpoint';

export type IntentOf<K extends IntentKind> = K extends HeldKinds
  ? { readonly kind: K; readonly input: IntentTable[K]['input']; readonly held?: TransactionRecord }
  : K extends 'action.lease'
    ? { readonly kind: K; readonly input: IntentTable[K]['input']; readonly held?: ActionRecord }
    : { readonly kind: K; readonly input: IntentTable[K]['input'] };

export type WriteIntent = { [K in IntentKind]: IntentOf<K> }[IntentKind];

export type WrittenOf<I> = I extends { readonly kind: infer K extends IntentKind } ? IntentTable[K]['written'] : never;

/** One refusing intent: its index in the committed list, the typed error its condition means, and the current record it carries. */
export type Refusal = {
  [K in IntentKind]: {
    readonly index: number;
    readonly kind: K;
    readonly error: AipError;
    readonly current?: IntentTable[K]['current'];
  };
}[IntentKind];

export type CommitOutcome<I extends readonly WriteIntent[]> =
  | { readonly committed: true; readonly written: { -readonly [P in keyof I]: WrittenOf<I[P]> } }
  | { readonly committed: false; readonly refused: readonly Refusal[] };

export interface UnitOfWork {
  /** Writes every intent or none; a refused condition is answered, not thrown (see the module comment). */
  commit<const I extends readonly WriteIntent[]>(intents: I): Promise<CommitOutcome<I>>;
}

/**
 * One intent, for a step that writes one thing: its written value, or the
 * refusal's typed error thrown. The same `commit`, not a second path.
 */
export async function commitOne<I extends WriteIntent>(uow: UnitOfWork, intent: I): Promise<NonNullable<WrittenOf<I>>> {
  const out = await uow.commit([intent] as const);
  if (!out.committed) throw (out.refused[0] as Refusal).error;
  const written = out.written[0] as WrittenOf<I> | undefined;
  if (written === undefined || written === null) throw new AipError('internal.unexpected', `a lone ${intent.kind} answered no record`);
  return written as NonNullable<WrittenOf<I>>;
}
