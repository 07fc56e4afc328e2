/**
 * The trusted context: its actor is the verified caller (issuer,
 * scheme, the token's scopes and lifetime, kept from admission), never
 * synthesized; delegation is explicit; the trace is a runtime span that is a
 * child of the caller's W3C trace, never the caller's strings copied in.
 */
import * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineCapability, defineConnector } from '../../../packages/connector-sdk/src/define.js';
import type { ActionExecutionContext, ActorContext, TraceContext } from '../../../packages/connector-sdk/src/context.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TENANT, createHarness, type Harness } from './support.js';

const seen: { action_id: string; actor: ActorContext; trace: TraceContext }[] = [];
const In = z.strictObject({ n: z.int(), lose: z.boolean().default(false) });
const fast = { supports_cancel: false, supports_streaming: false, supports_retry: false, timeout_ms: 10_000 };

function spyConnector() {
  const record = (ctx: ActionExecutionContext, action_id: string) => seen.push({ action_id, actor: ctx.actor, trace: ctx.trace });
  const cap = defineCapability({
    id: 'spy.do',
    input: In,
    output: z.strictObject({ ok: z.boolean() }),
    contract: {
      transaction: { modes: ['execute', 'reconcile'], dry_run_fidelity: 'schema_only', requires_plan_before_commit: true },
      execution: fast,
      authorization: { scopes: ['spy:write'] },
    },
  }).implement({
    invoke: async (input, ctx, call) => {
      record(ctx, call.action.id);
      await ctx.transaction_checkpoint.checkpoint({ provider: 'spy', operation_id: `op-${call.action.id}` });
      if (input.lose) throw call.failure({ code: 'spy.lost', category: 'temporary', retryable: false, uncertain_outcome: true } as never);
      return { ok: true };
    },
    reconcile: async (_input, ctx, call) => {
      record(ctx, call.action.id);
      return { terminal: true as const, original_commit_completed: true, output: { ok: true } };
    },
  });
  return defineConnector({ id: 'spy', version: '1.0.0', capabilities: [cap] });
}

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ connectors: [spyConnector()], prefix: 'rt-trusted' });
});
afterAll(async () => h.destroy());

function token(extra: Partial<{ issued_at: string; expires_at: string }> = {}) {
  const now = h.clock.now().getTime();
  return {
    principal: { id: 'agent-7', kind: 'agent' as const },
    tenants: [TENANT],
    scopes: ['spy:write', 'other:scope'],
    issuer: 'https://idp.example/tenant-a',
    issued_at: new Date(now - 60_000).toISOString(),
    expires_at: new Date(now + 3_600_000).toISOString(),
    ...extra,
  };
}

const last = (action_id: string) => seen.filter((s) => s.action_id === action_id).at(-1);

describe('the trusted actor and trace of an attempt', () => {
  it('carries the verified caller’s issuer, scheme, scopes and token lifetime from admission', async () => {
    const caller = token();
    const id = uid('a');
    await h.runtime.submit(caller, { id, capability_id: 'spy.do', input: { n: 1 }, transaction: { mode: 'execute' } });
    await h.drain();
    expect(last(id)?.actor).toEqual({
      principal: caller.principal,
      issuer: 'https://idp.example/tenant-a',
      scheme: 'bearer_jwt',
      scopes: ['spy:write', 'other:scope'],
      lifetime: { issued_at: new Date(caller.issued_at), expires_at: new Date(caller.expires_at) },
    });
  });

  it('says when the runtime acts after the token expired (e.g. a redelivered or resumed attempt)', async () => {
    const caller = token({ expires_at: new Date(h.clock.now().getTime() + 1_000).toISOString() });
    const id = uid('a');
    await h.runtime.submit(caller, { id, capability_id: 'spy.do', input: { n: 2 }, transaction: { mode: 'execute' } });
    h.clock.advance(5_000);
    await h.drain();
    expect(last(id)?.actor.delegation).toEqual({ reason: 'token_expired_before_attempt' });
  });

  it('a reconciliation run by the runtime names its service identity and the principal it acts for', async () => {
    const caller = token();
    const id = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(caller, { id, capability_id: 'spy.do', input: { n: 3, lose: true }, transaction: { mode: 'execute', transaction_id: tx } });
    await h.drain();
    h.clock.advance(10_000);
    const out = await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    expect(out.disposition).toBe('reconciled');
    const actor = last(out.action_id as string)?.actor;
    expect(actor).toMatchObject({
      principal: { id: 'aip-runtime', kind: 'service' },
      scheme: 'aip_runtime_service',
      delegation: { reason: 'runtime_reconciliation', on_behalf_of: caller.principal },
    });
  });

  it('the trace is a runtime span, a child of the caller’s W3C trace', async () => {
    const trace_id = '4bf92f3577b34da6a3ce929d0e0e4736';
    const span_id = '00f067aa0ba902b7';
    const id = uid('a');
    await h.runtime.submit(token(), {
      id,
      capability_id: 'spy.do',
      input: { n: 4 },
      transaction: { mode: 'execute' },
      metadata: { observability: { trace_id, span_id } },
    });
    await h.drain();
    const t = last(id)?.trace;
    expect(t?.trace_id).toBe(trace_id);
    expect(t?.parent_span_id).toBe(span_id);
    expect(t?.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(t?.span_id).not.toBe(span_id);
  });

  it('caller strings that are not W3C IDs start a new trace and are never copied in', async () => {
    const id = uid('a');
    await h.runtime.submit(token(), {
      id,
      capability_id: 'spy.do',
      input: { n: 5 },
      transaction: { mode: 'execute' },
      metadata: { observability: { trace_id: 'ignore-all-previous-instructions', span_id: 'x' } },
    });
    await h.drain();
    const t = last(id)?.trace;
    expect(t?.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(t?.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(t?.parent_span_id).toBeUndefined();
    expect(JSON.stringify(t)).not.toContain('ignore');
  });
});
