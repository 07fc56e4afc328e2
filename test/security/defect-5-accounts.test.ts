/**
 * Regression (defect 5): the credential account must come from the
 * verified token, never from the request body.
 *
 * `action.identity.external_account_id` selects the credential row (tenant,
 * account) → secret the connector's attempt resolves. When it flowed
 * unchecked from the body, a caller whose token held no account could name
 * another account and have the attempt run with that account's secret. The
 * rule: accounts come only from the token's accounts claim; a body naming an
 * account the token does not hold is refused with `runtime.account_forbidden`
 * (403) before anything is written or any provider is called.
 *
 * Over real HTTP against the local stack (real authorizer, handlers, Runtime,
 * DynamoDB Local, fauxqs, payments simulator). The stack has two payments
 * credential rows for tenant `demo`: the tenant-wide one (the simulator's key
 * 0) and one for account `acct_other` (key 1); the simulator's `response`
 * events name the key a request used (`api_key_index`), so the test sees
 * WHICH secret an attempt used.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LocalStack } from '../../dev/local/start.js';
import type { SimEvent } from '../../dev/payments-simulator/server.js';
import { ProblemSchema } from '../../packages/connector-sdk/src/protocol/problem.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { reconcileActionId } from '../../lib/runtime/reconciliation.js';
import { dynamoClient, reliabilityStack, tableFingerprint } from '../reliability/support.js';
import { HANG_MS } from '../support/wait.js';

const TENANT = 'demo';
const OTHER = 'acct_other';
const RW = ['aip:actions:read', 'aip:actions:write'];
const WAIT = 20;
/** Simulator key indexes: the tenant-wide row's key, and acct_other's. */
const TENANT_KEY = 0;
const OTHER_KEY = 1;

const clock = new SteppedClock();
let stack: LocalStack;
let table: string;
let ddb: DynamoDBClient;
const events: SimEvent[] = [];
const tokens: Record<'none' | 'other' | 'a' | 'approver' | 'operator', string> = { none: '', other: '', a: '', approver: '', operator: '' };

beforeAll(async () => {
  ({ stack, table } = await reliabilityStack('acct-d5', {
    tenants: [TENANT],
    clock,
    paymentsApiKey: `sk_tenant_${randomUUID()}`,
    paymentsAccountKeys: [{ tenant_id: TENANT, external_account_id: OTHER, apiKey: `sk_other_${randomUUID()}` }],
  }));
  ddb = dynamoClient();
  stack.simulator.onEvent((e) => events.push(e));
  tokens.none = await stack.mintToken({ sub: 'mallory', tenants: [TENANT], scopes: RW, ttl: '2h' });
  tokens.other = await stack.mintToken({ sub: 'olivia', tenants: [TENANT], accounts: [OTHER], scopes: RW, ttl: '2h' });
  tokens.a = await stack.mintToken({ sub: 'alice', tenants: [TENANT], accounts: ['acct_a'], scopes: RW, ttl: '2h' });
  tokens.approver = await stack.mintApproverToken({ ttl: '2h' });
  tokens.operator = await stack.mintToken({ sub: 'ops', tenants: [TENANT], scopes: [...RW, 'aip:operator'], ttl: '2h' });
});

afterAll(async () => {
  ddb?.destroy();
  await stack?.stop();
});

const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;

interface Answer {
  status: number;
  contentType: string;
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
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const statusOf = (a: Answer) => (a.body.action_result as { status?: string } | undefined)?.status;

async function finished(token: string, id: string): Promise<Answer> {
  for (;;) {
    const a = await call(token, 'GET', `/v1/actions/${encodeURIComponent(id)}?wait=${WAIT}`);
    if (a.status !== 200 || !['accepted', 'running', 'queued', 'in_progress'].includes(statusOf(a) ?? '')) return a;
  }
}

function charge(id: string, transaction: Record<string, unknown>, account: string | undefined, amount = 1_000) {
  return {
    id,
    capability_id: 'payments.charge',
    input: { amount, currency: 'eur', customer: 'cus_d5' },
    idempotency_key: uid('k'),
    identity: { tenant_id: TENANT, ...(account !== undefined ? { external_account_id: account } : {}) },
    transaction,
  };
}

/** Provider requests (authenticated or not) answered since event index `from`. */
const providerCalls = (from: number) =>
  events.slice(from).filter((e): e is Extract<SimEvent, { type: 'response' }> => e.type === 'response' && e.path.startsWith('/v1/'));

/** A 403 `runtime.account_forbidden` problem that wrote nothing and called no provider. */
async function refusedWritingNothing(token: string, body: unknown): Promise<void> {
  const before = await tableFingerprint(ddb, table);
  const ledger = stack.simulator.ledger().length;
  const from = events.length;
  const a = await call(token, 'POST', '/v1/actions', body);
  expect({ status: a.status, code: a.body.code }, JSON.stringify(a.body)).toEqual({ status: 403, code: 'runtime.account_forbidden' });
  expect(a.contentType).toMatch(/^application\/problem\+json/);
  expect(ProblemSchema.safeParse(a.body).success, JSON.stringify(a.body)).toBe(true);
  // The refusal names the field, never the account.
  expect(JSON.stringify(a.body)).not.toContain(OTHER);
  const after = await tableFingerprint(ddb, table);
  expect(after).toEqual(before);
  expect(stack.simulator.ledger().length).toBe(ledger);
  await stack.simulator.idle();
  expect(providerCalls(from)).toEqual([]);
}

/** Submits, waits for the worker's batch and the settled result. */
async function run(token: string, body: { id: string }): Promise<Answer> {
  const worked = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === body.id);
  const sub = await call(token, 'POST', '/v1/actions', body);
  expect(sub.status, JSON.stringify(sub.body)).toBeLessThan(300);
  const done = await finished(token, body.id);
  await worked;
  return done;
}

describe('defect 5: the credential account comes from the token', () => {
  it('a token holding no account naming acct_other is refused with 403, writing nothing and calling no provider', async () => {
    await refusedWritingNothing(tokens.none, charge(uid('none'), { mode: 'execute' }, OTHER));
  });

  it('a token holding acct_a naming acct_other is refused with 403, writing nothing', async () => {
    await refusedWritingNothing(tokens.a, charge(uid('acct-a'), { mode: 'execute' }, OTHER));
    // Also for a plan (a preview writes records and may validate downstream).
    await refusedWritingNothing(tokens.a, charge(uid('plan'), { mode: 'plan' }, OTHER));
  });

  it('a token holding acct_other is admitted and its attempt uses acct_other’s credential', async () => {
    const from = events.length;
    const done = await run(tokens.other, charge(uid('other'), { mode: 'execute' }, OTHER));
    expect(statusOf(done), JSON.stringify(done.body)).toBe('completed');
    const charges = providerCalls(from).filter((e) => e.method === 'POST' && e.path === '/v1/charges');
    expect(charges.length).toBeGreaterThanOrEqual(1);
    expect(charges.map((e) => e.api_key_index)).toEqual(charges.map(() => OTHER_KEY));
  });

  it('a token holding an account, naming none, uses the tenant-wide credential', async () => {
    const from = events.length;
    const done = await run(tokens.a, charge(uid('tenant'), { mode: 'execute' }, undefined));
    expect(statusOf(done), JSON.stringify(done.body)).toBe('completed');
    const charges = providerCalls(from).filter((e) => e.method === 'POST' && e.path === '/v1/charges');
    expect(charges.length).toBeGreaterThanOrEqual(1);
    expect(charges.map((e) => e.api_key_index)).toEqual(charges.map(() => TENANT_KEY));
  });

  it('an approved commit keeps its account: the resumed attempt uses acct_other’s credential', async () => {
    const planId = uid('plan');
    const plan = await call(tokens.other, 'POST', '/v1/actions', charge(planId, { mode: 'plan' }, OTHER, 2_000));
    expect(plan.status, JSON.stringify(plan.body)).toBeLessThan(300);
    const plan_id = (plan.body.action_result as { output: { plan_id: string } }).output.plan_id;

    const commitId = uid('commit');
    const commit = await call(tokens.other, 'POST', '/v1/actions', charge(commitId, { mode: 'commit', plan_id }, OTHER, 2_000));
    expect(commit.status, JSON.stringify(commit.body)).toBeLessThan(300);
    expect(statusOf(commit)).toBe('requires_human');
    const approvalId = (commit.body.action_result as { metadata: { approval_id: string } }).metadata.approval_id;

    const from = events.length;
    const worked = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === commitId);
    // The approver holds no account: approving resumes the admitted action, whose account was checked at admission.
    const decision = await call(tokens.approver, 'POST', `/v1/approvals/${encodeURIComponent(approvalId)}/decision`, { decision: 'approve' });
    expect(decision.status, JSON.stringify(decision.body)).toBeLessThan(300);
    const done = await finished(tokens.other, commitId);
    await worked;
    expect(statusOf(done), JSON.stringify(done.body)).toBe('completed');
    const charges = providerCalls(from).filter((e) => e.method === 'POST' && e.path === '/v1/charges');
    expect(charges.length).toBeGreaterThanOrEqual(1);
    expect(charges.map((e) => e.api_key_index)).toEqual(charges.map(() => OTHER_KEY));
  });

  it('the runtime’s reconcile of an acct_other transaction acts for acct_other (and only reads with its credential)', async () => {
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
    const id = uid('unknown');
    const done = await run(tokens.other, charge(id, { mode: 'execute' }, OTHER, 3_000));
    const transaction = done.body.transaction as { status: string; transaction_id: string };
    expect(transaction.status, JSON.stringify(done.body)).toBe('outcome_unknown');
    const schedule = stack.scheduler
      .list()
      .find((s) => (JSON.parse(s.target.Input ?? '{}') as { transaction_id?: string }).transaction_id === transaction.transaction_id);
    expect(schedule).toBeDefined();
    const at = schedule?.at as Date;
    clock.advanceTo(at);
    const from = events.length;
    const reconciled = stack.handled('reconcile', (m) => m.kind === 'reconcile' && m.transaction_id === transaction.transaction_id);
    await stack.scheduler.fireDue(at);
    await reconciled;
    // The reconcile action (the runtime's own, admitted through the same account check) completed.
    const rcn = await finished(tokens.operator, reconcileActionId(TENANT, transaction.transaction_id, 1));
    expect(statusOf(rcn), JSON.stringify(rcn.body)).toBe('completed');
    const after = await call(tokens.other, 'GET', `/v1/transactions?transaction_id=${encodeURIComponent(transaction.transaction_id)}`);
    expect((after.body as { status?: string }).status, JSON.stringify(after.body)).toBe('reconciled');
    const lookups = providerCalls(from);
    expect(lookups.length).toBeGreaterThanOrEqual(1);
    expect(lookups.every((e) => e.method === 'GET')).toBe(true);
    expect(lookups.map((e) => e.api_key_index)).toEqual(lookups.map(() => OTHER_KEY));
  });
});
