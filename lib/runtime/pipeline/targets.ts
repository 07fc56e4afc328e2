/**
 * Pipeline step 4b: the existing records an action names (a plan, a
 * transaction, a compensation target), each read and put to the authority
 * rule (../authority.ts) BEFORE anything is written. A caller who may not act
 * on a target gets the answer the rule gives (for most callers: the answer a
 * target that does not exist would get), and the action is not recorded, so
 * nothing of another principal's record can be read back through it.
 *
 * What is checked here, per mode:
 * - commit: the plan's owner (the planning principal) is the caller; a
 *   supplied transaction ID is the plan's; the planned record is handed on
 *   (the seven-point recheck starts from it);
 * - execute: a caller-supplied transaction ID that exists belongs to the
 *   caller (the composite admission write, which reads nothing first, makes
 *   the same check on the image of the record that refused it);
 * - reconcile: the owner, an operator or the runtime itself; an escalated
 *   record, or a provider operation supplied where none was checkpointed,
 *   needs an operator; a supplied operation that differs from the
 *   checkpointed one is `transaction.provider_operation_conflict`;
 * - compensate: the target's owner, or a principal the tenant policy allows
 *   (the operator scope by default).
 */
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { Action, ProviderOperationRef, TransactionRequest } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ActionRecord } from '../../ports/action-store.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import { missingTarget, type AuthorityTarget } from '../authority.js';
import type { CallerIdentity } from '../identity.js';
import { withTransactionId, type Kernel } from '../kernel.js';
import type { CompensationTargetRef } from './state.js';

export interface ResolvedTargets {
  /** The action with the transaction ID a commit recovered from its plan filled in. */
  readonly action: Action;
  /** The record the mode's admission starts from (a plan's planned record, a reconcile's record). */
  readonly known_transaction?: TransactionRecord;
  readonly compensation_target?: CompensationTargetRef;
}

export interface TargetOptions {
  readonly request?: TransactionRequest;
  /** A record the caller already read (the reconcile consumer's). */
  readonly known?: TransactionRecord;
  readonly trusted_direct_commit?: boolean;
}

/** A transaction record as an authority target. */
export function transactionTarget(
  record: TransactionRecord | undefined,
  tenant_id: string,
  transaction_id: string,
  details?: Record<string, unknown>,
): AuthorityTarget {
  if (record === undefined) return missingTarget('transaction', tenant_id, transaction_id);
  return { kind: 'transaction', tenant_id, id: transaction_id, owner: record.principal, ...(details !== undefined ? { details } : {}) };
}

function sameRef(a: ProviderOperationRef, b: ProviderOperationRef): boolean {
  return a.provider === b.provider && a.operation_id === b.operation_id;
}

async function planTarget(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  action: Action,
  known: TransactionRecord | undefined,
): Promise<ResolvedTargets> {
  const tx = action.transaction;
  const plan_id = tx?.plan_id as string;
  const record =
    known !== undefined && known.tenant_id === tenant_id && known.plan_id === plan_id ? known : await k.deps.transactions.get({ tenant_id, plan_id });
  const target: AuthorityTarget | undefined =
    record?.plan === undefined
      ? undefined
      : { kind: 'plan', tenant_id, id: plan_id, owner: record.plan.planned_by, details: { transaction_id: record.transaction_id } };
  k.authority.require(caller, 'commit', target ?? missingTarget('plan', tenant_id, plan_id));
  const planned = record as TransactionRecord;
  // Point 5 of the recheck, before anything is written: the action must not be bound to another transaction.
  if (tx?.transaction_id !== undefined && tx.transaction_id !== planned.transaction_id) {
    throw new AipError('runtime.plan_transaction_mismatch', undefined, { details: { plan_id, transaction_id: planned.transaction_id } });
  }
  return { action: withTransactionId(action, planned.transaction_id), known_transaction: planned };
}

async function reconcileTarget(k: Kernel, caller: CallerIdentity, tenant_id: string, action: Action, options: TargetOptions): Promise<ResolvedTargets> {
  const txId = action.transaction?.transaction_id;
  if (txId === undefined) throw new AipError('runtime.transaction_id_required', undefined, { details: { path: '/transaction/transaction_id' } });
  const known = options.known;
  const record =
    known !== undefined && known.tenant_id === tenant_id && known.transaction_id === txId
      ? known
      : await k.deps.transactions.get({ tenant_id, transaction_id: txId });
  const target = transactionTarget(record, tenant_id, txId);
  k.authority.require(caller, 'reconcile', target);
  const r = record as TransactionRecord;
  // A record parked for a human: only an operator reconciles it (the operator's reconcile route).
  if (r.status === 'outcome_unknown' && r.escalated_at !== undefined)
    k.authority.require(caller, 'reconcile_override', transactionTarget(r, tenant_id, txId, { escalated_at: r.escalated_at }));
  const supplied = options.request?.provider_operation;
  if (supplied !== undefined) {
    const checkpointed = r.provider_operation;
    if (checkpointed !== undefined && !sameRef(supplied, checkpointed)) {
      throw new AipError('transaction.provider_operation_conflict', undefined, {
        details: { transaction_id: txId, current_provider_operation: { provider: checkpointed.provider, operation_id: checkpointed.operation_id } },
      });
    }
    // Binding a provider operation the runtime never checkpointed is an operator's call, recorded as evidence.
    if (checkpointed === undefined)
      k.authority.require(caller, 'reconcile_override', transactionTarget(r, tenant_id, txId, { reason: 'no_checkpointed_provider_operation' }));
  }
  return { action, known_transaction: r };
}

/**
 * A compensation target's action and the transaction record bound to it, each read once (consistent). The action
 * item names its transaction (the binding a lookup by action ID reads), so the record is read by its ID: one read of
 * the action item, not a projected read and a full read of the same item. An action that names no transaction (an
 * item written before the binding, or no action) falls back to the store's lookup by action ID.
 */
export async function readCompensationTarget(
  k: Kernel,
  tenant_id: string,
  target_id: string,
): Promise<{ readonly record?: TransactionRecord; readonly action?: ActionRecord }> {
  const action = await k.deps.actions.get({ tenant_id, action_id: target_id });
  const bound = action?.transaction_id;
  const record =
    bound !== undefined
      ? await k.deps.transactions.get({ tenant_id, transaction_id: bound }).then((r) => (r?.action_id === target_id ? r : undefined))
      : await k.deps.transactions.get({ tenant_id, action_id: target_id });
  return { ...(record !== undefined ? { record } : {}), ...(action !== undefined ? { action } : {}) };
}

async function compensationTarget(k: Kernel, caller: CallerIdentity, tenant_id: string, action: Action): Promise<ResolvedTargets> {
  const target_id = action.transaction?.compensation_for;
  if (target_id === undefined)
    throw new AipError('envelope.compensate_requires_compensation_for', undefined, { details: { path: '/transaction/compensation_for' } });
  const { record, action: targetAction } = await readCompensationTarget(k, tenant_id, target_id);
  const owner = targetAction?.principal ?? record?.principal;
  const target: AuthorityTarget =
    owner === undefined ? missingTarget('compensation_target', tenant_id, target_id) : { kind: 'compensation_target', tenant_id, id: target_id, owner };
  k.authority.require(caller, 'compensate', target);
  return {
    action,
    compensation_target: {
      action_id: target_id,
      ...(record !== undefined ? { transaction_id: record.transaction_id } : {}),
      owner: { ...(owner as NonNullable<typeof owner>) },
      // The records as read, handed to the compensate admission (modes/compensate.ts findTarget) instead of a second read.
      ...(record !== undefined ? { record } : {}),
      ...(targetAction !== undefined ? { target_action: targetAction } : {}),
    },
  };
}

/** Step 4b (see the file comment). Reads only; throws the authority rule's refusals. */
export async function resolveTargets(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  action: Action,
  options: TargetOptions = {},
): Promise<ResolvedTargets> {
  const tx = action.transaction;
  switch (tx?.mode) {
    case 'commit':
      if (tx.plan_id === undefined) return { action }; // the trusted direct-commit branch
      return planTarget(k, caller, tenant_id, action, options.known);
    case 'reconcile':
      return reconcileTarget(k, caller, tenant_id, action, options);
    case 'compensate':
      return compensationTarget(k, caller, tenant_id, action);
    case 'execute':
      // The refused admission write carries the existing record's image: admitAtomically applies the authority rule there.
      return { action };
    default:
      return { action };
  }
}
