/**
 * Transactions page: "Compensation is a new governed action" and the
 * CompensationContract declarations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer, type ScenarioName } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, errorOf, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
const WINDOW = 60 * 60_000;
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider, { compensationWindowMs: WINDOW })], prefix: 'rt-comp' });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });

async function executed(scenario: ScenarioName = 'ok', capability = 'pay.transfer', mode: 'execute' | 'none' = 'execute') {
  const a = uid('a');
  const tx = uid('tx');
  await h.runtime.submit(caller(), {
    ...transfer(a, mode === 'execute' ? { transaction: { mode, transaction_id: tx } } : {}, { scenario }),
    capability_id: capability,
  });
  await h.drain();
  return { a, tx };
}
const compensate = (target: string, extra: Record<string, unknown> = {}, capability = 'pay.transfer', input: Record<string, unknown> = {}) => ({
  ...transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: target }, ...extra }, input),
  capability_id: capability,
});

describe('Compensation is a new governed action', () => {
  it('compensate is admitted only when the capability compensation mode is supported or best_effort', async () => {
    const { a } = await executed('ok', 'pay.final');
    expect(await codeOf(h.runtime.submit(caller(), compensate(a, {}, 'pay.final')))).toBe('runtime.compensation_not_supported');
    const plain = await executed('ok', 'pay.echo', 'none');
    expect(await codeOf(h.runtime.submit(caller(), compensate(plain.a, {}, 'pay.echo')))).toBe('runtime.compensation_not_supported');
  });

  it('compensate is admitted only when the action names compensation_for', async () => {
    const bare = transfer(uid('k'), { transaction: { mode: 'compensate' } });
    expect(await codeOf(h.runtime.submit(caller(), bare))).toBe('envelope.compensate_requires_compensation_for');
  });

  it('the target normally needs a completed action result', async () => {
    const ok = await executed();
    expect((await h.runtime.submit(caller(), compensate(ok.a))).disposition).toBe('accepted');
    await h.drain();
    const failed = await executed('fail');
    expect(await codeOf(h.runtime.submit(caller(), compensate(failed.a)))).toBe('runtime.compensation_target_ineligible');
    expect(await codeOf(h.runtime.submit(caller(), compensate(uid('nobody'))))).toBe('runtime.compensation_target_not_found');
  });

  it('a compensate rejected after its key was reserved gives the key back: the corrected request with the same key is admitted', async () => {
    const key = uid('key');
    expect(await codeOf(h.runtime.submit(caller(), compensate(uid('nobody'), { idempotency_key: key })))).toBe('runtime.compensation_target_not_found');
    expect(await h.stores.idempotency.get({ tenant_id: TENANT, principal_id: caller().principal.id, key })).toBeUndefined();
    const ok = await executed();
    const corrected = compensate(ok.a, { idempotency_key: key });
    expect((await h.runtime.submit(caller(), corrected)).disposition).toBe('accepted');
    await h.drain();
    // The key now answers the compensation's result: the same request again is a replay that calls nothing.
    const calls = provider.calls.length;
    const again = await h.runtime.submit(caller(), { ...corrected, id: uid('k') });
    expect(again.disposition).toBe('replayed');
    expect(again.action_result).toMatchObject({ status: 'completed', replayed: true, metadata: { replayed_from: corrected.id } });
    expect(await h.drain()).toEqual([]);
    expect(provider.calls.length).toBe(calls);
  });

  it('a narrow partial-failure path qualifies when a non-retryable error records both side_effects_committed: true and compensation_required: true', async () => {
    const { a, tx } = await executed('partial');
    const rec = await record(tx);
    expect(rec?.status).toBe('failed');
    expect(rec?.error?.details).toMatchObject({ side_effects_committed: true, compensation_required: true });
    expect((await h.runtime.submit(caller(), compensate(a))).disposition).toBe('accepted');
    await h.drain();
  });

  it('if the target has transaction records, one must be committed, or a failed record must carry that partial-side-effect evidence', async () => {
    const unknown = await executed('uncertain');
    expect((await record(unknown.tx))?.status).toBe('outcome_unknown');
    const err = await errorOf(h.runtime.submit(caller(), compensate(unknown.a)));
    expect(err.code).toBe('runtime.compensation_target_ineligible');
    expect(err.details.status).toBe('outcome_unknown');
  });

  it('the optional compensation window is measured from the selected target record last update', async () => {
    const { a, tx } = await executed();
    const rec = await record(tx);
    h.clock.advance(WINDOW + 1);
    const err = await errorOf(h.runtime.submit(caller(), compensate(a)));
    expect(err.code).toBe('runtime.compensation_window_expired');
    expect(err.details).toMatchObject({ window_basis: rec?.updated_at, window_basis_kind: 'target_record_updated_at' });
  });

  it('a compensate whose record was created before a crash resumes on resubmission, reusing its record even once the window has closed', async () => {
    const { a } = await executed();
    const ctx = uid('ctx');
    const body = compensate(a, { transaction: { mode: 'compensate', compensation_for: a, transaction_id: ctx } });
    h.crash.arm('after_admission_before_enqueue');
    expect(await codeOf(h.runtime.submit(caller(), body))).toBe('runtime.crash_injected');
    const admitted = await record(ctx);
    expect(admitted).toMatchObject({ status: 'compensating', mode: 'compensate', action_id: body.id, compensation_for: a });
    // The admission read nothing of its own record before creating it; the resumed one is refused the creation and
    // goes on with the existing record, and one past the window reads it rather than abandoning it.
    h.clock.advance(WINDOW + 1);
    expect((await h.runtime.submit(caller(), body)).disposition).toBe('accepted');
    await h.drain();
    const settled = await record(ctx);
    expect(settled?.created_at).toBe(admitted?.created_at);
    expect(settled?.status).toBe('compensated');
  });

  it('without a transaction record the window uses the RFC 3339 original_completed_at from action metadata, marked as caller-carried', async () => {
    const plain = await executed('ok', 'pay.transfer', 'none');
    // plain invocations have no transaction record
    const noBasis = await errorOf(h.runtime.submit(caller(), compensate(plain.a)));
    expect(noBasis.code).toBe('runtime.compensation_window_unverifiable');
    const stale = new Date(Date.parse(h.clock.iso()) - WINDOW - 1).toISOString();
    expect(await codeOf(h.runtime.submit(caller(), compensate(plain.a, { metadata: { observability: { original_completed_at: stale } } })))).toBe(
      'runtime.compensation_window_expired',
    );
    const k = compensate(plain.a, { metadata: { observability: { original_completed_at: h.clock.iso() } } });
    await h.runtime.submit(caller(), k);
    const own = await h.table.store.get({ tenant_id: TENANT, action_id: k.id });
    expect(own?.data.compensation).toMatchObject({ window_basis_kind: 'caller_carried_original_completed_at', window_basis_caller_carried: true });
    await h.drain();
  });

  it('the runtime creates a separate compensating transaction record for the new action', async () => {
    const { a, tx } = await executed();
    const k = compensate(a);
    const out = await h.runtime.submit(caller(), { action: k, transaction_id: uid('ktx'), requested_by: caller().principal });
    const own = out.transaction_result;
    expect(own?.transaction_id).not.toBe(tx);
    expect(own?.status).toBe('compensating');
    const rec = await h.table.store.get({ tenant_id: TENANT, transaction_id: own?.transaction_id as string });
    expect(rec).toMatchObject({ mode: 'compensate', compensation_for: a, action_id: k.id });
    expect((await record(tx))?.status).toBe('committed');
    await h.drain();
  });

  it('an alternate compensation capability rewrites the connector-facing action and adds the original result and coordinates to runtime memory context', async () => {
    const { a, tx } = await executed();
    // The record names the action that holds its result (the result stored once).
    const original = (await h.stores.actions.get({ tenant_id: TENANT, action_id: (await record(tx))?.result_ref as string }))?.result;
    const k = compensate(a);
    await h.runtime.submit(caller(), k);
    await h.drain();
    const call = provider.calls.find((c) => c.method === 'compensate' && c.action_id === k.id);
    expect(call?.capability_id).toBe('pay.refund');
    expect(call?.memory?.compensation).toMatchObject({
      original_action_id: a,
      original_transaction_id: tx,
      original_result: { status: 'completed', output: original?.output },
      requested_capability_id: 'pay.transfer',
      compensation_capability_id: 'pay.refund',
      compensation_action_id: k.id,
    });
  });

  it('the public action still identifies the governed compensation request', async () => {
    const { a } = await executed();
    const k = compensate(a);
    await h.runtime.submit(caller(), k);
    await h.drain();
    const got = await h.runtime.getAction(caller(), TENANT, k.id);
    expect(got.action_result).toMatchObject({ action_id: k.id, status: 'completed' });
    const own = await h.table.store.get({ tenant_id: TENANT, action_id: k.id });
    expect(own?.capability_id).toBe('pay.transfer');
  });

  it('a completed handler result settles the record as compensated', async () => {
    const { a } = await executed();
    const k = compensate(a);
    await h.runtime.submit(caller(), k);
    await h.drain();
    expect((await h.table.store.get({ tenant_id: TENANT, action_id: k.id }))?.status).toBe('compensated');
  });

  it('another result settles it as failed: a compensation target does not guarantee that reversal is possible', async () => {
    const { a } = await executed();
    const k = compensate(a, {}, 'pay.transfer', { scenario: 'fail' });
    await h.runtime.submit(caller(), k);
    await h.drain();
    expect((await h.table.store.get({ tenant_id: TENANT, action_id: k.id }))?.status).toBe('failed');
  });

  it('compensation can itself need approval: a contract with approval_required forces approval with a default tenant-policy approval', async () => {
    const { a } = await executed('ok', 'pay.voucher');
    const k = compensate(a, {}, 'pay.voucher');
    const out = await h.runtime.submit(caller(), k);
    expect(out.disposition).toBe('requires_human');
    const approval = (await h.runtime.listApprovals(caller(), TENANT)).items.find((x) => x.action_id === k.id);
    expect(approval?.policy.policy_id).toBe('tenant-default');
    const decided = await h.runtime.decideApproval(caller('approver-2'), TENANT, approval?.approval_id as string, { decision: 'approve' });
    expect(decided.action_result.status).toBe('accepted');
    await h.drain();
    const call = provider.calls.find((c) => c.method === 'compensate' && c.action_id === k.id);
    expect(call?.capability_id).toBe('pay.voucher');
    expect(call?.approval?.approval_ids).toEqual([approval?.approval_id]);
  });

  it('compensation can itself need idempotency: a repeated compensate with the same key replays', async () => {
    const { a } = await executed();
    const key = uid('key');
    const k1 = compensate(a, { idempotency_key: key });
    await h.runtime.submit(caller(), k1);
    await h.drain();
    const k2 = compensate(a, { idempotency_key: key });
    const again = await h.runtime.submit(caller(), k2);
    expect(again.disposition).toBe('replayed');
    expect(provider.calls.filter((c) => c.method === 'compensate' && c.action_id === k2.id)).toEqual([]);
  });
});
