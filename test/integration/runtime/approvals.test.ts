/**
 * Pipeline step 6 and the transactions page's "Approval and
 * transaction state remain separate".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({
    connectors: [testConnector(provider)],
    prefix: 'rt-appr',
    config: {
      approvals: { ttl_ms: 60 * 60_000, default_approver_scopes: ['aip:approve'] },
      tenants: {
        [TENANT]: {
          approvals: [
            { policy_id: 'tenant-echo-policy', capabilities: ['pay.echo'], approver_scopes: ['aip:approve'] },
            { policy_id: 'tenant-secret-policy', capabilities: ['pay.secret'], modes: ['execute'], approver_scopes: ['aip:approve'] },
          ],
        },
      },
    },
  });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const approvedExec = (id: string, tx: string, input: Record<string, unknown> = {}) => ({
  ...transfer(id, { transaction: { mode: 'execute', transaction_id: tx } }, input),
  capability_id: 'pay.approved',
});
async function pending(input: Record<string, unknown> = {}) {
  const a = uid('a');
  const tx = uid('tx');
  const out = await h.runtime.submit(caller(), approvedExec(a, tx, input));
  expect(out.disposition).toBe('requires_human');
  const approval = (await h.runtime.listApprovals(caller(), TENANT, { limit: 100 })).items.find((x) => x.action_id === a);
  expect(approval).toBeDefined();
  return { a, tx, approval: approval! };
}

describe('The approval gate', () => {
  it('a capability approval policy creates a pending approval and the action waits as requires_human', async () => {
    const { a, approval } = await pending();
    expect(approval).toMatchObject({
      status: 'pending',
      capability_id: 'pay.approved',
      requested_by: { id: 'agent-1' },
      policy: { policy_id: 'treasury-two-person' },
    });
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result.status).toBe('requires_human');
    expect(await h.receiveInvokes()).toEqual([]);
  });

  it('a tenant approval policy creates a pending approval too', async () => {
    const a = uid('a');
    const out = await h.runtime.submit(caller(), { ...transfer(a), capability_id: 'pay.echo' });
    expect(out.disposition).toBe('requires_human');
    const approval = (await h.runtime.listOperator(operator, { view: 'pending_approvals', tenant_id: TENANT, limit: 100 })).items.find(
      (i) => i.kind === 'approval' && i.approval.action_id === a,
    );
    expect(approval).toMatchObject({ approval: { policy: { policy_id: 'tenant-echo-policy' } } });
  });

  it('an approver needs one of the policy approver scopes (the authority rule)', async () => {
    const { approval } = await pending();
    // Neither an approver nor the requester: may not even read the approval.
    const noScope = { ...caller('approver-x'), scopes: ['pay:write'] };
    expect(await codeOf(h.runtime.decideApproval(noScope, TENANT, approval.approval_id, { decision: 'approve' }))).toBe('approval.not_found');
    // An operator without an approver scope reads it, and is told why not.
    const operatorOnly = { ...operator, scopes: operator.scopes.filter((s) => s !== 'pay:approve') };
    expect(await codeOf(h.runtime.decideApproval(operatorOnly, TENANT, approval.approval_id, { decision: 'approve' }))).toBe('runtime.approver_forbidden');
    // The requester without an approver scope, likewise.
    expect(await codeOf(h.runtime.decideApproval({ ...caller(), scopes: ['pay:write'] }, TENANT, approval.approval_id, { decision: 'approve' }))).toBe(
      'runtime.approver_forbidden',
    );
  });

  it('by default the approver is not the requester', async () => {
    const { approval } = await pending();
    expect(await codeOf(h.runtime.decideApproval(caller(), TENANT, approval.approval_id, { decision: 'approve' }))).toBe('runtime.self_approval_forbidden');
  });

  it('approval resumes the action, and the decision (approval IDs, decision IDs, policy hash) reaches the connector context as verified evidence', async () => {
    const { a, tx, approval } = await pending();
    const out = await h.runtime.decideApproval(caller('approver-1'), TENANT, approval.approval_id, { decision: 'approve', reason: 'ok' });
    expect(out.approval).toMatchObject({ status: 'approved', decision: { decided_by: { id: 'approver-1' } } });
    expect(out.action_result.status).toBe('accepted');
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
    const call = provider.calls.find((c) => c.action_id === a);
    expect(call?.approval).toEqual({
      approval_ids: [approval.approval_id],
      decision_ids: [out.approval.decision?.decision_id],
      policy_hashes: [approval.policy.policy_hash],
    });
  });

  it('a denial ends the action and no transaction is admitted', async () => {
    const { a, tx, approval } = await pending();
    const out = await h.runtime.decideApproval(caller('approver-1'), TENANT, approval.approval_id, { decision: 'deny', reason: 'no' });
    expect(out.approval.status).toBe('denied');
    expect(out.action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.approval_denied' } });
    expect(await record(tx)).toBeUndefined();
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result.status).toBe('failed');
  });

  it('exactly one decision is recorded', async () => {
    const { approval } = await pending();
    await h.runtime.decideApproval(caller('approver-1'), TENANT, approval.approval_id, { decision: 'deny' });
    expect(await codeOf(h.runtime.decideApproval(caller('approver-2'), TENANT, approval.approval_id, { decision: 'approve' }))).toBe(
      'approval.already_decided',
    );
  });

  it('pending approvals expire, and the waiting action fails', async () => {
    const { a, approval } = await pending();
    h.clock.advance(60 * 60_000);
    expect(await codeOf(h.runtime.decideApproval(caller('approver-1'), TENANT, approval.approval_id, { decision: 'approve' }))).toBe(
      'runtime.approval_expired',
    );
    expect((await h.stores.approvals.get({ tenant_id: TENANT, approval_id: approval.approval_id }))?.status).toBe('expired');
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.approval_expired' } });
  });

  it('the sweeper expires pending approvals of configured tenants', async () => {
    const { a } = await pending();
    h.clock.advance(60 * 60_000 + 1);
    await h.runtime.sweep(h.clock.now());
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result.status).toBe('failed');
  });

  it('a resubmission of a waiting action answers requires_human again without a second approval', async () => {
    const { a, tx } = await pending();
    const again = await h.runtime.submit(caller(), approvedExec(a, tx));
    expect(again.disposition).toBe('requires_human');
    expect((await h.runtime.listApprovals(caller(), TENANT, { limit: 100 })).items.filter((x) => x.action_id === a)).toHaveLength(1);
  });

  it('an approved action can still fail to reach a connector or settle at the provider', async () => {
    const { tx, approval } = await pending({ scenario: 'uncertain' });
    await h.runtime.decideApproval(caller('approver-1'), TENANT, approval.approval_id, { decision: 'approve' });
    await h.drain();
    expect((await record(tx))?.status).toBe('outcome_unknown');
    expect((await h.stores.approvals.get({ tenant_id: TENANT, approval_id: approval.approval_id }))?.status).toBe('approved');
  });
});

describe('Approvals withdraw themselves when their action can no longer succeed', () => {
  const approver = () => caller('approver-1');
  const listed = async (ids: readonly string[]) =>
    (await h.runtime.listApprovals(approver(), TENANT, { limit: 100 })).items.filter((x) => ids.includes(x.action_id)).map((x) => x.action_id);

  it('racing commits of one plan: one claims it, every other approval ends withdrawn (plan_claimed) or approved-then-refused, and none stays listed', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), { ...transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }), capability_id: 'pay.approved' });
    expect((await record(tx))?.status).toBe('planned');
    const commits = Array.from({ length: 8 }, () => uid('c'));
    const submitted = await Promise.all(
      commits.map((c) =>
        h.runtime.submit(caller(), { ...transfer(c, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }), capability_id: 'pay.approved' }),
      ),
    );
    expect(submitted.every((o) => o.disposition === 'requires_human')).toBe(true);
    const approvals = submitted.map((o) => o.action_result.metadata?.approval_id as string);
    expect(await listed(commits)).toHaveLength(commits.length);

    // Approvers race on every one of them.
    const decided = await Promise.allSettled(approvals.map((id) => h.runtime.decideApproval(approver(), TENANT, id, { decision: 'approve' })));
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
    // Every refusal is typed: the approval was withdrawn, or the approved commit lost the plan.
    for (const d of decided) {
      if (d.status === 'rejected') expect((d.reason as { code?: string }).code).toBe('runtime.approval_withdrawn');
    }
    const finals = await Promise.all(approvals.map((approval_id) => h.stores.approvals.get({ tenant_id: TENANT, approval_id })));
    expect(finals.every((a) => a?.status === 'approved' || a?.status === 'withdrawn')).toBe(true);
    for (const a of finals.filter((x) => x?.status === 'withdrawn')) {
      expect(a?.withdrawal).toMatchObject({ reason: 'plan_claimed', details: { plan_id: `plan:${tx}` } });
    }
    const results = await Promise.all(commits.map(async (c) => (await h.runtime.getAction(caller(), TENANT, c)).action_result));
    expect(results.filter((r) => r.status === 'completed')).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 'completed')) {
      expect(r.status).toBe('failed');
      expect(['runtime.approval_withdrawn', 'runtime.plan_claim_conflict', 'runtime.plan_not_planned']).toContain(r.error?.code);
    }
    expect(await listed(commits)).toEqual([]);
    const ops = await h.runtime.listOperator(operator, { view: 'pending_approvals', tenant_id: TENANT, limit: 100 });
    expect(ops.items.filter((i) => i.kind === 'approval' && commits.includes(i.approval.action_id))).toEqual([]);
  });

  it('commits waiting while another commit of the plan wins are withdrawn when listed, and their actions fail naming the reason', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), { ...transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }), capability_id: 'pay.approved' });
    const [winner, ...losers] = Array.from({ length: 4 }, () => uid('c'));
    const outs = await Promise.all(
      [winner, ...losers].map((c) =>
        h.runtime.submit(caller(), { ...transfer(c as string, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }), capability_id: 'pay.approved' }),
      ),
    );
    const [first, ...rest] = outs.map((o) => o.action_result.metadata?.approval_id as string);
    await h.runtime.decideApproval(approver(), TENANT, first as string, { decision: 'approve' });
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
    // The operators' listing leaves them out already (read only); the approvers' listing withdraws them.
    const ops = await h.runtime.listOperator(operator, { view: 'pending_approvals', tenant_id: TENANT, limit: 100 });
    expect(ops.items.filter((i) => i.kind === 'approval' && rest.includes(i.approval.approval_id))).toEqual([]);
    expect(await listed(losers as string[])).toEqual([]);
    for (const approval_id of rest) {
      expect(await h.stores.approvals.get({ tenant_id: TENANT, approval_id })).toMatchObject({ status: 'withdrawn', withdrawal: { reason: 'plan_claimed' } });
      expect(await codeOf(h.runtime.decideApproval(approver(), TENANT, approval_id, { decision: 'approve' }))).toBe('runtime.approval_withdrawn');
    }
    for (const c of losers) {
      expect((await h.runtime.getAction(caller(), TENANT, c as string)).action_result).toMatchObject({
        status: 'failed',
        error: { code: 'runtime.approval_withdrawn', details: { reason: 'plan_claimed' } },
      });
    }
  });

  it('deciding an approval whose plan was claimed withdraws it: runtime.approval_withdrawn, and nothing is decided', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), { ...transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }), capability_id: 'pay.approved' });
    const [c1, c2] = [uid('c'), uid('c')];
    const o1 = await h.runtime.submit(caller(), { ...transfer(c1, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }), capability_id: 'pay.approved' });
    const o2 = await h.runtime.submit(caller(), { ...transfer(c2, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }), capability_id: 'pay.approved' });
    await h.runtime.decideApproval(approver(), TENANT, o1.action_result.metadata?.approval_id as string, { decision: 'approve' });
    await h.drain();
    const id2 = o2.action_result.metadata?.approval_id as string;
    expect(await codeOf(h.runtime.decideApproval(approver(), TENANT, id2, { decision: 'approve' }))).toBe('runtime.approval_withdrawn');
    expect(await h.stores.approvals.get({ tenant_id: TENANT, approval_id: id2 })).toMatchObject({ status: 'withdrawn', decisions: [] });
  });

  it('cancelling a waiting action withdraws its approval (action_cancelled): no decision is recorded in the canceller’s name', async () => {
    const { a, approval } = await pending();
    await h.runtime.cancel(caller(), TENANT, a);
    const after = await h.stores.approvals.get({ tenant_id: TENANT, approval_id: approval.approval_id });
    expect(after).toMatchObject({ status: 'withdrawn', withdrawal: { reason: 'action_cancelled' }, decisions: [] });
    expect(await listed([a])).toEqual([]);
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result.status).toBe('cancelled');
  });
});

describe('An approval shows what it approves', () => {
  it("a commit's approval: capability, mode, input, the plan with its preview and fidelity, who asked and when, the policy and the approvals so far", async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), {
      ...transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }, { amount: 7777 }),
      capability_id: 'pay.approved',
    });
    const c = uid('c');
    const out = await h.runtime.submit(caller(), {
      ...transfer(c, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }, { amount: 7777 }),
      capability_id: 'pay.approved',
    });
    const approval_id = out.action_result.metadata?.approval_id as string;
    const shown = await h.runtime.getApproval(caller('approver-1'), TENANT, approval_id);
    expect(shown).toMatchObject({ approval_id, status: 'pending' });
    expect(shown.facts).toMatchObject({
      capability_id: 'pay.approved',
      mode: 'commit',
      action_id: c,
      input: { amount: 7777, to: 'acct-b' },
      plan: {
        plan_id: `plan:${tx}`,
        transaction_id: tx,
        status: 'planned',
        fidelity: 'schema_only',
        preview: { fidelity: 'schema_only', handler_invoked: false },
      },
      requested_by: { id: 'agent-1', kind: 'agent' },
      requested_at: shown.created_at,
      policy: { policy_id: 'treasury-two-person', min_approvals: 1 },
      approvals: { so_far: 0, needed: 1, approved_by: [] },
    });
    expect(shown.facts.plan?.expires_at).toBeDefined();
    // The listing shows the same facts.
    const listed = (await h.runtime.listApprovals(caller('approver-1'), TENANT, { limit: 100 })).items.find((x) => x.approval_id === approval_id);
    expect(listed?.facts).toEqual(shown.facts);
    // Decided: still readable, with the approvals so far.
    await h.runtime.decideApproval(caller('approver-1'), TENANT, approval_id, { decision: 'approve' });
    await h.drain();
    const after = await h.runtime.getApproval(caller('approver-1'), TENANT, approval_id);
    expect(after).toMatchObject({ status: 'approved', facts: { approvals: { so_far: 1, needed: 1, approved_by: [{ id: 'approver-1' }] } } });
  });

  it('the input is shown as the data contract says: redaction_required shows only the hash', async () => {
    const a = uid('a');
    const out = await h.runtime.submit(caller(), {
      ...transfer(a, { transaction: { mode: 'execute', transaction_id: uid('tx') } }),
      capability_id: 'pay.secret',
    });
    expect(out.disposition).toBe('requires_human');
    const shown = await h.runtime.getApproval(caller('approver-1'), TENANT, out.action_result.metadata?.approval_id as string);
    expect(shown.facts).toMatchObject({ capability_id: 'pay.secret', mode: 'execute', input: { redacted: true } });
    expect(JSON.stringify(shown.facts)).not.toContain('acct-b');
    expect(shown.facts.input).toEqual({ redacted: true, hash: shown.facts.input_hash });
  });

  it('a caller who may not read the approval is told it does not exist', async () => {
    const { approval } = await pending();
    const stranger = caller('stranger', { scopes: ['pay:write'] });
    expect(await codeOf(h.runtime.getApproval(stranger, TENANT, approval.approval_id))).toBe('approval.not_found');
    expect(await codeOf(h.runtime.getApproval(caller('approver-1'), TENANT, uid('nope')))).toBe('approval.not_found');
  });
});
