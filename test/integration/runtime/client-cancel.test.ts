/**
 * A user's cancel reaches an attempt already inside the
 * connector. The worker watches the action's durable cancellation request
 * while the connector runs, aborts the context's cancellation token (reason
 * `client_cancelled`), calls cancel_typed where supported (on the pinned
 * route), and settles from what the connector answers:
 * - it stopped before any effect (a certain failure): the action ends
 *   `cancelled`, its transaction `failed`;
 * - the effect may have happened (an operation was checkpointed, the
 *   provider accepted the cancellation): `outcome_unknown`, and a later
 *   reconciliation decides;
 * - it finished anyway: the completed result stands.
 */
import * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import type { ActionExecutionContext } from '../../../packages/connector-sdk/src/context.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

type Behaviour = 'stops_before_effect' | 'effect_then_waits' | 'ignores_cancel';
const In = z.strictObject({ behaviour: z.enum(['stops_before_effect', 'effect_then_waits', 'ignores_cancel']) });

/** The provider: effects, cancellations, and a gate the test opens. */
const provider = {
  effects: [] as string[],
  cancels: [] as { action_id: string; operation_id?: string; reason?: string }[],
  reasons: [] as (string | undefined)[],
  inside: undefined as undefined | (() => void),
  release: undefined as undefined | (() => void),
};

function entered(): Promise<void> {
  return new Promise((resolve) => (provider.inside = resolve));
}

function gatedConnector() {
  const waitForCancelOrRelease = (ctx: ActionExecutionContext) =>
    new Promise<'cancelled' | 'released'>((resolve) => {
      provider.release = () => resolve('released');
      if (ctx.cancellation.aborted) resolve('cancelled');
      ctx.cancellation.addEventListener('abort', () => resolve('cancelled'), { once: true });
      provider.inside?.();
    });
  const cap = defineCapability({
    id: 'gate.pay',
    input: In,
    output: z.strictObject({ ok: z.boolean() }),
    contract: {
      transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      execution: { supports_cancel: true, supports_streaming: false, supports_retry: false, timeout_ms: 20_000 },
    },
  }).implement({
    invoke: async (input: { behaviour: Behaviour }, ctx, call) => {
      if (input.behaviour === 'effect_then_waits') {
        provider.effects.push(call.action.id);
        await ctx.transaction_checkpoint.checkpoint({ provider: 'gate', operation_id: `op-${call.action.id}` });
      }
      const why = await waitForCancelOrRelease(ctx);
      provider.reasons.push(ctx.cancellation_reason?.kind);
      if (why === 'cancelled' && input.behaviour !== 'ignores_cancel') {
        throw call.failure({
          code: 'gate.cancelled',
          category: 'permanent',
          retryable: false,
          uncertain_outcome: input.behaviour === 'effect_then_waits',
        } as never);
      }
      if (input.behaviour === 'ignores_cancel') provider.effects.push(call.action.id);
      return { ok: true };
    },
    cancel: async (_input, ctx, call) => {
      provider.cancels.push({
        action_id: call.action.id,
        ...(ctx.transaction?.provider_operation_id !== undefined ? { operation_id: ctx.transaction.provider_operation_id } : {}),
      });
      return { accepted: true };
    },
    reconcile: async () => ({ terminal: true as const, original_commit_completed: false }),
  });
  return defineConnector({ id: 'gate', version: '1.0.0', capabilities: [cap] });
}

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ connectors: [gatedConnector()], prefix: 'rt-cancel', config: { cancel_poll_ms: 20 } });
});
afterAll(async () => h.destroy());

/** Submits, runs the worker, and cancels once the connector is inside the call. */
async function cancelledInside(behaviour: Behaviour, release = false) {
  const id = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), { id, capability_id: 'gate.pay', input: { behaviour }, transaction: { mode: 'execute', transaction_id: tx } });
  const inside = entered();
  const worked = h.drain();
  await inside;
  const cancel = await h.runtime.cancel(caller(), TENANT, id);
  expect(cancel.cancel_requested).toBe(true);
  if (release) provider.release?.();
  await worked;
  const action = await h.runtime.getAction(caller(), TENANT, id);
  const record = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
  return { id, tx, action, record };
}

describe('a client cancel reaches the running attempt', () => {
  it('stopped before any effect: the connector saw client_cancelled, the action is cancelled and its transaction failed', async () => {
    const { id, action, record } = await cancelledInside('stops_before_effect');
    expect(provider.reasons.at(-1)).toBe('client_cancelled');
    expect(provider.cancels.map((c) => c.action_id)).toContain(id);
    expect(action.action_result.status).toBe('cancelled');
    expect(record?.status).toBe('failed');
    expect(provider.effects).not.toContain(id);
  });

  it('the effect may have happened: cancel_typed gets the checkpointed operation, the record is outcome_unknown and reconciliation decides', async () => {
    const { id, tx, record } = await cancelledInside('effect_then_waits');
    expect(provider.cancels.find((c) => c.action_id === id)).toMatchObject({ operation_id: `op-${id}` });
    expect(record?.status).toBe('outcome_unknown');
    h.clock.advance(30_000);
    const out = await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    expect(out.disposition).toBe('reconciled');
  });

  it('a connector that finishes anyway: the completed result stands (the cancellation lost the race)', async () => {
    const { id, action, record } = await cancelledInside('ignores_cancel');
    expect(action.action_result.status).toBe('completed');
    expect(record?.status).toBe('committed');
    expect(provider.effects).toContain(id);
  });
});
