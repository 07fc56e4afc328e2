/**
 * Approval decisions. An authorized approver (the authority rule's `approve`:
 * holding ONE of the policy's approver scopes and, unless the policy allows
 * it, not the requester) approves or denies a pending approval, once per
 * approver. The approval stays pending until the policy's `min_approvals`
 * distinct approvers approved; the approval that completes it resumes the
 * action (steps 7-9 of the pipeline, with every approving decision as
 * verified evidence for the connector context); any denial ends it; pending
 * approvals expire; an approval whose action can no longer succeed is
 * withdrawn (./approval-withdrawal.ts). Approval and transaction state stay separate: an
 * approved action can still fail to claim a plan, and that failure is the
 * action's result.
 */
import { AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionResult } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ApprovalRecord } from '../ports/approval-store.js';
import { assertCallerCurrent, assertTenantMember, type CallerIdentity } from './identity.js';
import { failedResult, type Kernel } from './kernel.js';
import { withStoredResult } from './view.js';
import { approvalTarget } from './approval-listing.js';
import { withdrawIfDoomed } from './approval-withdrawal.js';
import { applyResolution, checkWithProvider, type ProviderCheck } from './operator.js';
import { actionResultOf, finishUnstartedAction } from './pipeline/action-record.js';
import { continueAdmission, guarded } from './pipeline/admit.js';
import type { AdmittedAction } from './pipeline/state.js';
import type { DecisionOutcome } from './types.js';

export interface ApprovalDecisionInput {
  readonly decision: 'approve' | 'deny';
  readonly reason?: string;
}

/** pending → expired, and the waiting action fails with runtime.approval_expired. */
export async function expireApproval(k: Kernel, approval: ApprovalRecord): Promise<void> {
  if (approval.status === 'pending') {
    try {
      await k.write({
        kind: 'approval.expire',
        input: { tenant_id: approval.tenant_id, approval_id: approval.approval_id, expected_revision: approval.revision },
      });
    } catch (err) {
      if (!(isAipError(err, 'approval.not_expired') || isAipError(err, 'approval.already_decided') || isAipError(err, 'approval.state_conflict'))) throw err;
      if (isAipError(err, 'approval.not_expired')) return;
    }
  }
  const action = await k.deps.actions.get({ tenant_id: approval.tenant_id, action_id: approval.action_id });
  if (action?.status === 'requires_human') {
    await finishUnstartedAction(
      k,
      action,
      failedResult(action.action_id, new AipError('runtime.approval_expired', undefined, { details: { approval_id: approval.approval_id } }), k.now()),
    );
  }
}

/** The refusal of a decision on a withdrawn approval, naming why. */
function withdrawnError(approval: ApprovalRecord): AipError {
  return new AipError('runtime.approval_withdrawn', undefined, {
    details: { approval_id: approval.approval_id, reason: approval.withdrawal?.reason ?? null, ...(approval.withdrawal?.details ?? {}) },
  });
}

/** Concurrent decisions on one approval lose their write to each other: read again and retry this often. */
const DECIDE_ATTEMPTS = 12;

export async function decideApproval(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  approval_id: string,
  input: ApprovalDecisionInput,
): Promise<DecisionOutcome> {
  assertCallerCurrent(caller, k.now());
  assertTenantMember(caller, tenant_id);
  if (input === null || typeof input !== 'object' || (input.decision !== 'approve' && input.decision !== 'deny')) {
    throw new AipError('runtime.invalid_query', 'decision must be approve or deny', { details: { field: 'decision' } });
  }
  const decision_id = `dec-${k.ids()}`;
  let decided: ApprovalRecord | undefined;
  /** An approving decision on an operator's resolution: the provider's answer, asked for before the decision is written. */
  let check: ProviderCheck | undefined;
  for (let attempt = 1; decided === undefined; attempt += 1) {
    const approval = await k.deps.approvals.get({ tenant_id, approval_id });
    if (approval === undefined) throw new AipError('approval.not_found', undefined, { details: { approval_id } });
    // The authority rule: one of the policy's approver scopes suffices; the requester only under
    // self-approval; a caller who may not read the approval is told it does not exist.
    k.authority.require(caller, 'approve', approvalTarget(approval));
    if (approval.status === 'pending' && Date.parse(approval.expires_at) <= k.now().getTime()) {
      await expireApproval(k, approval);
      throw new AipError('runtime.approval_expired', undefined, { details: { approval_id, expires_at: approval.expires_at } });
    }
    // Nobody decides an approval whose action can no longer succeed: it is withdrawn instead.
    const viable = await withdrawIfDoomed(k, approval);
    if (viable.status === 'withdrawn') throw withdrawnError(viable);
    // Approving an operator's resolution applies it: the provider is asked again first, and an answer that now
    // contradicts it refuses the decision before anything is written (lib/runtime/provider-lookup.ts).
    const proposal = viable.subject?.resolution;
    if (proposal !== undefined && input.decision === 'approve' && viable.status === 'pending' && check === undefined) {
      check = await checkProposal(k, viable, proposal);
    }
    try {
      decided = await k.write({
        kind: 'approval.decide',
        input: {
          tenant_id,
          approval_id,
          expected_revision: approval.revision,
          current: approval,
          decision_id,
          decided_by: { ...caller.principal },
          decision: input.decision === 'approve' ? 'approved' : 'denied',
          ...(input.reason !== undefined ? { reason: input.reason } : {}),
        },
      });
    } catch (err) {
      if (isAipError(err, 'approval.expired')) {
        await expireApproval(k, approval);
        throw new AipError('runtime.approval_expired', undefined, { details: { approval_id }, cause: err });
      }
      // Another approver's decision landed first: decide again on the record as it is now.
      if (isAipError(err, 'approval.state_conflict') && attempt < DECIDE_ATTEMPTS) continue;
      throw err;
    }
  }

  // An operator's resolution waiting for a second operator (four eyes): approving it applies it.
  const proposal = decided.subject?.resolution;
  if (proposal !== undefined) return decideResolution(k, decided, proposal, check);

  const action = await k.deps.actions.get({ tenant_id, action_id: decided.action_id });
  if (action === undefined) throw new AipError('action.not_found', undefined, { details: { action_id: decided.action_id } });
  // Still pending (fewer distinct approvers than the policy needs), or the action moved on already.
  if (decided.status === 'pending' || action.status !== 'requires_human') return { approval: decided, action_result: actionResultOf(action) };

  if (decided.status === 'denied') {
    const err = new AipError('runtime.approval_denied', undefined, { details: { approval_id, decision_id: decided.decision?.decision_id ?? null } });
    const ended = await finishUnstartedAction(k, action, failedResult(action.action_id, err, k.now()));
    return { approval: decided, action_result: actionResultOf(ended) };
  }

  // Approved: resume the action (steps 7-9) with the decisions as evidence.
  const accepted = await k.write({
    kind: 'action.transition',
    input: {
      tenant_id,
      action_id: action.action_id,
      from: ['requires_human'],
      to: 'accepted',
      expected_revision: action.revision,
    },
  });
  const reg = k.deps.registry.find(accepted.capability_id);
  if (reg === undefined) {
    const ended = await finishUnstartedAction(
      k,
      accepted,
      failedResult(accepted.action_id, new AipError('capability.not_found', undefined, { details: { capability_id: accepted.capability_id } }), k.now()),
    );
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

/** The decision on a resolution proposal: approved → the resolution applies (with both operators in its receipt). */
async function decideResolution(k: Kernel, decided: ApprovalRecord, proposal: ResolutionProposal, check: ProviderCheck | undefined): Promise<DecisionOutcome> {
  const { transaction_id, ...resolution } = proposal;
  const original = await k.deps.actions.get({ tenant_id: decided.tenant_id, action_id: decided.action_id });
  const unchanged: ActionResult = original !== undefined ? actionResultOf(original) : { action_id: decided.action_id, status: 'failed' };
  if (decided.status !== 'approved') return { approval: decided, action_result: unchanged };
  const record = await k.deps.transactions.get({ tenant_id: decided.tenant_id, transaction_id });
  if (record === undefined) throw new AipError('transaction.not_found', undefined, { details: { transaction_id } });
  const resolved = await applyResolution(k, record, resolution, decided.requested_by, check ?? (await checkWithProvider(k, record, resolution)), decided);
  return { approval: decided, action_result: (await withStoredResult(k, resolved, original)).result ?? unchanged };
}

/** What a refusal names of the check a proposal carried: the verdict and the answer without the connector's evidence. */
function checkSummary(check: NonNullable<NonNullable<ApprovalRecord['subject']>['provider_check']>): Record<string, unknown> {
  const { evidence: _evidence, ...answer } = check.answer;
  return { verdict: check.verdict, answer };
}

type ResolutionProposal = NonNullable<NonNullable<ApprovalRecord['subject']>['resolution']>;

/**
 * The provider's answer to a proposed resolution, asked again at the approval and judged: a contradicted proposal
 * without an override is refused, naming the answer the proposal carried beside today's. Writes nothing.
 */
async function checkProposal(k: Kernel, approval: ApprovalRecord, proposal: ResolutionProposal): Promise<ProviderCheck | undefined> {
  const { transaction_id, ...resolution } = proposal;
  const record = await k.deps.transactions.get({ tenant_id: approval.tenant_id, transaction_id });
  if (record === undefined) return undefined;
  try {
    return await checkWithProvider(k, record, resolution);
  } catch (err) {
    const atProposal = approval.subject?.provider_check;
    if (!isAipError(err, 'operator.resolution_contradicts_provider') || atProposal === undefined) throw err;
    throw new AipError('operator.resolution_contradicts_provider', err.message, {
      details: { ...err.details, approval_id: approval.approval_id, provider_check_at_proposal: checkSummary(atProposal) },
      cause: err,
    });
  }
}
