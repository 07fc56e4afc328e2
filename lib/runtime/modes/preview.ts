/**
 * dry_run and plan: the preview-first exception. They run before any
 * approval gate and record whether execution requires approval and the
 * applicable policy.
 *
 * Fidelity: for schema_only and policy_and_schema the runtime builds the
 * preview itself and never calls the handler; for downstream_validation and
 * full_simulation it calls plan_typed (inline: a preview is part of the
 * answer) and records the returned status and output. A plan is a
 * TransactionPlan in a `planned` record (15-minute expiry, default ID
 * `plan:<transaction_id>`); a failed downstream validation creates a `failed`
 * record without a plan.
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  PLAN_TTL_MS,
  defaultPlanId,
  fidelityInvokesHandler,
  planInputHash,
  type ActionResult,
  type ApprovalPolicyRef,
  type DownstreamValidation,
  type InputSnapshot,
  type JsonObject,
  type ProtocolError,
  type TransactionPlan,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import { hostedConnector, invokeConnector, leaseMs, routeAssignment, routeToPin } from '../attempts/invoke.js';
import type { ActionRecord } from '../../ports/action-store.js';
import type { RouteAssignment } from '../../ports/route-store.js';
import { RECEIPT_EVENTS } from '../journal.js';
import { failedResult, replayed, type Kernel } from '../kernel.js';
import { finishUnstartedAction } from '../pipeline/action-record.js';
import { selectApprovalPolicy } from '../pipeline/approval-policy.js';
import { reserveIdempotency } from '../pipeline/idempotency.js';
import type { AdmittedAction } from '../pipeline/state.js';
import { submitOutcome as outcome } from '../pipeline/outcome.js';
import type { SubmitOutcome } from '../types.js';
import { toTransactionResult } from '../view.js';
import { redactPointers } from '../redaction.js';
import { retentionFor } from '../retention.js';

interface PreviewFacts {
  readonly approval_required: boolean;
  readonly approval_policy?: ApprovalPolicyRef;
  readonly input_hash: string;
}

/** Runs dry_run or plan for an admitted action (record created, status accepted). */
export async function runPreview(k: Kernel, adm: AdmittedAction): Promise<SubmitOutcome> {
  const { action, reg, tenant_id } = adm;
  const tx = action.transaction;
  if (tx === undefined || (tx.mode !== 'dry_run' && tx.mode !== 'plan') || tx.transaction_id === undefined) {
    throw new AipError('internal.unexpected', 'runPreview needs a dry_run or plan action with a transaction ID');
  }
  const contract = reg.capability.transaction;
  if (contract === undefined) throw new AipError('runtime.mode_unsupported', undefined, { details: { capability_id: reg.capability_id, mode: tx.mode } });
  const replay = await reservePreviewKey(k, adm);
  if (replay !== undefined) return replay;
  const policy = selectApprovalPolicy(k.config, tenant_id, reg.capability, tx.mode === 'plan' ? 'commit' : 'execute');
  const facts: PreviewFacts = {
    approval_required: policy !== undefined,
    ...(policy !== undefined ? { approval_policy: policy } : {}),
    input_hash: planInputHash(action.capability_id, action.input),
  };
  const fidelity = contract.dry_run_fidelity;

  let validation: DownstreamValidation | undefined;
  let validationError: ProtocolError | undefined;
  let previewOutput: JsonObject;
  let admitted = adm;
  if (fidelityInvokesHandler(fidelity)) {
    // "The handler has to advertise transaction support."
    if (!reg.implementation_support.transaction) {
      throw new AipError('runtime.plan_transaction_support_missing', undefined, { details: { capability_id: reg.capability_id, fidelity } });
    }
    const hosted = await hostedConnector(k, reg);
    const attempt_id = `att-${k.ids()}`;
    const subject = {
      tenant_id,
      action,
      reg,
      principal: adm.principal,
      attempt_id,
      fence: adm.record.fence,
      issued_at: k.now(),
      lease_ms: leaseMs(k, reg),
      transaction: { transaction_id: tx.transaction_id, mode: tx.mode, ...(tx.plan_id !== undefined ? { plan_id: tx.plan_id } : {}) },
    };
    const pinned = await pinPreviewRoute(k, adm.record, routeAssignment(k, subject, hosted));
    admitted = { ...adm, record: pinned.record };
    const outcome = await invokeConnector(k, { ...subject, route: pinned.route }, hosted);
    const status = outcome.ok ? outcome.result.status : 'failed';
    const output = outcome.ok ? outcome.result.output : undefined;
    validation = { fidelity, status, ...(output !== undefined ? { output } : {}), validated_at: k.iso() };
    if (!outcome.ok) validationError = outcome.error;
    else if (status !== 'completed')
      validationError = failedResult(action.id, new AipError('runtime.input_invalid', 'Downstream validation did not complete'), k.now()).error;
    previewOutput = {
      fidelity,
      status,
      ...(output !== undefined ? { output } : {}),
      ...(validationError !== undefined ? { error_code: validationError.code } : {}),
    };
  } else {
    previewOutput = { fidelity, capability_id: action.capability_id, handler_invoked: false, input_valid: true };
  }

  const done =
    tx.mode === 'dry_run'
      ? await completeDryRun(k, admitted, facts, previewOutput, validation)
      : await completePlan(k, admitted, facts, previewOutput, validation, validationError);
  await completeReservation(k, admitted, done.action_result);
  return done;
}

/**
 * The preview's route, pinned on its action before the handler is called: one conditional write of the action
 * (`action.pin_route`, at the revision admitted; a preview takes no lease). A route already pinned is reused under
 * the attempt's rules, not written again. Returns the record as written, which the preview's settlement is
 * conditioned on.
 */
async function pinPreviewRoute(k: Kernel, record: ActionRecord, wanted: RouteAssignment): Promise<{ route: RouteAssignment; record: ActionRecord }> {
  const { route, pin } = await routeToPin(k, record, wanted);
  if (!pin) return { route, record };
  const written = await k.write({
    kind: 'action.pin_route',
    input: { tenant_id: record.tenant_id, action_id: record.action_id, expected_revision: record.revision, route },
  });
  return { route, record: written };
}

/**
 * A preview's idempotency key is reserved like any other action's (pipeline
 * step 7, before the preview runs): the same key with another request is
 * `idempotency.key_mismatch`, a twin still running is in flight, and a
 * completed preview replays its result instead of planning again. The
 * preview-first exception exempts previews from the approval gate, not from
 * idempotency (docs/runtime.md › "Previews and idempotency keys").
 */
async function reservePreviewKey(k: Kernel, adm: AdmittedAction): Promise<SubmitOutcome | undefined> {
  const idem = await reserveIdempotency(k, adm);
  if (idem.replay === undefined) return undefined;
  const stored = replayed(
    idem.replay,
    idem.from_action_id !== undefined && idem.from_action_id !== adm.action.id ? { replayed_from: idem.from_action_id } : undefined,
  );
  await finishUnstartedAction(k, adm.record, { ...stored, action_id: adm.action.id });
  return outcome(adm, 'replayed', stored);
}

/** The preview's definitive result completes its reservation (a crash before this leaves it in flight for a resubmission to complete). */
async function completeReservation(k: Kernel, adm: AdmittedAction, result: ActionResult): Promise<void> {
  const key = adm.action.idempotency_key;
  if (key === undefined) return;
  await k.write({
    kind: 'idempotency.complete',
    input: {
      tenant_id: adm.tenant_id,
      principal_id: adm.principal.id,
      key,
      action_id: adm.action.id,
      fence: adm.record.fence,
      result,
      retention_seconds: k.config.idempotency.retention_seconds,
    },
  });
}

async function createOrReuse(k: Kernel, adm: AdmittedAction, create: () => Promise<TransactionRecord>): Promise<TransactionRecord> {
  try {
    return await create();
  } catch (err) {
    if (!isAipError(err, 'transaction.already_exists')) throw err;
    // A resubmission of the same preview after a crash: reuse the record this action created.
    const txId = adm.action.transaction?.transaction_id as string;
    const existing = await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: txId });
    if (existing !== undefined && existing.action_id === adm.action.id && existing.mode === adm.action.transaction?.mode) return existing;
    throw err;
  }
}

async function completeDryRun(
  k: Kernel,
  adm: AdmittedAction,
  facts: PreviewFacts,
  preview: JsonObject,
  validation: DownstreamValidation | undefined,
): Promise<SubmitOutcome> {
  const { action, tenant_id } = adm;
  const txId = action.transaction?.transaction_id as string;
  const result: ActionResult = {
    action_id: action.id,
    status: 'completed',
    output: {
      dry_run: {
        ...preview,
        approval_required: facts.approval_required,
        ...(facts.approval_policy !== undefined ? { approval_policy: facts.approval_policy as unknown as JsonObject } : {}),
        input_hash: facts.input_hash,
      },
    },
    completed_at: k.iso(),
    metadata: { transaction_id: txId },
  };
  const record = await createOrReuse(k, adm, () =>
    k.write(
      k.journal.create(
        {
          tenant_id,
          transaction_id: txId,
          status: 'dry_run_completed',
          mode: 'dry_run',
          capability_id: action.capability_id,
          action_id: action.id,
          principal: adm.principal,
          ...(action.identity !== undefined ? { identity: action.identity } : {}),
          result,
          data: {
            transaction_context: { ...action.transaction } as JsonObject,
            ...(validation !== undefined ? { downstream_validation: validation as unknown as JsonObject } : {}),
          },
          ...(retentionFor(k, action.capability_id) !== undefined ? { retention: retentionFor(k, action.capability_id) } : {}),
        },
        RECEIPT_EVENTS.dry_run_completed,
        { action_id: action.id },
      ),
    ),
  );
  const final = await finishUnstartedAction(k, adm.record, result);
  const actionResult = final.result ?? result;
  return outcome(adm, 'completed', actionResult, toTransactionResult(record, { action_result: actionResult }));
}

async function completePlan(
  k: Kernel,
  adm: AdmittedAction,
  facts: PreviewFacts,
  preview: JsonObject,
  validation: DownstreamValidation | undefined,
  validationError: ProtocolError | undefined,
): Promise<SubmitOutcome> {
  const { action, tenant_id, reg } = adm;
  const tx = action.transaction;
  const txId = tx?.transaction_id as string;
  const base = {
    tenant_id,
    transaction_id: txId,
    mode: 'plan' as const,
    capability_id: action.capability_id,
    action_id: action.id,
    principal: adm.principal,
    ...(action.identity !== undefined ? { identity: action.identity } : {}),
  };

  if (validationError !== undefined) {
    // "A failed validation creates a failed transaction record without a plan."
    const result: ActionResult = { action_id: action.id, status: 'failed', error: validationError, completed_at: k.iso(), metadata: { transaction_id: txId } };
    const record = await createOrReuse(k, adm, () =>
      k.write(
        k.journal.create(
          {
            ...base,
            status: 'failed',
            error: validationError,
            result,
            data: { transaction_context: { ...tx } as JsonObject, ...(validation ? { downstream_validation: validation as unknown as JsonObject } : {}) },
            ...(retentionFor(k, action.capability_id) !== undefined ? { retention: retentionFor(k, action.capability_id) } : {}),
          },
          RECEIPT_EVENTS.validation_failed,
          { action_id: action.id, error_code: validationError.code },
        ),
      ),
    );
    const final = await finishUnstartedAction(k, adm.record, result);
    const actionResult = final.result ?? result;
    return outcome(adm, 'rejected', actionResult, toTransactionResult(record, { action_result: actionResult }));
  }

  const now = k.now();
  const plan_id = tx?.plan_id ?? defaultPlanId(txId);
  const redact = reg.capability.data?.redaction_required === true;
  // The snapshot keeps the raw input unless the contract requires redaction; values at its pointers are redacted either way.
  const input_snapshot: InputSnapshot = redact
    ? { redacted: true, hash: facts.input_hash }
    : { redacted: false, hash: facts.input_hash, value: redactPointers(action.input, reg.capability.data?.redact_pointers ?? []) };
  const plan: TransactionPlan = {
    plan_id,
    transaction_id: txId,
    capability_id: action.capability_id,
    planned_by: { ...adm.principal },
    planning_action_id: action.id,
    input_hash: facts.input_hash,
    input_snapshot,
    ...(action.identity !== undefined ? { identity_snapshot: { ...action.identity } } : {}),
    approval_required: facts.approval_required,
    ...(facts.approval_policy !== undefined ? { approval_policy: facts.approval_policy } : {}),
    ...(reg.capability.compensation !== undefined ? { compensation: reg.capability.compensation } : {}),
    ...(reg.capability.data !== undefined ? { data: reg.capability.data } : {}),
    idempotency: {
      ...(action.idempotency_key !== undefined ? { idempotency_key: action.idempotency_key } : {}),
      ...(reg.capability.idempotency !== undefined ? { contract: reg.capability.idempotency } : {}),
    },
    ...(reg.capability.execution !== undefined ? { service_level: reg.capability.execution } : {}),
    ...(validation !== undefined ? { downstream_validation: validation } : {}),
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + PLAN_TTL_MS).toISOString(),
  };
  const result: ActionResult = {
    action_id: action.id,
    status: 'completed',
    output: {
      plan_id,
      transaction_id: txId,
      expires_at: plan.expires_at,
      approval_required: facts.approval_required,
      ...(facts.approval_policy !== undefined ? { approval_policy: facts.approval_policy as unknown as JsonObject } : {}),
      preview,
    },
    completed_at: now.toISOString(),
    metadata: { transaction_id: txId, plan_id },
  };
  const record = await createOrReuse(k, adm, () =>
    k.write(
      k.journal.create(
        {
          ...base,
          status: 'planned',
          plan_id,
          plan,
          result,
          data: { transaction_context: { ...tx } as JsonObject, ...(validation ? { downstream_validation: validation as unknown as JsonObject } : {}) },
        },
        RECEIPT_EVENTS.planned,
        { action_id: action.id, plan_id },
      ),
    ),
  );
  const final = await finishUnstartedAction(k, adm.record, result);
  const actionResult = final.result ?? result;
  return outcome(adm, 'completed', actionResult, toTransactionResult(record, { action_result: actionResult }));
}
