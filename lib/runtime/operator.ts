/**
 * What operators do about stuck work, with evidence:
 *
 * - `overview`: each operator list with its size (first page) and the age of
 *   its oldest item;
 * - `requestReconcile`: reconcile now. The attempt bound is reset once
 *   (state machine `request_reconcile`, a receipt naming the operator and
 *   the reason) and the reconcile consumer is asked at once;
 * - `resolve`: for an escalated record (wire `requires_human`), the operator
 *   records the truth found at the provider: the effect happened or not, the
 *   provider operation if one was found, a reason and references to the
 *   evidence. Before anything is written the runtime asks the provider
 *   itself (./provider-lookup.ts): a resolution the provider's answer
 *   contradicts is refused unless the operator overrides it with a reason.
 *   The record settles `reconciled` (state machine `resolve`) with all of
 *   that, the provider's answer included, in its receipt. Where the tenant
 *   policy asks for four eyes, the resolution waits as an approval that a
 *   second operator decides (the provider is asked again then).
 *
 * Every write is a compare-and-set through the journal; nothing bypasses the
 * transition table. Who may: the authority rule (`operator_reconcile`,
 * `resolve`, `list_operator`).
 */
import { joinIssuePath } from '../../packages/connector-sdk/src/common/issues.js';
import { AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { sha256Hex, type ActionResult, type JsonObject, type Principal } from '../../packages/connector-sdk/src/protocol/index.js';
import { ResolutionSchema, type ApprovalRecord, type Resolution } from '../ports/approval-store.js';
import type { TransactionRecord } from '../ports/transaction-store.js';
import { cancelSchedule, completeOriginalReservation, redactOriginalInput } from './attempts/settlement.js';
import { missingTarget } from './authority.js';
import { principalKey } from '../auth/identity.js';
import { assertCallerCurrent, assertTenantMember, type CallerIdentity } from './identity.js';
import { RECEIPT_EVENTS } from './journal.js';
import type { Kernel } from './kernel.js';
import { transactionTarget } from './pipeline/targets.js';
import { mayReconcile, mayResolve } from '../transactions/operator-actions.js';
import { toTransactionResult } from './view.js';
import { retentionFor } from './retention.js';
import { answerEvidence, lookupProvider, providerVerdict, type ProviderAnswer, type ProviderVerdict } from './provider-lookup.js';

async function operatorTarget(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  transaction_id: string,
  operation: 'operator_reconcile' | 'resolve',
): Promise<TransactionRecord> {
  assertCallerCurrent(caller, k.now());
  assertTenantMember(caller, tenant_id);
  const record = await k.deps.transactions.get({ tenant_id, transaction_id });
  k.authority.require(
    caller,
    operation,
    record === undefined ? missingTarget('transaction', tenant_id, transaction_id) : transactionTarget(record, tenant_id, transaction_id),
  );
  return record as TransactionRecord;
}

/**
 * Reconcile now: resets the attempt bound once (and un-escalates), with a
 * receipt naming the operator, then asks the reconcile consumer. Only an
 * `outcome_unknown` record (escalated or not): a reconciliation in progress
 * is `runtime.reconcile_not_outcome_unknown`.
 */
export async function requestReconcile(k: Kernel, caller: CallerIdentity, tenant_id: string, transaction_id: string, input: { reason?: string } = {}) {
  const record = await operatorTarget(k, caller, tenant_id, transaction_id, 'operator_reconcile');
  if (!mayReconcile({ status: record.status, escalated: record.escalated_at !== undefined })) {
    throw new AipError('runtime.reconcile_not_outcome_unknown', undefined, { details: { transaction_id, status: record.status } });
  }
  const resets = typeof record.data.reconcile_resets === 'number' ? record.data.reconcile_resets : 0;
  let requested: TransactionRecord;
  try {
    requested = await k.write(
      k.journal.transition(
        record,
        {
          operation: 'request_reconcile',
          from: ['outcome_unknown'],
          to: 'outcome_unknown',
          data: { reconcile_resets: resets + 1, reconcile_requested_by: { ...caller.principal } },
        },
        RECEIPT_EVENTS.reconcile_requested,
        {
          requested_by: { ...caller.principal },
          previous_attempts: record.reconcile_attempts,
          ...(record.escalated_at !== undefined ? { was_escalated: true } : {}),
          ...(input.reason !== undefined ? { reason: input.reason } : {}),
        },
        { actor: caller.principal },
      ),
    );
  } catch (err) {
    if (isAipError(err, 'transaction.state_conflict'))
      throw new AipError('runtime.reconcile_not_outcome_unknown', 'The transaction moved: read it again', { details: { transaction_id }, cause: err });
    throw err;
  }
  await k.deps.reconcileQueue.send({ kind: 'reconcile', tenant_id, transaction_id, reason: 'operator' });
  return { transaction: toTransactionResult(requested) };
}

/** Whether resolutions in this tenant need a second operator. */
function fourEyes(k: Kernel, tenant_id: string): boolean {
  return k.config.tenants[tenant_id]?.resolution?.four_eyes ?? k.config.resolution.four_eyes;
}

/** The deterministic ID of a resolution's approval (one per proposal). */
function resolutionApprovalId(tenant_id: string, transaction_id: string, proposal: Resolution, by: Principal): string {
  return `apr-res-${sha256Hex(JSON.stringify([tenant_id, transaction_id, principalKey(by), proposal])).slice(0, 36)}`;
}

/** Whether `ref` is the record's checkpointed provider operation (provider and operation ID; the request ID is the provider's detail). */
function namesCheckpointed(record: TransactionRecord, ref: { provider: string; operation_id: string }): boolean {
  return (
    record.provider_operation !== undefined &&
    record.provider_operation.provider === ref.provider &&
    record.provider_operation.operation_id === ref.operation_id
  );
}

/** The provider's answer to a resolution and the verdict on it: what its receipt records beside the operator's word. */
export interface ProviderCheck {
  readonly answer: ProviderAnswer;
  readonly verdict: ProviderVerdict;
}

/**
 * Asks the provider about the escalated record's operation and judges the
 * resolution against the answer: `operator.resolution_contradicts_provider`
 * when the provider contradicts it and it carries no `provider_override`.
 * Writes nothing.
 */
export async function checkWithProvider(k: Kernel, record: TransactionRecord, resolution: Resolution): Promise<ProviderCheck> {
  const answer = await lookupProvider(k, record);
  return { answer, verdict: providerVerdict(record.transaction_id, resolution, answer) };
}

function checkEscalated(record: TransactionRecord): void {
  if (!mayResolve({ status: record.status, escalated: record.escalated_at !== undefined })) {
    throw new AipError('runtime.resolve_not_escalated', undefined, {
      details: { transaction_id: record.transaction_id, status: record.status, escalated: record.escalated_at !== undefined },
    });
  }
}

/**
 * Resolve an escalated record with the operator's evidence. Applied at once,
 * or (four eyes) proposed as an approval for a second operator.
 */
export async function resolve(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  transaction_id: string,
  input: unknown,
): Promise<{ transaction: ReturnType<typeof toTransactionResult> } | { approval: ApprovalRecord; status: 'requires_human' }> {
  const parsed = ResolutionSchema.safeParse(input);
  if (!parsed.success) {
    throw new AipError('request.invalid', 'The resolution is not valid', {
      details: { issues: parsed.error.issues.slice(0, 20).map((i) => ({ path: joinIssuePath(i.path, '.'), code: i.code })) },
    });
  }
  const resolution = parsed.data;
  const record = await operatorTarget(k, caller, tenant_id, transaction_id, 'resolve');
  checkEscalated(record);
  const known = record.provider_operation;
  if (
    resolution.provider_operation !== undefined &&
    known !== undefined &&
    (known.provider !== resolution.provider_operation.provider || known.operation_id !== resolution.provider_operation.operation_id)
  ) {
    throw new AipError('transaction.provider_operation_conflict', undefined, {
      details: { transaction_id, current_provider_operation: { provider: known.provider, operation_id: known.operation_id } },
    });
  }
  // The provider is asked before anything is written: a contradicted resolution never reaches a record or an approver.
  const check = await checkWithProvider(k, record, resolution);
  if (!fourEyes(k, tenant_id)) return { transaction: toTransactionResult(await applyResolution(k, record, resolution, caller.principal, check)) };

  const approval_id = resolutionApprovalId(tenant_id, transaction_id, resolution, caller.principal);
  const existing = await k.deps.approvals.get({ tenant_id, approval_id });
  if (existing !== undefined) return { approval: existing, status: 'requires_human' };
  const approver_scopes = [k.config.operator_scope];
  try {
    const approval = await k.write({
      kind: 'approval.create',
      input: {
        tenant_id,
        approval_id,
        // The approval store is action-centric: a resolution names the record's bound action and capability.
        action_id: record.action_id,
        transaction_id,
        capability_id: record.capability_id,
        requested_by: { ...caller.principal },
        policy: {
          policy_id: 'resolution-four-eyes',
          policy_hash: sha256Hex(JSON.stringify({ policy_id: 'resolution-four-eyes', approver_scopes, allow_self_approval: false, min_approvals: 1 })),
          approver_scopes,
          allow_self_approval: false,
          min_approvals: 1,
        },
        // The provider's answer now, shown to the second operator before they decide (approving asks again).
        subject: { resolution: { ...resolution, transaction_id }, provider_check: { answer: answerEvidence(check.answer), verdict: check.verdict } },
        expires_at: new Date(k.now().getTime() + k.config.resolution.approval_ttl_ms).toISOString(),
      },
    });
    return { approval, status: 'requires_human' };
  } catch (err) {
    if (!isAipError(err, 'approval.already_exists')) throw err;
    return { approval: (await k.deps.approvals.get({ tenant_id, approval_id })) as ApprovalRecord, status: 'requires_human' };
  }
}

/**
 * Settles an escalated record `reconciled` with the resolution as its
 * evidence (the `resolve` row), the provider's answer beside it
 * (`provider_answer`, `provider_verdict`), then what follows any
 * reconciliation: the schedule is cancelled and the original request's
 * uncertain idempotency reservation is completed. `approved_by`: the second
 * operator (four eyes); `provider_check_at_proposal`: the answer the proposal
 * carried, beside the one asked for at the approval.
 */
export async function applyResolution(
  k: Kernel,
  record: TransactionRecord,
  resolution: Resolution,
  resolved_by: Principal,
  check: ProviderCheck,
  approval?: ApprovalRecord,
): Promise<TransactionRecord> {
  checkEscalated(record);
  const evidence: JsonObject = {
    resolution: JSON.parse(JSON.stringify(resolution)) as JsonObject,
    resolved_by: { ...resolved_by },
    provider_answer: answerEvidence(check.answer),
    provider_verdict: check.verdict,
    ...(approval !== undefined
      ? {
          approval_id: approval.approval_id,
          approved_by: (approval.decisions ?? []).filter((d) => d.decision === 'approved').map((d) => ({ ...d.decided_by })),
          ...(approval.subject?.provider_check !== undefined
            ? { provider_check_at_proposal: JSON.parse(JSON.stringify(approval.subject.provider_check)) as JsonObject }
            : {}),
        }
      : {}),
  };
  const result: ActionResult = {
    action_id: record.action_id,
    status: 'completed',
    output: { resolution: evidence },
    completed_at: k.iso(),
    metadata: {
      reconciliation: {
        original_commit_completed: resolution.effect === 'committed',
        source: 'operator_resolution',
        resolved_by: { ...resolved_by },
        provider_verdict: check.verdict,
        ...(resolution.provider_operation !== undefined ? { provider_operation: { ...resolution.provider_operation } } : {}),
      },
    },
  };
  let resolved: TransactionRecord;
  try {
    resolved = await k.write(
      k.journal.transition(
        record,
        {
          operation: 'resolve',
          from: ['outcome_unknown'],
          to: 'reconciled',
          // The checkpointed operation, when the resolution names it (same provider and ID), stays as it was
          // checkpointed (with its request_id): re-binding it without one would be refused by the store's guard.
          patch: {
            result,
            ...(resolution.provider_operation !== undefined && !namesCheckpointed(record, resolution.provider_operation)
              ? { provider_operation: resolution.provider_operation }
              : {}),
          },
          ...(retentionFor(k, record.capability_id, record) !== undefined ? { retention: retentionFor(k, record.capability_id, record) } : {}),
        },
        RECEIPT_EVENTS.resolved,
        evidence,
        { actor: resolved_by, result },
      ),
    );
  } catch (err) {
    if (isAipError(err, 'transaction.state_conflict')) {
      throw new AipError('runtime.resolve_not_escalated', 'The transaction moved: read it again', {
        details: { transaction_id: record.transaction_id },
        cause: err,
      });
    }
    throw err;
  }
  await cancelSchedule(k, resolved);
  // The original action read once for both (terminal: only its redaction, conditioned on the revision, rewrites it).
  const original = await k.deps.actions.get({ tenant_id: resolved.tenant_id, action_id: resolved.action_id });
  await completeOriginalReservation(k, resolved, `operator:${resolved_by.id}`, original);
  await redactOriginalInput(k, resolved, original);
  return resolved;
}
