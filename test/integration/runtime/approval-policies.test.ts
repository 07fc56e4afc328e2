/**
 * Approval policies beyond the tenants the configuration names: runtime-wide policies (`approval_policies`) with their tenant
 * selector, precedence (capability, then the tenant's own, then runtime-wide),
 * the policy's own lifetime (`ttl_ms`), `min_approvals` distinct approvers,
 * approver scopes as "any of" (the authority rule), and the approval's
 * subject for a compensate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ApprovalRecord } from '../../../lib/ports/approval-store.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, type Harness } from './support.js';

/** Named nowhere in the configuration. */
const UNCONFIGURED = 'tenant-z';
/** Selected by name by one runtime-wide policy. */
const ACME = 'tenant-acme';
/** Selected by name by a policy gating every capability's execute. */
const PRECEDENCE = 'tenant-p';
/** Selected by name by a policy gating compensations. */
const COMP = 'tenant-c';
const HOUR = 3_600_000;

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({
    connectors: [testConnector(provider)],
    prefix: 'rt-apol',
    config: {
      approvals: { ttl_ms: 24 * HOUR, default_approver_scopes: ['aip:approve'] },
      tenants: { [TENANT]: { approvals: [{ policy_id: 'tenant-own-echo', capabilities: ['pay.echo'], modes: ['none'], approver_scopes: ['aip:approve'] }] } },
      approval_policies: [
        { policy_id: 'acme-echo', tenants: [ACME], capabilities: ['pay.echo'], modes: ['none'], approver_scopes: ['ops:approve'] },
        { policy_id: 'precedence-all', tenants: [PRECEDENCE], capabilities: ['*'], modes: ['execute'], approver_scopes: ['ops:approve'] },
        { policy_id: 'comp-gate', tenants: [COMP], capabilities: ['pay.transfer'], modes: ['compensate'], approver_scopes: ['ops:approve'] },
        // The default for every tenant (no selector): two distinct approvers, one of two scopes each, within an hour.
        {
          policy_id: 'global-echo',
          capabilities: ['pay.echo'],
          modes: ['none'],
          approver_scopes: ['aip:approve', 'pay:approve'],
          min_approvals: 2,
          ttl_ms: HOUR,
        },
      ],
    },
  });
});
afterAll(async () => h.destroy());

const member = (tenant: string, id: string, scopes: string[]): CallerIdentity => caller(id, { tenants: [tenant], scopes });
const requester = (tenant: string) => member(tenant, 'agent-1', ['pay:write']);
const inTenant = (tenant: string, action: Record<string, unknown>) => ({ ...action, identity: { ...(action.identity as object), tenant_id: tenant } });
const echo = (tenant: string, id = uid('a')) => inTenant(tenant, { ...transfer(id), capability_id: 'pay.echo' });

async function pendingIn(tenant: string, action: Record<string, unknown>): Promise<ApprovalRecord> {
  const out = await h.runtime.submit(requester(tenant), action);
  expect(out.disposition).toBe('requires_human');
  const approval = await h.stores.approvals.get({ tenant_id: tenant, approval_id: out.action_result.metadata?.approval_id as string });
  expect(approval).toBeDefined();
  return approval as ApprovalRecord;
}

describe('which policy applies', () => {
  it('a tenant named nowhere in the configuration gets the runtime-wide default policy, with its lifetime', async () => {
    const approval = await pendingIn(UNCONFIGURED, echo(UNCONFIGURED));
    expect(approval.policy).toMatchObject({ policy_id: 'global-echo', approver_scopes: ['aip:approve', 'pay:approve'], min_approvals: 2, ttl_ms: HOUR });
    expect(Date.parse(approval.expires_at) - Date.parse(approval.created_at)).toBe(HOUR);
    expect(await h.receiveInvokes()).toEqual([]);
  });

  it('a tenant selector: the policy naming the tenant applies before the default', async () => {
    const approval = await pendingIn(ACME, echo(ACME));
    expect(approval.policy).toMatchObject({ policy_id: 'acme-echo', min_approvals: 1 });
    // Without a lifetime of its own: the runtime's approvals.ttl_ms.
    expect(Date.parse(approval.expires_at) - Date.parse(approval.created_at)).toBe(24 * HOUR);
  });

  it("precedence: the capability's own policy, then the tenant's own, then runtime-wide ones", async () => {
    // The tenant's own policy wins over the runtime-wide default.
    expect((await pendingIn(TENANT, echo(TENANT))).policy.policy_id).toBe('tenant-own-echo');
    // The capability's own policy wins over a runtime-wide policy selecting every capability.
    const approved = inTenant(PRECEDENCE, {
      ...transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: uid('tx') } }),
      capability_id: 'pay.approved',
    });
    expect((await pendingIn(PRECEDENCE, approved)).policy.policy_id).toBe('treasury-two-person');
    // Otherwise the runtime-wide policy applies.
    const plain = inTenant(PRECEDENCE, transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: uid('tx') } }));
    expect((await pendingIn(PRECEDENCE, plain)).policy.policy_id).toBe('precedence-all');
    // A policy selecting other tenants does not apply: no approval.
    const free = await h.runtime.submit(requester(ACME), inTenant(ACME, transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: uid('tx') } })));
    expect(free.disposition).toBe('accepted');
    await h.drain();
  });

  it('the capability listing names the policies the selection considers, in order', async () => {
    const list = await h.runtime.capabilities(requester(UNCONFIGURED), UNCONFIGURED);
    expect(list.items.find((c) => c.id === 'pay.echo')?.tenant_approval_policies?.map((p) => p.policy_id)).toEqual(['global-echo']);
    const own = await h.runtime.capabilities(requester(TENANT), TENANT);
    expect(own.items.find((c) => c.id === 'pay.echo')?.tenant_approval_policies?.map((p) => p.policy_id)).toEqual(['tenant-own-echo', 'global-echo']);
    const acme = await h.runtime.capabilities(requester(ACME), ACME);
    expect(acme.items.find((c) => c.id === 'pay.echo')?.tenant_approval_policies?.map((p) => p.policy_id)).toEqual(['acme-echo', 'global-echo']);
  });
});

describe('deciding under min_approvals and "any of" approver scopes', () => {
  const approverA = member(UNCONFIGURED, 'approver-a', ['aip:approve']);
  const approverB = member(UNCONFIGURED, 'approver-b', ['pay:approve']);

  it('the first approval leaves the action waiting, the same approver is refused, a second distinct approver resumes it; every approving decision is evidence', async () => {
    const id = uid('a');
    const approval = await pendingIn(UNCONFIGURED, echo(UNCONFIGURED, id));
    const first = await h.runtime.decideApproval(approverA, UNCONFIGURED, approval.approval_id, { decision: 'approve' });
    expect(first.approval).toMatchObject({ status: 'pending', decisions: [{ decided_by: { id: 'approver-a' }, decision: 'approved' }] });
    expect(first.action_result.status).toBe('requires_human');
    expect(first.resumed).toBeUndefined();
    expect(await h.receiveInvokes()).toEqual([]);

    expect(await codeOf(h.runtime.decideApproval(approverA, UNCONFIGURED, approval.approval_id, { decision: 'approve' }))).toBe(
      'approval.already_approved_by_caller',
    );

    const second = await h.runtime.decideApproval(approverB, UNCONFIGURED, approval.approval_id, { decision: 'approve' });
    expect(second.approval.status).toBe('approved');
    expect(second.action_result.status).toBe('accepted');
    await h.drain();
    expect((await h.runtime.getAction(requester(UNCONFIGURED), UNCONFIGURED, id)).action_result.status).toBe('completed');
    const call = provider.calls.find((c) => c.action_id === id);
    expect(call?.approval).toEqual({
      approval_ids: [approval.approval_id],
      decision_ids: second.approval.decisions.map((d) => d.decision_id),
      policy_hashes: [approval.policy.policy_hash],
    });
    expect(call?.approval?.decision_ids).toHaveLength(2);
  });

  it('a denial after a partial approval ends the action', async () => {
    const id = uid('a');
    const approval = await pendingIn(UNCONFIGURED, echo(UNCONFIGURED, id));
    await h.runtime.decideApproval(approverA, UNCONFIGURED, approval.approval_id, { decision: 'approve' });
    const denied = await h.runtime.decideApproval(approverB, UNCONFIGURED, approval.approval_id, { decision: 'deny', reason: 'no' });
    expect(denied.approval).toMatchObject({ status: 'denied', decision: { decided_by: { id: 'approver-b' }, decision: 'denied' } });
    expect(denied.action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.approval_denied' } });
    expect(await h.receiveInvokes()).toEqual([]);
  });

  it('who may decide is the authority rule: no approver scope and not the requester reads as not found; the requester gets the specific refusal', async () => {
    const approval = await pendingIn(UNCONFIGURED, echo(UNCONFIGURED));
    const stranger = member(UNCONFIGURED, 'stranger', ['pay:write']);
    expect(await codeOf(h.runtime.decideApproval(stranger, UNCONFIGURED, approval.approval_id, { decision: 'approve' }))).toBe('approval.not_found');
    expect(await codeOf(h.runtime.decideApproval(requester(UNCONFIGURED), UNCONFIGURED, approval.approval_id, { decision: 'approve' }))).toBe(
      'runtime.approver_forbidden',
    );
    const selfApprover = member(UNCONFIGURED, 'agent-1', ['pay:write', 'pay:approve']);
    expect(await codeOf(h.runtime.decideApproval(selfApprover, UNCONFIGURED, approval.approval_id, { decision: 'approve' }))).toBe(
      'runtime.self_approval_forbidden',
    );
    expect((await h.stores.approvals.get(approval))?.decisions).toEqual([]);
  });

  it('one identity per principal: two tokens of one subject that differ only in the kind claim are one approver, and the requester under another kind is the requester', async () => {
    const id = uid('a');
    const approval = await pendingIn(UNCONFIGURED, echo(UNCONFIGURED, id));
    const asUser: CallerIdentity = { ...approverA, principal: { id: 'approver-a', kind: 'user' } };
    const asAgent: CallerIdentity = { ...approverA, principal: { id: 'approver-a', kind: 'agent' } };
    expect((await h.runtime.decideApproval(asUser, UNCONFIGURED, approval.approval_id, { decision: 'approve' })).approval.status).toBe('pending');
    expect(await codeOf(h.runtime.decideApproval(asAgent, UNCONFIGURED, approval.approval_id, { decision: 'approve' }))).toBe(
      'approval.already_approved_by_caller',
    );
    const requesterAsUser: CallerIdentity = { ...member(UNCONFIGURED, 'agent-1', ['pay:approve']), principal: { id: 'agent-1', kind: 'user' } };
    expect(await codeOf(h.runtime.decideApproval(requesterAsUser, UNCONFIGURED, approval.approval_id, { decision: 'approve' }))).toBe(
      'runtime.self_approval_forbidden',
    );
    const held = await h.stores.approvals.get(approval);
    expect(held).toMatchObject({ status: 'pending', decisions: [{ decided_by: { id: 'approver-a', kind: 'user' } }] });
    expect(await h.receiveInvokes()).toEqual([]);
  });

  it('concurrent approvers: exactly min_approvals decisions are recorded, the action resumes once, the others are told it is decided', async () => {
    const id = uid('a');
    const approval = await pendingIn(UNCONFIGURED, echo(UNCONFIGURED, id));
    const approvers = Array.from({ length: 6 }, (_, i) => member(UNCONFIGURED, `racer-${i}`, [i % 2 === 0 ? 'aip:approve' : 'pay:approve']));
    const results = await Promise.allSettled(approvers.map((a) => h.runtime.decideApproval(a, UNCONFIGURED, approval.approval_id, { decision: 'approve' })));
    const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(won).toHaveLength(2);
    expect(won.map((o) => o.approval.status).sort()).toEqual(['approved', 'pending']);
    expect(won.filter((o) => o.resumed !== undefined)).toHaveLength(1);
    expect(lost.every((e) => isAipError(e, 'approval.already_decided'))).toBe(true);
    const final = await h.stores.approvals.get(approval);
    expect(final?.status).toBe('approved');
    expect(final?.decisions).toHaveLength(2);
    const invokes = await h.receiveInvokes();
    expect(invokes.filter((m) => m.message.action_id === id)).toHaveLength(1);
  });
});

describe('nothing doomed reaches an approver', () => {
  it('a gated compensate of a failed or only planned target is refused before an approval exists (runtime.compensation_target_ineligible)', async () => {
    const owner = requester(COMP);
    const failed = uid('a');
    await h.runtime.submit(owner, inTenant(COMP, transfer(failed, { transaction: { mode: 'execute', transaction_id: uid('tx') } }, { scenario: 'fail' })));
    await h.drain();
    const planned = uid('p');
    await h.runtime.submit(owner, inTenant(COMP, transfer(planned, { transaction: { mode: 'plan', transaction_id: uid('tx') } })));
    const approver = member(COMP, 'ops-9', ['ops:approve']);
    const before = (await h.runtime.listApprovals(approver, COMP, { limit: 100 })).items.length;
    for (const target of [failed, planned]) {
      const k = uid('k');
      expect(await codeOf(h.runtime.submit(owner, inTenant(COMP, transfer(k, { transaction: { mode: 'compensate', compensation_for: target } }))))).toBe(
        'runtime.compensation_target_ineligible',
      );
      // The refusal is the action's recorded result; no approval was created for it.
      const action = await h.stores.actions.get({ tenant_id: COMP, action_id: k });
      expect(action?.status).toBe('failed');
      expect(action?.approval_id).toBeUndefined();
    }
    expect((await h.runtime.listApprovals(approver, COMP, { limit: 100 })).items).toHaveLength(before);
    // An unknown target is refused before the gate too (the authority rule's not-found answer).
    expect(
      await codeOf(h.runtime.submit(owner, inTenant(COMP, transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: uid('none') } })))),
    ).toBe('runtime.compensation_target_not_found');
  });
});

describe('the approval subject', () => {
  it("a compensate's approval shows the compensated action and its owner (the listing and the decision show it)", async () => {
    const owner = requester(COMP);
    const a = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(owner, inTenant(COMP, transfer(a, { transaction: { mode: 'execute', transaction_id: tx } })));
    await h.drain();
    const comp = inTenant(COMP, transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: a } }));
    const approval = await pendingIn(COMP, comp);
    expect(approval.policy.policy_id).toBe('comp-gate');
    expect(approval.subject).toEqual({ compensation_for: { action_id: a, transaction_id: tx, owner: { id: 'agent-1', kind: 'agent' } } });
    const approver = member(COMP, 'ops-9', ['ops:approve']);
    const listed = (await h.runtime.listApprovals(approver, COMP, { limit: 100 })).items.find((x) => x.approval_id === approval.approval_id);
    expect(listed?.subject).toEqual(approval.subject);
    const decided = await h.runtime.decideApproval(approver, COMP, approval.approval_id, { decision: 'approve' });
    expect(decided.approval.subject).toEqual(approval.subject);
    await h.drain();
  });
});
