/**
 * The admission pipeline, in the page's order:
 *   1 core envelope validation; 2 TransactionRequest checks;
 *   3 capability lookup, input schema; 4 authorization;
 *   5 preview-first exception (dry_run, plan); 6 approval gate;
 *   7 idempotency reservation; 8 transaction admission; 9 dispatch.
 * The native path and the TransactionRequest path share every step; the
 * wrapper only adds a TransactionResult (receipts are appended either way).
 *
 * Steps 1-4 (and the static preconditions of 7-8) write nothing. The action
 * record is created after step 4; a definitive rejection after that point is
 * recorded as the action's failed result, then thrown.
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { Action, ActionResult, TransactionRequest } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ActionRecord } from '../../ports/action-store.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import { invokeWithImages, type AdmittedImages, type InvokeMessage } from '../../ports/messages.js';
import type { CompensationMemory } from '../../../packages/connector-sdk/src/memory.js';
import type { IntentOf, Refusal, WriteIntent } from '../../ports/unit-of-work.js';
import { idempotencyInFlightError, idempotencyOutcomeUnknownError } from '../../ports/idempotency-store.js';
import { RECEIPT_EVENTS } from '../journal.js';
import { assertCallerCurrent, authorizeCapability, checkIdentityFields, resolveAccount, resolveTenant, type CallerIdentity } from '../identity.js';
import { deriveApprovalId, deriveTransactionId, failedResult, isTransientError, replayed, withTransactionId, type Kernel } from '../kernel.js';
import { admitDirectCommit, admitPlannedCommit, claimConflict, knownPlanned, planClaim, recheckPlan } from '../modes/commit.js';
import { admitExecute, admitRollbackNotSupported, executionContractDifferences, preparedRecordInput, replayGate } from '../modes/execute.js';
import type { SubmitOutcome, WaitingClient } from '../types.js';
import { attemptInline, mayAttemptInline } from './inline-attempt.js';
import { toTransactionResult, withStoredResult } from '../view.js';
import {
  actionResultOf,
  assertResubmission,
  createdLeased,
  ensureActionRecord,
  finishUnstartedAction,
  isTerminalAction,
  leaseLapsed,
} from './action-record.js';
import { policySnapshot, selectApprovalPolicy } from './approval-policy.js';
import { assertIdempotencyKey, assertModeDeclared, lookupAndValidate } from './capability.js';
import { heldKey, reserveIdempotency, reserveInput } from './idempotency.js';
import { submitOutcome } from './outcome.js';
import { resolveTargets, transactionTarget } from './targets.js';
import { recordedActor } from '../authority.js';
import { dataPolicyOf, definitiveInputRedaction, redactResult } from '../redaction.js';
import { actionRetention } from '../retention.js';
import type { AdmittedAction, Admission } from './state.js';

/**
 * The preview (dry_run, plan), imported on the first one: it runs the attempt's code (the connector call, its
 * deadline, the execution context), which an execute, a commit or a compensation never runs in the admission, so a
 * submit that previews nothing never loads it (docs/bench/analysis.md, "Issue 22: the submit's first execute").
 */
async function runPreview(k: Kernel, adm: AdmittedAction): Promise<SubmitOutcome> {
  return (await import('../modes/preview.js')).runPreview(k, adm);
}

/**
 * The compensate and reconcile modes and the settlement's reads, imported on their first use: a fresh execute or
 * commit never runs them, so its first submit does not load them (docs/bench/analysis.md, "Issue 22: the
 * admission's modes on first use"). The settlement's code is the attempts' (lib/runtime/attempts/settlement.ts);
 * the admission reads a record through it only on a resubmission.
 */
const compensateMode = () => import('../modes/compensate.js');
const reconcileMode = () => import('../modes/reconcile.js');
const settlement = () => import('../attempts/settlement.js');

export interface PrepareOptions {
  readonly tenant_id?: string;
  readonly request?: TransactionRequest;
  readonly internal?: boolean;
  readonly trusted_direct_commit?: boolean;
  /** A transaction record the caller already read (strongly consistent): the reconcile consumer's. */
  readonly known?: TransactionRecord;
  /** The client waits for the settlement (Prefer: wait): see `dispatch`. */
  readonly waiting?: WaitingClient;
}

/** Steps 3 and 4, then the transaction ID the mode needs. Writes nothing. */
export async function prepare(k: Kernel, caller: CallerIdentity, submitted: Action, options: PrepareOptions = {}): Promise<Admission> {
  // 3. capability lookup, then input schema validation (and the declared mode)
  const reg = lookupAndValidate(k.deps.registry, submitted);
  const mode = submitted.transaction?.mode;
  assertModeDeclared(reg.capability, mode);
  // 4. authorization: verified identity, tenant membership, capability scopes
  assertCallerCurrent(caller, k.now());
  const tenant_id = resolveTenant(caller, submitted, options.tenant_id);
  resolveAccount(caller, submitted); // the external account (credential row) must be one the token holds
  checkIdentityFields(caller, submitted); // identity.user_id names the verified caller
  authorizeCapability(caller, reg.capability);
  // static precondition of step 7
  assertIdempotencyKey(reg.capability, submitted);
  if (mode === 'commit' && submitted.transaction?.plan_id === undefined && options.trusted_direct_commit !== true) {
    throw new AipError('runtime.plan_required', undefined, { details: { path: '/transaction/plan_id' } });
  }

  // 4b. the existing records the action names (plan, transaction, compensation target): the authority rule, before any write
  const targets = await resolveTargets(k, caller, tenant_id, submitted, {
    ...(options.request !== undefined ? { request: options.request } : {}),
    ...(options.known !== undefined ? { known: options.known } : {}),
    ...(options.trusted_direct_commit === true ? { trusted_direct_commit: true } : {}),
  });
  let action = targets.action;
  const tx = action.transaction;
  if (tx !== undefined && tx.transaction_id === undefined) action = withTransactionId(action, deriveTransactionId(tenant_id, submitted.id));
  const known = targets.known_transaction;
  return {
    caller,
    principal: { ...caller.principal },
    tenant_id,
    action,
    reg,
    ...(options.request !== undefined ? { request: options.request } : {}),
    ...(options.internal === true ? { internal: true } : {}),
    ...(options.trusted_direct_commit === true ? { trusted_direct_commit: true } : {}),
    ...(known !== undefined ? { known_transaction: known } : {}),
    ...(options.waiting !== undefined ? { waiting: options.waiting } : {}),
    ...(targets.compensation_target !== undefined ? { compensation_target: targets.compensation_target } : {}),
  };
}

function isPreview(action: Action): boolean {
  const m = action.transaction?.mode;
  return m === 'dry_run' || m === 'plan';
}

/** Steps 5 onwards for a prepared admission. */
export async function admit(k: Kernel, adm: Admission): Promise<SubmitOutcome> {
  const mode = adm.action.transaction?.mode;
  // 6. approval gate (dry_run and plan use the preview-first exception)
  const policy = isPreview(adm.action) ? undefined : selectApprovalPolicy(k.config, adm.tenant_id, adm.reg.capability, mode);
  if (policy !== undefined) {
    // A commit or compensate that can never succeed is refused before an approver is asked (reads only).
    if ((mode === 'commit' && adm.action.transaction?.plan_id !== undefined) || mode === 'compensate') {
      const refusal = await recheckBeforeApproval(k, adm);
      if (refusal !== undefined) return rejectUnadmitted(k, adm, refusal);
    }
    const approval_id = deriveApprovalId(adm.tenant_id, adm.action.id);
    const { record, created } = await ensureActionRecord(k, adm, { status: 'requires_human', approval_id });
    if (!created) return resubmission(k, { ...adm, record, created });
    await ensureApproval(k, { ...adm, record, created });
    return requiresHuman(adm, record);
  }
  const foldable =
    mode === 'execute' ||
    (mode === undefined && adm.action.idempotency_key !== undefined) ||
    (mode === 'commit' && adm.action.transaction?.plan_id !== undefined && adm.trusted_direct_commit !== true);
  if (foldable) return admitAtomically(k, adm);
  const { record, created } = await ensureActionRecord(k, adm);
  const admitted: AdmittedAction = { ...adm, record, created };
  if (!created) return resubmission(k, admitted);
  return guarded(k, admitted, () => (isPreview(adm.action) ? runPreview(k, admitted) : continueAdmission(k, admitted)));
}

/**
 * The seven-point recheck of an approval-gated commit, or the eligibility
 * of an approval-gated compensate (target, window, contract), run before the
 * approval gate so that an approver is never asked about an action that
 * cannot succeed. Returns the refusal, or undefined when the commit may go
 * to its approver. An action that already exists (a resubmission), or an
 * idempotency key already held (a replay or an in-flight twin, which the
 * later steps answer), is left to the normal path.
 */
async function recheckBeforeApproval(k: Kernel, adm: Admission): Promise<unknown> {
  try {
    if (adm.action.transaction?.mode === 'compensate') await (await compensateMode()).assertCompensable(k, adm);
    else await recheckPlan(k, adm, knownPlanned(adm, adm.action.transaction?.plan_id as string));
    return undefined;
  } catch (err) {
    if (!isAipError(err) || isTransientError(err)) throw err;
    if ((await k.deps.actions.get({ tenant_id: adm.tenant_id, action_id: adm.action.id })) !== undefined) return undefined;
    const key = adm.action.idempotency_key;
    if (key !== undefined && (await k.deps.idempotency.get({ tenant_id: adm.tenant_id, principal_id: adm.principal.id, key })) !== undefined) return undefined;
    return err;
  }
}

/**
 * Records a definitive rejection on an action this admission owns, then rethrows.
 * `runtime.attempt_in_flight` is not one: a resubmission (or a concurrent
 * duplicate) that resumed admission found this very action's transaction
 * already admitted and in flight; the refusal concerns that request only, and
 * the action goes on (failing it would leave its transaction `prepared` with
 * no attempt ever settling it).
 */
export async function guarded<T>(k: Kernel, adm: AdmittedAction, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (isAipError(err) && !isTransientError(err) && !isAipError(err, 'runtime.attempt_in_flight')) {
      const current = await k.deps.actions.get({ tenant_id: adm.tenant_id, action_id: adm.action.id });
      if (current !== undefined && (unstarted(current) || createdLeasedUnstarted(k, adm, current))) {
        await finishUnstartedAction(k, current, failedResult(adm.action.id, err, k.now()));
        await releaseReservation(k, adm, current.fence);
      }
    }
    throw err;
  }
}

/** An action whose admission has not started an attempt (no lease was ever granted). */
function unstarted(current: ActionRecord): boolean {
  return (current.status === 'accepted' || current.status === 'requires_human') && current.fence === 0;
}

/**
 * An action created leased whose attempt has not reached the provider: nothing wrote it since its creation, and
 * either this admission created it (its attempt runs only after the admission returns), or its lease lapsed (the
 * consumer that created it stopped; a reconcile attempt reaches its provider only after its begin, and a begin with
 * this action's ID would have let this admission through instead of refusing it). Ended as an unstarted action is.
 */
function createdLeasedUnstarted(k: Kernel, adm: AdmittedAction, current: ActionRecord): boolean {
  return createdLeased(current) && ((adm.lease !== undefined && current.lease_owner === adm.lease.owner) || leaseLapsed(current, k.now()));
}

/**
 * Gives back the idempotency key this rejected admission reserved (if it did:
 * a reservation held by another action, or none, is left alone), so a
 * corrected request may use it, as when the composite admission write is
 * refused and writes nothing.
 */
async function releaseReservation(k: Kernel, adm: AdmittedAction, fence: number): Promise<void> {
  const key = adm.action.idempotency_key;
  if (key === undefined) return;
  try {
    await k.write({
      kind: 'idempotency.expire_rejected',
      input: { tenant_id: adm.tenant_id, principal_id: adm.principal.id, key, action_id: adm.action.id, fence },
    });
  } catch (err) {
    if (!isAipError(err, 'idempotency.not_owner')) throw err;
  }
}

function requiresHuman(adm: Admission, record: ActionRecord): SubmitOutcome {
  const result: ActionResult = {
    action_id: adm.action.id,
    status: 'requires_human',
    ...(record.approval_id ? { metadata: { approval_id: record.approval_id } } : {}),
  };
  const txId = adm.action.transaction?.transaction_id;
  return submitOutcome(
    adm,
    'requires_human',
    result,
    txId !== undefined && adm.request !== undefined
      ? {
          transaction_id: txId,
          ...(adm.action.transaction?.plan_id ? { plan_id: adm.action.transaction.plan_id } : {}),
          status: 'requires_human',
          action_result: result,
        }
      : undefined,
  );
}

/** Creates the pending approval of an action waiting as requires_human (idempotent). */
export async function ensureApproval(k: Kernel, adm: AdmittedAction): Promise<void> {
  // The governing policy with its terms (approvers needed, its own lifetime of a pending approval).
  const policy = policySnapshot(k.config, adm.tenant_id, adm.reg.capability, adm.action.transaction?.mode);
  const approval_id = adm.record.approval_id ?? deriveApprovalId(adm.tenant_id, adm.action.id);
  if (policy === undefined) return;
  const existing = await k.deps.approvals.get({ tenant_id: adm.tenant_id, approval_id });
  if (existing !== undefined) return;
  // A compensate's approval shows whose work it undoes (the target's recorded owner).
  const target = adm.compensation_target;
  try {
    await k.write({
      kind: 'approval.create',
      input: {
        tenant_id: adm.tenant_id,
        approval_id,
        action_id: adm.action.id,
        ...(adm.action.transaction?.transaction_id !== undefined ? { transaction_id: adm.action.transaction.transaction_id } : {}),
        capability_id: adm.action.capability_id,
        requested_by: adm.record.principal,
        policy,
        expires_at: new Date(k.now().getTime() + (policy.ttl_ms ?? k.config.approvals.ttl_ms)).toISOString(),
        ...(target !== undefined
          ? {
              subject: {
                compensation_for: {
                  action_id: target.action_id,
                  ...(target.transaction_id !== undefined ? { transaction_id: target.transaction_id } : {}),
                  owner: { id: target.owner.id, kind: target.owner.kind },
                },
              },
            }
          : {}),
      },
    });
  } catch (err) {
    if (!isAipError(err, 'approval.already_exists')) throw err;
  }
}

/** A resubmission of an action ID that already has a record (same action). */
async function resubmission(k: Kernel, adm: AdmittedAction): Promise<SubmitOutcome> {
  const record = adm.record;
  const mode = adm.action.transaction?.mode;
  if (record.status === 'requires_human') {
    await ensureApproval(k, adm);
    return requiresHuman(adm, record);
  }
  if ((record.status === 'accepted' && record.fence === 0) || (createdLeased(record) && leaseLapsed(record, k.now()))) {
    // Admission was interrupted before an attempt started: resume it (every step is idempotent). An action created
    // leased (a reconcile action) whose consumer stopped before its begin is resumed too once its lease lapsed: its
    // attempt cannot have reached the provider (the begin comes first), and the resumed attempt leases it again
    // (fence 2) and, as any attempt after a lease, reads the record again (lib/runtime/attempts/worker.ts).
    const approval = record.approval_id !== undefined ? await k.deps.approvals.get({ tenant_id: adm.tenant_id, approval_id: record.approval_id }) : undefined;
    const resumed: AdmittedAction = { ...adm, ...(approval?.status === 'approved' ? { approval } : {}) };
    return guarded(k, resumed, () => (isPreview(adm.action) ? runPreview(k, resumed) : continueAdmission(k, resumed)));
  }
  if (mode === 'execute') {
    const txId = adm.action.transaction?.transaction_id as string;
    // A record whose action settled first and whose attempt stopped before it is finished here (settledRecord).
    const existing = await (await settlement()).settledRecord(k, await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: txId }), record);
    if (existing !== undefined) {
      const verdict = replayGate(existing, adm);
      if (verdict.kind === 'replay') return replayFromRecord(adm, await withStoredResult(k, verdict.record, record), record);
    }
  }
  if (!isTerminalAction(record.status)) {
    throw new AipError('runtime.action_in_flight', undefined, { details: { action_id: record.action_id, status: record.status } });
  }
  const txId = record.transaction_id;
  const txRecord =
    txId !== undefined
      ? await (await settlement()).settledRecord(k, await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: txId }), record)
      : undefined;
  const result = replayed(actionResultOf(record));
  return submitOutcome(adm, 'replayed', result, txRecord ? toTransactionResult(txRecord, { action_status: record.status, action_result: result }) : undefined);
}

function replayFromRecord(adm: Admission, txRecord: TransactionRecord, actionRecord: ActionRecord | undefined): SubmitOutcome {
  const stored = actionRecord?.result ?? txRecord.result ?? { action_id: adm.action.id, status: 'completed' as const };
  const result = replayed(stored, { transaction_status: txRecord.status });
  return submitOutcome(adm, 'replayed', result, toTransactionResult(txRecord, { action_result: result }));
}

/** Steps 7 to 9 (shared by submit, a resumed admission and an approval). */
export async function continueAdmission(k: Kernel, adm: AdmittedAction): Promise<SubmitOutcome> {
  // 7. idempotency reservation
  const idem = await reserveIdempotency(k, adm);
  if (idem.replay !== undefined) {
    const stored = replayed(
      idem.replay,
      idem.from_action_id !== undefined && idem.from_action_id !== adm.action.id ? { replayed_from: idem.from_action_id } : undefined,
    );
    await finishUnstartedAction(k, adm.record, { ...stored, action_id: adm.action.id });
    return submitOutcome(adm, 'replayed', stored);
  }

  // 8. transaction admission
  let txRecord: TransactionRecord | undefined;
  // What this admission wrote itself, for the invoke message's images (dispatch); undefined: IDs only.
  let fresh: Fresh | undefined;
  switch (adm.action.transaction?.mode) {
    case undefined:
      fresh = {};
      break;
    case 'execute': {
      const out = await admitExecute(k, adm);
      if (out.replay) {
        if (adm.record.status === 'accepted' && adm.record.fence === 0 && out.record.result !== undefined)
          await finishUnstartedAction(k, adm.record, out.record.result);
        return replayFromRecord(adm, out.record, undefined);
      }
      txRecord = out.record;
      fresh = { transaction: out.record };
      break;
    }
    case 'commit':
      txRecord =
        adm.trusted_direct_commit === true && adm.action.transaction.plan_id === undefined ? await admitDirectCommit(k, adm) : await admitPlannedCommit(k, adm);
      break;
    case 'compensate': {
      const out = await (await compensateMode()).admitCompensate(k, adm);
      txRecord = out.record;
      if (out.created === true) fresh = { transaction: out.record, compensation: out.memory };
      break;
    }
    case 'reconcile':
      txRecord = await (await reconcileMode()).admitReconcile(k, adm);
      break;
    case 'rollback_not_supported':
      txRecord = await admitRollbackNotSupported(k, adm);
      break;
    case 'dry_run':
    case 'plan':
      return runPreview(k, adm);
  }

  return dispatch(k, adm, txRecord, fresh);
}

/** The records an admission wrote itself in this request, exactly as its writes returned them. */
interface Fresh {
  readonly transaction?: TransactionRecord;
  readonly compensation?: CompensationMemory;
}

/**
 * Step 9: the worker leases, invokes and settles. A fresh admission (it created the action, or accepted it on an
 * approval, in this request, and wrote the transaction record: `fresh`) sends the images of what it wrote with the
 * message, so the first delivery need not read them (lib/ports/messages.ts, `admitted`); a resumed admission, and an
 * image that does not fit the message's bound, send IDs only. A fresh admission whose client waits may instead run
 * its first attempt here, from those same records (./inline-attempt.ts, `attempt_when_waited`).
 */
async function dispatch(k: Kernel, adm: AdmittedAction, txRecord: TransactionRecord | undefined, fresh?: Fresh): Promise<SubmitOutcome> {
  k.crash('after_admission_before_enqueue');
  // The runtime's own reconcile actions run inline in the reconcile consumer (a crash is re-driven from `reconciling`).
  if (adm.internal === true && adm.created && adm.written !== undefined) adm.written.action = adm.record;
  const result: ActionResult = { action_id: adm.action.id, status: 'accepted' };
  const accepted = submitOutcome(adm, 'accepted', result, txRecord ? toTransactionResult(txRecord, { action_status: 'accepted' }) : undefined);
  if (adm.internal !== true) {
    const message: InvokeMessage = {
      kind: 'invoke',
      tenant_id: adm.tenant_id,
      action_id: adm.action.id,
      ...(adm.action.transaction?.transaction_id !== undefined ? { transaction_id: adm.action.transaction.transaction_id } : {}),
      fence: adm.record.fence,
      attempt: adm.record.attempt + 1,
    };
    // The client waits and the first attempt fits this function's time: it runs here, through the worker's own code;
    // the queue gets the message only if that attempt ends without a settlement (./inline-attempt.ts).
    if (fresh?.transaction !== undefined && mayAttemptInline(k, adm)) {
      const known = { action: adm.record, transaction: fresh.transaction, ...(fresh.compensation !== undefined ? { compensation: fresh.compensation } : {}) };
      const inline = await attemptInline(k, adm, message, known);
      if (inline.ran) return inline.settled !== undefined ? { ...accepted, settled: inline.settled } : accepted;
    }
    await k.enqueueInvoke(adm.created && fresh !== undefined ? invokeWithImages(message, admittedImages(adm.record, fresh)) : message);
  }
  return accepted;
}

/**
 * Steps 7 and 8 for execute, a planned commit and a plain invocation with an
 * idempotency key as ONE composite write: the action record, the idempotency
 * reservation and the `prepared` record with its first receipt, or the claim
 * of the planned record, in one commit (lib/ports/unit-of-work.ts). Nothing is read first
 * except, for a commit, the plan its seven-point recheck needs. When the write
 * is refused, the images of the refused items decide, in the order the
 * separate writes are made (action, then reservation, then transaction), with
 * the same typed outcome:
 *
 * - the action ID exists: a resubmission of that action (or runtime.action_conflict);
 * - the key is held: idempotency.fingerprint_mismatch, idempotency.in_flight,
 *   idempotency.outcome_unknown, or a replay of the stored result;
 * - the plan claim lost: runtime.plan_claim_conflict;
 * - the transaction ID exists: the replay gate on the stored record.
 *
 * The action record is then created once, already in its final state (failed
 * with the rejection, or finished with the replayed result): one write where
 * the separate path makes two.
 */
async function admitAtomically(k: Kernel, adm: Admission): Promise<SubmitOutcome> {
  const mode = adm.action.transaction?.mode;
  // A planned commit: the seven-point recheck reads the planned record the claim is conditioned on.
  let planned: TransactionRecord | undefined;
  // The planned record `prepare` already read (when it recovered the transaction ID from the plan) saves a read;
  // the claim is conditioned on its revision, so a record that moved since makes the claim lose (retried fresh below).
  const known = mode === 'commit' && adm.action.transaction?.plan_id !== undefined ? knownPlanned(adm, adm.action.transaction.plan_id) : undefined;
  if (mode === 'commit') {
    let checked: Awaited<ReturnType<typeof recheckPlan>>;
    try {
      checked = await recheckPlan(k, adm, known);
    } catch (err) {
      // The separate writes reserve the key before the recheck: a held key answers first (replay, in_flight, ...).
      const key = adm.action.idempotency_key;
      if (key !== undefined && (await k.deps.idempotency.get({ tenant_id: adm.tenant_id, principal_id: adm.principal.id, key })) !== undefined)
        return admitSeparately(k, adm);
      return rejectUnadmitted(k, adm, err);
    }
    if (checked.alreadyClaimed) return admitSeparately(k, adm);
    planned = checked.record;
  }
  const reservation = reserveInput(k, adm, 0);
  const createAction: IntentOf<'action.create'> = {
    kind: 'action.create',
    input: { tenant_id: adm.tenant_id, principal: adm.principal, action: adm.action, actor: recordedActor(adm.caller, k.config.issuer) },
  };
  const transaction =
    mode === 'execute'
      ? k.journal.create(preparedRecordInput(adm), RECEIPT_EVENTS.prepared, { action_id: adm.action.id })
      : planned !== undefined
        ? k.journal.claimPlan(planned, planClaim(adm, planned), { action_id: adm.action.id }, { actor: adm.principal })
        : undefined;
  const intents: WriteIntent[] = [
    createAction,
    ...(reservation !== undefined ? [{ kind: 'idempotency.reserve', input: reservation } as const] : []),
    ...(transaction !== undefined ? [transaction] : []),
  ];
  const written = await k.commit(intents);
  if (written.committed) {
    const admitted: AdmittedAction = { ...adm, record: written.written[0] as ActionRecord, created: true };
    const txRecord = transaction !== undefined ? (written.written[intents.length - 1] as TransactionRecord) : undefined;
    return guarded(k, admitted, () => dispatch(k, admitted, txRecord, txRecord !== undefined ? { transaction: txRecord } : {}));
  }
  // The refusals, in the order separate writes would meet them (action, then reservation, then transaction).
  const refused = written.refused;
  const out = {
    existing_action: refusalOf(refused, 'action.create')?.current,
    reservation: refusalOf(refused, 'idempotency.reserve')?.current,
    reservation_error: ((r) => (r !== undefined && r.current === undefined ? r.error : undefined))(refusalOf(refused, 'idempotency.reserve')),
    existing_transaction: refusalOf(refused, 'transaction.create')?.current,
    claim_error: refusalOf(refused, 'transaction.claim_plan')?.error,
  };
  const createRefused = refusalOf(refused, 'transaction.create');
  // The transaction ID is free but its plan guard or receipt refused (a lost race on an item beside it).
  if (createRefused !== undefined && createRefused.current === undefined) throw createRefused.error;
  if (out.existing_action !== undefined) {
    assertResubmission(k, out.existing_action, adm);
    return resubmission(k, { ...adm, record: out.existing_action, created: false });
  }
  if (out.reservation_error !== undefined) return rejectUnadmitted(k, adm, out.reservation_error);
  const held = out.reservation !== undefined ? await heldKey(k, adm.tenant_id, out.reservation) : undefined;
  if (held !== undefined) {
    switch (held.outcome) {
      case 'completed': {
        const stored = replayed(held.result, held.reservation.action_id !== adm.action.id ? { replayed_from: held.reservation.action_id } : undefined);
        if (!(await createFinished(k, adm, { ...stored, action_id: adm.action.id }))) return admitSeparately(k, adm);
        return submitOutcome(adm, 'replayed', stored);
      }
      case 'uncertain':
        return rejectUnadmitted(k, adm, idempotencyOutcomeUnknownError(held));
      case 'in_flight':
        // Held by this very action ID although its record is absent (it expired): the separate path decides.
        if (held.reservation.action_id === adm.action.id) return admitSeparately(k, adm);
        return rejectUnadmitted(k, adm, idempotencyInFlightError(held));
    }
  }
  if (out.claim_error !== undefined) {
    if (known !== undefined) {
      // Lost against a record read before this request's recheck: decide again from a fresh read (nothing was written).
      const { known_transaction: _stale, ...fresh } = adm;
      void _stale;
      return admitAtomically(k, fresh);
    }
    return rejectUnadmitted(k, adm, claimConflict(out.claim_error, planned ?? { transaction_id: adm.action.transaction?.transaction_id as string }));
  }
  const existing = out.existing_transaction;
  if (existing === undefined) throw new AipError('internal.unexpected', 'admission refused without a reason');
  // Another principal's transaction ID: refused as the authority rule says, and nothing is recorded (nothing was written).
  k.authority.require(
    adm.caller,
    'execute_replay',
    transactionTarget(existing, adm.tenant_id, existing.transaction_id, { fields: executionContractDifferences(existing, adm) }),
  );
  let verdict: ReturnType<typeof replayGate>;
  try {
    verdict = replayGate(existing, adm);
  } catch (err) {
    return rejectUnadmitted(k, adm, err);
  }
  if (verdict.kind !== 'replay') throw new AipError('internal.unexpected', 'the replay gate admitted an existing transaction');
  const replay = await withStoredResult(k, verdict.record);
  if (replay.result !== undefined && !(await createFinished(k, adm, replay.result))) return admitSeparately(k, adm);
  return replayFromRecord(adm, replay, undefined);
}

/** The refusal of the intent of `kind`, typed by it. */
function refusalOf<K extends WriteIntent['kind']>(refused: readonly Refusal[], kind: K): Extract<Refusal, { kind: K }> | undefined {
  return refused.find((r): r is Extract<Refusal, { kind: K }> => r.kind === kind);
}

/** The separate-writes path (a race on the action ID found while recording the outcome, or a case the fold leaves to it). */
async function admitSeparately(k: Kernel, adm: Admission): Promise<SubmitOutcome> {
  const { record, created } = await ensureActionRecord(k, adm);
  const admitted: AdmittedAction = { ...adm, record, created };
  if (!created) return resubmission(k, admitted);
  return guarded(k, admitted, () => continueAdmission(k, admitted));
}

/** Creates the action record already finished with `result` (false when the action ID exists by now). */
async function createFinished(k: Kernel, adm: Admission, result: ActionResult): Promise<boolean> {
  const status = result.status === 'completed' ? 'completed' : result.status === 'cancelled' ? 'cancelled' : 'failed';
  // Created already terminal (a rejection or a replay): the data contract's redaction applies at once.
  const policy = dataPolicyOf(adm.reg.capability);
  try {
    await k.write({
      kind: 'action.create',
      input: {
        tenant_id: adm.tenant_id,
        principal: adm.principal,
        action: adm.action,
        actor: recordedActor(adm.caller, k.config.issuer),
        status,
        result: redactResult(result, policy),
        ...(definitiveInputRedaction(policy, adm.action.input) ?? {}),
        ...actionRetention(k, policy),
      },
    });
    return true;
  } catch (err) {
    if (isAipError(err, 'action.already_exists')) return false;
    throw err;
  }
}

/** A definitive rejection of an admission that wrote nothing: the action is recorded failed with it (as `guarded` does), then it is thrown. */
async function rejectUnadmitted(k: Kernel, adm: Admission, err: unknown): Promise<SubmitOutcome> {
  // The action ID exists by now (a concurrent submission of the same action): that one decides.
  if (isAipError(err) && !isTransientError(err) && !(await createFinished(k, adm, failedResult(adm.action.id, err, k.now())))) return admitSeparately(k, adm);
  throw err;
}

/**
 * The images of a fresh admission's writes for its invoke message: the action item without its input (the lease
 * answers the whole item), the transaction record and a compensation's memory, as the writes returned them.
 */
function admittedImages(record: ActionRecord, fresh: Fresh): AdmittedImages {
  const { input: _input, ...envelope } = record.action;
  void _input;
  return {
    action: { ...record, action: envelope },
    ...(fresh.transaction !== undefined ? { transaction: fresh.transaction } : {}),
    ...(fresh.compensation !== undefined ? { compensation: fresh.compensation } : {}),
  } as AdmittedImages;
}
