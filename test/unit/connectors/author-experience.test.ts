/**
 * The author experience of the connector SDK.
 */
import * as z from 'zod';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as sdk from '../../../packages/connector-sdk/src/index.js';
import type { Action, ActionExecutionContext, ActionResult, ProtocolError, ProviderOperationRef } from '../../../packages/connector-sdk/src/index.js';
import { ConnectorFailure, defineCapability, defineConnector, withinDeadline } from '../../../packages/connector-sdk/src/index.js';
import { dispatch } from '../../../lib/runtime/attempts/dispatch.js';
import { runAttempt } from '../../../lib/runtime/attempts/deadline.js';
import { ManualClock } from '../../../packages/connector-sdk/src/ports/clock.js';
import { MemorySink, T0, action, attempt, trusted } from './fixtures.js';

const In = z.strictObject({ amount: z.int().positive() });
const Out = z.strictObject({ id: z.string() });

beforeEach(() => vi.useFakeTimers({ now: T0 }));
afterEach(() => vi.useRealTimers());

describe('the public barrel', () => {
  it('exports the protocol types a handler needs (Action, ActionResult, ProviderOperationRef, ProtocolError)', () => {
    // Type-level: this file does not compile (npx tsc) without them.
    const ref: ProviderOperationRef = { provider: 'sim', operation_id: 'op-1' };
    const act: Action = { id: 'a', capability_id: 'c', input: {} };
    const result: ActionResult = { action_id: act.id, status: 'completed' };
    const error: ProtocolError = { code: 'connector.unexpected_error', message: 'x', category: 'internal', retryable: false };
    expect([ref, result, error].length).toBe(3);
  });

  it('does not export createExecutionContext: the runtime and tests reach it through packages/connector-sdk/src/host.ts', async () => {
    expect('createExecutionContext' in sdk).toBe(false);
    const internal = await import('../../../packages/connector-sdk/src/host.js');
    expect(typeof internal.createExecutionContext).toBe('function');
  });
});

describe('map_error', () => {
  it('receives the action and the context of the failing call', async () => {
    const seen: { action?: Action; ctx?: ActionExecutionContext }[] = [];
    const connector = defineConnector({
      id: 'sim',
      version: '1.0.0',
      capabilities: [
        defineCapability({ id: 'sim.pay', input: In, output: Out }).implement({
          invoke: async () => {
            throw new Error('provider exploded');
          },
        }),
      ],
      map_error: (_err, operation, act, ctx) => {
        seen.push({ ...(act ? { action: act } : {}), ...(ctx ? { ctx } : {}) });
        return new ConnectorFailure({ code: 'sim.exploded', operation, source: 'connector:sim', redacted_details: { action_id: act?.id ?? null } });
      },
    });
    const a = attempt({ capability_id: 'sim.pay' });
    const act = action({ capability_id: 'sim.pay', input: { amount: 1 } });
    const outcome = await dispatch(connector, 'sim.pay', act, a.context);
    expect(outcome.ok === false && outcome.error).toMatchObject({ code: 'sim.exploded', details: { action_id: 'act-1' } });
    expect(seen[0]?.action).toBe(act);
    expect(seen[0]?.ctx).toBe(a.context);
  });

  it('keeps working with a two-argument map_error', async () => {
    const connector = defineConnector({
      id: 'sim',
      version: '1.0.0',
      capabilities: [
        defineCapability({ id: 'sim.pay', input: In, output: Out }).implement({
          invoke: async () => {
            throw new Error('boom');
          },
        }),
      ],
      map_error: (_err, operation) => new ConnectorFailure({ code: 'sim.boom', operation, source: 'connector:sim' }),
    });
    const outcome = await dispatch(
      connector,
      'sim.pay',
      action({ capability_id: 'sim.pay', input: { amount: 1 } }),
      attempt({ capability_id: 'sim.pay' }).context,
    );
    expect(outcome.ok === false && outcome.error.code).toBe('sim.boom');
  });
});

describe('withinDeadline', () => {
  it('bounds a wait by the deadline minus a safety margin, aborting the work and failing with sla.timeout_exceeded', async () => {
    const clock = new ManualClock(T0);
    const a = attempt({ deadline_at: new Date(T0.getTime() + 1_000) }, { clock });
    let signal: AbortSignal | undefined;
    const waiting = withinDeadline(
      a.context,
      (s) => {
        signal = s;
        return new Promise<string>(() => undefined);
      },
      { margin_ms: 200 },
    );
    const settled = waiting.then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(799);
    expect(signal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const failure = await settled;
    expect(failure).toBeInstanceOf(ConnectorFailure);
    expect((failure as ConnectorFailure).toJSON()).toMatchObject({
      code: 'sla.timeout_exceeded',
      category: 'timeout',
      retryable: false,
      uncertain_outcome: true,
      redacted_details: { margin_ms: 200 },
    });
    expect(signal?.aborted).toBe(true);
  });

  it('returns the value of a wait that finishes in time and clears its timer', async () => {
    const a = attempt();
    await expect(withinDeadline(a.context, Promise.resolve(42))).resolves.toBe(42);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops at cancellation with a typed failure naming the cancellation reason', async () => {
    const a = attempt();
    const waiting = withinDeadline(a.context, new Promise<never>(() => undefined), { operation: 'transaction_commit' }).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    a.cancel(undefined, 'lease_lost');
    const failure = (await waiting) as ConnectorFailure;
    expect(failure.toJSON()).toMatchObject({
      code: 'connector.attempt_cancelled',
      operation: 'transaction_commit',
      uncertain_outcome: true,
      redacted_details: { cancellation_reason: 'lease_lost' },
    });
  });

  it('carries the provider operation the attempt checkpointed', async () => {
    const a = attempt({ transaction: { transaction_id: 'tx-1', mode: 'commit' } }, { transaction_checkpoints: { checkpoint: async () => undefined } });
    await a.context.transaction_checkpoint.checkpoint({ provider: 'sim', operation_id: 'op-9' });
    const waiting = withinDeadline(a.context, new Promise<never>(() => undefined), { margin_ms: 0 }).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(30_000);
    expect(((await waiting) as ConnectorFailure).provider_operation).toEqual({ provider: 'sim', operation_id: 'op-9' });
  });

  it('is available on the handler call with the operation and source filled in', async () => {
    const connector = defineConnector({
      id: 'sim',
      version: '1.0.0',
      capabilities: [
        defineCapability({
          id: 'sim.pay',
          input: In,
          output: Out,
          contract: { execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 1_000 } },
        }).implement({
          invoke: async (_input, _ctx, call) => call.withinDeadline(() => new Promise<{ id: string }>(() => undefined), { margin_ms: 100 }),
        }),
      ],
    });
    const report = await sdk.admitConnector(connector);
    const { action_id: _a, capability_id: _c, deadline_at: _d, streaming: _s, ...rest } = trusted({ capability_id: 'sim.pay' });
    const running = runAttempt({
      connector,
      capability: report.capabilities[0]!.capability,
      support: report.capabilities[0]!.implementation_support,
      action: action({ capability_id: 'sim.pay', input: { amount: 1 } }),
      trusted: rest,
    });
    await vi.advanceTimersByTimeAsync(900);
    const outcome = await running;
    // The connector's own typed failure wins the race against the runtime's timer.
    expect(outcome).toMatchObject({
      ok: false,
      timed_out: false,
      error: { code: 'sla.timeout_exceeded', source: 'connector:sim', details: { connector_operation: 'invocation', margin_ms: 100 } },
    });
  });
});

describe('the cancellation reason', () => {
  it('is typed on the context: client cancel, deadline, lost lease, shutdown', async () => {
    const byHandle = attempt();
    expect(byHandle.context.cancellation_reason).toBeUndefined();
    byHandle.cancel(undefined, 'lease_lost');
    expect(byHandle.context.cancellation_reason).toEqual({ kind: 'lease_lost' });

    const parent = new AbortController();
    const byParent = attempt({}, { parent_signal: parent.signal });
    parent.abort();
    expect(byParent.context.cancellation_reason).toEqual({ kind: 'client_cancelled' });

    // The runtime's deadline: the reason is visible from inside the abort listener already.
    let seen: unknown;
    const connector = defineConnector({
      id: 'sim',
      version: '1.0.0',
      capabilities: [
        defineCapability({
          id: 'sim.pay',
          input: In,
          output: Out,
          contract: { execution: { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 1_000 } },
        }).implement({
          invoke: (_input, ctx) =>
            new Promise<never>(() => {
              ctx.cancellation.addEventListener('abort', () => (seen = ctx.cancellation_reason));
            }),
        }),
      ],
    });
    const report = await sdk.admitConnector(connector);
    const { action_id: _a, capability_id: _c, deadline_at: _d, streaming: _s, ...rest } = trusted({ capability_id: 'sim.pay' });
    const running = runAttempt({
      connector,
      capability: report.capabilities[0]!.capability,
      support: report.capabilities[0]!.implementation_support,
      action: action({ capability_id: 'sim.pay', input: { amount: 1 } }),
      trusted: rest,
    });
    await vi.advanceTimersByTimeAsync(1_000);
    await running;
    expect(seen).toEqual({ kind: 'deadline_exceeded', code: 'sla.timeout_exceeded' });
  });
});

describe('streaming from commit', () => {
  it('a commit handler publishes chunks through ctx.stream when the capability streams', async () => {
    const sink = new MemorySink();
    const connector = defineConnector({
      id: 'sim',
      version: '1.0.0',
      capabilities: [
        defineCapability({
          id: 'sim.pay',
          input: In,
          output: Out,
          contract: {
            execution: { supports_cancel: false, supports_streaming: true, supports_retry: false, timeout_ms: 1_000 },
            transaction: { modes: ['plan', 'commit'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
          },
        }).implement({
          // biome-ignore lint/correctness/useYield: a stream handler that emits no chunk, only its result
          stream: async function* () {
            return { id: 'invoked' };
          },
          async commit(_input, ctx) {
            if (ctx.stream.enabled) await ctx.stream.emit({ type: 'progress', progress: 0.5, message: 'submitted' });
            return { id: 'committed' };
          },
        }),
      ],
    });
    const a = attempt(
      { capability_id: 'sim.pay', streaming: true, transaction: { transaction_id: 'tx-1', mode: 'commit' } },
      { stream_sink: sink, transaction_checkpoints: { checkpoint: async () => undefined } },
    );
    const outcome = await dispatch(
      connector,
      'sim.pay',
      action({ capability_id: 'sim.pay', input: { amount: 1 }, transaction: { mode: 'commit', transaction_id: 'tx-1', plan_id: 'plan:tx-1' } }),
      a.context,
    );
    expect(outcome).toMatchObject({ ok: true, result: { output: { id: 'committed' } } });
    expect(sink.written.map((c) => c.chunk)).toEqual([{ type: 'progress', progress: 0.5, message: 'submitted' }]);
  });
});
