/**
 * The reconcile consumer and the sweeper.
 *
 * reconcile(message) runs as the runtime's own service principal and submits
 * a governed reconcile action through the same pipeline (capability, schema,
 * authorization, approval, transaction admission); the admitted attempt runs
 * inline in the consumer. Reconciliation that never reaches a terminal
 * answer is bounded: after `reconcile.max_attempts` the record is escalated
 * (wire status `requires_human`).
 *
 * sweep() is the safety net: overdue outcome_unknown records (EventBridge
 * Scheduler is the primary trigger), stalled attempts whose lease expired,
 * expired plans and expired approvals.
 */
import { AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { isErrorCode } from '../../packages/connector-sdk/src/errors/catalogue.js';
import { reconcileBackoffMs } from './config.js';
import { sha256Hex, validateAction, type Action, type TransactionStatus } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ActionRecord } from '../ports/action-store.js';
import type { ReconcileMessage } from '../ports/messages.js';
import type { QueueBatchEntry } from '../ports/queue.js';
import type { TransactionRecord } from '../ports/transaction-store.js';
import { creationLease, runAttempt, type LeasedAtCreation } from './attempts/worker.js';
import { escalate, scheduleReconcile } from './attempts/settlement.js';
import { expireApproval } from './approvals.js';
import { serviceCaller } from './identity.js';
import { RECEIPT_EVENTS } from './journal.js';
import { deriveApprovalId, isTransientError, type Kernel } from './kernel.js';
import { lookupByIdempotencyKey, ranCapabilityId } from './modes/reconcile.js';
import { retentionFor } from './retention.js';
import { deliveryReceiveCount } from './attempt-budget.js';
import { selectApprovalPolicy } from './pipeline/approval-policy.js';
import { admit, prepare } from './pipeline/admit.js';
import type { AttemptOutcome, ReconcileOutcome, SweepOutcome } from './types.js';

function out(
  msg: Pick<ReconcileMessage, 'tenant_id' | 'transaction_id'>,
  disposition: ReconcileOutcome['disposition'],
  extra: Partial<ReconcileOutcome> = {},
): ReconcileOutcome {
  return { disposition, tenant_id: msg.tenant_id, transaction_id: msg.transaction_id, retry: false, ...extra };
}

/**
 * The deterministic ID of the n-th governed reconcile action of a
 * transaction; after an operator reset the bound (`resets` > 0) the count
 * starts again in a new series, so no ID is used twice.
 */
export function reconcileActionId(tenant_id: string, transaction_id: string, attempt: number, resets = 0): string {
  const base = `rcn-${sha256Hex(JSON.stringify([tenant_id, transaction_id])).slice(0, 32)}`;
  return resets > 0 ? `${base}-r${resets}-${attempt}` : `${base}-${attempt}`;
}

/**
 * An attempt of the action holds a live lease. The attempt start leases the action alone (the transaction record
 * carries a lease only when an older runtime wrote it), so a stalled-looking record is skipped on its action's
 * lease: one consistent read per stalled record, which only stalled or long-running work costs.
 */
async function attemptRunning(k: Kernel, tenant_id: string, action_id: string, iso: string): Promise<boolean> {
  const action = await k.deps.actions.get({ tenant_id, action_id });
  return action?.status === 'running' && action.lease_expires_at !== undefined && action.lease_expires_at > iso;
}

function leaseLive(k: Kernel, r: TransactionRecord): boolean {
  return r.lease_expires_at !== undefined && Date.parse(r.lease_expires_at) > k.now().getTime();
}

function dispositionOf(r: TransactionRecord | undefined): ReconcileOutcome['disposition'] {
  if (r === undefined) return 'not_applicable';
  if (r.status === 'reconciled') return 'reconciled';
  if (r.status === 'outcome_unknown') return r.escalated_at !== undefined ? 'escalated' : 'still_unknown';
  if (r.status === 'reconciling') return 'in_progress';
  return 'not_applicable';
}

/**
 * The outcome after the consumer ran a reconcile attempt. An attempt that
 * settled the record `reconciled` reports it from its own settle write (the
 * record's state right after it; nothing follows it in this attempt); any other
 * outcome (still unknown, perhaps escalated after the settle, deferred,
 * superseded) is read back from the record.
 */
async function afterAttempt(k: Kernel, msg: ReconcileMessage, action_id: string, attempt: AttemptOutcome): Promise<ReconcileOutcome> {
  if (attempt.disposition === 'settled' && attempt.transaction_status === 'reconciled' && !attempt.retry) {
    return out(msg, 'reconciled', { action_id, retry: false, transaction_status: 'reconciled' });
  }
  const after = await k.deps.transactions.get({ tenant_id: msg.tenant_id, transaction_id: msg.transaction_id });
  return out(msg, attempt.retry ? 'deferred' : dispositionOf(after), {
    action_id,
    retry: attempt.retry,
    ...(after ? { transaction_status: after.status } : {}),
  });
}

/**
 * A reconciliation the runtime could not start, or that ended without an
 * attempt (its admission was refused, its approval expired or was denied,
 * its pinned connector is gone): one attempt toward the bound. The record
 * stays `outcome_unknown`, backs off (a transient refusal by the base delay,
 * any other exponentially) and is escalated to a human once the bound is
 * reached, so every refusal ends (docs/runtime.md, "Bounded reconciliation").
 */
async function refused(k: Kernel, msg: ReconcileMessage, txn: TransactionRecord, err: unknown, action_id?: string): Promise<ReconcileOutcome> {
  const code = isAipError(err) ? err.code : 'internal.unexpected';
  const attempts = txn.reconcile_attempts + 1;
  const delay = isTransientError(err) ? k.config.reconcile.base_delay_ms : reconcileBackoffMs(k.config, attempts);
  k.log.warn('reconciliation refused', { transaction_id: txn.transaction_id, code, reconcile_attempts: attempts });
  let after: TransactionRecord;
  try {
    after = await k.write(
      k.journal.transition(
        txn,
        {
          operation: 'refuse_reconcile',
          from: ['outcome_unknown'],
          to: 'outcome_unknown',
          patch: { next_reconcile_at: new Date(k.now().getTime() + delay).toISOString() },
          data: { last_reconcile_refusal: code },
        },
        RECEIPT_EVENTS.reconcile_refused,
        { code, attempt: attempts, ...(action_id !== undefined ? { action_id } : {}) },
      ),
    );
  } catch (e) {
    // The record moved (another reconciliation began, or it settled): that one decides.
    if (isAipError(e, 'transaction.state_conflict')) return out(msg, 'in_progress', { reason: `refused:${code}` });
    throw e;
  }
  if (after.reconcile_attempts >= k.config.reconcile.max_attempts) {
    const e = await escalate(k, after, 'attempts_exhausted');
    return out(msg, 'escalated', { transaction_status: e.status, reason: `refused:${code}`, ...(action_id !== undefined ? { action_id } : {}) });
  }
  await scheduleReconcile(k, after, true);
  return out(msg, 'still_unknown', { transaction_status: after.status, reason: `refused:${code}`, ...(action_id !== undefined ? { action_id } : {}) });
}

/** Errors the consumer cannot record (the store is down, a test crash): the message is redelivered. */
function unrecordable(err: unknown): boolean {
  return isAipError(err, 'transaction.store_unavailable') || isAipError(err, 'runtime.crash_injected');
}

/**
 * A reconcile waiting for an approval: not an attempt (a human decides), but
 * not due either until the approval can have expired, so neither the sweeper
 * nor the schedule spins on it. Its expiry or denial ends the action, and the
 * next round counts that as a refusal.
 */
async function awaitApproval(k: Kernel, msg: ReconcileMessage, txn: TransactionRecord, action_id: string): Promise<ReconcileOutcome> {
  const approval = await k.deps.approvals.get({ tenant_id: txn.tenant_id, approval_id: deriveApprovalId(txn.tenant_id, action_id) });
  const until = approval?.expires_at;
  if (until !== undefined && Date.parse(until) > k.now().getTime() && (txn.next_reconcile_at === undefined || txn.next_reconcile_at < until)) {
    try {
      const moved = await k.write(
        k.journal.transition(
          txn,
          { operation: 'reschedule_reconcile', from: ['outcome_unknown'], to: 'outcome_unknown', patch: { next_reconcile_at: until } },
          RECEIPT_EVENTS.rescheduled,
          {
            reason: 'awaiting_approval',
            action_id,
          },
        ),
      );
      await scheduleReconcile(k, moved, true);
    } catch (err) {
      if (!isAipError(err, 'transaction.state_conflict')) throw err;
    }
  }
  return out(msg, 'requires_human', { action_id, reason: 'approval_pending' });
}

/** What the consumer answers when it started from a schedule's image and that image proved stale: read and decide again. */
const STALE_IMAGE = Symbol('stale image');

/**
 * The record a schedule's message carries (`ReconcileMessage.scheduled`), when this delivery may start from it: the
 * message's first delivery (the queue's receive count is 1, or not given: a direct Runtime call). A redelivery, the
 * sweeper's and an operator's messages carry none, or are read as before (an earlier delivery may have moved the
 * record). Safety does not rest on the count: every write the consumer makes from it is conditioned on its revision.
 */
function scheduledImage(msg: ReconcileMessage): TransactionRecord | undefined {
  const image = msg.scheduled?.transaction;
  if (image === undefined || msg.reason !== 'schedule') return undefined;
  const received = deliveryReceiveCount();
  return received === undefined || received <= 1 ? (image as TransactionRecord) : undefined;
}

/**
 * The reconcile consumer. A schedule's first delivery starts from the record the schedule was created with instead of
 * reading it (docs/runtime.md, "The reconcile consumer's first read"); only the path that reconciles is taken from
 * that image, and its first write of the record (the begin, a compare-and-set on the image's status and revision)
 * proves it current. Any other decision (not due, escalation, a refusal, a lost begin, an action already there) is
 * taken again from a consistent read in the same invocation, exactly as for a message of IDs.
 */
export async function reconcileMessage(k: Kernel, msg: ReconcileMessage): Promise<ReconcileOutcome> {
  const image = scheduledImage(msg);
  if (image !== undefined) {
    const outcome = await reconcileFrom(k, msg, image, true);
    if (outcome !== STALE_IMAGE) return outcome;
    k.log.info('reconcile: the scheduled record is not current; reading it', { transaction_id: msg.transaction_id });
  }
  const txn = await k.deps.transactions.get({ tenant_id: msg.tenant_id, transaction_id: msg.transaction_id });
  if (txn === undefined) return out(msg, 'not_applicable', { reason: 'transaction_not_found' });
  return (await reconcileFrom(k, msg, txn, false)) as ReconcileOutcome;
}

/**
 * The consumer from a record: read (`fromImage` false), or a schedule's image, which may only reconcile (any other
 * outcome answers STALE_IMAGE before anything is written from it but the reconcile action's creation, which a lost
 * begin ends: pipeline/admit.ts `guarded`).
 */
async function reconcileFrom(k: Kernel, msg: ReconcileMessage, txn: TransactionRecord, fromImage: boolean): Promise<ReconcileOutcome | typeof STALE_IMAGE> {
  const ref = { tenant_id: msg.tenant_id, transaction_id: msg.transaction_id };
  if (fromImage) {
    const due = txn.next_reconcile_at === undefined || Date.parse(txn.next_reconcile_at) <= k.now().getTime();
    if (txn.status !== 'outcome_unknown' || txn.escalated_at !== undefined || !due || txn.reconcile_attempts >= k.config.reconcile.max_attempts)
      return STALE_IMAGE;
  }

  if (txn.status === 'reconciling') {
    const actionId = txn.data.reconcile_action_id;
    if (leaseLive(k, txn) || typeof actionId !== 'string') return out(msg, 'in_progress', { transaction_status: txn.status });
    // A reconcile attempt stopped: reconciliation only reads provider state, so re-drive it. One still running holds
    // its action's lease (the attempt start leases the action alone): the re-drive is refused and nothing is written.
    const attempt = await runAttempt(k, {
      kind: 'invoke',
      tenant_id: txn.tenant_id,
      action_id: actionId,
      transaction_id: txn.transaction_id,
      fence: txn.fence,
      attempt: 1,
    });
    if (attempt.disposition === 'deferred' && attempt.reason === 'action.lease_held') return out(msg, 'in_progress', { transaction_status: txn.status });
    return afterAttempt(k, msg, actionId, attempt);
  }
  if (txn.status !== 'outcome_unknown') return out(msg, 'not_applicable', { transaction_status: txn.status });
  if (txn.escalated_at !== undefined) return out(msg, 'requires_human', { transaction_status: txn.status, reason: 'escalated' });
  if (txn.next_reconcile_at !== undefined && Date.parse(txn.next_reconcile_at) > k.now().getTime()) {
    return out(msg, 'not_due', { transaction_status: txn.status });
  }
  if (txn.reconcile_attempts >= k.config.reconcile.max_attempts) {
    const e = await escalate(k, txn, 'attempts_exhausted');
    return out(msg, 'escalated', { transaction_status: e.status });
  }
  // Reconcile what actually ran: for a compensation through an alternate capability, that capability.
  const capability_id = ranCapabilityId(txn);
  const reg = k.deps.registry.find(capability_id);
  if (txn.provider_operation === undefined && !(await lookupByIdempotencyKey(k, reg))) {
    if (fromImage) return STALE_IMAGE;
    // "If a connector learns the provider operation ID but does not publish it ... the generic runtime cannot invent
    // that identifier." Unless the connector can look the operation up by the idempotency key the runtime sent.
    const e = await escalate(k, txn, 'no_provider_operation');
    return out(msg, 'escalated', { transaction_status: e.status, reason: 'no_provider_operation' });
  }
  // An approval-gated reconciliation is not started from an image: its action would wait for an approver.
  if (fromImage && (reg === undefined || selectApprovalPolicy(k.config, txn.tenant_id, reg.capability, 'reconcile') !== undefined)) return STALE_IMAGE;
  const original = await k.deps.actions.get({ tenant_id: txn.tenant_id, action_id: txn.action_id });
  if (original === undefined || original.input_redacted === true) {
    if (fromImage) return STALE_IMAGE;
    const e = await escalate(k, txn, 'original_input_unavailable');
    return out(msg, 'escalated', { transaction_status: e.status, reason: 'original_input_unavailable' });
  }

  const action: Action = {
    id: reconcileActionId(
      txn.tenant_id,
      txn.transaction_id,
      txn.reconcile_attempts + 1,
      typeof txn.data.reconcile_resets === 'number' ? txn.data.reconcile_resets : 0,
    ),
    capability_id,
    input: original.action.input,
    ...(original.action.identity !== undefined ? { identity: original.action.identity } : {}),
    transaction: { mode: 'reconcile', transaction_id: txn.transaction_id },
  };
  // The original was admitted under the account check: the service principal acts for exactly its account (or none).
  const account = original.action.identity?.external_account_id;
  const caller = serviceCaller(k.config.service_principal, txn.tenant_id, [...(reg?.capability.authorization?.scopes ?? []), ...k.config.service_scopes], {
    accounts: account !== undefined ? [account] : [],
  });
  let admitted;
  // The records as the admission's own writes left them: the inline attempt starts from them.
  const written: { action?: ActionRecord; transaction?: TransactionRecord } = {};
  let leased: LeasedAtCreation | undefined;
  try {
    // The same pipeline as any governed action, from the core envelope validator on.
    // Admission starts from the record read above (its begin_reconcile write is conditional on it).
    const adm = await prepare(k, caller, validateAction(action), { tenant_id: txn.tenant_id, internal: true, known: txn });
    // The action is created already leased for the inline attempt (its route resolved now): no lease write follows.
    // The begin (outcome_unknown → reconciling) still precedes any provider call (docs/table-design.md, "The
    // reconcile action created leased").
    leased = await creationLease(k, adm.tenant_id, adm.action);
    admitted = await admit(k, {
      ...adm,
      internal: true,
      written,
      ...(leased !== undefined ? { lease: leased.lease } : {}),
      ...(fromImage ? { known_transaction_unread: true } : {}),
    });
  } catch (err) {
    if (unrecordable(err)) throw err;
    // From an image, any refusal is decided again from a read (a lost begin: the record moved since the schedule).
    if (fromImage) return STALE_IMAGE;
    if (isAipError(err, 'runtime.reconcile_not_outcome_unknown') || isAipError(err, 'runtime.action_in_flight')) {
      return out(msg, 'in_progress', { action_id: action.id });
    }
    return refused(k, msg, txn, err, action.id);
  }
  if (fromImage && admitted.disposition !== 'accepted') return STALE_IMAGE;
  if (admitted.disposition === 'requires_human') return awaitApproval(k, msg, txn, action.id);
  if (admitted.disposition !== 'accepted') {
    // Admitted without an attempt: a rejection, or the replay of this round's action that already ended (its approval
    // expired or was denied). The record did not move: a refusal, counted toward the bound.
    const after = await k.deps.transactions.get(ref);
    if (after !== undefined && after.status === 'outcome_unknown' && after.revision === txn.revision) {
      const error = admitted.action_result.error;
      return refused(
        k,
        msg,
        after,
        new AipError(error !== undefined && isErrorCode(error.code) ? error.code : 'runtime.reconcile_not_outcome_unknown'),
        action.id,
      );
    }
    return out(msg, dispositionOf(after), { action_id: action.id, ...(after ? { transaction_status: after.status } : {}) });
  }
  // Internal admissions do not enqueue: the consumer runs the attempt inline.
  const attempt = await runAttempt(
    k,
    { kind: 'invoke', tenant_id: txn.tenant_id, action_id: action.id, transaction_id: txn.transaction_id, fence: 0, attempt: 1 },
    { original, ...written, ...(leased !== undefined ? { leased } : {}) },
  );
  return afterAttempt(k, msg, action.id, attempt);
}

const MAX_SWEEP_PAGES = 10;

async function* listAll(k: Kernel, status: TransactionStatus, until: string): AsyncGenerator<TransactionRecord> {
  let cursor: string | undefined;
  for (let page = 0; page < MAX_SWEEP_PAGES; page++) {
    const p = await k.deps.transactions.listByStatus({ status, until, limit: 100, ...(cursor !== undefined ? { cursor } : {}) });
    for (const r of p.items) yield r;
    cursor = p.cursor;
    if (cursor === undefined) return;
  }
}

/** Records read per status-index partition to find the oldest outcome_unknown record. */
export const OLDEST_OUTCOME_UNKNOWN_SAMPLE = 100;

/**
 * Age in whole seconds of the oldest `outcome_unknown` record, escalated ones
 * included (0 when there is none): now − `updated_at`, the time of the
 * record's last write, i.e. when it (re-)entered `outcome_unknown` or was
 * escalated. A record that keeps cycling through reconciliation stays young;
 * one nobody touches (reconciliation not keeping up, or a human needed)
 * grows old.
 *
 * Cost: the first page (OLDEST_OUTCOME_UNKNOWN_SAMPLE records) of each of
 * the two status-index partitions, no `until` bound:
 * - escalated records sort by `escalated_at`, which is their `updated_at`, so
 *   the oldest escalated record is always seen;
 * - pending records sort by `next_reconcile_at` (`updated_at` + a backoff of
 *   at most `reconcile.max_delay_ms`, or a connector's retry_after_ms), so the
 *   first page holds the most overdue ones. With more pending records than
 *   one page, an older record whose reconciliation is due later than the
 *   page's last can be missed: the figure is then a lower bound.
 *
 * A record being reconciled is not counted (it is `reconciling`, although its
 * index entry may still be its `outcome_unknown` one: the listing keeps only
 * the records in the status it lists); it counts again from its return to
 * `outcome_unknown`, whose write sets its `updated_at`.
 */
export async function oldestOutcomeUnknownAgeSeconds(k: Kernel, now: Date): Promise<number> {
  let oldest = Number.POSITIVE_INFINITY;
  for (const escalated of [false, true]) {
    const page = await k.deps.transactions.listByStatus({ status: 'outcome_unknown', escalated, limit: OLDEST_OUTCOME_UNKNOWN_SAMPLE });
    for (const r of page.items) {
      const at = Date.parse(r.updated_at);
      if (Number.isFinite(at) && at < oldest) oldest = at;
    }
  }
  return oldest === Number.POSITIVE_INFINITY ? 0 : Math.max(0, Math.floor((now.getTime() - oldest) / 1000));
}

/** The safety net. Returns how many messages it enqueued and the oldest outcome_unknown age. */
export async function sweep(k: Kernel, now: Date = k.now()): Promise<SweepOutcome> {
  const iso = now.toISOString();
  const reconcile: QueueBatchEntry[] = [];
  const invoke: QueueBatchEntry[] = [];
  let n = 0;
  const id = () => `s${n++}`;

  for await (const r of listAll(k, 'outcome_unknown', iso)) {
    if (r.escalated_at !== undefined) continue;
    reconcile.push({ id: id(), message: { kind: 'reconcile', tenant_id: r.tenant_id, transaction_id: r.transaction_id, reason: 'sweeper' } });
  }
  const stalledBefore = new Date(now.getTime() - k.config.stall_after_ms).toISOString();
  for (const status of ['prepared', 'committing', 'compensating'] as const) {
    for await (const r of listAll(k, status, stalledBefore)) {
      if (r.lease_expires_at !== undefined && r.lease_expires_at > iso) continue;
      if (await attemptRunning(k, r.tenant_id, r.action_id, iso)) continue;
      invoke.push({
        id: id(),
        message: { kind: 'invoke', tenant_id: r.tenant_id, action_id: r.action_id, transaction_id: r.transaction_id, fence: r.fence, attempt: 1 },
      });
    }
  }
  for await (const r of listAll(k, 'reconciling', stalledBefore)) {
    if (r.lease_expires_at !== undefined && r.lease_expires_at > iso) continue;
    const reconciler = r.data.reconcile_action_id;
    if (typeof reconciler === 'string' && (await attemptRunning(k, r.tenant_id, reconciler, iso))) continue;
    reconcile.push({ id: id(), message: { kind: 'reconcile', tenant_id: r.tenant_id, transaction_id: r.transaction_id, reason: 'sweeper' } });
  }
  // Plans past their 15 minutes: planned → failed.
  for await (const r of listAll(k, 'planned', iso)) {
    if (r.plan === undefined || Date.parse(r.plan.expires_at) > now.getTime()) continue;
    try {
      const retention = retentionFor(k, r.capability_id, r);
      await k.write(
        k.journal.transition(
          r,
          { operation: 'expire_plan', from: ['planned'], to: 'failed', ...(retention !== undefined ? { retention } : {}) },
          RECEIPT_EVENTS.plan_expired,
        ),
      );
    } catch (err) {
      if (!isAipError(err, 'transaction.state_conflict')) throw err;
    }
  }
  // Pending approvals past their expiry, of every tenant (the byExpiry index; not the configuration's tenant list).
  let approvalCursor: string | undefined;
  for (let page = 0; page < MAX_SWEEP_PAGES; page++) {
    const p = await k.deps.approvals.listExpiring({ expires_before: iso, limit: 100, ...(approvalCursor !== undefined ? { cursor: approvalCursor } : {}) });
    for (const a of p.items) await expireApproval(k, a);
    approvalCursor = p.cursor;
    if (approvalCursor === undefined) break;
  }

  let enqueued = 0;
  if (reconcile.length > 0) enqueued += (await k.deps.reconcileQueue.sendBatch(reconcile)).sent.length;
  if (invoke.length > 0) enqueued += (await k.deps.invokeQueue.sendBatch(invoke)).sent.length;
  // After the safety-net work: a failing age read fails the sweep, but only once the messages are sent.
  return { enqueued, oldest_outcome_unknown_age_seconds: await oldestOutcomeUnknownAgeSeconds(k, now) };
}
