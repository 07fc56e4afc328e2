/**
 * Regression test of defect 7 ("approval policy applies only to
 * tenants named in the configuration"), over real HTTP against the local
 * stack (real authorizer, handlers, Runtime, DynamoDB Local, fauxqs,
 * payments simulator).
 *
 * The deployment policy below (infra/config.ts shape, no tenant selector)
 * gates `payments.charge` execute and must hold for:
 * - a tenant named nowhere in the configuration (before the fix: it ran
 *   without any approval);
 * - its `expiresAfterSeconds` (before the fix: the runtime's 24 h default);
 * - its `minApprovals` (before the fix: accepted and ignored), with the same
 *   approver refused a second time (typed 409);
 * - its approver scopes read as "any of" (before the fix: all of them).
 *
 * The Runtime's clock is frozen for this file (waits use the wall clock), so
 * an approval's `created_at` and `expires_at` come from the same instant.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '../../dev/local/start.js';
import type { ApprovalPolicy } from '../../lib/config/deployment.js';
import { ProblemSchema } from '../../packages/connector-sdk/src/protocol/problem.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import { reliabilityStack } from '../reliability/support.js';
import { HANG_MS } from '../support/wait.js';

const DEMO = 'demo';
/** Named nowhere in the deployment: no credentials, no runtime settings. */
const OTHER = 'other';
const RW = ['aip:actions:read', 'aip:actions:write'];
const WAIT = 20;

/** A Runtime clock that stands still. */
class FrozenClock implements Clock {
  readonly #at = new Date(Math.floor(Date.now() / 1000) * 1000);
  now(): Date {
    return new Date(this.#at.getTime());
  }
}

const POLICY: ApprovalPolicy = {
  id: 'charge-execute-two-person',
  description: 'Executing a charge needs two distinct approvers, within an hour.',
  connector: 'payments',
  capabilities: ['payments.charge'],
  modes: ['execute'],
  approverScopes: ['aip:approve', 'payments:approve'],
  minApprovals: 2,
  expiresAfterSeconds: 3600,
};

let stack: LocalStack;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  ({ stack } = await reliabilityStack('defect7', { tenants: [DEMO], approvalPolicies: [POLICY], clock: new FrozenClock(), runtimeSettings: {} }));
  const mint = (sub: string, tenants: string[], scopes: string[]) => stack.mintToken({ sub, tenants, scopes, ttl: '2h' });
  Object.assign(tokens, {
    alice: await mint('alice', [DEMO], RW),
    olga: await mint('olga', [OTHER], RW),
    // Each approver holds only ONE of the policy's two approver scopes.
    approverA: await mint('approver-a', [DEMO], ['aip:approve']),
    approverB: await mint('approver-b', [DEMO], ['payments:approve']),
  });
});

afterAll(async () => {
  await stack?.stop();
});

const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(token: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(HANG_MS),
  });
  const text = await res.text();
  return { status: res.status, body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function charge(id: string) {
  return { id, capability_id: 'payments.charge', input: { amount: 1_500, currency: 'eur', customer: 'cus_defect7' }, transaction: { mode: 'execute' } };
}

const resultOf = (a: Answer) => a.body.action_result as { status: string; metadata?: { approval_id?: string } } | undefined;

async function finished(token: string, id: string): Promise<Answer> {
  for (;;) {
    const a = await call(token, 'GET', `/v1/actions/${encodeURIComponent(id)}?wait=${WAIT}`);
    const status = resultOf(a)?.status;
    if (a.status !== 200 || !['accepted', 'running', 'queued', 'in_progress'].includes(status ?? '')) return a;
  }
}

/** Submits an execute of payments.charge and expects it to wait for an approval. */
async function pendingCharge(token: string): Promise<{ id: string; approval_id: string }> {
  const id = uid('charge');
  const sub = await call(token, 'POST', '/v1/actions', charge(id));
  expect({ status: sub.status, action_status: resultOf(sub)?.status }).toEqual({ status: 202, action_status: 'requires_human' });
  const approval_id = resultOf(sub)?.metadata?.approval_id;
  expect(typeof approval_id).toBe('string');
  return { id, approval_id: approval_id as string };
}

describe('defect 7: a deployment approval policy applies to every tenant, with its own terms', () => {
  it('a tenant named nowhere in the configuration is gated too (202 requires_human, nothing charged)', async () => {
    const ledger = stack.simulator.ledger().length;
    await pendingCharge(tokens.olga as string);
    expect(stack.simulator.ledger().length).toBe(ledger);
  });

  it("the pending approval expires expiresAfterSeconds (3600 s) after its creation, not after the runtime's default", async () => {
    const { approval_id } = await pendingCharge(tokens.alice as string);
    const listed = await call(tokens.approverA as string, 'GET', '/v1/approvals?limit=100');
    expect(listed.status).toBe(200);
    const approval = (listed.body.items as Array<Record<string, unknown>>).find((a) => a.approval_id === approval_id);
    expect(approval).toMatchObject({ status: 'pending', policy: { policy_id: POLICY.id } });
    const { created_at, expires_at } = approval as { created_at: string; expires_at: string };
    expect((Date.parse(expires_at) - Date.parse(created_at)) / 1000).toBe(3600);
  });

  it('minApprovals 2: one approval keeps the action waiting, the same approver again is a typed 409, a second distinct approver runs it; one of the listed scopes suffices', async () => {
    const { id, approval_id } = await pendingCharge(tokens.alice as string);
    const decide = (token: string) => call(token, 'POST', `/v1/approvals/${approval_id}/decision`, { decision: 'approve', reason: 'defect 7' });

    // The first approver holds only `aip:approve` (one of the two listed scopes).
    const first = await decide(tokens.approverA as string);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ approval: { approval_id, status: 'pending' }, action_result: { status: 'requires_human' } });
    expect((await call(tokens.alice as string, 'GET', `/v1/actions/${id}`)).body).toMatchObject({ action_result: { status: 'requires_human' } });

    // The same approver again: refused, typed, and the approval is still pending.
    const again = await decide(tokens.approverA as string);
    expect(ProblemSchema.safeParse(again.body).success, JSON.stringify(again.body)).toBe(true);
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 409, code: 'approval.already_approved_by_caller' });

    // A second, distinct approver holding only `payments:approve`: the action runs.
    const worked = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
    const second = await decide(tokens.approverB as string);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body).toMatchObject({ approval: { approval_id, status: 'approved' } });
    const decisions = (second.body.approval as { decisions?: Array<{ decided_by: { id: string }; decision: string }> }).decisions ?? [];
    expect(decisions.map((d) => [d.decided_by.id, d.decision])).toEqual([
      ['approver-a', 'approved'],
      ['approver-b', 'approved'],
    ]);
    const done = await finished(tokens.alice as string, id);
    await worked;
    expect(resultOf(done)?.status).toBe('completed');
  });
});
