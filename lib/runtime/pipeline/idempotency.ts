/**
 * Pipeline step 7: the idempotency reservation, scoped to tenant, principal
 * and key, carrying the request fingerprint. A different fingerprint is a
 * mismatch conflict; an in-flight first request is a conflict with
 * retry_after; a completed one replays its stored result marked as a replay;
 * an uncertain one needs reconciliation.
 */
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionResult, TransactionContext } from '../../../packages/connector-sdk/src/protocol/index.js';
import {
  IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS,
  idempotencyFingerprint,
  idempotencyInFlightError,
  idempotencyOutcomeUnknownError,
  type ReserveInput,
  type ReserveOutcome,
} from '../../ports/idempotency-store.js';
import { isUncertainFailure } from '../settled-outcome.js';
import { deriveTransactionId, type Kernel } from '../kernel.js';
import { actionResultOf, isTerminalAction } from './action-record.js';
import type { AdmittedAction, Admission } from './state.js';

/** Action.transaction as the caller sent it: a runtime-generated transaction ID is not part of the request. */
export function submittedTransaction(adm: Pick<Admission, 'action' | 'tenant_id'>): TransactionContext | undefined {
  const tx = adm.action.transaction;
  if (tx === undefined) return undefined;
  if (tx.transaction_id !== undefined && tx.transaction_id === deriveTransactionId(adm.tenant_id, adm.action.id)) {
    const { transaction_id: _generated, ...rest } = tx;
    return rest;
  }
  return tx;
}

export function fingerprintOf(adm: Pick<Admission, 'action' | 'tenant_id'>): string {
  const transaction = submittedTransaction(adm);
  return idempotencyFingerprint({
    capability_id: adm.action.capability_id,
    input: adm.action.input,
    ...(transaction !== undefined ? { transaction } : {}),
    ...(adm.action.identity !== undefined ? { identity: adm.action.identity } : {}),
  });
}

/** The reservation an admission asks for (undefined without an idempotency key). */
export function reserveInput(k: Kernel, adm: Admission, fence: number): ReserveInput | undefined {
  const key = adm.action.idempotency_key;
  if (key === undefined) return undefined;
  return {
    tenant_id: adm.tenant_id,
    principal_id: adm.principal.id,
    key,
    fingerprint: fingerprintOf(adm),
    action_id: adm.action.id,
    fence,
    ...(adm.action.transaction?.transaction_id !== undefined ? { transaction_id: adm.action.transaction.transaction_id } : {}),
    // The retention is promised from the settlement, which this write cannot know: it adds the allowance within which
    // an action is expected to settle, so that settlement need not rewrite the reservation (attempts/settlement.ts).
    retention_seconds: k.config.idempotency.retention_seconds + IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS,
  };
}

/** Who holds a key, as a refused reservation answers it. */
export type HeldKey = Exclude<ReserveOutcome, { outcome: 'reserved' }>;

/**
 * What a held key means. The settlement of a definitive outcome within the
 * settlement allowance does not rewrite the reservation (docs/table-design.md,
 * "idempotency"): one still `in_flight` whose action has settled answers as
 * completed with the action's result, read from the action it names (one
 * consistent read, on a refused reservation only). An uncertain outcome marks
 * the reservation in the settlement's own write; a settled action whose result
 * is an uncertain failure is answered as uncertain all the same. A key whose
 * action is not terminal (or whose record is gone) stays in flight.
 */
export async function heldKey(k: Kernel, tenant_id: string, held: HeldKey): Promise<Exclude<HeldKey, { outcome: 'reconciled' }>> {
  // A reservation a reconciliation completed by reference: its answer is read from the action and its transaction.
  if (held.outcome === 'reconciled')
    return {
      outcome: 'completed',
      result: await (await import('../attempts/settlement.js')).reconciledAnswer(k, tenant_id, held.reservation),
      reservation: held.reservation,
    };
  if (held.outcome !== 'in_flight') return held;
  const action = await k.deps.actions.get({ tenant_id, action_id: held.reservation.action_id });
  if (action === undefined || !isTerminalAction(action.status)) return held;
  const result = actionResultOf(action);
  if (result.status === 'failed' && isUncertainFailure(result.error)) return { outcome: 'uncertain', reservation: held.reservation };
  return { outcome: 'completed', result, reservation: held.reservation };
}

/** Reserves the key for this action; returns a stored result to replay, or undefined to continue. */
export async function reserveIdempotency(k: Kernel, adm: AdmittedAction): Promise<{ replay?: ActionResult; from_action_id?: string }> {
  const input = reserveInput(k, adm, adm.record.fence);
  if (input === undefined) return {};
  const written = await k.commit([{ kind: 'idempotency.reserve', input }] as const);
  if (written.committed) return {};
  const refusal = written.refused[0];
  // Held by an earlier request: what it answers; a fingerprint mismatch is thrown.
  const current = refusal?.kind === 'idempotency.reserve' ? refusal.current : undefined;
  if (current === undefined) throw refusal?.error ?? new AipError('internal.unexpected', 'reservation refused without a reason');
  // Our own reservation (a resumed admission: this action is not terminal), without reading the action.
  if (current.outcome === 'in_flight' && current.reservation.action_id === adm.action.id) return {};
  const out = await heldKey(k, adm.tenant_id, current);
  switch (out.outcome) {
    case 'in_flight':
      throw idempotencyInFlightError(out);
    case 'completed':
      return { replay: out.result, from_action_id: out.reservation.action_id };
    case 'uncertain':
      throw idempotencyOutcomeUnknownError(out);
  }
}
