/**
 * The data contract applied to what the runtime keeps.
 *
 * - `redact_pointers`: the connector sees the raw values, but no stored copy
 *   does once it is no longer needed: outputs are redacted when written, the
 *   input once the outcome is definitive (kept while a reconciliation may
 *   still need it), plans' input snapshots at once. Proved by scanning every
 *   item of the table (and the runtime's log lines) for the marker values.
 * - `redaction_required`: the raw input is dropped on every path: a plan's
 *   action, a rejected action, a cancelled one, the runtime's reconcile
 *   action, and the original once its uncertain outcome was reconciled.
 */
import * as z from 'zod';
import { scanReadable } from '../../support/packed-items.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import type { ActionExecutionContext } from '../../../packages/connector-sdk/src/context.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

const CARD = 'MARKER-CARD-4111111111111111';
const NOTE = 'MARKER-NOTE-private';
const TOKEN = 'MARKER-TOKEN-tok_secret';
const SECRET_INPUT = 'MARKER-REQUIRED-input';

const seen: unknown[] = [];
const In = z.strictObject({
  amount: z.int(),
  card: z.strictObject({ number: z.string(), exp: z.string() }),
  note: z.string(),
  lose: z.boolean().default(false),
});
const Out = z.strictObject({ card_token: z.string(), last4: z.string() });
const Plain = z.strictObject({ value: z.string(), lose: z.boolean().default(false) });
const fast = { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 10_000 };
const modes = ['dry_run', 'plan', 'execute', 'commit', 'reconcile'] as const;

function vault(opts: { pending?: boolean } = {}) {
  async function effect<T>(input: { lose: boolean }, raw: unknown, ctx: ActionExecutionContext, failure: (i: never) => Error, out: T): Promise<T> {
    seen.push(raw);
    await ctx.transaction_checkpoint.checkpoint({ provider: 'vault', operation_id: `op-${seen.length}` });
    if (input.lose) throw failure({ code: 'vault.lost', category: 'temporary', retryable: false, uncertain_outcome: true } as never);
    return out;
  }
  const pay = defineCapability({
    id: 'vault.pay',
    input: In,
    output: Out,
    contract: {
      transaction: { modes: [...modes], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      data: { redaction_required: false, redact_pointers: ['/card/number', '/note', '/card_token'] },
      execution: fast,
    },
  }).implement({
    invoke: (input, ctx, call) => effect(input, input, ctx, call.failure as never, { card_token: TOKEN, last4: '1111' }),
    commit: (input, ctx, call) => effect(input, input, ctx, call.failure as never, { card_token: TOKEN, last4: '1111' }),
    reconcile: async () =>
      opts.pending === true
        ? { terminal: false as const, evidence: { state: 'pending' } }
        : { terminal: true as const, original_commit_completed: true, output: { card_token: TOKEN, last4: '1111' } },
  });
  const hidden = defineCapability({
    id: 'vault.hidden',
    input: Plain,
    output: z.strictObject({ ok: z.boolean() }),
    contract: {
      transaction: { modes: [...modes], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      data: { redaction_required: true },
      execution: fast,
    },
  }).implement({
    invoke: (input, ctx, call) => effect(input, input, ctx, call.failure as never, { ok: true }),
    commit: (input, ctx, call) => effect(input, input, ctx, call.failure as never, { ok: true }),
    reconcile: async () => ({ terminal: true as const, original_commit_completed: true, output: { ok: true } }),
  });
  return defineConnector({ id: 'vault', version: '1.0.0', capabilities: [pay, hidden] });
}

let h: Harness;
const logs: string[] = [];
beforeAll(async () => {
  h = await createHarness({ connectors: [vault()], prefix: 'rt-redact' });
});
afterAll(async () => h.destroy());

/** Every item of the table, as text (packed attributes decoded: test/support/packed-items.ts). */
async function tableText(): Promise<string> {
  return JSON.stringify(await scanReadable(h.table.client, h.table.tableName));
}

const payInput = (lose = false) => ({ amount: 10, card: { number: CARD, exp: '12/30' }, note: NOTE, lose });
const action = (id: string, capability_id: string, input: object, transaction: object) => ({ id, capability_id, input, transaction });

describe('redact_pointers', () => {
  it('the connector gets the raw values; no stored copy keeps them once the outcome is definitive', async () => {
    const idem = uid('k');
    await h.runtime.submit(caller(), { ...action(uid('pay'), 'vault.pay', payInput(), { mode: 'execute' }), idempotency_key: idem });
    await h.drain();
    expect(JSON.stringify(seen.at(-1))).toContain(CARD);
    // A plan keeps a snapshot of the input: redacted at the pointers, hash of the raw input.
    const plan = await h.runtime.submit(caller(), action(uid('plan'), 'vault.pay', payInput(), { mode: 'plan' }));
    expect(JSON.stringify(plan.action_result)).not.toContain(CARD);
    const text = await tableText();
    for (const marker of [CARD, NOTE, TOKEN]) expect(text, marker).not.toContain(marker);
    // The replay of the key answers the stored (redacted) result.
    const replay = await h.runtime.submit(caller(), { ...action(uid('pay'), 'vault.pay', payInput(), { mode: 'execute' }), idempotency_key: idem });
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result.output).toEqual({ card_token: '[REDACTED]', last4: '1111' });
  });

  it('while an outcome is unknown the original keeps its input (reconciliation needs it); once reconciled it is redacted', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), action(uid('pay'), 'vault.pay', payInput(true), { mode: 'execute', transaction_id: tx }));
    await h.drain();
    expect((await h.table.store.get({ tenant_id: TENANT, transaction_id: tx }))?.status).toBe('outcome_unknown');
    expect(await tableText()).toContain(CARD);
    h.clock.advance(10_000);
    const out = await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    expect(out.disposition).toBe('reconciled');
    const text = await tableText();
    for (const marker of [CARD, NOTE, TOKEN]) expect(text, marker).not.toContain(marker);
  });
});

describe('redaction_required', () => {
  it('drops the raw input on every path: plans, rejections, cancellations, reconcile actions and the reconciled original', async () => {
    // a plan's action
    await h.runtime.submit(caller(), action(uid('plan'), 'vault.hidden', { value: SECRET_INPUT }, { mode: 'plan' }));
    // a rejected action: a commit whose plan does not exist is refused after it was recorded
    await h.runtime
      .submit(caller(), action(uid('rej'), 'vault.hidden', { value: SECRET_INPUT }, { mode: 'commit', plan_id: `plan:${uid('none')}` }))
      .catch(() => undefined);
    // a cancelled action (accepted, no attempt yet)
    const cancelled = uid('can');
    await h.runtime.submit(caller(), action(cancelled, 'vault.hidden', { value: SECRET_INPUT }, { mode: 'execute' }));
    await h.runtime.cancel(caller(), TENANT, cancelled);
    await h.drain();
    // an uncertain one, then reconciled (the reconcile action carries a copy of the input)
    const tx = uid('tx');
    await h.runtime.submit(caller(), action(uid('lost'), 'vault.hidden', { value: SECRET_INPUT, lose: true }, { mode: 'execute', transaction_id: tx }));
    await h.drain();
    // While the outcome is unknown the original keeps its input: the reconcile action needs it.
    expect(await tableText()).toContain(SECRET_INPUT);
    h.clock.advance(10_000);
    const out = await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    expect(out.disposition).toBe('reconciled');
    expect(await tableText()).not.toContain(SECRET_INPUT);
  });
});

describe('logs', () => {
  it('the runtime logs neither inputs nor outputs', async () => {
    // A stack whose reconciliations never conclude: the runtime logs the refusals and the escalation.
    const capture = (level: string) => (message: string, fields?: Record<string, unknown>) =>
      void logs.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
    const g = await createHarness({
      connectors: [vault({ pending: true })],
      prefix: 'rt-redact-logs',
      config: { reconcile: { max_attempts: 1 } },
      logger: { info: capture('info'), warn: capture('warn'), error: capture('error') },
    });
    try {
      const tx = uid('tx');
      await g.runtime.submit(caller(), action(uid('pay'), 'vault.pay', payInput(true), { mode: 'execute', transaction_id: tx }));
      await g.drain();
      for (let i = 0; i < 3; i++) {
        g.clock.advance(3_600_000);
        await g.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
      }
      expect((await g.table.store.get({ tenant_id: TENANT, transaction_id: tx }))?.escalated_at).toBeDefined();
    } finally {
      await g.destroy();
    }
    expect(logs.some((l) => l.includes('escalated'))).toBe(true);
    for (const line of logs) for (const marker of [CARD, NOTE, TOKEN, SECRET_INPUT]) expect(line).not.toContain(marker);
  });
});
