/**
 * The SQS worker: one crash-safe attempt per InvokeMessage.
 *
 * 1. Reload the action and its transaction (one consistent read), or, on the
 *    first delivery of a fresh admission's message, start from the images
 *    that admission wrote (`firstDelivery`): the lease below is conditioned on
 *    the image's revision as after a read, and a refused lease falls back to
 *    the read in the same invocation.
 * 2. Resolve the connector and the action-scoped route (no write yet): the
 *    route pinned on the action under the reuse rules, else the one this
 *    attempt pins with its lease.
 * 3. Lease the action (fence + 1), pinning the route in the same conditional
 *    write when the action held none: every later action write is fenced, and
 *    the route is durable before the provider call.
 * 4. For a transactional mode, lease the transaction record. Its revision is
 *    the fence of every transaction write, so a zombie attempt whose lease
 *    was taken over can never checkpoint or settle over the newer one.
 * 5. Recovery: a record still `prepared` / `committing` / `compensating`
 *    that an earlier attempt leased (fence > 0) may have reached the provider.
 *    The attempt re-invokes only with the same action and idempotency
 *    identity and only when the capability declares retry with downstream
 *    idempotency; otherwise it settles `outcome_unknown` and schedules
 *    reconciliation. A `reconciling` record is re-driven (it only reads).
 * 6. Invoke, then settle (settlement.ts: a definitive outcome settles the
 *    action first, then the record from it). A provider operation the connector
 *    checkpoints before a wait that can be lost is written durably at once
 *    (fenced by the transaction revision); one published with the provider's
 *    final answer in hand (`checkpoint_with_answer`) is written by the
 *    settlement itself (carried by the action's write to the record's).
 * 7. Except: a remote host's signed capacity refusal (the connector was not
 *    called) is not settled while the deferral bound allows: the lease is
 *    given back and the message redelivered later (`deferForCapacity`).
 *
 * A delivery that finds the action terminal acknowledges it; when that action
 * settled first and its record is still in its attempt status (the attempt
 * stopped between its two settlement writes), it finishes the record from the
 * action first (settlement.ts `settledRecord`).
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { capabilityRetryable } from '../../../packages/connector-sdk/src/failure.js';
import type {
  ApprovalEvidence,
  OriginalRequestIdentity,
  TransactionCheckpointWriter,
  TransactionExecutionContext,
} from '../../../packages/connector-sdk/src/context.js';
import type { Action, JsonObject, TransactionMode } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ActionHead, ActionRecord, CreationLease } from '../../ports/action-store.js';
import type { ApprovalRecord } from '../../ports/approval-store.js';
import { reservationIdentity } from '../../ports/idempotency-store.js';
import type { AdmittedImages, InvokeMessage } from '../../ports/messages.js';
import type { RouteAssignment } from '../../ports/route-store.js';
import { openStreamSink } from './stream-sink.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import { isAttemptStatus } from '../../transactions/state-machine.js';
import type { Kernel } from '../kernel.js';
import { withStoredResult, withStoredResultOf } from '../view.js';
import { capacityDeferralDelayMs, mayDeferForCapacity } from '../config.js';
import { deliveryReceiveCount } from '../attempt-budget.js';
import type { CompensationMemory, RuntimeMemory } from '../../../packages/connector-sdk/src/memory.js';
import { connectorFacingCompensation } from '../modes/compensate.js';
import { ranCapabilityId } from '../modes/reconcile.js';
import { createdLeased, isTerminalAction } from '../pipeline/action-record.js';
import type { RegisteredCapability } from '../registry.js';
import type { HostedConnector } from '../deps.js';
import type { AttemptOutcome } from '../types.js';
import {
  hostedConnector,
  invokeConnector,
  isPreInvocationError,
  leaseMs,
  routeAssignment,
  routeToPin,
  watchCancellation,
  type InvocationOutcome,
  type InvocationSubject,
} from './invoke.js';
import { classify, finishSideRecords, settleAttempt, settledRecord } from './settlement.js';
import {
  abandonUnstartedTransaction,
  attemptOutcome,
  attemptStarted,
  boundTo,
  failBeforeInvocation,
  finishingResult,
  settleAbandoned,
  settleCancelled,
} from './recovery.js';

export { abandonUnstartedTransaction } from './recovery.js';

/** The verified approval evidence of an approved approval: every approving decision (min_approvals may need several). */
export function approvalEvidence(approval: ApprovalRecord | undefined): ApprovalEvidence | undefined {
  if (approval === undefined || approval.status !== 'approved' || approval.decision === undefined) return undefined;
  const approving = (approval.decisions ?? []).filter((d) => d.decision === 'approved').map((d) => d.decision_id);
  return {
    approval_ids: [approval.approval_id],
    decision_ids: approving.length > 0 ? approving : [approval.decision.decision_id],
    policy_hashes: [approval.policy.policy_hash],
    authorization: { decision: 'allow', scopes: [...approval.policy.approver_scopes], policy_id: approval.policy.policy_id },
  };
}

/**
 * A reconcile attempt's view of the request it reconciles: the original
 * effect's action, the capability that actually ran (an alternate
 * compensation capability, for a compensation), the transaction and the
 * scope-unique identity of its idempotency reservation, so that a connector
 * can look the operation up by the key that request sent when no operation
 * ID was checkpointed (lib/connectors/http/idempotency.ts
 * `originalIdempotencyKey`).
 */
export async function originalRequestOf(k: Kernel, txn: TransactionRecord, held?: ActionRecord): Promise<{ original_request?: OriginalRequestIdentity }> {
  const original =
    held !== undefined && held.tenant_id === txn.tenant_id && held.action_id === txn.action_id
      ? held
      : await k.deps.actions.get({ tenant_id: txn.tenant_id, action_id: txn.action_id });
  if (original === undefined) return {};
  const key = original.action.idempotency_key;
  return {
    original_request: {
      action_id: original.action_id,
      capability_id: ranCapabilityId(txn),
      transaction_id: txn.transaction_id,
      ...(key !== undefined
        ? {
            reservation_id: reservationIdentity({
              tenant_id: original.tenant_id,
              principal_kind: original.principal.kind,
              principal_id: original.principal.id,
              key,
            }),
          }
        : {}),
    },
  };
}

/**
 * What the reconcile consumer, running a reconcile attempt inline, already holds:
 * - `action`, `transaction`: the reconcile action and the transaction exactly as
 *   the admission's own conditional writes returned them (creation,
 *   begin_reconcile); the attempt starts from them instead of reading them. The
 *   lease write that follows is conditioned on their revisions, as after a read.
 * - `original`: the original action as the consumer read it (strongly
 *   consistent); the settlement reuses it only if it was terminal (a terminal
 *   action is never rewritten).
 */
export interface KnownRecords {
  readonly action?: ActionRecord;
  readonly transaction?: TransactionRecord;
  readonly original?: ActionRecord;
  /** The lease the action was created with (`creationLease`), when `action` is that creation's record. */
  readonly leased?: LeasedAtCreation;
  /** A compensation's memory as its admission built it (the submit running the first attempt inline). */
  readonly compensation?: CompensationMemory;
}

/**
 * The first attempt's lease, granted by the action's creation (`CreateActionInput.lease`) instead of a lease write of
 * its own: the attempt ID that owns it, the connector it resolved and the route it pins. The reconcile consumer
 * resolves it before it admits its action, and its inline attempt starts from the created record without a lease
 * write (docs/table-design.md, "The reconcile action created leased").
 */
export interface LeasedAtCreation {
  readonly attempt_id: string;
  readonly hosted: HostedConnector;
  readonly route: RouteAssignment;
  readonly lease: CreationLease;
}

/**
 * Step 2 ahead of the action's creation, for an action the caller creates and then attempts inline: the connector
 * and the route the first attempt would pin (an action not yet created holds none), as the lease `CreateActionInput`
 * carries. Undefined when the connector cannot be resolved now: the action is then created unleased, and its attempt
 * meets the failure where any attempt does (`routeFailure`).
 */
export async function creationLease(k: Kernel, tenant_id: string, action: Action): Promise<LeasedAtCreation | undefined> {
  const reg = k.deps.registry.find(action.capability_id);
  if (reg === undefined) return undefined;
  let hosted: HostedConnector;
  try {
    hosted = await hostedConnector(k, reg);
  } catch (err) {
    if (isAipError(err)) return undefined;
    throw err;
  }
  const attempt_id = `att-${k.ids()}`;
  const route = routeAssignment(k, { tenant_id, action, reg, attempt_id, fence: 1, route_action_id: action.id }, hosted);
  return { attempt_id, hosted, route, lease: { owner: attempt_id, ttl_ms: leaseMs(k, reg), route } };
}

/** The record is the one its creation leased for `leased` and nothing wrote since (so its lease is that attempt's). */
function heldFromCreation(action: ActionHead, leased: LeasedAtCreation | undefined): leased is LeasedAtCreation {
  return leased !== undefined && createdLeased(action) && action.lease_owner === leased.attempt_id && isRecord(action);
}

/**
 * Where an attempt starts from: what the caller holds (KnownRecords), or a fresh admission's images
 * (`InvokeMessage.admitted`): the action without its input (its lease's write answers the whole item), the
 * transaction record, and a compensation's memory as the admission built it.
 */
interface StartFrom {
  readonly action?: ActionHead;
  readonly transaction?: TransactionRecord;
  readonly original?: ActionRecord;
  readonly compensation?: CompensationMemory;
  readonly leased?: LeasedAtCreation;
}

/**
 * One attempt for an invoke message. The first delivery of a fresh admission's message starts from the images that
 * admission wrote instead of reading them (docs/runtime.md, "The worker's first read"): one consistent
 * `BatchGetItem` fewer. The action lease is conditioned on the image's revision exactly as on a read's, so an image
 * that is no longer the stored item (the action was cancelled, approved, leased by another attempt since) cannot
 * lease: that refusal wrote nothing, and the attempt starts again from a consistent read in the same invocation.
 */
export async function runAttempt(k: Kernel, message: InvokeMessage, known?: KnownRecords): Promise<AttemptOutcome> {
  const images = known === undefined ? firstDelivery(message) : undefined;
  if (images !== undefined) {
    const out = await attemptFrom(k, message, {
      action: images.action,
      ...(images.transaction !== undefined ? { transaction: images.transaction as TransactionRecord } : {}),
      ...(images.compensation !== undefined ? { compensation: images.compensation } : {}),
    });
    // Only a refused lease answers these two reasons (startAttempt, failBeforeInvocation), and it wrote nothing.
    if (out.disposition !== 'deferred' || (out.reason !== 'action.state_conflict' && out.reason !== 'action.lease_held')) return out;
    k.log.info('attempt start: the admitted images are stale; reading the action', { action_id: message.action_id, reason: out.reason });
  }
  return attemptFrom(k, message, known);
}

/**
 * The admission's images, when this delivery may start from them: the message's first delivery (the queue's
 * receive count is 1, or not given: a direct Runtime call, which no queue redelivers) of the first attempt. On a
 * redelivery the images are ignored and the attempt reads, as for a message of IDs: an earlier delivery may have
 * leased the action, and the read is then cheaper than a refused lease. (Safety does not rest on the count: a
 * stale image cannot lease, see runAttempt.)
 */
function firstDelivery(message: InvokeMessage): AdmittedImages | undefined {
  const images = message.admitted;
  if (images === undefined || message.fence !== 0 || message.attempt !== 1) return undefined;
  const received = deliveryReceiveCount();
  return received === undefined || received <= 1 ? images : undefined;
}

async function attemptFrom(k: Kernel, message: InvokeMessage, known?: StartFrom): Promise<AttemptOutcome> {
  const heldAction =
    known?.action !== undefined && known.action.tenant_id === message.tenant_id && known.action.action_id === message.action_id ? known.action : undefined;
  const heldTxn =
    known?.transaction !== undefined && known.transaction.tenant_id === message.tenant_id && known.transaction.transaction_id === message.transaction_id
      ? known.transaction
      : undefined;
  const loaded: { action: ActionHead | undefined; transaction?: { transaction_id: string; record: TransactionRecord | undefined } } =
    heldAction !== undefined
      ? { action: heldAction, ...(heldTxn !== undefined ? { transaction: { transaction_id: heldTxn.transaction_id, record: heldTxn } } : {}) }
      : await loadAttempt(k, message);
  const action = loaded.action;
  if (action === undefined) return attemptOutcome(message, 'dropped', { reason: 'action_not_found' });
  if (action.status === 'requires_human') return attemptOutcome(message, 'dropped', { reason: 'awaiting_approval' });
  const mode = action.action.transaction?.mode;
  const txId = mode === undefined || mode === 'rollback_not_supported' ? undefined : action.transaction_id;
  if (isTerminalAction(action.status)) {
    if (action.status === 'cancelled' && txId !== undefined) await abandonUnstartedTransaction(k, action, txId);
    // The action settled first and its attempt stopped before the record (docs/table-design.md, "The action settles
    // first"): this delivery (a redelivery, or the sweeper's re-invoke of the stalled record) finishes the record.
    const finished = txId !== undefined && action.settlement !== undefined ? await finishSettledRecord(k, action, txId, loaded.transaction) : undefined;
    return attemptOutcome(message, 'already_settled', {
      action_result: action.result ?? { action_id: action.action_id, status: action.status },
      ...(finished !== undefined ? { transaction_status: finished.status } : {}),
    });
  }
  k.crash('after_receive_before_lease');

  const reg = k.deps.registry.find(action.capability_id);
  let txn =
    txId === undefined
      ? undefined
      : loaded.transaction?.transaction_id === txId
        ? loaded.transaction.record
        : await k.deps.transactions.get({ tenant_id: action.tenant_id, transaction_id: txId });
  if (txn !== undefined && !boundTo(action, txn, mode)) return attemptOutcome(message, 'dropped', { reason: 'transaction_bound_to_another_action' });
  if (txId !== undefined && txn === undefined) return attemptOutcome(message, 'dropped', { reason: 'transaction_not_found' });

  // Connector-facing action and capability (an alternate compensation capability rewrites it).
  let connectorReg: RegisteredCapability | undefined = reg;
  let memory: RuntimeMemory | undefined;
  if (mode === 'compensate' && txn !== undefined && reg !== undefined) {
    const alt = (txn.data.compensation as JsonObject | undefined)?.compensation_capability_id;
    if (typeof alt === 'string' && alt !== reg.capability_id) connectorReg = k.deps.registry.find(alt);
    const capability = connectorReg?.capability_id ?? action.capability_id;
    memory = { compensation: admittedMemory(known?.compensation, action, capability) ?? (await compensationMemory(k, action, txn, capability)) };
  }

  // 2. connector and route (before any lease: nothing has reached a provider yet). A route already pinned is reused
  // or refused here; none pinned, the lease below pins this attempt's in the same write (docs/table-design.md).
  // An action created leased for this very attempt (`creationLease`) holds both already, and its lease.
  const fromCreation = heldFromCreation(action, known?.leased) ? known?.leased : undefined;
  const attempt_id = fromCreation?.attempt_id ?? `att-${k.ids()}`;
  let hosted;
  let route: RouteAssignment;
  let pin: RouteAssignment | undefined;
  try {
    if (reg === undefined || connectorReg === undefined)
      throw new AipError('capability.not_found', undefined, { details: { capability_id: action.capability_id } });
    if (fromCreation !== undefined) {
      hosted = fromCreation.hosted;
      route = fromCreation.route;
    } else {
      hosted = await hostedConnector(k, connectorReg);
      const resolved = await routeToPin(k, action, routeAssignment(k, routeSubject(action, connectorReg, attempt_id), hosted));
      route = resolved.route;
      if (resolved.pin) pin = route;
    }
  } catch (err) {
    return routeFailure(k, message, action, txn, mode, err, attempt_id);
  }

  // 3-5. lease the action (unless its creation did); recovery
  const lease_ms = leaseMs(k, connectorReg);
  const retrySafe = capabilityRetryable(connectorReg.capability, connectorReg.implementation_support);
  const started =
    fromCreation !== undefined
      ? await afterLease(k, message, action as ActionRecord, false, txn, mode, connectorReg, attempt_id, retrySafe)
      : await startAttempt(k, message, action, txn, mode, connectorReg, attempt_id, lease_ms, retrySafe, pin);
  if ('disposition' in started) return started;
  // From here on the action is the leased record (the lease's own write answered it, input included); before the
  // lease, `action` may be an admitted image without its input.
  const leased = started.action;
  txn = started.transaction ?? txn;
  const fence = leased.fence;
  const key = leased.action.idempotency_key;
  const approval =
    leased.approval_id !== undefined
      ? approvalEvidence(await k.deps.approvals.get({ tenant_id: leased.tenant_id, approval_id: leased.approval_id }))
      : undefined;

  const connectorAction = mode === 'compensate' ? connectorFacingCompensation(leased.action, connectorReg) : leased.action;
  const transaction: TransactionExecutionContext | undefined =
    txn !== undefined
      ? {
          transaction_id: txn.transaction_id,
          mode: mode as TransactionMode,
          ...(txn.plan_id !== undefined ? { plan_id: txn.plan_id } : {}),
          ...(txn.provider_operation !== undefined ? { provider_operation: txn.provider_operation } : {}),
          ...(txn.reconciliation_cursor !== undefined ? { cursor: txn.reconciliation_cursor } : {}),
          ...(mode === 'reconcile' ? await originalRequestOf(k, txn, known?.original) : {}),
        }
      : undefined;
  const subject: InvocationSubject = {
    tenant_id: leased.tenant_id,
    action: connectorAction,
    reg: connectorReg,
    principal: leased.principal,
    attempt_id,
    fence,
    issued_at: new Date(Date.parse(leased.created_at)),
    lease_ms,
    route_action_id: leased.action_id,
    route,
    ...(leased.actor !== undefined ? { actor: leased.actor } : {}),
    // The runtime's service principal reconciling another principal's transaction acts on that principal's behalf.
    ...(mode === 'reconcile' && txn !== undefined && (txn.principal.id !== leased.principal.id || txn.principal.kind !== leased.principal.kind)
      ? { on_behalf_of: txn.principal }
      : {}),
    ...(transaction !== undefined ? { transaction } : {}),
    ...(approval !== undefined ? { approval } : {}),
    // reservation_id: the scope-unique identity of the reservation (tenant, principal, key), the same for every
    // attempt of this action; connectors derive downstream idempotency keys from it, never from the raw key.
    ...(key !== undefined
      ? {
          idempotency: {
            key,
            reservation_id: reservationIdentity({ tenant_id: leased.tenant_id, principal_kind: leased.principal.kind, principal_id: leased.principal.id, key }),
            attempt_id,
          },
        }
      : {}),
    ...(memory !== undefined ? { memory } : {}),
  };

  // The checkpoint writer: fenced by the revision this attempt holds.
  let held = txn;
  let crashed: unknown;
  // Checkpoint writes in flight. The deadline may end the connector call while one is being written; it
  // still lands (or fails) and moves the revision, so settlement waits for it and settles from `held`.
  const writing = new Set<Promise<void>>();
  const checkpoints: TransactionCheckpointWriter = {
    checkpoint: ({ provider_operation, reconciliation_cursor }) => {
      const write = (async () => {
        try {
          k.crash('after_provider_accept_before_checkpoint');
          if (held === undefined) throw new AipError('connector.transaction_checkpoint_unavailable');
          // The record's revision fences it against other writers; the action's fence, checked in the same atomic
          // write, against an earlier attempt of this action (the attempt start does not write the record).
          const out = await k.commit([
            k.journal.checkpoint(held as TransactionRecord & { status: TransactionRecord['status'] }, provider_operation, reconciliation_cursor),
            { kind: 'action.check_fence', input: { tenant_id: action.tenant_id, action_id: action.action_id, fence } },
          ] as const);
          if (!out.committed) throw (out.refused.find((r) => r.kind === 'action.check_fence') ?? out.refused[0])?.error;
          held = out.written[0];
          k.crash('after_checkpoint_before_response');
        } catch (err) {
          if (isAipError(err, 'runtime.crash_injected')) crashed = err;
          throw err;
        }
      })();
      const tracked = write.then(
        () => undefined,
        () => undefined,
      );
      writing.add(tracked);
      void tracked.then(() => writing.delete(tracked));
      return write;
    },
    // The connector holds the provider's final answer and returns next (checkpoint_with_answer): nothing that can
    // be lost is awaited before the settlement, so the reference goes into the settlement write (the attempt's
    // provider_operation) instead of a write of its own. Any wait of the runtime's own before the settlement (a
    // cancellation request, a stream drain) makes it durable first (./deadline.ts persistHeld).
    hold: async () => {
      try {
        k.crash('after_provider_accept_before_checkpoint');
        if (held === undefined) throw new AipError('connector.transaction_checkpoint_unavailable');
        k.crash('after_checkpoint_before_response');
      } catch (err) {
        if (isAipError(err, 'runtime.crash_injected')) crashed = err;
        throw err;
      }
    },
  };
  const streaming = connectorReg.capability.execution?.supports_streaming === true && connectorReg.implementation_support.streaming;
  const stream_sink = streaming ? await openStreamSink(k.deps.uow, k.deps.streams, action.tenant_id, action.action_id) : undefined;

  k.crash('after_lease_before_provider_call');
  // A client's cancellation reaches the attempt while it is inside the connector (not for the runtime's own reconciliations).
  const watch = mode !== 'reconcile' ? watchCancellation(k, action.tenant_id, action.action_id) : undefined;
  let attempt: Awaited<ReturnType<typeof invokeConnector>>;
  try {
    attempt = await invokeConnector(
      k,
      subject,
      hosted,
      {
        ...(txn !== undefined ? { transaction_checkpoints: checkpoints } : {}),
        ...(stream_sink !== undefined ? { stream_sink } : {}),
      },
      watch?.signal,
    );
  } finally {
    watch?.stop();
  }
  await Promise.all([...writing]);
  if (crashed !== undefined) throw crashed;
  // A remote host's signed capacity refusal: the connector was not called, so the attempt gives its lease back and
  // the message comes back later, within the deferral bound; past it, the refusal settles as any failure below.
  if (deferrable(attempt, mode) && held === txn) {
    const deferred = await deferForCapacity(k, message, leased, attempt_id, attempt.capacity_refusal.retry_after_ms);
    if (deferred !== undefined) return deferred;
  }
  k.crash('after_response_before_settlement');

  const classified = classify(k, mode, attempt, connectorReg, action.action_id);
  const reconciliation = attempt.reconciliation !== undefined ? ({ ...attempt.reconciliation } as JsonObject) : undefined;
  return settleAttempt(k, {
    action: leased,
    fence,
    mode,
    ...(held !== undefined ? { txn: held } : {}),
    classified,
    // A reconciliation that found the operation by the idempotency key reports it: it becomes the record's reference.
    ...(attempt.provider_operation !== undefined
      ? { provider_operation: attempt.provider_operation }
      : attempt.reconciliation?.provider_operation !== undefined
        ? { provider_operation: attempt.reconciliation.provider_operation }
        : {}),
    ...(attempt.reconciliation?.cursor !== undefined ? { cursor: attempt.reconciliation.cursor } : {}),
    ...(reconciliation !== undefined ? { reconciliation } : {}),
    reg: connectorReg,
    attempt_id,
    ...(mode === 'reconcile' && known?.original !== undefined ? { original: known.original } : {}),
  });
}

/** The record of a terminal action that settled first, finished from it (settlement.ts `settledRecord`). */
async function finishSettledRecord(
  k: Kernel,
  action: ActionHead,
  txId: string,
  loaded: { transaction_id: string; record: TransactionRecord | undefined } | undefined,
): Promise<TransactionRecord | undefined> {
  const txn = loaded?.transaction_id === txId ? loaded.record : await k.deps.transactions.get({ tenant_id: action.tenant_id, transaction_id: txId });
  return settledRecord(k, txn, action);
}

/**
 * Step 1: the action, and the transaction the message names, in one
 * strongly consistent read (AttemptReads; a message that names no transaction
 * reads the action alone, and its transaction is read once the action names
 * it). The transaction read here is used only when the action is bound to that
 * very ID.
 */
async function loadAttempt(
  k: Kernel,
  message: InvokeMessage,
): Promise<{ action: ActionRecord | undefined; transaction?: { transaction_id: string; record: TransactionRecord | undefined } }> {
  const ref = { tenant_id: message.tenant_id, action_id: message.action_id };
  if (message.transaction_id === undefined) return { action: await k.deps.actions.get(ref) };
  return k.deps.attempts.loadAttempt({ ...ref, transaction_id: message.transaction_id });
}

/**
 * Steps 3-5. The attempt's start is ONE conditional write of ONE item: the
 * action lease (fence + 1), with `route` when the action held none (pinned by
 * the same write: the revision condition makes it put-if-absent, so a
 * concurrent pin refuses this lease). The transaction record is not written: every
 * later transaction write of this attempt carries the fence (the settlement
 * settles the fenced action in the same atomic write; a checkpoint checks the
 * fence in its own), so once this lease lands no earlier attempt of the action
 * can write the record again (docs/table-design.md, "The attempt start").
 *
 * Recovery: an earlier attempt leased the action (the fence was above 0) and
 * may have reached the provider. Until this lease landed, that attempt could
 * still write the transaction record, so the record is read again after it
 * (one consistent read, on this rare path only). The attempt re-invokes only
 * with the same action and idempotency identity and only when the capability
 * declares retry with downstream idempotency; otherwise it settles
 * `outcome_unknown`. A `reconciling` record is re-driven (it only reads).
 *
 * The idempotency reservation is not adopted here: its settlement is written
 * in one commit with the fenced action settlement, which already refuses a
 * zombie, and accepts any fence of the owning action at or above the one
 * stored (docs/runtime-stores.md).
 */
async function startAttempt(
  k: Kernel,
  message: InvokeMessage,
  action: ActionHead,
  heldTxn: TransactionRecord | undefined,
  mode: TransactionMode | undefined,
  connectorReg: RegisteredCapability,
  attempt_id: string,
  lease_ms: number,
  retrySafe: boolean,
  route: RouteAssignment | undefined,
): Promise<AttemptOutcome | { action: ActionRecord; transaction?: TransactionRecord }> {
  const ref = { tenant_id: message.tenant_id, action_id: message.action_id };
  const out = await k.commit([
    {
      kind: 'action.lease',
      input: {
        ...ref,
        owner: attempt_id,
        ttl_ms: lease_ms,
        expected_revision: action.revision,
        ...(route !== undefined ? { route, action_capability_id: action.capability_id } : {}),
      },
      // A record read (or held by the reconcile consumer) computes the leased record without a read back; an admitted
      // image has no input, so the lease's own write answers the whole item (ALL_NEW, no extra request).
      ...(isRecord(action) ? { held: action } : {}),
    },
  ] as const);
  if (!out.committed) {
    const refused = out.refused[0]?.error ?? new AipError('internal.unexpected', 'attempt start refused without a reason');
    if (refused.code === 'action.lease_held') return attemptOutcome(message, 'deferred', { reason: refused.code, retry_after_ms: retryAfter(k, refused) });
    if (refused.code === 'action.state_conflict') return attemptOutcome(message, 'deferred', { reason: refused.code, retry_after_ms: 1_000 });
    throw refused;
  }
  const leased = out.written[0] ?? (await k.deps.actions.get(ref));
  if (leased === undefined) throw new AipError('internal.unexpected', 'the leased action could not be read back');
  return afterLease(k, message, leased, attemptStarted(action), heldTxn, mode, connectorReg, attempt_id, retrySafe);
}

/**
 * What follows the lease, whether the attempt's own write granted it (startAttempt) or the action's creation did
 * (`creationLease`: a first attempt, never a recovery): the recovery read and decisions, a requested cancellation.
 */
async function afterLease(
  k: Kernel,
  message: InvokeMessage,
  leased: ActionRecord,
  recovering: boolean,
  heldTxn: TransactionRecord | undefined,
  mode: TransactionMode | undefined,
  connectorReg: RegisteredCapability,
  attempt_id: string,
  retrySafe: boolean,
): Promise<AttemptOutcome | { action: ActionRecord; transaction?: TransactionRecord }> {
  const fence = leased.fence;
  if (heldTxn !== undefined) {
    const txn = recovering ? await k.deps.transactions.get({ tenant_id: heldTxn.tenant_id, transaction_id: heldTxn.transaction_id }) : heldTxn;
    if (txn === undefined) return attemptOutcome(message, 'dropped', { reason: 'transaction_not_found' });
    if (!isAttemptStatus(txn.status)) {
      // Settled by an earlier attempt that stopped before finishing the action: finish it.
      const result = finishingResult(leased, await withStoredResult(k, txn, leased));
      return finishSideRecords(k, { action: leased, fence, mode, txn, result, reg: connectorReg, attempt_id });
    }
    if (recovering && txn.status !== 'reconciling' && !retrySafe) return settleAbandoned(k, leased, fence, txn, mode, connectorReg, attempt_id);
    // A cancellation requested before this (first) attempt reached the provider: end without a call.
    if (leased.cancel_requested_at !== undefined && !recovering) return settleCancelled(k, leased, fence, txn, attempt_id);
    return { action: leased, transaction: txn };
  }
  if (recovering && !retrySafe) {
    // A plain invocation whose earlier attempt may have reached the provider.
    return settleAbandoned(k, leased, fence, undefined, mode, connectorReg, attempt_id);
  }
  if (leased.cancel_requested_at !== undefined && !recovering) return settleCancelled(k, leased, fence, undefined, attempt_id);
  return { action: leased };
}

/** A route that cannot be used before any provider call: another replica defers; a mismatch (or a missing connector) fails the attempt without a call. */
function routeFailure(
  k: Kernel,
  message: InvokeMessage,
  action: ActionHead,
  txn: TransactionRecord | undefined,
  mode: TransactionMode | undefined,
  err: unknown,
  attempt_id: string,
): Promise<AttemptOutcome> {
  // A reconciliation only reads: rather than wait for a connector that may never come back (a redelivery loop), it
  // ends this attempt (back to outcome_unknown, counted by its begin) and the bound decides.
  if (isAipError(err, 'runtime.connector_unavailable') && mode !== 'reconcile')
    return Promise.resolve(attemptOutcome(message, 'deferred', { reason: err.code, retry_after_ms: err.retryAfterMs ?? 1_000 }));
  if (isAipError(err, 'runtime.connector_unavailable')) return failBeforeInvocation(k, message, action, txn, mode, err, attempt_id);
  if (isPreInvocationError(err) || isAipError(err, 'capability.not_found')) return failBeforeInvocation(k, message, action, txn, mode, err, attempt_id);
  return Promise.reject(err);
}

function routeSubject(action: ActionHead, reg: RegisteredCapability, attempt_id: string): Parameters<typeof routeAssignment>[1] {
  return { tenant_id: action.tenant_id, action: action.action, reg, attempt_id, fence: action.fence + 1, route_action_id: action.action_id };
}

/** A stored action record, not an admitted image (which never carries the input). */
function isRecord(action: ActionHead): action is ActionRecord {
  return 'input' in action.action;
}

/**
 * A refusal the attempt may defer instead of settling: the remote proxy
 * certified it (the one request of the attempt, answered `refused`, signed by
 * the pinned host, bound to the request, for capacity: ./placement.ts), the
 * attempt failed with exactly that certain code, and no client cancellation
 * came in. A reconcile attempt is not deferred: it only reads, and its own
 * backoff (back to `outcome_unknown`) already redrives it.
 */
function deferrable(
  attempt: InvocationOutcome,
  mode: TransactionMode | undefined,
): attempt is InvocationOutcome & { readonly capacity_refusal: { readonly retry_after_ms: number } } {
  return (
    attempt.capacity_refusal !== undefined &&
    !attempt.ok &&
    attempt.error.code === 'connector.remote_capacity_exhausted' &&
    attempt.error.uncertain_outcome !== true &&
    attempt.error.details?.uncertain_outcome !== true &&
    !attempt.provider_effect_committed &&
    attempt.client_cancelled !== true &&
    mode !== 'reconcile'
  );
}

/**
 * Defers an attempt the remote host refused for capacity (certified "not
 * called"): ONE conditional write gives the lease back at this attempt's
 * fence (`action.release_lease`: status `running`, fence and owner; it sets
 * `released_fence`, so the next delivery is a first attempt, not a recovery,
 * and counts the deferral), then the message is redelivered after
 * Retry-After plus a jittered backoff (the consumer's visibility change).
 * The transaction record is untouched (the attempt start does not write it)
 * and the idempotency reservation stays in flight.
 *
 * The bound (config `capacity_deferral`, `mayDeferForCapacity` of
 * ../config.ts): `max_deferrals` per action, capped by the invoke queue's
 * maxReceiveCount − 1, counted on the record, and as many deliveries of the
 * message (its SQS receive count, when the consumer gives it:
 * ../attempt-budget.ts), so that the queue's last delivery settles before its
 * maxReceiveCount moves the message to the DLQ; and no redelivery later than
 * `max_age_ms` after the action's creation. Past it: undefined, and the caller
 * settles the refusal `failed` (retryable), as without deferral. A lost fence:
 * superseded, nothing written.
 */
async function deferForCapacity(
  k: Kernel,
  message: InvokeMessage,
  leased: ActionRecord,
  attempt_id: string,
  retryAfterMs: number,
): Promise<AttemptOutcome | undefined> {
  const deferrals = leased.deferrals ?? 0;
  // The message itself may be closer to the DLQ than the action's count says (earlier crashed or raced deliveries).
  if (!mayDeferForCapacity(k.config, deferrals, deliveryReceiveCount())) return undefined;
  const delay = capacityDeferralDelayMs(k.config, retryAfterMs, deferrals, Math.random());
  if (k.now().getTime() + delay > Date.parse(leased.created_at) + k.config.capacity_deferral.max_age_ms) return undefined;
  const ref = { tenant_id: leased.tenant_id, action_id: leased.action_id };
  const out = await k.commit([{ kind: 'action.release_lease', input: { ...ref, owner: attempt_id, fence: leased.fence } }] as const);
  if (!out.committed) {
    const refused = out.refused[0]?.error ?? new AipError('internal.unexpected', 'lease release refused without a reason');
    if (refused.code === 'action.fence_stale' || refused.code === 'action.state_conflict')
      return attemptOutcome(message, 'superseded', { fence: leased.fence, reason: 'action_fence_moved' });
    throw refused;
  }
  k.log.info('attempt deferred: the remote connector host is at capacity', {
    action_id: leased.action_id,
    fence: leased.fence,
    deferrals: deferrals + 1,
    retry_after_ms: delay,
  });
  return attemptOutcome(message, 'deferred', { reason: 'connector.remote_capacity_exhausted', retry_after_ms: delay, fence: leased.fence });
}

function retryAfter(k: Kernel, err: AipError): number {
  const until = err.details.lease_expires_at;
  if (typeof until === 'string') return Math.max(1, Date.parse(until) - k.now().getTime());
  return err.retryAfterMs ?? 1_000;
}

/**
 * The compensation memory the admission built and sent with its images (it read the target to validate the
 * compensation, and a terminal target is never rewritten), when it is this attempt's: its compensation action, the
 * capability it names and the one the connector-facing action runs. Otherwise undefined, and it is read.
 */
function admittedMemory(admitted: CompensationMemory | undefined, action: ActionHead, connectorCapability: string): CompensationMemory | undefined {
  if (admitted === undefined) return undefined;
  const own =
    admitted.compensation_action_id === action.action_id &&
    admitted.requested_capability_id === action.capability_id &&
    admitted.compensation_capability_id === connectorCapability &&
    admitted.original_action_id === action.action.transaction?.compensation_for;
  return own ? admitted : undefined;
}

async function compensationMemory(k: Kernel, action: ActionHead, txn: TransactionRecord, connectorCapability: string): Promise<CompensationMemory> {
  const data = (txn.data.compensation as JsonObject | undefined) ?? {};
  const target = typeof data.target_action_id === 'string' ? data.target_action_id : (txn.compensation_for as string);
  const targetTxnId = typeof data.target_transaction_id === 'string' ? data.target_transaction_id : undefined;
  // The admission found the original result on the target action (data.compensation.target_result_on_action; the
  // target record is terminal, so that stays true): the action alone is read, not the record as well.
  const onAction = data.target_result_on_action === true;
  const targetTxn =
    targetTxnId !== undefined && !onAction ? await k.deps.transactions.get({ tenant_id: action.tenant_id, transaction_id: targetTxnId }) : undefined;
  const targetAction = targetTxn?.result === undefined ? await k.deps.actions.get({ tenant_id: action.tenant_id, action_id: target }) : undefined;
  const original = (await withStoredResultOf(k, targetTxn, targetAction))?.result ?? targetAction?.result;
  return {
    original_action_id: target,
    ...(targetTxnId !== undefined ? { original_transaction_id: targetTxnId } : {}),
    ...(original !== undefined ? { original_result: original } : {}),
    requested_capability_id: action.capability_id,
    compensation_capability_id: connectorCapability,
    compensation_action_id: action.action_id,
  };
}
