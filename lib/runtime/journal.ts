/**
 * The transaction journal: every durable transaction write the runtime makes
 * goes through here, and every one of them appends the next receipt of the
 * record's hash chain in the same atomic write (the store checks that the
 * receipt extends the stored head).
 */
import type { ActionResult, JsonObject, JsonValue, Principal, TransactionStatus } from '../../packages/connector-sdk/src/protocol/index.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import type {
  AcquireLeaseInput,
  ClaimDirectCommitInput,
  ClaimPlanInput,
  CreateTransactionInput,
  SettleInput,
  TransactionRecord,
  TransactionStore,
  TransitionInput,
} from '../ports/transaction-store.js';
import type { ProviderOperationRef } from '../../packages/connector-sdk/src/protocol/index.js';
import { buildReceipt } from './receipts.js';

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

type Ref = Pick<TransactionRecord, 'tenant_id' | 'transaction_id' | 'revision' | 'receipt_count' | 'receipt_head'>;

/** Who acted, and the action result a write records (its digest goes into the receipt). */
export interface ReceiptMeta {
  /** Default: the journal's actor (the runtime's service principal). */
  readonly actor?: Principal;
  readonly result?: ActionResult;
}

export class TransactionJournal {
  /**
   * `actor`: who acts when a write names nobody else (the runtime's own
   * writes: attempts, settlements, escalations, expiries).
   */
  constructor(
    private readonly store: TransactionStore,
    private readonly clock: Clock,
    private readonly actor: Principal = { id: 'aip-runtime', kind: 'service' },
  ) {}

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

  create(input: Omit<CreateTransactionInput, 'receipt'>, event: string, evidence?: JsonValue, meta?: ReceiptMeta): Promise<TransactionRecord> {
    return this.store.create(this.createInput(input, event, evidence, meta));
  }

  /** The creation with its first receipt (for a composite admission write). */
  createInput(input: Omit<CreateTransactionInput, 'receipt'>, event: string, evidence?: JsonValue, meta?: ReceiptMeta): CreateTransactionInput {
    return { ...input, receipt: this.first(input.transaction_id, input.status, event, evidence, { actor: input.principal, ...meta }) };
  }

  claimDirectCommit(input: Omit<ClaimDirectCommitInput, 'receipt'>, evidence?: JsonValue): Promise<TransactionRecord> {
    return this.store.claimDirectCommit({
      ...input,
      receipt: this.first(input.transaction_id, 'committing', RECEIPT_EVENTS.direct_commit_claimed, evidence, { actor: input.principal }),
    });
  }

  claimPlan(
    record: Ref,
    input: Omit<ClaimPlanInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>,
    evidence?: JsonValue,
    meta?: ReceiptMeta,
  ): Promise<TransactionRecord> {
    return this.store.claimPlan(this.claimPlanInput(record, input, evidence, meta));
  }

  /** The plan claim of `record` with its receipt (for a composite admission write). */
  claimPlanInput(
    record: Ref,
    input: Omit<ClaimPlanInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>,
    evidence?: JsonValue,
    meta?: ReceiptMeta,
  ): ClaimPlanInput {
    return {
      ...input,
      tenant_id: record.tenant_id,
      transaction_id: record.transaction_id,
      expected_revision: record.revision,
      receipt: this.next(record, 'committing', RECEIPT_EVENTS.plan_claimed, evidence, meta),
    };
  }

  /**
   * A transition with its receipt. The receipt records the durable status the
   * write leaves (an escalation stays `outcome_unknown`, with the `escalated`
   * fact in its evidence; `requires_human` is a wire projection only).
   */
  transition(
    record: Ref,
    input: Omit<TransitionInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>,
    event: string,
    evidence?: JsonValue,
    meta?: ReceiptMeta,
  ): Promise<TransactionRecord> {
    return this.store.transition({
      ...input,
      tenant_id: record.tenant_id,
      transaction_id: record.transaction_id,
      expected_revision: record.revision,
      receipt: this.next(record, input.to, event, evidence, meta),
    });
  }

  settle(
    record: Ref,
    input: Omit<SettleInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>,
    evidence?: JsonValue,
    meta?: ReceiptMeta,
  ): Promise<TransactionRecord> {
    return this.store.settle(this.settleInput(record, input, evidence, meta));
  }

  /** The settlement of `record` with its receipt (for a composite settlement write). */
  settleInput(
    record: Ref,
    input: Omit<SettleInput, 'receipt' | 'expected_revision' | 'tenant_id' | 'transaction_id'>,
    evidence?: JsonValue,
    meta?: ReceiptMeta,
  ): SettleInput {
    return {
      ...input,
      tenant_id: record.tenant_id,
      transaction_id: record.transaction_id,
      expected_revision: record.revision,
      // The result the settlement records is covered by the receipt's hash (its digest).
      receipt: this.next(record, input.to, `${RECEIPT_EVENTS.settled}.${input.to}`, evidence, {
        ...(input.result !== undefined ? { result: input.result } : {}),
        ...meta,
      }),
    };
  }

  lease(record: Ref & Pick<TransactionRecord, 'status'>, owner: string, ttl_ms: number, data: JsonObject, evidence?: JsonValue): Promise<TransactionRecord> {
    return this.store.acquireLease(this.leaseInput(record, owner, ttl_ms, data, evidence));
  }

  /** The attempt lease of `record` with its `attempt_started` receipt (for a composite attempt-start write). */
  leaseInput(record: Ref & Pick<TransactionRecord, 'status'>, owner: string, ttl_ms: number, data: JsonObject, evidence?: JsonValue): AcquireLeaseInput {
    return {
      tenant_id: record.tenant_id,
      transaction_id: record.transaction_id,
      expected_revision: record.revision,
      owner,
      ttl_ms,
      data,
      receipt: this.next(record, record.status, RECEIPT_EVENTS.attempt_started, evidence),
    };
  }

  checkpoint(
    record: Ref & Pick<TransactionRecord, 'status'>,
    provider_operation: ProviderOperationRef,
    reconciliation_cursor?: string,
    evidence?: JsonObject,
    meta?: ReceiptMeta,
  ): Promise<TransactionRecord> {
    return this.store.checkpointProviderOperation({
      tenant_id: record.tenant_id,
      transaction_id: record.transaction_id,
      expected_revision: record.revision,
      provider_operation,
      ...(reconciliation_cursor !== undefined ? { reconciliation_cursor } : {}),
      receipt: this.next(
        record,
        record.status,
        RECEIPT_EVENTS.checkpoint,
        { provider: provider_operation.provider, operation_id: provider_operation.operation_id, ...(evidence ?? {}) },
        meta,
      ),
    });
  }
}
