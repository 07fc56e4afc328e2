/**
 * The MCP endpoint's pure parts (functions/mcp): tools from capability
 * summaries, the derived action of a tool call, its wrapper arguments, and
 * the status mapping of an action's state to a task and a tool result.
 */
import { describe, expect, it } from 'vitest';
import { deriveAction } from '../../../functions/mcp/idempotency.js';
import { taskViewOf, toolErrorOf, toolResultOf } from '../../../functions/mcp/results.js';
import { parseToolArguments } from '../../../functions/mcp/server.js';
import { toolsFor, type CapabilityTool } from '../../../functions/mcp/tools.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionState } from '../../../functions/shared/runtime-api.js';
import { alice, CAPS, WRITER } from './mcp-support.js';

function tool(name: string): CapabilityTool {
  const t = toolsFor(WRITER, CAPS).find((x) => x.name === name);
  if (t === undefined || t.kind !== 'capability') throw new Error(`no capability tool ${name}`);
  return t;
}

describe('tools from capabilities', () => {
  it('one tool per mode a caller may ask for (never reconcile), a plain tool without a transaction contract, and the reads', () => {
    expect(toolsFor(WRITER, CAPS).map((t) => t.name)).toEqual([
      'payments.charge.dry_run',
      'payments.charge.plan',
      'payments.charge.execute',
      'payments.charge.commit',
      'payments.charge.compensate',
      'payments.refund.execute',
      'notes.add',
      'aip.get_action',
      'aip.get_transaction',
      'aip.list_pending_approvals',
    ]);
  });

  it('needs the submit scope for capability tools and the read scopes for the reads', () => {
    expect(toolsFor(['aip:actions:read'], CAPS).map((t) => t.name)).toEqual(['aip.get_action', 'aip.get_transaction', 'aip.list_pending_approvals']);
    expect(toolsFor(['aip:operator'], CAPS).map((t) => t.name)).toEqual(['aip.get_transaction', 'aip.list_pending_approvals']);
    expect(toolsFor([], CAPS).map((t) => t.name)).toEqual(['aip.list_pending_approvals']);
  });

  it('derives the annotations from the contract', () => {
    expect(tool('payments.charge.plan').tool.annotations).toMatchObject({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(tool('payments.charge.execute').tool.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, openWorldHint: true });
    expect(tool('payments.charge.compensate').tool.annotations).toMatchObject({ destructiveHint: true });
    expect(tool('payments.refund.execute').tool.annotations).toMatchObject({ destructiveHint: true });
    expect(tool('notes.add').tool.annotations).toMatchObject({ destructiveHint: true });
  });

  it('wraps the capability input with what the mode needs; a compensation takes the compensation capability’s input', () => {
    expect(tool('payments.charge.commit').tool.inputSchema).toMatchObject({ required: ['plan_id', 'input'], additionalProperties: false });
    expect(tool('payments.charge.compensate').tool.inputSchema.properties?.input).toEqual(CAPS.items[1]?.input_schema);
    expect(tool('payments.charge.execute').tool.inputSchema.properties?.input).toEqual(CAPS.items[0]?.input_schema);
    expect(tool('payments.charge.commit').tool._meta).toMatchObject({ 'aip/approval_required': true });
    expect(tool('payments.charge.execute').tool._meta).toMatchObject({ 'aip/approval_required': false });
  });
});

describe('the derived action', () => {
  const args = { input: { amount: 100 } };

  it('is the same for the same caller, tenant, tool and arguments, whatever the key order', () => {
    const a = deriveAction(alice, 'demo', tool('payments.charge.execute'), { input: { amount: 100, currency: 'eur' } });
    const b = deriveAction(alice, 'demo', tool('payments.charge.execute'), { input: { currency: 'eur', amount: 100 } });
    expect(a).toEqual(b);
    expect(a).toMatchObject({ capability_id: 'payments.charge', transaction: { mode: 'execute' } });
    expect(a.id).toMatch(/^mcp-[0-9a-f]{32}$/);
    expect(a.idempotency_key).toMatch(/^mcp:[0-9a-f]{64}$/);
  });

  it('differs by principal, tenant, tool, input and client key', () => {
    const base = deriveAction(alice, 'demo', tool('payments.charge.execute'), args).id;
    const others = [
      deriveAction({ ...alice, principal: { ...alice.principal, id: 'bob' } }, 'demo', tool('payments.charge.execute'), args).id,
      deriveAction(alice, 'acme', tool('payments.charge.execute'), args).id,
      deriveAction(alice, 'demo', tool('payments.refund.execute'), args).id,
      deriveAction(alice, 'demo', tool('payments.charge.execute'), { input: { amount: 101 } }).id,
      deriveAction(alice, 'demo', tool('payments.charge.execute'), { ...args, idempotency_key: 'second' }).id,
    ];
    expect(new Set([base, ...others]).size).toBe(6);
  });

  it('carries the commit’s plan and the compensation target; previews carry no idempotency key', () => {
    expect(deriveAction(alice, 'demo', tool('payments.charge.commit'), { ...args, plan_id: 'plan:t1' }).transaction).toEqual({
      mode: 'commit',
      plan_id: 'plan:t1',
    });
    expect(deriveAction(alice, 'demo', tool('payments.charge.compensate'), { ...args, compensation_for: 'a1' }).transaction).toEqual({
      mode: 'compensate',
      compensation_for: 'a1',
    });
    expect(deriveAction(alice, 'demo', tool('payments.charge.plan'), args).idempotency_key).toBeUndefined();
    expect(deriveAction(alice, 'demo', tool('notes.add'), args).transaction).toBeUndefined();
  });
});

describe('tool arguments', () => {
  const invalid = (name: string, raw: unknown) => {
    try {
      parseToolArguments(tool(name), raw);
    } catch (err) {
      expect(err).toBeInstanceOf(AipError);
      return { code: (err as AipError).code, path: (err as AipError).details?.path };
    }
    throw new Error('accepted');
  };

  it('refuses anything but the wrapper, with request.invalid naming the path', () => {
    expect(invalid('payments.charge.execute', { amount: 1 })).toEqual({ code: 'request.invalid', path: '/amount' });
    expect(invalid('payments.charge.execute', {})).toEqual({ code: 'request.invalid', path: '/input' });
    expect(invalid('payments.charge.execute', [1])).toEqual({ code: 'request.invalid', path: '/' });
    expect(invalid('payments.charge.execute', { input: {}, plan_id: 'p' })).toEqual({ code: 'request.invalid', path: '/plan_id' });
    expect(invalid('payments.charge.commit', { input: {} })).toEqual({ code: 'request.invalid', path: '/plan_id' });
    expect(invalid('payments.charge.compensate', { input: {}, compensation_for: 'bad id' })).toEqual({ code: 'request.invalid', path: '/compensation_for' });
    expect(invalid('payments.charge.execute', { input: {}, idempotency_key: 'with space' })).toEqual({ code: 'request.invalid', path: '/idempotency_key' });
    expect(parseToolArguments(tool('payments.charge.commit'), { input: { a: 1 }, plan_id: 'plan:x', idempotency_key: 'k' })).toEqual({
      input: { a: 1 },
      plan_id: 'plan:x',
      idempotency_key: 'k',
    });
  });
});

describe('status mapping', () => {
  const state = (action_result: ActionState['action_result'], txn?: string): ActionState => ({
    action_result,
    ...(txn !== undefined
      ? { transaction: { transaction_id: 't1', status: txn as never, receipt_count: 2, receipt_head: 'a'.repeat(64), links: { action_id: 'a1' } } }
      : {}),
  });
  const uncertain = { code: 'payments.provider_unavailable', message: 'lost', category: 'temporary' as const, retryable: false, uncertain_outcome: true };

  it('maps every action status and an uncertain outcome through its reconciliation', () => {
    const cases: [ActionState, string][] = [
      [state({ action_id: 'a1', status: 'accepted' }), 'working'],
      [state({ action_id: 'a1', status: 'running' }), 'working'],
      [state({ action_id: 'a1', status: 'requires_human', metadata: { approval_id: 'ap1' } }), 'input_required'],
      [state({ action_id: 'a1', status: 'completed', output: {} }, 'committed'), 'completed'],
      [state({ action_id: 'a1', status: 'cancelled' }), 'cancelled'],
      [state({ action_id: 'a1', status: 'failed', error: { ...uncertain, uncertain_outcome: false } }, 'failed'), 'failed'],
      [state({ action_id: 'a1', status: 'failed', error: uncertain }, 'outcome_unknown'), 'working'],
      [state({ action_id: 'a1', status: 'failed', error: uncertain }, 'reconciling'), 'working'],
      [state({ action_id: 'a1', status: 'failed', error: uncertain }, 'requires_human'), 'input_required'],
      [state({ action_id: 'a1', status: 'failed', error: uncertain }, 'reconciled'), 'completed'],
    ];
    expect(cases.map(([s]) => taskViewOf(s).status)).toEqual(cases.map(([, t]) => t));
    expect(taskViewOf(cases[2]![0]).message).toMatch(/waiting for approval ap1/);
  });

  it('never reports a pending action as done, and reports failures as tool errors with their code', () => {
    const pending = toolResultOf(state({ action_id: 'a1', status: 'requires_human', metadata: { approval_id: 'ap1' } }), { tenant_id: 'demo' });
    expect(pending.isError).toBeUndefined();
    expect(pending.structuredContent).toMatchObject({ pending: true, task_status: 'input_required', approval_id: 'ap1', follow: { task_id: 'a1' } });
    expect((pending.content[0] as { text: string }).text).toMatch(/^PENDING, NOT COMPLETED/);

    const done = toolResultOf(state({ action_id: 'a1', status: 'completed', output: { x: 1 } }, 'committed'), { tenant_id: 'demo' });
    expect(done.structuredContent).toMatchObject({ output: { x: 1 }, transaction: { status: 'committed', receipt_head: 'a'.repeat(64) } });
    expect(done.structuredContent).not.toHaveProperty('pending');

    const failed = toolResultOf(state({ action_id: 'a1', status: 'failed', error: { ...uncertain, uncertain_outcome: false } }), { tenant_id: 'demo' });
    expect(failed).toMatchObject({ isError: true, structuredContent: { error: { code: 'payments.provider_unavailable' } } });

    const typed = toolErrorOf(new AipError('request.invalid', 'input must be an object', { details: { path: '/input' } }));
    expect(typed).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'request.invalid', category: 'validation', details: { path: '/input' } } },
    });
    // Anything that is not an AipError says nothing about its cause.
    expect(toolErrorOf(new Error('secret sk_live_123')).content[0]).not.toMatchObject({ text: expect.stringContaining('sk_live') });
  });
});
