/**
 * The folded admission (one composite write: action + reservation + prepared
 * record + first receipt) and the folded settlement, driven through the
 * Runtime with real concurrent submitters on DynamoDB Local and the real
 * queue: each refusal maps to the typed outcome of the separate writes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

const RACERS = 50;
let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-atomic' });
});
afterAll(async () => h.destroy());

const exec = (a: string, key: string) => transfer(a, { transaction: { mode: 'execute' }, idempotency_key: key });

describe('Folded admission through the runtime', () => {
  it(`${RACERS} concurrent executes with the same idempotency key: one is accepted, every other is idempotency.in_flight and recorded failed; one provider call`, async () => {
    const key = uid('k');
    const ids = Array.from({ length: RACERS }, () => uid('a'));
    const results = await Promise.allSettled(ids.map((a) => h.runtime.submit(caller(), exec(a, key))));
    const accepted = results.filter((r) => r.status === 'fulfilled');
    expect(accepted).toHaveLength(1);
    const winner = (accepted[0] as PromiseFulfilledResult<{ action_id: string; disposition: string }>).value;
    expect(winner.disposition).toBe('accepted');
    for (const r of results) {
      if (r.status === 'fulfilled') continue;
      expect(isAipError(r.reason, 'idempotency.in_flight')).toBe(true);
      expect((r.reason as { details: Record<string, unknown> }).details.action_id).toBe(winner.action_id);
    }
    for (const a of ids) {
      if (a === winner.action_id) continue;
      expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: a })).toMatchObject({
        status: 'failed',
        result: { error: { code: 'idempotency.in_flight' } },
      });
    }
    await h.drain();
    const txId = (await h.stores.actions.get({ tenant_id: TENANT, action_id: winner.action_id }))?.transaction_id as string;
    expect((await h.table.store.get({ tenant_id: TENANT, transaction_id: txId }))?.status).toBe('committed');
    expect(provider.count('invoke', txId)).toBe(1);
    // Completed: a new action with the same key replays the stored result, its own record created finished.
    const late = uid('a');
    const replay = await h.runtime.submit(caller(), exec(late, key));
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result).toMatchObject({ status: 'completed', replayed: true, metadata: { replayed_from: winner.action_id } });
    expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: late })).toMatchObject({
      status: 'completed',
      revision: 1,
      result: { replayed: true, action_id: late },
    });
  });

  it(`${RACERS} concurrent submissions of the same action: one admission, every other is runtime.attempt_in_flight, and the action still runs to completion`, async () => {
    const a = uid('a');
    const key = uid('k');
    const results = await Promise.allSettled(Array.from({ length: RACERS }, () => h.runtime.submit(caller(), exec(a, key))));
    const accepted = results.filter((r) => r.status === 'fulfilled');
    expect(accepted).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(isAipError(r.reason, 'runtime.attempt_in_flight')).toBe(true);
    // The rejected resubmissions are not recorded on the action: it is still waiting for its attempt.
    expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: a })).toMatchObject({ status: 'accepted', fence: 0 });
    await h.drain();
    const action = await h.stores.actions.get({ tenant_id: TENANT, action_id: a });
    expect(action?.status).toBe('completed');
    expect(provider.count('invoke', action?.transaction_id as string)).toBe(1);
    // The key is held by that action and answers its result: the same request from a new action ID is a replay.
    const replay = await h.runtime.submit(caller(), exec(uid('a'), key));
    expect(replay.action_result).toMatchObject({ status: 'completed', replayed: true, output: action?.result?.output, metadata: { replayed_from: a } });
    expect(await h.drain()).toEqual([]);
    expect(provider.count('invoke', action?.transaction_id as string)).toBe(1);
    expect((await h.verifyChain(action?.transaction_id as string)).valid).toBe(true);
  });

  it('a different request under the same key: idempotency.fingerprint_mismatch, the new action recorded failed and no transaction created', async () => {
    const key = uid('k');
    await h.runtime.submit(caller(), exec(uid('a'), key));
    const b = uid('a');
    const err = await h.runtime.submit(caller(), { ...exec(b, key), input: { amount: 7, to: 'acct-b' } }).catch((e: unknown) => e);
    expect(isAipError(err, 'idempotency.fingerprint_mismatch')).toBe(true);
    const rec = await h.stores.actions.get({ tenant_id: TENANT, action_id: b });
    expect(rec).toMatchObject({ status: 'failed', revision: 1, result: { error: { code: 'idempotency.fingerprint_mismatch' } } });
    expect(await h.table.store.get({ tenant_id: TENANT, transaction_id: rec?.transaction_id as string })).toBeUndefined();
    await h.drain();
  });

  it('a planned commit is rechecked, then admitted by one write that claims the plan; a retry under the same key answers from the reservation (in flight, then replayed)', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }));
    const key = uid('k');
    const commit = (id: string) => transfer(id, { transaction: { mode: 'commit', plan_id: `plan:${tx}` }, idempotency_key: key });
    const first = uid('c');
    expect((await h.runtime.submit(caller(), commit(first))).disposition).toBe('accepted');
    expect(await h.table.store.get({ tenant_id: TENANT, transaction_id: tx })).toMatchObject({ status: 'committing', action_id: first });
    expect(await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key })).toMatchObject({ status: 'in_flight', action_id: first });
    const err = await h.runtime.submit(caller(), commit(uid('c'))).catch((e: unknown) => e);
    expect(isAipError(err, 'idempotency.in_flight')).toBe(true);
    await h.drain();
    expect((await h.table.store.get({ tenant_id: TENANT, transaction_id: tx }))?.status).toBe('committed');
    const replay = await h.runtime.submit(caller(), commit(uid('c')));
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result).toMatchObject({ status: 'completed', replayed: true, metadata: { replayed_from: first } });
    expect(provider.count('commit', tx)).toBe(1);
  });

  it('settlement is one write: the transaction and the action are settled together, and from then on the key answers their result', async () => {
    const a = uid('a');
    const key = uid('k');
    await h.runtime.submit(caller(), exec(a, key));
    const [outcome] = await h.drain();
    expect(outcome).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    const action = await h.stores.actions.get({ tenant_id: TENANT, action_id: a });
    const txn = await h.table.store.get({ tenant_id: TENANT, transaction_id: action?.transaction_id as string });
    expect(action).toMatchObject({ status: 'completed', fence: 1 });
    // The result is stored once, on the action; the record names it (docs/table-design.md, "The result stored once").
    expect(txn).toMatchObject({ status: 'committed', result_ref: a });
    expect(txn?.result).toBeUndefined();
    // The reservation stays as admitted (fence 0: the attempt does not adopt it) and is not rewritten ...
    expect(await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: 'agent-1', key })).toMatchObject({ status: 'in_flight', fence: 0, action_id: a });
    // ... yet the key answers the settled result, never idempotency.in_flight: the settlement is what made it answer.
    const calls = provider.count('invoke', txn?.transaction_id);
    const late = uid('a');
    const replay = await h.runtime.submit(caller(), exec(late, key));
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result).toMatchObject({ ...action?.result, action_id: a, replayed: true, metadata: { replayed_from: a } });
    expect(await h.drain()).toEqual([]);
    expect(provider.count('invoke', txn?.transaction_id)).toBe(calls);
  });
});
