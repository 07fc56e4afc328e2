/**
 * compensate: a new governed action with its own transaction record.
 *
 * Admitted only when the capability's compensation mode is supported or
 * best_effort and the action names compensation_for. The target needs a
 * completed result, or a non-retryable failure recording both
 * side_effects_committed: true and compensation_required: true; when the
 * target has a transaction record it must be committed or carry that
 * evidence. The optional window is measured from the target record's last
 * update, or, when there is no record, from the caller-carried RFC 3339
 * original_completed_at (marked as such).
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionResult, JsonObject, ProtocolError } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import { isTerminalStatus } from '../../transactions/state-machine.js';
import { RECEIPT_EVENTS } from '../journal.js';
import { settledRecord } from '../attempts/settlement.js';
import type { Kernel } from '../kernel.js';
import { withStoredResultOf } from '../view.js';
import type { CompensationMemory } from '../../../packages/connector-sdk/src/memory.js';
import { isTerminalAction } from '../pipeline/action-record.js';
import type { Admission } from '../pipeline/state.js';
import { readCompensationTarget } from '../pipeline/targets.js';
import type { RegisteredCapability } from '../registry.js';

/** The narrow partial-failure path: a non-retryable error recording committed side effects that require compensation. */
export function recordsPartialSideEffects(error: ProtocolError | undefined): boolean {
  return error !== undefined && error.retryable === false && error.details?.side_effects_committed === true && error.details?.compensation_required === true;
}

export type WindowBasisKind = 'target_record_updated_at' | 'caller_carried_original_completed_at';

export interface CompensationPlan {
  readonly record: TransactionRecord;
  readonly memory: CompensationMemory;
  /** The capability the connector-facing action is rewritten to (equals the requested one when there is no alternate). */
  readonly connectorReg: RegisteredCapability;
  /** True when this admission created the record (its image and `memory` then travel with the invoke message). */
  readonly created?: true;
}

interface Target {
  readonly record?: TransactionRecord;
  readonly result?: ActionResult;
  /** The record holds no result of its own (it references the target action, or has none): the original result is the action's. */
  readonly result_on_action?: boolean;
}

/**
 * The target as `prepare` read it when it can no longer change (its record terminal, or no record and a terminal
 * action: the state machine never moves a terminal record, and a terminal action keeps its status and result), else
 * read again. Saves the admission a second read of the same two items.
 */
async function findTarget(k: Kernel, adm: Admission, target_id: string): Promise<Target> {
  const held = adm.compensation_target;
  const settled =
    held !== undefined &&
    held.action_id === target_id &&
    (held.record !== undefined ? isTerminalStatus(held.record.status) : held.target_action !== undefined && isTerminalAction(held.target_action.status));
  const read = settled ? { record: held.record, action: held.target_action } : await readCompensationTarget(k, adm.tenant_id, target_id);
  // A target whose action settled first and whose record its attempt did not reach is finished before it is judged.
  const stored = await settledRecord(k, read.record, read.action);
  const action = read.action;
  const record = await withStoredResultOf(k, stored, action);
  if (record === undefined && action === undefined)
    throw new AipError('runtime.compensation_target_not_found', undefined, { details: { compensation_for: target_id } });
  const result = record?.result ?? action?.result;
  return {
    ...(record !== undefined ? { record } : {}),
    ...(result !== undefined ? { result } : {}),
    ...(stored !== undefined && stored.result === undefined ? { result_on_action: true } : {}),
  };
}

function assertEligible(target: Target, target_id: string): void {
  const r = target.record;
  if (r !== undefined) {
    if (r.status === 'committed') return;
    if (r.status === 'failed' && recordsPartialSideEffects(r.error ?? r.result?.error)) return;
    throw new AipError('runtime.compensation_target_ineligible', undefined, {
      details: { compensation_for: target_id, transaction_id: r.transaction_id, status: r.status },
    });
  }
  const res = target.result;
  if (res?.status === 'completed') return;
  if (res?.status === 'failed' && recordsPartialSideEffects(res.error)) return;
  throw new AipError('runtime.compensation_target_ineligible', undefined, { details: { compensation_for: target_id, status: res?.status ?? null } });
}

/** Resolves the compensation window basis and checks it (when the contract limits the window). */
function checkWindow(k: Kernel, adm: Admission, target: Target, window_ms: number | undefined): { basis?: string; kind?: WindowBasisKind } {
  let basis: string | undefined;
  let kind: WindowBasisKind | undefined;
  if (target.record !== undefined) {
    basis = target.record.updated_at;
    kind = 'target_record_updated_at';
  } else if (adm.action.metadata?.observability?.original_completed_at !== undefined) {
    basis = adm.action.metadata.observability.original_completed_at;
    kind = 'caller_carried_original_completed_at';
  }
  if (window_ms === undefined) return { ...(basis ? { basis } : {}), ...(kind ? { kind } : {}) };
  if (basis === undefined || kind === undefined) {
    throw new AipError('runtime.compensation_window_unverifiable', undefined, {
      details: { compensation_for: adm.action.transaction?.compensation_for ?? null },
    });
  }
  const closes = Date.parse(basis) + window_ms;
  if (k.now().getTime() > closes) {
    throw new AipError('runtime.compensation_window_expired', undefined, {
      details: { window_basis: basis, window_basis_kind: kind, window_ms, closed_at: new Date(closes).toISOString() },
    });
  }
  return { basis, kind };
}

/** The contract, target ID and connector-facing capability of a compensate (static checks, reads only the registry). */
function compensationContract(k: Kernel, adm: Admission) {
  const contract = adm.reg.capability.compensation;
  if (contract === undefined || (contract.mode !== 'supported' && contract.mode !== 'best_effort')) {
    throw new AipError('runtime.compensation_not_supported', undefined, { details: { capability_id: adm.reg.capability_id, mode: contract?.mode ?? null } });
  }
  const target_id = adm.action.transaction?.compensation_for;
  if (target_id === undefined)
    throw new AipError('envelope.compensate_requires_compensation_for', undefined, { details: { path: '/transaction/compensation_for' } });
  let connectorReg = adm.reg;
  const alt = contract.compensation_capability_id;
  if (alt !== undefined && alt !== adm.action.capability_id) {
    const found = k.deps.registry.find(alt);
    if (found === undefined) throw new AipError('runtime.compensation_capability_unavailable', undefined, { details: { compensation_capability_id: alt } });
    connectorReg = found;
  }
  return { contract, target_id, connectorReg };
}

/**
 * Everything step 8 checks of a compensate that does not depend on an
 * approval (contract, alternate capability, target eligibility, window),
 * reads only: run before the approval gate, so that an approver is never
 * asked about a compensation that would be refused once approved.
 */
export async function assertCompensable(k: Kernel, adm: Admission): Promise<void> {
  const { contract, target_id } = compensationContract(k, adm);
  const target = await findTarget(k, adm, target_id);
  assertEligible(target, target_id);
  checkWindow(k, adm, target, contract.window_ms);
}

/** Step 8 for compensate: eligibility, window, alternate capability, then the compensating record. */
export async function admitCompensate(k: Kernel, adm: Admission): Promise<CompensationPlan> {
  const { contract, target_id, connectorReg } = compensationContract(k, adm);
  const txId = adm.action.transaction?.transaction_id as string;

  const target = await findTarget(k, adm, target_id);
  const memory: CompensationMemory = {
    original_action_id: target_id,
    ...(target.record !== undefined ? { original_transaction_id: target.record.transaction_id } : {}),
    ...(target.result !== undefined ? { original_result: target.result } : {}),
    requested_capability_id: adm.action.capability_id,
    compensation_capability_id: connectorReg.capability_id,
    compensation_action_id: adm.action.id,
  };
  // A resubmission of this compensate after a crash reuses its record. No read of it first: the creation is
  // conditioned on the ID being free, and a refused one carries the existing record; only a target that no longer
  // passes the checks (the window closed since) reads it, so that an admitted compensation is never abandoned.
  const own = (existing: TransactionRecord | undefined) => existing !== undefined && existing.action_id === adm.action.id && existing.mode === 'compensate';
  let window: ReturnType<typeof checkWindow>;
  try {
    assertEligible(target, target_id);
    window = checkWindow(k, adm, target, contract.window_ms);
  } catch (err) {
    if (!isAipError(err)) throw err;
    const existing = await k.deps.transactions.get({ tenant_id: adm.tenant_id, transaction_id: txId });
    if (own(existing)) return { record: existing as TransactionRecord, memory, connectorReg };
    throw err;
  }
  const compensation: JsonObject = {
    target_action_id: target_id,
    ...(target.record !== undefined ? { target_transaction_id: target.record.transaction_id } : {}),
    ...(target.result_on_action === true ? { target_result_on_action: true } : {}),
    compensation_capability_id: connectorReg.capability_id,
    ...(window.basis !== undefined ? { window_basis: window.basis } : {}),
    ...(window.kind !== undefined
      ? { window_basis_kind: window.kind, window_basis_caller_carried: window.kind === 'caller_carried_original_completed_at' }
      : {}),
  };
  const create = k.journal.create(
    {
      tenant_id: adm.tenant_id,
      transaction_id: txId,
      status: 'compensating',
      mode: 'compensate',
      capability_id: adm.action.capability_id,
      action_id: adm.action.id,
      principal: adm.principal,
      ...(adm.action.identity !== undefined ? { identity: adm.action.identity } : {}),
      compensation_for: target_id,
      data: { transaction_context: { ...adm.action.transaction } as JsonObject, compensation },
    },
    RECEIPT_EVENTS.compensating,
    { action_id: adm.action.id, compensation_for: target_id },
  );
  const written = await k.commit([create] as const);
  if (written.committed) return { record: written.written[0], memory, connectorReg, created: true };
  const refusal = written.refused[0];
  const existing = refusal?.kind === 'transaction.create' ? refusal.current : undefined;
  if (own(existing)) return { record: existing as TransactionRecord, memory, connectorReg };
  if (existing !== undefined) {
    throw new AipError('runtime.execution_contract_mismatch', undefined, { details: { transaction_id: txId, fields: ['transaction'] }, cause: refusal?.error });
  }
  throw refusal?.error ?? new AipError('internal.unexpected', 'the compensating record was refused without a reason');
}

/** The connector-facing compensate action: rewritten to the alternate capability when there is one. */
export function connectorFacingCompensation<A extends { capability_id: string }>(action: A, connectorReg: RegisteredCapability): A {
  return action.capability_id === connectorReg.capability_id ? action : { ...action, capability_id: connectorReg.capability_id };
}
