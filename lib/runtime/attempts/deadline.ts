/**
 * Deadlines and cancellation: the runtime side of one connector attempt.
 *
 * runAttempt builds the trusted context, dispatches, and applies the
 * effective timeout (the earlier of the capability's execution.timeout_ms and
 * the action deadline). On timeout it signals cancellation, attempts
 * connector-specific cancellation where the capability supports it (bounded;
 * its errors become evidence), and returns `sla.timeout_exceeded`. The
 * handler's promise is raced against the deadline, so a connector that
 * ignores the signal cannot hold the attempt: its late result is discarded.
 */
import type { Action, Capability, JsonObject, ProviderOperationRef } from '../../../packages/connector-sdk/src/protocol/index.js';
import { systemClock, type Clock } from '../../../packages/connector-sdk/src/ports/clock.js';
import {
  createExecutionContext,
  type ExecutionAttempt,
  type ExecutionFacilities,
  type TrustedAttemptState,
} from '../../../packages/connector-sdk/src/context.js';
import { ConnectorFailure, capabilityRetryable, isConnectorFailure, timeoutRetryable } from '../../../packages/connector-sdk/src/failure.js';
import { dispatch, failedOutcome, type DispatchOutcome } from './dispatch.js';
import type { FrozenConnector } from '../../../packages/connector-sdk/src/interfaces.js';
import { TYPED_METHOD_OPERATION, selectMethod, type DispatchMethod } from '../../../packages/connector-sdk/src/operations.js';
import type { StreamSummary } from '../../../packages/connector-sdk/src/stream.js';
import type { ImplementationSupport } from '../../../packages/connector-sdk/src/support.js';

/** Timer functions (read from globalThis at call time, so fake timers apply). */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
export const systemTimers: Timers = {
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** Used when neither the capability nor the action bounds the attempt: the Lambda maximum. */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 900_000;
/** How long the runtime waits for cancel_typed after a timeout. */
export const DEFAULT_CANCEL_GRACE_MS = 2_000;
export const DEADLINE_SOURCE = 'runtime:deadline';

/** The effective deadline: min(now + capability timeout, action deadline), else now + fallback. */
export function effectiveDeadline(
  now: Date,
  capabilityTimeoutMs: number | undefined,
  actionDeadline: Date | undefined,
  fallbackMs = DEFAULT_ATTEMPT_TIMEOUT_MS,
): Date {
  const candidates: number[] = [];
  if (capabilityTimeoutMs !== undefined) candidates.push(now.getTime() + capabilityTimeoutMs);
  if (actionDeadline !== undefined) candidates.push(actionDeadline.getTime());
  if (candidates.length === 0) candidates.push(now.getTime() + fallbackMs);
  return new Date(Math.min(...candidates));
}

/** What happened to connector-specific cancellation after a timeout. */
export type CancellationEvidence =
  | { readonly attempted: false; readonly reason: 'cancellation_unsupported' | 'no_work_started' }
  | { readonly attempted: true; readonly outcome: 'accepted' | 'rejected' }
  | { readonly attempted: true; readonly outcome: 'failed'; readonly code: string }
  | { readonly attempted: true; readonly outcome: 'timed_out' };

export interface AttemptRequest {
  readonly connector: FrozenConnector;
  /** The admitted capability this handler is bound to. */
  readonly capability: Capability;
  /** Its admitted nine-flag record. */
  readonly support: ImplementationSupport;
  readonly action: Action;
  /** Trusted state, without the fields runAttempt derives (deadline, streaming, capability ID). */
  readonly trusted: Omit<TrustedAttemptState, 'deadline_at' | 'streaming' | 'capability_id' | 'action_id'> & {
    /** The action's own absolute deadline, if it has one. */
    readonly action_deadline?: Date;
  };
  readonly facilities?: ExecutionFacilities;
  readonly timers?: Timers;
  readonly cancel_grace_ms?: number;
  readonly default_timeout_ms?: number;
  /** Called with the attempt before dispatch (e.g. to wire a client cancellation to attempt.cancel). */
  readonly on_attempt?: (attempt: ExecutionAttempt) => void;
  /**
   * A client's cancellation of the action while the connector runs. When it
   * aborts, the attempt's cancellation token is signalled (reason
   * `client_cancelled`), `cancel_typed` is called with the attempt's context
   * where the capability supports cancellation (bounded by cancel_grace_ms),
   * and the connector's own answer, bounded by the deadline, settles the
   * attempt: a completed result stands (the cancellation lost the race); a
   * failure that may have had an effect stays uncertain for reconciliation to
   * decide.
   */
  readonly cancel_signal?: AbortSignal;
}

export type AttemptOutcome = DispatchOutcome & {
  readonly timed_out: boolean;
  readonly deadline_at: Date;
  /** The provider operation known at the end of the attempt (recovered or checkpointed). */
  readonly provider_operation?: ProviderOperationRef;
  readonly provider_effect_committed: boolean;
  readonly stream: StreamSummary;
  readonly cancellation?: CancellationEvidence;
  /** The client cancelled the action during this attempt (cancel_signal aborted). */
  readonly client_cancelled?: boolean;
};

/**
 * Runs one attempt end to end. Never throws for connector behaviour and
 * never waits past the effective deadline for the connector (plus, on
 * timeout, at most cancel_grace_ms for cancel_typed).
 */
export async function runAttempt(req: AttemptRequest): Promise<AttemptOutcome> {
  const timers = req.timers ?? systemTimers;
  const clock: Clock = req.facilities?.clock ?? systemClock;
  const { action, capability, support, connector } = req;
  const { action_deadline, ...trustedRest } = req.trusted;
  const deadline_at = effectiveDeadline(clock.now(), capability.execution?.timeout_ms, action_deadline, req.default_timeout_ms);
  const streaming = capability.execution?.supports_streaming === true && support.streaming;

  const attempt = createExecutionContext({ ...trustedRest, action_id: action.id, capability_id: capability.id, deadline_at, streaming }, req.facilities ?? {});
  req.on_attempt?.(attempt);
  const ctx = attempt.context;
  const method = selectMethod(action);
  const dispatchOptions = { capabilityRetryable: capabilityRetryable(capability, support) };

  const finish = async (outcome: DispatchOutcome, timed_out: boolean, cancellation?: CancellationEvidence): Promise<AttemptOutcome> => {
    // A reference held for the settlement (checkpoint_with_answer) is made durable before waiting on the sink.
    if (streaming && !timed_out) await persistHeld(attempt);
    // After a timeout, do not wait on the sink either: the attempt must not outlive its deadline.
    const stream = await attempt.end({ drain: !timed_out });
    // The attempt is over: a context the connector kept (or a late handler still holds) can no longer
    // resolve credentials, checkpoint or stream.
    attempt.retire();
    const provider_operation = attempt.provider_operation;
    return {
      ...outcome,
      timed_out,
      deadline_at,
      ...(provider_operation !== undefined ? { provider_operation } : {}),
      provider_effect_committed: attempt.provider_effect_committed,
      stream,
      ...(cancellation !== undefined ? { cancellation } : {}),
    };
  };

  const remaining = deadline_at.getTime() - clock.now().getTime();
  if (remaining <= 0) {
    await attempt.end({ drain: false });
    attempt.cancel(timeoutReason(), 'deadline_exceeded');
    const cancellation: CancellationEvidence = { attempted: false, reason: 'no_work_started' };
    return finish(timeoutOutcome(req, method, attempt, cancellation, false), true, cancellation);
  }

  let timer: unknown;
  const expired = new Promise<'timeout'>((resolve) => {
    timer = timers.setTimeout(() => resolve('timeout'), remaining);
  });
  const work = dispatch(connector, capability.id, action, ctx, dispatchOptions);
  // A late result (after the deadline) is discarded; never let it surface as an unhandled rejection.
  work.catch(() => undefined);
  const signal = req.cancel_signal;
  const cancelled =
    signal === undefined
      ? undefined
      : new Promise<'cancelled'>((resolve) => {
          if (signal.aborted) resolve('cancelled');
          else signal.addEventListener('abort', () => resolve('cancelled'), { once: true });
        });
  const winner = await Promise.race([work, expired, ...(cancelled !== undefined ? [cancelled] : [])]);
  if (winner === 'cancelled') {
    // A client cancellation reaches the running attempt: the token, then the provider (the same connector, on the
    // pinned route), then the connector's own answer decides, within the deadline.
    attempt.cancel(
      new ConnectorFailure({ code: 'connector.attempt_cancelled', operation: TYPED_METHOD_OPERATION[method], source: CLIENT_CANCEL_SOURCE }),
      'client_cancelled',
    );
    const cancellation = await attemptRemoteCancel(req, attempt, timers);
    const after = await Promise.race([work, expired]);
    timers.clearTimeout(timer);
    if (after !== 'timeout') return { ...(await finish(withCancellation(after, cancellation), false, cancellation)), client_cancelled: true };
    await attempt.end({ drain: false });
    return { ...(await finish(timeoutOutcome(req, method, attempt, cancellation, true), true, cancellation)), client_cancelled: true };
  }
  timers.clearTimeout(timer);
  if (winner !== 'timeout') return finish(winner, false);

  // The attempt ends at its deadline: close the stream first, so nothing the
  // connector emits from here on (even from an abort listener) is accepted.
  await attempt.end({ drain: false });
  attempt.cancel(timeoutReason(), 'deadline_exceeded');
  // cancel_typed still runs with the attempt's context (credentials, the provider operation); the attempt retires after it.
  const cancellation = await attemptRemoteCancel(req, attempt, timers);
  return finish(timeoutOutcome(req, method, attempt, cancellation, true), true, cancellation);
}

export const CLIENT_CANCEL_SOURCE = 'runtime:client_cancel';

/** The connector's answer after a client cancellation, with what the cancellation did as evidence. */
function withCancellation(outcome: DispatchOutcome, cancellation: CancellationEvidence): DispatchOutcome {
  if (outcome.ok) return outcome;
  const error = outcome.error;
  return { ...outcome, error: { ...error, details: { ...(error.details ?? {}), client_cancelled: true, cancellation: { ...cancellation } as JsonObject } } };
}

function timeoutReason(): ConnectorFailure {
  return new ConnectorFailure({ code: 'sla.timeout_exceeded', operation: 'invocation', source: DEADLINE_SOURCE });
}

/**
 * A provider operation the connector published with its answer in hand is held for the settlement write; the
 * runtime makes it durable before it awaits anything of its own that can be lost first. A failed write leaves it
 * held (the settlement still carries it); the runtime's writer reports its own failures.
 */
async function persistHeld(attempt: ExecutionAttempt): Promise<void> {
  if (!attempt.provider_operation_held) return;
  await attempt.persist_held().catch(() => undefined);
}

async function attemptRemoteCancel(req: AttemptRequest, attempt: ExecutionAttempt, timers: Timers): Promise<CancellationEvidence> {
  await persistHeld(attempt);
  if (!req.support.cancellation) return { attempted: false, reason: 'cancellation_unsupported' };
  const grace = req.cancel_grace_ms ?? DEFAULT_CANCEL_GRACE_MS;
  let timer: unknown;
  const expired = new Promise<CancellationEvidence>((resolve) => {
    timer = timers.setTimeout(() => resolve({ attempted: true, outcome: 'timed_out' }), grace);
  });
  const cancel = (async (): Promise<CancellationEvidence> => {
    try {
      const r = await req.connector.cancel_typed(req.action, attempt.context);
      return { attempted: true, outcome: r?.accepted === true ? 'accepted' : 'rejected' };
    } catch (err) {
      return { attempted: true, outcome: 'failed', code: isConnectorFailure(err) ? err.code : 'connector.unexpected_error' };
    }
  })();
  const evidence = await Promise.race([cancel, expired]);
  timers.clearTimeout(timer);
  return evidence;
}

function timeoutOutcome(
  req: AttemptRequest,
  method: DispatchMethod,
  attempt: ExecutionAttempt,
  cancellation: CancellationEvidence,
  workStarted: boolean,
): DispatchOutcome {
  const operation = TYPED_METHOD_OPERATION[method];
  const retryable = timeoutRetryable(req.capability, req.support, req.action);
  const provider_operation = attempt.provider_operation;
  // Plans and reconciliations only read provider state; the other methods may have had an effect.
  const mayHaveEffect = workStarted && method !== 'plan_typed' && method !== 'reconcile_typed';
  const details: JsonObject = {
    timeout_ms: req.capability.execution?.timeout_ms ?? null,
    cancellation: { ...cancellation } as JsonObject,
    provider_effect_committed: attempt.provider_effect_committed,
  };
  if (attempt.reconciliation_cursor !== undefined) details.reconciliation_cursor = attempt.reconciliation_cursor;
  const failure = new ConnectorFailure({
    code: 'sla.timeout_exceeded',
    operation,
    source: DEADLINE_SOURCE,
    retryable,
    uncertain_outcome: mayHaveEffect || attempt.provider_effect_committed,
    ...(provider_operation !== undefined ? { provider_operation } : {}),
    redacted_details: details,
  });
  // `retryable` is already the page's timeout rule; the capability flag keeps an uncertain retryable timeout retryable.
  return failedOutcome(method, failure, { capabilityRetryable: retryable });
}
