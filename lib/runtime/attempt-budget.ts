/**
 * The time budget of connector attempts run inside a function invocation
 * (the SQS worker, the reconcile consumer), so that an attempt's timeout path
 * (`sla.timeout_exceeded`, `cancel_typed`, settlement as `outcome_unknown`)
 * always runs before Lambda stops the process.
 *
 * - At run time, {@link withAttemptBudget} scopes the invocation's remaining
 *   time (Lambda's `context.getRemainingTimeInMillis`) to one Runtime call;
 *   every connector attempt that call starts (./attempts/invoke.ts), the
 *   reconcile consumer's inline attempt included, gets the deadline
 *   min(its own timeout, remaining time − {@link ATTEMPT_SETTLEMENT_MARGIN_MS}).
 *   The scope is an AsyncLocalStorage, so the layers between the Runtime's
 *   entry points and the connector call need no extra parameter.
 * - At synth time, infra/attempt-timeouts.ts refuses a worker or reconcile
 *   consumer whose Lambda timeout is shorter than a capability's attempt
 *   timeout plus the same margin ({@link requiredFunctionTimeoutMs}).
 *
 * This module imports nothing of the Runtime (the CDK app reads the margin).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Time kept between an attempt's deadline and the end of its invocation: at
 * most DEFAULT_CANCEL_GRACE_MS (2 s, ./attempts/deadline.ts) for
 * `cancel_typed`, then the settlement writes (the record, its receipt, the
 * action and the reconciliation schedule, each with the SDK's retries).
 */
export const ATTEMPT_SETTLEMENT_MARGIN_MS = 10_000;

export interface AttemptBudget {
  /**
   * Milliseconds the invocation has left, read when an attempt starts
   * (Lambda: `context.getRemainingTimeInMillis`). Absent: no bound beyond
   * the attempt's own timeout.
   */
  readonly remaining_ms?: () => number;
  /**
   * How many times the queue has delivered the message this call runs (SQS
   * `ApproximateReceiveCount`, 1 on the first delivery). A capacity deferral
   * is refused once it exceeds the deferral bound (`max_deferrals`, capped
   * by the invoke queue's maxReceiveCount − 1: capacityDeferralBound in
   * ./config.ts), whatever the action's own count says: earlier failed
   * deliveries (a crash, a lease race) brought the message that much closer
   * to the DLQ. Absent: unknown.
   */
  readonly receive_count?: number;
}

const scope = new AsyncLocalStorage<AttemptBudget>();

/** Runs `fn` with `budget` bounding every connector attempt it starts. */
export function withAttemptBudget<T>(budget: AttemptBudget | undefined, fn: () => Promise<T>): Promise<T> {
  if (budget?.remaining_ms === undefined && budget?.receive_count === undefined) return fn();
  return scope.run(budget, fn);
}

/** The receive count of the message the current Runtime call runs, when its consumer said it. */
export function deliveryReceiveCount(): number | undefined {
  return scope.getStore()?.receive_count;
}

/**
 * How long an attempt starting now may run: its own timeout, capped by the
 * budget in scope (remaining time minus the margin; never negative). A cap
 * of 0 ends the attempt before any work, through the timeout path.
 */
export function boundedAttemptMs(timeoutMs: number): number {
  const remaining = scope.getStore()?.remaining_ms?.();
  if (remaining === undefined || !Number.isFinite(remaining)) return timeoutMs;
  return Math.max(0, Math.min(timeoutMs, Math.floor(remaining) - ATTEMPT_SETTLEMENT_MARGIN_MS));
}

/** The shortest function timeout in which an attempt of `attemptTimeoutMs` and its timeout path fit. */
export function requiredFunctionTimeoutMs(attemptTimeoutMs: number): number {
  return attemptTimeoutMs + ATTEMPT_SETTLEMENT_MARGIN_MS;
}
