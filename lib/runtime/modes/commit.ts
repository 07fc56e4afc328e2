/**
 * commit: the seven-point recheck of the transactions page ("What a planned
 * commit rechecks"), nothing more, then the atomic claim_plan. The trusted
 * direct-commit branch (claim_direct_commit) is reachable only from
 * Runtime.trustedDirectCommit, never from a validated public envelope.
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ErrorCode } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { planInputHash, type JsonObject, type TransactionPlan } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import { RECEIPT_EVENTS } from '../journal.js';
import type { Kernel } from '../kernel.js';
import { retentionFor } from '../retention.js';
import type { Admission } from '../pipeline/state.js';

function fail(code: ErrorCode, plan: Pick<TransactionPlan, 'plan_id' | 'transaction_id'>, extra: Record<string, unknown> = {}): AipError {
  return new AipError(code, undefined, { details: { plan_id: plan.plan_id, transaction_id: plan.transaction_id, ...extra } });
}

/**
 * The planned record `prepare` already read for this admission (when it
 * recovered the transaction ID from the plan), if it is the plan's record.
 */
export function knownPlanned(adm: Admission, plan_id: string): TransactionRecord | undefined {
  const known = adm.known_transaction;
  return known !== undefined && known.tenant_id === adm.tenant_id && known.plan_id === plan_id ? known : undefined;
}

/**
 * The seven checks, in the page's order. Returns the planned record, or the
 * record this same commit action already claimed (a resubmission). `known`
 * is the plan's record as this request already read it (strongly consistent,
 * see knownPlanned); without it the record is read here.
 */
export async function recheckPlan(k: Kernel, adm: Admission, known?: TransactionRecord): Promise<{ record: TransactionRecord; alreadyClaimed: boolean }> {
  const tx = adm.action.transaction;
  const plan_id = tx?.plan_id;
  if (plan_id === undefined) throw new AipError('runtime.plan_required', undefined, { details: { path: '/transaction/plan_id' } });
  const record = known ?? (await k.deps.transactions.get({ tenant_id: adm.tenant_id, plan_id }));
  // 1. the plan exists and its transaction record is still planned
  if (record === undefined || record.plan === undefined) throw new AipError('runtime.plan_not_found', undefined, { details: { plan_id } });
  const plan = record.plan;
  // Claimed by this very commit action (a resubmission or a concurrent duplicate), whatever its attempt has done since.
  if (record.status !== 'planned' && record.action_id === adm.action.id) return { record, alreadyClaimed: true };
  if (record.status !== 'planned') throw fail('runtime.plan_not_planned', plan, { status: record.status });
  // 2. the current capability ID matches the planned capability
  if (adm.action.capability_id !== plan.capability_id) throw fail('runtime.plan_capability_mismatch', plan);
  // 3. the committing principal ID and kind match the planning principal
  if (adm.principal.id !== plan.planned_by.id || adm.principal.kind !== plan.planned_by.kind) throw fail('runtime.plan_principal_mismatch', plan);
  // 4. the plan has not expired
  if (k.now().getTime() >= Date.parse(plan.expires_at)) {
    await expirePlan(k, record);
    throw fail('runtime.plan_expired', plan, { expires_at: plan.expires_at });
  }
  // 5. a supplied transaction ID matches the planned transaction ID
  if (tx?.transaction_id !== undefined && tx.transaction_id !== plan.transaction_id) throw fail('runtime.plan_transaction_mismatch', plan);
  // 6. the hash of the current capability ID and input matches the plan hash
  if (planInputHash(adm.action.capability_id, adm.action.input) !== plan.input_hash) throw fail('runtime.plan_input_mismatch', plan);
  // 7. presence of identity context matches, and its tenant and external account equal the planned values
  const planned = plan.identity_snapshot;
  const current = adm.action.identity;
  const identityFields: string[] = [];
  if ((planned === undefined) !== (current === undefined)) identityFields.push('presence');
  else if (planned !== undefined && current !== undefined) {
    if (planned.tenant_id !== current.tenant_id) identityFields.push('tenant_id');
    if (planned.external_account_id !== current.external_account_id) identityFields.push('external_account_id');
  }
  if (identityFields.length > 0) throw fail('runtime.plan_identity_mismatch', plan, { fields: identityFields });
  return { record, alreadyClaimed: false };
}

/** A plan past its expiry moves planned → failed (best effort: a lost race changes nothing). */
async function expirePlan(k: Kernel, record: TransactionRecord): Promise<void> {
  try {
    const retention = retentionFor(k, record.capability_id, record);
    await k.write(
      k.journal.transition(
        record,
        { operation: 'expire_plan', from: ['planned'], to: 'failed', ...(retention !== undefined ? { retention } : {}) },
        RECEIPT_EVENTS.plan_expired,
      ),
    );
  } catch (err) {
    if (!isAipError(err, 'transaction.state_conflict')) throw err;
  }
}

function claimPlan(k: Kernel, adm: Admission, record: TransactionRecord): Promise<TransactionRecord> {
  return k.write(k.journal.claimPlan(record, planClaim(adm, record), { action_id: adm.action.id }, { actor: adm.principal }));
}

/** What a commit's claim_plan writes (shared with the composite admission write). */
export function planClaim(adm: Pick<Admission, 'action'>, record: TransactionRecord): { plan_id: string; commit_action_id: string; data: JsonObject } {
  return {
    plan_id: record.plan_id as string,
    commit_action_id: adm.action.id,
    data: { commit_transaction_context: { ...adm.action.transaction } as JsonObject },
  };
}

/** A lost claim race is `runtime.plan_claim_conflict` (exactly one claimant wins); other errors pass through. */
export function claimConflict(err: unknown, record: Pick<TransactionRecord, 'plan_id' | 'transaction_id'>): unknown {
  if (isAipError(err, 'transaction.state_conflict')) {
    return new AipError('runtime.plan_claim_conflict', undefined, { details: { plan_id: record.plan_id, transaction_id: record.transaction_id }, cause: err });
  }
  return err;
}

/**
 * Step 8 for a planned commit: recheck, then claim_plan (planned → committing). Exactly one claimant wins.
 *
 * When `prepare` already read the planned record (it recovered the transaction
 * ID from the plan), the recheck starts from that record instead of reading it
 * again. The claim is a compare-and-set on `planned`, the plan ID and that
 * record's revision, so it cannot succeed over a record that moved since; if
 * it loses, the commit is decided as before, from a fresh read: recheck (which
 * names what changed, or finds this action's own claim) and claim once more.
 */
export async function admitPlannedCommit(k: Kernel, adm: Admission): Promise<TransactionRecord> {
  const plan_id = adm.action.transaction?.plan_id;
  const known = plan_id !== undefined ? knownPlanned(adm, plan_id) : undefined;
  if (known !== undefined) {
    const first = await recheckPlan(k, adm, known);
    if (first.alreadyClaimed) return first.record;
    try {
      return await claimPlan(k, adm, first.record);
    } catch (err) {
      if (!isAipError(err, 'transaction.state_conflict')) throw err;
      // The record moved after prepare read it: decide from a fresh read below.
    }
  }
  const { record, alreadyClaimed } = await recheckPlan(k, adm);
  if (alreadyClaimed) return record;
  try {
    return await claimPlan(k, adm, record);
  } catch (err) {
    if (isAipError(err, 'transaction.state_conflict')) {
      // Lost to a concurrent admission of this same commit action (a duplicate submission): it is claimed, by this action.
      const current = await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: record.transaction_id });
      if (current !== undefined && current.status !== 'planned' && current.action_id === adm.action.id) return current;
    }
    throw claimConflict(err, record);
  }
}

/**
 * The direct-commit branch: only when the capability contract sets
 * requires_plan_before_commit to false and the action has no plan ID;
 * claim_direct_commit creates the record in committing, and an existing
 * transaction ID is a conflict.
 */
export async function admitDirectCommit(k: Kernel, adm: Admission): Promise<TransactionRecord> {
  const contract = adm.reg.capability.transaction;
  if (contract === undefined || contract.requires_plan_before_commit) {
    throw new AipError('runtime.plan_required', undefined, { details: { capability_id: adm.reg.capability_id, reason: 'requires_plan_before_commit' } });
  }
  const txId = adm.action.transaction?.transaction_id as string;
  try {
    return await k.write(
      k.journal.claimDirectCommit(
        {
          tenant_id: adm.tenant_id,
          transaction_id: txId,
          mode: 'commit',
          capability_id: adm.action.capability_id,
          action_id: adm.action.id,
          principal: adm.principal,
          ...(adm.action.identity !== undefined ? { identity: adm.action.identity } : {}),
          data: { transaction_context: { ...adm.action.transaction } as JsonObject },
        },
        { action_id: adm.action.id },
      ),
    );
  } catch (err) {
    if (isAipError(err, 'transaction.already_exists')) {
      const existing = await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: txId });
      if (existing !== undefined && existing.action_id === adm.action.id && existing.mode === 'commit' && existing.plan_id === undefined) return existing;
    }
    throw err;
  }
}
