/**
 * Input checks of the DynamoDB transaction store (lib/aws/dynamo/transaction-store.ts).
 *
 * The port's callers are trusted code, but a record is evidence: nothing is
 * written that the protocol schemas, the state machine (lib/transactions) or
 * DynamoDB's item limits would refuse. A refused input is
 * `transaction.invalid_record` (or the more precise code named below), with
 * details.field naming the offending field; nothing is sent to the table.
 */
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ErrorCode } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import {
  GENESIS_RECEIPT_HASH,
  ID_MAX_LENGTH,
  ID_PATTERN,
  IdentityContextSchema,
  PrincipalSchema,
  ProviderOperationRefSchema,
  ReceiptSchema,
  ReconciliationCursorSchema,
  inspectJson,
  receiptHash,
  type ProviderOperationRef,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import type {
  CreateTransactionInput,
  GenericTransitionOperation,
  ItemsRetention,
  LeaseRequest,
  ListByStatusQuery,
  ListReceiptsQuery,
  TransactionSelector,
  TransitionInput,
  TransitionPatch,
} from '../../ports/transaction-store.js';
import type { ReceiptAppend } from '../../transactions/record.js';
import {
  ATTEMPT_STATUSES,
  assertTransitionAllowed,
  isAttemptStatus,
  isTerminalStatus,
  isTransactionStatus,
  type TransactionOperation,
} from '../../transactions/state-machine.js';
import { TRANSACTION_MODES, type TransactionStatus } from '../../transactions/status.js';
import { MAX_LEASE_MS, checkLimit, checkRevision, checkTime, invalid, checkId as checkIdWith } from './store-support.js';

export { invalid } from './store-support.js';

const DEFAULT_LIST_LIMIT = 25;
const MAX_LIST_LIMIT = 100;
/** Tenants a listing may be scoped to (a caller's token names at most 256: lib/auth/identity.ts). */
const MAX_LIST_TENANTS = 256;
/** Upper bound of any JSON payload kept on the record (DynamoDB items are at most 400 KB). */
const JSON_LIMITS = { maxDepth: 64, maxNodes: 50_000, maxSize: 400 * 1024, maxStringLength: 400 * 1024 } as const;

/** The operations `transition` performs; the others have their own store operation. */
const GENERIC_OPERATIONS: ReadonlySet<string> = new Set<GenericTransitionOperation>([
  'expire_plan',
  'begin_reconcile',
  'settle',
  'reschedule_reconcile',
  'escalate',
  'refuse_reconcile',
  'request_reconcile',
  'resolve',
]);

export function checkId(field: string, value: unknown): string {
  return checkIdWith('transaction.invalid_record', field, value);
}

export function checkJson(field: string, value: unknown, object: boolean): void {
  if (value === undefined) return;
  if (object && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    throw invalid('transaction.invalid_record', `${field} must be a JSON object`, { field });
  }
  const problem = inspectJson(value, JSON_LIMITS);
  if (problem !== undefined) {
    const code: ErrorCode = problem.kind === 'too_large' ? 'transaction.record_too_large' : 'transaction.invalid_record';
    throw invalid(code, `${field} is not storable JSON (${problem.kind})`, { field, problem: problem.kind });
  }
}

/** A lease request; with `status`, also that a lease can be held there. */
export function checkLease(lease: LeaseRequest | undefined, status: TransactionStatus | undefined): void {
  if (lease === undefined) return;
  if (typeof lease.owner !== 'string' || lease.owner.length === 0 || lease.owner.length > 256 || /[\x00-\x1f\x7f]/.test(lease.owner)) {
    throw invalid('transaction.invalid_record', 'lease owner must be a non-empty printable string of at most 256 characters', { field: 'lease.owner' });
  }
  if (!Number.isSafeInteger(lease.ttl_ms) || lease.ttl_ms < 1 || lease.ttl_ms > MAX_LEASE_MS) {
    throw invalid('transaction.invalid_record', `lease ttl_ms must be an integer from 1 to ${MAX_LEASE_MS}`, { field: 'lease.ttl_ms' });
  }
  if (status !== undefined && !isAttemptStatus(status)) {
    throw invalid('transaction.invalid_record', `a lease can only be held in ${ATTEMPT_STATUSES.join(', ')}`, { field: 'lease', status });
  }
}

export function checkProviderOperation(ref: unknown): ProviderOperationRef {
  const parsed = ProviderOperationRefSchema.safeParse(ref);
  if (!parsed.success) {
    throw invalid('transaction.invalid_provider_operation', 'Provider and operation ID must be non-empty (and printable)', {
      issues: parsed.error.issues.map((i) => i.path.join('.') || '(root)'),
    });
  }
  return parsed.data;
}

export function checkCursor(cursor: unknown): string | undefined {
  if (cursor === undefined) return undefined;
  if (!ReconciliationCursorSchema.safeParse(cursor).success) {
    throw invalid('transaction.invalid_record', 'reconciliation_cursor must be a string of 1 to 4096 characters', { field: 'reconciliation_cursor' });
  }
  return cursor as string;
}

/** A receipt that extends the chain at `revision` (`first`: the genesis receipt), and storable evidence. */
export function checkReceipt(append: ReceiptAppend | undefined, transactionId: string, revision: number, first: boolean): void {
  if (append === undefined) return;
  const parsed = ReceiptSchema.safeParse(append.receipt);
  if (!parsed.success) {
    throw invalid('transaction.invalid_receipt', 'The receipt does not match the receipt schema', {
      issues: parsed.error.issues.map((i) => i.path.join('.') || '(root)'),
    });
  }
  const r = parsed.data;
  const problems: string[] = [];
  if (r.transaction_id !== transactionId) problems.push('transaction_id');
  if (r.revision !== revision) problems.push('revision');
  if (first && (r.seq !== 0 || r.prev_hash !== GENESIS_RECEIPT_HASH)) problems.push('seq/prev_hash of the first receipt');
  const { hash, ...rest } = r;
  if (receiptHash(rest) !== hash) problems.push('hash');
  if (problems.length > 0) {
    throw invalid('transaction.invalid_receipt', `The receipt does not extend this chain: ${problems.join(', ')}`, {
      fields: problems,
      expected_revision: revision,
    });
  }
  checkJson('receipt.evidence', append.evidence, false);
}

/** A ttl (epoch seconds): a positive integer. */
function checkEpochSeconds(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw invalid('transaction.invalid_record', `${field} must be epoch seconds`, { field });
  return value;
}

/**
 * The ttl a terminal write of a retained record carries (epoch seconds): the one the journal computed, else now +
 * days; undefined without a retention.
 */
export function retentionOf(retention: { days: number; plan_id?: string; ttl?: number } | undefined, now: Date): { ttl: number; plan_id?: string } | undefined {
  if (retention === undefined) return undefined;
  if (!Number.isInteger(retention.days) || retention.days < 1 || retention.days > 36_500)
    throw invalid('transaction.invalid_record', 'retention.days must be 1 .. 36500', { field: 'retention.days' });
  if (retention.plan_id !== undefined) checkId('retention.plan_id', retention.plan_id);
  const ttl = retention.ttl !== undefined ? checkEpochSeconds('retention.ttl', retention.ttl) : Math.floor(now.getTime() / 1000) + retention.days * 86_400;
  return { ttl, ...(retention.plan_id !== undefined ? { plan_id: retention.plan_id } : {}) };
}

/** What a write does to the record's other items' ttl (lib/ports/transaction-store.ts ItemsRetention). */
export function checkItemsRetention(items: ItemsRetention | undefined): ItemsRetention | undefined {
  if (items === undefined) return undefined;
  if (items === null || typeof items !== 'object' || !['keep', 'stamp', 'remove'].includes(items.kind))
    throw invalid('transaction.invalid_record', 'items must be keep, stamp or remove', { field: 'items' });
  if (items.kind !== 'keep' && items.plan_id !== undefined) checkId('items.plan_id', items.plan_id);
  if (items.kind !== 'remove') checkEpochSeconds('items.ttl', items.ttl);
  return items;
}

/** The ttl a record created open gives its other items. */
export function checkItemsTtl(value: number | undefined): number | undefined {
  return value === undefined ? undefined : checkEpochSeconds('items_ttl', value);
}

/** The record a compare-and-set write names, and its expected revision. */
export function checkRef(input: { tenant_id: string; transaction_id: string; expected_revision: number }): void {
  if (input === null || typeof input !== 'object') throw invalid('transaction.invalid_record', 'input must be an object');
  checkId('tenant_id', input.tenant_id);
  checkId('transaction_id', input.transaction_id);
  checkRevision('transaction.invalid_record', input.expected_revision);
}

/** Every allowed current status is a status from which the state machine allows `operation` (to `to`, or to itself). */
export function checkFrom(operation: TransactionOperation, from: readonly TransactionStatus[], to: TransactionStatus | 'self'): void {
  if (!Array.isArray(from) || from.length === 0) {
    throw new AipError('transaction.invalid_transition', `${operation}: name at least one allowed current status`, { details: { operation } });
  }
  for (const f of from) {
    if (!isTransactionStatus(f)) throw invalid('transaction.invalid_record', 'unknown status in from', { field: 'from' });
    assertTransitionAllowed(operation, [f], to === 'self' ? f : to);
  }
}

/** A new record (create, claim_direct_commit). */
export function checkCreate(operation: 'create' | 'claim_direct_commit', input: CreateTransactionInput): void {
  if (input === null || typeof input !== 'object') throw invalid('transaction.invalid_record', 'input must be an object');
  checkId('tenant_id', input.tenant_id);
  checkId('transaction_id', input.transaction_id);
  checkId('capability_id', input.capability_id);
  checkId('action_id', input.action_id);
  if (!isTransactionStatus(input.status)) throw invalid('transaction.invalid_record', 'unknown status', { field: 'status' });
  assertTransitionAllowed(operation, [null], input.status);
  if (!(TRANSACTION_MODES as readonly string[]).includes(input.mode)) throw invalid('transaction.invalid_record', 'unknown mode', { field: 'mode' });
  if (!PrincipalSchema.safeParse(input.principal).success) throw invalid('transaction.invalid_record', 'principal must be {id, kind}', { field: 'principal' });
  if (input.identity !== undefined && !IdentityContextSchema.safeParse(input.identity).success) {
    throw invalid('transaction.invalid_record', 'identity is not a valid identity context', { field: 'identity' });
  }
  if (input.compensation_for !== undefined) checkId('compensation_for', input.compensation_for);
  if (input.plan_id !== undefined) checkId('plan_id', input.plan_id);
  if (input.plan !== undefined) {
    checkJson('plan', input.plan, true);
    const p = input.plan as unknown as Record<string, unknown>;
    if (input.plan_id === undefined || p.plan_id !== input.plan_id || p.transaction_id !== input.transaction_id || p.capability_id !== input.capability_id) {
      throw invalid('transaction.invalid_record', 'plan must carry the record plan_id, transaction_id and capability_id', { field: 'plan' });
    }
  }
  if (input.status === 'planned' && input.plan === undefined) {
    throw invalid('transaction.invalid_record', 'a planned record needs its plan', { field: 'plan' });
  }
  checkJson('error', input.error, true);
  checkJson('result', input.result, true);
  checkJson('data', input.data, true);
  checkLease(input.lease, input.status);
  checkReceipt(input.receipt, input.transaction_id, 1, true);
}

/** What a checked generic transition carries besides its status change. */
export interface CheckedTransition {
  readonly patch: TransitionPatch;
  readonly cursor: string | undefined;
  /** The patch's next_reconcile_at, normalised (undefined when not given). */
  readonly nextReconcileAt: string | undefined;
  readonly ref: ProviderOperationRef | undefined;
}

/** A generic transition (`transition`, `settle`): the operation, its statuses, its patch, lease and receipt. */
export function checkTransition(input: TransitionInput): CheckedTransition {
  checkRef(input);
  if (!GENERIC_OPERATIONS.has(input.operation)) {
    throw new AipError('transaction.invalid_transition', `${String(input.operation)} has its own store operation`, { details: { operation: input.operation } });
  }
  if (!isTransactionStatus(input.to)) throw invalid('transaction.invalid_record', 'unknown target status', { field: 'to' });
  checkFrom(input.operation, input.from, input.to);
  const patch: TransitionPatch = input.patch ?? {};
  checkJson('patch.error', patch.error, true);
  checkJson('patch.result', patch.result, true);
  if (patch.result_ref !== undefined) {
    checkId('patch.result_ref', patch.result_ref);
    if (input.operation !== 'settle' || patch.result !== undefined) {
      throw invalid('transaction.invalid_record', 'a result reference is written by settle only, instead of the result', { field: 'patch.result_ref' });
    }
  }
  checkJson('data', input.data, true);
  const cursor = checkCursor(patch.reconciliation_cursor);
  const nextReconcileAt =
    patch.next_reconcile_at === undefined ? undefined : checkTime('transaction.invalid_record', 'next_reconcile_at', patch.next_reconcile_at);
  const ref = patch.provider_operation === undefined ? undefined : checkProviderOperation(patch.provider_operation);
  if (ref !== undefined && input.operation !== 'settle' && input.operation !== 'resolve') {
    throw invalid('transaction.invalid_record', 'a provider operation is recorded by checkpoint, settle or resolve only', {
      field: 'patch.provider_operation',
    });
  }
  if ((input.operation === 'reschedule_reconcile' || input.operation === 'refuse_reconcile') && nextReconcileAt === undefined) {
    throw invalid('transaction.invalid_record', `${input.operation} needs next_reconcile_at`, { field: 'patch.next_reconcile_at' });
  }
  if (nextReconcileAt !== undefined && (input.to !== 'outcome_unknown' || input.operation === 'escalate')) {
    throw invalid('transaction.invalid_record', 'next_reconcile_at belongs to outcome_unknown', { field: 'patch.next_reconcile_at' });
  }
  checkLease(input.lease, input.lease === undefined ? undefined : input.to);
  checkReceipt(input.receipt, input.transaction_id, input.expected_revision + 1, false);
  return { patch, cursor, nextReconcileAt, ref };
}

/** Exactly one of transaction_id, plan_id or action_id, within a tenant. */
export function checkSelector(selector: TransactionSelector): {
  readonly tenant: string;
  readonly field: 'transaction_id' | 'plan_id' | 'action_id';
  readonly value: string;
} {
  const bad = () => invalid('transaction.invalid_selector', 'Select by exactly one of transaction_id, plan_id or action_id, within a tenant');
  if (selector === null || typeof selector !== 'object') throw bad();
  const tenantOk = typeof selector.tenant_id === 'string' && ID_PATTERN.test(selector.tenant_id) && selector.tenant_id.length <= ID_MAX_LENGTH;
  const given = (['transaction_id', 'plan_id', 'action_id'] as const).filter((k) => selector[k] !== undefined);
  const field = given[0];
  if (!tenantOk || given.length !== 1 || field === undefined) throw bad();
  const value = selector[field];
  if (typeof value !== 'string' || value.length === 0 || value.length > ID_MAX_LENGTH || !ID_PATTERN.test(value)) throw bad();
  return { tenant: selector.tenant_id, field, value };
}

/** A listing by status: a non-terminal status, escalated only for outcome_unknown. */
export function checkStatusListing(query: ListByStatusQuery): { readonly escalated: boolean; readonly until: string | undefined; readonly limit: number } {
  if (query === null || typeof query !== 'object' || !isTransactionStatus(query.status) || isTerminalStatus(query.status)) {
    throw invalid('transaction.invalid_listing', 'List by a non-terminal status (terminal records are not indexed)', { field: 'status' });
  }
  const escalated = query.escalated === true;
  if (escalated && query.status !== 'outcome_unknown') {
    throw invalid('transaction.invalid_listing', 'Only outcome_unknown records are escalated', { field: 'escalated' });
  }
  if (
    query.tenants !== undefined &&
    (!Array.isArray(query.tenants) ||
      query.tenants.length > MAX_LIST_TENANTS ||
      query.tenants.some((t) => typeof t !== 'string' || t.length > ID_MAX_LENGTH || !ID_PATTERN.test(t)))
  ) {
    throw invalid('transaction.invalid_listing', `tenants must be at most ${MAX_LIST_TENANTS} protocol IDs`, { field: 'tenants' });
  }
  const until = query.until === undefined ? undefined : checkTime('transaction.invalid_listing', 'until', query.until);
  return { escalated, until, limit: checkLimit('transaction.invalid_listing', query.limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT) };
}

/** A listing of one transaction's receipts; returns the page size. */
export function checkReceiptListing(query: ListReceiptsQuery): number {
  if (query === null || typeof query !== 'object') throw invalid('transaction.invalid_listing', 'query must be an object');
  checkId('tenant_id', query.tenant_id);
  checkId('transaction_id', query.transaction_id);
  return checkLimit('transaction.invalid_listing', query.limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
}
