/**
 * The worker's first read (docs/runtime.md, "The worker's first read"): the invoke message of a fresh admission
 * carries the images of what that admission wrote (the action item without its input, the transaction record, a
 * compensation's memory), and its first delivery starts from them instead of a consistent BatchGetItem. The lease is
 * conditioned on the image's revision as after a read; a refused lease (the action moved since the admission) falls
 * back to the read in the same invocation. A redelivery reads as before.
 *
 * Against DynamoDB Local and fauxqs; DynamoDB requests are recorded by middleware on the SDK client, as in
 * reads.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionRecord } from '../../../lib/ports/action-store.js';
import type { InvokeMessage } from '../../../lib/ports/messages.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();

interface Request {
  readonly command: string;
  readonly pk: string;
}
const requests: Request[] = [];

function pkOf(input: { Key?: { PK?: unknown } }): string {
  const raw = input.Key?.PK;
  if (typeof raw === 'string') return raw;
  if (raw !== null && typeof raw === 'object' && typeof (raw as { S?: unknown }).S === 'string') return (raw as { S: string }).S;
  return '';
}

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider, { compensationWindowMs: 60 * 60_000 })], prefix: 'rt-first' });
  h.table.raw.middlewareStack.add(
    (next, context) => async (args) => {
      requests.push({ command: String(context.commandName), pk: pkOf(args.input as Parameters<typeof pkOf>[0]) });
      return next(args);
    },
    { step: 'initialize', name: 'recordFirstReadRequests' },
  );
});
afterAll(async () => h.destroy());

const READS = new Set(['GetItemCommand', 'BatchGetItemCommand', 'QueryCommand']);

/** The DynamoDB requests made while `body` runs. */
async function during<T>(body: () => Promise<T>): Promise<{ value: T; reads: Request[]; commands: string[] }> {
  const from = requests.length;
  const value = await body();
  const seen = requests.slice(from);
  return { value, reads: seen.filter((r) => READS.has(r.command)), commands: seen.map((r) => r.command) };
}

/** The queued invoke message of `action_id` (received; it stays invisible for the queue's visibility timeout). */
async function take(action_id: string): Promise<InvokeMessage> {
  const found = (await h.receiveInvokes()).find((m) => m.message.action_id === action_id);
  if (found === undefined) throw new Error(`no invoke message for ${action_id}`);
  expect(found.receive_count).toBe(1);
  return found.message;
}

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const stored = (id: string) => h.stores.actions.get({ tenant_id: TENANT, action_id: id });
const withoutInput = (a: ActionRecord) => {
  const { input: _input, ...envelope } = a.action;
  void _input;
  return { ...a, action: envelope };
};

describe('the first delivery of a fresh admission starts from its images', () => {
  it('execute: the message carries exactly the stored items (the action without its input); the attempt reads nothing and settles as before', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: uid('k') });
    await h.runtime.submit(caller(), a);
    const message = await take(a.id);
    expect(message.admitted).toBeDefined();
    expect(message.admitted?.action).toEqual(withoutInput((await stored(a.id)) as ActionRecord));
    expect(JSON.stringify(message)).not.toContain('"input"');
    expect(message.admitted?.transaction).toEqual(JSON.parse(JSON.stringify(await record(tx))));

    const calls = provider.calls.length;
    const { value: out, reads, commands } = await during(() => h.runtime.runAttempt(message, { receive_count: 1 }));
    expect(out).toMatchObject({ disposition: 'settled', action_id: a.id, transaction_status: 'committed' });
    expect(reads).toEqual([]);
    // The lease first (the test connector then checkpoints its operation, and the settlement follows).
    expect(commands[0]).toBe('UpdateItemCommand');
    // One provider call, with the stored input (it came back with the lease's own write; the test connector's strict
    // input schema refuses anything else, which would have failed the action).
    expect(provider.calls.slice(calls).map((c) => c.action_id)).toEqual([a.id]);
    expect((await stored(a.id))?.result).toMatchObject({ status: 'completed' });
    expect(await record(tx)).toMatchObject({ status: 'committed', action_id: a.id });
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('commit of a plan: no read in the attempt; committed with one claim and one settlement receipt', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }));
    const c = transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx}` } });
    expect((await h.runtime.submit(caller(), c)).disposition).toBe('accepted');
    const message = await take(c.id);
    expect(message.admitted?.transaction).toEqual(JSON.parse(JSON.stringify(await record(tx))));
    const { value: out, reads } = await during(() => h.runtime.runAttempt(message, { receive_count: 1 }));
    expect(out).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    expect(reads).toEqual([]);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('compensate: no read in the attempt, the target included; the connector gets the memory a read would have built', async () => {
    const target = uid('a');
    const ttx = uid('tx');
    await h.runtime.submit(caller(), transfer(target, { transaction: { mode: 'execute', transaction_id: ttx } }));
    await h.runtime.runAttempt(await take(target), { receive_count: 1 });
    const comp = transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: target } });
    expect((await h.runtime.submit(caller(), comp)).disposition).toBe('accepted');
    const message = await take(comp.id);
    expect(message.admitted?.compensation).toMatchObject({ original_action_id: target, compensation_action_id: comp.id });

    const calls = provider.calls.length;
    const { value: out, reads } = await during(() => h.runtime.runAttempt(message, { receive_count: 1 }));
    expect(out).toMatchObject({ disposition: 'settled', transaction_status: 'compensated' });
    expect(reads).toEqual([]);
    const memory = provider.calls.slice(calls)[0]?.memory?.compensation;
    expect(memory).toEqual({
      original_action_id: target,
      original_transaction_id: ttx,
      original_result: (await stored(target))?.result,
      requested_capability_id: comp.capability_id,
      // The test connector's alternate compensation capability.
      compensation_capability_id: 'pay.refund',
      compensation_action_id: comp.id,
    });
  });

  it('a plain invocation: the action image alone; no read', async () => {
    const a = transfer(uid('a'), {});
    await h.runtime.submit(caller(), a);
    const message = await take(a.id);
    expect(message.admitted?.transaction).toBeUndefined();
    const { value: out, reads } = await during(() => h.runtime.runAttempt(message, { receive_count: 1 }));
    expect(out).toMatchObject({ disposition: 'settled', action_id: a.id });
    expect(reads).toEqual([]);
    expect((await stored(a.id))?.status).toBe('completed');
  });
});

describe('the images are used only when they can be right', () => {
  it('a redelivery (receive count 2) reads as before: one BatchGetItem of the action and the transaction', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } });
    await h.runtime.submit(caller(), a);
    const message = await take(a.id);
    expect(message.admitted).toBeDefined();
    const { value: out, commands } = await during(() => h.runtime.runAttempt(message, { receive_count: 2 }));
    expect(out).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    expect(commands.slice(0, 2)).toEqual(['BatchGetItemCommand', 'UpdateItemCommand']);
    expect(commands.filter((c) => READS.has(c))).toEqual(['BatchGetItemCommand']);
  });

  it('cancelled between admission and first delivery: the lease at the image’s revision is refused, the read finds the action cancelled; no provider call', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } });
    await h.runtime.submit(caller(), a);
    const message = await take(a.id);
    expect((await h.runtime.cancel(caller(), TENANT, a.id)).action_result.status).toBe('cancelled');
    const calls = provider.calls.length;
    const { value: out, commands } = await during(() => h.runtime.runAttempt(message, { receive_count: 1 }));
    expect(out).toMatchObject({ disposition: 'already_settled' });
    // The refused lease (one failed conditional write), then the read of today; nothing else is written.
    expect(commands.slice(0, 2)).toEqual(['UpdateItemCommand', 'BatchGetItemCommand']);
    expect(provider.calls.length).toBe(calls);
    expect((await record(tx))?.status).toBe('failed');
    expect((await stored(a.id))?.status).toBe('cancelled');
  });

  it('a cancellation requested between admission and first delivery: the attempt falls back to the read, leases and ends cancelled without a provider call', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } });
    await h.runtime.submit(caller(), a);
    const message = await take(a.id);
    // The durable request alone (what a cancel that finds the action no longer unstarted writes).
    await h.table.stores.uow.commit([{ kind: 'action.request_cancel', input: { tenant_id: TENANT, action_id: a.id } }] as const);
    const calls = provider.calls.length;
    const { value: out, commands } = await during(() => h.runtime.runAttempt(message, { receive_count: 1 }));
    expect(out).toMatchObject({ disposition: 'settled', action_result: { status: 'cancelled' } });
    expect(commands.slice(0, 3)).toEqual(['UpdateItemCommand', 'BatchGetItemCommand', 'UpdateItemCommand']);
    expect(provider.calls.length).toBe(calls);
    expect((await record(tx))?.status).toBe('failed');
  });

  it('leased by another delivery first (the sweeper’s message, say): the images cannot lease; the read sees the settled action', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } });
    await h.runtime.submit(caller(), a);
    const message = await take(a.id);
    const { admitted: _images, ...ids } = message;
    void _images;
    expect(await h.runtime.runAttempt(ids, { receive_count: 1 })).toMatchObject({ disposition: 'settled' });
    const calls = provider.calls.length;
    expect(await h.runtime.runAttempt(message, { receive_count: 1 })).toMatchObject({ disposition: 'already_settled' });
    expect(provider.calls.length).toBe(calls);
  });

  it('images too large for the message bound: the admission sends IDs only and the worker reads', async () => {
    const tx = uid('tx');
    const labels = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`label-${i}`, 'v'.repeat(256)]));
    const a = { ...transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }), metadata: { labels } };
    await h.runtime.submit(caller(), a);
    const message = await take(a.id);
    expect(message.admitted).toBeUndefined();
    const { value: out, commands } = await during(() => h.runtime.runAttempt(message, { receive_count: 1 }));
    expect(out).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    expect(commands[0]).toBe('BatchGetItemCommand');
  });

  it('a malformed image is refused with its message, before any request', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } });
    await h.runtime.submit(caller(), a);
    const message = await take(a.id);
    const images = message.admitted as NonNullable<InvokeMessage['admitted']>;
    const forged = [
      { ...message, admitted: { ...images, action: { ...images.action, status: 'running' } } },
      { ...message, admitted: { ...images, action: { ...images.action, action: { ...images.action.action, input: { amount: 1 } } } } },
      { ...message, admitted: { ...images, transaction: { ...images.transaction, action_id: uid('other') } } },
      { ...message, fence: 1, attempt: 2 },
    ];
    for (const m of forged) {
      const { value, commands } = await during(() => h.runtime.runAttempt(m as InvokeMessage, { receive_count: 1 }).catch((e: unknown) => e));
      expect(value).toMatchObject({ code: 'queue.message_invalid' });
      expect(commands).toEqual([]);
    }
    // The genuine message still runs.
    expect(await h.runtime.runAttempt(message, { receive_count: 1 })).toMatchObject({ disposition: 'settled' });
  });
});
