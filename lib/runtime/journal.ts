/**
 * The transaction journal: builds the write intent of every durable
 * transaction change the runtime makes (lib/ports/unit-of-work.ts), each
 * carrying the next receipt of the record's hash chain, so the receipt is
 * written in the same atomic write as the change.
 */
import type { ActionResult, JsonObject, JsonValue, Principal, TransactionStatus } from '../../packages/connector-sdk/src/protocol/index.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import type {
  ClaimDirectCommitInput,
  ClaimPlanInput,
  CreateTransactionInput,
  ItemsRetention,
  RetentionStamp,
  SettleInput,
  TransactionRecord,
  TransitionInput,
} from '../ports/transaction-store.js';
import type { IntentOf } from '../ports/unit-of-work.js';
import type { ProviderOperationRef } from '../../packages/connector-sdk/src/protocol/index.js';
import { isTerminalStatus, type TransactionOperation } from '../transactions/state-machine.js';
import { buildReceipt } from './receipts.js';
import { itemsRetention, itemsTtlAtCreation, recordTtl } from './retention.js';

/** Receipt event names (lower-case dotted), one per kind of durable write. */
export const RECEIPT_EVENTS = {
  dry_run_completed: 'transaction.dry_run_completed',
  planned: 'transaction.planned',
  validation_failed: 'transaction.plan_validation_failed',
  prepared: 'transaction.prepared',
  plan_claimed: 'transaction.plan_claimed',
  direct_commit_claimed: 'transaction.direct_commit_claimed',
  compensating: 'transaction.compensation_started',
  rollback_not_supported: 'transaction.rollback_not_supported',
  /** Written by runtimes before the attempt start became the action lease alone; found in older chains. */
  attempt_started: 'transaction.attempt_started',
  checkpoint: 'transaction.provider_operation_checkpointed',
  settled: 'transaction.settled',
  plan_expired: 'transaction.plan_expired',
  reconcile_started: 'transaction.reconcile_started',
  rescheduled: 'transaction.reconcile_rescheduled',
  escalated: 'transaction.escalated',
  reconcile_refused: 'transaction.reconcile_refused',
  reconcile_requested: 'transaction.reconcile_requested',
  resolved: 'transaction.resolved',
} as const;

type Ref = Pick<TransactionRecord, 'tenant_id' | 'transaction_id' | 'revision' | 'receipt_count' | 'receipt_head' | 'items_ttl' | 'plan_id'>;
/** The record a write is conditioned on: its reference, or the whole record read (then also the write's pre-image). */
type HeldRef = Ref | TransactionRecord;

/** Who acted, and the action result a write records (its digest goes into the receipt). */
export interface ReceiptMeta {
  /** Default: the journal's actor (the runtime's service principal). */
  readonly actor?: Principal;
  readonly result?: ActionResult;
}

export class TransactionJournal {
  /**
   * The intents of the transaction record's writes, each with the next receipt
   * of its hash chain (the store checks that the receipt extends the stored
   * head). A step commits them with the other intents of its transition.
   *
   * `actor`: who acts when a write names nobody else (the runtime's own
   * writes: attempts, settlements, escalations, expiries). `retentionDays`:
   * a capability's transaction retention (./retention.ts `retentionDays`),
   * which gives the items of a record created open their ttl; absent: none.
   */
  constructor(
    private readonly clock: Clock,
    private readonly actor: Principal = { id: 'aip-runtime', kind: 'service' },
    private readonly retentionDays?: (capability_id: string) => number | undefined,
  ) {}

  /** The items' ttl of a record created open under a retention (./retention.ts). */
  private created(status: TransactionStatus, capability_id: string): { items_ttl?: number } {
    const days = isTerminalStatus(status) ? undefined : this.retentionDays?.(capability_id);
    return days === undefined ? {} : { items_ttl: itemsTtlAtCreation(days, this.clock.now()) };
  }

  /**
   * A write's retention, from the record it holds (./retention.ts): the terminal record's ttl computed once here,
   * and what the write does to the record's other items.
   */
  private retained(
    record: HeldRef,
    write: { operation: TransactionOperation; to: TransactionStatus; retention?: RetentionStamp | undefined; due?: string | undefined },
  ): { retention?: RetentionStamp; items?: ItemsRetention } {
    const now = this.clock.now();
    const retention =
      write.retention !== undefined && isTerminalStatus(write.to)
        ? { ...write.retention, ttl: write.retention.ttl ?? recordTtl(write.retention.days, now) }
        : undefined;
    const items = itemsRetention(record, { operation: write.operation, to: write.to, ttl: retention?.ttl, due: write.due }, now);
    return { ...(retention !== undefined ? { retention } : {}), ...(items !== undefined ? { items } : {}) };
  }

  private first(transaction_id: string, status: TransactionStatus, event: string, evidence?: JsonValue, meta: ReceiptMeta = {}) {
    return buildReceipt({
      transaction_id,
      status,
      event,
      at: this.clock.now(),
      actor: meta.actor ?? this.actor,
      ...(evidence !== undefined ? { evidence } : {}),
      ...(meta.result !== undefined ? { result: meta.result } : {}),
    });
  }

  private next(record: Ref, status: TransactionStatus, event: string, evidence?: JsonValue, meta: ReceiptMeta = {}) {
    return buildReceipt({
      record: {
        transaction_id: record.transaction_id,
        receipt_count: record.receipt_count,
        revision: record.revision,
        ...(record.receipt_head !== undefined ? { receipt_head: record.receipt_head } : {}),
      },
      status,
      event,
      at: this.clock.now(),
      actor: meta.actor ?? this.actor,
      ...(evidence !== undefined ? { evidence } : {}),
      ...(meta.result !== undefined ? { result: meta.result } : {}),
    });
  }

  /** Creation in an initial status, with the first receipt (conditional on the transaction not existing). */
  create(input: Omit<CreateTransactionInput, 'receipt'>, event: string, evidence?: JsonValue, meta?: ReceiptMeta): IntentOf<'transaction.create'> {
    return {
      kind: 'transaction.create',
      input: {
        ...input,
        ...this.created(input.status, input.capability_id),
        receipt: this.first(input.transaction_id, input.status, event, evidence, { actor: input.principal, ...meta }),
      },
    };
  }

  /** Creation straight in `committing` (a trusted direct commit). */
  claimDirectCommit(input: Omit<ClaimDirectCommitInput, 'receipt'>, evidence?: JsonValue): IntentOf<'transaction.claim_direct_commit'> {
    return {
      kind: 'transaction.claim_direct_commit',
      input: {
        ...input,
        ...this.created('committing', input.capability_id),
        receipt: this.first(input.transaction_id, 'committing', RECEIPT_EVENTS.direct_commit_claimed, evidence, { actor: input.principal }),
      },
    };
  }

  /** `planned → committing` of `record`, binding the commit action (exactly one claimant wins). */
  claimPlan(
    record: HeldRef,
    input: Omit<ClaimPlanInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>,
    evidence?: JsonValue,
    meta?: ReceiptMeta,
  ): IntentOf<'transaction.claim_plan'> {
    return {
      kind: 'transaction.claim_plan',
      input: {
        ...input,
        ...this.retained(record, { operation: 'claim_plan', to: 'committing' }),
        tenant_id: record.tenant_id,
        transaction_id: record.transaction_id,
        expected_revision: record.revision,
        receipt: this.next(record, 'committing', RECEIPT_EVENTS.plan_claimed, evidence, meta),
      },
      ...held(record),
    };
  }

  /**
   * A transition with its receipt. The receipt records the durable status the
   * write leaves (an escalation stays `outcome_unknown`, with the `escalated`
   * fact in its evidence; `requires_human` is a wire projection only).
   */
  transition(
    record: HeldRef,
    input: Omit<TransitionInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>,
    event: string,
    evidence?: JsonValue,
    meta?: ReceiptMeta,
  ): IntentOf<'transaction.transition'> {
    return {
      kind: 'transaction.transition',
      input: {
        ...input,
        ...this.retained(record, { operation: input.operation, to: input.to, retention: input.retention, due: input.patch?.next_reconcile_at }),
        tenant_id: record.tenant_id,
        transaction_id: record.transaction_id,
        expected_revision: record.revision,
        receipt: this.next(record, input.to, event, evidence, meta),
      },
      ...held(record),
    };
  }

  /** The settlement of `record` with its receipt; the result it records is covered by the receipt's hash (its digest). Releases the lease. */
  settle(
    record: HeldRef,
    input: Omit<SettleInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>,
    evidence?: JsonValue,
    meta?: ReceiptMeta,
  ): IntentOf<'transaction.settle'> {
    return {
      kind: 'transaction.settle',
      input: {
        ...input,
        ...this.retained(record, { operation: 'settle', to: input.to, retention: input.retention, due: input.next_reconcile_at }),
        tenant_id: record.tenant_id,
        transaction_id: record.transaction_id,
        expected_revision: record.revision,
        receipt: this.next(record, input.to, `${RECEIPT_EVENTS.settled}.${input.to}`, evidence, {
          ...(input.result !== undefined ? { result: input.result } : {}),
          ...meta,
        }),
      },
      ...held(record),
    };
  }

  /** Records the provider operation (and optional cursor) while an attempt can be in flight. */
  checkpoint(
    record: HeldRef & Pick<TransactionRecord, 'status'>,
    provider_operation: ProviderOperationRef,
    reconciliation_cursor?: string,
    evidence?: JsonObject,
    meta?: ReceiptMeta,
  ): IntentOf<'transaction.checkpoint'> {
    return {
      kind: 'transaction.checkpoint',
      input: {
        tenant_id: record.tenant_id,
        transaction_id: record.transaction_id,
        expected_revision: record.revision,
        provider_operation,
        ...(reconciliation_cursor !== undefined ? { reconciliation_cursor } : {}),
        ...this.retained(record, { operation: 'checkpoint', to: record.status }),
        receipt: this.next(
          record,
          record.status,
          RECEIPT_EVENTS.checkpoint,
          { provider: provider_operation.provider, operation_id: provider_operation.operation_id, ...(evidence ?? {}) },
          meta,
        ),
      },
      ...held(record),
    };
  }
}

/** A full record the step read names itself as the intent's `held` pre-image (the record after the write is then computed, not read). */
function held(record: HeldRef): { held?: TransactionRecord } {
  return isFullRecord(record) ? { held: record } : {};
}

function isFullRecord(record: HeldRef): record is TransactionRecord {
  return 'status' in record && 'created_at' in record && 'data' in record;
}
