/**
 * An action's cancellation (Runtime.cancel). Not a read: an unstarted action
 * ends with a terminal write, which stamps the capability's retention, so it
 * runs with the connector parts loaded (lib/runtime/runtime.ts).
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionResult } from '../../packages/connector-sdk/src/protocol/index.js';
import { withdraw } from './approval-withdrawal.js';
import { abandonUnstartedTransaction } from './attempts/worker.js';
import type { CallerIdentity } from './identity.js';
import type { Kernel } from './kernel.js';
import { actionResultOf, finishUnstartedAction, isTerminalAction } from './pipeline/action-record.js';
import { visibleAction } from './reads.js';
import { mayCancel } from '../transactions/operator-actions.js';

/**
 * Cancels an action. Before any attempt started (accepted, or waiting for an
 * approval) the action ends `cancelled` and a transaction it admitted fails
 * (no provider effect was possible). A running action gets a durable
 * cancellation request; a terminal one cannot be cancelled.
 */
export async function cancel(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  action_id: string,
): Promise<{ action_result: ActionResult; cancel_requested: boolean }> {
  const record = await visibleAction(k, caller, tenant_id, action_id, 'cancel');
  if (record.status === 'cancelled') return { action_result: actionResultOf(record), cancel_requested: false };
  if (!mayCancel(record.status)) throw new AipError('runtime.cancel_not_allowed', undefined, { details: { action_id, status: record.status } });
  if ((record.status === 'accepted' && record.fence === 0) || record.status === 'requires_human') {
    const ended = await finishUnstartedAction(k, record, { action_id, status: 'cancelled', completed_at: k.iso() });
    if (ended.status === 'cancelled') {
      if (record.approval_id !== undefined) {
        const approval = await k.deps.approvals.get({ tenant_id, approval_id: record.approval_id });
        // Nobody is asked about a cancelled action: its approval is withdrawn (conditional; a decision that landed first stands).
        if (approval?.status === 'pending') await withdraw(k, approval, 'action_cancelled', { action_status: 'cancelled' });
      }
      const mode = ended.action.transaction?.mode;
      if (ended.transaction_id !== undefined && mode !== undefined && mode !== 'dry_run' && mode !== 'plan' && mode !== 'rollback_not_supported') {
        await abandonUnstartedTransaction(k, ended, ended.transaction_id);
      }
      return { action_result: actionResultOf(ended), cancel_requested: false };
    }
    if (isTerminalAction(ended.status)) return { action_result: actionResultOf(ended), cancel_requested: false };
  }
  const requested = await k.write({ kind: 'action.request_cancel', input: { tenant_id, action_id } });
  return { action_result: actionResultOf(requested), cancel_requested: true };
}
