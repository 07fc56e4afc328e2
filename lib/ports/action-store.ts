/**
 * Port: the durable action record (one per action ID and tenant).
 *
 * The record carries the validated envelope because queue messages carry
 * identifiers (and, on a fresh admission's, the action's image less its input):
 * a worker reads the action back from here, or its lease's write answers it. Every write is
 * ONE conditional write naming the expected statuses and revision (creation:
 * that the record does not exist) and raises `revision` by exactly one.
 *
 * Attempts hold a fenced lease: `acquireLease` raises `fence` (and `attempt`)
 * by one and refuses while another owner's lease is live. Every write an
 * attempt makes (`settle`, `renewLease`, a fenced `transition`) is
 * conditional on the fence it holds, so a zombie holding an older fence can
 * never write over a newer attempt.
 *
 * Errors (all AipError):
 * - `action.already_exists` (create): details { action_id, current_status, current_revision }.
 * - `action.not_found`: the record to change does not exist.
 * - `action.state_conflict`: lost race / wrong status or revision. details:
 *   { action_id, operation, current_status, current_revision,
 *   expected_revision?, allowed_statuses, reason? }, read from the failed
 *   conditional write itself (never a second read).
 * - `action.lease_held`: another owner holds an unexpired lease (details
 *   lease_owner, lease_expires_at, fence, current_status, current_revision).
 * - `action.fence_stale`: the caller's fence is not the current one (a
 *   zombie attempt), details { held_fence, current_fence, current_status, ... }.
 * - `action.invalid_record`: malformed input (IDs, statuses, lease, sizes).
 * - `transaction.store_unavailable` / `transaction.record_too_large`: shared
 *   table failures (lib/aws/dynamo/transaction-store.ts mapStoreError).
 *
 * The DynamoDB adapter is lib/aws/dynamo/action-store.ts.
 */
import type {
  Action,
  ActionResult,
  ActionStatus,
  JsonObject,
  Principal,
  ProviderOperationRef,
  TransactionMode,
} from '../../packages/connector-sdk/src/protocol/index.js';
import type { RouteAssignment } from './route-store.js';

/** Action statuses an action can never leave. */
export const TERMINAL_ACTION_STATUS_LIST = ['completed', 'failed', 'cancelled'] as const satisfies readonly ActionStatus[];
/** Action statuses a worker may lease from (an attempt runs in `running`). */
export const LEASABLE_ACTION_STATUSES = ['accepted', 'running'] as const satisfies readonly ActionStatus[];

export interface ActionRecord {
  readonly tenant_id: string;
  readonly action_id: string;
  /** The runtime principal that submitted the action. */
  readonly principal: Principal;
  readonly capability_id: string;
  /** `action.transaction.mode` when the action carries a transaction context. */
  readonly mode?: TransactionMode;
  /** The transaction this action is bound to (may be filled in after creation). */
  readonly transaction_id?: string;
  readonly status: ActionStatus;
  /** Compare-and-set revision: 1 after creation, +1 on every write. */
  readonly revision: number;
  /**
   * The validated envelope (transaction ID filled in by the runtime where it
   * copied or generated one). When `input_redacted` is true, `action.input`
   * is `{ redacted: true, hash }` (hash = planInputHash(capability_id,
   * input); the data contract requires redaction), not the raw input.
   */
  readonly action: Action;
  /** True once the raw input was dropped (settle/transition with redact_input). */
  readonly input_redacted?: boolean;
  /** planInputHash(capability_id, input), computed at create (kept after redaction). */
  readonly input_hash: string;
  readonly result?: ActionResult;
  readonly approval_id?: string;
  readonly idempotency_key?: string;
  /**
   * Recovery data a first-class reconcile request supplied (provider
   * operation, cursor), kept with the action so that a reconcile waiting for
   * an approval still has it when it resumes.
   */
  readonly recovery?: ActionRecovery;
  /** See RecordedActor (absent on records written before it existed). */
  readonly actor?: RecordedActor;
  /** Lease grants so far (0 = never leased). Only the holder of the current fence may settle. */
  readonly fence: number;
  /** Attempts started so far (each lease grant starts one). */
  readonly attempt: number;
  readonly lease_owner?: string;
  /** RFC 3339 (UTC, ms). */
  readonly lease_expires_at?: string;
  /**
   * The fence of the last attempt that gave its lease back certified "the
   * connector was not called" (`action.release_lease`: a remote host's signed
   * capacity refusal). While it equals `fence`, no attempt of this action can
   * have reached the provider since that lease, so the next attempt is a first
   * attempt again, not a recovery (lib/runtime/attempts/recovery.ts `attemptStarted`).
   */
  readonly released_fence?: number;
  /** Attempts given back unstarted so far (each `action.release_lease` adds one): the durable count of capacity deferrals. */
  readonly deferrals?: number;
  /**
   * The action-scoped route, pinned by the first attempt start's own write (`AcquireActionLeaseInput.route`) or a
   * preview's `action.pin_route`; immutable once set. Absent on an action never started, and on one an earlier
   * version pinned in a `ROUTE` item of its own (RouteStore.get reads both).
   */
  readonly route?: RouteAssignment;
  /**
   * What the attempt that settled this action learned that its transaction record's settlement writes and the
   * action's result does not say (docs/table-design.md, "The action settles first"): set only by a definitive
   * settlement that writes the action alone first and the record after it, so that whoever finds the record still
   * in its attempt status finishes it exactly as that attempt would have (lib/runtime/attempts/settlement.ts
   * `recordSettlement`). Absent on every other action.
   */
  readonly settlement?: ActionSettlementFacts;
  readonly cancel_requested_at?: string;
  readonly created_at: string;
  readonly updated_at: string;
  /** Epoch seconds; set only when a retention was requested for a terminal action. */
  readonly ttl?: number;
}

/**
 * What an attempt needs of an action before its lease: the record, or the image a fresh admission sent with its
 * invoke message, which is the stored item without `action.input` (lib/ports/messages.ts, `admitted`). The input
 * comes back with the lease's own write (the record after it), so nothing before the lease may read it.
 */
export type ActionHead = Omit<ActionRecord, 'action'> & { readonly action: Omit<Action, 'input'> };

export interface ActionRef {
  readonly tenant_id: string;
  readonly action_id: string;
}

/**
 * The verified facts about who submitted the action, from the token the
 * admission verified (or the runtime's own service identity): what an
 * attempt's trusted `actor` context is built from.
 */
export interface RecordedActor {
  /** `bearer_jwt` for a verified token; `aip_runtime_service` for the runtime's own actions. */
  readonly scheme: string;
  readonly issuer?: string;
  /** The scopes the verified token granted. */
  readonly scopes: readonly string[];
  readonly issued_at?: string;
  readonly expires_at?: string;
}

export interface ActionRecovery {
  readonly provider_operation?: ProviderOperationRef;
  readonly reconciliation_cursor?: string;
}

export interface CreateActionInput {
  readonly tenant_id: string;
  readonly principal: Principal;
  /** The validated envelope. action_id and capability_id are taken from it. */
  readonly action: Action;
  /** Default `accepted`. A record may be created straight in `requires_human` or a terminal status (rejections). */
  readonly status?: ActionStatus;
  /** Default: action.transaction?.transaction_id. */
  readonly transaction_id?: string;
  readonly approval_id?: string;
  readonly result?: ActionResult;
  /** See ActionRecord.recovery. */
  readonly recovery?: ActionRecovery;
  /** See ActionRecord.actor. */
  readonly actor?: RecordedActor;
  /** Drop the raw input right away (only allowed with a terminal status). */
  readonly redact_input?: boolean;
  /** Store this pointer-redacted copy of the input (terminal status only); the input hash is computed from `action.input`. */
  readonly redacted_input?: JsonObject;
  /** Retention of a record created terminal (sets `ttl`); ignored otherwise. */
  readonly retention_seconds?: number;
  /**
   * The action created already leased (status `accepted`, the default, only): its creation is its first attempt's
   * lease, exactly as `acquireLease` would grant it on the new record (`running`, fence 1, attempt 1, the owner and
   * expiry, the route pinned). Revision 1 and `running` then say that nothing has written the action since its
   * creation. The reconcile consumer's own actions (lib/runtime/reconciliation.ts; docs/table-design.md, "The
   * reconcile action created leased").
   */
  readonly lease?: CreationLease;
}

/** The lease a creation grants (see CreateActionInput.lease): the lease's owner, its time to live and the route it pins. */
export type CreationLease = Pick<AcquireActionLeaseInput, 'owner' | 'ttl_ms' | 'route'>;

export interface ActionPatch {
  readonly result?: ActionResult;
  readonly approval_id?: string;
  readonly transaction_id?: string;
  /** Replace the raw input by `{ redacted: true, hash }` (irreversible). */
  readonly redact_input?: boolean;
  /** Replace the stored input by this copy with values redacted at the data contract's pointers (terminal only; the input hash is kept). */
  readonly redacted_input?: JsonObject;
  /** Retention of a terminal record (sets `ttl`); ignored for non-terminal targets. */
  readonly retention_seconds?: number;
}

export interface TransitionActionInput extends ActionRef {
  /** Allowed current statuses (never terminal ones: a terminal action is never rewritten). */
  readonly from: readonly ActionStatus[];
  readonly to: ActionStatus;
  readonly expected_revision: number;
  /** When given, the write is also conditional on this being the current fence. */
  readonly fence?: number;
  readonly patch?: ActionPatch;
}

export interface AcquireActionLeaseInput extends ActionRef {
  readonly owner: string;
  /** 1 .. 86_400_000. */
  readonly ttl_ms: number;
  readonly expected_revision: number;
  /** Default LEASABLE_ACTION_STATUSES. The record moves to `running`. */
  readonly from?: readonly ActionStatus[];
  /**
   * The route to pin with the lease, given only when the record read at `expected_revision` holds none: the
   * revision condition makes it put-if-absent (a concurrent pin moved the revision). Its tenant and action ID are the
   * action's.
   */
  readonly route?: RouteAssignment;
  /**
   * The action's capability (it never changes), when the caller holds it without the whole record: a route pinned for
   * that same capability then stores no copy of it. The write is conditioned on it.
   */
  readonly action_capability_id?: string;
}

/** A route pinned without a lease (a preview calling its handler inline): one conditional write, revision + 1. */
export interface PinActionRouteInput extends ActionRef {
  readonly expected_revision: number;
  readonly route: RouteAssignment;
}

export interface RenewActionLeaseInput extends ActionRef {
  readonly owner: string;
  /** The fence the caller holds. */
  readonly fence: number;
  readonly ttl_ms: number;
}

/**
 * The attempt holding `fence` (and the lease as `owner`) ends WITHOUT reaching
 * the provider and gives its lease back: the lease is removed, `released_fence`
 * is set to `fence` and `deferrals` grows by one; the status stays `running`
 * (the action is still in progress, its message is redelivered later).
 * Conditional on status `running`, the fence and the owner: an attempt whose
 * lease was taken over is `action.fence_stale` and writes nothing.
 */
export interface ReleaseActionLeaseInput extends ActionRef {
  readonly owner: string;
  readonly fence: number;
}

/**
 * A fence check that writes nothing: the attempt holding `fence` is still the
 * action's current attempt (no newer lease was granted). It goes into the same
 * atomic write as a transaction write of that attempt (a provider-operation
 * checkpoint), so a superseded attempt cannot write the transaction record.
 */
export interface CheckFenceInput extends ActionRef {
  readonly fence: number;
}

/** See ActionRecord.settlement. */
export interface ActionSettlementFacts {
  /**
   * The attempt that settled the action (the record's `data.last_attempt` and its receipt's evidence name it); the
   * marker `true` when it is the attempt that pinned the action's route with the same fence
   * (`route.admission_reservation`, `route.fence_token` = `fence`), which the route already says.
   */
  readonly attempt_id: string | true;
  /** A provider operation the attempt learned with the provider's answer in hand and no checkpoint wrote. */
  readonly provider_operation?: ProviderOperationRef;
  /** A reconciliation cursor the attempt learned (not from the result's error). */
  readonly reconciliation_cursor?: string;
}

export interface SettleActionInput extends ActionRef {
  /** The fence the caller holds; only the current fence may settle. */
  readonly fence: number;
  readonly to: 'completed' | 'failed' | 'cancelled';
  readonly result: ActionResult;
  /** Optional extra guard; the fence is the ownership guard. */
  readonly expected_revision?: number;
  /** Default ['running']. */
  readonly from?: readonly ActionStatus[];
  /** Drop the raw input, keeping `{ redacted: true, hash }` (data contract requires redaction). */
  readonly redact_input?: boolean;
  /** Store a pointer-redacted copy of the input instead (see ActionPatch.redacted_input). */
  readonly redacted_input?: JsonObject;
  /** Sets `ttl` = now + retention_seconds. */
  readonly retention_seconds?: number;
  /** Stored as ActionRecord.settlement (a settlement whose transaction record is written after the action). */
  readonly settlement?: ActionSettlementFacts;
}

/**
 * Redacts the input of an action that is already terminal (its outcome became
 * definitive later: an uncertain original once reconciled or resolved).
 * Conditional on the revision; irreversible.
 */
export interface RedactTerminalInput extends ActionRef {
  readonly expected_revision: number;
  readonly redact_input?: boolean;
  readonly redacted_input?: JsonObject;
  readonly retention_seconds?: number;
}

export interface RequestCancelInput extends ActionRef {
  /** Optional extra guard. */
  readonly expected_revision?: number;
}

export interface ActionStore {
  /** Strongly consistent read; undefined when absent. */
  get(ref: ActionRef): Promise<ActionRecord | undefined>;
}
