/**
 * Pipeline step 7: idempotency reservations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyFingerprint } from '../../../lib/ports/idempotency-store.js';
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

  it('a reservation is owned by its action: the attempt completes it in the commit that settles the fenced action, without adopting it first', async () => {
    const key = uid('k');
    const a = uid('a');
    await h.runtime.submit(caller(), plain(a, key));
    expect((await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key }))?.fence).toBe(0);
    await h.drain();
    const r = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(r).toMatchObject({ status: 'completed', fence: 0, action_id: a });
    expect((await h.stores.actions.get({ tenant_id: TENANT, action_id: a }))?.fence).toBe(1);
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
    expect(after?.result?.metadata).toMatchObject({ transaction_status: 'reconciled' });
  });

  it('retention uses a TTL, configurable (here one hour)', async () => {
    const key = uid('k');
    await h.runtime.submit(caller(), plain(uid('a'), key));
    await h.drain();
    const r = await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key });
    expect(Date.parse(r?.expires_at as string) - Date.parse(h.clock.iso())).toBe(3_600_000);
    h.clock.advance(3_600_001);
    expect(await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key })).toBeUndefined();
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
