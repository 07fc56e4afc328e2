/**
 * `transaction_checkpoint.checkpoint_with_answer` (packages/connector-sdk/src/context.ts):
 * the provider operation of an answer the connector already holds. With a
 * writer that can hold it (the runtime's worker), nothing is written before
 * the settlement, which carries it; without one, it is the durable checkpoint.
 * A held reference is written durably as soon as a durable checkpoint of it
 * is asked for, and by the runtime before any wait of its own (the deadline's
 * cancellation request). The runtime-level proof (DynamoDB Local, payments
 * simulator, crashes, races) is test/integration/runtime/checkpoint-fold.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Action, ActionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  FrozenConnectorBase,
  implementationSupport,
  type ActionExecutionContext,
  type CancelOutcome,
  type ConnectorManifest,
  type TransactionCheckpointWriter,
} from '../../../packages/connector-sdk/src/index.js';
import { runAttempt } from '../../../lib/runtime/attempts/deadline.js';
import { T0, action, attempt, capability, execution, trusted } from './fixtures.js';

type Call = { kind: 'checkpoint' | 'hold'; input: unknown };

function writer(withHold: boolean): TransactionCheckpointWriter & { calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    async checkpoint(input) {
      calls.push({ kind: 'checkpoint', input });
    },
    ...(withHold
      ? {
          async hold(input: unknown) {
            calls.push({ kind: 'hold', input });
          },
        }
      : {}),
  };
}

const OP = { provider: 'sim', operation_id: 'op-5' };

describe('checkpoint_with_answer', () => {
  it('with a writer that holds: held for the settlement, nothing durable written; the attempt reports it as its provider operation', async () => {
    const w = writer(true);
    const a = attempt({ transaction: { transaction_id: 'tx-1', mode: 'execute' } }, { transaction_checkpoints: w });
    await a.context.transaction_checkpoint.checkpoint_with_answer(OP);
    expect(w.calls).toEqual([{ kind: 'hold', input: { transaction_id: 'tx-1', provider_operation: OP } }]);
    expect(a.provider_operation).toEqual(OP);
    expect(a.provider_operation_held).toBe(true);
    // The context shows it like a checkpointed one.
    expect(a.context.transaction?.provider_operation_id).toBe('op-5');
  });

  it('with a writer that cannot hold (a remote host, the conformance kit): the durable checkpoint', async () => {
    const w = writer(false);
    const a = attempt({ transaction: { transaction_id: 'tx-1', mode: 'commit' } }, { transaction_checkpoints: w });
    await a.context.transaction_checkpoint.checkpoint_with_answer(OP);
    expect(w.calls).toEqual([{ kind: 'checkpoint', input: { transaction_id: 'tx-1', provider_operation: OP } }]);
    expect(a.provider_operation_held).toBe(false);
  });

  it('with a cursor: durable (the settlement carries the reference only)', async () => {
    const w = writer(true);
    const a = attempt({ transaction: { transaction_id: 'tx-1', mode: 'execute' } }, { transaction_checkpoints: w });
    await a.context.transaction_checkpoint.checkpoint_with_answer(OP, 'cursor-1');
    expect(w.calls.map((c) => c.kind)).toEqual(['checkpoint']);
    expect(a.provider_operation_held).toBe(false);
  });

  it('a durable checkpoint of a held reference writes it; the same answer again holds nothing new', async () => {
    const w = writer(true);
    const a = attempt({ transaction: { transaction_id: 'tx-1', mode: 'execute' } }, { transaction_checkpoints: w });
    await a.context.transaction_checkpoint.checkpoint_with_answer(OP);
    await a.context.transaction_checkpoint.checkpoint_with_answer({ ...OP, request_id: 'req-2' });
    expect(w.calls.map((c) => c.kind)).toEqual(['hold']);
    await a.context.transaction_checkpoint.checkpoint(OP);
    expect(w.calls.map((c) => c.kind)).toEqual(['hold', 'checkpoint']);
    expect(a.provider_operation_held).toBe(false);
    // Durable now: the same operation again writes nothing.
    await a.context.transaction_checkpoint.checkpoint(OP);
    expect(w.calls).toHaveLength(2);
  });

  it('the same validation and conflict rules as checkpoint', async () => {
    const w = writer(true);
    const a = attempt(
      { transaction: { transaction_id: 'tx-1', mode: 'execute', provider_operation: { provider: 'sim', operation_id: 'op-1' } } },
      { transaction_checkpoints: w },
    );
    await expect(a.context.transaction_checkpoint.checkpoint_with_answer({ provider: '', operation_id: 'x' })).rejects.toMatchObject({
      code: 'transaction.invalid_provider_operation',
    });
    await expect(a.context.transaction_checkpoint.checkpoint_with_answer({ provider: 'sim', operation_id: 'op-2' })).rejects.toMatchObject({
      code: 'transaction.provider_operation_conflict',
    });
    // The recovered (durable) reference again: nothing to hold.
    await a.context.transaction_checkpoint.checkpoint_with_answer({ provider: 'sim', operation_id: 'op-1' });
    expect(w.calls).toEqual([]);
    a.retire();
    await expect(a.context.transaction_checkpoint.checkpoint_with_answer(OP)).rejects.toMatchObject({ code: 'connector.attempt_ended' });
  });

  it('persist_held writes a held reference durably once; nothing to do otherwise', async () => {
    const w = writer(true);
    const a = attempt({ transaction: { transaction_id: 'tx-1', mode: 'execute' } }, { transaction_checkpoints: w });
    await a.persist_held();
    expect(w.calls).toEqual([]);
    await a.context.transaction_checkpoint.checkpoint_with_answer(OP);
    await a.persist_held();
    await a.persist_held();
    expect(w.calls).toEqual([
      { kind: 'hold', input: { transaction_id: 'tx-1', provider_operation: OP } },
      { kind: 'checkpoint', input: { transaction_id: 'tx-1', provider_operation: OP } },
    ]);
    expect(a.provider_operation_held).toBe(false);
  });
});

/** Publishes the operation "with the answer in hand", then (against the rule) keeps waiting until the deadline. */
class HoldsThenHangs extends FrozenConnectorBase {
  readonly id = 'holds-then-hangs';
  async discover(): Promise<ConnectorManifest> {
    return { connector_id: 'holds-then-hangs', version: '1.0.0', capabilities: [], implementation_support: {} };
  }
  implementation_support() {
    return undefined;
  }
  async invoke_typed(_a: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    await ctx.transaction_checkpoint.checkpoint_with_answer(OP);
    return new Promise<ActionResult>(() => undefined);
  }
  override async commit_typed(a: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.invoke_typed(a, ctx);
  }
  override async cancel_typed(): Promise<CancelOutcome> {
    order.push('cancel_typed');
    return { accepted: true };
  }
}

const order: string[] = [];

describe('the runtime makes a held reference durable before a wait of its own', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
    order.length = 0;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a deadline: the held operation is checkpointed before the cancellation request to the provider, and the timeout names it', async () => {
    const calls: string[] = [];
    const w: TransactionCheckpointWriter = {
      checkpoint: async () => void order.push('checkpoint'),
      hold: async () => void calls.push('hold'),
    };
    const { action_id: _a, capability_id: _c, deadline_at: _d, streaming: _s, ...rest } = trusted();
    const act = action({ transaction: { mode: 'execute', transaction_id: 'tx-1' } });
    const p = runAttempt({
      connector: new HoldsThenHangs(),
      capability: capability({ execution: execution({ timeout_ms: 1_000, supports_cancel: true }) }),
      support: implementationSupport({ invocation: true, cancellation: true }),
      action: act,
      trusted: { ...rest, transaction: { transaction_id: 'tx-1', mode: 'execute' } },
      facilities: { transaction_checkpoints: w },
      cancel_grace_ms: 200,
    });
    await vi.advanceTimersByTimeAsync(1_000);
    const outcome = await p;
    expect(calls).toEqual(['hold']);
    expect(order).toEqual(['checkpoint', 'cancel_typed']);
    expect(outcome).toMatchObject({ ok: false, timed_out: true, provider_operation: OP, error: { code: 'sla.timeout_exceeded', provider_operation: OP } });
  });
});
