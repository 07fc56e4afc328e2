/**
 * Recovery paths of an attempt: what a redelivered or cancelled attempt does
 * instead of calling the provider (see worker.ts for the main path).
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { toProtocolError } from '../../../packages/connector-sdk/src/protocol/problem.js';
import type { ActionResult, TransactionMode } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ActionHead, ActionRecord } from '../../ports/action-store.js';
import type { InvokeMessage } from '../../ports/messages.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import { isAttemptStatus, isTerminalStatus } from '../../transactions/state-machine.js';
import type { Kernel } from '../kernel.js';
import type { RegisteredCapability } from '../registry.js';
import type { AttemptOutcome } from '../types.js';
import { leaseMs } from './invoke.js';
import { settleAttempt } from './settlement.js';
import { retentionFor } from '../retention.js';

export function attemptOutcome(message: InvokeMessage, disposition: AttemptOutcome['disposition'], extra: Partial<AttemptOutcome> = {}): AttemptOutcome {
  return {
    disposition,
    tenant_id: message.tenant_id,
    action_id: message.action_id,
    ...(message.transaction_id !== undefined ? { transaction_id: message.transaction_id } : {}),
    retry: disposition === 'deferred',
    ...extra,
  };
}

/** The record an action's attempt drives: its own transaction (or, for reconcile, the one it reconciles). */
export function boundTo(action: Pick<ActionRecord, 'action_id'>, txn: TransactionRecord, mode: TransactionMode | undefined): boolean {
  if (mode === 'reconcile') return txn.data.reconcile_action_id === action.action_id;
  return txn.action_id === action.action_id;
}

/**
 * True once an attempt of this action was started: it leased the action (its fence is above 0), the last write
 * before a provider call, so it may have reached the provider, unless that very lease was given back with the
 * certificate that the connector was not called (`released_fence` equals the fence). (Records written before the attempt start became
 * the action lease alone also name the attempt's action on the transaction; such an action has a fence too.)
 */
export function attemptStarted(action: Pick<ActionRecord, 'fence' | 'released_fence'>): boolean {
  // An attempt that gave its lease back certified "not called" (a remote capacity refusal, worker.ts deferCapacity)
  // leaves released_fence = its fence: until a newer lease, nothing of this action can have reached the provider.
  return action.fence > 0 && action.released_fence !== action.fence;
}

/** The action result an earlier attempt settled on the transaction record. */
export function finishingResult(action: ActionHead, txn: TransactionRecord): ActionResult {
  const mode = action.action.transaction?.mode;
  if (mode === 'reconcile') {
    const last = txn.data.last_reconcile_result as ActionResult | undefined;
    if (txn.status === 'reconciled' && txn.result !== undefined) return { ...txn.result, action_id: action.action_id };
    if (last !== undefined) return { ...last, action_id: action.action_id };
  }
  if (txn.result !== undefined) return { ...txn.result, action_id: action.action_id };
  const err = txn.error ?? toProtocolError(new AipError('runtime.attempt_abandoned'));
  return { action_id: action.action_id, status: 'failed', error: err };
}

/**
 * A redelivered attempt finds the record still in an attempt status after an
 * earlier attempt leased it, and the capability does not declare retry with
 * downstream idempotency: no blind second provider call. The record settles
 * outcome_unknown (keeping any checkpointed provider operation) and goes to
 * reconciliation.
 */
export async function settleAbandoned(
  k: Kernel,
  action: ActionRecord,
  fence: number,
  txn: TransactionRecord | undefined,
  mode: TransactionMode | undefined,
  reg: RegisteredCapability,
  attempt_id: string,
): Promise<AttemptOutcome> {
  const error = {
    ...toProtocolError(
      new AipError('runtime.attempt_abandoned', undefined, {
        details: {
          uncertain_outcome: true,
          previous_fence: txn?.fence ?? action.fence - 1,
          ...(txn?.lease_owner ? { previous_attempt_id: txn.lease_owner } : {}),
        },
      }),
    ),
    uncertain_outcome: true,
    ...(txn?.provider_operation !== undefined ? { provider_operation: txn.provider_operation } : {}),
  };
  const result: ActionResult = { action_id: action.action_id, status: 'failed', error, completed_at: k.iso() };
  k.log.warn('attempt recovery: an earlier attempt may have reached the provider; settling outcome_unknown', {
    action_id: action.action_id,
    ...(txn !== undefined ? { transaction_id: txn.transaction_id } : {}),
    fence,
  });
  const out = await settleAttempt(k, {
    action,
    fence,
    mode,
    ...(txn !== undefined ? { txn } : {}),
    classified: { result, error, ...(txn !== undefined ? { to: 'outcome_unknown' as const } : {}) },
    reg,
    attempt_id,
  });
  return out.disposition === 'settled' ? { ...out, disposition: 'recovered_outcome_unknown' } : out;
}

/** The action was cancelled before its first attempt reached the provider: no effect is possible. */
export async function settleCancelled(
  k: Kernel,
  action: ActionRecord,
  fence: number,
  txn: TransactionRecord | undefined,
  attempt_id: string,
): Promise<AttemptOutcome> {
  const error = toProtocolError(new AipError('runtime.cancelled', undefined, { details: { cancel_requested_at: action.cancel_requested_at ?? null } }));
  const result: ActionResult = { action_id: action.action_id, status: 'cancelled', completed_at: k.iso() };
  const to = txn === undefined ? undefined : txn.status === 'reconciling' ? ('outcome_unknown' as const) : ('failed' as const);
  if (txn !== undefined && to !== undefined) {
    // Fenced on the action in the same atomic write, as every transaction write of an attempt: a newer lease (an
    // attempt that may call the provider) refuses it, and this attempt is superseded having written nothing.
    let refused: AipError | undefined;
    try {
      const out = await k.commit([
        k.journal.settle(
          txn,
          { to, from: [txn.status], error, result, ...terminalRetention(k, txn, to) },
          { action_id: action.action_id, attempt_id, reason: 'cancelled_before_provider_call' },
        ),
        { kind: 'action.check_fence', input: { tenant_id: action.tenant_id, action_id: action.action_id, fence } },
      ] as const);
      if (out.committed) txn = out.written[0];
      else refused = (out.refused.find((r) => r.kind === 'action.check_fence') ?? out.refused[0])?.error;
    } catch (err) {
      if (!isAipError(err, 'transaction.state_conflict')) throw err;
      refused = err;
    }
    if (refused !== undefined) {
      if (isAipError(refused, 'transaction.state_conflict') || isAipError(refused, 'action.fence_stale'))
        return {
          disposition: 'superseded',
          tenant_id: action.tenant_id,
          action_id: action.action_id,
          retry: false,
          fence,
          reason: isAipError(refused, 'action.fence_stale') ? 'action_fence_moved' : 'transaction_revision_moved',
        };
      throw refused;
    }
  }
  let settled: ActionRecord;
  try {
    settled = await k.write({ kind: 'action.settle', input: { tenant_id: action.tenant_id, action_id: action.action_id, fence, to: 'cancelled', result } });
  } catch (err) {
    if (isAipError(err, 'action.fence_stale') || isAipError(err, 'action.state_conflict'))
      return { disposition: 'superseded', tenant_id: action.tenant_id, action_id: action.action_id, retry: false, fence, reason: 'action_fence_moved' };
    throw err;
  }
  const key = action.action.idempotency_key;
  if (key !== undefined) {
    const scope = { tenant_id: action.tenant_id, principal_id: action.principal.id, key, action_id: action.action_id, fence };
    try {
      await k.write({ kind: 'idempotency.adopt', input: scope });
      await k.write({ kind: 'idempotency.complete', input: { ...scope, result, retention_seconds: k.config.idempotency.retention_seconds } });
    } catch (err) {
      if (!isAipError(err, 'idempotency.not_owner')) throw err;
    }
  }
  return {
    disposition: 'settled',
    tenant_id: action.tenant_id,
    action_id: action.action_id,
    ...(txn !== undefined ? { transaction_id: txn.transaction_id, transaction_status: txn.status } : {}),
    retry: false,
    fence,
    action_result: settled.result ?? result,
  };
}

/** A permanent failure found before any connector call (e.g. the pinned route mismatches). */
export async function failBeforeInvocation(
  k: Kernel,
  message: InvokeMessage,
  action: ActionHead,
  txn: TransactionRecord | undefined,
  mode: TransactionMode | undefined,
  err: AipError,
  attempt_id: string,
): Promise<AttemptOutcome> {
  const reg = k.deps.registry.find(action.capability_id);
  if (reg === undefined) return attemptOutcome(message, 'dropped', { reason: err.code });
  let leased: ActionRecord;
  try {
    leased = await k.write({
      kind: 'action.lease',
      input: {
        tenant_id: action.tenant_id,
        action_id: action.action_id,
        owner: attempt_id,
        ttl_ms: leaseMs(k, reg),
        expected_revision: action.revision,
      },
    });
  } catch (e) {
    if (isAipError(e, 'action.lease_held') || isAipError(e, 'action.state_conflict'))
      return attemptOutcome(message, 'deferred', { reason: e.code, retry_after_ms: 1_000 });
    throw e;
  }
  if (txn !== undefined && isAttemptStatus(txn.status) && attemptStarted(action)) return settleAbandoned(k, leased, leased.fence, txn, mode, reg, attempt_id);
  const error = toProtocolError(err);
  const result: ActionResult = { action_id: action.action_id, status: 'failed', error, completed_at: k.iso() };
  const to = txn === undefined || !isAttemptStatus(txn.status) ? undefined : txn.status === 'reconciling' ? ('outcome_unknown' as const) : ('failed' as const);
  return settleAttempt(k, {
    action: leased,
    fence: leased.fence,
    mode,
    ...(txn !== undefined && to !== undefined ? { txn } : {}),
    classified: { result, error, ...(to !== undefined ? { to } : {}) },
    reg,
    attempt_id,
  });
}

/** A cancelled action whose transaction never started an attempt: the record fails (no provider effect possible). */
export async function abandonUnstartedTransaction(k: Kernel, action: ActionHead, txId: string): Promise<void> {
  const txn = await k.deps.transactions.get({ tenant_id: action.tenant_id, transaction_id: txId });
  if (txn === undefined || !isAttemptStatus(txn.status) || attemptStarted(action)) return;
  const mode = action.action.transaction?.mode;
  if (!boundTo(action, txn, mode)) return;
  const error = toProtocolError(new AipError('runtime.cancelled'));
  const result: ActionResult = action.result ?? { action_id: action.action_id, status: 'cancelled' };
  const to = txn.status === 'reconciling' ? ('outcome_unknown' as const) : ('failed' as const);
  try {
    await k.write(
      k.journal.settle(
        txn,
        { to, from: [txn.status], error, result, ...terminalRetention(k, txn, to) },
        { action_id: action.action_id, reason: 'cancelled_before_attempt' },
      ),
    );
  } catch (err) {
    if (!isAipError(err, 'transaction.state_conflict')) throw err;
  }
}

/**
 * The retention a cancellation's terminal write of a record stamps, as every other terminal write does (the
 * capability's retention_days, else the runtime's: ../retention.ts); none when the record stays open.
 */
function terminalRetention(k: Kernel, txn: TransactionRecord, to: TransactionRecord['status']) {
  const retention = isTerminalStatus(to) ? retentionFor(k, txn.capability_id, txn) : undefined;
  return retention !== undefined ? { retention } : {};
}
