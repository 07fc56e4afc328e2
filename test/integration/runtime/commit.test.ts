/**
 * Transactions page: "What a planned commit rechecks", "Commit ownership is
 * atomic", and the direct-commit branch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, errorOf, operator, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-commit' });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });

async function planned(input: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, capability = 'pay.transfer') {
  const tx = uid('tx');
  await h.runtime.submit(caller(), {
    ...transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx }, ...extra }, input),
    capability_id: capability,
  });
  return tx;
}
const commit = (tx: string, input: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, capability = 'pay.transfer') => ({
  ...transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx}` }, ...extra }, input),
  capability_id: capability,
});

describe('What a planned commit rechecks', () => {
  it('the plan exists (else the commit is rejected)', async () => {
    expect(await codeOf(h.runtime.submit(caller(), commit(uid('missing'))))).toBe('runtime.plan_not_found');
  });

  it('its transaction record is still planned', async () => {
    const tx = await planned();
    await h.runtime.submit(caller(), commit(tx));
    expect(await codeOf(h.runtime.submit(caller(), commit(tx)))).toBe('runtime.plan_not_planned');
    await h.drain();
  });

  it('a resubmission of a commit whose action was read before its attempt started, and whose transaction has moved past committing since, is its own claim (not plan_not_planned)', async () => {
    const tx = await planned();
    const c = commit(tx);
    await h.runtime.submit(caller(), c);
    // The attempt ran to the end between the duplicate's read of the action (still accepted, fence 0) and its recheck of the plan.
    const claimed = await record(tx);
    await h.table.store.settle({ tenant_id: TENANT, transaction_id: tx, expected_revision: claimed?.revision as number, to: 'committed' });
    expect((await h.runtime.submit(caller(), c)).disposition).toBe('accepted');
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
  });

  it('the current capability ID matches the planned capability', async () => {
    const tx = await planned();
    expect(await codeOf(h.runtime.submit(caller(), commit(tx, {}, {}, 'pay.quote')))).toBe('runtime.plan_capability_mismatch');
  });

  it('the committing principal ID and kind match the planning principal', async () => {
    const tx = await planned();
    // Another principal may not even see the plan: the answer of a plan that does not exist (docs/authority.md).
    expect(await codeOf(h.runtime.submit(caller('agent-2'), commit(tx)))).toBe('runtime.plan_not_found');
    // The same subject under another kind claim owns the plan (one identity per principal, docs/authority.md),
    // and the page's commit check still wants the planning kind.
    const sameIdOtherKind = { ...caller(), principal: { id: 'agent-1', kind: 'user' as const } };
    expect(await codeOf(h.runtime.submit(sameIdOtherKind, commit(tx)))).toBe('runtime.plan_principal_mismatch');
    // An operator may see it, and is told why it cannot commit it.
    expect(await codeOf(h.runtime.submit({ ...operator, scopes: [...operator.scopes, 'pay:write'] }, commit(tx)))).toBe('runtime.plan_principal_mismatch');
  });

  it('the plan has not expired', async () => {
    const tx = await planned();
    h.clock.advance(15 * 60_000);
    expect(await codeOf(h.runtime.submit(caller(), commit(tx)))).toBe('runtime.plan_expired');
    expect((await record(tx))?.status).toBe('failed');
  });

  it('a supplied transaction ID matches the planned transaction ID', async () => {
    const tx = await planned();
    const c = transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx}`, transaction_id: uid('other') } });
    expect(await codeOf(h.runtime.submit(caller(), c))).toBe('runtime.plan_transaction_mismatch');
  });

  it('the hash of the current capability ID and input matches the plan hash', async () => {
    const tx = await planned();
    expect(await codeOf(h.runtime.submit(caller(), commit(tx, { amount: 101 })))).toBe('runtime.plan_input_mismatch');
  });

  it('presence of identity context matches, and its tenant and external account equal the planned values', async () => {
    const tx = await planned();
    const { identity: _omit, ...noIdentity } = commit(tx);
    const absent = await errorOf(h.runtime.submit(caller(), noIdentity));
    expect(absent.code).toBe('runtime.plan_identity_mismatch');
    expect(absent.details.fields).toEqual(['presence']);
    const account = await errorOf(h.runtime.submit(caller(), commit(tx, {}, { identity: { tenant_id: TENANT, external_account_id: 'acct-9' } })));
    expect(account.details.fields).toEqual(['external_account_id']);
  });

  it('the commit check does not compare every field retained in the plan (other identity fields, metadata, idempotency key, planning action ID)', async () => {
    const tx = await planned();
    const c = commit(
      tx,
      {},
      {
        // user_id absent from the plan (it must name the caller, runtime.identity_mismatch otherwise).
        identity: { tenant_id: TENANT, external_account_id: 'acct-1', user_id: 'agent-1', session_id: 's-2' },
        metadata: { labels: { purpose: 'other' } },
        idempotency_key: `k-${uid('x')}`,
      },
    );
    expect((await h.runtime.submit(caller(), c)).disposition).toBe('accepted');
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
  });

  it('current capability, authorization, schema and idempotency checks still run through the ordinary action path', async () => {
    const tx = await planned();
    const noScope = { ...caller(), scopes: [] };
    expect(await codeOf(h.runtime.submit(noScope, commit(tx)))).toBe('runtime.scope_missing');
    expect(await codeOf(h.runtime.submit(caller(), commit(tx, { amount: 'x' as never })))).toBe('runtime.input_invalid');
    expect((await record(tx))?.status).toBe('planned');
  });
});

describe('Commit ownership is atomic', () => {
  it('claim_plan changes one durable record from planned to committing, associates it with the commit action ID, and increments its revision', async () => {
    const tx = await planned();
    const before = await record(tx);
    const c = commit(tx);
    await h.runtime.submit(caller(), c);
    const after = await record(tx);
    expect(after).toMatchObject({ status: 'committing', action_id: c.id, revision: (before?.revision ?? 0) + 1 });
    expect(after?.plan?.planning_action_id).toBe(before?.action_id);
    await h.drain();
  });

  it('a competing claimant observes a non-planned state and is rejected: exactly one of many concurrent commits wins', async () => {
    const tx = await planned();
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => h.runtime.submit(caller(), commit(tx))));
    const won = results.filter((r) => r.status === 'fulfilled' && r.value.disposition === 'accepted');
    const lost = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.code as string);
    expect(won).toHaveLength(1);
    expect(new Set(lost)).toEqual(new Set(lost.filter((c) => c === 'runtime.plan_claim_conflict' || c === 'runtime.plan_not_planned')));
    expect(lost).toHaveLength(7);
    await h.drain();
    expect(provider.count('commit', tx)).toBe(1);
  });

  it('a plan ID does not prove commit ownership: the claim does', async () => {
    const tx = await planned();
    const first = commit(tx);
    await h.runtime.submit(caller(), first);
    const second = await errorOf(h.runtime.submit(caller(), commit(tx)));
    expect(second.code).toBe('runtime.plan_not_planned');
    expect((await record(tx))?.action_id).toBe(first.id);
    await h.drain();
  });

  it('an approved commit can still fail to claim the plan', async () => {
    const tx = await planned({}, {}, 'pay.approved');
    const c1 = commit(tx, {}, {}, 'pay.approved');
    const c2 = commit(tx, {}, {}, 'pay.approved');
    expect((await h.runtime.submit(caller(), c1)).disposition).toBe('requires_human');
    expect((await h.runtime.submit(caller(), c2)).disposition).toBe('requires_human');
    const approvals = (await h.runtime.listApprovals(caller(), TENANT)).items.filter((a) => a.transaction_id === tx);
    const approver = caller('approver-1');
    const d1 = await h.runtime.decideApproval(approver, TENANT, approvals.find((a) => a.action_id === c1.id)?.approval_id as string, { decision: 'approve' });
    expect(d1.approval.status).toBe('approved');
    expect(d1.action_result.status).toBe('accepted');
    // The second commit's approval is withdrawn rather than decided: its plan was claimed (docs/runtime.md).
    expect(
      await codeOf(h.runtime.decideApproval(approver, TENANT, approvals.find((a) => a.action_id === c2.id)?.approval_id as string, { decision: 'approve' })),
    ).toBe('runtime.approval_withdrawn');
    await h.drain();
    // An approval that is still viable when approved, for a plan that expired meanwhile: approved, and the claim fails.
    const late = await planned({}, {}, 'pay.approved');
    const c3 = commit(late, {}, {}, 'pay.approved');
    const waiting = await h.runtime.submit(caller(), c3);
    h.clock.advance(15 * 60_000 + 1);
    const d3 = await h.runtime.decideApproval(approver, TENANT, waiting.action_result.metadata?.approval_id as string, { decision: 'approve' });
    expect(d3.approval.status).toBe('approved');
    expect(d3.action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.plan_expired' } });
  });
});

describe('The direct-commit branch', () => {
  it('with requires_plan_before_commit false and no plan ID, claim_direct_commit creates the transaction directly in committing', async () => {
    const tx = uid('tx');
    const c = { ...transfer(uid('c'), { transaction: { mode: 'commit', transaction_id: tx } }), capability_id: 'pay.quote' };
    const out = await h.runtime.trustedDirectCommit(caller(), c as never);
    expect(out.disposition).toBe('accepted');
    expect(await record(tx)).toMatchObject({ status: 'committing', mode: 'commit', action_id: c.id });
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
  });

  it('an existing transaction ID causes a conflict', async () => {
    const tx = uid('tx');
    await h.runtime.trustedDirectCommit(caller(), {
      ...transfer(uid('c'), { transaction: { mode: 'commit', transaction_id: tx } }),
      capability_id: 'pay.quote',
    } as never);
    const again = { ...transfer(uid('c'), { transaction: { mode: 'commit', transaction_id: tx } }), capability_id: 'pay.quote' };
    expect(await codeOf(h.runtime.trustedDirectCommit(caller(), again as never))).toBe('transaction.already_exists');
    await h.drain();
  });

  it('the branch is not reachable through a validated public envelope: core validation requires plan_id for every commit, including inside a TransactionRequest', async () => {
    const tx = uid('tx');
    const c = { ...transfer(uid('c'), { transaction: { mode: 'commit', transaction_id: tx } }), capability_id: 'pay.quote' };
    expect(await codeOf(h.runtime.submit(caller(), c))).toBe('envelope.commit_requires_plan_id');
    expect(await codeOf(h.runtime.submit(caller(), { action: c, transaction_id: tx, requested_by: caller().principal }))).toBe(
      'envelope.commit_requires_plan_id',
    );
    expect(await record(tx)).toBeUndefined();
  });

  it('public clients need a plan ID even when the capability contract field is false; the trusted call refuses a capability that requires a plan', async () => {
    const tx = uid('tx');
    expect(await codeOf(h.runtime.trustedDirectCommit(caller(), transfer(uid('c'), { transaction: { mode: 'commit', transaction_id: tx } }) as never))).toBe(
      'runtime.plan_required',
    );
    expect(await record(tx)).toBeUndefined();
  });
});
