/**
 * Pipeline step 7: idempotency reservations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS, idempotencyFingerprint } from '../../../lib/ports/idempotency-store.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, errorOf, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-idem', config: { idempotency: { retention_seconds: 3_600 } } });
});
afterAll(async () => h.destroy());

const plain = (id: string, key: string, input: Record<string, unknown> = {}) => ({
  ...transfer(id, { idempotency_key: key }, input),
  capability_id: 'pay.echo',
});

describe('Idempotency reservations', () => {
  it('each reservation is scoped to tenant, principal and key and carries the request fingerprint', async () => {
    const key = uid('k');
    const a = uid('a');
    await h.runtime.submit(caller(), plain(a, key));
    const r = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(r).toMatchObject({
      action_id: a,
      status: 'in_flight',
      fingerprint: idempotencyFingerprint({
        capability_id: 'pay.echo',
        input: { amount: 100, to: 'acct-b' },
        identity: { tenant_id: TENANT, external_account_id: 'acct-1' },
      }),
    });
    expect(await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-2', key })).toBeUndefined();
    // another principal may use the same key independently
    expect((await h.runtime.submit(caller('agent-2'), plain(uid('a'), key))).disposition).toBe('accepted');
    await h.drain();
  });

  it('the same key with a different fingerprint is a conflict naming that it is a mismatch', async () => {
    const key = uid('k');
    await h.runtime.submit(caller(), plain(uid('a'), key));
    const err = await errorOf(h.runtime.submit(caller(), plain(uid('a'), key, { amount: 7 })));
    expect(err.code).toBe('idempotency.fingerprint_mismatch');
    expect(err.httpStatus).toBe(409);
    await h.drain();
  });

  it('while the first request is in flight, the answer is a conflict with retry_after', async () => {
    const key = uid('k');
    await h.runtime.submit(caller(), plain(uid('a'), key));
    const err = await errorOf(h.runtime.submit(caller(), plain(uid('a'), key)));
    expect(err.code).toBe('idempotency.in_flight');
    expect(err.retryAfterMs).toBeGreaterThan(0);
    await h.drain();
  });

  it('a completed request replays its stored result, marked as a replay, without invoking the connector', async () => {
    const key = uid('k');
    const first = uid('a');
    await h.runtime.submit(caller(), plain(first, key));
    await h.drain();
    const calls = provider.calls.length;
    const second = uid('a');
    const out = await h.runtime.submit(caller(), plain(second, key));
    expect(out.disposition).toBe('replayed');
    expect(out.action_result).toMatchObject({ status: 'completed', replayed: true, action_id: first });
    expect(provider.calls.length).toBe(calls);
    expect((await h.runtime.getAction(caller(), TENANT, second)).action_result).toMatchObject({ status: 'completed', replayed: true });
  });

  it('a reservation is owned by its action: the attempt neither adopts nor rewrites it, and once the fenced action settles the key answers its result', async () => {
    const key = uid('k');
    const a = uid('a');
    await h.runtime.submit(caller(), plain(a, key));
    expect((await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key }))?.fence).toBe(0);
    await h.drain();
    const r = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(r).toMatchObject({ status: 'in_flight', fence: 0, action_id: a, revision: 1 });
    const settled = await h.stores.actions.get({ tenant_id: TENANT, action_id: a });
    expect(settled).toMatchObject({ status: 'completed', fence: 1 });
    const calls = provider.calls.length;
    const out = await h.runtime.submit(caller(), plain(uid('a'), key));
    expect(out.disposition).toBe('replayed');
    expect(out.action_result).toMatchObject({ status: 'completed', replayed: true, output: settled?.result?.output, metadata: { replayed_from: a } });
    expect(await h.drain()).toEqual([]);
    expect(provider.calls.length).toBe(calls);
  });

  it('it is never deleted on an ambiguous error: an unknown outcome marks it uncertain and a retry needs reconciliation', async () => {
    const key = uid('k');
    const tx = uid('tx');
    await h.runtime.submit(
      caller(),
      transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key }, { scenario: 'uncertain' }),
    );
    await h.drain();
    const r = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(r?.status).toBe('uncertain');
    expect(r?.expires_at).toBeUndefined();
    const retry = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key }, { scenario: 'uncertain' });
    expect(await codeOf(h.runtime.submit(caller(), retry))).toBe('idempotency.outcome_unknown');
    // after reconciliation the reservation completes with the reconciled outcome annotated
    h.clock.advance(5_000);
    await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    const after = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(after?.status).toBe('completed');
    // Completed by reference (the answer is read from the action and its transaction, not copied onto the item)...
    expect(after?.result).toBeUndefined();
    expect(after?.reconciled_by).toEqual(expect.any(String));
    // ...and the key answers the original result annotated with the reconciliation, without calling the provider.
    const calls = provider.calls.length;
    const replay = await h.runtime.submit(
      caller(),
      transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key }, { scenario: 'uncertain' }),
    );
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result).toMatchObject({
      replayed: true,
      metadata: { transaction_status: 'reconciled', reconciled_by: after?.reconciled_by, reconciliation: { terminal: true } },
    });
    expect(provider.calls.length).toBe(calls);
  });

  it('retention uses a TTL, configurable (here one hour): the key answers the result for the whole retention counted from the settlement, then it is free', async () => {
    const key = uid('k');
    const first = uid('a');
    await h.runtime.submit(caller(), plain(first, key));
    await h.drain();
    const settledAt = h.clock.now().getTime();
    const r = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    // Reserved for the retention plus the settlement allowance, so a prompt settlement need not rewrite it.
    expect(Date.parse(r?.expires_at as string) - settledAt).toBe((3_600 + IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS) * 1000);
    expect(r?.ttl).toBe(Math.ceil(Date.parse(r?.expires_at as string) / 1000));
    // The last moment of the retention counted from the settlement: still a replay, no second call.
    h.clock.advance(3_600_000 - 1);
    const calls = provider.calls.length;
    const replay = await h.runtime.submit(caller(), plain(uid('a'), key));
    expect(replay.action_result).toMatchObject({ status: 'completed', replayed: true, metadata: { replayed_from: first } });
    expect(provider.calls.length).toBe(calls);
    // Past the reservation's expiry the key is free: the same request is a new action.
    h.clock.advanceTo(Date.parse(r?.expires_at as string));
    expect(await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key })).toBeUndefined();
    expect((await h.runtime.submit(caller(), plain(uid('a'), key))).disposition).toBe('accepted');
    await h.drain();
    expect(provider.calls.length).toBe(calls + 1);
  });

  it('a settlement later than the allowance completes the reservation in its own write, restarting the retention: the key answers for the whole of it', async () => {
    const key = uid('k');
    const first = uid('a');
    await h.runtime.submit(caller(), plain(first, key));
    // The attempt runs only after the allowance (a long queue wait): the reservation as admitted would end too early.
    h.clock.advance(IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS * 1000 + 1);
    await h.drain();
    const settledAt = h.clock.now().getTime();
    const action = await h.stores.actions.get({ tenant_id: TENANT, action_id: first });
    const r = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(r).toMatchObject({ status: 'completed', fence: 0, action_id: first, result: action?.result });
    expect(Date.parse(r?.expires_at as string) - settledAt).toBe(3_600_000);
    h.clock.advance(3_600_000 - 1);
    const calls = provider.calls.length;
    const replay = await h.runtime.submit(caller(), plain(uid('a'), key));
    expect(replay.action_result).toMatchObject({ status: 'completed', replayed: true, metadata: { replayed_from: first } });
    expect(provider.calls.length).toBe(calls);
  });

  it('an action cancelled before its attempt: the key answers the cancellation, and nothing runs', async () => {
    const key = uid('k');
    const first = uid('a');
    await h.runtime.submit(caller(), plain(first, key));
    expect((await h.runtime.cancel(caller(), TENANT, first)).action_result.status).toBe('cancelled');
    const calls = provider.calls.length;
    const replay = await h.runtime.submit(caller(), plain(uid('a'), key));
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result).toMatchObject({ status: 'cancelled', replayed: true, metadata: { replayed_from: first } });
    await h.drain();
    expect(provider.calls.length).toBe(calls);
  });

  it('a capability that requires an idempotency key rejects an action without one before any write', async () => {
    const a = uid('a');
    expect(await codeOf(h.runtime.submit(caller(), transfer(a, { capability_id: 'pay.idempotent', transaction: { mode: 'execute' } })))).toBe(
      'runtime.idempotency_key_required',
    );
    expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: a })).toBeUndefined();
  });
});

describe('Previews reserve their idempotency key too', () => {
  const preview = (mode: 'plan' | 'dry_run', id: string, key: string, input: Record<string, unknown> = {}) => ({
    ...transfer(id, { transaction: { mode } }, input),
    idempotency_key: key,
  });

  for (const mode of ['plan', 'dry_run'] as const) {
    it(`${mode}: another request with the key is idempotency.fingerprint_mismatch; the same request replays the first result`, async () => {
      const key = uid('k');
      const first = uid('a');
      const out = await h.runtime.submit(caller(), preview(mode, first, key, { amount: 10 }));
      expect(out.action_result.status).toBe('completed');
      expect(await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key })).toMatchObject({ status: 'completed', action_id: first });
      const other = uid('a');
      expect(await codeOf(h.runtime.submit(caller(), preview(mode, other, key, { amount: 20 })))).toBe('idempotency.fingerprint_mismatch');
      const again = uid('a');
      const replay = await h.runtime.submit(caller(), preview(mode, again, key, { amount: 10 }));
      expect(replay.disposition).toBe('replayed');
      expect(replay.action_result).toMatchObject({ status: 'completed', replayed: true, metadata: { replayed_from: first } });
      expect((replay.action_result.output as Record<string, unknown>)?.transaction_id).toBe(
        (out.action_result.output as Record<string, unknown>)?.transaction_id,
      );
    });
  }
});

describe('An action kept for less time than its key', () => {
  let short: Harness;
  const shortProvider = new TestProvider();
  beforeAll(async () => {
    short = await createHarness({
      connectors: [testConnector(shortProvider)],
      prefix: 'rt-idem-short',
      config: { idempotency: { retention_seconds: 3_600 }, action_retention_seconds: 3_600 },
    });
  });
  afterAll(async () => short.destroy());

  it('the settlement completes the reservation with the result, so the key does not depend on the action record once that expires', async () => {
    const key = uid('k');
    const first = uid('a');
    await short.runtime.submit(caller(), plain(first, key));
    await short.drain();
    const settledAt = short.clock.now().getTime();
    const action = await short.stores.actions.get({ tenant_id: TENANT, action_id: first });
    expect(action?.ttl).toBe(Math.ceil((settledAt + 3_600_000) / 1000));
    const r = await short.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(r).toMatchObject({ status: 'completed', action_id: first, result: action?.result });
    expect(Date.parse(r?.expires_at as string) - settledAt).toBe(3_600_000);
    const replay = await short.runtime.submit(caller(), plain(uid('a'), key));
    expect(replay.action_result).toMatchObject({ status: 'completed', replayed: true, metadata: { replayed_from: first } });
    expect(shortProvider.calls).toHaveLength(1);
  });

  it('a reconciliation completes the uncertain reservation with a copy of the annotated result, not a reference the action would not outlive', async () => {
    const key = uid('k');
    const tx = uid('tx');
    const submit = () =>
      short.runtime.submit(
        caller(),
        transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key }, { scenario: 'uncertain' }),
      );
    await submit();
    await short.drain();
    short.clock.advance(5_000);
    await short.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    const r = await short.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(r).toMatchObject({ status: 'completed', reconciled_by: expect.any(String) });
    expect(r?.result?.metadata).toMatchObject({ transaction_status: 'reconciled', reconciled_by: r?.reconciled_by, reconciliation: { terminal: true } });
    const calls = shortProvider.calls.length;
    const replay = await submit();
    expect(replay.action_result).toMatchObject({ replayed: true, metadata: r?.result?.metadata ?? {} });
    expect(shortProvider.calls).toHaveLength(calls);
  });
});
