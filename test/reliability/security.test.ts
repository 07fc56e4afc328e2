/**
 * Security at the HTTP edge, over real HTTP against the local
 * stack (real authorizer, handlers, Runtime, DynamoDB Local, fauxqs,
 * payments simulator):
 * - tokens: expired, `alg: none`, wrong issuer, audience or key, tampered;
 * - tenant isolation for reads, commits, compensations, approvals,
 *   reconciliations and stream reads (tenant B against tenant A's work);
 * - a `requested_by` that is not the principal; a tenant or principal forged
 *   in the body;
 * - self-approval where the policy forbids it;
 * - plan reuse by another principal, and after the plan expired.
 * Every rejection is a 4xx problem and leaves the table as it was.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LocalStack } from '../../dev/local/start.js';
import { generateDevKeys } from '../../dev/auth/keys.js';
import { mintToken } from '../../dev/auth/mint.js';
import { ProblemSchema } from '../../packages/connector-sdk/src/protocol/problem.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { dynamoClient, recordScenario, reliabilityStack, tableFingerprint } from './support.js';
import { HANG_MS } from '../support/wait.js';

const A = 'demo';
const B = 'acme';
const RW = ['aip:actions:read', 'aip:actions:write'];
const WAIT = 20;

const clock = new SteppedClock();
let stack: LocalStack;
let table: string;
let ddb: DynamoDBClient;
const tokens: Record<string, string> = {};
let checks = 0;
const rejected: Record<string, number> = {};

beforeAll(async () => {
  ({ stack, table } = await reliabilityStack('sec', {
    tenants: [A, B],
    approvalPolicies: [],
    clock,
    runtimeSettings: {
      tenants: {
        [A]: {
          approvals: [
            {
              policy_id: 'sec-payments',
              capabilities: ['payments.charge', 'payments.refund'],
              modes: ['commit', 'compensate'],
              approver_scopes: ['aip:approve'],
            },
          ],
        },
      },
    },
  }));
  ddb = dynamoClient();
  const mint = (sub: string, tenants: string[], scopes: string[]) => stack.mintToken({ sub, tenants, scopes, ttl: '2h' });
  Object.assign(tokens, {
    alice: await mint('alice', [A], RW),
    aliceApprover: await mint('alice', [A], [...RW, 'aip:approve']),
    carol: await mint('carol', [A], RW),
    approver: await mint('approver-a', [A], ['aip:actions:read', 'aip:approve']),
    bob: await mint('bob', [B], [...RW, 'aip:operator', 'aip:approve']),
  });
});

afterAll(async () => {
  recordScenario('security', {
    scenario: 'Security: tokens, tenant isolation, requester, approvals, plans',
    cases: checks,
    held: [
      'forged/expired tokens 401',
      'cross-tenant reads, commits, compensations, approvals, reconciliations, streams refused',
      'requested_by must be the principal',
      'forged tenant/principal in body refused',
      'no self-approval',
      'no plan reuse by another principal or after expiry',
      'nothing written by a rejection',
    ],
    counts: { checks, ...rejected },
  });
  ddb?.destroy();
  await stack?.stop();
});

const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(token: string, method: string, path: string, body?: unknown, tenant?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (tenant !== undefined) headers['x-aip-tenant'] = tenant;
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(HANG_MS),
  });
  const text = await res.text();
  return { status: res.status, body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** Asserts a 4xx problem with one of the codes, and counts it. */
async function refused(answer: Promise<Answer>, status: number | number[], code: string | string[]): Promise<Answer> {
  const a = await answer;
  checks += 1;
  const problem = ProblemSchema.safeParse(a.body);
  expect(problem.success, JSON.stringify(a.body)).toBe(true);
  expect([status].flat()).toContain(a.status);
  expect([code].flat()).toContain(a.body.code);
  rejected[a.body.code as string] = (rejected[a.body.code as string] ?? 0) + 1;
  return a;
}

/**
 * Runs rejected calls and proves they wrote nothing (table content identical
 * before and after); with `tenant`, nothing in that tenant's partitions (keys
 * `…#<tenant>#…`): the caller's own failed action records in its own tenant
 * are allowed there (a rejection after step 4 is recorded as the action's result).
 */
async function writesNothing(fn: () => Promise<void>, tenant?: string): Promise<void> {
  const of = (digest: string) => digest.split('\n').filter((l) => tenant === undefined || l.includes(`#${tenant}#`));
  const before = of((await tableFingerprint(ddb, table)).digest);
  const ledger = stack.simulator.ledger().length;
  await fn();
  const after = of((await tableFingerprint(ddb, table)).digest);
  const changed = after.filter((l) => !before.includes(l));
  expect(changed.map((l) => l.slice(0, 300))).toEqual([]);
  expect(after.length).toBe(before.length);
  expect(stack.simulator.ledger().length).toBe(ledger);
}

function charge(id: string, transaction: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { id, capability_id: 'payments.charge', input: { amount: 1_000, currency: 'eur', customer: 'cus_sec' }, transaction, ...extra };
}

async function finished(token: string, id: string): Promise<Answer> {
  for (;;) {
    const a = await call(token, 'GET', `/v1/actions/${encodeURIComponent(id)}?wait=${WAIT}`);
    const status = (a.body.action_result as { status: string } | undefined)?.status;
    if (a.status !== 200 || !['accepted', 'running', 'queued', 'in_progress'].includes(status ?? '')) return a;
  }
}

async function executed(token: string) {
  const id = uid('exec');
  // The worker writes its side records (idempotency record) after the action settles: wait for its batch.
  const worked = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
  const sub = await call(token, 'POST', '/v1/actions', charge(id, { mode: 'execute' }));
  expect(sub.status).toBeLessThan(300);
  const done = await finished(token, id);
  await worked;
  expect((done.body.action_result as { status: string }).status).toBe('completed');
  return {
    id,
    transaction_id: (done.body.transaction as { transaction_id: string }).transaction_id,
    output: (done.body.action_result as { output: { charge_id: string } }).output,
  };
}

async function planned(token: string) {
  const id = uid('plan');
  const sub = await call(token, 'POST', '/v1/actions', charge(id, { mode: 'plan' }));
  expect(sub.status).toBeLessThan(300);
  return (sub.body.action_result as { output: { plan_id: string; transaction_id: string } }).output;
}

describe('tokens', () => {
  it('rejects expired, alg none, wrong issuer, audience, key and tampered tokens with 401, writing nothing', async () => {
    const now = Math.floor(Date.now() / 1000);
    const other = await generateDevKeys();
    const good = tokens.alice as string;
    const [h, p] = good.split('.') as [string, string];
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown>;
    const forged = {
      expired: await stack.mintToken({ sub: 'alice', tenants: [A], scopes: RW, ttl: 60, issuedAt: now - 3_600 }),
      alg_none: `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`,
      alg_none_kid: `${b64({ ...header, alg: 'none' })}.${p}.`,
      alg_hs256: `${b64({ ...header, alg: 'HS256' })}.${p}.${Buffer.from('sig').toString('base64url')}`,
      wrong_issuer: await stack.mintToken({ sub: 'alice', tenants: [A], scopes: RW, issuer: 'https://evil.example/' }),
      wrong_audience: await stack.mintToken({ sub: 'alice', tenants: [A], scopes: RW, audience: 'someone-else' }),
      wrong_key_same_kid: await mintToken({ sub: 'alice', tenants: [A], scopes: RW, kid: header.kid as string }, other),
      wrong_key_own_kid: await mintToken({ sub: 'alice', tenants: [A], scopes: RW }, other),
      tampered_payload: `${h}.${b64({ ...payload, 'aip:tenants': [A, B], sub: 'root' })}.${good.split('.')[2]}`,
      garbage: 'not-a-jwt',
      empty_signature: `${h}.${p}.`,
    };
    await writesNothing(async () => {
      for (const [name, token] of Object.entries(forged)) {
        for (const [method, path, body] of [
          ['GET', '/v1/actions/anything'],
          ['POST', '/v1/actions', charge(uid('tok'), { mode: 'execute' })],
        ] as const) {
          const a = await call(token, method, path, body);
          checks += 1;
          expect({ name, status: a.status }).toEqual({ name, status: 401 });
          expect(ProblemSchema.safeParse(a.body).success).toBe(true);
        }
      }
    });
    rejected['auth.unauthenticated'] = (rejected['auth.unauthenticated'] ?? 0) + Object.keys(forged).length * 2;
  });
});

describe('tenant isolation', () => {
  it("tenant B cannot read, stream, commit, compensate, approve or reconcile tenant A's work", async () => {
    const done = await executed(tokens.alice as string);
    const plan = await planned(tokens.alice as string);
    const pendingId = uid('pending');
    const pending = await call(tokens.alice as string, 'POST', '/v1/actions', charge(pendingId, { mode: 'commit', plan_id: plan.plan_id }));
    expect(pending.status).toBe(202);
    const approvalId = (pending.body.action_result as { metadata: { approval_id: string } }).metadata.approval_id;
    const bob = tokens.bob as string;

    await writesNothing(async () => {
      // reads and streams, in B's tenant and naming A's
      await refused(call(bob, 'GET', `/v1/actions/${done.id}`), 404, 'action.not_found');
      await refused(call(bob, 'GET', `/v1/actions/${done.id}`, undefined, A), 403, 'auth.tenant_forbidden');
      await refused(call(bob, 'GET', `/v1/actions/${done.id}/stream`), 404, 'action.not_found');
      await refused(call(bob, 'GET', `/v1/actions/${done.id}/stream`, undefined, A), 403, 'auth.tenant_forbidden');
      await refused(call(bob, 'GET', `/v1/transactions?transaction_id=${done.transaction_id}`), 404, 'transaction.not_found');
      // commits of A's plan
      await refused(call(bob, 'POST', '/v1/actions', charge(uid('b'), { mode: 'commit', plan_id: plan.plan_id })), 404, 'runtime.plan_not_found');
      await refused(call(bob, 'POST', '/v1/actions', charge(uid('b'), { mode: 'commit', plan_id: plan.plan_id }), A), 403, 'auth.tenant_forbidden');
      // compensation of A's charge
      const comp = (id: string) => ({
        id,
        capability_id: 'payments.charge',
        input: { charge_id: done.output.charge_id },
        transaction: { mode: 'compensate', compensation_for: done.id },
      });
      // In B's tenant the target does not exist: the compensation input is validated as the capability's own input and refused.
      await refused(
        call(bob, 'POST', '/v1/actions', comp(uid('b-comp'))),
        [400, 404, 409, 422],
        ['runtime.compensation_target_not_found', 'action.not_found', 'transaction.not_found', 'runtime.input_invalid'],
      );
      await refused(call(bob, 'POST', '/v1/actions', comp(uid('b-comp')), A), 403, 'auth.tenant_forbidden');
      // reconciliation of A's transaction
      const rec = (id: string) => ({
        id,
        capability_id: 'payments.charge',
        input: { amount: 1_000, currency: 'eur', customer: 'cus_sec' },
        transaction: { mode: 'reconcile', transaction_id: done.transaction_id },
      });
      await refused(
        call(bob, 'POST', '/v1/actions', rec(uid('b-rec'))),
        [400, 404, 409],
        ['transaction.not_found', 'runtime.transaction_not_found', 'runtime.reconcile_not_applicable'],
      );
      await refused(call(bob, 'POST', '/v1/actions', rec(uid('b-rec')), A), 403, 'auth.tenant_forbidden');
      // approvals and cancels
      await refused(call(bob, 'POST', `/v1/approvals/${approvalId}/decision`, { decision: 'approve' }), 404, 'approval.not_found');
      await refused(call(bob, 'POST', `/v1/approvals/${approvalId}/decision`, { decision: 'approve' }, A), 403, 'auth.tenant_forbidden');
      await refused(call(bob, 'POST', `/v1/actions/${pendingId}/cancel`, {}), 404, 'action.not_found');
    }, A);
  });
});

describe('requester and forged identity', () => {
  it('refuses a requested_by that is not the principal, and a tenant forged in the body', async () => {
    const alice = tokens.alice as string;
    await writesNothing(async () => {
      await refused(
        call(alice, 'POST', '/v1/actions', {
          action: charge(uid('rq'), { mode: 'execute' }),
          transaction_id: uid('tx'),
          requested_by: { id: 'mallory', kind: 'user' },
        }),
        [400, 403],
        'runtime.requester_mismatch',
      );
      await refused(
        call(alice, 'POST', '/v1/actions', charge(uid('ft'), { mode: 'execute' }, { identity: { tenant_id: B } })),
        403,
        'runtime.tenant_forbidden',
      );
    });
  });

  it('a principal or tenant named in the body does not change who acts', async () => {
    const alice = tokens.alice as string;
    const id = uid('forge');
    // Unknown top-level fields (a forged `principal`/`tenant_id`) are refused by the strict envelope.
    await writesNothing(async () => {
      await refused(call(alice, 'POST', '/v1/actions', charge(uid('fp'), { mode: 'execute' }, { principal: { id: 'root', kind: 'service' } })), 400, [
        'envelope.invalid',
        'envelope.unknown_field',
        'request.invalid_body',
        'request.validation_failed',
      ]);
      await refused(call(alice, 'POST', '/v1/actions', charge(uid('fp'), { mode: 'execute' }, { tenant_id: B })), 400, [
        'envelope.invalid',
        'envelope.unknown_field',
        'request.invalid_body',
        'request.validation_failed',
      ]);
    });
    // The identity's own tenant is accepted and the record belongs to alice in A.
    const sub = await call(alice, 'POST', '/v1/actions', charge(id, { mode: 'execute' }, { identity: { tenant_id: A } }));
    expect(sub.status).toBeLessThan(300);
    expect(sub.body.tenant_id).toBe(A);
    await finished(alice, id);
    await refused(call(tokens.bob as string, 'GET', `/v1/actions/${id}`), 404, 'action.not_found');
  });
});

describe('approvals and plans', () => {
  it('forbids self-approval under a policy that forbids it', async () => {
    const plan = await planned(tokens.alice as string);
    const id = uid('self');
    const pending = await call(tokens.alice as string, 'POST', '/v1/actions', charge(id, { mode: 'commit', plan_id: plan.plan_id }));
    const approvalId = (pending.body.action_result as { metadata: { approval_id: string } }).metadata.approval_id;
    await writesNothing(async () => {
      await refused(
        call(tokens.aliceApprover as string, 'POST', `/v1/approvals/${approvalId}/decision`, { decision: 'approve' }),
        403,
        'runtime.self_approval_forbidden',
      );
      await refused(call(tokens.alice as string, 'POST', `/v1/approvals/${approvalId}/decision`, { decision: 'approve' }), 403, [
        'runtime.approver_forbidden',
        'auth.insufficient_scope',
      ]);
    });
    const ok = await call(tokens.approver as string, 'POST', `/v1/approvals/${approvalId}/decision`, { decision: 'approve' });
    expect(ok.status).toBe(200);
    expect((await finished(tokens.alice as string, id)).body.action_result).toMatchObject({ status: 'completed' });
  });

  it('prevents plan reuse by another principal (with and without an approval gate) and after expiry', async () => {
    const mark = stack.simulator.ledger().length;
    // Tenant B (no approval policy): dave's commit of bob's plan is refused at admission, as a plan that does not exist
    // (another principal may not even learn that it does: docs/authority.md), and nothing is written.
    const dave = await stack.mintToken({ sub: 'dave', tenants: [B], scopes: RW, ttl: '2h' });
    const bobPlan = await planned(tokens.bob as string);
    await writesNothing(async () => {
      await refused(call(dave, 'POST', '/v1/actions', charge(uid('dave'), { mode: 'commit', plan_id: bobPlan.plan_id })), 404, 'runtime.plan_not_found');
    });
    const bobTx = await call(tokens.bob as string, 'GET', `/v1/transactions?plan_id=${encodeURIComponent(bobPlan.plan_id)}`);
    expect(bobTx.body.status).toBe('planned');

    // Tenant A (an approval gate on commits): carol's commit of alice's plan is refused before any approver is asked
    // (the recheck and the authority rule run before the approval gate); nothing is written.
    const alicePlan = await planned(tokens.alice as string);
    const carolId = uid('carol');
    await writesNothing(async () => {
      await refused(
        call(tokens.carol as string, 'POST', '/v1/actions', charge(carolId, { mode: 'commit', plan_id: alicePlan.plan_id })),
        404,
        'runtime.plan_not_found',
      );
    });
    await refused(call(tokens.carol as string, 'GET', `/v1/actions/${carolId}`), 404, 'action.not_found');
    const aliceTx = await call(tokens.alice as string, 'GET', `/v1/transactions?plan_id=${encodeURIComponent(alicePlan.plan_id)}`);
    expect(aliceTx.body.status).toBe('planned');

    // After expiry (the Runtime's clock moved past the plan's expires_at): refused, even for its own principal.
    // (The page: an implementation-generated plan expires after 15 minutes; the tokens live 2 h, so they stay valid.)
    const later = await planned(tokens.bob as string);
    const laterTx = await call(tokens.bob as string, 'GET', `/v1/transactions?plan_id=${encodeURIComponent(later.plan_id)}&include=plan`);
    const expiresAt = Date.parse((laterTx.body.plan as { expires_at?: string } | undefined)?.expires_at ?? new Date(Date.now() + 15 * 60_000).toISOString());
    clock.advanceTo(expiresAt + 1_000);
    try {
      await refused(
        call(tokens.bob as string, 'POST', '/v1/actions', charge(uid('late'), { mode: 'commit', plan_id: later.plan_id })),
        [409, 410, 422],
        'runtime.plan_expired',
      );
    } finally {
      clock.reset();
    }
    expect(stack.simulator.ledger().length).toBe(mark);
  });
});
