/**
 * The public outcome types of the Runtime API.
 */
import type {
  ActionResult,
  ApprovalRequirement,
  Capability,
  CompensationContract,
  ExecutionContract,
  IdempotencyContract,
  JsonObject,
  TransactionContract,
  TransactionMode,
  TransactionResult,
} from '../../packages/connector-sdk/src/protocol/index.js';
import type { ApprovalRecord } from '../ports/approval-store.js';
import type { TransactionRecord } from '../ports/transaction-store.js';
import type { TransactionStatus } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ConnectorReadiness, HealthReport, SubmitDisposition } from '../http/schemas.js';

/** The edge's answers are the runtime's outcomes: their types come from the edge schemas. */
export type { ConnectorReadiness, HealthReport, SubmitDisposition };

export interface SubmitOutcome {
  /** How admission ended (see SubmitDispositionSchema in lib/http/schemas.ts). */
  readonly disposition: SubmitDisposition;
  readonly http_status: number;
  readonly action_id: string;
  readonly tenant_id: string;
  readonly action_result: ActionResult;
  /** Only on the TransactionRequest path. */
  readonly transaction_result?: TransactionResult;
  /**
   * The action's state once settled, when its first attempt ran inside this submit because the client waits
   * ({@link WaitingClient}; docs/runtime.md, "The attempt inside the submit when the client waits"): what a wait's
   * poll that saw the settlement answers (getAction's view), built from the settlement's own writes, without a read.
   * Absent when the attempt went to the queue, or ran inline and ended without a settlement (the invoke message was
   * sent then): the client's wait polls as for any queued action.
   */
  readonly settled?: { readonly action_result: ActionResult; readonly transaction?: TransactionResult };
}

/**
 * A client that waits for its action's settlement (`Prefer: wait`), as the edge tells the submit: how long it waits,
 * and the submit function's remaining time. With `attempt_when_waited: inline` (./config.ts) the first attempt of a
 * fresh admission whose capability's attempt fits that time runs inside the submit (./pipeline/admit.ts `dispatch`).
 */
export interface WaitingClient {
  /** How long the client waits from now, ms (its `Prefer: wait`, already capped by the function's remaining time). */
  readonly wait_ms: number;
  /** The function's remaining time, ms (Lambda's `getRemainingTimeInMillis`); undefined: no bound beyond the attempt's own timeout. */
  readonly remaining_ms: () => number | undefined;
}

export const DISPOSITION_HTTP: Readonly<Record<SubmitDisposition, number>> = {
  completed: 200,
  accepted: 202,
  requires_human: 202,
  replayed: 200,
  rejected: 422,
};

export type AttemptDisposition =
  /** The attempt ran the connector and settled. */
  | 'settled'
  /** The action or its transaction was already settled: nothing to do (ack). */
  | 'already_settled'
  /** A recovered attempt settled outcome_unknown without invoking the connector. */
  | 'recovered_outcome_unknown'
  /** Redeliver later (do not ack): another attempt holds a live lease, or a remote host refused it for capacity (certified not called; its lease given back). */
  | 'deferred'
  /** A newer attempt owns the action (zombie): its writes were refused. */
  | 'superseded'
  /** The message names nothing runnable (unknown action, waiting for approval, cancelled). */
  | 'dropped';

export interface AttemptOutcome {
  readonly disposition: AttemptDisposition;
  readonly tenant_id: string;
  readonly action_id: string;
  readonly transaction_id?: string;
  /** True when the caller should let the message be redelivered. */
  readonly retry: boolean;
  readonly retry_after_ms?: number;
  readonly fence?: number;
  readonly transaction_status?: TransactionStatus;
  readonly action_result?: ActionResult;
  readonly reason?: string;
  /**
   * The transaction record as this attempt's settlement wrote it (a `settled` outcome of a transactional mode): the
   * submit that ran the attempt inline answers its waiting client from it without reading it back. Never logged
   * (functions/shared/runtime-contract.ts `summarizeOutcome` keeps scalar fields only).
   */
  readonly settled_record?: TransactionRecord;
}

export type ReconcileDisposition = 'reconciled' | 'still_unknown' | 'escalated' | 'requires_human' | 'not_due' | 'not_applicable' | 'in_progress' | 'deferred';

export interface ReconcileOutcome {
  readonly disposition: ReconcileDisposition;
  readonly tenant_id: string;
  readonly transaction_id: string;
  readonly transaction_status?: TransactionStatus;
  /** The governed reconcile action the runtime ran, if any. */
  readonly action_id?: string;
  readonly retry: boolean;
  readonly reason?: string;
}

export interface DecisionOutcome {
  readonly approval: ApprovalRecord;
  /** After an approval: the resumed action's admission (accepted, or a rejection recorded on the action). */
  readonly action_result: ActionResult;
  readonly resumed?: SubmitOutcome;
}

export interface PageOf<T> {
  readonly items: T[];
  readonly cursor?: string;
}

/** A tenant approval policy that selects a capability (GET /v1/capabilities with a selected tenant). */
export interface TenantApprovalSummary {
  readonly policy_id: string;
  /** The modes it applies to (`none` = a plain invocation); the default set when the policy names none. */
  readonly modes: readonly (TransactionMode | 'none')[];
  readonly approver_scopes: readonly string[];
  readonly allow_self_approval: boolean;
}

/**
 * One registered capability as a caller sees it: what to send, what comes
 * back, and the contracts that govern it. Never credentials, data-handling
 * pointers, manifest hashes or anything from the connector's deployment.
 */
export interface CapabilitySummary {
  readonly id: string;
  readonly kind: Capability['kind'];
  readonly description?: string;
  readonly connector_id: string;
  readonly connector_version: string;
  readonly input_schema: JsonObject;
  readonly output_schema?: JsonObject;
  readonly transaction?: TransactionContract;
  readonly compensation?: CompensationContract;
  readonly execution?: ExecutionContract;
  /** The capability's own approval requirement. */
  readonly approval?: ApprovalRequirement;
  readonly idempotency?: IdempotencyContract;
  /** Only with a selected tenant: that tenant's approval policies selecting this capability, in evaluation order. */
  readonly tenant_approval_policies?: readonly TenantApprovalSummary[];
}

export interface CapabilityList {
  /** The selected tenant, when one was. */
  readonly tenant_id?: string;
  /** Sorted by ID. */
  readonly items: CapabilitySummary[];
}

export interface SweepOutcome {
  /** Messages enqueued (reconcile and invoke). */
  readonly enqueued: number;
  /**
   * Age in whole seconds of the oldest `outcome_unknown` record, escalated
   * ones included; 0 when there is none. A record's age is now − its
   * `updated_at`: the time of its last write, which for an `outcome_unknown`
   * record is when it (re-)entered `outcome_unknown` (after an attempt or an
   * inconclusive reconciliation) or was escalated. See sweep() in
   * ./reconciliation.ts for which records are examined.
   */
  readonly oldest_outcome_unknown_age_seconds: number;
}
