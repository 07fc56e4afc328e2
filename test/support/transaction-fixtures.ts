/** Builders for transaction store tests: records, plans and hash-chained receipts. */
import { randomUUID } from 'node:crypto';
import {
  GENESIS_RECEIPT_HASH,
  receiptHash,
  sha256Hex,
  type Receipt,
  type TransactionPlan,
  type TransactionProtocolStatus,
} from '../../packages/connector-sdk/src/protocol/index.js';
import type { CreateTransactionInput, ReceiptAppend } from '../../lib/ports/transaction-store.js';
import type { TransactionRecord } from '../../lib/transactions/record.js';

export const TENANT = 'tenant-a';

export function uid(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

/** A settable clock for the store. */
export function manualClock(startIso = '2030-01-01T00:00:00.000Z') {
  let ms = Date.parse(startIso);
  return {
    now: () => new Date(ms),
    advance: (deltaMs: number) => {
      ms += deltaMs;
    },
    /** Moves forward to `at` (epoch ms; no-op when the clock is already later). */
    advanceTo: (at: number) => {
      if (at > ms) ms = at;
    },
    iso: () => new Date(ms).toISOString(),
  };
}

export function planFor(transactionId: string, planId: string, createdAt = '2030-01-01T00:00:00.000Z'): TransactionPlan {
  const hash = sha256Hex(`input:${transactionId}`);
  return {
    plan_id: planId,
    transaction_id: transactionId,
    capability_id: 'payments.transfer',
    planned_by: { id: 'agent-1', kind: 'agent' },
    planning_action_id: `plan-action-${transactionId}`,
    input_hash: hash,
    input_snapshot: { redacted: true, hash },
    identity_snapshot: { tenant_id: TENANT, external_account_id: 'acct-1' },
    approval_required: false,
    created_at: createdAt,
    expires_at: new Date(Date.parse(createdAt) + 15 * 60_000).toISOString(),
  };
}

/** A planned record's create input (plan ID `plan:<txn>`). */
export function plannedInput(transactionId = uid('txn'), overrides: Partial<CreateTransactionInput> = {}): CreateTransactionInput {
  const planId = `plan:${transactionId}`;
  return {
    tenant_id: TENANT,
    transaction_id: transactionId,
    status: 'planned',
    mode: 'plan',
    capability_id: 'payments.transfer',
    action_id: `plan-action-${transactionId}`,
    principal: { id: 'agent-1', kind: 'agent' },
    identity: { tenant_id: TENANT, external_account_id: 'acct-1' },
    plan_id: planId,
    plan: planFor(transactionId, planId),
    ...overrides,
  };
}

/** A prepared (execute) record's create input. */
export function preparedInput(transactionId = uid('txn'), overrides: Partial<CreateTransactionInput> = {}): CreateTransactionInput {
  return {
    tenant_id: TENANT,
    transaction_id: transactionId,
    status: 'prepared',
    mode: 'execute',
    capability_id: 'payments.transfer',
    action_id: `exec-action-${transactionId}`,
    principal: { id: 'agent-1', kind: 'agent' },
    identity: { tenant_id: TENANT },
    ...overrides,
  };
}

/**
 * The next link of the record's receipt chain, for the write that produces
 * `revision` in `status`. For a new record pass `undefined`.
 */
export function nextReceipt(
  record:
    | Pick<TransactionRecord, 'transaction_id' | 'receipt_count' | 'receipt_head'>
    | { transaction_id: string; receipt_count?: undefined; receipt_head?: undefined },
  revision: number,
  status: TransactionProtocolStatus,
  event: string,
  at = '2030-01-01T00:00:00.000Z',
): ReceiptAppend {
  const base: Omit<Receipt, 'hash'> = {
    seq: record.receipt_count ?? 0,
    transaction_id: record.transaction_id,
    status,
    revision,
    at,
    prev_hash: record.receipt_head ?? GENESIS_RECEIPT_HASH,
    event,
  };
  return { receipt: { ...base, hash: receiptHash(base) } };
}
