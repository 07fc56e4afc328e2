/**
 * Redelivery and zombies on the local stack: the real payments
 * connector against the payments simulator, the invoke queue on fauxqs and
 * the worker handler behind its poller. Extra "Lambda instances" are direct
 * `runtime.runAttempt(message)` calls with the same message, as a second
 * concurrent SQS delivery would make them.
 * - a message delivered twice (after it settled): no second provider call;
 * - delivered concurrently while the first attempt holds its lease: deferred;
 * - delivered after the lease expired: the newer attempt takes over (fence
 *   2) and settles `outcome_unknown` without calling the provider; the late
 *   attempt is refused by the fence when it tries to settle (`superseded`),
 *   and reconciliation then finds the one charge.
 * The provider ledger shows at most one effect per intent throughout.
 */
import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalStack } from '../../dev/local/start.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import type { InvokeMessage } from '../../lib/ports/messages.js';
import { reconcileActionId } from '../../lib/runtime/reconciliation.js';
import { counter, recordScenario, reliabilityStack } from './support.js';
import { HANG_MS } from '../support/wait.js';

const TENANT = 'acme';
/** The payments capabilities' timeout here; the lease is this plus the 30 s margin. */
const TIMEOUT_MS = 60_000;
const LEASE_MS = TIMEOUT_MS + 30_000;

const clock = new SteppedClock();
let stack: LocalStack;
let table: string;
let token: string;
let sqs: SQSClient;
const { counts, bump } = counter();

beforeAll(async () => {
  ({ stack, table } = await reliabilityStack('redeliver', { tenants: [TENANT], approvalPolicies: [], clock, payments: { timeoutMs: TIMEOUT_MS } }));
  token = await stack.mintToken({ sub: 'redeliverer', tenants: [TENANT], scopes: ['aip:actions:read', 'aip:actions:write'], ttl: '2h' });
  sqs = new SQSClient({ endpoint: inject('sqsEndpoint'), region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
});

afterAll(async () => {
  recordScenario('redelivery', {
    scenario: 'Redelivery and zombies',
    cases: counts.cases ?? 0,
    held: [
      'duplicate delivery after settlement: no provider call, records unchanged',
      'concurrent delivery during a live lease: deferred',
      'delivery after lease expiry: the takeover (higher fence) settles from the checkpointed operation or as outcome_unknown, never by a blind provider call',
      'late attempt refused when it tries to checkpoint/settle (record unchanged)',
      'at most one provider effect per intent',
    ],
    counts,
  });
  sqs?.destroy();
  stack.simulator.releaseDelays();
  await stack?.stop();
});

const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(HANG_MS),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const charge = (id: string, amount: number, key: string) => ({
  id,
  capability_id: 'payments.charge',
  input: { amount, currency: 'eur', customer: 'cus_redeliver' },
  transaction: { mode: 'execute' },
  idempotency_key: key,
});

const effectsFor = (key: string) => stack.simulator.ledger().filter((e) => e.idempotency_key === key || JSON.stringify(e).includes(key));

async function transactionOf(action_id: string) {
  const t = await call('GET', `/v1/transactions?action_id=${encodeURIComponent(action_id)}&include=receipts`);
  return t.body as { status: string; transaction_id: string; receipts?: unknown[] };
}

describe('redelivery and zombies', () => {
  it('a message delivered twice after it settled makes no second provider call and changes nothing', async () => {
    const id = uid('dup');
    const key = uid('k');
    const first = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
    const sub = await call('POST', '/v1/actions', charge(id, 1_100, key));
    expect(sub.status).toBe(202);
    const message = (await first) as InvokeMessage;
    const settled = await transactionOf(id);
    expect(settled.status).toBe('committed');
    const ledger = stack.simulator.ledger().length;

    // The same message again through the queue, and twice more to the worker directly.
    const url = (await sqs.send(new GetQueueUrlCommand({ QueueName: `${table}-invoke` }))).QueueUrl as string;
    const again = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: JSON.stringify(message) }));
    await again;
    const direct = await Promise.all([stack.runtime.runAttempt(message), stack.runtime.runAttempt(message)]);
    for (const o of direct) expect(o.disposition).not.toBe('settled');
    bump('cases', 3);
    bump('duplicate_deliveries', 3);

    expect(stack.simulator.ledger().length).toBe(ledger);
    expect(effectsFor(key).length).toBeLessThanOrEqual(1);
    expect(await transactionOf(id)).toEqual(settled);
  });

  it('concurrent deliveries during a live lease are deferred; after the lease expired the newer attempt takes over and the late attempt is refused by the fence', async () => {
    // The provider commits the charge, then holds its response: the first attempt sits inside the provider call, holding the lease.
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'latency', ms: 3_600_000, phase: 'after_commit' }, times: 1 }]);
    const id = uid('zombie');
    const key = uid('k');
    const held = stack.simulator.waitForEvent((e) => e.type === 'fault_applied');
    const zombieDone = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
    const sub = await call('POST', '/v1/actions', charge(id, 2_200, key));
    expect(sub.status).toBe(202);
    await held;
    const transaction_id = (await transactionOf(id)).transaction_id;
    const message: InvokeMessage = { kind: 'invoke', tenant_id: TENANT, action_id: id, transaction_id, fence: 0, attempt: 1 };

    // Concurrent deliveries while the lease is live: each deferred, none reaches the provider.
    const concurrent = await Promise.all(Array.from({ length: 5 }, () => stack.runtime.runAttempt(message)));
    expect(concurrent.map((o) => o.disposition)).toEqual(Array(5).fill('deferred'));
    expect(concurrent.every((o) => o.retry)).toBe(true);
    bump('cases', 5);
    bump('concurrent_deferred', 5);

    // After the lease expired: the redelivery takes over with a higher fence. The provider operation was
    // checkpointed before the call, so recovery looks it up (no new charge) and settles from what it finds,
    // or settles outcome_unknown when it cannot know; it never calls the provider blindly.
    const callsBefore = stack.simulator.ledger().length;
    clock.advance(LEASE_MS + 1_000);
    const takeover = await stack.runtime.runAttempt(message);
    expect(['recovered_outcome_unknown', 'settled']).toContain(takeover.disposition);
    expect(takeover.fence).toBeGreaterThanOrEqual(2);
    bump('cases');
    bump('lease_takeovers');
    const taken = await transactionOf(id);
    expect(['committed', 'outcome_unknown']).toContain(taken.status);
    expect(stack.simulator.ledger().length).toBe(callsBefore);

    // The zombie wakes up with the provider's answer and tries to checkpoint and settle: it is refused,
    // and the record the newer attempt wrote is unchanged.
    stack.simulator.releaseDelays();
    await zombieDone;
    expect(await transactionOf(id)).toEqual(taken);
    // Refused as superseded, the zombie's message was acknowledged, not failed back to the queue for redelivery.
    const url = (await sqs.send(new GetQueueUrlCommand({ QueueName: `${table}-invoke` }))).QueueUrl as string;
    const attrs =
      (
        await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
        )
      ).Attributes ?? {};
    expect({ visible: Number(attrs.ApproximateNumberOfMessages), inFlight: Number(attrs.ApproximateNumberOfMessagesNotVisible) }).toEqual({
      visible: 0,
      inFlight: 0,
    });
    bump('zombies_refused');

    // No blind retry: a third delivery does not call the provider.
    const third = await stack.runtime.runAttempt(message);
    expect(third.disposition).not.toBe('settled');
    expect(stack.simulator.ledger().length).toBe(callsBefore);
    bump('cases');

    if (taken.status === 'outcome_unknown') {
      // Reconciliation on its schedule finds the one charge.
      const schedule = stack.scheduler.list().find((s) => JSON.parse(s.target.Input ?? '{}').transaction_id === transaction_id);
      expect(schedule).toBeDefined();
      clock.advanceTo(schedule?.at as Date);
      const reconciled = stack.handled('reconcile', (m) => m.kind === 'reconcile' && m.transaction_id === transaction_id);
      await stack.scheduler.fireDue(schedule?.at as Date);
      await reconciled;
      for (;;) {
        const r = await call('GET', `/v1/actions/${reconcileActionId(TENANT, transaction_id, 1)}?wait=20`);
        const st = (r.body.action_result as { status: string } | undefined)?.status;
        if (st !== 'accepted' && st !== 'running') break;
      }
      expect((await transactionOf(id)).status).toBe('reconciled');
    }
    counts[`takeover_${takeover.disposition}`] = 1;
    // Exactly one provider effect for the intent.
    const effects = stack.simulator.ledger().filter((e) => e.amount === 2_200);
    expect(effects).toHaveLength(1);
    bump('provider_effects_checked');
  });
});
