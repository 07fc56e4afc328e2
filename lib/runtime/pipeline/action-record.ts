/**
 * The action record: created once admission passed steps 1-4 (so a connector
 * is never invoked, not even for a downstream plan validation, before a
 * durable record exists). A resubmission of the same action ID must carry
 * the same action; a different one is `runtime.action_conflict` naming the
 * fields that differ.
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { canonicalJson, planInputHash, type ActionResult, type ActionStatus } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ActionRecord, ActionRecovery } from '../../ports/action-store.js';
import { TERMINAL_ACTION_STATUS_LIST } from '../../ports/action-store.js';
import type { Kernel } from '../kernel.js';
import { recordedActor } from '../authority.js';
import { dataPolicyOf, definitiveInputRedaction, redactResult } from '../redaction.js';
import { actionRetention } from '../retention.js';
import type { Admission } from './state.js';

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/** Fields in which a stored action differs from a resubmitted one. */
export function actionDifferences(record: ActionRecord, adm: Admission): string[] {
  const a = adm.action;
  const out: string[] = [];
  if (record.principal.id !== adm.principal.id || record.principal.kind !== adm.principal.kind) out.push('principal');
  if (record.capability_id !== a.capability_id) out.push('capability_id');
  if (record.input_hash !== planInputHash(a.capability_id, a.input)) out.push('input');
  if (!same(record.action.transaction, a.transaction)) out.push('transaction');
  if (!same(record.action.identity, a.identity)) out.push('identity');
  if ((record.action.idempotency_key ?? null) !== (a.idempotency_key ?? null)) out.push('idempotency_key');
  return out;
}

/** Creates the action record, or returns the existing one for the same action. */
export async function ensureActionRecord(
  k: Kernel,
  adm: Admission,
  init: { status?: ActionStatus; approval_id?: string } = {},
): Promise<{ record: ActionRecord; created: boolean }> {
  try {
    const record = await k.write({
      kind: 'action.create',
      input: {
        tenant_id: adm.tenant_id,
        principal: adm.principal,
        action: adm.action,
        ...(init.status !== undefined ? { status: init.status } : {}),
        ...(init.approval_id !== undefined ? { approval_id: init.approval_id } : {}),
        ...(requestRecovery(adm) !== undefined ? { recovery: requestRecovery(adm) } : {}),
        // Created leased for the caller's inline attempt; an action created for an approval (a status given) never is.
        ...(adm.lease !== undefined && init.status === undefined ? { lease: adm.lease } : {}),
        actor: recordedActor(adm.caller, k.config.issuer),
      },
    });
    return { record, created: true };
  } catch (err) {
    if (!isAipError(err, 'action.already_exists')) throw err;
  }
  const existing = await k.deps.actions.get({ tenant_id: adm.tenant_id, action_id: adm.action.id });
  if (existing === undefined)
    throw new AipError('action.state_conflict', 'The action record vanished during admission', { details: { action_id: adm.action.id } });
  assertResubmission(k, existing, adm);
  return { record: existing, created: false };
}

/**
 * An action ID that already exists may be resubmitted only by its owner
 * (the authority rule's `resubmit`), and only as the same action: otherwise
 * `runtime.action_conflict`, naming the differing fields only to a caller
 * who may read the existing action.
 */
export function assertResubmission(k: Kernel, existing: ActionRecord, adm: Admission): void {
  const fields = actionDifferences(existing, adm);
  k.authority.require(adm.caller, 'resubmit', {
    kind: 'action',
    tenant_id: existing.tenant_id,
    id: existing.action_id,
    owner: existing.principal,
    details: { fields },
  });
  if (fields.length > 0) throw new AipError('runtime.action_conflict', undefined, { details: { action_id: adm.action.id, fields } });
}

/**
 * The recovery data a first-class reconcile request supplies (provider
 * operation, cursor): stored with the action, so that a reconcile that waits
 * for an approval still has it when it resumes.
 */
export function requestRecovery(adm: Pick<Admission, 'request' | 'action'>): ActionRecovery | undefined {
  if (adm.action.transaction?.mode !== 'reconcile' || adm.request === undefined) return undefined;
  const { provider_operation, reconciliation_cursor } = adm.request;
  if (provider_operation === undefined && reconciliation_cursor === undefined) return undefined;
  return { ...(provider_operation !== undefined ? { provider_operation } : {}), ...(reconciliation_cursor !== undefined ? { reconciliation_cursor } : {}) };
}

/**
 * An action created already leased (`CreateActionInput.lease`: the reconcile consumer's) that nothing has written
 * since: `running` at revision 1 (any later lease, settlement or transition raises the revision). Its attempt has not
 * settled; whether it reached the provider is told by its transaction record (a reconcile attempt calls its provider
 * only after its begin moved the record to `reconciling` with this action's ID).
 */
export function createdLeased(record: Pick<ActionRecord, 'status' | 'revision'>): boolean {
  return record.status === 'running' && record.revision === 1;
}

/** The lease of a `running` action has expired (or it holds none): no attempt holds it. */
export function leaseLapsed(record: Pick<ActionRecord, 'lease_expires_at'>, now: Date): boolean {
  return record.lease_expires_at === undefined || Date.parse(record.lease_expires_at) <= now.getTime();
}

export function isTerminalAction(status: ActionStatus): boolean {
  return (TERMINAL_ACTION_STATUS_LIST as readonly ActionStatus[]).includes(status);
}

/** The action's current result (a non-terminal action reports its status only). */
export function actionResultOf(record: ActionRecord): ActionResult {
  return record.result ?? { action_id: record.action_id, status: record.status };
}

/**
 * Ends an action that has not started an attempt (accepted or requires_human)
 * with a terminal result. Returns the updated record, or the current one when
 * another writer got there first.
 */
export async function finishUnstartedAction(k: Kernel, record: ActionRecord, result: ActionResult): Promise<ActionRecord> {
  const to = result.status === 'completed' ? 'completed' : result.status === 'cancelled' ? 'cancelled' : 'failed';
  // Terminal without an attempt (a preview, a rejection, a cancellation, an expired approval): definitive, so the
  // data contract's redaction applies to the input now, and to the stored output.
  const policy = dataPolicyOf(k.deps.registry.find(record.capability_id)?.capability);
  const redaction = record.input_redacted === true ? undefined : definitiveInputRedaction(policy, record.action.input);
  try {
    return await k.write({
      kind: 'action.transition',
      input: {
        tenant_id: record.tenant_id,
        action_id: record.action_id,
        from: [record.status],
        to,
        expected_revision: record.revision,
        patch: { result: redactResult(result, policy), ...(redaction ?? {}), ...actionRetention(k, policy) },
      },
    });
  } catch (err) {
    if (isAipError(err, 'action.state_conflict')) {
      return (await k.deps.actions.get({ tenant_id: record.tenant_id, action_id: record.action_id })) ?? record;
    }
    throw err;
  }
}
