/**
 * The public outcome types of the Runtime API.
 */
import type { ActionResult, TransactionResult } from '../protocol/index.js';
import type { ApprovalRecord } from '../ports/approval-store.js';
import type { TransactionStatus } from '../transactions/status.js';

export type SubmitDisposition = 'completed' | 'accepted' | 'requires_human' | 'replayed' | 'rejected';

export interface SubmitOutcome {
  /**
   * - `completed`: a terminal result was reached synchronously (dry run, plan);
   * - `accepted`: admitted and enqueued for the worker;
   * - `requires_human`: waiting for an approval;
   * - `replayed`: a stored terminal result, no connector invocation;
   * - `rejected`: admission recorded a terminal failure (a failed downstream plan validation, a denial).
   */
  readonly disposition: SubmitDisposition;
  readonly http_status: number;
  readonly action_id: string;
  readonly tenant_id: string;
  readonly action_result: ActionResult;
  /** Only on the TransactionRequest path. */
  readonly transaction_result?: TransactionResult;
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
  /** Another attempt holds a live lease: redeliver later (do not ack). */
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
