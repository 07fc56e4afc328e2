/**
 * Port: one-time reconciliation triggers for `outcome_unknown` transactions.
 *
 * The schedule is a trigger, not a record: the durable transaction record
 * holds the reconciliation time and attempt count. When the schedule fires,
 * the reconcile consumer receives a `{kind: 'reconcile', reason: 'schedule'}`
 * message; the sweeper is the safety net for a schedule that was never
 * created or was lost.
 *
 * The AWS adapter is lib/aws/scheduler/scheduler.ts (EventBridge Scheduler).
 */
import type { TransactionRecord } from './transaction-store.js';

export interface ReconcileScheduleRef {
  readonly tenant_id: string;
  readonly transaction_id: string;
}

export interface ScheduleReconcileRequest extends ReconcileScheduleRef {
  /** Earliest reconciliation time. A time in the past is moved to now plus the adapter's minimum lead. */
  readonly at: Date;
  /**
   * The `outcome_unknown` record exactly as the write that made it so returned it: the schedule's message carries it
   * when it fits (lib/ports/messages.ts `reconcileWithImages`), so that the consumer need not read it. It holds no
   * action input. Absent, or too large: the message names the transaction only.
   */
  readonly transaction?: TransactionRecord;
}

export interface ScheduleReconcileResult {
  /** Deterministic schedule name for this tenant and transaction. */
  readonly name: string;
  /** false when a schedule of that name already existed (a harmless repeat). */
  readonly created: boolean;
  /** The time actually requested (after clamping and rounding up to whole seconds). */
  readonly at: Date;
}

export interface CancelReconcileResult {
  readonly name: string;
  /** false when there was nothing to delete (already fired, cancelled or never created). */
  readonly deleted: boolean;
}

export interface ReconcileScheduler {
  /**
   * Idempotent: one schedule per (tenant, transaction). A repeat while a
   * schedule exists succeeds without changing it (`created: false`), even if
   * `at` differs. To move an existing trigger (e.g. the next backoff step),
   * call `cancelReconcile` first, then `scheduleReconcile`.
   * Throws `scheduler.request_failed` (retryable) when the service fails.
   */
  scheduleReconcile(request: ScheduleReconcileRequest): Promise<ScheduleReconcileResult>;
  /** Deletes the trigger. Not found is success (`deleted: false`). */
  cancelReconcile(ref: ReconcileScheduleRef): Promise<CancelReconcileResult>;
}
