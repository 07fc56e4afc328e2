import { inspect } from 'node:util';
import { AipError } from './errors/aip-error.js';
import { ProviderOperationRefSchema, ReconciliationCursorSchema, type Principal, type ProviderOperationRef, type TransactionMode } from './protocol/index.js';
import { systemClock, type Clock } from './ports/clock.js';
import type { StreamSink } from './ports/stream-sink.js';
import { CredentialHandle } from './credentials/handle.js';
import { RuntimeStreamPublisher, type StreamPublisher, type StreamSummary } from './stream.js';

// ---------------------------------------------------------------------------
// Field types (the page's table)
// ---------------------------------------------------------------------------

/**
 * Transport-authenticated principal, issuer, scheme, scopes and lifetime: the
 * token the runtime verified when it admitted the action (`bearer_jwt`), or
 * the runtime's own service identity (`aip_runtime_service`) for the actions
 * it submits itself.
 */
export interface ActorContext {
  readonly principal: Principal;
  readonly issuer: string;
  /** Authentication scheme, e.g. `bearer_jwt`, `aip_runtime_service`, `sigv4`, `mtls`. */
  readonly scheme: string;
  /** The scopes the verified token granted. */
  readonly scopes: readonly string[];
  /** The token's lifetime (`iat`, `exp`). An attempt may run after it ended: see `delegation`. */
  readonly lifetime: { readonly issued_at: Date; readonly expires_at: Date };
  /**
   * Present when the runtime acts on the principal's behalf beyond the
   * token: the attempt runs after the token expired (an approval resumed it,
   * a redelivery or the sweeper re-drove it), or the runtime's service
   * principal reconciles another principal's transaction (`on_behalf_of`).
   * The authority was checked when the action was admitted; a connector that
   * must not act on an expired authentication refuses here.
   */
  readonly delegation?: { readonly reason: 'token_expired_before_attempt' | 'runtime_reconciliation'; readonly on_behalf_of?: Principal };
}

/** Verified tenant membership (present only when the action is tenant-scoped). */
export interface TenantContext {
  readonly tenant_id: string;
  readonly external_account_id?: string;
}

/** Absolute execution deadline and remaining-time calculation. */
export interface ExecutionDeadline {
  readonly at: Date;
  /** Milliseconds until `at` (never negative). */
  remaining_ms(): number;
}

/**
 * Why an attempt was cancelled:
 * - `client_cancelled`: the caller (a user or client) cancelled the action;
 * - `deadline_exceeded`: the effective timeout passed (the runtime's deadline);
 * - `lease_lost`: another worker now owns the action (this attempt's lease ended);
 * - `shutdown`: the runtime process is stopping;
 * - `unspecified`: the canceller gave no reason the SDK recognizes.
 */
export const CANCELLATION_KINDS = ['client_cancelled', 'deadline_exceeded', 'lease_lost', 'shutdown', 'unspecified'] as const;
export type CancellationKind = (typeof CANCELLATION_KINDS)[number];

/** The typed reason of a cancellation, read as `ctx.cancellation_reason`. */
export interface CancellationReason {
  readonly kind: CancellationKind;
  /** The typed code the canceller aborted with, when it gave one (e.g. `sla.timeout_exceeded`). */
  readonly code?: string;
}

function isCancellationKind(v: unknown): v is CancellationKind {
  return typeof v === 'string' && (CANCELLATION_KINDS as readonly string[]).includes(v);
}

/**
 * The typed reason of an abort: an explicit kind wins; otherwise a reason that
 * is itself a kind (`'lease_lost'`) or carries one (`{ kind }`), a typed
 * `sla.timeout_exceeded` failure (`deadline_exceeded`), else `fallback`.
 */
export function cancellationReasonOf(reason: unknown, kind: CancellationKind | undefined, fallback: CancellationKind): CancellationReason {
  const obj = reason !== null && typeof reason === 'object' ? (reason as { kind?: unknown; code?: unknown }) : undefined;
  const code = typeof obj?.code === 'string' && /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/.test(obj.code) ? obj.code : undefined;
  const inferred: CancellationKind =
    kind ?? (isCancellationKind(reason) ? reason : isCancellationKind(obj?.kind) ? obj.kind : code === 'sla.timeout_exceeded' ? 'deadline_exceeded' : fallback);
  return Object.freeze({ kind: inferred, ...(code !== undefined ? { code } : {}) });
}

/**
 * Idempotency reservation owned by this attempt. Reservations are scoped to
 * (tenant, principal, key): two principals may use the same key for separate
 * actions, each with its own effect.
 */
export interface IdempotencyReservation {
  /**
   * The caller's raw idempotency key, as submitted. NOT unique across
   * principals or tenants: never send it (or a key derived from it alone, or
   * from it and the tenant) to a provider, or one principal's request is
   * deduplicated into another's effect.
   */
  readonly key: string;
  /**
   * The scope-unique identity of the reservation (see `reservationIdentity`
   * in lib/ports/idempotency-store.ts): deterministic from (tenant, principal
   * kind, principal ID, key), the same for every retry and attempt of the
   * action, different for two principals or two tenants using the same key.
   * Downstream idempotency keys must derive from it (the HTTP connector's
   * `downstreamIdempotencyKey` does).
   */
  readonly reservation_id: string;
  /** The attempt that owns the reservation. */
  readonly attempt_id: string;
}

/** Verified approval IDs, decision IDs, policy hashes, and authorization. */
export interface ApprovalEvidence {
  readonly approval_ids: readonly string[];
  readonly decision_ids: readonly string[];
  readonly policy_hashes: readonly string[];
  readonly authorization: {
    readonly decision: 'allow';
    readonly scopes: readonly string[];
    readonly policy_id?: string;
  };
}

/**
 * The identity of the original effect request a reconcile attempt is about:
 * the action whose response was lost (execute / commit / compensate), as the
 * runtime recorded it. A connector uses it to recompute the downstream
 * idempotency key the original request sent (see `originalIdempotencyKey` in
 * lib/connectors/http/idempotency.ts) and look the provider operation up by
 * that key when no provider operation ID was checkpointed.
 */
export interface OriginalRequestIdentity {
  /** The original action's ID (not the reconcile action's). */
  readonly action_id: string;
  /** The capability the original action invoked. */
  readonly capability_id: string;
  /** The transaction the original action belonged to. */
  readonly transaction_id: string;
  /**
   * The original action's idempotency reservation identity
   * (`reservationIdentity` in lib/ports/idempotency-store.ts), when it had
   * one: downstream keys derive from it, never from the caller's raw key.
   */
  readonly reservation_id?: string;
}

/** Transaction ID, provider operation ID, and reconciliation cursor. */
export interface TransactionExecutionContext {
  readonly transaction_id: string;
  readonly mode: TransactionMode;
  readonly plan_id?: string;
  /** The durable provider operation ID, when one was checkpointed (recovered on later attempts). */
  readonly provider_operation_id?: string;
  /** The full checkpointed reference (provider, operation ID, request ID). */
  readonly provider_operation?: ProviderOperationRef;
  /** The last opaque reconciliation cursor. */
  readonly cursor?: string;
  /**
   * Reconcile attempts: the identity of the original effect request being
   * reconciled (filled by the runtime from durable state, never from the
   * reconcile action's input). With it a connector that declares the
   * `idempotency_key` reconcile lookup can find the provider operation when
   * no `provider_operation_id` was checkpointed.
   */
  readonly original_request?: OriginalRequestIdentity;
}

/** Durable provider-operation checkpoint publisher. */
export interface TransactionCheckpointPublisher {
  /**
   * Call once the provider has accepted work and returned an operation ID,
   * BEFORE awaiting a commit response that may be lost. Resolves once the
   * reference is durable. Rejects with `transaction.invalid_provider_operation`
   * for an empty reference and `transaction.provider_operation_conflict` when
   * a different reference (provider or operation ID) is already checkpointed.
   * The same operation again is idempotent: the durable reference is kept
   * as first written (a replay's new request ID does not replace it).
   */
  checkpoint(ref: ProviderOperationRef, cursor?: string): Promise<void>;
  /**
   * The same reference when the provider's final answer is already in hand:
   * the connector returns its result or failure next, with nothing awaited in
   * between that could be lost (no body still to read, no polling, no
   * probe). The page asks for the durable checkpoint "before awaiting a
   * commit response that may be lost"; with the answer in hand there is no
   * such wait left, so the runtime may persist the reference in the attempt's
   * settlement write instead of a write of its own (it still writes it
   * durably first when anything of its own would be awaited before that
   * settlement). Same validation and conflict rules as `checkpoint`; resolves
   * once the runtime holds the reference. Before ANY wait that can be lost,
   * call `checkpoint`.
   */
  checkpoint_with_answer(ref: ProviderOperationRef, cursor?: string): Promise<void>;
}

/** Provider-effect durability checkpoint publisher. */
export interface ExecutionCheckpointPublisher {
  /**
   * Call when the provider system of record has durably accepted an
   * idempotent effect, before returning its response. A process-local
   * notification to the installed observer: it carries no payload and no
   * credentials, and it does not settle the action. Throws
   * AipError('connector.attempt_ended') once the attempt has ended.
   */
  provider_effect_committed(): void;
}

/** Trusted trace and span identifiers (W3C Trace Context: the runtime's span of this attempt, a child of the caller's). */
export interface TraceContext {
  readonly trace_id: string;
  /** The runtime's own span for this attempt. */
  readonly span_id: string;
  /** The caller's span, when the caller sent valid W3C IDs. */
  readonly parent_span_id?: string;
}

/** Input, output, and JSON-pointer redaction policy. */
export interface RedactionPolicy {
  /** The data contract requires redaction of retained input snapshots. */
  readonly redaction_required: boolean;
  /** RFC 6901 pointers into the action input to redact in records and logs. */
  readonly input_pointers: readonly string[];
  /** RFC 6901 pointers into the output to redact in records and logs. */
  readonly output_pointers: readonly string[];
}

// ---------------------------------------------------------------------------
// What the runtime supplies
// ---------------------------------------------------------------------------

/**
 * Authenticated and durable state for ONE attempt, assembled by the runtime.
 * Nothing here may come from ordinary action input or untrusted metadata.
 */
export interface TrustedAttemptState {
  readonly action_id: string;
  readonly attempt_id: string;
  readonly capability_id: string;
  readonly actor: ActorContext;
  readonly tenant?: TenantContext;
  readonly credential?: CredentialHandle;
  /** The effective deadline (see effectiveDeadline in deadline.ts). */
  readonly deadline_at: Date;
  readonly idempotency?: IdempotencyReservation;
  readonly approval?: ApprovalEvidence;
  readonly transaction?: TransactionExecutionContext;
  readonly trace: TraceContext;
  readonly redaction: RedactionPolicy;
  /** The capability was admitted with streaming (contract and flag). */
  readonly streaming: boolean;
}

/** Writes a provider-operation checkpoint to the durable transaction record (fenced by the runtime). */
export interface TransactionCheckpointWriter {
  checkpoint(input: {
    readonly transaction_id: string;
    readonly provider_operation: ProviderOperationRef;
    readonly reconciliation_cursor?: string;
  }): Promise<void>;
  /**
   * Optional: keep a reference the connector published with its answer in
   * hand (`checkpoint_with_answer`) for the attempt's settlement write, which
   * carries it (the attempt's `provider_operation`). A writer without it gets
   * every reference through `checkpoint`, durable before the call resolves.
   */
  hold?(input: { readonly transaction_id: string; readonly provider_operation: ProviderOperationRef; readonly reconciliation_cursor?: string }): Promise<void>;
}

/** What an installed provider-effect observer receives: identifiers only, no payload. */
export interface ProviderEffectCommittedEvent {
  readonly action_id: string;
  readonly attempt_id: string;
  readonly capability_id: string;
  readonly transaction_id?: string;
  readonly at: Date;
}

export interface ProviderEffectObserver {
  provider_effect_committed(event: ProviderEffectCommittedEvent): void;
}

/** Runtime facilities behind the context's publishers. */
export interface ExecutionFacilities {
  readonly clock?: Clock;
  /** Required when the attempt is transactional (see TRANSACTION_CHECKPOINT_MODES). */
  readonly transaction_checkpoints?: TransactionCheckpointWriter;
  readonly provider_effect_observer?: ProviderEffectObserver;
  /** Required when `streaming` is true. */
  readonly stream_sink?: StreamSink;
  /** Aborting it cancels the attempt (e.g. a client cancellation). */
  readonly parent_signal?: AbortSignal;
  /**
   * What an abort of `parent_signal` means when its reason names no kind
   * (see cancellationReasonOf). Default `client_cancelled`.
   */
  readonly parent_signal_kind?: CancellationKind;
}

/**
 * Modes in which a transaction record is in an attempt status (prepared,
 * committing, compensating, reconciling) and can take a checkpoint.
 */
export const TRANSACTION_CHECKPOINT_MODES: ReadonlySet<TransactionMode> = new Set<TransactionMode>(['execute', 'commit', 'compensate', 'reconcile']);

// ---------------------------------------------------------------------------
// The context
// ---------------------------------------------------------------------------

/** Module-private construction token: only createExecutionContext has it. */
const CONSTRUCT: unique symbol = Symbol('ActionExecutionContext.construct');
/** Symbol value held in an own enumerable property, so structuredClone throws a DataCloneError. */
const NOT_CLONEABLE: unique symbol = Symbol('ActionExecutionContext is attempt-scoped');
export const CONTEXT_REDACTED = 'ActionExecutionContext [REDACTED]';

interface ContextState {
  readonly trusted: TrustedAttemptState;
  readonly clock: Clock;
  readonly signal: AbortSignal;
  readonly deadline: ExecutionDeadline;
  readonly stream: RuntimeStreamPublisher;
  readonly checkpoint: TransactionCheckpointPublisher | undefined;
  readonly execution_checkpoints: ExecutionCheckpointPublisher;
  readonly record: AttemptRecord;
}

interface AttemptRecord {
  provider_operation: ProviderOperationRef | undefined;
  cursor: string | undefined;
  provider_effect_committed: boolean;
  /** The connector checkpointed (or tried to checkpoint) a valid provider operation in THIS attempt. */
  provider_operation_checkpointed: boolean;
  /** `provider_operation` is held for the settlement write (checkpoint_with_answer), not yet durable. */
  provider_operation_held: boolean;
  /** The attempt is over (ExecutionAttempt.retire): the context refuses credentials, checkpoints and the stream. */
  retired: boolean;
  cancellation: CancellationReason | undefined;
}

/** Module-private reader of a context's state: `let`, because the class's static block below assigns it. */
let readState: (ctx: ActionExecutionContext) => ContextState;

/**
 * The trusted, attempt-scoped execution context a connector receives.
 *
 * Built only by the runtime (createExecutionContext); its constructor needs
 * a module-private token. It is deliberately non-serializable:
 * JSON.stringify throws AipError('connector.context_not_serializable'),
 * structuredClone throws a DataCloneError, and util.inspect / console.log
 * print `ActionExecutionContext [REDACTED]`. Do not place it in a provider
 * payload, cache it, or rebuild it from caller-controlled fields.
 */
export class ActionExecutionContext {
  readonly #s: ContextState;
  /** Clone guard; carries no data. */
  readonly attempt_scoped: typeof NOT_CLONEABLE = NOT_CLONEABLE;

  /** @internal Use createExecutionContext (runtime only). */
  constructor(token: typeof CONSTRUCT, state: ContextState) {
    if (token !== CONSTRUCT) {
      throw new AipError('internal.unexpected', 'ActionExecutionContext is constructed only by the runtime');
    }
    this.#s = state;
    Object.freeze(this);
  }

  get actor(): ActorContext {
    return this.#s.trusted.actor;
  }
  get tenant(): TenantContext | undefined {
    return this.#s.trusted.tenant;
  }
  get credential(): CredentialHandle | undefined {
    return this.#s.trusted.credential;
  }
  get deadline(): ExecutionDeadline {
    return this.#s.deadline;
  }
  get cancellation(): AbortSignal {
    return this.#s.signal;
  }
  /**
   * Why `cancellation` aborted (client cancel, deadline, lost lease,
   * shutdown), or undefined while it has not. Already set when the abort
   * listeners run.
   */
  get cancellation_reason(): CancellationReason | undefined {
    return this.#s.record.cancellation;
  }
  get idempotency(): IdempotencyReservation | undefined {
    return this.#s.trusted.idempotency;
  }
  get approval(): ApprovalEvidence | undefined {
    return this.#s.trusted.approval;
  }
  /**
   * Transaction ID, mode, the durable provider operation and cursor. Once this
   * attempt checkpointed an operation, it is the one shown here (so that, for
   * example, cancel_typed called with this context uses the retained
   * reference, as the page asks).
   */
  get transaction(): TransactionExecutionContext | undefined {
    const t = this.#s.trusted.transaction;
    const ref = this.#s.record.provider_operation;
    if (t === undefined || ref === undefined || (t.provider_operation_id === ref.operation_id && t.provider_operation !== undefined)) return t;
    return Object.freeze({
      ...t,
      provider_operation_id: ref.operation_id,
      provider_operation: ref,
      ...(this.#s.record.cursor !== undefined ? { cursor: this.#s.record.cursor } : {}),
    });
  }
  /**
   * The durable provider-operation checkpoint publisher. Unavailable outside
   * a transactional action (no transaction, or mode dry_run / plan /
   * rollback_not_supported): reading it throws
   * AipError('connector.transaction_checkpoint_unavailable'). Guard with
   * `ctx.can_checkpoint`, not with `ctx.transaction !== undefined` (a
   * `rollback_not_supported` action has a transaction but no checkpoint).
   */
  get transaction_checkpoint(): TransactionCheckpointPublisher {
    const p = this.#s.checkpoint;
    if (p === undefined) {
      throw new AipError('connector.transaction_checkpoint_unavailable', undefined, {
        details: { mode: this.#s.trusted.transaction?.mode ?? null },
      });
    }
    return p;
  }
  /**
   * True exactly when `transaction_checkpoint.checkpoint(...)` can be called:
   * the action is transactional in a mode with an attempt status (`execute`,
   * `commit`, `compensate`, `reconcile`; not `rollback_not_supported`,
   * `dry_run`, `plan` or a plain invocation) and the attempt has not ended.
   * The guard to write before checkpointing.
   */
  get can_checkpoint(): boolean {
    return this.#s.checkpoint !== undefined && !this.#s.record.retired;
  }
  get execution_checkpoints(): ExecutionCheckpointPublisher {
    return this.#s.execution_checkpoints;
  }
  get stream(): StreamPublisher {
    return this.#s.stream;
  }
  get trace(): TraceContext {
    return this.#s.trusted.trace;
  }
  get redaction(): RedactionPolicy {
    return this.#s.trusted.redaction;
  }

  /** JSON.stringify(context) throws: the context is attempt-scoped. */
  toJSON(): never {
    throw new AipError('connector.context_not_serializable');
  }
  toString(): string {
    return CONTEXT_REDACTED;
  }
  [Symbol.toPrimitive](): string {
    return CONTEXT_REDACTED;
  }
  [inspect.custom](): string {
    return CONTEXT_REDACTED;
  }

  static {
    readState = (ctx) => ctx.#s;
  }
}

/** The runtime's handle on one attempt. */
export interface ExecutionAttempt {
  readonly context: ActionExecutionContext;
  readonly action_id: string;
  readonly attempt_id: string;
  readonly capability_id: string;
  /**
   * Signals cooperative cancellation: context.cancellation aborts with
   * `reason`, and context.cancellation_reason says why (`kind`, else inferred
   * from `reason`, see cancellationReasonOf).
   */
  cancel(reason?: unknown, kind?: CancellationKind): void;
  /**
   * Ends the attempt: later stream emits are rejected. With drain (the
   * default) it waits for pending chunk writes, so the terminal result is
   * recorded after every chunk.
   */
  end(options?: { readonly drain?: boolean }): Promise<StreamSummary>;
  /**
   * The attempt is over for good (runAttempt calls it before it returns): the
   * context becomes unusable. Credential resolution fails with
   * `connector.attempt_ended`, `transaction_checkpoint.checkpoint` rejects
   * with `connector.attempt_ended` (nothing reaches the writer),
   * `execution_checkpoints.provider_effect_committed` throws it (the
   * observer is not notified), `can_checkpoint` is false, and stream emits
   * are rejected (`connector.stream_closed`). Idempotent.
   */
  retire(): void;
  readonly retired: boolean;
  /** The provider operation known to this attempt (recovered or checkpointed during it). */
  readonly provider_operation: ProviderOperationRef | undefined;
  readonly reconciliation_cursor: string | undefined;
  /** True once the connector published provider_effect_committed. */
  readonly provider_effect_committed: boolean;
  /** `provider_operation` was published with the answer in hand (checkpoint_with_answer) and is not durable yet. */
  readonly provider_operation_held: boolean;
  /**
   * Makes a held reference durable (the writer's `checkpoint`) before the
   * runtime itself awaits anything that can be lost before its settlement
   * (a cancellation request to the provider after a deadline or a client's
   * cancel). Nothing to do when no reference is held. Rejects with the
   * writer's error (the reference stays held for the settlement).
   */
  persist_held(): Promise<void>;
}

/**
 * Builds the context for one attempt from trusted state. The runtime calls
 * this (runAttempt does); connectors never do.
 */
export function createExecutionContext(trusted: TrustedAttemptState, facilities: ExecutionFacilities = {}): ExecutionAttempt {
  assertTrusted(trusted);
  const clock = facilities.clock ?? systemClock;
  const frozen = freezeTrusted(trusted);

  const controller = new AbortController();
  const record: AttemptRecord = {
    provider_operation: frozen.transaction?.provider_operation,
    cursor: frozen.transaction?.cursor,
    provider_effect_committed: false,
    provider_operation_checkpointed: false,
    provider_operation_held: false,
    retired: false,
    cancellation: undefined,
  };
  // The typed reason is recorded before the signal aborts, so abort listeners can read it.
  const abort = (reason: unknown, kind: CancellationKind | undefined, fallback: CancellationKind): void => {
    if (controller.signal.aborted) return;
    record.cancellation = cancellationReasonOf(reason, kind, fallback);
    controller.abort(reason);
  };
  const parent = facilities.parent_signal;
  if (parent !== undefined) {
    const parentKind = facilities.parent_signal_kind;
    if (parent.aborted) abort(parent.reason, parentKind, 'client_cancelled');
    else parent.addEventListener('abort', () => abort(parent.reason, parentKind, 'client_cancelled'), { once: true });
  }

  const at = new Date(frozen.deadline_at.getTime());
  const deadline: ExecutionDeadline = Object.freeze({
    at,
    remaining_ms: () => Math.max(0, at.getTime() - clock.now().getTime()),
  });

  const stream = new RuntimeStreamPublisher({
    action_id: frozen.action_id,
    attempt_id: frozen.attempt_id,
    capability_id: frozen.capability_id,
    enabled: frozen.streaming,
    clock,
    ...(facilities.stream_sink ? { sink: facilities.stream_sink } : {}),
  });

  let checkpoint: TransactionCheckpointPublisher | undefined;
  const tx = frozen.transaction;
  if (tx !== undefined && TRANSACTION_CHECKPOINT_MODES.has(tx.mode)) {
    const writer = facilities.transaction_checkpoints;
    if (writer === undefined) {
      throw new AipError('internal.unexpected', 'a transactional attempt needs a transaction checkpoint writer');
    }
    const publish = async (ref: ProviderOperationRef, cursor: string | undefined, answered: boolean): Promise<void> => {
      if (record.retired) throw attemptEnded('transaction_checkpoint');
      const parsedRef = ProviderOperationRefSchema.safeParse(ref);
      if (!parsedRef.success) throw new AipError('transaction.invalid_provider_operation');
      // The provider accepted work (it returned an operation ID): from here on an effect may have happened.
      record.provider_operation_checkpointed = true;
      if (cursor !== undefined && !ReconciliationCursorSchema.safeParse(cursor).success) {
        throw new AipError('transaction.invalid_provider_operation', 'the reconciliation cursor must be a non-empty string of at most 4096 characters');
      }
      const known = record.provider_operation;
      if (known !== undefined && (known.provider !== parsedRef.data.provider || known.operation_id !== parsedRef.data.operation_id)) {
        throw new AipError('transaction.provider_operation_conflict', undefined, {
          details: { current_provider_operation: { provider: known.provider, operation_id: known.operation_id } },
        });
      }
      // The same operation again (a retry under the same idempotency identity gets the provider's replay, with
      // its own request ID): the reference already durable stays; only a new cursor is written, with it. A
      // reference only held for the settlement is written now if a durable checkpoint is asked for after all.
      // (A cursor is written durably: the settlement carries the reference only.)
      const hold = answered && writer.hold !== undefined && cursor === undefined;
      if (known !== undefined && cursor === undefined && (hold || !record.provider_operation_held)) return;
      const provider_operation = known ?? Object.freeze({ ...parsedRef.data });
      const input = { transaction_id: tx.transaction_id, provider_operation, ...(cursor !== undefined ? { reconciliation_cursor: cursor } : {}) };
      // With the answer in hand the runtime may keep the reference for its settlement write; otherwise durable now.
      if (hold) await writer.hold?.(input);
      else await writer.checkpoint(input);
      record.provider_operation = provider_operation;
      record.provider_operation_held = hold;
      if (cursor !== undefined) record.cursor = cursor;
    };
    checkpoint = Object.freeze({
      checkpoint: (ref: ProviderOperationRef, cursor?: string): Promise<void> => publish(ref, cursor, false),
      checkpoint_with_answer: (ref: ProviderOperationRef, cursor?: string): Promise<void> => publish(ref, cursor, true),
    });
  }

  const observer = facilities.provider_effect_observer;
  const execution_checkpoints: ExecutionCheckpointPublisher = Object.freeze({
    provider_effect_committed(): void {
      if (record.retired) throw attemptEnded('execution_checkpoints');
      record.provider_effect_committed = true;
      if (observer === undefined) return;
      try {
        observer.provider_effect_committed(
          Object.freeze({
            action_id: frozen.action_id,
            attempt_id: frozen.attempt_id,
            capability_id: frozen.capability_id,
            ...(tx ? { transaction_id: tx.transaction_id } : {}),
            at: clock.now(),
          }),
        );
      } catch {
        // A process-local notification: an observer failure must not change the attempt.
      }
    },
  });

  const context = new ActionExecutionContext(CONSTRUCT, {
    trusted: frozen,
    clock,
    signal: controller.signal,
    deadline,
    stream,
    checkpoint,
    execution_checkpoints,
    record,
  });

  return Object.freeze({
    context,
    action_id: frozen.action_id,
    attempt_id: frozen.attempt_id,
    capability_id: frozen.capability_id,
    cancel(reason?: unknown, kind?: CancellationKind): void {
      abort(reason, kind, 'unspecified');
    },
    end: (options?: { readonly drain?: boolean }) => stream.close(options),
    retire(): void {
      record.retired = true;
      void stream.close({ drain: false });
    },
    get retired() {
      return record.retired;
    },
    get provider_operation() {
      return record.provider_operation;
    },
    get reconciliation_cursor() {
      return record.cursor;
    },
    get provider_effect_committed() {
      return record.provider_effect_committed;
    },
    get provider_operation_held() {
      return record.provider_operation_held;
    },
    async persist_held(): Promise<void> {
      const writer = facilities.transaction_checkpoints;
      const ref = record.provider_operation;
      if (!record.provider_operation_held || ref === undefined || tx === undefined || writer === undefined) return;
      record.provider_operation_held = false;
      try {
        await writer.checkpoint({ transaction_id: tx.transaction_id, provider_operation: ref });
      } catch (err) {
        // Still held: the settlement carries it.
        record.provider_operation_held = true;
        throw err;
      }
    },
  });
}

/** The attempt identity a context belongs to (runtime use: dispatch checks it). */
export function contextAttemptIdentity(ctx: ActionExecutionContext): { action_id: string; attempt_id: string; capability_id: string } {
  const t = readState(ctx).trusted;
  return { action_id: t.action_id, attempt_id: t.attempt_id, capability_id: t.capability_id };
}

/** What the attempt behind a context learned so far (SDK and runtime use). */
export interface AttemptEvidence {
  /** The provider operation known to the attempt (recovered from durable state or checkpointed in it). */
  readonly provider_operation: ProviderOperationRef | undefined;
  /** The connector published provider_effect_committed in this attempt. */
  readonly provider_effect_committed: boolean;
  /** The connector checkpointed (or tried to checkpoint) a provider operation in this attempt: the provider accepted work. */
  readonly provider_operation_checkpointed: boolean;
  /** The attempt is over (ExecutionAttempt.retire). */
  readonly retired: boolean;
  readonly cancellation: CancellationReason | undefined;
}

const NO_EVIDENCE: AttemptEvidence = Object.freeze({
  provider_operation: undefined,
  provider_effect_committed: false,
  provider_operation_checkpointed: false,
  retired: false,
  cancellation: undefined,
});

/** The evidence of the attempt behind `ctx` (nothing, for an object that is not a runtime-built context). */
export function contextAttemptEvidence(ctx: ActionExecutionContext): AttemptEvidence {
  if (!(ctx instanceof ActionExecutionContext)) return NO_EVIDENCE;
  const r = readState(ctx).record;
  return {
    provider_operation: r.provider_operation,
    provider_effect_committed: r.provider_effect_committed,
    provider_operation_checkpointed: r.provider_operation_checkpointed,
    retired: r.retired,
    cancellation: r.cancellation,
  };
}

/** The typed error of a context used after its attempt ended. */
export function attemptEnded(facility: 'transaction_checkpoint' | 'execution_checkpoints'): AipError {
  return new AipError('connector.attempt_ended', undefined, { details: { facility } });
}

function assertTrusted(t: TrustedAttemptState): void {
  const problems: string[] = [];
  if (!(t.deadline_at instanceof Date) || Number.isNaN(t.deadline_at.getTime())) problems.push('deadline_at');
  for (const k of ['action_id', 'attempt_id', 'capability_id'] as const) if (typeof t[k] !== 'string' || t[k].length === 0) problems.push(k);
  if (t.credential !== undefined && !CredentialHandle.is(t.credential)) problems.push('credential');
  if (t.transaction !== undefined) {
    if (!t.transaction.transaction_id) problems.push('transaction.transaction_id');
    const ref = t.transaction.provider_operation;
    if (ref !== undefined && t.transaction.provider_operation_id !== undefined && ref.operation_id !== t.transaction.provider_operation_id) {
      problems.push('transaction.provider_operation_id');
    }
    const original = t.transaction.original_request;
    if (original !== undefined) {
      for (const k of ['action_id', 'capability_id', 'transaction_id'] as const) {
        if (typeof original[k] !== 'string' || original[k].length === 0) problems.push(`transaction.original_request.${k}`);
      }
      if (original.reservation_id !== undefined && (typeof original.reservation_id !== 'string' || original.reservation_id.length === 0)) {
        problems.push('transaction.original_request.reservation_id');
      }
    }
  }
  if (problems.length > 0) throw new AipError('internal.unexpected', 'invalid trusted attempt state', { details: { fields: problems } });
}

function freezeTrusted(t: TrustedAttemptState): TrustedAttemptState {
  const tx = t.transaction;
  let transaction: TransactionExecutionContext | undefined;
  if (tx !== undefined) {
    const provider_operation = tx.provider_operation ? Object.freeze({ ...tx.provider_operation }) : undefined;
    const provider_operation_id = tx.provider_operation_id ?? provider_operation?.operation_id;
    transaction = Object.freeze({
      transaction_id: tx.transaction_id,
      mode: tx.mode,
      ...(tx.plan_id !== undefined ? { plan_id: tx.plan_id } : {}),
      ...(provider_operation_id !== undefined ? { provider_operation_id } : {}),
      ...(provider_operation !== undefined ? { provider_operation } : {}),
      ...(tx.cursor !== undefined ? { cursor: tx.cursor } : {}),
      ...(tx.original_request !== undefined
        ? {
            original_request: Object.freeze({
              action_id: tx.original_request.action_id,
              capability_id: tx.original_request.capability_id,
              transaction_id: tx.original_request.transaction_id,
              ...(tx.original_request.reservation_id !== undefined ? { reservation_id: tx.original_request.reservation_id } : {}),
            }),
          }
        : {}),
    });
  }
  return Object.freeze({
    action_id: t.action_id,
    attempt_id: t.attempt_id,
    capability_id: t.capability_id,
    actor: Object.freeze({
      principal: Object.freeze({ ...t.actor.principal }),
      issuer: t.actor.issuer,
      scheme: t.actor.scheme,
      scopes: Object.freeze([...t.actor.scopes]),
      lifetime: Object.freeze({ issued_at: new Date(t.actor.lifetime.issued_at.getTime()), expires_at: new Date(t.actor.lifetime.expires_at.getTime()) }),
      ...(t.actor.delegation !== undefined
        ? {
            delegation: Object.freeze({
              reason: t.actor.delegation.reason,
              ...(t.actor.delegation.on_behalf_of !== undefined ? { on_behalf_of: Object.freeze({ ...t.actor.delegation.on_behalf_of }) } : {}),
            }),
          }
        : {}),
    }),
    ...(t.tenant !== undefined ? { tenant: Object.freeze({ ...t.tenant }) } : {}),
    ...(t.credential !== undefined ? { credential: t.credential } : {}),
    deadline_at: new Date(t.deadline_at.getTime()),
    ...(t.idempotency !== undefined ? { idempotency: Object.freeze({ ...t.idempotency }) } : {}),
    ...(t.approval !== undefined
      ? {
          approval: Object.freeze({
            approval_ids: Object.freeze([...t.approval.approval_ids]),
            decision_ids: Object.freeze([...t.approval.decision_ids]),
            policy_hashes: Object.freeze([...t.approval.policy_hashes]),
            authorization: Object.freeze({ ...t.approval.authorization, scopes: Object.freeze([...t.approval.authorization.scopes]) }),
          }),
        }
      : {}),
    ...(transaction !== undefined ? { transaction } : {}),
    trace: Object.freeze({ ...t.trace }),
    redaction: Object.freeze({
      redaction_required: t.redaction.redaction_required,
      input_pointers: Object.freeze([...t.redaction.input_pointers]),
      output_pointers: Object.freeze([...t.redaction.output_pointers]),
    }),
    streaming: t.streaming,
  });
}
