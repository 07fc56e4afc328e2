/**
 * Approvals withdraw themselves: a pending approval whose action can no
 * longer succeed is closed `withdrawn` with a typed reason
 * (lib/ports/approval-store.ts `APPROVAL_WITHDRAWAL_REASONS`) and drops out
 * of every listing, so an approver is never asked about it:
 *
 * - `plan_claimed`: the approval of a commit whose plan is no longer
 *   `planned` (another commit of the plan claimed it, or it failed or
 *   expired);
 * - `action_cancelled` / `action_ended`: the waiting action is no longer
 *   waiting (cancelled, or ended otherwise);
 * - `resolution_refused`: an operator's resolution proposed for a
 *   transaction that is no longer escalated (applying it would be refused
 *   `runtime.resolve_not_escalated`).
 *
 * The withdrawal is one conditional write on the approval's status and
 * revision (a decision that lands first wins; the withdrawal then changes
 * nothing). The action still waiting for a withdrawn approval ends failed with
 * `runtime.approval_withdrawn`, naming the reason (a terminal write that
 * applies the capability's data contract, so it runs where the connectors are
 * loaded). Withdrawn where approvers list approvals and before a decision is
 * recorded; a cancellation withdraws its action's approval at once; the
 * operators' listing (served without connectors) leaves such approvals out.
 */
import { AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionRecord } from '../ports/action-store.js';
import type { ApprovalRecord, ApprovalWithdrawalReason } from '../ports/approval-store.js';
import { failedResult, type Kernel } from './kernel.js';
import { finishUnstartedAction } from './pipeline/action-record.js';

/** Why an approval's action can no longer succeed (see the file comment). */
export interface Doom {
  readonly reason: ApprovalWithdrawalReason;
  readonly details: Readonly<Record<string, string>>;
  /** The waiting action to end (when it still waits). */
  readonly action?: ActionRecord;
}

/** Why the approval's action can no longer succeed, or undefined while it can. Reads only (the operator listing, served without connectors, filters with it). */
export async function doomOf(k: Kernel, approval: ApprovalRecord): Promise<Doom | undefined> {
  const ref = { tenant_id: approval.tenant_id };
  const proposal = approval.subject?.resolution;
  if (proposal !== undefined) {
    const record = await k.deps.transactions.get({ ...ref, transaction_id: proposal.transaction_id });
    if (record !== undefined && record.status === 'outcome_unknown' && record.escalated_at !== undefined) return undefined;
    return { reason: 'resolution_refused', details: { transaction_status: record?.status ?? 'not_found' } };
  }
  const action = await k.deps.actions.get({ ...ref, action_id: approval.action_id });
  if (action === undefined) return undefined;
  if (action.status === 'cancelled') return { reason: 'action_cancelled', details: { action_status: action.status } };
  if (action.status !== 'requires_human') return { reason: 'action_ended', details: { action_status: action.status } };
  const tx = action.action.transaction;
  if (tx?.mode === 'commit' && tx.plan_id !== undefined && tx.transaction_id !== undefined) {
    const plan = await k.deps.transactions.get({ ...ref, transaction_id: tx.transaction_id });
    if (plan !== undefined && plan.status !== 'planned') {
      return { reason: 'plan_claimed', details: { plan_id: tx.plan_id, plan_status: plan.status }, action };
    }
  }
  return undefined;
}

/**
 * Withdraws the approval when its action can no longer succeed (see the file
 * comment). Returns the approval as it is now: `withdrawn`, or unchanged
 * (still viable, or decided meanwhile by someone else).
 */
export async function withdrawIfDoomed(k: Kernel, approval: ApprovalRecord): Promise<ApprovalRecord> {
  if (approval.status !== 'pending') return approval;
  const doom = await doomOf(k, approval);
  if (doom === undefined) return approval;
  return withdraw(k, approval, doom.reason, doom.details, doom.action);
}

/** The conditional withdrawal, then the waiting action (if any) ends `runtime.approval_withdrawn`. */
export async function withdraw(
  k: Kernel,
  approval: ApprovalRecord,
  reason: ApprovalWithdrawalReason,
  details: Readonly<Record<string, string>>,
  waiting?: ActionRecord,
): Promise<ApprovalRecord> {
  let withdrawn: ApprovalRecord;
  try {
    withdrawn = await k.write({
      kind: 'approval.withdraw',
      input: {
        tenant_id: approval.tenant_id,
        approval_id: approval.approval_id,
        expected_revision: approval.revision,
        reason,
        details,
      },
    });
  } catch (err) {
    // Decided, expired or withdrawn meanwhile (or another decision moved it): that write stands.
    if (!(isAipError(err, 'approval.already_decided') || isAipError(err, 'approval.state_conflict'))) throw err;
    return (await k.deps.approvals.get(approval)) ?? approval;
  }
  if (waiting?.status === 'requires_human') {
    const err = new AipError('runtime.approval_withdrawn', undefined, { details: { approval_id: approval.approval_id, reason, ...details } });
    await finishUnstartedAction(k, waiting, failedResult(waiting.action_id, err, k.now()));
  }
  return withdrawn;
}
