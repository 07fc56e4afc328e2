import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Action, ActionResult, Capability } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  ConnectorFailure,
  FrozenConnectorBase,
  implementationSupport,
  timeoutRetryable,
  type ActionExecutionContext,
  type CancelOutcome,
  type ConnectorManifest,
  type ImplementationSupport,
  type TransactionCheckpointWriter,
} from '../../../packages/connector-sdk/src/index.js';
import { effectiveDeadline, runAttempt, type AttemptRequest } from '../../../lib/runtime/attempts/deadline.js';
import { MemorySink, T0, action, capability, execution, trusted } from './fixtures.js';

/** A connector whose invoke never resolves and ignores the cancellation signal. */
class Stubborn extends FrozenConnectorBase {
  readonly id = 'stubborn';
  invoked = 0;
  cancelCalls = 0;
  sawAbort = false;
  lateEmit: Promise<unknown> | undefined;
  cancelBehaviour: 'accept' | 'throw' | 'hang' = 'accept';
  resolveLate: ((r: ActionResult) => void) | undefined;
  checkpointFirst = false;

  async discover(): Promise<ConnectorManifest> {
    return { connector_id: 'stubborn', version: '1.0.0', capabilities: [], implementation_support: {} };
  }
  implementation_support() {
    return undefined;
  }
  async invoke_typed(_a: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    this.invoked += 1;
    ctx.cancellation.addEventListener('abort', () => {
      this.sawAbort = true;
      this.lateEmit = ctx.stream.emit({ type: 'text', text: 'too late' });
    });
    if (this.checkpointFirst) {
      await ctx.transaction_checkpoint.checkpoint({ provider: 'sim', operation_id: 'op-77' }, 'cursor-1');
      ctx.execution_checkpoints.provider_effect_committed();
    }
    return new Promise<ActionResult>((resolve) => {
      this.resolveLate = resolve;
    });
  }
  override async commit_typed(a: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.invoke_typed(a, ctx);
  }
  override async cancel_typed(): Promise<CancelOutcome> {
    this.cancelCalls += 1;
    if (this.cancelBehaviour === 'throw') throw new ConnectorFailure({ code: 'payments.cancel_rejected', operation: 'cancellation', source: 'provider:sim' });
    if (this.cancelBehaviour === 'hang') return new Promise<CancelOutcome>(() => undefined);
    return { accepted: true };
  }
}

const writer: TransactionCheckpointWriter = { checkpoint: async () => undefined };

function request(
  connector: Stubborn,
  opts: { capability?: Capability; support?: ImplementationSupport; action?: Action; actionDeadline?: Date } = {},
): AttemptRequest {
  const { action_id: _a, capability_id: _c, deadline_at: _d, streaming: _s, ...rest } = trusted();
  const act = opts.action ?? action();
  return {
    connector,
    capability: opts.capability ?? capability({ execution: execution({ timeout_ms: 1_000, supports_cancel: true, supports_retry: true }) }),
    support: opts.support ?? implementationSupport({ invocation: true, cancellation: true, retry: true }),
    action: act,
    trusted: {
      ...rest,
      ...(act.transaction ? { transaction: { transaction_id: act.transaction.transaction_id ?? 'tx-1', mode: act.transaction.mode } } : {}),
      ...(opts.actionDeadline ? { action_deadline: opts.actionDeadline } : {}),
    },
    facilities: { transaction_checkpoints: writer, stream_sink: new MemorySink() },
    cancel_grace_ms: 200,
  };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('effective timeout', () => {
  it('is the earlier of the capability timeout and the action deadline', () => {
    expect(effectiveDeadline(T0, 1_000, new Date(T0.getTime() + 5_000))).toEqual(new Date(T0.getTime() + 1_000));
    expect(effectiveDeadline(T0, 10_000, new Date(T0.getTime() + 5_000))).toEqual(new Date(T0.getTime() + 5_000));
    expect(effectiveDeadline(T0, undefined, undefined, 900_000)).toEqual(new Date(T0.getTime() + 900_000));
  });
});

describe('a connector that never resolves', () => {
  it('cannot hold the attempt past its deadline: sla.timeout_exceeded, signal aborted, cancel_typed called', async () => {
    const c = new Stubborn();
    const p = runAttempt(request(c));
    let settled = false;
    void p.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(settled).toBe(false);
    expect(c.sawAbort).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const outcome = await p;
    expect(c.sawAbort).toBe(true);
    expect(c.cancelCalls).toBe(1);
    expect(outcome).toMatchObject({
      ok: false,
      timed_out: true,
      deadline_at: new Date(T0.getTime() + 1_000),
      cancellation: { attempted: true, outcome: 'accepted' },
      error: {
        code: 'sla.timeout_exceeded',
        category: 'timeout',
        uncertain_outcome: true,
        source: 'runtime:deadline',
        details: { timeout_ms: 1_000, connector_operation: 'invocation' },
      },
    });
  });

  it('uses the action deadline when it is earlier than the capability timeout', async () => {
    const c = new Stubborn();
    const p = runAttempt(request(c, { actionDeadline: new Date(T0.getTime() + 250) }));
    await vi.advanceTimersByTimeAsync(250);
    const outcome = await p;
    expect(outcome.timed_out).toBe(true);
    expect(outcome.deadline_at).toEqual(new Date(T0.getTime() + 250));
  });

  it('discards the late result and rejects late stream emits', async () => {
    const c = new Stubborn();
    const capStreaming = capability({ execution: execution({ timeout_ms: 100, supports_streaming: true }) });
    const p = runAttempt(request(c, { capability: capStreaming, support: implementationSupport({ invocation: true, streaming: true }) }));
    await vi.advanceTimersByTimeAsync(100);
    const outcome = await p;
    expect(outcome.ok).toBe(false);
    c.resolveLate?.({ action_id: 'act-1', status: 'completed', output: { late: true } });
    await expect(c.lateEmit).rejects.toMatchObject({ code: 'connector.stream_closed' });
    expect(outcome.ok === false && outcome.error.code).toBe('sla.timeout_exceeded');
  });

  it('does not call cancel_typed when the capability has no cancellation support', async () => {
    const c = new Stubborn();
    const p = runAttempt(request(c, { support: implementationSupport({ invocation: true, retry: true }) }));
    await vi.advanceTimersByTimeAsync(1_000);
    const outcome = await p;
    expect(c.cancelCalls).toBe(0);
    expect(outcome.cancellation).toEqual({ attempted: false, reason: 'cancellation_unsupported' });
    expect(outcome.ok === false && outcome.error.details?.cancellation).toEqual({ attempted: false, reason: 'cancellation_unsupported' });
  });

  it('swallows a failing cancel_typed into evidence', async () => {
    const c = new Stubborn();
    c.cancelBehaviour = 'throw';
    const p = runAttempt(request(c));
    await vi.advanceTimersByTimeAsync(1_000);
    const outcome = await p;
    expect(outcome.cancellation).toEqual({ attempted: true, outcome: 'failed', code: 'payments.cancel_rejected' });
    expect(outcome.ok === false && outcome.error.code).toBe('sla.timeout_exceeded');
  });

  it('bounds a cancel_typed that never answers', async () => {
    const c = new Stubborn();
    c.cancelBehaviour = 'hang';
    const p = runAttempt(request(c));
    await vi.advanceTimersByTimeAsync(1_000);
    let settled = false;
    void p.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(199);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect((await p).cancellation).toEqual({ attempted: true, outcome: 'timed_out' });
  });

  it('keeps the checkpointed provider operation and the effect checkpoint as recovery evidence', async () => {
    const c = new Stubborn();
    c.checkpointFirst = true;
    const p = runAttempt(request(c, { action: action({ transaction: { mode: 'commit', transaction_id: 'tx-1', plan_id: 'plan:tx-1' } }) }));
    await vi.advanceTimersByTimeAsync(1_000);
    const outcome = await p;
    expect(outcome.provider_operation).toEqual({ provider: 'sim', operation_id: 'op-77' });
    expect(outcome.provider_effect_committed).toBe(true);
    expect(outcome).toMatchObject({
      ok: false,
      error: {
        code: 'sla.timeout_exceeded',
        uncertain_outcome: true,
        retryable: false,
        provider_operation: { provider: 'sim', operation_id: 'op-77' },
        details: { reconciliation_cursor: 'cursor-1', provider_effect_committed: true },
      },
    });
  });

  it('does not call the connector at all when the deadline has already passed', async () => {
    const c = new Stubborn();
    const outcome = await runAttempt(request(c, { actionDeadline: new Date(T0.getTime() - 1) }));
    expect(c.invoked).toBe(0);
    expect(outcome).toMatchObject({
      ok: false,
      timed_out: true,
      cancellation: { attempted: false, reason: 'no_work_started' },
      error: { code: 'sla.timeout_exceeded', uncertain_outcome: false },
    });
  });
});

describe('timeout retryability', () => {
  const retrying = capability({ execution: execution({ supports_retry: true }) });
  const notRetrying = capability({ execution: execution({ supports_retry: false }) });
  const withRetry = implementationSupport({ invocation: true, retry: true });
  const noRetryFlag = implementationSupport({ invocation: true });

  it('is true only when the capability supports retry and the action is neither a commit nor an execute transaction', () => {
    expect(timeoutRetryable(retrying, withRetry, action())).toBe(true);
    expect(timeoutRetryable(retrying, withRetry, action({ transaction: { mode: 'compensate', compensation_for: 'a0' } }))).toBe(true);
    expect(timeoutRetryable(retrying, withRetry, action({ transaction: { mode: 'commit', plan_id: 'p' } }))).toBe(false);
    expect(timeoutRetryable(retrying, withRetry, action({ transaction: { mode: 'execute' } }))).toBe(false);
    expect(timeoutRetryable(notRetrying, withRetry, action())).toBe(false);
    expect(timeoutRetryable(retrying, noRetryFlag, action())).toBe(false);
  });

  it('is what the timeout failure carries', async () => {
    const cases: { cap: Capability; support: ImplementationSupport; act: Action; retryable: boolean }[] = [
      { cap: retrying, support: withRetry, act: action(), retryable: true },
      { cap: retrying, support: withRetry, act: action({ transaction: { mode: 'execute', transaction_id: 'tx-1' } }), retryable: false },
      { cap: retrying, support: withRetry, act: action({ transaction: { mode: 'commit', transaction_id: 'tx-1', plan_id: 'plan:tx-1' } }), retryable: false },
      { cap: notRetrying, support: withRetry, act: action(), retryable: false },
    ];
    for (const k of cases) {
      const c = new Stubborn();
      const p = runAttempt(request(c, { capability: k.cap, support: k.support, action: k.act }));
      await vi.advanceTimersByTimeAsync(1_000);
      const outcome = await p;
      expect(outcome.ok === false && outcome.error).toMatchObject({ code: 'sla.timeout_exceeded', retryable: k.retryable });
    }
  });
});

describe('an attempt that finishes in time', () => {
  it('returns the connector result and clears the deadline timer', async () => {
    class Quick extends Stubborn {
      override async invoke_typed(a: Action): Promise<ActionResult> {
        return { action_id: a.id, status: 'completed', output: { fast: true } };
      }
    }
    const outcome = await runAttempt(request(new Quick()));
    expect(outcome).toMatchObject({ ok: true, timed_out: false, result: { output: { fast: true } } });
    expect(vi.getTimerCount()).toBe(0);
  });
});
