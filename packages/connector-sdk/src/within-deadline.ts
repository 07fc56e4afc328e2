/**
 * withinDeadline: bound a connector's wait by the attempt deadline, with a
 * safety margin, and by its cancellation.
 *
 * The runtime's own timer fires AT the effective deadline and answers a
 * blunt `sla.timeout_exceeded`. A connector that stops waiting a little
 * earlier returns its own typed failure instead: with the provider request ID
 * it saw, the provider operation, and the detail of what it was waiting for.
 */
import type { JsonObject, ProviderOperationRef } from './protocol/index.js';
import { contextAttemptEvidence, type ActionExecutionContext } from './context.js';
import { ConnectorFailure } from './failure.js';
import { SIDE_EFFECTING_OPERATIONS, type ConnectorOperation } from './operations.js';

/** The default margin kept back from the attempt deadline. */
export const DEFAULT_DEADLINE_MARGIN_MS = 250;
/** The failure source when no other is given (HandlerCall.withinDeadline gives the connector's). */
export const WITHIN_DEADLINE_SOURCE = 'connector-sdk:deadline';

/** Fields the failure carries when the wait ends at the deadline or at cancellation. */
export interface WithinDeadlineFailureFields {
  readonly message?: string;
  /** Default false. Under a `commit` or `execute` the runtime makes a timeout non-retryable anyway. */
  readonly retryable?: boolean;
  /**
   * Default: true when the wait may have let an effect happen (a
   * side-effecting operation whose work started), or when the attempt
   * already checkpointed a provider operation or published the effect.
   */
  readonly uncertain_outcome?: boolean;
  readonly provider_request_id?: string;
  /** Default: the provider operation the attempt knows (recovered or checkpointed). */
  readonly provider_operation?: ProviderOperationRef;
  readonly redacted_details?: JsonObject;
}

export interface WithinDeadlineOptions {
  /** Stop waiting this long before the attempt deadline (default DEFAULT_DEADLINE_MARGIN_MS). */
  readonly margin_ms?: number;
  /** The typed operation the wait serves (default `invocation`; HandlerCall.withinDeadline fills it). */
  readonly operation?: ConnectorOperation;
  /** The failure source (default `connector-sdk:deadline`; HandlerCall.withinDeadline gives the connector's). */
  readonly source?: string;
  readonly failure?: WithinDeadlineFailureFields;
}

/** The work to bound: a promise already running, or a function started with an AbortSignal. */
export type BoundedWork<T> = PromiseLike<T> | ((signal: AbortSignal) => PromiseLike<T>);

/**
 * Waits for `work`, but no longer than `ctx.deadline` minus `margin_ms`, and
 * not past `ctx.cancellation`.
 *
 * - In time: resolves (or rejects) as `work` does.
 * - At `deadline - margin_ms`: rejects with `sla.timeout_exceeded`
 *   (category `timeout`, `retryable: false` unless given) and aborts the
 *   signal handed to a function `work`. With no time left a function `work`
 *   is not started at all.
 * - On cancellation: rejects with `connector.attempt_cancelled` whose
 *   details name `cancellation_reason` (see ctx.cancellation_reason) and
 *   aborts the signal.
 *
 * Both failures default `uncertain_outcome` to "an effect may have happened"
 * and carry the attempt's known provider operation, so an author can simply
 * let them propagate. `redacted_details` gain `margin_ms`.
 */
export function withinDeadline<T>(ctx: ActionExecutionContext, work: BoundedWork<T>, options: WithinDeadlineOptions = {}): Promise<T> {
  const margin_ms = Math.max(0, Math.floor(options.margin_ms ?? DEFAULT_DEADLINE_MARGIN_MS));
  const operation = options.operation ?? 'invocation';
  const source = options.source ?? WITHIN_DEADLINE_SOURCE;
  const controller = new AbortController();
  let started = typeof work !== 'function';

  const failure = (kind: 'timeout' | 'cancelled'): ConnectorFailure => {
    const evidence = contextAttemptEvidence(ctx);
    const f = options.failure ?? {};
    const uncertain =
      f.uncertain_outcome ??
      ((started && SIDE_EFFECTING_OPERATIONS.has(operation)) || evidence.provider_effect_committed || evidence.provider_operation_checkpointed);
    const provider_operation = f.provider_operation ?? evidence.provider_operation;
    const reason = ctx.cancellation_reason;
    return new ConnectorFailure({
      ...(kind === 'timeout'
        ? { code: 'sla.timeout_exceeded', category: 'timeout' as const }
        : { code: 'connector.attempt_cancelled', category: 'conflict' as const }),
      operation,
      source,
      ...(f.message !== undefined ? { message: f.message } : {}),
      retryable: kind === 'timeout' ? (f.retryable ?? false) : false,
      uncertain_outcome: uncertain,
      ...(f.provider_request_id !== undefined ? { provider_request_id: f.provider_request_id } : {}),
      ...(provider_operation !== undefined ? { provider_operation } : {}),
      redacted_details: {
        ...(f.redacted_details ?? {}),
        margin_ms,
        ...(kind === 'cancelled'
          ? { cancellation_reason: reason?.kind ?? 'unspecified', ...(reason?.code !== undefined ? { cancellation_code: reason.code } : {}) }
          : {}),
      },
    });
  };

  return new Promise<T>((resolve, reject) => {
    let done = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (settle: () => void, abortWith?: unknown): void => {
      if (done) return;
      done = true;
      if (timer !== undefined) clearTimeout(timer);
      ctx.cancellation.removeEventListener('abort', onCancel);
      settle();
      if (abortWith !== undefined) controller.abort(abortWith);
    };
    const expire = (): void => {
      const f = failure('timeout');
      finish(() => reject(f), f);
    };
    function onCancel(): void {
      const f = failure('cancelled');
      finish(() => reject(f), ctx.cancellation.reason ?? f);
    }

    if (ctx.cancellation.aborted) return onCancel();
    const budget = ctx.deadline.remaining_ms() - margin_ms;
    if (budget <= 0) return expire();
    timer = setTimeout(expire, budget);
    ctx.cancellation.addEventListener('abort', onCancel, { once: true });

    let pending: PromiseLike<T>;
    try {
      pending = typeof work === 'function' ? work(controller.signal) : work;
      started = true;
    } catch (err) {
      finish(() => reject(err));
      return;
    }
    Promise.resolve(pending).then(
      (value) => finish(() => resolve(value)),
      (err: unknown) => finish(() => reject(err)),
    );
  });
}
