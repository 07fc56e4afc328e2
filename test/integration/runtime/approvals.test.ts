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
      tenants: { [TENANT]: { approvals: [{ policy_id: 'tenant-echo-policy', capabilities: ['pay.echo'], approver_scopes: ['aip:approve'] }] } },
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
