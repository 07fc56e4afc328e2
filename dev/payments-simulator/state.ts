/**
 * The simulated provider's system of record: charges, refunds, operations,
 * idempotency records and the ledger of committed money movements.
 *
 * Every method here is synchronous. The HTTP layer relies on that: it reserves
 * an idempotency key and commits the effect without an `await` in between
 * (unless a `before_commit` latency fault deliberately holds the reservation),
 * so concurrent requests on one process can never both commit.
 */
import { randomBytes } from 'node:crypto';
import type { ChargeView, CreateChargeBody, CreateRefundBody, LedgerEntry, OperationKind, OperationStatus, OperationView, RefundView } from './schemas.js';

/** A typed provider error: HTTP status plus the `error.type` the body carries. */
export interface ProviderError {
  readonly status: number;
  readonly type: string;
  readonly message: string;
  readonly param?: string;
  readonly extra?: Record<string, unknown>;
}

export function providerError(status: number, type: string, message: string, more: { param?: string; extra?: Record<string, unknown> } = {}): ProviderError {
  return { status, type, message, ...more };
}

/** A stored HTTP answer, replayed verbatim for a repeated idempotency key. */
export interface StoredResponse {
  readonly status: number;
  readonly body: unknown;
}

export type IdempotencyRecord =
  | { readonly state: 'in_progress'; readonly endpoint: string; readonly fingerprint: string }
  | {
      readonly state: 'completed';
      readonly endpoint: string;
      readonly fingerprint: string;
      readonly response: StoredResponse;
    };

interface ChargeRecord {
  id: string;
  operation_id: string;
  status: OperationStatus;
  amount: number;
  amount_refunded: number;
  /** Held by pending refunds so concurrent refunds cannot exceed the charge. */
  amount_refund_pending: number;
  currency: string;
  customer: string | null;
  description: string | null;
  metadata: Record<string, string>;
  failure_code: string | null;
  created_at: string;
}

interface RefundRecord {
  id: string;
  operation_id: string;
  charge_id: string;
  status: OperationStatus;
  amount: number;
  currency: string;
  metadata: Record<string, string>;
  failure_code: string | null;
  created_at: string;
}

interface OperationRecord {
  id: string;
  kind: OperationKind;
  resource_id: string;
  idempotency_key: string;
  status: OperationStatus;
  failure_code: string | null;
  created_at: string;
  updated_at: string;
}

/** How a new charge or refund ends up when it is committed. */
export type CommitOutcome = { readonly status: 'succeeded' } | { readonly status: 'pending' } | { readonly status: 'failed'; readonly failure_code: string };

export type Result<T> = { ok: true; value: T } | { ok: false; error: ProviderError };

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

function copy<T>(value: T): T {
  return structuredClone(value);
}

export class ProviderState {
  private readonly charges = new Map<string, ChargeRecord>();
  private readonly refunds = new Map<string, RefundRecord>();
  private readonly operations = new Map<string, OperationRecord>();
  private readonly operationByKey = new Map<string, string>();
  private readonly idempotency = new Map<string, IdempotencyRecord>();
  private readonly entries: LedgerEntry[] = [];

  constructor(
    private readonly now: () => Date,
    private readonly onCommit: (entry: LedgerEntry) => void = () => {},
  ) {}

  // --- idempotency ---------------------------------------------------------------

  idempotencyRecord(key: string): IdempotencyRecord | undefined {
    return this.idempotency.get(key);
  }

  reserve(key: string, endpoint: string, fingerprint: string): void {
    if (this.idempotency.has(key)) throw new Error('idempotency key already reserved');
    this.idempotency.set(key, { state: 'in_progress', endpoint, fingerprint });
  }

  /** Frees a reservation whose request ended before anything was committed. */
  release(key: string): void {
    if (this.idempotency.get(key)?.state === 'in_progress') this.idempotency.delete(key);
  }

  complete(key: string, response: StoredResponse): void {
    const rec = this.idempotency.get(key);
    if (rec?.state !== 'in_progress') throw new Error('no reservation to complete');
    this.idempotency.set(key, { state: 'completed', endpoint: rec.endpoint, fingerprint: rec.fingerprint, response: copy(response) });
  }

  // --- commits ---------------------------------------------------------------------

  commitCharge(key: string, body: CreateChargeBody, outcome: CommitOutcome): ChargeView {
    const at = this.now().toISOString();
    const charge: ChargeRecord = {
      id: newId('ch'),
      operation_id: newId('op'),
      status: outcome.status,
      amount: body.amount,
      amount_refunded: 0,
      amount_refund_pending: 0,
      currency: body.currency,
      customer: body.customer ?? null,
      description: body.description ?? null,
      metadata: { ...(body.metadata ?? {}) },
      failure_code: outcome.status === 'failed' ? outcome.failure_code : null,
      created_at: at,
    };
    this.charges.set(charge.id, charge);
    this.addOperation(charge.operation_id, 'charge', charge.id, key, outcome, at);
    if (outcome.status === 'succeeded') this.appendLedger(charge.operation_id, at);
    return this.chargeView(charge);
  }

  /** Checks the refund against the charge (synchronously) and records it. */
  commitRefund(key: string, body: CreateRefundBody, outcome: CommitOutcome): Result<RefundView> {
    const charge = this.charges.get(body.charge_id);
    if (!charge) {
      return { ok: false, error: providerError(404, 'resource_missing', 'No such charge', { param: 'charge_id' }) };
    }
    if (charge.status !== 'succeeded') {
      return {
        ok: false,
        error: providerError(409, 'charge_not_refundable', `The charge is ${charge.status}; only succeeded charges can be refunded`, {
          param: 'charge_id',
        }),
      };
    }
    const refundable = charge.amount - charge.amount_refunded - charge.amount_refund_pending;
    if (refundable <= 0) {
      const pending = charge.amount_refund_pending > 0;
      return {
        ok: false,
        error: providerError(
          409,
          'charge_already_refunded',
          pending ? 'The rest of the charge is held by a pending refund' : 'The charge has already been fully refunded',
          { param: 'charge_id', extra: { refundable_amount: 0 } },
        ),
      };
    }
    const amount = body.amount ?? refundable;
    if (amount > refundable) {
      return {
        ok: false,
        error: providerError(422, 'refund_exceeds_charge', `The refund exceeds the refundable amount of ${refundable}`, {
          param: 'amount',
          extra: { refundable_amount: refundable },
        }),
      };
    }
    const at = this.now().toISOString();
    const refund: RefundRecord = {
      id: newId('re'),
      operation_id: newId('op'),
      charge_id: charge.id,
      status: outcome.status,
      amount,
      currency: charge.currency,
      metadata: { ...(body.metadata ?? {}) },
      failure_code: outcome.status === 'failed' ? outcome.failure_code : null,
      created_at: at,
    };
    this.refunds.set(refund.id, refund);
    if (outcome.status === 'succeeded') charge.amount_refunded += amount;
    if (outcome.status === 'pending') charge.amount_refund_pending += amount;
    this.addOperation(refund.operation_id, 'refund', refund.id, key, outcome, at);
    if (outcome.status === 'succeeded') this.appendLedger(refund.operation_id, at);
    return { ok: true, value: this.refundView(refund) };
  }

  /**
   * Moves a pending operation to a final status: `succeeded` commits its ledger
   * effect, `failed`/`canceled` release what it held. Final operations → 409.
   */
  finalize(operationId: string, status: 'succeeded' | 'failed' | 'canceled', failureCode?: string): Result<OperationView> {
    const op = this.operations.get(operationId);
    if (!op) return { ok: false, error: providerError(404, 'resource_missing', 'No such operation') };
    if (op.status !== 'pending') {
      return {
        ok: false,
        error: providerError(409, 'operation_not_pending', `The operation is already ${op.status}`, {
          extra: { operation_status: op.status },
        }),
      };
    }
    const at = this.now().toISOString();
    const code = status === 'failed' ? (failureCode ?? 'processing_error') : null;
    op.status = status;
    op.failure_code = code;
    op.updated_at = at;
    if (op.kind === 'charge') {
      const charge = this.mustCharge(op.resource_id);
      charge.status = status;
      charge.failure_code = code;
    } else {
      const refund = this.mustRefund(op.resource_id);
      const charge = this.mustCharge(refund.charge_id);
      refund.status = status;
      refund.failure_code = code;
      charge.amount_refund_pending -= refund.amount;
      if (status === 'succeeded') charge.amount_refunded += refund.amount;
    }
    if (status === 'succeeded') this.appendLedger(op.id, at);
    return { ok: true, value: this.operationView(op) };
  }

  // --- reads -----------------------------------------------------------------------

  operation(operationId: string): OperationView | undefined {
    const op = this.operations.get(operationId);
    return op ? this.operationView(op) : undefined;
  }

  operationForKey(key: string): OperationView | undefined {
    const id = this.operationByKey.get(key);
    return id === undefined ? undefined : this.operation(id);
  }

  charge(id: string): ChargeView | undefined {
    const c = this.charges.get(id);
    return c ? this.chargeView(c) : undefined;
  }

  refund(id: string): RefundView | undefined {
    const r = this.refunds.get(id);
    return r ? this.refundView(r) : undefined;
  }

  ledger(): LedgerEntry[] {
    return this.entries.map(copy);
  }

  effectsFor(key: string): LedgerEntry[] {
    return this.entries.filter((e) => e.idempotency_key === key).map(copy);
  }

  // --- internals ---------------------------------------------------------------------

  private addOperation(id: string, kind: OperationKind, resourceId: string, key: string, outcome: CommitOutcome, at: string): void {
    this.operations.set(id, {
      id,
      kind,
      resource_id: resourceId,
      idempotency_key: key,
      status: outcome.status,
      failure_code: outcome.status === 'failed' ? outcome.failure_code : null,
      created_at: at,
      updated_at: at,
    });
    this.operationByKey.set(key, id);
  }

  private appendLedger(operationId: string, at: string): void {
    const op = this.operations.get(operationId);
    if (!op) throw new Error('ledger entry for an unknown operation');
    const view = this.operationView(op);
    const entry: LedgerEntry = {
      seq: this.entries.length + 1,
      kind: op.kind,
      operation_id: op.id,
      resource_id: op.resource_id,
      charge_id: view.charge_id ?? op.resource_id,
      idempotency_key: op.idempotency_key,
      amount: view.amount,
      currency: view.currency,
      committed_at: at,
    };
    this.entries.push(entry);
    this.onCommit(copy(entry));
  }

  private mustCharge(id: string): ChargeRecord {
    const c = this.charges.get(id);
    if (!c) throw new Error(`charge ${id} missing`);
    return c;
  }

  private mustRefund(id: string): RefundRecord {
    const r = this.refunds.get(id);
    if (!r) throw new Error(`refund ${id} missing`);
    return r;
  }

  private chargeView(c: ChargeRecord): ChargeView {
    return {
      id: c.id,
      object: 'charge',
      operation_id: c.operation_id,
      status: c.status,
      amount: c.amount,
      amount_refunded: c.amount_refunded,
      currency: c.currency,
      customer: c.customer,
      description: c.description,
      metadata: { ...c.metadata },
      failure_code: c.failure_code,
      created_at: c.created_at,
    };
  }

  private refundView(r: RefundRecord): RefundView {
    return {
      id: r.id,
      object: 'refund',
      operation_id: r.operation_id,
      charge_id: r.charge_id,
      status: r.status,
      amount: r.amount,
      currency: r.currency,
      metadata: { ...r.metadata },
      failure_code: r.failure_code,
      created_at: r.created_at,
    };
  }

  private operationView(op: OperationRecord): OperationView {
    const resource = op.kind === 'charge' ? this.mustCharge(op.resource_id) : this.mustRefund(op.resource_id);
    return {
      object: 'operation',
      operation_id: op.id,
      kind: op.kind,
      status: op.status,
      resource_id: op.resource_id,
      charge_id: op.kind === 'refund' ? (resource as RefundRecord).charge_id : null,
      amount: resource.amount,
      currency: resource.currency,
      idempotency_key: op.idempotency_key,
      failure_code: op.failure_code,
      created_at: op.created_at,
      updated_at: op.updated_at,
    };
  }
}
