/**
 * Reconciliation always ends.
 *
 * - A model test (fast-check): from an `outcome_unknown` record and ANY
 *   sequence of per-round outcomes (the provider answers terminal, pending or
 *   fails; the reconcile admission is refused with any code, transient or
 *   not), the record reaches `reconciled` or is escalated (`requires_human`)
 *   within the bound, and never takes more rounds than the bound allows.
 * - The reproductions of the issue: a capability that declares execute
 *   without reconcile; an approval-gated reconcile whose approval expires; an
 *   uncertain compensation through an alternate capability with another input
 *   schema (reconciled against what ran); a provider operation supplied with
 *   a reconcile request that waits for an approval (kept); escalation
 *   receipts store durable statuses; the approval expiry sweep covers a
 *   tenant named in no configuration.
 */
import fc from 'fast-check';
import * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import type { ActionExecutionContext } from '../../../packages/connector-sdk/src/context.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ErrorCode } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { Authority } from '../../../lib/runtime/authority.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TENANT, caller, createHarness, operator, type Harness } from './support.js';

type Answer = 'committed' | 'not_committed' | 'pending' | 'error';

/** The provider on the far side of the `shop` connector: operations and what a lookup answers. */
class Shop {
  readonly answers = new Map<string, Answer>();
  readonly reconciled: { capability_id: string; operation_id?: string; input: unknown }[] = [];
  #n = 0;
  next(): string {
    this.#n += 1;
    return `shop-op-${this.#n}`;
  }
}

const Scenario = z.enum(['ok', 'uncertain']);
const ChargeInput = z.strictObject({ amount: z.int().min(1), scenario: Scenario.default('ok') });
const RefundInput = z.strictObject({ charge_id: z.string().min(1), scenario: Scenario.default('ok') });
const Out = z.strictObject({ ref: z.string() });
const fast = { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 10_000 };

function shopConnector(shop: Shop) {
  async function effect(input: { scenario: 'ok' | 'uncertain' }, ctx: ActionExecutionContext, failure: (i: never) => Error) {
    const op = shop.next();
    shop.answers.set(op, 'committed');
    await ctx.transaction_checkpoint.checkpoint({ provider: 'shop', operation_id: op });
    if (input.scenario === 'uncertain')
      throw failure({ code: 'shop.response_lost', category: 'temporary', retryable: false, uncertain_outcome: true } as never);
    return { ref: op };
  }
  async function reconcile(capability_id: string, input: unknown, ctx: ActionExecutionContext) {
    const op = ctx.transaction?.provider_operation_id;
    shop.reconciled.push({ capability_id, ...(op !== undefined ? { operation_id: op } : {}), input });
    const answer = op !== undefined ? (shop.answers.get(op) ?? 'committed') : 'pending';
    if (answer === 'error') throw new Error('the lookup failed');
    if (answer === 'pending') return { terminal: false as const, evidence: { state: 'pending' } };
    return { terminal: true as const, original_commit_completed: answer === 'committed', ...(answer === 'committed' ? { output: { ref: op ?? 'none' } } : {}) };
  }
  const charge = defineCapability({
    id: 'shop.charge',
    input: ChargeInput,
    output: Out,
    contract: {
      transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      compensation: { mode: 'supported', compensation_capability_id: 'shop.refund', approval_required: false },
      execution: fast,
      authorization: { scopes: ['pay:write'] },
    },
  }).implement({
    invoke: (input, ctx, call) => effect(input, ctx, call.failure as never),
    compensate: (input, ctx, call) => effect(input as never, ctx, call.failure as never),
    reconcile: (input, ctx) => reconcile('shop.charge', input, ctx),
  });
  // The compensation capability: another input schema (a charge ID, not an amount).
  const refund = defineCapability({
    id: 'shop.refund',
    input: RefundInput,
    output: Out,
    contract: {
      transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      compensation: { mode: 'rollback_not_supported', approval_required: false },
      execution: fast,
      authorization: { scopes: ['pay:write'] },
    },
  }).implement({
    invoke: (input, ctx, call) => effect(input, ctx, call.failure as never),
    compensate: (input, ctx, call) => effect(input, ctx, call.failure as never),
    reconcile: (input, ctx) => reconcile('shop.refund', input, ctx),
  });
  // Declares execute without reconcile: its uncertain outcomes can never be reconciled by the runtime.
  const voucher = defineCapability({
    id: 'shop.voucher',
    input: ChargeInput,
    output: Out,
    contract: {
      transaction: { modes: ['execute'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      execution: fast,
      authorization: { scopes: ['pay:write'] },
    },
  }).implement({ invoke: (input, ctx, call) => effect(input, ctx, call.failure as never) });
  return defineConnector({ id: 'shop', version: '1.0.0', capabilities: [charge, refund, voucher] });
}

const MAX = 4;
const shop = new Shop();
let h: Harness;

beforeAll(async () => {
  h = await createHarness({
    connectors: [shopConnector(shop)],
    prefix: 'rt-bound',
    config: {
      reconcile: { max_attempts: MAX, base_delay_ms: 5_000, max_delay_ms: 60_000 },
      // A tenant policy gating shop.refund's reconciliation behind an approval (the approval-expiry case).
      tenants: {
        [TENANT]: { approvals: [{ policy_id: 'refund-reconcile', capabilities: ['shop.refund'], modes: ['reconcile'], approver_scopes: ['pay:approve'] }] },
      },
    },
  });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const msg = (tx: string) => ({ kind: 'reconcile' as const, tenant_id: TENANT, transaction_id: tx, reason: 'sweeper' as const });
const ended = (r: { status: string; escalated_at?: string } | undefined) =>
  r !== undefined && (r.status === 'reconciled' || (r.status === 'outcome_unknown' && r.escalated_at !== undefined));

async function uncertainCharge(capability_id = 'shop.charge'): Promise<{ tx: string; action: string }> {
  const action = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), {
    id: action,
    capability_id,
    input: { amount: 100, scenario: 'uncertain' },
    transaction: { mode: 'execute', transaction_id: tx },
  });
  await h.drain();
  expect((await record(tx))?.status).toBe('outcome_unknown');
  return { tx, action };
}

/** Moves the runtime's clock to the record's next reconciliation and runs the consumer once. */
async function round(tx: string) {
  const r = await record(tx);
  if (r?.next_reconcile_at !== undefined) h.clock.advanceTo(Date.parse(r.next_reconcile_at) + 1);
  return h.runtime.reconcile(msg(tx));
}

/** Refuses the next reconcile admission with `code` (any refusal the runtime could meet). */
function refuseOnce(code: ErrorCode): () => void {
  const original = Authority.prototype.require;
  let used = false;
  Authority.prototype.require = function (this: Authority, c, op, target) {
    if (op === 'reconcile' && !used) {
      used = true;
      throw new AipError(code);
    }
    return original.call(this, c, op, target);
  };
  return () => {
    Authority.prototype.require = original;
  };
}

const REFUSALS: ErrorCode[] = [
  'runtime.mode_unsupported',
  'runtime.input_invalid',
  'runtime.scope_missing',
  'capability.not_found',
  'runtime.approval_expired',
  'runtime.connector_unavailable',
  'runtime.execution_contract_mismatch',
  'internal.unexpected',
  'queue.send_failed',
];

type Step = { kind: 'answer'; answer: Answer } | { kind: 'refused'; code: ErrorCode };
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constantFrom<Answer>('committed', 'not_committed', 'pending', 'error').map((answer) => ({ kind: 'answer' as const, answer })),
  fc.constantFrom(...REFUSALS).map((code) => ({ kind: 'refused' as const, code })),
);

describe('reconciliation always ends (model)', () => {
  it('from outcome_unknown, any sequence of answers and refusals reaches reconciled or requires_human within the bound', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: MAX + 2, maxLength: MAX + 2 }), async (steps) => {
        const { tx } = await uncertainCharge();
        const op = (await record(tx))?.provider_operation?.operation_id as string;
        let rounds = 0;
        let firstTerminal: number | undefined;
        for (const s of steps) {
          if (ended(await record(tx))) break;
          rounds += 1;
          let undo: () => void = () => undefined;
          if (s.kind === 'answer') {
            shop.answers.set(op, s.answer);
            if (firstTerminal === undefined && (s.answer === 'committed' || s.answer === 'not_committed')) firstTerminal = rounds;
          } else undo = refuseOnce(s.code);
          try {
            await round(tx);
          } finally {
            undo();
          }
        }
        const final = await record(tx);
        // It ended, within the bound (one more round at most: the one that finds the bound reached).
        expect(ended(final)).toBe(true);
        expect(rounds).toBeLessThanOrEqual(MAX + 1);
        expect(final?.reconcile_attempts).toBeLessThanOrEqual(MAX);
        // A terminal answer within the bound reconciles; otherwise a human decides.
        if (firstTerminal !== undefined && firstTerminal <= MAX) expect(final?.status).toBe('reconciled');
        else expect(final?.escalated_at).toBeDefined();
        // Receipts store durable statuses only (never the wire's requires_human).
        const receipts = (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items.map((r) => r.receipt);
        expect(receipts.map((r) => r.status)).not.toContain('requires_human');
        expect((await h.verifyChain(tx)).valid).toBe(true);
        // Nothing left for the sweeper to spin on.
        const again = await h.runtime.reconcile(msg(tx));
        expect(['reconciled', 'not_applicable', 'requires_human']).toContain(again.disposition);
      }),
      { numRuns: 25 },
    );
  });
});

describe('reconciliation always ends (the issue’s reproductions)', () => {
  it('a capability that declares execute without reconcile: each round is refused (mode_unsupported), counted, and escalated at the bound', async () => {
    const { tx } = await uncertainCharge('shop.voucher');
    const dispositions: string[] = [];
    for (let i = 0; i < MAX + 2 && !ended(await record(tx)); i++) dispositions.push((await round(tx)).disposition);
    expect(dispositions.at(-1)).toBe('escalated');
    expect(dispositions.length).toBeLessThanOrEqual(MAX);
    const final = await record(tx);
    expect(final).toMatchObject({
      status: 'outcome_unknown',
      reconcile_attempts: MAX,
      data: expect.objectContaining({ last_reconcile_refusal: 'runtime.mode_unsupported' }),
    });
    // The escalation receipt: durable status, with the escalated fact.
    const receipts = (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items.map((r) => r.receipt);
    const escalation = receipts.find((r) => r.event === 'transaction.escalated');
    expect(escalation).toMatchObject({ status: 'outcome_unknown', evidence: expect.objectContaining({ escalated: true }) });
    expect(receipts.filter((r) => r.event === 'transaction.reconcile_refused')).toHaveLength(MAX);
  });

  it('an uncertain compensation through an alternate capability is reconciled against that capability and its input', async () => {
    const forward = uid('fwd');
    const ftx = uid('ftx');
    await h.runtime.submit(caller(), {
      id: forward,
      capability_id: 'shop.charge',
      input: { amount: 100 },
      transaction: { mode: 'execute', transaction_id: ftx },
    });
    await h.drain();
    expect((await record(ftx))?.status).toBe('committed');
    const comp = uid('comp');
    const ctx = uid('ctx');
    // The compensate input is shop.refund's (the compensation capability), and the refund's answer is lost.
    await h.runtime.submit(caller(), {
      id: comp,
      capability_id: 'shop.charge',
      input: { charge_id: 'shop-op-x', scenario: 'uncertain' },
      transaction: { mode: 'compensate', compensation_for: forward, transaction_id: ctx },
    });
    await h.drain();
    expect((await record(ctx))?.status).toBe('outcome_unknown');
    // shop.refund's reconciliation is approval-gated in this tenant: approve it, as an approver would.
    const first = await round(ctx);
    expect(first.disposition).toBe('requires_human');
    const approvals = await h.runtime.listApprovals(operator, TENANT);
    const approval = approvals.items.find((a) => a.action_id === first.action_id);
    expect(approval?.capability_id).toBe('shop.refund');
    await h.runtime.decideApproval(caller('approver-x', { scopes: ['pay:approve'] }), TENANT, approval?.approval_id as string, { decision: 'approve' });
    await h.drain();
    expect((await record(ctx))?.status).toBe('reconciled');
    const asked = shop.reconciled.at(-1);
    expect(asked).toMatchObject({ capability_id: 'shop.refund', input: { charge_id: 'shop-op-x' } });
  });

  it('an approval-gated reconcile whose approval expires counts as an attempt, and the record ends escalated', async () => {
    const comp = uid('comp');
    const ctx = uid('ctx');
    const forward = uid('fwd');
    await h.runtime.submit(caller(), {
      id: forward,
      capability_id: 'shop.charge',
      input: { amount: 100 },
      transaction: { mode: 'execute', transaction_id: uid('ftx') },
    });
    await h.drain();
    await h.runtime.submit(caller(), {
      id: comp,
      capability_id: 'shop.charge',
      input: { charge_id: 'shop-op-y', scenario: 'uncertain' },
      transaction: { mode: 'compensate', compensation_for: forward, transaction_id: ctx },
    });
    await h.drain();
    const dispositions: string[] = [];
    for (let i = 0; i < 3 * MAX && !ended(await record(ctx)); i++) {
      const out = await round(ctx);
      dispositions.push(out.disposition);
      if (out.disposition === 'requires_human') {
        // Nobody decides: the record is not due before the approval can have expired (no spinning) ...
        const r = await record(ctx);
        const pending = await h.runtime.listApprovals(operator, TENANT);
        const approval = pending.items.find((a) => a.action_id === out.action_id);
        expect(r?.next_reconcile_at).toBe(approval?.expires_at);
        // ... and once it expired, the sweeper ends the waiting action.
        h.clock.advanceTo(Date.parse(approval?.expires_at as string) + 1);
        await h.runtime.sweep();
      }
    }
    const final = await record(ctx);
    expect(final?.escalated_at).toBeDefined();
    expect(final?.reconcile_attempts).toBe(MAX);
    expect(dispositions.filter((d) => d === 'requires_human')).toHaveLength(MAX);
  });

  it('a provider operation supplied with a reconcile request that waits for an approval is kept', async () => {
    const forward = uid('fwd');
    await h.runtime.submit(caller(), {
      id: forward,
      capability_id: 'shop.charge',
      input: { amount: 100 },
      transaction: { mode: 'execute', transaction_id: uid('ftx') },
    });
    await h.drain();
    const ctx = uid('ctx');
    // A refund whose answer is lost before any operation was checkpointed: the operator knows the operation.
    const comp = uid('comp');
    await h.runtime.submit(caller(), {
      id: comp,
      capability_id: 'shop.charge',
      input: { charge_id: 'shop-op-z', scenario: 'uncertain' },
      transaction: { mode: 'compensate', compensation_for: forward, transaction_id: ctx },
    });
    await h.drain();
    const known = (await record(ctx))?.provider_operation?.operation_id as string;
    shop.answers.set(known, 'committed');
    const ops = { ...operator, scopes: [...operator.scopes, 'pay:write'] };
    const out = await h.runtime.submit(ops, {
      action: { id: uid('rec'), capability_id: 'shop.refund', input: { charge_id: 'shop-op-z' }, transaction: { mode: 'reconcile', transaction_id: ctx } },
      transaction_id: ctx,
      requested_by: ops.principal,
      provider_operation: { provider: 'shop', operation_id: known },
      reconciliation_cursor: 'c-from-operator',
    });
    expect(out.disposition).toBe('requires_human');
    const approval = (await h.runtime.listApprovals(operator, TENANT)).items.find((a) => a.action_id === out.action_id);
    await h.runtime.decideApproval(caller('approver-y', { scopes: ['pay:approve'] }), TENANT, approval?.approval_id as string, { decision: 'approve' });
    await h.drain();
    expect(await record(ctx)).toMatchObject({ status: 'reconciled', reconciliation_cursor: 'c-from-operator' });
    expect(shop.reconciled.at(-1)).toMatchObject({ capability_id: 'shop.refund', operation_id: known });
  });

  it('the approval expiry sweep covers a tenant named in no configuration', async () => {
    // tenant-b is in no configuration: a capability-level policy gates pay-like commits; here, shop.refund's
    // reconcile policy is tenant-a's only, so use a global policy through a second harness.
    const g = await createHarness({
      connectors: [shopConnector(new Shop())],
      prefix: 'rt-bound-g',
      config: { approval_policies: [{ policy_id: 'every-tenant', capabilities: ['shop.charge'], modes: ['execute'], approver_scopes: ['pay:approve'] }] },
    });
    try {
      const other = caller('agent-9', { tenants: ['tenant-z'] });
      const id = uid('a');
      const out = await g.runtime.submit(
        other,
        { id, capability_id: 'shop.charge', input: { amount: 1 }, transaction: { mode: 'execute' } },
        { tenant_id: 'tenant-z' },
      );
      expect(out.disposition).toBe('requires_human');
      g.clock.advance(25 * 3_600_000);
      await g.runtime.sweep();
      const action = await g.runtime.getAction(other, 'tenant-z', id);
      expect(action.action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.approval_expired' } });
    } finally {
      await g.destroy();
    }
  });
});
