/**
 * ActionStore against DynamoDB Local: every operation, every lost race with
 * real concurrent writers, and the fenced lease (a zombie cannot settle).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import { planInputHash, type ActionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import { RACERS, TENANT, OTHER_TENANT, PRINCIPAL, action, aipError, createStores, split, type Stores } from './support.js';

let s: Stores;
beforeAll(async () => {
  s = await createStores('actions');
});
afterAll(async () => {
  await s?.table.destroy();
});

const completed = (action_id: string): ActionResult => ({ action_id, status: 'completed', output: { ok: true } });
const failed = (action_id: string): ActionResult => ({
  action_id,
  status: 'failed',
  error: { code: 'sla.timeout_exceeded', message: 'timed out', category: 'timeout', retryable: false },
});

async function running(owner = 'worker-1') {
  const a = action();
  const created = await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
  const leased = await s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner, ttl_ms: 30_000, expected_revision: created.revision });
  return { a, leased };
}

describe('create', () => {
  it('stores the validated envelope (with its input, for the worker), revision 1, fence 0, attempt 0', async () => {
    const a = action();
    const r = await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    expect(r).toMatchObject({
      tenant_id: TENANT,
      action_id: a.id,
      capability_id: a.capability_id,
      status: 'accepted',
      revision: 1,
      fence: 0,
      attempt: 0,
      mode: 'execute',
    });
    expect(r.transaction_id).toBe(a.transaction?.transaction_id);
    expect(r.idempotency_key).toBe(a.idempotency_key);
    expect(r.input_hash).toBe(planInputHash(a.capability_id, a.input));
    expect(await s.actions.get({ tenant_id: TENANT, action_id: a.id })).toEqual(r);
    expect((await s.actions.get({ tenant_id: TENANT, action_id: a.id }))?.action).toEqual(a);
  });

  it('is conditional on the action not existing: the second create is action.already_exists naming the current state', async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    const err = await aipError(s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a }));
    expect(err.code).toBe('action.already_exists');
    expect(err.details).toMatchObject({ action_id: a.id, current_status: 'accepted', current_revision: 1 });
  });

  it(`${RACERS} concurrent creates of one action ID: exactly one wins`, async () => {
    const a = action();
    const { won, lost } = split(
      await Promise.allSettled(Array.from({ length: RACERS }, () => s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a }))),
    );
    expect(won).toHaveLength(1);
    for (const e of lost) expect((e as { code: string }).code).toBe('action.already_exists');
  });

  it('is tenant-scoped: the same action ID in another tenant is another record', async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    await s.actions.create({ tenant_id: OTHER_TENANT, principal: PRINCIPAL, action: a });
    expect(await s.actions.get({ tenant_id: OTHER_TENANT, action_id: a.id })).toMatchObject({ tenant_id: OTHER_TENANT });
  });

  it('rejects a malformed envelope with action.invalid_record and writes nothing', async () => {
    const a = action();
    const bad = { ...a, input: 'not an object' } as unknown as typeof a;
    expect((await aipError(s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: bad }))).code).toBe('action.invalid_record');
    expect((await aipError(s.actions.create({ tenant_id: 'bad#tenant', principal: PRINCIPAL, action: a }))).code).toBe('action.invalid_record');
    expect(await s.actions.get({ tenant_id: TENANT, action_id: a.id })).toBeUndefined();
  });

  it('can record a rejection straight in a terminal status with the input redacted', async () => {
    const a = action();
    const r = await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a, status: 'failed', result: failed(a.id), redact_input: true });
    expect(r.action.input).toEqual({ redacted: true, hash: planInputHash(a.capability_id, a.input) });
    const raw = await s.rawItem(keys.action(TENANT, a.id));
    expect(raw?.input).toBeUndefined();
    expect(JSON.stringify(raw)).not.toContain('DE89370400440532013000');
  });
});

describe('transition (compare-and-set)', () => {
  it('moves between statuses on the expected status and revision and raises the revision by one', async () => {
    const a = action();
    const r1 = await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    const r2 = await s.actions.transition({
      tenant_id: TENANT,
      action_id: a.id,
      from: ['accepted'],
      to: 'requires_human',
      expected_revision: 1,
      patch: { approval_id: 'appr-1' },
    });
    expect(r2).toMatchObject({ status: 'requires_human', revision: r1.revision + 1, approval_id: 'appr-1' });
    const r3 = await s.actions.transition({ tenant_id: TENANT, action_id: a.id, from: ['requires_human'], to: 'accepted', expected_revision: 2 });
    expect(r3).toMatchObject({ status: 'accepted', revision: 3 });
  });

  it('a stale revision loses with action.state_conflict naming the current status and revision (from the same call)', async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    await s.actions.transition({ tenant_id: TENANT, action_id: a.id, from: ['accepted'], to: 'requires_human', expected_revision: 1 });
    const err = await aipError(
      s.actions.transition({
        tenant_id: TENANT,
        action_id: a.id,
        from: ['accepted'],
        to: 'cancelled',
        expected_revision: 1,
        patch: { result: { action_id: a.id, status: 'cancelled' } },
      }),
    );
    expect(err.code).toBe('action.state_conflict');
    expect(err.httpStatus).toBe(409);
    expect(err.details).toMatchObject({
      action_id: a.id,
      current_status: 'requires_human',
      current_revision: 2,
      expected_revision: 1,
      allowed_statuses: ['accepted'],
    });
  });

  it(`${RACERS} concurrent transitions from the same revision: exactly one wins, the rest see the winner's state`, async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    const { won, lost } = split(
      await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          s.actions.transition({
            tenant_id: TENANT,
            action_id: a.id,
            from: ['accepted'],
            to: 'requires_human',
            expected_revision: 1,
            patch: { approval_id: `appr-${i}` },
          }),
        ),
      ),
    );
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(RACERS - 1);
    for (const e of lost) expect(e).toMatchObject({ code: 'action.state_conflict', details: { current_status: 'requires_human', current_revision: 2 } });
    expect((await s.actions.get({ tenant_id: TENANT, action_id: a.id }))?.approval_id).toBe(won[0]?.approval_id);
  });

  it('never rewrites a terminal action: a terminal status in `from` is refused before anything is sent', async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a, status: 'cancelled', result: { action_id: a.id, status: 'cancelled' } });
    const err = await aipError(s.actions.transition({ tenant_id: TENANT, action_id: a.id, from: ['cancelled'], to: 'accepted', expected_revision: 1 }));
    expect(err.code).toBe('action.invalid_record');
    const conflict = await aipError(
      s.actions.transition({ tenant_id: TENANT, action_id: a.id, from: ['accepted'], to: 'requires_human', expected_revision: 1 }),
    );
    expect(conflict.details).toMatchObject({ current_status: 'cancelled' });
  });

  it('a terminal result must match the target status and the action ID', async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    expect(
      (
        await aipError(
          s.actions.transition({
            tenant_id: TENANT,
            action_id: a.id,
            from: ['accepted'],
            to: 'failed',
            expected_revision: 1,
            patch: { result: completed(a.id) },
          }),
        )
      ).code,
    ).toBe('action.invalid_record');
    expect(
      (
        await aipError(
          s.actions.transition({
            tenant_id: TENANT,
            action_id: a.id,
            from: ['accepted'],
            to: 'completed',
            expected_revision: 1,
            patch: { result: completed('other') },
          }),
        )
      ).code,
    ).toBe('action.invalid_record');
  });

  it('an action enters running only through acquireLease', async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    expect((await aipError(s.actions.transition({ tenant_id: TENANT, action_id: a.id, from: ['accepted'], to: 'running', expected_revision: 1 }))).code).toBe(
      'action.invalid_record',
    );
  });

  it('a missing action is action.not_found', async () => {
    const err = await aipError(
      s.actions.transition({ tenant_id: TENANT, action_id: 'missing-action', from: ['accepted'], to: 'requires_human', expected_revision: 1 }),
    );
    expect(err.code).toBe('action.not_found');
  });

  it('a fenced transition by an older fence is action.fence_stale', async () => {
    const { a, leased } = await running();
    const err = await aipError(
      s.actions.transition({
        tenant_id: TENANT,
        action_id: a.id,
        from: ['running'],
        to: 'requires_human',
        expected_revision: leased.revision,
        fence: leased.fence + 1,
      }),
    );
    expect(err.code).toBe('action.fence_stale');
    const ok = await s.actions.transition({
      tenant_id: TENANT,
      action_id: a.id,
      from: ['running'],
      to: 'requires_human',
      expected_revision: leased.revision,
      fence: leased.fence,
    });
    expect(ok.status).toBe('requires_human');
    expect(ok.lease_owner).toBeUndefined();
  });
});

describe('fenced attempt lease', () => {
  it('acquireLease raises fence and attempt by one and moves the action to running', async () => {
    const { leased } = await running('w-a');
    expect(leased).toMatchObject({ status: 'running', fence: 1, attempt: 1, revision: 2, lease_owner: 'w-a' });
    expect(leased.lease_expires_at).toBe(new Date(Date.parse(s.clock.iso()) + 30_000).toISOString());
  });

  it('refuses while another owner holds a live lease (action.lease_held, retryable), from the same call', async () => {
    const { a, leased } = await running('w-a');
    const err = await aipError(
      s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'w-b', ttl_ms: 30_000, expected_revision: leased.revision }),
    );
    expect(err.code).toBe('action.lease_held');
    expect(err.retryable).toBe(true);
    expect(err.details).toMatchObject({ lease_owner: 'w-a', fence: 1, current_status: 'running', current_revision: leased.revision });
  });

  it('after expiry a new attempt takes over with a higher fence, and the zombie (older fence) can neither settle nor renew', async () => {
    const { a, leased: first } = await running('zombie');
    s.clock.advance(30_001);
    const second = await s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'rescuer', ttl_ms: 30_000, expected_revision: first.revision });
    expect(second).toMatchObject({ fence: 2, attempt: 2, lease_owner: 'rescuer' });

    const settle = await aipError(s.actions.settle({ tenant_id: TENANT, action_id: a.id, fence: first.fence, to: 'completed', result: completed(a.id) }));
    expect(settle.code).toBe('action.fence_stale');
    expect(settle.details).toMatchObject({ held_fence: 1, current_fence: 2, current_status: 'running' });
    const renew = await aipError(s.actions.renewLease({ tenant_id: TENANT, action_id: a.id, owner: 'zombie', fence: first.fence, ttl_ms: 30_000 }));
    expect(renew.code).toBe('action.fence_stale');

    const done = await s.actions.settle({ tenant_id: TENANT, action_id: a.id, fence: second.fence, to: 'completed', result: completed(a.id) });
    expect(done).toMatchObject({ status: 'completed', fence: 2 });
    expect(done.lease_owner).toBeUndefined();
  });

  it(`${RACERS} concurrent acquireLease calls by different workers: exactly one lease is granted`, async () => {
    const a = action();
    const created = await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    const { won, lost } = split(
      await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: `w-${i}`, ttl_ms: 30_000, expected_revision: created.revision }),
        ),
      ),
    );
    expect(won).toHaveLength(1);
    expect(won[0]?.fence).toBe(1);
    for (const e of lost) expect(['action.lease_held', 'action.state_conflict']).toContain((e as { code: string }).code);
    expect((await s.actions.get({ tenant_id: TENANT, action_id: a.id }))?.lease_owner).toBe(won[0]?.lease_owner);
  });

  it(`${RACERS} concurrent settles, one per fence holder after takeovers: only the current fence settles`, async () => {
    const a = action();
    let r = await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    const fences: number[] = [];
    for (let i = 0; i < 5; i++) {
      r = await s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: `w-${i}`, ttl_ms: 1_000, expected_revision: r.revision });
      fences.push(r.fence);
      s.clock.advance(1_001);
    }
    const attempts = Array.from({ length: RACERS }, (_, i) => fences[i % fences.length] as number);
    const { won, lost } = split(
      await Promise.allSettled(
        attempts.map((fence) => s.actions.settle({ tenant_id: TENANT, action_id: a.id, fence, to: 'completed', result: completed(a.id) })),
      ),
    );
    expect(won).toHaveLength(1);
    expect(won[0]?.fence).toBe(5);
    for (const e of lost) expect(['action.fence_stale', 'action.state_conflict']).toContain((e as { code: string }).code);
  });

  it('renewLease extends the holder lease without changing the fence', async () => {
    const { a, leased } = await running('w-a');
    s.clock.advance(10_000);
    const renewed = await s.actions.renewLease({ tenant_id: TENANT, action_id: a.id, owner: 'w-a', fence: leased.fence, ttl_ms: 60_000 });
    expect(renewed.fence).toBe(leased.fence);
    expect(renewed.revision).toBe(leased.revision + 1);
    expect(renewed.lease_expires_at).toBe(new Date(Date.parse(s.clock.iso()) + 60_000).toISOString());
  });

  it('releaseLease gives the lease back unstarted: running, lease removed, released_fence = the fence, deferrals + 1; a new lease is fence + 1', async () => {
    const { a, leased } = await running('w-r');
    const released = await s.actions.releaseLease({ tenant_id: TENANT, action_id: a.id, owner: 'w-r', fence: leased.fence });
    expect(released).toMatchObject({ status: 'running', fence: leased.fence, released_fence: leased.fence, deferrals: 1, revision: leased.revision + 1 });
    expect(released.lease_owner).toBeUndefined();
    expect(released.lease_expires_at).toBeUndefined();
    // No live lease: the next attempt takes one at once (no expiry to wait for), and the count survives it.
    const next = await s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'w-s', ttl_ms: 30_000, expected_revision: released.revision });
    expect(next).toMatchObject({ fence: leased.fence + 1, released_fence: leased.fence, deferrals: 1 });
    const again = await s.actions.releaseLease({ tenant_id: TENANT, action_id: a.id, owner: 'w-s', fence: next.fence });
    expect(again).toMatchObject({ released_fence: next.fence, deferrals: 2 });
  });

  it('releaseLease is fenced: an older fence or another owner is action.fence_stale and writes nothing', async () => {
    const { a, leased: first } = await running('zombie-r');
    s.clock.advance(30_001);
    const second = await s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'rescuer-r', ttl_ms: 30_000, expected_revision: first.revision });
    const stale = await aipError(s.actions.releaseLease({ tenant_id: TENANT, action_id: a.id, owner: 'zombie-r', fence: first.fence }));
    expect(stale.code).toBe('action.fence_stale');
    expect(stale.details).toMatchObject({ held_fence: first.fence, current_fence: second.fence });
    const notOwner = await aipError(s.actions.releaseLease({ tenant_id: TENANT, action_id: a.id, owner: 'zombie-r', fence: second.fence }));
    expect(notOwner.code).toBe('action.fence_stale');
    expect(await s.actions.get({ tenant_id: TENANT, action_id: a.id })).toEqual(second);
  });

  it('a creation with a lease is the first lease: running, fence 1, attempt 1, revision 1, owner and expiry, the route pinned; another owner is refused until it expires', async () => {
    const a = action();
    const route = {
      tenant_id: TENANT,
      action_id: a.id,
      capability_id: a.capability_id,
      verified_tenant: TENANT,
      connector_id: 'payments',
      connector_instance: 'local',
      replica: 'local-0',
      endpoint: 'in-process',
      version: '1.0.0',
      manifest_hash: 'a'.repeat(64),
      policy_revision: '1',
      credential_revision: '0',
      health_revision: '0',
      admission_reservation: 'att-1',
      fence_token: 1,
      created_at: s.clock.iso(),
    };
    const created = await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a, lease: { owner: 'att-1', ttl_ms: 30_000, route } });
    expect(created).toMatchObject({ status: 'running', revision: 1, fence: 1, attempt: 1, lease_owner: 'att-1', route });
    expect(created.lease_expires_at).toBe(new Date(Date.parse(s.clock.iso()) + 30_000).toISOString());
    expect(await s.actions.get({ tenant_id: TENANT, action_id: a.id })).toEqual(created);
    const held = await aipError(s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'w-b', ttl_ms: 30_000, expected_revision: 1 }));
    expect(held.code).toBe('action.lease_held');
    s.clock.advance(30_001);
    const second = await s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'w-b', ttl_ms: 30_000, expected_revision: 1 });
    expect(second).toMatchObject({ status: 'running', revision: 2, fence: 2, attempt: 2, lease_owner: 'w-b', route });
  });

  it('only an accepted action is created leased, with a well-formed lease; nothing is written otherwise', async () => {
    const a = action();
    const lease = { owner: 'att-1', ttl_ms: 30_000 };
    expect((await aipError(s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a, status: 'requires_human', lease }))).code).toBe(
      'action.invalid_record',
    );
    expect((await aipError(s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a, lease: { owner: '', ttl_ms: 30_000 } }))).code).toBe(
      'action.invalid_record',
    );
    expect(await s.actions.get({ tenant_id: TENANT, action_id: a.id })).toBeUndefined();
  });

  it('rejects malformed lease requests', async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    expect((await aipError(s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: '', ttl_ms: 1_000, expected_revision: 1 }))).code).toBe(
      'action.invalid_record',
    );
    expect((await aipError(s.actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'w', ttl_ms: 0, expected_revision: 1 }))).code).toBe(
      'action.invalid_record',
    );
  });
});

describe('settle', () => {
  it('sets the result, releases the lease, and keeps the input when no redaction is required', async () => {
    const { a, leased } = await running();
    const done = await s.actions.settle({ tenant_id: TENANT, action_id: a.id, fence: leased.fence, to: 'failed', result: failed(a.id) });
    expect(done).toMatchObject({ status: 'failed', result: failed(a.id), revision: leased.revision + 1 });
    expect(done.action.input).toEqual(a.input);
    expect(done.lease_expires_at).toBeUndefined();
  });

  it('with redaction drops the raw input from the durable item and keeps {redacted: true, hash}', async () => {
    const { a, leased } = await running();
    const done = await s.actions.settle({
      tenant_id: TENANT,
      action_id: a.id,
      fence: leased.fence,
      to: 'completed',
      result: completed(a.id),
      redact_input: true,
    });
    const hash = planInputHash(a.capability_id, a.input);
    expect(done.input_redacted).toBe(true);
    expect(done.action.input).toEqual({ redacted: true, hash });
    const raw = await s.rawItem(keys.action(TENANT, a.id));
    expect(raw?.input).toBeUndefined();
    expect(JSON.stringify(raw)).not.toContain('DE89370400440532013000');
    expect((await s.actions.get({ tenant_id: TENANT, action_id: a.id }))?.action.input).toEqual({ redacted: true, hash });
  });

  it('stores the settlement facts its record is settled from (packed), and refuses malformed ones writing nothing', async () => {
    const { a, leased } = await running();
    const bad = await aipError(
      s.actions.settle({
        tenant_id: TENANT,
        action_id: a.id,
        fence: leased.fence,
        to: 'completed',
        result: completed(a.id),
        settlement: { attempt_id: 'att-1', provider_operation: { provider: '', operation_id: 'op_1' } },
      }),
    );
    expect(bad.code).toBe('action.invalid_record');
    const facts = { attempt_id: true as const, provider_operation: { provider: 'pay', operation_id: 'op_1' } };
    const done = await s.actions.settle({
      tenant_id: TENANT,
      action_id: a.id,
      fence: leased.fence,
      to: 'completed',
      result: completed(a.id),
      settlement: facts,
    });
    expect(done.settlement).toEqual(facts);
    expect((await s.actions.get({ tenant_id: TENANT, action_id: a.id }))?.settlement).toEqual(facts);
    expect((await s.rawItem(keys.action(TENANT, a.id)))?.settlement).toBeInstanceOf(Uint8Array);
  });

  it('sets the TTL attribute when a retention is requested', async () => {
    const { a, leased } = await running();
    await s.actions.settle({ tenant_id: TENANT, action_id: a.id, fence: leased.fence, to: 'completed', result: completed(a.id), retention_seconds: 3600 });
    const raw = await s.rawItem(keys.action(TENANT, a.id));
    expect(raw?.ttl).toBe(Math.floor(Date.parse(s.clock.iso()) / 1000) + 3600);
  });

  it('a second settle by the same fence loses (the action is terminal), naming the current state', async () => {
    const { a, leased } = await running();
    await s.actions.settle({ tenant_id: TENANT, action_id: a.id, fence: leased.fence, to: 'completed', result: completed(a.id) });
    const err = await aipError(s.actions.settle({ tenant_id: TENANT, action_id: a.id, fence: leased.fence, to: 'failed', result: failed(a.id) }));
    expect(err.code).toBe('action.state_conflict');
    expect(err.details).toMatchObject({ current_status: 'completed' });
  });

  it('honours an optional expected revision', async () => {
    const { a, leased } = await running();
    const err = await aipError(
      s.actions.settle({
        tenant_id: TENANT,
        action_id: a.id,
        fence: leased.fence,
        to: 'completed',
        result: completed(a.id),
        expected_revision: leased.revision - 1,
      }),
    );
    expect(err.code).toBe('action.state_conflict');
  });
});

describe('requestCancel', () => {
  it('records the request once; a second request returns the record unchanged', async () => {
    const { a, leased } = await running();
    const first = await s.actions.requestCancel({ tenant_id: TENANT, action_id: a.id });
    expect(first.cancel_requested_at).toBe(s.clock.iso());
    expect(first.revision).toBe(leased.revision + 1);
    s.clock.advance(5_000);
    const second = await s.actions.requestCancel({ tenant_id: TENANT, action_id: a.id });
    expect(second).toEqual(first);
  });

  it('a terminal action cannot be cancelled (action.state_conflict, reason terminal)', async () => {
    const { a, leased } = await running();
    await s.actions.settle({ tenant_id: TENANT, action_id: a.id, fence: leased.fence, to: 'completed', result: completed(a.id) });
    const err = await aipError(s.actions.requestCancel({ tenant_id: TENANT, action_id: a.id }));
    expect(err.code).toBe('action.state_conflict');
    expect(err.details).toMatchObject({ reason: 'terminal', current_status: 'completed' });
  });

  it('a cancel request does not take the lease away: the holder still settles `cancelled`', async () => {
    const { a, leased } = await running();
    await s.actions.requestCancel({ tenant_id: TENANT, action_id: a.id });
    const done = await s.actions.settle({
      tenant_id: TENANT,
      action_id: a.id,
      fence: leased.fence,
      to: 'cancelled',
      result: { action_id: a.id, status: 'cancelled' },
    });
    expect(done.status).toBe('cancelled');
  });

  it('missing action: action.not_found', async () => {
    expect((await aipError(s.actions.requestCancel({ tenant_id: TENANT, action_id: 'nope' }))).code).toBe('action.not_found');
  });
});

describe('get', () => {
  it('returns undefined for an unknown action and never crosses tenants', async () => {
    const a = action();
    await s.actions.create({ tenant_id: TENANT, principal: PRINCIPAL, action: a });
    expect(await s.actions.get({ tenant_id: OTHER_TENANT, action_id: a.id })).toBeUndefined();
    expect(await s.actions.get({ tenant_id: TENANT, action_id: 'unknown' })).toBeUndefined();
  });
});
