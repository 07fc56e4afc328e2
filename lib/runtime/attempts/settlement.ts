/**
 * Settlement of one attempt (pipeline step 9, second half).
 *
 * - execute / commit: a completed result settles `committed`; a failed result
 *   whose code is sla.timeout_exceeded or whose details carry
 *   uncertain_outcome: true settles `outcome_unknown` (keeping the provider
 *   operation, the cursor, the redacted error and the earliest reconciliation
 *   time: retry_after_ms, else 5 s) and schedules reconciliation; any other
 *   failure settles `failed`.
 * - compensate: completed → `compensated`, anything else → `failed`.
 * - reconcile: completed → `reconciled`; failed (or non-terminal) → back to
 *   `outcome_unknown` with updated recovery data and backoff; exhausted
 *   attempts escalate to a human (wire `requires_human`).
 * - plain invocation and rollback_not_supported: the action only.
 *
 * A definitive outcome of an execute, commit or compensate settles the action
 * alone first (fenced; its result is the durable answer), then the record with
 * its receipt, computed from the settled action by ONE function
 * (recordSettlement) that every recovery uses too (docs/table-design.md, "The
 * action settles first"). Any other settlement writes the transaction record
 * (with its receipt), the action record (fenced) and the idempotency
 * reservation in ONE commit of the unit of work, then the schedule is created;
 * a crash after the write leaves the schedule to the sweeper. A delivery that
 * finds the transaction already settled (an attempt superseded before it
 * finished the action) finishes the action and the reservation from the
 * durable record (finishSideRecords).
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { toProtocolError } from '../../../packages/connector-sdk/src/protocol/problem.js';
import type { AttemptOutcome as ConnectorAttemptOutcome } from './deadline.js';
import type { ActionResult, JsonObject, ProtocolError, ProviderOperationRef, TransactionMode } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ActionRecord, ActionSettlementFacts, SettleActionInput } from '../../ports/action-store.js';
import { IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS, type IdempotencyReservation } from '../../ports/idempotency-store.js';
import type { IntentOf, WriteIntent } from '../../ports/unit-of-work.js';
import type { SettleInput, TransactionRecord } from '../../ports/transaction-store.js';
import { DEFAULT_RECONCILE_DELAY_MS, type SettleOutcome } from '../../transactions/state-machine.js';
import {
  cursorFromError,
  definitiveOutcome,
  isUncertainFailure,
  pendingSettlement,
  providerOperationFromError,
  settledError,
  settlingAttemptId,
  type SettledAction,
} from '../settled-outcome.js';
import { reconcileBackoffMs } from '../config.js';
import { dataPolicyOf, definitiveInputRedaction, redactResult } from '../redaction.js';
import { actionRetention, retentionFor } from '../retention.js';
import { RECEIPT_EVENTS } from '../journal.js';
import type { Kernel } from '../kernel.js';
import { withStoredResult } from '../view.js';
import { isTerminalAction } from '../pipeline/action-record.js';
import type { RegisteredCapability } from '../registry.js';
import type { AttemptOutcome } from '../types.js';

export interface Classified {
  /** The action's terminal result. */
  readonly result: ActionResult;
  /** Where the transaction record settles (undefined for plain invocations). */
  readonly to?: SettleOutcome;
  readonly error?: ProtocolError;
}

/** Turns what the connector attempt produced into the action result and the transaction outcome. */
export function classify(
  k: Kernel,
  mode: TransactionMode | undefined,
  outcome: ConnectorAttemptOutcome,
  connectorReg: RegisteredCapability,
  action_id: string,
): Classified {
  const at = k.iso();
  let result: ActionResult;
  let error: ProtocolError | undefined;
  if (outcome.ok) {
    result = { ...outcome.result, action_id, completed_at: outcome.result.completed_at ?? at };
    // The output schema is checked on the output as returned; what is stored is redacted at the data contract's pointers.
    const redactStored = (r: ActionResult): ActionResult => redactResult(r, dataPolicyOf(connectorReg.capability));
    const checked = classifyOutput(result, outcome.method, connectorReg, action_id, at);
    result = redactStored(checked.result);
    if (checked.error !== undefined) error = checked.error;
  } else {
    error = outcome.error;
    result = { action_id, status: 'failed', error, completed_at: at };
  }
  const classified = classifyResult(mode, result, error, action_id, at);
  // A client cancelled the action and the connector's answer is a certain failure: nothing happened, and the action
  // ends `cancelled` (its transaction `failed`: failed before any known commit). An uncertain one stays uncertain.
  if (
    outcome.client_cancelled === true &&
    classified.result.status === 'failed' &&
    !isUncertainFailure(classified.error) &&
    classified.to !== 'outcome_unknown'
  ) {
    return { ...classified, result: { ...classified.result, status: 'cancelled' } };
  }
  return classified;
}

/** A completed result whose output fails the admitted output schema is an uncertain failure (the handler ran). */
function classifyOutput(
  result: ActionResult,
  method: string,
  connectorReg: RegisteredCapability,
  action_id: string,
  at: string,
): { result: ActionResult; error?: ProtocolError } {
  if (result.status === 'completed' && method !== 'reconcile_typed' && method !== 'plan_typed') {
    const issues = connectorReg.validateOutput(result.output);
    if (issues.length > 0) {
      const error: ProtocolError = {
        ...toProtocolError(
          new AipError('runtime.output_invalid', undefined, { details: { issues: issues.map((i) => ({ path: i.path, keyword: i.keyword })) } }),
        ),
        uncertain_outcome: true,
        details: { issues: issues.map((i) => ({ path: i.path, keyword: i.keyword })), uncertain_outcome: true },
      };
      return { result: { action_id, status: 'failed', error, completed_at: at }, error };
    }
  }
  return { result };
}

function classifyResult(
  mode: TransactionMode | undefined,
  result: ActionResult,
  errorIn: ProtocolError | undefined,
  action_id: string,
  at: string,
): Classified {
  let error = errorIn;
  if (result.status === 'failed' && result.error !== undefined) error = result.error;

  switch (mode) {
    case 'execute':
    case 'commit': {
      if (result.status === 'completed') return { result, to: 'committed' };
      if (result.status === 'failed') return { result, to: isUncertainFailure(error) ? 'outcome_unknown' : 'failed', ...(error ? { error } : {}) };
      // A non-terminal answer from a mutation: the effect may be under way.
      const e = toProtocolError(
        new AipError('runtime.attempt_abandoned', 'The connector returned a non-terminal result for a mutation', {
          details: { uncertain_outcome: true, returned_status: result.status },
        }),
      );
      return {
        result: { action_id, status: 'failed', error: { ...e, uncertain_outcome: true }, completed_at: at },
        to: 'outcome_unknown',
        error: { ...e, uncertain_outcome: true },
      };
    }
    case 'compensate':
      if (result.status === 'completed') return { result, to: 'compensated' };
      // The page settles "another result" as failed; an UNCERTAIN failure of a compensation (a refund whose answer was
      // lost) is not proof that nothing happened, so it settles outcome_unknown and is reconciled ("Compensation can
      // itself need approval, idempotency, reconciliation, and operator follow-up").
      if (result.status === 'failed' && isUncertainFailure(error)) return { result, to: 'outcome_unknown', ...(error ? { error } : {}) };
      return { result: asFailed(result, at), to: 'failed', ...(error ? { error } : {}) };
    case 'reconcile':
      return result.status === 'completed'
        ? { result, to: 'reconciled' }
        : { result: asFailed(result, at), to: 'outcome_unknown', ...(error ? { error } : {}) };
    default:
      return { result: result.status === 'completed' || result.status === 'failed' ? result : asFailed(result, at), ...(error ? { error } : {}) };
  }
}

function asFailed(result: ActionResult, at: string): ActionResult {
  if (result.status === 'failed') return result;
  const e = toProtocolError(
    new AipError('runtime.attempt_abandoned', 'The connector returned a non-terminal result', { details: { returned_status: result.status } }),
  );
  return { action_id: result.action_id, status: 'failed', error: e, completed_at: at };
}

export interface SettleRequest {
  readonly action: ActionRecord;
  /** The fence this attempt holds on the action. */
  readonly fence: number;
  readonly mode: TransactionMode | undefined;
  /** The transaction record as this attempt last wrote it (its revision is the fence on the record). */
  readonly txn?: TransactionRecord;
  readonly classified: Classified;
  /** Recovery data the attempt learned (checkpointed or not). */
  readonly provider_operation?: ProviderOperationRef;
  readonly cursor?: string;
  readonly reg: RegisteredCapability;
  readonly attempt_id: string;
  /** Reconcile: the reconciliation record (terminal or not) as evidence. */
  readonly reconciliation?: JsonObject;
  /** Reconcile: the original action as the consumer read it (used only when terminal: a terminal action is never rewritten). */
  readonly original?: ActionRecord;
}

/**
 * What a record's settlement is computed from, whichever path writes it: the attempt's request (a settlement in one
 * write with the action) or the settled action (the action settled first: `settledBasis`).
 */
interface SettlementBasis {
  readonly action_id: string;
  readonly attempt_id: string;
  readonly fence: number;
  readonly mode: TransactionMode | undefined;
  readonly result: ActionResult;
  readonly error?: ProtocolError;
  /** Recovery data the attempt learned (checkpointed or not). */
  readonly provider_operation?: ProviderOperationRef;
  readonly cursor?: string;
  /** Reconcile: the reconciliation record (terminal or not) as evidence. */
  readonly reconciliation?: JsonObject;
}

/** The basis of a settlement in one write with the action: the attempt's request. */
function requestBasis(req: SettleRequest): SettlementBasis {
  return {
    action_id: req.action.action_id,
    attempt_id: req.attempt_id,
    fence: req.fence,
    mode: req.mode,
    result: req.classified.result,
    ...(req.classified.error !== undefined ? { error: req.classified.error } : {}),
    ...(req.provider_operation !== undefined ? { provider_operation: req.provider_operation } : {}),
    ...(req.cursor !== undefined ? { cursor: req.cursor } : {}),
    ...(req.reconciliation !== undefined ? { reconciliation: req.reconciliation } : {}),
  };
}

/** The basis of a record's settlement from its action, settled first (ActionRecord.settlement): the outcome with it. */
function settledBasis(txn: TransactionRecord, action: SettledAction): { basis: SettlementBasis; to: SettleOutcome } | undefined {
  const to = pendingSettlement(txn, action);
  const facts = action.settlement;
  const attempt_id = settlingAttemptId(action);
  if (to === undefined || facts === undefined || attempt_id === undefined || action.result === undefined) return undefined;
  const error = settledError(action.result);
  return {
    to,
    basis: {
      action_id: action.action_id,
      attempt_id,
      fence: action.fence,
      mode: action.action.transaction?.mode,
      result: action.result,
      ...(error !== undefined ? { error } : {}),
      ...(facts.provider_operation !== undefined ? { provider_operation: facts.provider_operation } : {}),
      ...(facts.reconciliation_cursor !== undefined ? { cursor: facts.reconciliation_cursor } : {}),
    },
  };
}

/** The transaction settlement an attempt asks for (same fields whichever path writes it). */
function transactionSettlement(
  k: Kernel,
  basis: SettlementBasis,
  txn: TransactionRecord,
  to: SettleOutcome,
): { input: Omit<SettleInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>; evidence: JsonObject } {
  const error = basis.error;
  const ref = providerOperationFromError(error) ?? basis.provider_operation;
  const keepRef =
    ref !== undefined &&
    (txn.provider_operation === undefined || (txn.provider_operation.provider === ref.provider && txn.provider_operation.operation_id === ref.operation_id));
  const cursor = cursorFromError(error) ?? basis.cursor;
  let next_reconcile_at: string | undefined;
  if (to === 'outcome_unknown') {
    const delay =
      basis.mode === 'reconcile'
        ? Math.max(error?.retry_after_ms ?? 0, reconcileBackoffMs(k.config, txn.reconcile_attempts))
        : (error?.retry_after_ms ?? DEFAULT_RECONCILE_DELAY_MS);
    next_reconcile_at = new Date(k.now().getTime() + delay).toISOString();
  }
  // reconcile → outcome_unknown keeps the original result; the reconcile answer is kept as evidence.
  const keepOriginalResult = basis.mode === 'reconcile' && to === 'outcome_unknown';
  return {
    input: {
      to,
      from: [txn.status],
      ...(keepOriginalResult ? {} : { result: basis.result }),
      ...(error !== undefined ? { error } : {}),
      // The same operation as the record's (a replay may carry another request ID): the durable reference stays.
      ...(keepRef ? { provider_operation: txn.provider_operation ?? ref } : {}),
      ...(cursor !== undefined ? { reconciliation_cursor: cursor } : {}),
      ...(next_reconcile_at !== undefined ? { next_reconcile_at } : {}),
      // A terminal settlement of a retained record stamps the record, its receipts and its plan item (../retention.ts).
      ...(to !== 'outcome_unknown' && retentionFor(k, txn.capability_id, txn) !== undefined ? { retention: retentionFor(k, txn.capability_id, txn) } : {}),
      data: {
        last_attempt: { action_id: basis.action_id, attempt_id: basis.attempt_id, fence: basis.fence, outcome: to },
        ...(basis.mode === 'reconcile' ? { last_reconcile_result: basis.result as unknown as JsonObject } : {}),
        ...(basis.reconciliation !== undefined ? { last_reconciliation: basis.reconciliation } : {}),
      },
    },
    evidence: {
      action_id: basis.action_id,
      attempt_id: basis.attempt_id,
      fence: basis.fence,
      ...(error ? { error_code: error.code } : {}),
      // A reference first recorded by this settlement (no checkpoint receipt names it): the receipt does.
      ...(keepRef && txn.provider_operation === undefined && ref !== undefined ? { provider: ref.provider, operation_id: ref.operation_id } : {}),
    },
  };
}

/**
 * The record's settlement intent (with its receipt): the result stored once when the record is bound to the action
 * that settles it; the receipt's result_digest is of the result wherever it is stored.
 */
function settlementIntent(
  k: Kernel,
  txn: TransactionRecord,
  basis: SettlementBasis,
  to: SettleOutcome,
  actionRetentionSeconds: number | undefined,
): IntentOf<'transaction.settle'> {
  const { input, evidence } = transactionSettlement(k, basis, txn, to);
  // A record that stays open (outcome_unknown) has no retention yet: the days it will get when it ends.
  const recordDays = input.retention?.days ?? (to === 'outcome_unknown' ? retentionFor(k, txn.capability_id, txn)?.days : undefined);
  return k.journal.settle(txn, storedOnce(txn, basis.action_id, input, actionRetentionSeconds, recordDays), evidence, {
    ...(input.result !== undefined ? { result: input.result } : {}),
  });
}

/**
 * THE record settlement from a settled action (docs/table-design.md, "The action settles first"): the intent that
 * settles `txn` as the attempt that settled `action` settles it, when the action settled first (it carries
 * ActionRecord.settlement) and the record, bound to it, is still in its attempt status; undefined otherwise. The
 * attempt's own second write and every recovery (a redelivery, the sweeper's re-invoke, a resubmission, a
 * compensation of the action) write this same intent, so the record, its receipt and its evidence are the same
 * whoever writes them.
 */
export function recordSettlement(k: Kernel, txn: TransactionRecord, action: SettledAction): IntentOf<'transaction.settle'> | undefined {
  const settled = settledBasis(txn, action);
  if (settled === undefined) return undefined;
  return settlementIntent(k, txn, settled.basis, settled.to, actionRetentionSeconds(k, action.capability_id));
}

/** The settled action's retention (as its settlement stamps it: actionSettlement). */
function actionRetentionSeconds(k: Kernel, capability_id: string, reg?: RegisteredCapability): number | undefined {
  return actionRetention(k, dataPolicyOf(k.deps.registry.find(capability_id)?.capability ?? reg?.capability)).retention_seconds;
}

/**
 * Writes the record's settlement from its action, settled first (`recordSettlement`), and answers the record as it
 * stands after it. A lost race is the answer too: the record moved (another finisher wrote the same settlement, or
 * the attempt's own second write landed first), so it is read again and finished from there if it is still in its
 * attempt status. A record that is not pending (settled, or not bound to the action) is answered as it is.
 */
export async function finishRecord(k: Kernel, action: SettledAction, txn: TransactionRecord): Promise<TransactionRecord> {
  let current = txn;
  for (let round = 0; round < 3; round++) {
    const intent = recordSettlement(k, current, action);
    if (intent === undefined) return current;
    let refused: AipError | undefined;
    try {
      const out = await k.commit([intent] as const);
      if (out.committed) return out.written[0] as TransactionRecord;
      refused = out.refused[0]?.error;
    } catch (err) {
      if (!isAipError(err, 'transaction.state_conflict')) throw err;
      refused = err;
    }
    if (refused === undefined || !transactionMoved(refused, current))
      throw refused ?? new AipError('internal.unexpected', 'record settlement refused without a reason');
    const again = await k.deps.transactions.get({ tenant_id: current.tenant_id, transaction_id: current.transaction_id });
    if (again === undefined) throw refused;
    current = again;
  }
  throw new AipError('internal.unexpected', 'the record settlement did not converge');
}

/**
 * A record read together with its bound action, finished first when the action settled first and the record is still
 * in its attempt status (`finishRecord`): what a path that acts on the record's status (a resubmission, a
 * compensation's target, a redelivery) reads. Any other record is answered as it is, without a write.
 */
export async function settledRecord(k: Kernel, txn: TransactionRecord | undefined, action: SettledAction | undefined): Promise<TransactionRecord | undefined> {
  if (txn === undefined || action === undefined || pendingSettlement(txn, action) === undefined) return txn;
  k.log.info('finishing a transaction record from its settled action', { action_id: action.action_id, transaction_id: txn.transaction_id });
  return finishRecord(k, action, txn);
}

/**
 * A lost compare-and-set on the transaction: the record moved on under a newer attempt (a zombie whose lease
 * was taken over). The store names a differing provider operation before the revision, so a
 * provider-operation conflict on a record whose revision moved past the one this attempt held is the same lost race.
 */
function transactionMoved(err: unknown, txn: TransactionRecord): boolean {
  return (
    isAipError(err, 'transaction.state_conflict') ||
    (isAipError(err, 'transaction.provider_operation_conflict') &&
      typeof err.details?.current_revision === 'number' &&
      err.details.current_revision !== txn.revision)
  );
}

/**
 * Whether this settlement writes the action alone first and the record after it (docs/table-design.md, "The action
 * settles first"): a definitive outcome (committed, failed, compensated) of an execute, commit or compensate whose
 * record is bound to the settling action, the outcome exactly what the action's result says (`definitiveOutcome`, so
 * that the record can be finished from the action alone), and no reconciliation evidence. An `outcome_unknown`
 * settlement (with the reservation's `uncertain` mark) and a reconcile's settle in one write, as before.
 */
function settlesActionFirst(req: SettleRequest, held: TransactionRecord | undefined): held is TransactionRecord {
  return (
    held !== undefined &&
    req.classified.to !== undefined &&
    req.reconciliation === undefined &&
    held.action_id === req.action.action_id &&
    definitiveOutcome(req.mode, req.classified.result) === req.classified.to
  );
}

/**
 * What the record's settlement needs from this attempt that the action's result does not say (ActionRecord.settlement):
 * the attempt's ID (the marker `true` when the route this lease pinned names it), and a provider operation or cursor
 * the record does not hold yet and the result's error does not name.
 */
function settlementFacts(req: SettleRequest, held: TransactionRecord): ActionSettlementFacts {
  const error = settledError(req.classified.result);
  const op = req.provider_operation !== undefined && held.provider_operation === undefined && providerOperationFromError(error) === undefined;
  const cursor = req.cursor !== undefined && cursorFromError(error) === undefined;
  // The attempt that pinned the route with this lease is named by the route already (its admission reservation).
  const route = req.action.route;
  const pinnedByThis = route !== undefined && route.fence_token === req.fence && route.admission_reservation === req.attempt_id;
  return {
    attempt_id: pinnedByThis ? true : req.attempt_id,
    ...(op ? { provider_operation: req.provider_operation } : {}),
    ...(cursor ? { reconciliation_cursor: req.cursor } : {}),
  };
}

/**
 * Settles the transaction, the action and the idempotency reservation, and schedules reconciliation when needed.
 *
 * A definitive outcome of an execute, commit or compensate (`settlesActionFirst`) is TWO writes
 * (docs/table-design.md, "The action settles first"): the action alone, fenced (one conditional single-item write, with
 * the reservation's completion in the same write when it needs one), whose result is the durable answer; then the
 * record with its receipt (`finishRecord`), conditioned on the record's status and revision. Once the action is
 * terminal no other attempt can lease it, so the record is this attempt's to finish; a crash between the two leaves
 * the record in its attempt status, bound to a terminal action that carries everything its settlement needs, and
 * whoever meets it finishes it with the same function.
 *
 * Any other settlement is ONE commit of the unit of work (lib/ports/unit-of-work.ts): the transaction (status and
 * revision conditioned, with its receipt), the action (fenced) and the idempotency reservation (owner-conditioned)
 * change together or not at all.
 *
 * Either way, a reservation this attempt does not own is left alone (the write is repeated without it), and an
 * action whose fence moved (a newer attempt leased it) refuses the first write: the newer attempt owns the
 * transaction record as well, and this attempt reports itself superseded having written nothing.
 */
export async function settleAttempt(k: Kernel, req: SettleRequest): Promise<AttemptOutcome> {
  const { action, classified, result } = { ...req, result: req.classified.result };
  const held = req.txn !== undefined && classified.to !== undefined ? req.txn : undefined;
  const first = settlesActionFirst(req, held) ? held : undefined;
  const statusAfter = held !== undefined && classified.to !== undefined ? classified.to : req.txn?.status;
  const facts = first !== undefined ? settlementFacts(req, first) : undefined;
  const actionSettle: IntentOf<'action.settle'> = {
    kind: 'action.settle',
    input: { ...actionSettlement(k, { ...req, result }, statusAfter), ...(facts !== undefined ? { settlement: facts } : {}) },
  };
  const idempotency = reservationSettlement(k, action, req.fence, result, req.txn !== undefined, statusAfter, actionSettle.input.retention_seconds);
  const settleTxn =
    held !== undefined && first === undefined && classified.to !== undefined
      ? settlementIntent(k, held, requestBasis(req), classified.to, actionSettle.input.retention_seconds)
      : undefined;

  let withIdempotency = idempotency !== undefined;
  let txn = req.txn;
  for (let round = 0; round < 3; round++) {
    const intents: WriteIntent[] = [
      ...(settleTxn !== undefined ? [settleTxn] : []),
      actionSettle,
      ...(withIdempotency && idempotency !== undefined ? [idempotency] : []),
    ];
    let out: Awaited<ReturnType<Kernel['commit']>>;
    try {
      out = await k.commit(intents);
    } catch (err) {
      if (settleTxn !== undefined && held !== undefined && isAipError(err, 'transaction.state_conflict')) return moved(k, action, req, held);
      if (settleTxn === undefined && isAipError(err, 'action.state_conflict') && err.details.reason === 'transaction_conflict')
        return superseded(action, req, 'action_fence_moved');
      throw err;
    }
    if (!out.committed) {
      const refusedTxn = out.refused.find((r) => r.kind === 'transaction.settle')?.error;
      if (refusedTxn !== undefined) {
        if (held !== undefined && transactionMoved(refusedTxn, held)) return moved(k, action, req, held);
        throw refusedTxn;
      }
      const refusedAction = out.refused.find((r) => r.kind === 'action.settle')?.error;
      if (refusedAction !== undefined) {
        if (!isAipError(refusedAction, 'action.fence_stale') && !isAipError(refusedAction, 'action.state_conflict')) throw refusedAction;
        // A newer attempt holds the action: it owns the transaction record too (the fence is this write's guard on
        // the record, since the attempt start writes the action alone), so nothing of this attempt is written.
        return superseded(action, req, 'action_fence_moved');
      }
      const refusedReservation = out.refused.find((r) => r.kind === 'idempotency.complete' || r.kind === 'idempotency.mark_uncertain')?.error;
      if (refusedReservation !== undefined) {
        if (!isAipError(refusedReservation, 'idempotency.not_owner')) throw refusedReservation;
        k.log.warn('idempotency reservation not owned by this attempt', { action_id: action.action_id, fence: req.fence });
        withIdempotency = false;
        continue;
      }
      throw new AipError('internal.unexpected', 'settlement refused without a reason');
    }
    if (settleTxn !== undefined) txn = out.written[0] as TransactionRecord;
    if (first !== undefined) {
      // The action is terminal with this attempt's fence: the record is this attempt's to finish, from the action as
      // it was just written (the same function a recovery uses).
      k.crash('after_action_settled_before_record');
      txn = await finishRecord(k, { ...action, fence: req.fence, status: actionSettle.input.to, result, settlement: facts }, first);
    }
    k.crash('during_settlement');
    if (txn !== undefined) await afterTransactionSettled(k, txn, req.mode, action, req.original);
    return settledOutcome(action, req.fence, txn, result);
  }
  throw new AipError('internal.unexpected', 'settlement did not converge');
}

/**
 * The result stored once (docs/table-design.md, "The result stored once"): a record settled in the same atomic write
 * as the action it is bound to (or right after it, from it) names that action (`result_ref`) instead of carrying a
 * copy of the result the action stores, when the action is kept at least as long as the record (no action retention,
 * or one no shorter than the record's, both counted from this settlement). Otherwise the record keeps its own result,
 * as before. A record left open (`outcome_unknown`) is compared with the retention it will get when it ends: it needs
 * the reference only until then, since every write that ends it (the reconciled answer, an operator's resolution)
 * stores a result of its own (docs/table-design.md, "The result stored once").
 */
function storedOnce<I extends Omit<SettleInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>>(
  txn: TransactionRecord,
  action_id: string,
  input: I,
  actionRetentionSeconds: number | undefined,
  recordDays: number | undefined,
): I {
  if (input.result === undefined || txn.action_id !== action_id) return input;
  const actionOutlivesRecord = actionRetentionSeconds === undefined || (recordDays !== undefined && actionRetentionSeconds >= recordDays * 86_400);
  if (!actionOutlivesRecord) return input;
  const { result: _stored, ...rest } = input;
  return { ...rest, result_ref: action_id } as I;
}

/** The transaction moved on under a newer attempt: this one is superseded. */
function moved(k: Kernel, action: ActionRecord, req: SettleRequest, held: TransactionRecord): AttemptOutcome {
  k.log.warn('superseded attempt: its settlement lost the compare-and-set', {
    action_id: action.action_id,
    transaction_id: held.transaction_id,
    fence: req.fence,
  });
  return superseded(action, req, 'transaction_revision_moved');
}

function superseded(action: ActionRecord, req: Pick<SettleRequest, 'fence' | 'txn'>, reason: string): AttemptOutcome {
  return {
    disposition: 'superseded',
    tenant_id: action.tenant_id,
    action_id: action.action_id,
    ...(req.txn ? { transaction_id: req.txn.transaction_id } : {}),
    retry: false,
    fence: req.fence,
    reason,
  };
}

export interface FinishRequest {
  readonly action: ActionRecord;
  readonly fence: number;
  readonly mode: TransactionMode | undefined;
  readonly txn?: TransactionRecord;
  readonly result: ActionResult;
  readonly reg: RegisteredCapability;
  readonly attempt_id: string;
  /** See SettleRequest.original. */
  readonly original?: ActionRecord;
}

/** Action settle (fenced), idempotency, then reconciliation scheduling / escalation. Idempotent on redelivery. */
export async function finishSideRecords(k: Kernel, req: FinishRequest): Promise<AttemptOutcome> {
  const { action, txn, result } = req;
  const input = actionSettlement(k, req, txn?.status);
  let settled: ActionRecord;
  try {
    settled = await k.write({ kind: 'action.settle', input });
  } catch (err) {
    if (isAipError(err, 'action.fence_stale') || isAipError(err, 'action.state_conflict'))
      return superseded(action, { fence: req.fence, ...(txn ? { txn } : {}) }, 'action_fence_moved');
    throw err;
  }

  await settleIdempotency(k, action, req.fence, result, txn, input.retention_seconds);
  if (txn !== undefined) await afterTransactionSettled(k, txn, req.mode, action, req.original);
  return settledOutcome(action, req.fence, txn, settled.result ?? result);
}

function settledOutcome(action: ActionRecord, fence: number, txn: TransactionRecord | undefined, action_result: ActionResult): AttemptOutcome {
  return {
    disposition: 'settled',
    tenant_id: action.tenant_id,
    action_id: action.action_id,
    ...(txn ? { transaction_id: txn.transaction_id, transaction_status: txn.status, settled_record: txn } : {}),
    retry: false,
    fence,
    action_result,
  };
}

/** The fenced action settlement (the input is redacted once the outcome is definitive, where the capability requires it). */
function actionSettlement(
  k: Kernel,
  req: Pick<FinishRequest, 'action' | 'fence' | 'mode' | 'reg' | 'result'>,
  transactionStatus: TransactionRecord['status'] | undefined,
): SettleActionInput {
  // Definitive: nothing will need the raw input again. A reconcile action's input is a copy of the original's
  // (which keeps it until the outcome is known): it is never needed after its own attempt.
  const definitive =
    req.mode === 'reconcile' || transactionStatus === undefined || (transactionStatus !== 'outcome_unknown' && transactionStatus !== 'reconciling');
  const policy = dataPolicyOf(k.deps.registry.find(req.action.capability_id)?.capability ?? req.reg.capability);
  const redaction = definitive ? definitiveInputRedaction(policy, req.action.action.input) : undefined;
  return {
    tenant_id: req.action.tenant_id,
    action_id: req.action.action_id,
    fence: req.fence,
    to: req.result.status === 'completed' ? 'completed' : req.result.status === 'cancelled' ? 'cancelled' : 'failed',
    result: req.result,
    ...(redaction ?? {}),
    ...actionRetention(k, policy),
  };
}

/**
 * Once an uncertain outcome is known (reconciled or resolved), nothing needs
 * the original action's input any more: it is redacted as the data contract
 * says (best effort: a lost race leaves a newer revision that the next
 * resolution path redacts).
 */
export async function redactOriginalInput(k: Kernel, txn: TransactionRecord, held?: ActionRecord): Promise<void> {
  // The original action's capability is the record's (a compensation's alternate capability only ran it).
  const policy = dataPolicyOf(k.deps.registry.find(txn.capability_id)?.capability);
  if (!policy.redaction_required && policy.pointers.length === 0) return;
  // The reconcile consumer's read of the terminal original is reused, not read again: the redaction is conditioned on
  // its revision, and the only write a terminal action takes is this redaction, so a refusal means it is done.
  const original = heldTerminal(txn, held) ?? (await k.deps.actions.get({ tenant_id: txn.tenant_id, action_id: txn.action_id }));
  if (original === undefined || original.input_redacted === true || !isTerminalAction(original.status)) return;
  const redaction = definitiveInputRedaction(policy, original.action.input);
  if (redaction === undefined) return;
  try {
    await k.write({
      kind: 'action.redact',
      input: { tenant_id: original.tenant_id, action_id: original.action_id, expected_revision: original.revision, ...redaction },
    });
  } catch (err) {
    if (!isAipError(err, 'action.state_conflict')) throw err;
  }
}

/**
 * What the attempt writes to its reservation, if the action has a key: "never deleted on an ambiguous error", an
 * unknown outcome marks it uncertain. A definitive outcome writes nothing when the reservation as admitted already
 * outlives the retention counted from now and the action record outlives the reservation: the held key then answers
 * the action's result (pipeline/idempotency.ts heldKey), one item (2 WRU) less per settlement. Otherwise (a late
 * settlement, an action kept for less time than its key) the reservation is completed with the result, as before.
 */
function reservationSettlement(
  k: Kernel,
  action: ActionRecord,
  fence: number,
  result: ActionResult,
  hasTransaction: boolean,
  transactionStatus: TransactionRecord['status'] | undefined,
  actionRetentionSeconds: number | undefined,
): IntentOf<'idempotency.complete'> | IntentOf<'idempotency.mark_uncertain'> | undefined {
  const key = action.action.idempotency_key;
  if (key === undefined) return undefined;
  const scope = { tenant_id: action.tenant_id, principal_id: action.principal.id, key, action_id: action.action_id, fence };
  const uncertain = transactionStatus === 'outcome_unknown' || (!hasTransaction && result.error !== undefined && isUncertainFailure(result.error));
  if (uncertain) return { kind: 'idempotency.mark_uncertain', input: scope };
  if (reservationOutlivesSettlement(k, action, actionRetentionSeconds)) return undefined;
  return { kind: 'idempotency.complete', input: { ...scope, result, retention_seconds: k.config.idempotency.retention_seconds } };
}

/** Margin for the clocks of the admitting and the settling process. */
const SETTLEMENT_CLOCK_MARGIN_MS = 5 * 60_000;

/**
 * Whether the reservation as the admission wrote it answers for the whole retention counted from now: it was reserved
 * no earlier than the action was created, for the retention plus IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS
 * (pipeline/idempotency.ts reserveInput), so it does when the action is younger than the allowance; and its answer is
 * read from the action, so the action's own retention (if any) must not end before the reservation's.
 */
function reservationOutlivesSettlement(k: Kernel, action: ActionRecord, actionRetentionSeconds: number | undefined): boolean {
  const allowanceMs = IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS * 1000;
  const age = k.now().getTime() - Date.parse(action.created_at);
  if (!(age <= allowanceMs - SETTLEMENT_CLOCK_MARGIN_MS)) return false;
  return actionRetentionSeconds === undefined || actionRetentionSeconds >= k.config.idempotency.retention_seconds + IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS;
}

async function settleIdempotency(
  k: Kernel,
  action: ActionRecord,
  fence: number,
  result: ActionResult,
  txn: TransactionRecord | undefined,
  actionRetentionSeconds: number | undefined,
): Promise<void> {
  const settlement = reservationSettlement(k, action, fence, result, txn !== undefined, txn?.status, actionRetentionSeconds);
  if (settlement === undefined) return;
  try {
    await k.write(settlement);
  } catch (err) {
    if (!isAipError(err, 'idempotency.not_owner')) throw err;
    k.log.warn('idempotency reservation not owned by this attempt', { action_id: action.action_id, fence });
  }
}

/** Scheduling, escalation and the original reservation after a reconciliation. */
async function afterTransactionSettled(
  k: Kernel,
  txn: TransactionRecord,
  mode: TransactionMode | undefined,
  action: ActionRecord,
  original?: ActionRecord,
): Promise<void> {
  if (txn.status === 'outcome_unknown') {
    if (mode === 'reconcile' && txn.reconcile_attempts >= k.config.reconcile.max_attempts) {
      await escalate(k, txn, 'attempts_exhausted');
      return;
    }
    if (txn.escalated_at !== undefined) return;
    await scheduleReconcile(k, txn, mode === 'reconcile');
    return;
  }
  if (txn.status === 'reconciled' && mode === 'reconcile') {
    await cancelSchedule(k, txn);
    await completeOriginalReservation(k, txn, action.action_id, original);
    await redactOriginalInput(k, txn, original);
  }
}

/**
 * Creates the reconciliation trigger (moving an earlier one). Failures are logged: the sweeper is the safety net.
 * `txn` is the record exactly as the write that made it `outcome_unknown` returned it: the schedule's message carries
 * it, and the consumer starts from it (docs/runtime.md, "The reconcile consumer's first read").
 */
export async function scheduleReconcile(k: Kernel, txn: TransactionRecord, move: boolean): Promise<void> {
  const at = new Date(txn.next_reconcile_at ?? k.now().getTime() + DEFAULT_RECONCILE_DELAY_MS);
  k.crash('during_schedule_creation');
  try {
    if (move) await k.deps.scheduler.cancelReconcile({ tenant_id: txn.tenant_id, transaction_id: txn.transaction_id });
    await k.deps.scheduler.scheduleReconcile({ tenant_id: txn.tenant_id, transaction_id: txn.transaction_id, at, transaction: txn });
  } catch (err) {
    if (!isAipError(err, 'scheduler.request_failed')) throw err;
    k.log.warn('reconciliation schedule not created; the sweeper will pick the transaction up', { transaction_id: txn.transaction_id });
  }
}

export async function cancelSchedule(k: Kernel, txn: TransactionRecord): Promise<void> {
  try {
    await k.deps.scheduler.cancelReconcile({ tenant_id: txn.tenant_id, transaction_id: txn.transaction_id });
  } catch (err) {
    if (!isAipError(err, 'scheduler.request_failed')) throw err;
  }
}

/** Reconciliation never reached a terminal answer within the bound: park for a human. */
export async function escalate(k: Kernel, txn: TransactionRecord, reason: string): Promise<TransactionRecord> {
  if (txn.escalated_at !== undefined) return txn;
  k.log.warn('reconciliation escalated to a human', { transaction_id: txn.transaction_id, reason, reconcile_attempts: txn.reconcile_attempts });
  try {
    // The receipt records the durable status (outcome_unknown) with the escalated fact; requires_human is the wire's projection.
    const escalated = await k.write(
      k.journal.transition(
        txn,
        { operation: 'escalate', from: ['outcome_unknown'], to: 'outcome_unknown', data: { escalation_reason: reason } },
        RECEIPT_EVENTS.escalated,
        {
          escalated: true,
          reason,
          reconcile_attempts: txn.reconcile_attempts,
        },
      ),
    );
    await cancelSchedule(k, escalated);
    return escalated;
  } catch (err) {
    if (isAipError(err, 'transaction.state_conflict'))
      return (await k.deps.transactions.get({ tenant_id: txn.tenant_id, transaction_id: txn.transaction_id })) ?? txn;
    throw err;
  }
}

/**
 * After `reconciled`, the original request's uncertain reservation is completed
 * with the original result annotated with the reconciliation (it is never
 * rewritten as committed). The annotated result is not copied onto the
 * reservation when the items it is read from outlive the key: the reservation
 * then names who reconciled it (`reconciled_by`) and a replay resolves the
 * answer from the action and its transaction (`reconciledAnswer`), as a
 * transaction record references the result stored once on its action.
 */
export async function completeOriginalReservation(k: Kernel, txn: TransactionRecord, reconciledBy: string, held?: ActionRecord): Promise<void> {
  const original = heldTerminal(txn, held) ?? (await k.deps.actions.get({ tenant_id: txn.tenant_id, action_id: txn.action_id }));
  const key = original?.action.idempotency_key;
  if (original === undefined || key === undefined) return;
  // No read of the reservation first: the write's condition (this action, a fence at or below the action's, status
  // `uncertain`) is what that read checked, and a refusal (idempotency.not_owner) is the answer that nothing is to do.
  const retention_seconds = k.config.idempotency.retention_seconds;
  const byReference = answerOutlivesKey(k, txn, original, retention_seconds);
  try {
    await k.write({
      kind: 'idempotency.complete',
      input: {
        tenant_id: original.tenant_id,
        principal_id: original.principal.id,
        key,
        action_id: original.action_id,
        fence: original.fence,
        reconciled_by: reconciledBy,
        ...(byReference ? {} : { result: reconciledResult(original.action_id, original.result, await withStoredResult(k, txn, original), reconciledBy) }),
        retention_seconds,
      },
    });
  } catch (err) {
    if (!isAipError(err, 'idempotency.not_owner')) throw err;
  }
}

/**
 * Whether the action and the transaction a reconciled answer is read from are kept at least as long as the completed
 * reservation (now + its retention): the action without a TTL or with a later one, the record without a retention or
 * with one longer than the key's by the settlement allowance (the record was stamped by the settlement just before).
 */
function answerOutlivesKey(k: Kernel, txn: TransactionRecord, original: ActionRecord, retentionSeconds: number): boolean {
  const keyExpires = Math.ceil(k.now().getTime() / 1000) + retentionSeconds;
  if (original.ttl !== undefined && original.ttl < keyExpires) return false;
  const days = retentionFor(k, txn.capability_id, txn)?.days;
  return days === undefined || days * 86_400 >= retentionSeconds + IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS;
}

/** The original action's result annotated with its transaction's reconciliation: what a reconciled key answers. */
function reconciledResult(action_id: string, original: ActionResult | undefined, txn: TransactionRecord | undefined, reconciledBy: string): ActionResult {
  const base = original ?? { action_id, status: 'failed' as const };
  const reconciliation = (txn?.result?.metadata as JsonObject | undefined)?.reconciliation;
  return {
    ...base,
    metadata: {
      ...(base.metadata ?? {}),
      transaction_status: 'reconciled',
      reconciled_by: reconciledBy,
      ...(reconciliation !== undefined ? { reconciliation } : {}),
    },
  };
}

/**
 * The answer of a reservation completed by reference (`reconciled_by` without a result): read from the action it
 * names and that action's transaction, exactly as the completion would have copied it.
 */
export async function reconciledAnswer(k: Kernel, tenant_id: string, reservation: IdempotencyReservation): Promise<ActionResult> {
  const original = await k.deps.actions.get({ tenant_id, action_id: reservation.action_id });
  const txId = reservation.transaction_id ?? original?.transaction_id;
  const txn = txId !== undefined ? await k.deps.transactions.get({ tenant_id, transaction_id: txId }) : undefined;
  const resolved = txn !== undefined ? await withStoredResult(k, txn, original) : undefined;
  return reconciledResult(reservation.action_id, original?.result, resolved, reservation.reconciled_by as string);
}

/**
 * The consumer's (strongly consistent) read of the original action, reused only when it was terminal: a terminal
 * action is never rewritten except by its input's redaction (settle and every transition are conditioned on a
 * non-terminal status; the redaction on the revision read).
 */
function heldTerminal(txn: TransactionRecord, held: ActionRecord | undefined): ActionRecord | undefined {
  return held !== undefined && held.tenant_id === txn.tenant_id && held.action_id === txn.action_id && isTerminalAction(held.status) ? held : undefined;
}
