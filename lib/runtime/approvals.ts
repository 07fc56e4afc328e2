/**
 * Approval decisions. An authorized approver (holding the policy's approver
 * scopes and, unless the policy allows it, not the requester) approves or
 * denies a pending approval exactly once. Approval resumes the action
 * (steps 7-9 of the pipeline, with the decision as verified evidence for the
 * connector context); denial ends it; pending approvals expire. Approval and
 * transaction state stay separate: an approved action can still fail to
 * claim a plan, and that failure is the action's result.
 */
import { AipError, isAipError } from '../errors/aip-error.js';
import type { ActionResult } from '../protocol/index.js';
import type { ApprovalRecord } from '../ports/approval-store.js';
import { assertCallerCurrent, assertTenantMember, missingScopes, type CallerIdentity } from './identity.js';
import { failedResult, type Kernel } from './kernel.js';
import { actionResultOf, finishUnstartedAction } from './pipeline/action-record.js';
import { continueAdmission, guarded } from './pipeline/admit.js';
import type { AdmittedAction } from './pipeline/state.js';
import type { DecisionOutcome, PageOf } from './types.js';

export interface ApprovalDecisionInput {
  readonly decision: 'approve' | 'deny';
  readonly reason?: string;
}

/** pending → expired, and the waiting action fails with runtime.approval_expired. */
export async function expireApproval(k: Kernel, approval: ApprovalRecord): Promise<void> {
  if (approval.status === 'pending') {
    try {
      await k.deps.approvals.expire({ tenant_id: approval.tenant_id, approval_id: approval.approval_id, expected_revision: approval.revision });
    } catch (err) {
      if (!(isAipError(err, 'approval.not_expired') || isAipError(err, 'approval.already_decided') || isAipError(err, 'approval.state_conflict'))) throw err;
      if (isAipError(err, 'approval.not_expired')) return;
    }
  }
  const action = await k.deps.actions.get({ tenant_id: approval.tenant_id, action_id: approval.action_id });
  if (action?.status === 'requires_human') {
    await finishUnstartedAction(k, action, failedResult(action.action_id, new AipError('runtime.approval_expired', undefined, { details: { approval_id: approval.approval_id } }), k.now()));
  }
}

export async function decideApproval(k: Kernel, caller: CallerIdentity, tenant_id: string, approval_id: string, input: ApprovalDecisionInput): Promise<DecisionOutcome> {
  assertCallerCurrent(caller, k.now());
  assertTenantMember(caller, tenant_id);
  if (input === null || typeof input !== 'object' || (input.decision !== 'approve' && input.decision !== 'deny')) {
    throw new AipError('runtime.invalid_query', 'decision must be approve or deny', { details: { field: 'decision' } });
  }
  const approval = await k.deps.approvals.get({ tenant_id, approval_id });
  if (approval === undefined) throw new AipError('approval.not_found', undefined, { details: { approval_id } });
  const missing = missingScopes(caller, approval.policy.approver_scopes);
  if (missing.length > 0) throw new AipError('runtime.approver_forbidden', undefined, { details: { approval_id, missing_scopes: missing } });
  if (!approval.policy.allow_self_approval && caller.principal.id === approval.requested_by.id) {
    throw new AipError('runtime.self_approval_forbidden', undefined, { details: { approval_id } });
  }
  if (approval.status === 'pending' && Date.parse(approval.expires_at) <= k.now().getTime()) {
    await expireApproval(k, approval);
    throw new AipError('runtime.approval_expired', undefined, { details: { approval_id, expires_at: approval.expires_at } });
  }
  let decided: ApprovalRecord;
  try {
    decided = await k.deps.approvals.decide({
      tenant_id,
      approval_id,
      expected_revision: approval.revision,
      decision_id: `dec-${k.ids()}`,
      decided_by: { ...caller.principal },
      decision: input.decision === 'approve' ? 'approved' : 'denied',
      ...(input.reason !== undefined ? { reason: input.reason } : {}),
    });
  } catch (err) {
    if (isAipError(err, 'approval.expired')) {
      await expireApproval(k, approval);
      throw new AipError('runtime.approval_expired', undefined, { details: { approval_id }, cause: err });
    }
    throw err;
  }

  const action = await k.deps.actions.get({ tenant_id, action_id: decided.action_id });
  if (action === undefined) throw new AipError('action.not_found', undefined, { details: { action_id: decided.action_id } });
  if (action.status !== 'requires_human') return { approval: decided, action_result: actionResultOf(action) };

  if (decided.status === 'denied') {
    const err = new AipError('runtime.approval_denied', undefined, { details: { approval_id, decision_id: decided.decision?.decision_id ?? null } });
    const ended = await finishUnstartedAction(k, action, failedResult(action.action_id, err, k.now()));
    return { approval: decided, action_result: actionResultOf(ended) };
  }

  // Approved: resume the action (steps 7-9) with the decision as evidence.
  const accepted = await k.deps.actions.transition({ tenant_id, action_id: action.action_id, from: ['requires_human'], to: 'accepted', expected_revision: action.revision });
  const reg = k.deps.registry.find(accepted.capability_id);
  if (reg === undefined) {
    const ended = await finishUnstartedAction(k, accepted, failedResult(accepted.action_id, new AipError('capability.not_found', undefined, { details: { capability_id: accepted.capability_id } }), k.now()));
    return { approval: decided, action_result: actionResultOf(ended) };
  }
  const adm: AdmittedAction = {
    caller: { principal: accepted.principal, tenants: [tenant_id], scopes: [] },
    principal: accepted.principal,
    tenant_id,
    action: accepted.action,
    reg,
    approval: decided,
    record: accepted,
    created: true,
  };
  try {
    const resumed = await guarded(k, adm, () => continueAdmission(k, adm));
    return { approval: decided, action_result: resumed.action_result, resumed };
  } catch (err) {
    if (!isAipError(err)) throw err;
    const current = await k.deps.actions.get({ tenant_id, action_id: accepted.action_id });
    const result: ActionResult = current?.result ?? failedResult(accepted.action_id, err, k.now());
    return { approval: decided, action_result: result };
  }
}

/** Pending approvals of a tenant (expired ones are expired on the way). */
export async function listApprovals(k: Kernel, caller: CallerIdentity, tenant_id: string, page: { cursor?: string; limit?: number } = {}): Promise<PageOf<ApprovalRecord>> {
  assertCallerCurrent(caller, k.now());
  assertTenantMember(caller, tenant_id);
  const out = await k.deps.approvals.listPending({ tenant_id, ...(page.limit !== undefined ? { limit: page.limit } : {}), ...(page.cursor !== undefined ? { cursor: page.cursor } : {}) });
  const now = k.now().getTime();
  const items: ApprovalRecord[] = [];
  for (const a of out.items) {
    if (Date.parse(a.expires_at) <= now) await expireApproval(k, a);
    else items.push(a);
  }
  return out.cursor !== undefined ? { items, cursor: out.cursor } : { items };
}
