/**
 * The transaction state machine: pure code, no I/O.
 *
 * ONE explicit transition table (`TRANSITION_TABLE`) lists every allowed
 * (operation, from, to) triple. Everything else — `apply`, the store's
 * admission checks, the property tests — is derived from it, so the store can
 * never perform a transition the table does not list.
 *
 * Rows whose `from` is `null` create a record (there is no current record).
 * Self-transitions (`from === to`) change recovery data only (checkpoint,
 * lease, reconciliation scheduling, escalation) and still raise the revision
 * by exactly one, because every durable write is a compare-and-set on the
 * revision.
 *
 * See docs/transactions-state-machine.md.
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { TransactionProtocolStatus } from '../../packages/connector-sdk/src/protocol/transaction.js';
import { DURABLE_TRANSACTION_STATUSES, type TransactionStatus } from './status.js';

/** Named operations of the state machine. */
export const TRANSACTION_OPERATIONS = [
  /** Create a record in an initial status (dry run, plan, execute, compensate, failed validation, rollback_not_supported). */
  'create',
  /** Trusted direct-commit branch: create straight in `committing`; an existing transaction ID is a conflict. */
  'claim_direct_commit',
  /** Atomic commit claim: `planned → committing`, bound to the commit action ID. */
  'claim_plan',
  /** A plan that expired (15 minutes) without a commit: `planned → failed`. */
  'expire_plan',
  /** Compare-and-set before invoking the reconcile handler: `outcome_unknown → reconciling`. */
  'begin_reconcile',
  /** Provider-operation checkpoint (self-transition while an attempt can be in flight). */
  'checkpoint',
  /** Acquire, renew or take over the fenced attempt lease (self-transition). */
  'lease',
  /** Settle an attempt with its outcome. */
  'settle',
  /** Move the earliest reconciliation time of an `outcome_unknown` record (backoff, sweeper). */
  'reschedule_reconcile',
  /** Reconciliation attempts exhausted: park for a human (wire status `requires_human`). */
  'escalate',
  /**
   * A reconciliation the runtime could not even start (its admission was
   * refused): counts as an attempt and backs off, so every refusal ends at the
   * bound (self-transition of `outcome_unknown`).
   */
  'refuse_reconcile',
  /** An operator asks for reconciliation now: the attempt bound is reset once and the record is due (self-transition). */
  'request_reconcile',
  /** An operator records the truth found at the provider for an escalated record: `outcome_unknown → reconciled`. */
  'resolve',
] as const;
export type TransactionOperation = (typeof TRANSACTION_OPERATIONS)[number];

/** Statuses that never change again. */
export const TERMINAL_STATUSES = [
  'dry_run_completed',
  'committed',
  'compensated',
  'failed',
  'reconciled',
  'rollback_not_supported',
] as const satisfies readonly TransactionStatus[];
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

/** Statuses in which a connector attempt can be in flight (checkpoint and lease allowed). */
export const ATTEMPT_STATUSES = ['prepared', 'committing', 'compensating', 'reconciling'] as const satisfies readonly TransactionStatus[];
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** Statuses a record may be created in by `create`. */
export const INITIAL_STATUSES = [
  'dry_run_completed',
  'planned',
  'prepared',
  'compensating',
  'failed',
  'rollback_not_supported',
] as const satisfies readonly TransactionStatus[];
export type InitialStatus = (typeof INITIAL_STATUSES)[number];

/** Outcomes `settle` may record (the union over its rows). */
export const SETTLE_OUTCOMES = ['committed', 'failed', 'outcome_unknown', 'compensated', 'reconciled'] as const satisfies readonly TransactionStatus[];
export type SettleOutcome = (typeof SETTLE_OUTCOMES)[number];

/** Default delay before the first reconciliation when the error carries no retry_after_ms. */
export const DEFAULT_RECONCILE_DELAY_MS = 5_000;

export interface TransitionRule {
  readonly operation: TransactionOperation;
  /** `null`: the record does not exist yet. */
  readonly from: TransactionStatus | null;
  readonly to: TransactionStatus;
}

function rows(operation: TransactionOperation, from: readonly (TransactionStatus | null)[], to: readonly TransactionStatus[]): TransitionRule[] {
  return from.flatMap((f) => to.map((t) => ({ operation, from: f, to: t })));
}
function selfRows(operation: TransactionOperation, statuses: readonly TransactionStatus[]): TransitionRule[] {
  return statuses.map((s) => ({ operation, from: s, to: s }));
}

/**
 * THE transition table. Read it as a list of triples; nothing outside this
 * list is a legal durable state change.
 */
export const TRANSITION_TABLE: readonly TransitionRule[] = Object.freeze(
  [
    ...rows('create', [null], INITIAL_STATUSES),
    ...rows('claim_direct_commit', [null], ['committing']),
    ...rows('claim_plan', ['planned'], ['committing']),
    ...rows('expire_plan', ['planned'], ['failed']),
    ...rows('begin_reconcile', ['outcome_unknown'], ['reconciling']),
    ...selfRows('checkpoint', ATTEMPT_STATUSES),
    ...selfRows('lease', ATTEMPT_STATUSES),
    ...rows('settle', ['prepared', 'committing'], ['committed', 'failed', 'outcome_unknown']),
    ...rows('settle', ['compensating'], ['compensated', 'failed', 'outcome_unknown']),
    // `reconciled` is its own terminal answer: never rewritten as committed or compensated.
    ...rows('settle', ['reconciling'], ['reconciled', 'outcome_unknown']),
    ...selfRows('reschedule_reconcile', ['outcome_unknown']),
    ...selfRows('escalate', ['outcome_unknown']),
    ...selfRows('refuse_reconcile', ['outcome_unknown']),
    ...selfRows('request_reconcile', ['outcome_unknown']),
    // An operator's resolution is a definitive answer as well: `reconciled`, with the operator's evidence.
    ...rows('resolve', ['outcome_unknown'], ['reconciled']),
  ].map((r) => Object.freeze(r)),
);

const TERMINAL_SET: ReadonlySet<TransactionStatus> = new Set(TERMINAL_STATUSES);
const ATTEMPT_SET: ReadonlySet<TransactionStatus> = new Set(ATTEMPT_STATUSES);
const RULE_KEYS: ReadonlySet<string> = new Set(TRANSITION_TABLE.map((r) => ruleKey(r.operation, r.from, r.to)));

function ruleKey(op: TransactionOperation, from: TransactionStatus | null, to: TransactionStatus): string {
  return `${op}|${from ?? '∅'}|${to}`;
}

export function isTerminalStatus(status: TransactionStatus): status is TerminalStatus {
  return TERMINAL_SET.has(status);
}

export function isAttemptStatus(status: TransactionStatus): status is AttemptStatus {
  return ATTEMPT_SET.has(status);
}

export function isTransactionStatus(value: unknown): value is TransactionStatus {
  return typeof value === 'string' && (DURABLE_TRANSACTION_STATUSES as readonly string[]).includes(value);
}

/** True when the table lists (operation, from, to). */
export function isAllowedTransition(operation: TransactionOperation, from: TransactionStatus | null, to: TransactionStatus): boolean {
  return RULE_KEYS.has(ruleKey(operation, from, to));
}

/** Statuses from which `operation` may reach `to` (`null` = creation). */
export function allowedFrom(operation: TransactionOperation, to: TransactionStatus): (TransactionStatus | null)[] {
  return TRANSITION_TABLE.filter((r) => r.operation === operation && r.to === to).map((r) => r.from);
}

/** Statuses `operation` may reach from `from`. */
export function allowedTargets(operation: TransactionOperation, from: TransactionStatus | null): TransactionStatus[] {
  return TRANSITION_TABLE.filter((r) => r.operation === operation && r.from === from).map((r) => r.to);
}

/** The durable facts the state machine looks at. */
export interface StateMachineRecord {
  readonly status: TransactionStatus;
  readonly revision: number;
}

/**
 * One requested operation. `to` may be omitted for operations with a single
 * possible target from the current status (self-transitions, claim_plan,
 * begin_reconcile, expire_plan, claim_direct_commit).
 */
export interface OperationRequest {
  readonly operation: TransactionOperation;
  readonly to?: TransactionStatus;
}

export type ApplyResult =
  | { readonly ok: true; readonly status: TransactionStatus; readonly revision: number; readonly rule: TransitionRule }
  | { readonly ok: false; readonly error: AipError };

/** Revision of a record that does not exist yet; `create` yields revision 1. */
export const ABSENT_REVISION = 0;

/**
 * Applies `request` to `current` (undefined: no record yet). Returns the next
 * status and revision + 1, or a typed `transaction.invalid_transition` error
 * when the table has no matching row. Pure: never throws for a well-typed call.
 */
export function apply(current: StateMachineRecord | undefined, request: OperationRequest): ApplyResult {
  const from = current?.status ?? null;
  const revision = current?.revision ?? ABSENT_REVISION;
  let to = request.to;
  if (to === undefined) {
    const targets = allowedTargets(request.operation, from);
    if (targets.length === 1) to = targets[0];
  }
  if (to === undefined || !isAllowedTransition(request.operation, from, to)) {
    return { ok: false, error: invalidTransition(request.operation, from, request.to ?? null) };
  }
  return { ok: true, status: to, revision: revision + 1, rule: { operation: request.operation, from, to } };
}

/** `apply`, throwing the typed error instead of returning it. */
export function applyOrThrow(current: StateMachineRecord | undefined, request: OperationRequest): { status: TransactionStatus; revision: number } {
  const r = apply(current, request);
  if (!r.ok) throw r.error;
  return { status: r.status, revision: r.revision };
}

/**
 * Checks that every named current status may reach `to` via `operation`.
 * Used by the store before it issues a conditional write: naming a current
 * status the table does not allow is a programming error reported as a typed
 * 409, and nothing is written.
 */
export function assertTransitionAllowed(operation: TransactionOperation, fromStatuses: readonly (TransactionStatus | null)[], to: TransactionStatus): void {
  if (fromStatuses.length === 0) throw invalidTransition(operation, null, to, 'no allowed current status named');
  for (const f of fromStatuses) {
    if (!isAllowedTransition(operation, f, to)) throw invalidTransition(operation, f, to);
  }
}

function invalidTransition(operation: TransactionOperation, from: TransactionStatus | null, to: TransactionStatus | null, reason?: string): AipError {
  return new AipError('transaction.invalid_transition', `${operation}: ${from ?? '(absent)'} → ${to ?? '(unspecified)'} is not in the transition table`, {
    details: { operation, from: from ?? null, to: to ?? null, ...(reason ? { reason } : {}) },
  });
}

// --- wire projection ---------------------------------------------------------

/**
 * Facts about the surrounding action and the record that the wire projection
 * needs. `action_status` uses the protocol's ActionStatus values.
 */
export interface ProjectionFacts {
  /** Status of the surrounding action (e.g. `requires_human` while pending approval, `cancelled`). */
  readonly action_status?: string | undefined;
  /** True when the record was escalated to a human (reconciliation attempts exhausted). */
  readonly escalated?: boolean | undefined;
}

/**
 * Durable statuses a cancelled action may be projected over: no provider
 * effect can be in doubt (a plan never reached a connector attempt; `failed`
 * means the attempt failed before any known commit). Where an effect may be
 * in flight or uncertain (`prepared`, `committing`, `outcome_unknown`, ...)
 * the durable status wins, so a cancellation never hides uncertainty.
 */
export const CANCELLABLE_PROJECTION_STATUSES = ['planned', 'failed'] as const satisfies readonly TransactionStatus[];

/**
 * Projects a durable status to the wire TransactionProtocolStatus.
 *
 * - `cancelled` when the action is cancelled and the durable status is one of
 *   CANCELLABLE_PROJECTION_STATUSES;
 * - `requires_human` when the record is not terminal and either the action
 *   waits for a human (`requires_human`) or the record was escalated;
 * - otherwise the durable status itself. A terminal durable status is never
 *   hidden behind `requires_human`.
 */
export function projectProtocolStatus(status: TransactionStatus, facts: ProjectionFacts = {}): TransactionProtocolStatus {
  if (facts.action_status === 'cancelled' && (CANCELLABLE_PROJECTION_STATUSES as readonly TransactionStatus[]).includes(status)) {
    return 'cancelled';
  }
  if (!isTerminalStatus(status) && (facts.action_status === 'requires_human' || facts.escalated === true)) {
    return 'requires_human';
  }
  return status;
}
