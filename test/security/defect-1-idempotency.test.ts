/**
 * Regression (defect 1): downstream idempotency keys must not
 * collide across principals.
 *
 * Idempotency reservations are scoped to (tenant, principal, key). Two
 * principals of the same tenant may use the same idempotency key for the same
 * request: each owns its own reservation, so each is a separate action with
 * its own effect. The key sent to the provider must therefore be unique per
 * reservation too; when it was derived from tenant + key only, Bob's charge
 * was deduplicated by the provider into Alice's (he got `completed` with her
 * `charge_id`, and the ledger held one charge for two completed actions).
 *
 * Over real HTTP against the local stack (real authorizer, handlers,
 * Runtime, DynamoDB Local, fauxqs, payments simulator).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '../../dev/local/start.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { reliabilityStack } from '../reliability/support.js';
import { HANG_MS } from '../support/wait.js';

const TENANT = 'demo';
const RW = ['aip:actions:read', 'aip:actions:write'];
const WAIT = 20;

let stack: LocalStack;
const tokens: Record<'alice' | 'bob', string> = { alice: '', bob: '' };

beforeAll(async () => {
  ({ stack } = await reliabilityStack('idem-d1', { tenants: [TENANT], approvalPolicies: [], clock: new SteppedClock() }));
  tokens.alice = await stack.mintToken({ sub: 'alice', tenants: [TENANT], scopes: RW, ttl: '2h' });
  tokens.bob = await stack.mintToken({ sub: 'bob', tenants: [TENANT], scopes: RW, ttl: '2h' });
});

afterAll(async () => {
  await stack?.stop();
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const h: Record<string, string> = { authorization: `Bearer ${token}`, ...headers };
  if (body !== undefined) h['content-type'] = 'application/json';
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers: h,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(HANG_MS),
  });
  const text = await res.text();
  return { status: res.status, body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const statusOf = (a: Answer) => (a.body.action_result as { status?: string } | undefined)?.status;

/** Polls the action with `?wait=` (a server-side long poll) until it leaves the non-terminal statuses. */
async function finished(token: string, id: string): Promise<Answer> {
  for (;;) {
    const a = await call(token, 'GET', `/v1/actions/${encodeURIComponent(id)}?wait=${WAIT}`);
    if (a.status !== 200 || !['accepted', 'running', 'queued', 'in_progress'].includes(statusOf(a) ?? '')) return a;
  }
}

function charge(id: string) {
  return {
    id,
    capability_id: 'payments.charge',
    input: { amount: 1000, currency: 'eur', customer: 'cus_x' },
    idempotency_key: 'K1',
    transaction: { mode: 'execute' },
  };
}

/**
 * Submits with `Prefer: wait=N` and reads the settled result. The execute's first attempt runs in the submit
 * (`attempt_when_waited: inline`, the local stack's default), which answers after the settlement and its side records.
 */
async function execute(token: string, id: string): Promise<Answer> {
  const sub = await call(token, 'POST', '/v1/actions', charge(id), { prefer: `wait=${WAIT}` });
  expect(sub.status, JSON.stringify(sub.body)).toBeLessThan(300);
  return finished(token, id);
}

describe('defect 1: downstream idempotency keys across principals', () => {
  it('two principals of one tenant reusing one idempotency key and body get two charges', async () => {
    const ledgerBefore = stack.simulator.ledger().length;
    const aliceId = `alice-${randomUUID().slice(0, 12)}`;
    const bobId = `bob-${randomUUID().slice(0, 12)}`;

    const alice = await execute(tokens.alice, aliceId);
    expect(statusOf(alice), JSON.stringify(alice.body)).toBe('completed');
    const bob = await execute(tokens.bob, bobId);
    expect(statusOf(bob), JSON.stringify(bob.body)).toBe('completed');

    const chargeOf = (a: Answer) => (a.body.action_result as { output?: { charge_id?: string } }).output?.charge_id;
    const aliceCharge = chargeOf(alice);
    const bobCharge = chargeOf(bob);
    expect(aliceCharge).toEqual(expect.any(String));
    expect(bobCharge).toEqual(expect.any(String));
    expect({ aliceCharge, bobCharge, sameCharge: aliceCharge === bobCharge }).toEqual({ aliceCharge, bobCharge, sameCharge: false });

    const charges = stack.simulator
      .ledger()
      .slice(ledgerBefore)
      .filter((e) => e.kind === 'charge');
    expect(charges.map((e) => e.charge_id).sort()).toEqual([aliceCharge, bobCharge].sort());
    expect(new Set(charges.map((e) => e.idempotency_key)).size).toBe(2);
  });
});
