/**
 * The DynamoDB adapter of the TransactionStore port (lib/ports/transaction-store.ts).
 *
 * - Every state change is ONE conditional write: an UpdateItem/PutItem, or a
 *   TransactWriteItems when a receipt (or the plan-ID uniqueness item) is
 *   written with it. The condition names the allowed current statuses and the
 *   expected revision; the write sets revision = expected + 1.
 * - A failed condition is classified from the item DynamoDB returns with the
 *   failure (ReturnValuesOnConditionCheckFailure: ALL_OLD; for
 *   TransactWriteItems, CancellationReasons[i].Item): never a second read.
 * - A `TransactionConflict` (a concurrent transaction on the same item) is a
 *   lost race too: `transaction.state_conflict` with details.reason
 *   `transaction_conflict` (the current item is not available then).
 *
 * Key design: lib/aws/dynamo/table-design.ts, docs/table-design.md.
 */
import { setTimeout as delay } from 'node:timers/promises';
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../errors/aip-error.js';
import type { ErrorCode } from '../../errors/catalogue.js';
import {
  GENESIS_RECEIPT_HASH,
  ID_PATTERN,
  ID_MAX_LENGTH,
  IdentityContextSchema,
  PrincipalSchema,
  ProviderOperationRefSchema,
  ReceiptSchema,
  ReconciliationCursorSchema,
  canonicalJson,
  inspectJson,
  receiptHash,
  type JsonObject,
  type ProviderOperationRef,
} from '../../protocol/index.js';
import type {
  AcquireLeaseInput,
  CheckpointProviderOperationInput,
  ClaimDirectCommitInput,
  ClaimPlanInput,
  CreateTransactionInput,
  GenericTransitionOperation,
  LeaseRequest,
  ListByStatusQuery,
  ListReceiptsQuery,
  Page,
  SettleInput,
  TransactionSelector,
  TransactionStore,
  TransitionInput,
  TransitionPatch,
} from '../../ports/transaction-store.js';
import type { ReceiptAppend, StoredReceipt, TransactionRecord } from '../../transactions/record.js';
import {
  ATTEMPT_STATUSES,
  DEFAULT_RECONCILE_DELAY_MS,
  allowedFrom,
  assertTransitionAllowed,
  isAttemptStatus,
  isTerminalStatus,
  isTransactionStatus,
  type TransactionOperation,
} from '../../transactions/state-machine.js';
import { TRANSACTION_MODES, type TransactionStatus } from '../../transactions/status.js';
import { fromAttributeMap } from './attribute-values.js';
import { decodeCursor, encodeCursor, queryStatusIndex, rejectedStartKey } from './pagination.js';
import { GSIS, ITEM_TYPES, TTL_ATTRIBUTE, keys } from './table-design.js';

export interface DynamoTransactionStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  /** Clock (tests pin it). Default: system time. */
  readonly now?: () => Date;
  /**
   * TTL for `dry_run_completed` records and their receipts (previews carry no
   * side effect). Default 7 days; 0 keeps them. Other records are evidence and
   * never expire.
   */
  readonly dryRunRetentionSeconds?: number;
  /**
   * Transaction items whose current image the adapter keeps after reading or
   * writing them, so that a write carrying a receipt (a TransactWriteItems,
   * which returns no item image) need not read the record back. 0 turns it
   * off. Default 256. See docs/bench/analysis.md (4.1).
   */
  readonly knownImages?: number;
  /**
   * Read the record back anyway and fail (`internal.unexpected`) if it differs
   * from the image computed locally. For tests; default: the environment
   * variable AIP_DYNAMO_VERIFY_IMAGES=1.
   */
  readonly verifyKnownImages?: boolean;
}

type Item = Record<string, unknown>;

/** One item of a TransactWriteItems request (document client shape). */
export type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** A creation built but not sent: its items, a classifier per item index, and what it produces. */
export interface PreparedCreate {
  readonly record: TransactionRecord;
  readonly transactItems: TransactItem[];
  /** Classifies the ALL_OLD image of a failed item, by its index in transactItems. */
  readonly handlers: Record<number, (old: Item | undefined) => AipError>;
  /** The error for a TransactionConflict (a concurrent transaction on the same item). */
  readonly onRace: () => AipError;
  /** Call once the items were written. */
  readonly committed: () => void;
  /** The existing record named by the ALL_OLD image of the transaction item. */
  readonly existing: (old: Item | undefined) => TransactionRecord | undefined;
}

/** A compare-and-set write carrying a receipt, built but not sent (see prepareSettle). */
export interface PreparedCas {
  /** [Update transaction, Put receipt, retention stamps of a terminal write of a retained record]. */
  readonly transactItems: TransactItem[];
  /** Classifiers of those two items (indexes 0 and 1). */
  readonly handlers: Record<number, (old: Item | undefined) => AipError>;
  readonly onRace: () => AipError;
  /** The record after the write (computed from the held image); undefined when it cannot be computed. */
  readonly after: () => TransactionRecord | undefined;
  /** After a successful write: retention stamps a very long chain's atomic write could not hold. */
  readonly afterStamps: () => Promise<void>;
}

/** How long a known image may be used (the same container usually writes within milliseconds of its read). */
const KNOWN_IMAGE_TTL_MS = 60_000;
const DEFAULT_KNOWN_IMAGES = 256;

const DEFAULT_DRY_RUN_RETENTION_S = 7 * 24 * 3600;
const MAX_LEASE_MS = 86_400_000;
const DEFAULT_LIST_LIMIT = 25;
const MAX_LIST_LIMIT = 100;
/** Upper bound of any JSON payload kept on the record (DynamoDB items are at most 400 KB). */
const JSON_LIMITS = { maxDepth: 64, maxNodes: 50_000, maxSize: 400 * 1024, maxStringLength: 400 * 1024 } as const;

/** The record fields, as stored on the transaction item. */
const RECORD_FIELDS = [
  'tenant_id',
  'transaction_id',
  'status',
  'revision',
  'mode',
  'capability_id',
  'action_id',
  'plan_id',
  'plan',
  'principal',
  'identity',
  'compensation_for',
  'provider_operation',
  'reconciliation_cursor',
  'error',
  'result',
  'next_reconcile_at',
  'reconcile_attempts',
  'escalated_at',
  'lease_owner',
  'lease_expires_at',
  'fence',
  'receipt_count',
  'receipt_head',
  'created_at',
  'updated_at',
  'data',
] as const satisfies readonly (keyof TransactionRecord)[];

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

const UNAVAILABLE_ERRORS: ReadonlySet<string> = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'LimitExceededException',
  'TimeoutError',
]);
const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);

// --- small helpers -------------------------------------------------------------

function invalid(code: ErrorCode, message: string, details: Record<string, unknown> = {}): AipError {
  return new AipError(code, message, { details });
}

function checkId(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > ID_MAX_LENGTH || !ID_PATTERN.test(value)) {
    throw invalid('transaction.invalid_record', `${field} must be a protocol ID`, { field });
  }
  return value;
}

function checkRevision(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalid('transaction.invalid_record', 'expected_revision must be a positive integer', { field: 'expected_revision' });
  }
  return value;
}

function checkJson(field: string, value: unknown, object: boolean): void {
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

function checkTime(field: string, value: unknown): string {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalid('transaction.invalid_record', `${field} must be an RFC 3339 time`, { field });
  return new Date(ms).toISOString();
}

function checkLease(lease: LeaseRequest | undefined, status: TransactionStatus | undefined): void {
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

function checkProviderOperation(ref: unknown): ProviderOperationRef {
  const parsed = ProviderOperationRefSchema.safeParse(ref);
  if (!parsed.success) {
    throw invalid('transaction.invalid_provider_operation', 'Provider and operation ID must be non-empty (and printable)', {
      issues: parsed.error.issues.map((i) => i.path.join('.') || '(root)'),
    });
  }
  return parsed.data;
}

function checkCursor(cursor: unknown): string | undefined {
  if (cursor === undefined) return undefined;
  if (!ReconciliationCursorSchema.safeParse(cursor).success) {
    throw invalid('transaction.invalid_record', 'reconciliation_cursor must be a string of 1 to 4096 characters', { field: 'reconciliation_cursor' });
  }
  return cursor as string;
}

function checkReceipt(append: ReceiptAppend | undefined, transactionId: string, revision: number, first: boolean): void {
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

function sameRef(a: unknown, b: ProviderOperationRef): boolean {
  if (a === null || typeof a !== 'object') return false;
  const x = a as Record<string, unknown>;
  return x.provider === b.provider && x.operation_id === b.operation_id && (x.request_id ?? undefined) === (b.request_id ?? undefined);
}

/** Drops `undefined` properties recursively (DynamoDB cannot store them). */
export function compact<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => compact(v)) as T;
  if (value !== null && typeof value === 'object' && !(value instanceof Uint8Array)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (v !== undefined) Object.defineProperty(out, k, { value: compact(v), enumerable: true, writable: true, configurable: true });
    }
    return out as T;
  }
  return value;
}

function toRecord(item: Item): TransactionRecord {
  const out: Record<string, unknown> = {};
  for (const f of RECORD_FIELDS) if (item[f] !== undefined) out[f] = item[f];
  out.data ??= {};
  out.reconcile_attempts ??= 0;
  out.fence ??= 0;
  out.receipt_count ??= 0;
  return out as unknown as TransactionRecord;
}

export { encodeCursor } from './pagination.js';

function checkLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_LIST_LIMIT;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw invalid('transaction.invalid_listing', `limit must be an integer from 1 to ${MAX_LIST_LIMIT}`, { field: 'limit' });
  }
  return limit;
}

/** Sort time of the status index: the reconciliation time for outcome_unknown, else the entry time. */
function statusIndex(status: TransactionStatus, tenant: string, transactionId: string, time: string, escalated: boolean) {
  return { GSI3PK: keys.statusIndex(status, escalated), GSI3SK: keys.statusIndexSort(time, tenant, transactionId) };
}

// --- expression builder --------------------------------------------------------------------

type UpdateEffect =
  | { readonly kind: 'set'; readonly attr: string; readonly value: unknown }
  | { readonly kind: 'remove'; readonly attr: string }
  | { readonly kind: 'increment'; readonly attr: string; readonly by: number }
  | { readonly kind: 'set_data'; readonly key: string; readonly value: unknown }
  | { readonly kind: 'opaque' };

/** Exported for the runtime stores (lib/aws/dynamo/store-support.ts). */
export class UpdateBuilder {
  private readonly names = new Map<string, string>();
  private readonly values: Record<string, unknown> = {};
  private valueCount = 0;
  /** Keyed by attribute path: the last action on a path wins, so SET and REMOVE never collide. */
  private readonly actions = new Map<string, { kind: 'set'; expr: string } | { kind: 'remove'; expr: string }>();
  /** What each action does to the item, keyed like `actions`, so that {@link applyTo} can replay the update locally. */
  private readonly effects = new Map<string, UpdateEffect>();
  private readonly conditions: string[] = [];

  n(attr: string): string {
    let p = this.names.get(attr);
    if (p === undefined) {
      p = `#n${this.names.size}`;
      this.names.set(attr, p);
    }
    return p;
  }

  v(value: unknown): string {
    const p = `:v${this.valueCount++}`;
    this.values[p] = compact(value);
    return p;
  }

  set(attr: string, value: unknown): this {
    if (value === undefined) return this;
    this.actions.set(attr, { kind: 'set', expr: `${this.n(attr)} = ${this.v(value)}` });
    this.effects.set(attr, { kind: 'set', attr, value: compact(value) });
    return this;
  }

  /** A SET with a free-form expression: {@link applyTo} cannot replay it. Prefer {@link increment}. */
  setExpr(attr: string, expr: string): this {
    this.actions.set(attr, { kind: 'set', expr: `${this.n(attr)} = ${expr}` });
    this.effects.set(attr, { kind: 'opaque' });
    return this;
  }

  /** attr = attr + by (the attribute must exist and be a number, as DynamoDB requires). */
  increment(attr: string, by = 1): this {
    this.actions.set(attr, { kind: 'set', expr: `${this.n(attr)} = ${this.n(attr)} + ${this.v(by)}` });
    this.effects.set(attr, { kind: 'increment', attr, by });
    return this;
  }

  /** data.<key> = value, for every key of `data`. */
  mergeData(data: JsonObject | undefined): this {
    if (data === undefined) return this;
    for (const [k, v] of Object.entries(data)) {
      if (v === undefined) continue;
      this.actions.set(`data.${k}`, { kind: 'set', expr: `${this.n('data')}.${this.n(k)} = ${this.v(v)}` });
      this.effects.set(`data.${k}`, { kind: 'set_data', key: k, value: compact(v) });
    }
    return this;
  }

  remove(...attrs: string[]): this {
    for (const attr of attrs) {
      this.actions.set(attr, { kind: 'remove', expr: this.n(attr) });
      this.effects.set(attr, { kind: 'remove', attr });
    }
    return this;
  }

  /**
   * The item as this update leaves it, computed from the exact item it was
   * applied to (`before`), or undefined when the update cannot be replayed
   * locally (a free-form SET, or an item shape DynamoDB itself would have
   * rejected). Used to avoid reading an item back after a TransactWriteItems.
   */
  applyTo(before: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
    const after: Record<string, unknown> = structuredClone(before) as Record<string, unknown>;
    for (const e of this.effects.values()) {
      switch (e.kind) {
        case 'opaque':
          return undefined;
        case 'set':
          after[e.attr] = structuredClone(e.value);
          break;
        case 'remove':
          delete after[e.attr];
          break;
        case 'increment': {
          const current = after[e.attr];
          if (typeof current !== 'number') return undefined;
          after[e.attr] = current + e.by;
          break;
        }
        case 'set_data': {
          const data = after.data;
          if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined;
          (data as Record<string, unknown>)[e.key] = structuredClone(e.value);
          break;
        }
      }
    }
    return after;
  }

  condition(expr: string): this {
    this.conditions.push(expr);
    return this;
  }

  render() {
    const sets = [...this.actions.values()].filter((a) => a.kind === 'set').map((a) => a.expr);
    const removes = [...this.actions.values()].filter((a) => a.kind === 'remove').map((a) => a.expr);
    const parts: string[] = [];
    if (sets.length > 0) parts.push(`SET ${sets.join(', ')}`);
    if (removes.length > 0) parts.push(`REMOVE ${removes.join(', ')}`);
    return {
      UpdateExpression: parts.join(' '),
      ConditionExpression: this.conditions.map((c) => `(${c})`).join(' AND '),
      ExpressionAttributeNames: Object.fromEntries([...this.names].map(([attr, p]) => [p, attr])),
      ExpressionAttributeValues: this.values,
    };
  }
}

// --- failure classification -----------------------------------------------------------------

interface CasSpec {
  readonly operation: TransactionOperation;
  readonly tenant_id: string;
  readonly transaction_id: string;
  readonly from: readonly TransactionStatus[];
  readonly expected_revision: number;
  readonly receipt?: ReceiptAppend;
  /** Checked before the status/revision check (e.g. a different provider operation). */
  readonly classifyFirst?: (old: Item) => AipError | undefined;
  /** Checked when status and revision matched (e.g. live lease, plan mismatch). */
  readonly classifyAfter?: (old: Item) => AipError | undefined;
  /** A terminal write of a capability with a retention: the ttl and the items it stamps besides the record. */
  readonly retention?: { readonly ttl: number; readonly plan_id?: string };
}

/** Items a plain terminal write stamps besides the record and its new receipt (TransactWriteItems holds 100). */
const STAMP_LIMIT = 96;
/** In the composite settlement, which also writes the action and the reservation. */
const COMPOSITE_STAMP_LIMIT = 94;

/** The ttl a terminal write of a retained record carries (epoch seconds), or undefined. */
function retentionOf(retention: { days: number; plan_id?: string } | undefined, now: Date): { ttl: number; plan_id?: string } | undefined {
  if (retention === undefined) return undefined;
  if (!Number.isInteger(retention.days) || retention.days < 1 || retention.days > 36_500) throw invalid('transaction.invalid_record', 'retention.days must be 1 .. 36500', { field: 'retention.days' });
  if (retention.plan_id !== undefined) checkId('retention.plan_id', retention.plan_id);
  return { ttl: Math.floor(now.getTime() / 1000) + retention.days * 86_400, ...(retention.plan_id !== undefined ? { plan_id: retention.plan_id } : {}) };
}

function currentOf(old: Item) {
  return { current_status: old.status, current_revision: old.revision };
}

function stateConflict(spec: CasSpec, old: Item | undefined, reason?: string): AipError {
  const current = old ? currentOf(old) : {};
  const message = old
    ? `${spec.operation}: transaction is ${String(old.status)} at revision ${String(old.revision)}; expected ${spec.from.join('|')} at revision ${spec.expected_revision}`
    : `${spec.operation}: a concurrent write to the transaction won the race`;
  return new AipError('transaction.state_conflict', message, {
    details: {
      transaction_id: spec.transaction_id,
      operation: spec.operation,
      ...current,
      expected_revision: spec.expected_revision,
      allowed_statuses: [...spec.from],
      ...(reason ? { reason } : {}),
    },
  });
}

function classifyCasFailure(spec: CasSpec, old: Item | undefined): AipError {
  if (old === undefined) {
    return new AipError('transaction.not_found', `No transaction ${spec.transaction_id}`, {
      details: { transaction_id: spec.transaction_id, operation: spec.operation },
    });
  }
  const first = spec.classifyFirst?.(old);
  if (first) return first;
  if (!spec.from.includes(old.status as TransactionStatus) || old.revision !== spec.expected_revision) return stateConflict(spec, old);
  const after = spec.classifyAfter?.(old);
  if (after) return after;
  if (spec.receipt) {
    const r = spec.receipt.receipt;
    const head = (old.receipt_head as string | undefined) ?? GENESIS_RECEIPT_HASH;
    if ((old.receipt_count ?? 0) !== r.seq || head !== r.prev_hash) {
      return new AipError('transaction.invalid_receipt', 'The receipt does not extend the stored chain (seq or prev_hash)', {
        details: { transaction_id: spec.transaction_id, ...currentOf(old), receipt_count: old.receipt_count ?? 0, seq: r.seq },
      });
    }
  }
  return stateConflict(spec, old, 'condition_failed');
}

interface CancellationReason {
  Code?: string;
  Item?: unknown;
}

export function errorName(err: unknown): string {
  return err !== null && typeof err === 'object' && 'name' in err ? String((err as { name: unknown }).name) : '';
}

function cancellationReasons(err: unknown): CancellationReason[] {
  const reasons = (err as { CancellationReasons?: unknown }).CancellationReasons;
  return Array.isArray(reasons) ? (reasons as CancellationReason[]) : [];
}

/**
 * Maps an SDK error that is not a condition failure. Exported for tests.
 */
export function mapStoreError(err: unknown): AipError {
  if (err instanceof AipError) return err;
  const name = errorName(err);
  const code = (err as { code?: unknown } | null)?.code;
  const message = String((err as { message?: unknown } | null)?.message ?? '');
  if (name === 'ValidationException' && /size/i.test(message)) {
    return new AipError('transaction.record_too_large', undefined, { details: { reason: name } });
  }
  if (name === 'TransactionCanceledException' && cancellationReasons(err).some((r) => r.Code === 'ValidationError')) {
    return new AipError('transaction.record_too_large', undefined, { details: { reason: 'ValidationError' } });
  }
  if (UNAVAILABLE_ERRORS.has(name) || (typeof code === 'string' && NETWORK_ERROR_CODES.has(code))) {
    return new AipError('transaction.store_unavailable', undefined, { details: { reason: name || String(code) }, cause: err });
  }
  return new AipError('internal.unexpected', 'The transaction store failed unexpectedly', { details: { reason: name || 'unknown' }, cause: err });
}

/**
 * Classifies a failed TransactWriteItems. `index` is the position of the item
 * whose condition matters; `onItem` classifies its ALL_OLD image. Exported so
 * the TransactionConflict mapping can be tested deterministically.
 */
export function classifyTransactFailure(
  err: unknown,
  handlers: { readonly [index: number]: (old: Item | undefined) => AipError },
  onRace: () => AipError,
): AipError {
  const name = errorName(err);
  if (name === 'TransactionConflictException') return onRace();
  if (name !== 'TransactionCanceledException') return mapStoreError(err);
  const reasons = cancellationReasons(err);
  for (let i = 0; i < reasons.length; i++) {
    const reason = reasons[i];
    if (reason?.Code === 'ConditionalCheckFailed') {
      const handler = handlers[i];
      const old = fromAttributeMap(reason.Item);
      return handler ? handler(old) : onRace();
    }
  }
  if (reasons.some((r) => r.Code === 'TransactionConflict')) return onRace();
  return mapStoreError(err);
}

function raceConflictFor(spec: CasSpec): () => AipError {
  return () => stateConflict(spec, undefined, 'transaction_conflict');
}

// --- the adapter ---------------------------------------------------------------------------

export class DynamoTransactionStore implements TransactionStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly clock: () => Date;
  private readonly dryRunRetentionSeconds: number;
  /**
   * Known images: transaction items as this adapter last read or wrote them,
   * keyed by PK, with the (process) time they were learned. An image is only
   * ever used as the pre-image of a write conditioned on its revision and
   * created_at; every write raises the revision, so one (created_at, revision)
   * pair is one item state.
   */
  private readonly images = new Map<string, { readonly item: Item; readonly learned: number }>();
  private readonly imageLimit: number;
  private readonly verifyImages: boolean;

  constructor(options: DynamoTransactionStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.clock = options.now ?? (() => new Date());
    this.dryRunRetentionSeconds = options.dryRunRetentionSeconds ?? DEFAULT_DRY_RUN_RETENTION_S;
    this.imageLimit = Math.max(0, Math.floor(options.knownImages ?? DEFAULT_KNOWN_IMAGES));
    this.verifyImages = options.verifyKnownImages ?? process.env.AIP_DYNAMO_VERIFY_IMAGES === '1';
  }

  // --- known images ----------------------------------------------------------------------

  private remember(item: Item | undefined): void {
    if (this.imageLimit === 0 || item === undefined || typeof item.PK !== 'string') return;
    this.images.delete(item.PK);
    this.images.set(item.PK, { item: structuredClone(item), learned: performance.now() });
    if (this.images.size > this.imageLimit) {
      const oldest = this.images.keys().next().value;
      if (oldest !== undefined) this.images.delete(oldest);
    }
  }

  private forget(tenant: string, txn: string): void {
    this.images.delete(keys.transaction(tenant, txn).PK);
  }

  /** The known image of the item at `revision`, if any (and still fresh). */
  private recall(tenant: string, txn: string, revision: number): Item | undefined {
    const pk = keys.transaction(tenant, txn).PK;
    const known = this.images.get(pk);
    if (known === undefined) return undefined;
    if (performance.now() - known.learned > KNOWN_IMAGE_TTL_MS) {
      this.images.delete(pk);
      return undefined;
    }
    return known.item.revision === revision && typeof known.item.created_at === 'string' ? known.item : undefined;
  }

  // --- creation ------------------------------------------------------------------------

  async create(input: CreateTransactionInput): Promise<TransactionRecord> {
    return this.createRecord('create', input);
  }

  async claimDirectCommit(input: ClaimDirectCommitInput): Promise<TransactionRecord> {
    return this.createRecord('claim_direct_commit', { ...input, status: 'committing' } as unknown as CreateTransactionInput);
  }

  private validateCreate(operation: 'create' | 'claim_direct_commit', input: CreateTransactionInput): void {
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

  /**
   * Validates a creation and builds its items (the transaction item, the plan-ID
   * guard, the first receipt) with a failure classifier per item. Used by
   * create/claimDirectCommit and by the composite writes
   * (lib/aws/dynamo/atomic-writes.ts), which add items of other stores.
   */
  prepareCreate(operation: 'create' | 'claim_direct_commit', input: CreateTransactionInput): PreparedCreate {
    this.validateCreate(operation, input);
    const now = this.clock();
    const iso = now.toISOString();
    const tenant = input.tenant_id;
    const txn = input.transaction_id;
    const lease = input.lease
      ? { lease_owner: input.lease.owner, lease_expires_at: new Date(now.getTime() + input.lease.ttl_ms).toISOString(), fence: 1 }
      : { fence: 0 };
    const record: TransactionRecord = compact({
      tenant_id: tenant,
      transaction_id: txn,
      status: input.status,
      revision: 1,
      mode: input.mode,
      capability_id: input.capability_id,
      action_id: input.action_id,
      plan_id: input.plan_id,
      plan: input.plan,
      principal: input.principal,
      identity: input.identity,
      compensation_for: input.compensation_for,
      error: input.error,
      result: input.result,
      reconcile_attempts: 0,
      ...lease,
      receipt_count: input.receipt ? 1 : 0,
      receipt_head: input.receipt?.receipt.hash,
      created_at: iso,
      updated_at: iso,
      data: input.data ?? {},
    });
    const retained = isTerminalStatus(input.status) ? retentionOf(input.retention, now) : undefined;
    const ttl =
      retained !== undefined
        ? { [TTL_ATTRIBUTE]: retained.ttl }
        : input.status === 'dry_run_completed' && this.dryRunRetentionSeconds > 0
          ? { [TTL_ATTRIBUTE]: Math.floor(now.getTime() / 1000) + this.dryRunRetentionSeconds }
          : {};
    const item: Item = {
      ...keys.transaction(tenant, txn),
      item_type: ITEM_TYPES.transaction,
      ...record,
      GSI2PK: keys.actionIndex(tenant, input.action_id),
      GSI2SK: keys.actionIndexSort(iso, txn),
      ...(isTerminalStatus(input.status) ? {} : statusIndex(input.status, tenant, txn, iso, false)),
      ...ttl,
    };
    const existsError = (old: Item | undefined): AipError =>
      new AipError('transaction.already_exists', `Transaction ${txn} already exists`, {
        details: { transaction_id: txn, operation, ...(old ? currentOf(old) : {}) },
      });

    const transactItems: TransactItem[] = [
      {
        Put: {
          TableName: this.table,
          Item: item,
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': 'PK' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ];
    const handlers: Record<number, (old: Item | undefined) => AipError> = { 0: existsError };
    if (input.plan_id !== undefined) {
      const planId = input.plan_id;
      handlers[transactItems.length] = (old) =>
        new AipError('transaction.already_exists', `Plan ${planId} is already used by another transaction`, {
          details: { transaction_id: txn, plan_id: planId, reason: 'plan_id_in_use', ...(old?.transaction_id ? { existing_transaction_id: old.transaction_id } : {}) },
        });
      transactItems.push({
        Put: {
          TableName: this.table,
          Item: { ...keys.planRef(tenant, planId), item_type: ITEM_TYPES.planRef, tenant_id: tenant, plan_id: planId, transaction_id: txn, created_at: iso, ...ttl },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': 'PK' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      });
    }
    if (input.receipt !== undefined) {
      transactItems.push({ Put: this.receiptPut(tenant, txn, input.receipt, iso, ttl) });
    }
    return {
      record,
      transactItems,
      handlers,
      onRace: () => stateConflict({ operation, tenant_id: tenant, transaction_id: txn, from: [], expected_revision: 0 }, undefined, 'transaction_conflict'),
      committed: () => this.remember(compact(item)),
      existing: (old) => (old === undefined ? undefined : toRecord(old)),
    };
  }

  private async createRecord(operation: 'create' | 'claim_direct_commit', input: CreateTransactionInput): Promise<TransactionRecord> {
    const prepared = this.prepareCreate(operation, input);
    const { record, transactItems, handlers } = prepared;
    const first = transactItems[0]?.Put;
    if (first === undefined) throw new AipError('internal.unexpected', 'no transaction item');
    if (input.receipt === undefined && input.plan_id === undefined) {
      try {
        await this.client.send(new PutCommand(first as ConstructorParameters<typeof PutCommand>[0]));
      } catch (err) {
        if (errorName(err) === 'ConditionalCheckFailedException') throw (handlers[0] as (old: Item | undefined) => AipError)(fromAttributeMap((err as { Item?: unknown }).Item));
        throw mapStoreError(err);
      }
      prepared.committed();
      return record;
    }

    try {
      await this.client.send(new TransactWriteCommand({ TransactItems: transactItems }));
    } catch (err) {
      throw classifyTransactFailure(err, handlers, prepared.onRace);
    }
    prepared.committed();
    return record;
  }

  /**
   * The other items a terminal write of a retained record stamps with its
   * ttl, in the same TransactWriteItems: the receipts written before this one
   * (the most recent `limit`; older ones, on very long chains, right after)
   * and the plan-ID item.
   */
  private retentionStamps(spec: CasSpec, limit = STAMP_LIMIT): TransactItem[] {
    const r = spec.retention;
    if (r === undefined || spec.receipt === undefined) return [];
    const seq = spec.receipt.receipt.seq;
    const stamp = (Key: Item): TransactItem => ({
      Update: { TableName: this.table, Key, UpdateExpression: 'SET #ttl = :ttl', ConditionExpression: 'attribute_exists(#pk)', ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE, '#pk': 'PK' }, ExpressionAttributeValues: { ':ttl': r.ttl } },
    });
    const items: TransactItem[] = [];
    if (r.plan_id !== undefined) items.push(stamp(keys.planRef(spec.tenant_id, r.plan_id)));
    for (let i = seq - 1; i >= 0 && items.length < limit; i--) items.push(stamp(keys.receipt(spec.tenant_id, spec.transaction_id, i)));
    return items;
  }

  /** Receipts of a very long chain the atomic write could not hold: stamped right after it (idempotent). */
  private async stampOverflow(spec: CasSpec, limit = STAMP_LIMIT): Promise<void> {
    const r = spec.retention;
    if (r === undefined || spec.receipt === undefined) return;
    const inTransaction = limit - (r.plan_id !== undefined ? 1 : 0);
    for (let i = spec.receipt.receipt.seq - 1 - inTransaction; i >= 0; i--) {
      try {
        await this.client.send(
          new UpdateCommand({ TableName: this.table, Key: keys.receipt(spec.tenant_id, spec.transaction_id, i), UpdateExpression: 'SET #ttl = :ttl', ConditionExpression: 'attribute_exists(#pk)', ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE, '#pk': 'PK' }, ExpressionAttributeValues: { ':ttl': r.ttl } }),
        );
      } catch (err) {
        if (errorName(err) !== 'ConditionalCheckFailedException') throw mapStoreError(err);
      }
    }
  }

  private receiptPut(tenant: string, txn: string, append: ReceiptAppend, iso: string, ttl: Item = {}) {
    const r = append.receipt;
    return {
      TableName: this.table,
      Item: compact({
        ...keys.receipt(tenant, txn, r.seq),
        item_type: ITEM_TYPES.receipt,
        tenant_id: tenant,
        transaction_id: txn,
        seq: r.seq,
        receipt: r,
        evidence: append.evidence,
        created_at: iso,
        ...ttl,
      }),
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': 'PK' },
    };
  }

  // --- compare-and-set writes ---------------------------------------------------------------

  /**
   * Issues one conditional write: status IN from AND revision = expected
   * (+ the builder's own conditions, + the receipt chain condition).
   */
  /** The conditions and sets every compare-and-set write carries (status, revision, and the receipt chain). */
  private casConditions(spec: CasSpec, b: UpdateBuilder, now: Date): void {
    const statusValues = spec.from.map((s) => b.v(s));
    b.condition(`${b.n('status')} IN (${statusValues.join(', ')})`);
    b.condition(`${b.n('revision')} = ${b.v(spec.expected_revision)}`);
    b.set('revision', spec.expected_revision + 1);
    b.set('updated_at', now.toISOString());
    if (spec.receipt !== undefined) {
      const r = spec.receipt.receipt;
      b.condition(`${b.n('receipt_count')} = ${b.v(r.seq)}`);
      b.condition(r.prev_hash === GENESIS_RECEIPT_HASH ? `attribute_not_exists(${b.n('receipt_head')})` : `${b.n('receipt_head')} = ${b.v(r.prev_hash)}`);
      b.set('receipt_count', r.seq + 1);
      b.set('receipt_head', r.hash);
    }
  }

  private async cas(spec: CasSpec, b: UpdateBuilder, now: Date): Promise<TransactionRecord> {
    this.casConditions(spec, b, now);
    const key = keys.transaction(spec.tenant_id, spec.transaction_id);

    if (spec.receipt === undefined) {
      try {
        const out = await this.client.send(
          new UpdateCommand({
            TableName: this.table,
            Key: key,
            ...b.render(),
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        this.remember(out.Attributes);
        return toRecord(out.Attributes ?? {});
      } catch (err) {
        this.forget(spec.tenant_id, spec.transaction_id);
        if (errorName(err) === 'ConditionalCheckFailedException') {
          throw classifyCasFailure(spec, fromAttributeMap((err as { Item?: unknown }).Item));
        }
        throw mapStoreError(err);
      }
    }

    // The known pre-image, if this adapter holds the item at the expected
    // revision. The write is then also conditioned on its created_at, so the
    // pre-image is certainly the item the write applies to.
    const before = this.recall(spec.tenant_id, spec.transaction_id, spec.expected_revision);
    if (before !== undefined) b.condition(`${b.n('created_at')} = ${b.v(before.created_at)}`);
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            { Update: { TableName: this.table, Key: key, ...b.render(), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
            { Put: this.receiptPut(spec.tenant_id, spec.transaction_id, spec.receipt, now.toISOString(), spec.retention !== undefined ? { [TTL_ATTRIBUTE]: spec.retention.ttl } : {}) },
            ...this.retentionStamps(spec),
          ],
        }),
      );
    } catch (err) {
      this.forget(spec.tenant_id, spec.transaction_id);
      throw classifyTransactFailure(
        err,
        { 0: (old) => classifyCasFailure(spec, old), 1: () => stateConflict(spec, undefined, 'receipt_exists') },
        raceConflictFor(spec),
      );
    }
    await this.stampOverflow(spec);
    const computed = before !== undefined ? b.applyTo(before) : undefined;
    if (computed !== undefined && !this.verifyImages) {
      this.remember(computed);
      return toRecord(structuredClone(computed));
    }
    // TransactWriteItems returns no item image: read the record back strongly
    // consistently. Its revision is >= the one this write produced.
    const after = await this.readTransaction(spec.tenant_id, spec.transaction_id);
    if (after === undefined) throw new AipError('internal.unexpected', 'transaction vanished after a successful write');
    if (computed !== undefined && after.revision === spec.expected_revision + 1) {
      const expected = canonicalJson(toRecord(computed) as unknown as JsonObject);
      if (canonicalJson(after as unknown as JsonObject) !== expected) {
        throw new AipError('internal.unexpected', 'The locally computed transaction image differs from the stored item', {
          details: { transaction_id: spec.transaction_id, operation: spec.operation },
        });
      }
    }
    return after;
  }

  private checkRef(input: { tenant_id: string; transaction_id: string; expected_revision: number }): void {
    if (input === null || typeof input !== 'object') throw invalid('transaction.invalid_record', 'input must be an object');
    checkId('tenant_id', input.tenant_id);
    checkId('transaction_id', input.transaction_id);
    checkRevision(input.expected_revision);
  }

  private checkFrom(operation: TransactionOperation, from: readonly TransactionStatus[], to: TransactionStatus | 'self'): void {
    if (!Array.isArray(from) || from.length === 0) {
      throw new AipError('transaction.invalid_transition', `${operation}: name at least one allowed current status`, { details: { operation } });
    }
    for (const f of from) {
      if (!isTransactionStatus(f)) throw invalid('transaction.invalid_record', 'unknown status in from', { field: 'from' });
      assertTransitionAllowed(operation, [f], to === 'self' ? f : to);
    }
  }

  /** Index and lease maintenance for a write that lands in `to`. */
  private landIn(b: UpdateBuilder, tenant: string, txn: string, to: TransactionStatus, time: string, escalated = false): void {
    b.set('status', to);
    if (isTerminalStatus(to)) {
      b.remove('GSI3PK', 'GSI3SK', 'next_reconcile_at', 'escalated_at');
    } else {
      const idx = statusIndex(to, tenant, txn, time, escalated);
      b.set('GSI3PK', idx.GSI3PK).set('GSI3SK', idx.GSI3SK);
    }
    if (!isAttemptStatus(to)) b.remove('lease_owner', 'lease_expires_at');
  }

  private grantLease(b: UpdateBuilder, lease: LeaseRequest | undefined, now: Date): void {
    if (lease === undefined) return;
    b.set('lease_owner', lease.owner);
    b.set('lease_expires_at', new Date(now.getTime() + lease.ttl_ms).toISOString());
    b.increment('fence');
  }

  private providerOperationGuard(b: UpdateBuilder, ref: ProviderOperationRef): void {
    const po = b.n('provider_operation');
    const same = [
      `${po}.${b.n('provider')} = ${b.v(ref.provider)}`,
      `${po}.${b.n('operation_id')} = ${b.v(ref.operation_id)}`,
      ref.request_id === undefined ? `attribute_not_exists(${po}.${b.n('request_id')})` : `${po}.${b.n('request_id')} = ${b.v(ref.request_id)}`,
    ].join(' AND ');
    b.condition(`attribute_not_exists(${po}) OR (${same})`);
    b.set('provider_operation', ref);
  }

  private providerConflict(txn: string, ref: ProviderOperationRef): (old: Item) => AipError | undefined {
    return (old) =>
      old.provider_operation !== undefined && !sameRef(old.provider_operation, ref)
        ? new AipError('transaction.provider_operation_conflict', `Transaction ${txn} already has a different provider operation`, {
            details: { transaction_id: txn, ...currentOf(old), current_provider_operation: old.provider_operation as Record<string, unknown> },
          })
        : undefined;
  }

  async claimPlan(input: ClaimPlanInput): Promise<TransactionRecord> {
    const { spec, b, now } = this.buildClaimPlan(input);
    return this.cas(spec, b, now);
  }

  /** claimPlan() built but not sent (with its receipt), for the composite admission write of a planned commit. */
  prepareClaimPlan(input: ClaimPlanInput, held: TransactionRecord): PreparedCas {
    const { spec, b, now } = this.buildClaimPlan(input);
    return this.prepared(spec, b, now, held);
  }

  private buildClaimPlan(input: ClaimPlanInput): { spec: CasSpec; b: UpdateBuilder; now: Date } {
    this.checkRef(input);
    checkId('plan_id', input.plan_id);
    checkId('commit_action_id', input.commit_action_id);
    checkJson('data', input.data, true);
    checkLease(input.lease, 'committing');
    checkReceipt(input.receipt, input.transaction_id, input.expected_revision + 1, false);
    const now = this.clock();
    const iso = now.toISOString();
    const b = new UpdateBuilder();
    const spec: CasSpec = {
      operation: 'claim_plan',
      tenant_id: input.tenant_id,
      transaction_id: input.transaction_id,
      from: ['planned'],
      expected_revision: input.expected_revision,
      ...(input.receipt ? { receipt: input.receipt } : {}),
      classifyAfter: (old) => (old.plan_id !== input.plan_id ? stateConflict(spec, old, 'plan_mismatch') : undefined),
    };
    this.checkFrom('claim_plan', spec.from, 'committing');
    b.condition(`${b.n('plan_id')} = ${b.v(input.plan_id)}`);
    this.landIn(b, input.tenant_id, input.transaction_id, 'committing', iso);
    b.set('action_id', input.commit_action_id);
    b.set('GSI2PK', keys.actionIndex(input.tenant_id, input.commit_action_id));
    this.grantLease(b, input.lease, now);
    b.mergeData(input.data);
    return { spec, b, now };
  }

  async transition(input: TransitionInput): Promise<TransactionRecord> {
    const { spec, b, now } = this.buildTransition(input);
    return this.cas(spec, b, now);
  }

  /** Validates a generic transition and builds its update (without the common CAS conditions). */
  private buildTransition(input: TransitionInput): { spec: CasSpec; b: UpdateBuilder; now: Date } {
    this.checkRef(input);
    if (!GENERIC_OPERATIONS.has(input.operation)) {
      throw new AipError('transaction.invalid_transition', `${String(input.operation)} has its own store operation`, { details: { operation: input.operation } });
    }
    if (!isTransactionStatus(input.to)) throw invalid('transaction.invalid_record', 'unknown target status', { field: 'to' });
    this.checkFrom(input.operation, input.from, input.to);
    const patch: TransitionPatch = input.patch ?? {};
    checkJson('patch.error', patch.error, true);
    checkJson('patch.result', patch.result, true);
    checkJson('data', input.data, true);
    const cursor = checkCursor(patch.reconciliation_cursor);
    let nextReconcileAt = patch.next_reconcile_at === undefined ? undefined : checkTime('next_reconcile_at', patch.next_reconcile_at);
    const ref = patch.provider_operation === undefined ? undefined : checkProviderOperation(patch.provider_operation);
    if (ref !== undefined && input.operation !== 'settle' && input.operation !== 'resolve') {
      throw invalid('transaction.invalid_record', 'a provider operation is recorded by checkpoint, settle or resolve only', { field: 'patch.provider_operation' });
    }
    if ((input.operation === 'reschedule_reconcile' || input.operation === 'refuse_reconcile') && nextReconcileAt === undefined) {
      throw invalid('transaction.invalid_record', `${input.operation} needs next_reconcile_at`, { field: 'patch.next_reconcile_at' });
    }
    if (nextReconcileAt !== undefined && (input.to !== 'outcome_unknown' || input.operation === 'escalate')) {
      throw invalid('transaction.invalid_record', 'next_reconcile_at belongs to outcome_unknown', { field: 'patch.next_reconcile_at' });
    }
    checkLease(input.lease, input.lease === undefined ? undefined : input.to);
    checkReceipt(input.receipt, input.transaction_id, input.expected_revision + 1, false);

    const now = this.clock();
    const retention = isTerminalStatus(input.to) ? retentionOf(input.retention, now) : undefined;
    const iso = now.toISOString();
    const tenant = input.tenant_id;
    const txn = input.transaction_id;
    const b = new UpdateBuilder();
    const spec: CasSpec = {
      operation: input.operation,
      tenant_id: tenant,
      transaction_id: txn,
      from: [...input.from],
      expected_revision: input.expected_revision,
      ...(input.receipt ? { receipt: input.receipt } : {}),
      ...(ref ? { classifyFirst: this.providerConflict(txn, ref) } : {}),
      ...(retention !== undefined ? { retention } : {}),
    };
    if (retention !== undefined) b.set(TTL_ATTRIBUTE, retention.ttl);

    if (input.operation === 'request_reconcile' && nextReconcileAt === undefined) nextReconcileAt = iso;
    if (input.to === 'outcome_unknown' && input.operation !== 'escalate') {
      if (nextReconcileAt === undefined) {
        const delayMs = patch.error?.retry_after_ms ?? DEFAULT_RECONCILE_DELAY_MS;
        nextReconcileAt = new Date(now.getTime() + delayMs).toISOString();
      }
      b.set('next_reconcile_at', nextReconcileAt);
      // Entering (or re-entering) the sweeper's queue: not escalated any more.
      this.landIn(b, tenant, txn, 'outcome_unknown', nextReconcileAt, false);
      b.remove('escalated_at');
    } else if (input.operation === 'escalate') {
      b.set('escalated_at', iso);
      this.landIn(b, tenant, txn, 'outcome_unknown', iso, true);
    } else {
      this.landIn(b, tenant, txn, input.to, iso);
    }
    if (input.operation === 'begin_reconcile') {
      b.increment('reconcile_attempts');
      b.remove('next_reconcile_at', 'escalated_at');
    }
    // A refused reconciliation is an attempt too (the bound counts it); an operator's request resets the bound once.
    if (input.operation === 'refuse_reconcile') b.increment('reconcile_attempts');
    if (input.operation === 'request_reconcile') b.set('reconcile_attempts', 0);
    if (ref) this.providerOperationGuard(b, ref);
    b.set('error', patch.error);
    b.set('result', patch.result);
    b.set('reconciliation_cursor', cursor);
    this.grantLease(b, input.lease, now);
    b.mergeData(input.data);
    return { spec, b, now };
  }

  async settle(input: SettleInput): Promise<TransactionRecord> {
    return this.transition(this.settleAsTransition(input));
  }

  /**
   * A settlement built but not sent, for the composite settlement write
   * (lib/aws/dynamo/atomic-writes.ts): the same conditional update and receipt
   * as settle(), additionally conditioned on the held record's created_at so
   * that the record after the write can be computed from `held` without a read.
   */
  prepareSettle(input: SettleInput, held: TransactionRecord): PreparedCas {
    const { spec, b, now } = this.buildTransition(this.settleAsTransition(input));
    return this.prepared(spec, b, now, held);
  }

  /** A compare-and-set write with its receipt, as TransactWriteItems parts (see prepareSettle). */
  private prepared(spec: CasSpec, b: UpdateBuilder, now: Date, held: TransactionRecord): PreparedCas {
    if (spec.receipt === undefined) throw invalid('transaction.invalid_receipt', 'a composite settlement carries its receipt', { field: 'receipt' });
    this.casConditions(spec, b, now);
    const before: Item | undefined =
      this.recall(spec.tenant_id, spec.transaction_id, spec.expected_revision) ??
      (held.revision === spec.expected_revision && held.transaction_id === spec.transaction_id && held.tenant_id === spec.tenant_id ? { ...keys.transaction(spec.tenant_id, spec.transaction_id), ...held } : undefined);
    if (before !== undefined) b.condition(`${b.n('created_at')} = ${b.v(before.created_at)}`);
    const key = keys.transaction(spec.tenant_id, spec.transaction_id);
    return {
      transactItems: [
        { Update: { TableName: this.table, Key: key, ...b.render(), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
        { Put: this.receiptPut(spec.tenant_id, spec.transaction_id, spec.receipt, now.toISOString(), spec.retention !== undefined ? { [TTL_ATTRIBUTE]: spec.retention.ttl } : {}) },
        ...this.retentionStamps(spec, COMPOSITE_STAMP_LIMIT),
      ],
      handlers: { 0: (old) => { this.forget(spec.tenant_id, spec.transaction_id); return classifyCasFailure(spec, old); }, 1: () => stateConflict(spec, undefined, 'receipt_exists') },
      onRace: () => { this.forget(spec.tenant_id, spec.transaction_id); return raceConflictFor(spec)(); },
      afterStamps: () => this.stampOverflow(spec, COMPOSITE_STAMP_LIMIT),
      after: () => {
        const computed = before !== undefined ? b.applyTo(before) : undefined;
        if (computed === undefined) {
          this.forget(spec.tenant_id, spec.transaction_id);
          return undefined;
        }
        this.remember(computed);
        return toRecord(structuredClone(computed));
      },
    };
  }

  private settleAsTransition(input: SettleInput): TransitionInput {
    if (input === null || typeof input !== 'object') throw invalid('transaction.invalid_record', 'input must be an object');
    if (!isTransactionStatus(input.to)) throw invalid('transaction.invalid_record', 'unknown target status', { field: 'to' });
    const from = input.from ?? allowedFrom('settle', input.to).filter((s): s is TransactionStatus => s !== null);
    const patch: TransitionPatch = compact({
      error: input.error,
      result: input.result,
      provider_operation: input.provider_operation,
      reconciliation_cursor: input.reconciliation_cursor,
      next_reconcile_at: input.next_reconcile_at,
    });
    return compact({
      tenant_id: input.tenant_id,
      transaction_id: input.transaction_id,
      expected_revision: input.expected_revision,
      operation: 'settle',
      from,
      to: input.to,
      patch,
      data: input.data,
      receipt: input.receipt,
      retention: input.retention,
    }) as TransitionInput;
  }

  async checkpointProviderOperation(input: CheckpointProviderOperationInput): Promise<TransactionRecord> {
    this.checkRef(input);
    const ref = checkProviderOperation(input.provider_operation);
    const cursor = checkCursor(input.reconciliation_cursor);
    checkJson('data', input.data, true);
    const from = input.from ?? ATTEMPT_STATUSES;
    this.checkFrom('checkpoint', from, 'self');
    checkReceipt(input.receipt, input.transaction_id, input.expected_revision + 1, false);
    const now = this.clock();
    const b = new UpdateBuilder();
    const spec: CasSpec = {
      operation: 'checkpoint',
      tenant_id: input.tenant_id,
      transaction_id: input.transaction_id,
      from: [...from],
      expected_revision: input.expected_revision,
      ...(input.receipt ? { receipt: input.receipt } : {}),
      classifyFirst: this.providerConflict(input.transaction_id, ref),
    };
    this.providerOperationGuard(b, ref);
    b.set('reconciliation_cursor', cursor);
    b.mergeData(input.data);
    return this.cas(spec, b, now);
  }

  async acquireLease(input: AcquireLeaseInput): Promise<TransactionRecord> {
    const { spec, b, now } = this.buildLease(input);
    return this.cas(spec, b, now);
  }

  /** acquireLease() built but not sent (with its receipt), for the composite attempt-start write. */
  prepareLease(input: AcquireLeaseInput, held: TransactionRecord): PreparedCas {
    const { spec, b, now } = this.buildLease(input);
    return this.prepared(spec, b, now, held);
  }

  private buildLease(input: AcquireLeaseInput): { spec: CasSpec; b: UpdateBuilder; now: Date } {
    this.checkRef(input);
    checkLease({ owner: input.owner, ttl_ms: input.ttl_ms }, undefined);
    checkJson('data', input.data, true);
    const from = input.from ?? ATTEMPT_STATUSES;
    this.checkFrom('lease', from, 'self');
    checkReceipt(input.receipt, input.transaction_id, input.expected_revision + 1, false);
    const now = this.clock();
    const iso = now.toISOString();
    const b = new UpdateBuilder();
    const spec: CasSpec = {
      operation: 'lease',
      tenant_id: input.tenant_id,
      transaction_id: input.transaction_id,
      from: [...from],
      expected_revision: input.expected_revision,
      ...(input.receipt ? { receipt: input.receipt } : {}),
      classifyAfter: (old) => {
        const expires = old.lease_expires_at;
        if (typeof expires === 'string' && expires > iso && old.lease_owner !== input.owner) {
          return new AipError('transaction.lease_held', `Transaction ${input.transaction_id} is leased until ${expires}`, {
            details: { transaction_id: input.transaction_id, ...currentOf(old), lease_owner: old.lease_owner, lease_expires_at: expires, fence: old.fence },
          });
        }
        return undefined;
      },
    };
    const exp = b.n('lease_expires_at');
    b.condition(`attribute_not_exists(${exp}) OR ${exp} <= ${b.v(iso)} OR ${b.n('lease_owner')} = ${b.v(input.owner)}`);
    this.grantLease(b, { owner: input.owner, ttl_ms: input.ttl_ms }, now);
    b.mergeData(input.data);
    return { spec, b, now };
  }

  // --- reads --------------------------------------------------------------------------------

  private async readTransaction(tenant: string, txn: string): Promise<TransactionRecord | undefined> {
    try {
      const out = await this.client.send(new GetCommand({ TableName: this.table, Key: keys.transaction(tenant, txn), ConsistentRead: true }));
      if (out.Item === undefined) this.forget(tenant, txn);
      else this.remember(out.Item);
      return out.Item ? toRecord(out.Item) : undefined;
    } catch (err) {
      throw mapStoreError(err);
    }
  }

  /**
   * The table and key of a transaction item for a composite read (lib/aws/dynamo/atomic-writes.ts);
   * undefined when `get` would refuse the IDs (the caller then reads through `get`).
   */
  readKey(tenant_id: string, transaction_id: string): { readonly table: string; readonly key: { PK: string; SK: string } } | undefined {
    const ok = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= ID_MAX_LENGTH && ID_PATTERN.test(v);
    return ok(tenant_id) && ok(transaction_id) ? { table: this.table, key: keys.transaction(tenant_id, transaction_id) } : undefined;
  }

  /** The record of a transaction item read strongly consistently by a composite read (undefined: absent); learned as `get` learns it. */
  recordOf(tenant_id: string, transaction_id: string, item: Item | undefined): TransactionRecord | undefined {
    if (item === undefined) {
      this.forget(tenant_id, transaction_id);
      return undefined;
    }
    this.remember(item);
    return toRecord(item);
  }

  async get(selector: TransactionSelector): Promise<TransactionRecord | undefined> {
    const bad = () => invalid('transaction.invalid_selector', 'Select by exactly one of transaction_id, plan_id or action_id, within a tenant');
    if (selector === null || typeof selector !== 'object') throw bad();
    const tenantOk = typeof selector.tenant_id === 'string' && ID_PATTERN.test(selector.tenant_id) && selector.tenant_id.length <= ID_MAX_LENGTH;
    const given = (['transaction_id', 'plan_id', 'action_id'] as const).filter((k) => selector[k] !== undefined);
    const field = given[0];
    if (!tenantOk || given.length !== 1 || field === undefined) throw bad();
    const value = selector[field];
    if (typeof value !== 'string' || value.length === 0 || value.length > ID_MAX_LENGTH || !ID_PATTERN.test(value)) throw bad();
    const tenant = selector.tenant_id;

    if (field === 'transaction_id') return this.readTransaction(tenant, value);

    if (field === 'plan_id') {
      // The plan_ref uniqueness item, read strongly consistently.
      try {
        const out = await this.client.send(new GetCommand({ TableName: this.table, Key: keys.planRef(tenant, value), ConsistentRead: true }));
        const txn = out.Item?.transaction_id;
        if (typeof txn !== 'string') return undefined;
        const record = await this.readTransaction(tenant, txn);
        return record?.plan_id === value ? record : undefined;
      } catch (err) {
        throw mapStoreError(err);
      }
    }

    // action_id: KEYS_ONLY index, newest first, then a consistent read that
    // re-checks the binding (the index can lag behind claim_plan's rebinding).
    let out;
    try {
      out = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: GSIS.byAction.name,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': GSIS.byAction.partitionKey },
          ExpressionAttributeValues: { ':pk': keys.actionIndex(tenant, value) },
          ScanIndexForward: false,
          Limit: 10,
        }),
      );
    } catch (err) {
      throw mapStoreError(err);
    }
    for (const k of out.Items ?? []) {
      const record = await this.readByKey(k);
      if (record && record.tenant_id === tenant && record.action_id === value) return record;
    }
    return undefined;
  }

  private async readByKey(k: Item): Promise<TransactionRecord | undefined> {
    try {
      const out = await this.client.send(new GetCommand({ TableName: this.table, Key: { PK: k.PK, SK: k.SK }, ConsistentRead: true }));
      this.remember(out.Item);
      return out.Item ? toRecord(out.Item) : undefined;
    } catch (err) {
      throw mapStoreError(err);
    }
  }

  async listByStatus(query: ListByStatusQuery): Promise<Page<TransactionRecord>> {
    if (query === null || typeof query !== 'object' || !isTransactionStatus(query.status) || isTerminalStatus(query.status)) {
      throw invalid('transaction.invalid_listing', 'List by a non-terminal status (terminal records are not indexed)', { field: 'status' });
    }
    const escalated = query.escalated === true;
    if (escalated && query.status !== 'outcome_unknown') {
      throw invalid('transaction.invalid_listing', 'Only outcome_unknown records are escalated', { field: 'escalated' });
    }
    if (query.tenant_id !== undefined && (typeof query.tenant_id !== 'string' || !ID_PATTERN.test(query.tenant_id))) {
      throw invalid('transaction.invalid_listing', 'tenant_id must be a protocol ID', { field: 'tenant_id' });
    }
    let until: string | undefined;
    if (query.until !== undefined) {
      const ms = typeof query.until === 'string' ? Date.parse(query.until) : Number.NaN;
      if (!Number.isFinite(ms)) throw invalid('transaction.invalid_listing', 'until must be an RFC 3339 time', { field: 'until' });
      until = new Date(ms).toISOString();
    }
    const limit = checkLimit(query.limit);
    const pk = keys.statusIndex(query.status, escalated);
    let out;
    try {
      out = await queryStatusIndex(this.client, this.table, { code: 'transaction.invalid_listing', pk, upTo: until, limit, cursor: query.cursor });
    } catch (err) {
      throw mapStoreError(err);
    }
    const indexKeys = out.Items ?? [];
    const records = await this.batchRead(indexKeys.map((k) => ({ PK: k.PK, SK: k.SK })));
    const items: TransactionRecord[] = [];
    for (const k of indexKeys) {
      const r = records.get(`${String(k.PK)}|${String(k.SK)}`);
      if (r === undefined || r.status !== query.status || (r.escalated_at !== undefined) !== escalated) continue; // index lag
      if (query.tenant_id !== undefined && r.tenant_id !== query.tenant_id) continue;
      if (until !== undefined && !escalated && r.status === 'outcome_unknown' && r.next_reconcile_at !== undefined && r.next_reconcile_at > until) continue;
      items.push(r);
    }
    const cursor = encodeCursor(out.LastEvaluatedKey);
    return cursor === undefined ? { items } : { items, cursor };
  }

  private async batchRead(keyList: Item[]): Promise<Map<string, TransactionRecord>> {
    const found = new Map<string, TransactionRecord>();
    let pending = keyList;
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) {
        if (attempt > 8) throw new AipError('transaction.store_unavailable', undefined, { details: { reason: 'unprocessed_keys' } });
        await delay(Math.min(1000, 25 * 2 ** attempt)); // backoff for UnprocessedKeys (throttling)
      }
      let out;
      try {
        out = await this.client.send(new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: true } } }));
      } catch (err) {
        throw mapStoreError(err);
      }
      for (const item of out.Responses?.[this.table] ?? []) {
        this.remember(item);
        found.set(`${String(item.PK)}|${String(item.SK)}`, toRecord(item));
      }
      pending = (out.UnprocessedKeys?.[this.table]?.Keys as Item[] | undefined) ?? [];
    }
    return found;
  }

  async listReceipts(query: ListReceiptsQuery): Promise<Page<StoredReceipt>> {
    if (query === null || typeof query !== 'object') throw invalid('transaction.invalid_listing', 'query must be an object');
    checkId('tenant_id', query.tenant_id);
    checkId('transaction_id', query.transaction_id);
    const limit = checkLimit(query.limit);
    const base = keys.transaction(query.tenant_id, query.transaction_id);
    const start = decodeCursor('transaction.invalid_listing', query.cursor, ['PK', 'SK']);
    if (start !== undefined && start.PK !== base.PK) throw invalid('transaction.invalid_listing', 'The cursor belongs to another listing', { field: 'cursor' });
    let out;
    try {
      out = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK' },
          ExpressionAttributeValues: { ':pk': base.PK, ':prefix': keys.receiptPrefix },
          ConsistentRead: true,
          Limit: limit,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
    } catch (err) {
      throw rejectedStartKey(err, 'transaction.invalid_listing', start) ?? mapStoreError(err);
    }
    const items: StoredReceipt[] = (out.Items ?? []).map((i) =>
      i.evidence === undefined
        ? { tenant_id: String(i.tenant_id), receipt: i.receipt as StoredReceipt['receipt'] }
        : { tenant_id: String(i.tenant_id), receipt: i.receipt as StoredReceipt['receipt'], evidence: i.evidence as StoredReceipt['evidence'] },
    );
    const cursor = encodeCursor(out.LastEvaluatedKey);
    return cursor === undefined ? { items } : { items, cursor };
  }
}
