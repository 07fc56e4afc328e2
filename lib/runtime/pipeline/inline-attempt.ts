/**
 * The first attempt inside the submit when the client waits (docs/runtime.md, "The attempt inside the submit when
 * the client waits").
 *
 * A fresh admission (this request created the action and wrote its transaction record: execute, a planned commit, a
 * compensate; never an approval, a resumed admission or the runtime's own reconcile actions) whose client waits
 * (`Prefer: wait`, {@link WaitingClient}) runs its FIRST attempt here instead of sending the invoke message, when
 * `attempt_when_waited` is `inline` and the capability's attempt timeout plus the settlement margin
 * (../attempt-budget.ts) fits the submit function's remaining time. The attempt is the worker's own
 * (../attempts/worker.ts `runAttempt`), started from the records the admission's writes returned, under the same
 * budget (the function's remaining time bounds the connector's deadline), with the same lease, fences, crash points
 * and settlement: nothing about the durable record differs from a first delivery of the invoke message.
 *
 * What the queue still carries: an attempt that ends without a settlement the worker would have retried (a lease
 * refused, a capacity deferral, a store error before or after the provider call) sends the invoke message then, as
 * the worker's redelivery would, so every retry runs in the worker. A submit that dies inside the attempt leaves
 * the leased action and its record in their attempt status: once the lease expires, the sweeper re-drives it
 * through the queue (../reconciliation.ts `sweep`, "stalled attempts"), where the worker's recovery decides.
 */
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionResult, TransactionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { InvokeMessage } from '../../ports/messages.js';
import { requiredFunctionTimeoutMs, withAttemptBudget } from '../attempt-budget.js';
import type { KnownRecords } from '../attempts/worker.js';
import type { Kernel } from '../kernel.js';
import type { AttemptOutcome } from '../types.js';
import { toTransactionResult } from '../view.js';
import type { AdmittedAction } from './state.js';
import { transactionTarget } from './targets.js';

/** The settled state the submit answers its waiting client with (getAction's view). */
export interface SettledState {
  readonly action_result: ActionResult;
  readonly transaction?: TransactionResult;
}

/** What {@link attemptInline} did: `ran: false`, nothing (the caller enqueues); `ran: true`, the attempt ran here. */
export type InlineAttempt = { readonly ran: false } | { readonly ran: true; readonly settled?: SettledState };

const MODES: ReadonlySet<string> = new Set(['execute', 'commit', 'compensate']);

/** The conditions that need no connector code: the switch, a waiting client, a fresh attempt mode of a caller's own. */
export function mayAttemptInline(k: Kernel, adm: AdmittedAction): boolean {
  return (
    k.config.attempt_when_waited === 'inline' &&
    adm.waiting !== undefined &&
    adm.waiting.wait_ms > 0 &&
    adm.internal !== true &&
    adm.created &&
    adm.approval === undefined &&
    MODES.has(adm.action.transaction?.mode ?? '')
  );
}

/**
 * Runs the first attempt here when it fits the function's remaining time: the capability's attempt timeout (its
 * `execution.timeout_ms`, else `default_attempt_timeout_ms`) plus the settlement margin. Returns `ran: false` when it
 * does not fit (the caller sends the invoke message as for any admission).
 */
export async function attemptInline(k: Kernel, adm: AdmittedAction, message: InvokeMessage, known: KnownRecords): Promise<InlineAttempt> {
  const waiting = adm.waiting;
  if (waiting === undefined) return { ran: false };
  // The attempt's code is loaded only on this path: a submit nobody waits on never imports it.
  const [{ runAttempt }, { attemptTimeoutMs }] = await Promise.all([import('../attempts/worker.js'), import('../attempts/invoke.js')]);
  const remaining = waiting.remaining_ms();
  if (remaining !== undefined && requiredFunctionTimeoutMs(attemptTimeoutMs(k, adm.reg)) > remaining) return { ran: false };

  let outcome: AttemptOutcome;
  try {
    outcome = await withAttemptBudget({ remaining_ms: () => waiting.remaining_ms() ?? Number.POSITIVE_INFINITY }, () => runAttempt(k, message, known));
  } catch (err) {
    // The process "died" here (a test crash point): nothing more runs in it; the lease expires and the sweeper re-drives.
    if (isAipError(err, 'runtime.crash_injected')) throw err;
    // What a worker's throw would do: the message comes back, and the worker's attempt recovers from the record.
    k.log.warn('inline attempt ended without a settlement; the invoke queue retries it', {
      action_id: adm.action.id,
      code: isAipError(err) ? err.code : 'unexpected',
    });
    await k.enqueueInvoke(message);
    return { ran: true };
  }
  if (outcome.retry) {
    // A refused lease or a capacity deferral: the redelivery the worker would have asked for, through the queue.
    const delaySeconds = outcome.retry_after_ms !== undefined ? Math.min(900, Math.max(0, Math.ceil(outcome.retry_after_ms / 1_000))) : 0;
    await k.enqueueInvoke(message, delaySeconds > 0 ? { delaySeconds } : undefined);
    return { ran: true };
  }
  return { ran: true, ...settledState(k, adm, outcome) };
}

/** The state of a settled attempt as getAction shows it, from the settlement's own writes (no read). */
function settledState(k: Kernel, adm: AdmittedAction, outcome: AttemptOutcome): { settled?: SettledState } {
  const action_result = outcome.action_result;
  if (outcome.disposition !== 'settled' || action_result === undefined) return {};
  const txn = outcome.settled_record;
  if (txn === undefined) return { settled: { action_result } };
  // The transaction view only when the caller may read that transaction (as getAction decides).
  if (k.authority.allows(adm.caller, 'read', transactionTarget(txn, adm.tenant_id, txn.transaction_id)) === undefined) return { settled: { action_result } };
  return { settled: { action_result, transaction: toTransactionResult(txn, { action_status: action_result.status }) } };
}
