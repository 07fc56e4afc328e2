/**
 * The slice of the Runtime (lib/runtime/runtime.ts) that the queue and
 * scheduled entrypoints call, declared structurally.
 *
 * The worker, reconcile and sweeper handlers depend on this interface, not on
 * the Runtime class, so their thin mapping can be unit-tested with a stub of
 * these method signatures, and the composition root (./bootstrap.ts) is the
 * only module that imports the Runtime itself. The Runtime must stay
 * assignable to it (./compose-runtime.ts checks that at compile time).
 */
import type { InvokeMessage, ReconcileMessage } from '../../lib/ports/messages.js';
import type { AttemptBudget } from '../../lib/runtime/attempt-budget.js';

export type { InvokeMessage, ReconcileMessage } from '../../lib/ports/messages.js';
export type { AttemptBudget } from '../../lib/runtime/attempt-budget.js';

export interface SweepResult {
  readonly enqueued: number;
  /**
   * Age in seconds of the oldest `outcome_unknown` transaction, escalated ones
   * included, 0 when there is none (the Runtime's definition: now − the
   * record's last write). Published as AIP_METRICS.oldestOutcomeUnknownAge.
   */
  readonly oldest_outcome_unknown_age_seconds: number;
}

export interface WorkerRuntime {
  /**
   * One attempt of an invoke message (SQS worker). Throws to have the message
   * redelivered. `budget.remaining_ms` is the invocation's remaining time: the
   * connector attempt's deadline is capped by it minus the settlement margin.
   */
  runAttempt(message: InvokeMessage, budget?: AttemptBudget): Promise<unknown>;
  /** A deferred attempt's message comes back after `delayMs` (a visibility change by its receipt handle), not the queue's timeout. */
  redeliverInvokeAfter?(receiptHandle: string, delayMs: number): Promise<void>;
  /** One reconciliation message (reconcile queue consumer), its inline attempt bounded by `budget`. Throws to have the message redelivered. */
  reconcile(message: ReconcileMessage, budget?: AttemptBudget): Promise<unknown>;
  /** Enqueues reconciliation for overdue `outcome_unknown` records (the safety net) and reports the oldest one's age. */
  sweep(now?: Date): Promise<SweepResult>;
}

/** Resolves the runtime for an invocation (lazily built once per container in production). */
export type RuntimeProvider<R = WorkerRuntime> = () => Promise<R>;

/**
 * The Runtime's outcomes (AttemptOutcome, ReconcileOutcome in
 * lib/runtime/types.ts) say `retry: true` when the message should be
 * redelivered rather than acknowledged (e.g. another attempt holds a live
 * lease). The consumers report such a record as a batch item failure.
 */
export function requestsRedelivery(outcome: unknown): boolean {
  return typeof outcome === 'object' && outcome !== null && (outcome as { retry?: unknown }).retry === true;
}

const SUMMARY_KEYS = ['disposition', 'transaction_status', 'outcome', 'status', 'kind', 'reason'] as const;

/**
 * A loggable summary of an outcome returned by the Runtime: only its short
 * enumerated string fields (`disposition`, `transaction_status`, ...) and
 * `retry_after_ms`, never output, input or error details, whatever shape the
 * outcome has.
 */
/** The redelivery delay an outcome asks for (`retry_after_ms`), when it is a finite number of milliseconds. */
export function redeliveryDelayMs(outcome: unknown): number | undefined {
  if (typeof outcome !== 'object' || outcome === null) return undefined;
  const after = (outcome as { retry_after_ms?: unknown }).retry_after_ms;
  return typeof after === 'number' && Number.isFinite(after) && after >= 0 ? after : undefined;
}

export function summarizeOutcome(outcome: unknown): Record<string, string | number> {
  if (typeof outcome !== 'object' || outcome === null) return {};
  const out: Record<string, string | number> = {};
  for (const key of SUMMARY_KEYS) {
    const value = (outcome as Record<string, unknown>)[key];
    if (typeof value === 'string' && /^[a-z][a-z0-9_.:-]{0,63}$/.test(value)) out[key] = value;
  }
  const after = (outcome as { retry_after_ms?: unknown }).retry_after_ms;
  if (typeof after === 'number' && Number.isFinite(after)) out.retry_after_ms = after;
  return out;
}
