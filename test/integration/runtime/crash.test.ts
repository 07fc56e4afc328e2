/**
 * Spec README gap "A worker that dies mid-attempt": crash-safe
 * attempts, driven through every named crash point, with the real SQS queue
 * redelivering the message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRuntimeSettingsInput } from '../../../lib/runtime/config.js';
import { ArmedCrashPoints } from '../../../lib/runtime/crash-points.js';
import { Runtime } from '../../../lib/runtime/runtime.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
const LEASE = 10_000 + 30_000; // capability timeout + lease margin
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-crash', config: { stall_after_ms: 60_000 } });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const action = (a: string) => h.stores.actions.get({ tenant_id: TENANT, action_id: a });

async function submit(capability = 'pay.transfer', input: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const a = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), { ...transfer(a, { transaction: { mode: 'execute', transaction_id: tx }, ...extra }, input), capability_id: capability });
  return { a, tx };
}

describe('Crash points', () => {
  it('after_admission_before_enqueue: nothing was enqueued; the sweeper finds the stalled prepared record and the worker settles it', async () => {
    h.crash.arm('after_admission_before_enqueue');
    const a = uid('a');
    const tx = uid('tx');
    expect(await codeOf(h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx } })))).toBe('runtime.crash_injected');
    expect((await record(tx))?.status).toBe('prepared');
    expect((await action(a))?.status).toBe('accepted');
    expect(await h.receiveInvokes()).toEqual([]);
    h.clock.advance(60_001);
    await h.runtime.sweep(h.clock.now());
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('after_admission_before_enqueue on a plain invocation: resubmitting the same action resumes the admission', async () => {
    h.crash.arm('after_admission_before_enqueue');
    const a = uid('a');
    const body = { ...transfer(a), capability_id: 'pay.echo' };
    expect(await codeOf(h.runtime.submit(caller(), body))).toBe('runtime.crash_injected');
    expect((await h.runtime.submit(caller(), body)).disposition).toBe('accepted');
    await h.drain();
    expect((await action(a))?.status).toBe('completed');
  });

  it('after_receive_before_lease: the redelivered message runs the first attempt normally', async () => {
    const { a, tx } = await submit();
    h.crash.arm('after_receive_before_lease');
    expect(await h.drain()).toEqual([]);
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
    expect(provider.count('invoke', tx)).toBe(1);
    expect((await action(a))?.fence).toBe(1);
  });

  it('after_lease_before_provider_call: a redelivery waits for the lease, then settles outcome_unknown without a blind provider call', async () => {
    const { tx } = await submit();
    h.crash.arm('after_lease_before_provider_call');
    await h.drain();
    expect((await h.drain()).map((o) => o.disposition)).toEqual(['deferred']);
    h.clock.advance(LEASE);
    expect((await h.drain()).map((o) => o.disposition)).toEqual(['recovered_outcome_unknown']);
    const rec = await record(tx);
    expect(rec?.status).toBe('outcome_unknown');
    expect(rec?.error?.code).toBe('runtime.attempt_abandoned');
    expect(provider.count('invoke', tx)).toBe(0);
    expect(h.scheduler.for(tx)).toHaveLength(1);
  });

  it('after_provider_accept_before_checkpoint: the provider acted but no operation was checkpointed; recovery settles outcome_unknown and reconciliation escalates', async () => {
    const { tx } = await submit();
    h.crash.arm('after_provider_accept_before_checkpoint');
    await h.drain();
    h.clock.advance(LEASE);
    await h.drain();
    const rec = await record(tx);
    expect(rec?.status).toBe('outcome_unknown');
    expect(rec?.provider_operation).toBeUndefined();
    expect(provider.count('invoke', tx)).toBe(1);
    h.clock.advance(5_000);
    expect((await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' })).disposition).toBe('escalated');
  });

  it('after_checkpoint_before_response: recovery keeps the checkpointed operation and reconciliation finds the outcome', async () => {
    const { tx } = await submit();
    h.crash.arm('after_checkpoint_before_response');
    await h.drain();
    h.clock.advance(LEASE);
    await h.drain();
    const rec = await record(tx);
    expect(rec).toMatchObject({ status: 'outcome_unknown', provider_operation: { provider: 'testpay' } });
    expect(provider.count('invoke', tx)).toBe(1);
    h.clock.advance(5_000);
    expect((await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' })).disposition).toBe('reconciled');
  });

  it('after_response_before_settlement: the response is lost with the process; no second provider call', async () => {
    const { tx } = await submit();
    h.crash.arm('after_response_before_settlement');
    await h.drain();
    h.clock.advance(LEASE);
    await h.drain();
    expect((await record(tx))?.status).toBe('outcome_unknown');
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('during_settlement: transaction and action settled in one write, the key answers their result; the redelivery finds them settled and calls nothing', async () => {
    const key = uid('key');
    const { a, tx } = await submit('pay.transfer', {}, { idempotency_key: key });
    h.crash.arm('during_settlement');
    expect(await h.drain()).toEqual([]);
    expect((await record(tx))?.status).toBe('committed');
    expect((await action(a))?.result).toMatchObject({ status: 'completed', output: { amount: 100 } });
    // The same request under the key, before the redelivery: the settled result, as a replay, with no second call.
    const replay = await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key }));
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result).toMatchObject({ status: 'completed', replayed: true, output: { amount: 100 }, metadata: { replayed_from: a } });
    h.clock.advance(LEASE);
    expect((await h.drain()).map((o) => o.disposition)).toEqual(['already_settled']);
    expect(provider.count('invoke', tx)).toBe(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('during_settlement on an unknown outcome: settled in one write before the schedule; the sweeper enqueues the overdue reconciliation', async () => {
    const { a, tx } = await submit('pay.transfer', { scenario: 'uncertain' });
    h.crash.arm('during_settlement');
    await h.drain();
    expect((await record(tx))?.status).toBe('outcome_unknown');
    expect((await action(a))?.status).toBe('failed');
    expect(h.scheduler.for(tx)).toEqual([]);
    await h.receiveReconciles();
    h.clock.advance(5_000);
    await h.runtime.sweep(h.clock.now());
    expect((await h.receiveReconciles()).map((m) => m.transaction_id)).toContain(tx);
  });

  it('during_schedule_creation: the schedule was lost; the sweeper enqueues the overdue reconciliation', async () => {
    const { tx } = await submit('pay.transfer', { scenario: 'uncertain' });
    h.crash.arm('during_schedule_creation');
    await h.drain();
    expect(h.scheduler.for(tx)).toEqual([]);
    expect((await record(tx))?.status).toBe('outcome_unknown');
    await h.receiveReconciles();
    h.clock.advance(5_000);
    await h.runtime.sweep(h.clock.now());
    expect((await h.receiveReconciles()).map((m) => m.transaction_id)).toContain(tx);
  });
});

describe('Crash-safe attempts', () => {
  it('a redelivered attempt re-invokes only with the same action and idempotency identity when the capability declares retry with downstream idempotency', async () => {
    const key = uid('key');
    const { a, tx } = await submit('pay.idempotent', {}, { idempotency_key: key });
    h.crash.arm('after_checkpoint_before_response');
    await h.drain();
    h.clock.advance(LEASE);
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
    const calls = provider.calls.filter((c) => c.transaction_id === tx && c.method === 'invoke');
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => [c.action_id, c.idempotency_key])).toEqual([
      [a, key],
      [a, key],
    ]);
  });

  it('each attempt holds a fenced lease: a zombie attempt can never settle over a newer one', async () => {
    const { a, tx } = await submit('pay.transfer', { scenario: 'gated' });
    const [msg] = await h.receiveInvokes();
    const gate = provider.armGate();
    const zombie = h.runtime.runAttempt(msg!.message);
    await gate.entered;
    // The zombie's lease expires; the redelivered message takes over and settles outcome_unknown.
    h.clock.advance(LEASE);
    const newer = await h.runtime.runAttempt(msg!.message);
    expect(newer.disposition).toBe('recovered_outcome_unknown');
    const settled = await record(tx);
    provider.openGate();
    const late = await zombie;
    expect(late.disposition).toBe('superseded');
    expect(await record(tx)).toEqual(settled);
    expect((await action(a))?.fence).toBe(2);
    expect((await action(a))?.result?.error?.code).toBe('runtime.attempt_abandoned');
  });

  it('a redelivered message while the lease is live is deferred (the message is not acknowledged)', async () => {
    const { tx } = await submit('pay.transfer', { scenario: 'gated' });
    const [msg] = await h.receiveInvokes();
    const gate = provider.armGate();
    const first = h.runtime.runAttempt(msg!.message);
    await gate.entered;
    const dup = await h.runtime.runAttempt(msg!.message);
    expect(dup).toMatchObject({ disposition: 'deferred', retry: true });
    provider.openGate();
    expect((await first).disposition).toBe('settled');
    expect((await record(tx))?.status).toBe('committed');
  });

  it('crash points can only be installed in test mode, which the production configuration forbids', () => {
    expect(() => parseRuntimeSettingsInput({ test_mode: true }, 'production')).toThrow(expect.objectContaining({ code: 'runtime.config_invalid' }));
    const deps = { config: parseRuntimeSettingsInput({}, 'production'), crashPoints: new ArmedCrashPoints() };
    expect(() => new Runtime(deps as never)).toThrow(expect.objectContaining({ code: 'runtime.config_invalid' }));
  });
});
