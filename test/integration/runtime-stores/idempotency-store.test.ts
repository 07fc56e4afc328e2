/**
 * IdempotencyStore against DynamoDB Local: reservation scope and fingerprint,
 * in-flight conflicts, replay of completed results, owner fencing, uncertain
 * reservations that are never deleted, TTL retention and lazy expiry.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import {
  DEFAULT_IDEMPOTENCY_RETENTION_SECONDS,
  idempotencyFingerprint,
  idempotencyInFlightError,
  idempotencyKeyHash,
  idempotencyOutcomeUnknownError,
  type ReserveInput,
} from '../../../lib/ports/idempotency-store.js';
import type { ActionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import { RACERS, TENANT, OTHER_TENANT, PRINCIPAL, aipError, createStores, split, uid, type Stores } from './support.js';

let s: Stores;
beforeAll(async () => {
  s = await createStores('idem');
});
afterAll(async () => {
  await s?.table.destroy();
});

const fingerprint = (amount = 125) => idempotencyFingerprint({ capability_id: 'payments.transfer', input: { amount }, transaction: { mode: 'execute' } });
const result = (action_id: string): ActionResult => ({ action_id, status: 'completed', output: { transfer_id: 'tr-1' } });

function reserveInput(overrides: Partial<ReserveInput> = {}): ReserveInput {
  return { tenant_id: TENANT, principal_id: PRINCIPAL.id, key: uid('key'), fingerprint: fingerprint(), action_id: uid('act'), fence: 1, ...overrides };
}

const nowEpoch = () => Math.floor(Date.parse(s.clock.iso()) / 1000);

describe('reserve', () => {
  it('reserves a fresh key for the owning action and fence, with a 24 h TTL by default', async () => {
    const input = reserveInput();
    const out = await s.idempotency.reserve(input);
    expect(out.outcome).toBe('reserved');
    expect(out.reservation).toMatchObject({
      status: 'in_flight',
      action_id: input.action_id,
      fence: 1,
      fingerprint: input.fingerprint,
      revision: 1,
      key_hash: idempotencyKeyHash(input.key),
    });
    const raw = await s.rawItem(keys.idempotency(TENANT, PRINCIPAL.id, idempotencyKeyHash(input.key)));
    expect(raw?.ttl).toBe(nowEpoch() + DEFAULT_IDEMPOTENCY_RETENTION_SECONDS);
    expect(raw?.expires_at).toBe(new Date(Date.parse(s.clock.iso()) + 24 * 3600_000).toISOString());
    // The raw key is never stored.
    expect(JSON.stringify(raw)).not.toContain(input.key);
  });

  it('retention is configurable (store option and per reservation)', async () => {
    const short = s.idempotencyWith({ retentionSeconds: 600 });
    const a = reserveInput();
    await short.reserve(a);
    expect((await s.rawItem(keys.idempotency(TENANT, PRINCIPAL.id, idempotencyKeyHash(a.key))))?.ttl).toBe(nowEpoch() + 600);
    const b = reserveInput({ retention_seconds: 90 });
    await s.idempotency.reserve(b);
    expect((await s.rawItem(keys.idempotency(TENANT, PRINCIPAL.id, idempotencyKeyHash(b.key))))?.ttl).toBe(nowEpoch() + 90);
  });

  it('while the first request is in flight the same request gets in_flight with retry_after_ms (idempotency.in_flight, 409, retryable)', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    const again = await s.idempotency.reserve({ ...first, action_id: uid('act-retry') });
    expect(again.outcome).toBe('in_flight');
    if (again.outcome !== 'in_flight') throw new Error('unreachable');
    expect(again.retry_after_ms).toBe(1_000);
    expect(again.reservation.action_id).toBe(first.action_id);
    const err = idempotencyInFlightError(again);
    expect(err).toMatchObject({ code: 'idempotency.in_flight', retryAfterMs: 1_000 });
    expect(err.httpStatus).toBe(409);
    expect(err.retryable).toBe(true);
    expect(err.details).toMatchObject({ retry_after_ms: 1_000, action_id: first.action_id });
  });

  it('the same key with a different fingerprint is idempotency.fingerprint_mismatch (409), naming the mismatch', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    const err = await aipError(s.idempotency.reserve({ ...first, fingerprint: fingerprint(999) }));
    expect(err.code).toBe('idempotency.fingerprint_mismatch');
    expect(err.httpStatus).toBe(409);
    expect(err.details).toMatchObject({ reason: 'fingerprint_mismatch' });
  });

  it('scope is (tenant, principal, key): another principal or tenant with the same key reserves independently', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    expect((await s.idempotency.reserve({ ...first, principal_id: 'agent-2' })).outcome).toBe('reserved');
    expect((await s.idempotency.reserve({ ...first, tenant_id: OTHER_TENANT })).outcome).toBe('reserved');
  });

  it('keys containing `#` are safe (the key component is the key hash)', async () => {
    const input = reserveInput({ key: `a#b#${uid('k')}` });
    expect((await s.idempotency.reserve(input)).outcome).toBe('reserved');
    expect((await s.idempotency.reserve(input)).outcome).toBe('in_flight');
  });

  it(`${RACERS} concurrent reserves of the same key: exactly one reserved, the rest in_flight`, async () => {
    const key = uid('key');
    const outcomes = await Promise.all(Array.from({ length: RACERS }, (_, i) => s.idempotency.reserve(reserveInput({ key, action_id: `act-${i}` }))));
    const reserved = outcomes.filter((o) => o.outcome === 'reserved');
    expect(reserved).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === 'in_flight')).toHaveLength(RACERS - 1);
    const owner = reserved[0]?.reservation.action_id;
    for (const o of outcomes) expect(o.reservation.action_id).toBe(owner);
  });

  it('an expired reservation that TTL has not deleted yet counts as absent', async () => {
    const first = reserveInput({ retention_seconds: 60 });
    await s.idempotency.reserve(first);
    s.clock.advance(60_000);
    // Still physically present (DynamoDB deletes TTL'd items lazily) ...
    expect(await s.rawItem(keys.idempotency(TENANT, PRINCIPAL.id, idempotencyKeyHash(first.key)))).toBeDefined();
    // ... but reads as absent, and a new reservation (even with another fingerprint) takes the key.
    expect(await s.idempotency.get(first)).toBeUndefined();
    const next = await s.idempotency.reserve({ ...first, fingerprint: fingerprint(7), action_id: 'act-new' });
    expect(next.outcome).toBe('reserved');
    expect(next.reservation.action_id).toBe('act-new');
  });

  it('rejects malformed requests with idempotency.invalid_request', async () => {
    expect((await aipError(s.idempotency.reserve(reserveInput({ fingerprint: 'nope' })))).code).toBe('idempotency.invalid_request');
    expect((await aipError(s.idempotency.reserve(reserveInput({ key: 'has space' })))).code).toBe('idempotency.invalid_request');
    expect((await aipError(s.idempotency.reserve(reserveInput({ principal_id: 'a#b' })))).code).toBe('idempotency.invalid_request');
  });
});

describe('complete and replay', () => {
  it('the owner completes; the same request then replays the stored result', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    const done = await s.idempotency.complete({ ...first, result: result(first.action_id) });
    expect(done).toMatchObject({ status: 'completed', revision: 2, result: result(first.action_id) });
    const replay = await s.idempotency.reserve({ ...first, action_id: uid('act-retry') });
    expect(replay.outcome).toBe('completed');
    if (replay.outcome !== 'completed') throw new Error('unreachable');
    expect(replay.result).toEqual(result(first.action_id));
  });

  it('completion restarts the retention', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    s.clock.advance(3600_000);
    await s.idempotency.complete({ ...first, result: result(first.action_id) });
    expect((await s.rawItem(keys.idempotency(TENANT, PRINCIPAL.id, idempotencyKeyHash(first.key))))?.ttl).toBe(
      nowEpoch() + DEFAULT_IDEMPOTENCY_RETENTION_SECONDS,
    );
  });

  it('is fenced: another action or an older fence cannot complete (idempotency.not_owner)', async () => {
    const first = reserveInput({ fence: 3 });
    await s.idempotency.reserve(first);
    const zombie = await aipError(s.idempotency.complete({ ...first, fence: 2, result: result(first.action_id) }));
    expect(zombie.code).toBe('idempotency.not_owner');
    expect(zombie.details).toMatchObject({ reason: 'stale_fence', current_fence: 3 });
    const stranger = await aipError(s.idempotency.complete({ ...first, action_id: 'someone-else', result: result('someone-else') }));
    expect(stranger.details).toMatchObject({ reason: 'other_action' });
    expect((await s.idempotency.get(first))?.status).toBe('in_flight');
  });

  it('a later attempt of the owning action completes without adopting first (its settlement is fenced on the action)', async () => {
    const first = reserveInput({ fence: 0 });
    await s.idempotency.reserve(first);
    expect((await s.idempotency.complete({ ...first, fence: 3, result: result(first.action_id) })).status).toBe('completed');
  });

  it('a repeated complete by the owner keeps the first stored result', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    await s.idempotency.complete({ ...first, result: result(first.action_id) });
    const again = await s.idempotency.complete({ ...first, result: { action_id: first.action_id, status: 'completed', output: { other: true } } });
    expect(again.result).toEqual(result(first.action_id));
  });

  it('an expired reservation cannot be completed (it is absent)', async () => {
    const first = reserveInput({ retention_seconds: 5 });
    await s.idempotency.reserve(first);
    s.clock.advance(5_000);
    const err = await aipError(s.idempotency.complete({ ...first, result: result(first.action_id) }));
    expect(err.details).toMatchObject({ reason: 'expired' });
  });

  it('completing a missing reservation is idempotency.not_owner (not_found)', async () => {
    const err = await aipError(s.idempotency.complete({ ...reserveInput(), result: result('x') }));
    expect(err).toMatchObject({ code: 'idempotency.not_owner', details: { reason: 'not_found' } });
  });
});

describe('uncertain outcomes: kept, never deleted', () => {
  it('markUncertain keeps the reservation with no expiry; the same request gets `uncertain` (idempotency.outcome_unknown)', async () => {
    const first = reserveInput({ transaction_id: 'txn-u1' });
    await s.idempotency.reserve(first);
    const marked = await s.idempotency.markUncertain(first);
    expect(marked.status).toBe('uncertain');
    expect(marked.ttl).toBeUndefined();
    expect(marked.expires_at).toBeUndefined();
    const raw = await s.rawItem(keys.idempotency(TENANT, PRINCIPAL.id, idempotencyKeyHash(first.key)));
    expect(raw?.ttl).toBeUndefined();

    s.clock.advance(30 * 24 * 3600_000);
    const again = await s.idempotency.reserve({ ...first, action_id: uid('retry') });
    expect(again.outcome).toBe('uncertain');
    expect(again.reservation.action_id).toBe(first.action_id);
    const err = idempotencyOutcomeUnknownError(again);
    expect(err).toMatchObject({ code: 'idempotency.outcome_unknown', details: { action_id: first.action_id, transaction_id: 'txn-u1' } });
    expect(err.httpStatus).toBe(409);
  });

  it('an ambiguous error after the in-flight retention ran out still keeps the evidence', async () => {
    const first = reserveInput({ retention_seconds: 5 });
    await s.idempotency.reserve(first);
    s.clock.advance(10_000);
    expect((await s.idempotency.markUncertain(first)).status).toBe('uncertain');
    expect(await s.idempotency.get(first)).toMatchObject({ status: 'uncertain' });
  });

  it('reconciliation completes an uncertain reservation (owner fence), which then replays', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    await s.idempotency.markUncertain(first);
    await s.idempotency.complete({ ...first, result: result(first.action_id) });
    const replay = await s.idempotency.reserve(first);
    expect(replay.outcome).toBe('completed');
  });

  it('a reconciliation may complete it by reference: only an uncertain reservation, no result stored, and a held key answers `reconciled`', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    // Still in flight: the condition refuses (what a read before the write used to check).
    const early = await aipError(s.idempotency.complete({ ...first, reconciled_by: 'rec-1' }));
    expect(early.code).toBe('idempotency.not_owner');
    expect(early.details).toMatchObject({ current_status: 'in_flight' });
    await s.idempotency.markUncertain(first);
    // Another action, or an older fence, is refused as for any completion.
    expect((await aipError(s.idempotency.complete({ ...first, action_id: 'someone-else', reconciled_by: 'rec-1' }))).code).toBe('idempotency.not_owner');
    expect((await aipError(s.idempotency.complete({ ...first, fence: 0, reconciled_by: 'rec-1' }))).code).toBe('idempotency.not_owner');
    const done = await s.idempotency.complete({ ...first, fence: 3, reconciled_by: 'rec-1' });
    expect(done).toMatchObject({ status: 'completed', reconciled_by: 'rec-1' });
    expect(done?.result).toBeUndefined();
    expect(done?.expires_at).toBeDefined();
    const held = await s.idempotency.reserve(first);
    expect(held).toMatchObject({ outcome: 'reconciled', reservation: { action_id: first.action_id, reconciled_by: 'rec-1' } });
    // An empty reference is malformed input.
    expect((await aipError(s.idempotency.complete({ ...first, reconciled_by: '' }))).code).toBe('idempotency.invalid_request');
  });

  it('markUncertain is fenced too', async () => {
    const first = reserveInput({ fence: 2 });
    await s.idempotency.reserve(first);
    expect((await aipError(s.idempotency.markUncertain({ ...first, fence: 1 }))).code).toBe('idempotency.not_owner');
  });

  it('the store has no delete operation at all', () => {
    const proto = Object.getOwnPropertyNames(Object.getPrototypeOf(s.idempotency));
    expect(proto.filter((n) => /delete|remove|release/i.test(n))).toEqual([]);
  });
});

describe('expireRejected (an admission rejected after it reserved the key)', () => {
  it('ends the retention now, keeps the item, and lets the next request reserve the key afresh', async () => {
    const first = reserveInput();
    await s.idempotency.reserve(first);
    const expired = await s.idempotency.expireRejected(first);
    expect(expired).toMatchObject({ status: 'in_flight', revision: 2 });
    expect(await s.idempotency.get(first)).toBeUndefined();
    expect(await s.rawItem(keys.idempotency(TENANT, PRINCIPAL.id, idempotencyKeyHash(first.key)))).toBeDefined();
    s.clock.advance(1);
    const next = await s.idempotency.reserve({ ...first, action_id: uid('corrected'), fingerprint: 'f'.repeat(64) });
    expect(next.outcome).toBe('reserved');
  });

  it('is fenced on the owner and refuses anything but an in-flight reservation', async () => {
    const first = reserveInput({ fence: 0 });
    await s.idempotency.reserve(first);
    expect((await aipError(s.idempotency.expireRejected({ ...first, action_id: 'other' }))).details).toMatchObject({ reason: 'other_action' });
    expect((await aipError(s.idempotency.expireRejected({ ...first, fence: 1 }))).details).toMatchObject({ reason: 'stale_fence' });
    await s.idempotency.complete({ ...first, result: result(first.action_id) });
    expect((await aipError(s.idempotency.expireRejected(first))).details).toMatchObject({ reason: 'status_completed' });
    const uncertain = reserveInput();
    await s.idempotency.reserve(uncertain);
    await s.idempotency.markUncertain(uncertain);
    expect((await aipError(s.idempotency.expireRejected(uncertain))).details).toMatchObject({ reason: 'status_uncertain' });
    expect((await aipError(s.idempotency.expireRejected(reserveInput()))).details).toMatchObject({ reason: 'not_found' });
  });
});

describe('adopt', () => {
  it('a newer attempt of the same action takes the reservation over; the zombie can no longer complete', async () => {
    const first = reserveInput({ fence: 1 });
    await s.idempotency.reserve(first);
    const adopted = await s.idempotency.adopt({ ...first, fence: 2 });
    expect(adopted.fence).toBe(2);
    expect((await aipError(s.idempotency.complete({ ...first, fence: 1, result: result(first.action_id) }))).details).toMatchObject({ reason: 'stale_fence' });
    expect((await s.idempotency.complete({ ...first, fence: 2, result: result(first.action_id) })).status).toBe('completed');
  });

  it('refuses another action, an older or equal fence, and a completed reservation', async () => {
    const first = reserveInput({ fence: 2 });
    await s.idempotency.reserve(first);
    expect((await aipError(s.idempotency.adopt({ ...first, fence: 2 }))).details).toMatchObject({ reason: 'stale_fence' });
    expect((await aipError(s.idempotency.adopt({ ...first, action_id: 'other', fence: 9 }))).details).toMatchObject({ reason: 'other_action' });
    await s.idempotency.complete({ ...first, result: result(first.action_id) });
    expect((await aipError(s.idempotency.adopt({ ...first, fence: 3 }))).details).toMatchObject({ reason: 'status_completed' });
  });
});

describe('idempotencyFingerprint', () => {
  const base = {
    capability_id: 'payments.transfer',
    input: { amount: 1, currency: 'EUR' },
    transaction: { mode: 'execute' as const },
    identity: { tenant_id: TENANT, external_account_id: 'acct-1' },
  };

  it('covers capability, input, transaction context and account; ignores key order', () => {
    const f = idempotencyFingerprint(base);
    expect(f).toMatch(/^[0-9a-f]{64}$/);
    expect(idempotencyFingerprint({ ...base, input: { currency: 'EUR', amount: 1 } })).toBe(f);
    expect(idempotencyFingerprint({ ...base, capability_id: 'payments.refund' })).not.toBe(f);
    expect(idempotencyFingerprint({ ...base, input: { amount: 2, currency: 'EUR' } })).not.toBe(f);
    expect(idempotencyFingerprint({ ...base, transaction: { mode: 'plan' } })).not.toBe(f);
    expect(idempotencyFingerprint({ ...base, transaction: { mode: 'execute', transaction_id: 't-1' } })).not.toBe(f);
    expect(idempotencyFingerprint({ ...base, identity: { tenant_id: TENANT, external_account_id: 'acct-2' } })).not.toBe(f);
    const { transaction: _t, ...plain } = base;
    expect(idempotencyFingerprint(plain)).not.toBe(f);
  });

  it('ignores identity fields other than tenant and external account', () => {
    expect(idempotencyFingerprint({ ...base, identity: { ...base.identity, session_id: 's-9' } })).toBe(idempotencyFingerprint(base));
  });

  it('property: distinct inputs give distinct fingerprints; equal inputs equal ones', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })),
        fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })),
        (a, b) => {
          const fa = idempotencyFingerprint({ capability_id: 'c', input: a as never });
          const fb = idempotencyFingerprint({ capability_id: 'c', input: b as never });
          expect(fa === fb).toBe(JSON.stringify(sortDeep(a)) === JSON.stringify(sortDeep(b)));
        },
      ),
      { numRuns: 200 },
    );
  });
});

function sortDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortDeep);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortDeep((v as Record<string, unknown>)[k])]),
    );
  }
  return Object.is(v, -0) ? 0 : v;
}

describe('concurrency of the whole lifecycle', () => {
  it(`${RACERS} concurrent completes with mixed fences: only fences at or above the stored one complete (the first writes, the rest answer its result)`, async () => {
    const first = reserveInput({ fence: 4 });
    await s.idempotency.reserve(first);
    const { won, lost } = split(
      await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          s.idempotency.complete({ ...first, fence: (i % 5) + 1, result: { action_id: first.action_id, status: 'completed', output: { i } } }),
        ),
      ),
    );
    // Fence 4 and 5 callers: the first completes, later ones return the stored result unchanged; fences 1-3 are zombies.
    expect(won.every((r) => r.fence === 4)).toBe(true);
    const stored = (await s.idempotency.get(first))?.result;
    for (const r of won) expect(r.result).toEqual(stored);
    for (const e of lost) expect((e as { code: string }).code).toBe('idempotency.not_owner');
  });
});
