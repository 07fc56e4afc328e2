/**
 * The invocation's remaining time bounds connector attempts
 * (lib/runtime/attempt-budget.ts): a connector that would run past what the
 * worker Lambda has left gets `sla.timeout_exceeded` (uncertain) at
 * remaining time − ATTEMPT_SETTLEMENT_MARGIN_MS, and its `cancel_typed` is
 * called, so the timeout path and the settlement run before Lambda would
 * stop the process. The reconcile consumer's inline attempt is bounded the
 * same way.
 */
import * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import type { ActionExecutionContext } from '../../../packages/connector-sdk/src/context.js';
import { ATTEMPT_SETTLEMENT_MARGIN_MS } from '../../../lib/runtime/attempt-budget.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

/** Far longer than any worker Lambda: only the invocation's budget can end these attempts in time. */
const CAPABILITY_TIMEOUT_MS = 600_000;
/** What the budget leaves the attempt after the margin (a short real wait: the attempt's timer). */
const LEFT_FOR_THE_ATTEMPT_MS = 40;

const Input = z.strictObject({ amount: z.int().min(1), scenario: z.enum(['hang', 'ok']).default('hang') });
const Output = z.strictObject({ transfer_id: z.string() });

/** What the far side of the connector saw. */
const provider = {
  deadlines: new Map<string, Date>(),
  cancelled: [] as string[],
  reconcileDeadlines: [] as Date[],
};

function untilCancelled(ctx: ActionExecutionContext): Promise<void> {
  return new Promise<void>((resolve) => {
    if (ctx.cancellation.aborted) resolve();
    else ctx.cancellation.addEventListener('abort', () => resolve(), { once: true });
  });
}

const slowTransfer = defineCapability({
  id: 'slow.transfer',
  input: Input,
  output: Output,
  contract: {
    transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
    execution: { supports_cancel: true, supports_streaming: false, supports_retry: false, timeout_ms: CAPABILITY_TIMEOUT_MS },
  },
}).implement({
  invoke: async (input, ctx, call) => {
    provider.deadlines.set(call.action.id, ctx.deadline.at);
    if (input.scenario === 'ok') return { transfer_id: `tr-${call.action.id}` };
    // Accepted by the provider (checkpointed), then no answer: only the deadline ends it.
    await ctx.transaction_checkpoint.checkpoint({ provider: 'slowpay', operation_id: `op-${call.action.id}` }, `cursor-${call.action.id}`);
    await untilCancelled(ctx);
    throw call.failure({ code: 'slow.aborted', category: 'temporary', retryable: false, uncertain_outcome: true });
  },
  cancel: async (_input, _ctx, call) => {
    provider.cancelled.push(call.action.id);
    return { accepted: true };
  },
  reconcile: async (_input, ctx) => {
    provider.reconcileDeadlines.push(ctx.deadline.at);
    await untilCancelled(ctx);
    return { terminal: false, evidence: { provider_state: 'unknown' } };
  },
});

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ connectors: [defineConnector({ id: 'slowpay', version: '1.0.0', capabilities: [slowTransfer] })], prefix: 'rt-budget' });
});
afterAll(async () => h.destroy());

/** A budget leaving the attempt `left` ms after the margin. */
const budgetLeaving = (left: number) => ({ remaining_ms: () => ATTEMPT_SETTLEMENT_MARGIN_MS + left });

async function submitExecute(input: Record<string, unknown>): Promise<{ action_id: string; transaction_id: string }> {
  const action_id = uid('a');
  const transaction_id = uid('tx');
  const out = await h.runtime.submit(caller(), {
    id: action_id,
    capability_id: 'slow.transfer',
    input: { amount: 100, ...input },
    identity: { tenant_id: TENANT },
    transaction: { mode: 'execute', transaction_id },
  });
  expect(out.disposition).toBe('accepted');
  return { action_id, transaction_id };
}

async function invokeMessageFor(action_id: string) {
  const received = await h.receiveInvokes();
  const found = received.find((r) => r.message.action_id === action_id);
  expect(found, action_id).toBeDefined();
  return found!.message;
}

describe('attempts end before the worker Lambda does', () => {
  it('a connector that would run past the remaining time gets sla.timeout_exceeded (uncertain) at the bound, and cancel_typed is called', async () => {
    const { action_id, transaction_id } = await submitExecute({ scenario: 'hang' });
    const message = await invokeMessageFor(action_id);
    const started = h.clock.now().getTime();

    const outcome = await h.runtime.runAttempt(message, budgetLeaving(LEFT_FOR_THE_ATTEMPT_MS));

    // The deadline the connector saw: remaining time minus the margin, not the capability's ten minutes.
    expect(provider.deadlines.get(action_id)?.getTime()).toBe(started + LEFT_FOR_THE_ATTEMPT_MS);
    // The timeout path ran: the connector was asked to cancel, and the attempt settled as uncertain.
    expect(provider.cancelled).toContain(action_id);
    expect(outcome).toMatchObject({ disposition: 'settled', retry: false, transaction_status: 'outcome_unknown' });
    const record = await h.table.store.get({ tenant_id: TENANT, transaction_id });
    expect(record?.status).toBe('outcome_unknown');
    expect(record?.error).toMatchObject({ code: 'sla.timeout_exceeded', uncertain_outcome: true });
    expect(record?.error?.details).toMatchObject({ cancellation: { attempted: true, outcome: 'accepted' } });
    expect(record?.provider_operation).toMatchObject({ provider: 'slowpay', operation_id: `op-${action_id}` });
    expect(record?.next_reconcile_at).toBeDefined();
    expect(h.scheduler.for(transaction_id)).toHaveLength(1);
  });

  it('a budget longer than the attempt timeout leaves the capability deadline as it is', async () => {
    const { action_id, transaction_id } = await submitExecute({ scenario: 'ok' });
    const message = await invokeMessageFor(action_id);
    const started = h.clock.now().getTime();
    const outcome = await h.runtime.runAttempt(message, budgetLeaving(CAPABILITY_TIMEOUT_MS * 2));
    expect(provider.deadlines.get(action_id)?.getTime()).toBe(started + CAPABILITY_TIMEOUT_MS);
    expect(outcome).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    expect((await h.table.store.get({ tenant_id: TENANT, transaction_id }))?.status).toBe('committed');
  });

  it("the reconcile consumer's inline attempt is bounded by its budget too", async () => {
    const { action_id, transaction_id } = await submitExecute({ scenario: 'hang' });
    await h.runtime.runAttempt(await invokeMessageFor(action_id), budgetLeaving(LEFT_FOR_THE_ATTEMPT_MS));
    const due = (await h.table.store.get({ tenant_id: TENANT, transaction_id }))?.next_reconcile_at;
    expect(due).toBeDefined();
    h.clock.advance(Date.parse(due!) - h.clock.now().getTime());
    const started = h.clock.now().getTime();
    const before = provider.reconcileDeadlines.length;

    const outcome = await h.runtime.reconcile(
      { kind: 'reconcile', tenant_id: TENANT, transaction_id, reason: 'schedule' },
      budgetLeaving(LEFT_FOR_THE_ATTEMPT_MS),
    );

    expect(provider.reconcileDeadlines.slice(before).map((d) => d.getTime())).toEqual([started + LEFT_FOR_THE_ATTEMPT_MS]);
    expect(outcome).toMatchObject({ disposition: 'still_unknown', retry: false, transaction_status: 'outcome_unknown' });
    expect(provider.cancelled).toContain(outcome.action_id);
  });
});
