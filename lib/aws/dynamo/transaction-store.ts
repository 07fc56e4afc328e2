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
 * Key design: lib/aws/dynamo/table-design.ts, docs/table-design.md. Beside
 * this module: input checks (transaction-checks.ts), classification of a
 * failed compare-and-set (transaction-conflicts.ts), SDK error mapping
 * (store-errors.ts), the update-expression builder (update-builder.ts) and the
 * item-image cache (known-images.ts).
 */
import { GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  GENESIS_RECEIPT_HASH,
  PLAN_ID_PREFIX,
  canonicalJson,
  type JsonObject,
  type ProviderOperationRef,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import type {
  AcquireLeaseInput,
  CheckpointProviderOperationInput,
  ClaimPlanInput,
  CreateTransactionInput,
  ItemsRetention,
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
import type { WriteIntent } from '../../ports/unit-of-work.js';
import type { ReceiptAppend, StoredReceipt, TransactionRecord } from '../../transactions/record.js';
import {
  ATTEMPT_STATUSES,
  DEFAULT_RECONCILE_DELAY_MS,
  allowedFrom,
  isAttemptStatus,
  isTerminalStatus,
  isTransactionStatus,
} from '../../transactions/state-machine.js';
import type { TransactionStatus } from '../../transactions/status.js';
import { DEFAULT_KNOWN_IMAGES, KnownImages } from './known-images.js';
import { decodeCursor, encodeCursor, rejectedStartKey } from './pagination.js';
import { SCOPED_LISTING_SCAN_BUDGET, listStatusIndex, listedRecordOf, type ListedRecord } from './status-listing.js';
import { errorName, mapStoreError } from './store-errors.js';
import { consistentBatchGet, isId } from './store-support.js';
import { fullTransaction, leanTransaction, leanTransactionData } from './derived-attributes.js';
import { itemSize, pack, packAttributes, packMapValues, packed, unpack, unpackAttributes, unpackMapValues } from './packed-attributes.js';
import { GSIS, STATUS_ENTERED_ATTRIBUTE, TTL_ATTRIBUTE, keys, receiptAttribute, receiptAttributeSeq, withKeyAttributes } from './table-design.js';
import {
  checkCreate,
  checkCursor,
  checkFrom,
  checkId,
  checkJson,
  checkLease,
  checkProviderOperation,
  checkReceipt,
  checkReceiptListing,
  checkRef,
  checkSelector,
  checkItemsRetention,
  checkItemsTtl,
  checkTransition,
  invalid,
  retentionOf,
} from './transaction-checks.js';
import { classifyCasFailure, currentOf, providerConflict, raceConflictFor, stateConflict, type CasSpec } from './transaction-conflicts.js';
import type { IntentMapper, MappedWrite, TransactItem } from './unit-of-work.js';
import { compact, UpdateBuilder } from './update-builder.js';

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
  /** Index entries a page scoped to some tenants evaluates at most (default SCOPED_LISTING_SCAN_BUDGET, ./status-listing.ts). */
  readonly scopedListingScanBudget?: number;
}

type Item = Record<string, unknown>;

/** A compare-and-set update built from one intent, before the common conditions. */
interface CasUpdate {
  readonly spec: CasSpec;
  readonly b: UpdateBuilder;
  readonly now: Date;
}

const DEFAULT_DRY_RUN_RETENTION_S = 7 * 24 * 3600;

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
  'result_ref',
  'next_reconcile_at',
  'reconcile_attempts',
  'escalated_at',
  'lease_owner',
  'lease_expires_at',
  'fence',
  'items_ttl',
  'receipt_count',
  'receipt_head',
  'created_at',
  'updated_at',
  'data',
] as const satisfies readonly (keyof TransactionRecord)[];

/**
 * The attributes a transaction item stores packed (./packed-attributes.ts): written whole, never named by a
 * condition or a nested update path. `provider_operation` (its fields are conditioned) and `receipt_head`
 * (compared with the next receipt's prev_hash) stay plain; `data`, updated key by key, stays a map whose values
 * are packed one by one (`packMapValues`, `UpdateBuilder.mergeData`).
 */
const PACKED: ReadonlySet<string> = new Set(['plan', 'error', 'result', 'principal', 'identity']);
/**
 * The chain's head, a sha256 hex digest, is stored as its 32 bytes (the packed `hex` format): compared by the next
 * receipt's write in either form (an item written before holds the hex string), never packed by the builder.
 */
const HEAD = 'receipt_head';
/** What a read decodes: the packed attributes and the head. */
const DECODED: ReadonlySet<string> = new Set([...PACKED, HEAD]);
/** The attributes a receipt item stores packed: written once, never conditioned. */
const RECEIPT_PACKED: ReadonlySet<string> = new Set(['receipt', 'evidence']);

/**
 * The record of a transaction item (exported for readers of raw items, the load checker); `tenant_id` and
 * `transaction_id` come from the key (stored only by items written before the lean item model).
 */
export function transactionRecordOf(stored: Item): TransactionRecord {
  // Values the item says elsewhere are stored once (./derived-attributes.ts) and rebuilt here.
  const unpacked = unpackAttributes(stored, DECODED);
  if (unpacked.data !== undefined) unpacked.data = unpackMapValues(unpacked.data, 'data');
  const item = fullTransaction(withKeyAttributes(unpacked));
  const out: Record<string, unknown> = {};
  for (const f of RECORD_FIELDS) if (item[f] !== undefined) out[f] = item[f];
  out.data ??= {};
  out.reconcile_attempts ??= 0;
  out.fence ??= 0;
  out.receipt_count ??= 0;
  return out as unknown as TransactionRecord;
}

const toRecord = transactionRecordOf;

/**
 * A stored receipt from its item (exported for readers of raw items, the load checker). The key holds the
 * tenant, the transaction ID and the seq, so the item stores them nowhere, the receipt's own `transaction_id`
 * and `seq` included (docs/table-design.md, "Key attributes not stored again"); an item written before the
 * lean item model stores them, and reads exactly as before.
 */
export function receiptOf(stored: Item): StoredReceipt {
  const i = withKeyAttributes(unpackAttributes(stored, RECEIPT_PACKED));
  const receipt = { transaction_id: i.transaction_id, seq: i.seq, ...(i.receipt as object) } as StoredReceipt['receipt'];
  return i.evidence === undefined
    ? { tenant_id: String(i.tenant_id), receipt }
    : { tenant_id: String(i.tenant_id), receipt, evidence: i.evidence as StoredReceipt['evidence'] };
}

/**
 * The receipts a transaction item holds inside (`receipt<seq>`, receiptAttribute: the first receipt of a record
 * created with it, and any receipt a later write appended while the record stayed within its cap), in seq order,
 * each read exactly as its own item would read (exported for readers of raw items, the load checker). Empty when the
 * item holds none (every receipt its own `RCPT#` item: a chain written before, or records that did not fit). The
 * item needs its key (PK), which holds the tenant and the transaction ID.
 */
export function insideReceiptsOf(stored: Item): StoredReceipt[] {
  const { tenant_id: tenant, transaction_id: txn } = withKeyAttributes(stored);
  if (typeof tenant !== 'string' || typeof txn !== 'string') return [];
  const out: StoredReceipt[] = [];
  for (const [name, held] of Object.entries(stored)) {
    const seq = receiptAttributeSeq(name);
    if (seq === undefined || held === undefined) continue;
    const body = unpack(held, name) as { receipt?: unknown; evidence?: unknown };
    out.push(receiptOf({ ...keys.receipt(tenant, txn, seq), receipt: body.receipt, evidence: body.evidence }));
  }
  return out.sort((a, b) => a.receipt.seq - b.receipt.seq);
}

/** A receipt as the record item holds it inside (`receipt<seq>`): its body without the key's values, and its evidence, packed as one value. */
function insideBody(append: ReceiptAppend): unknown {
  return packed(compact({ receipt: receiptWithoutKey(append.receipt), evidence: append.evidence }));
}

/** The seq a receipt item's sort key (`RCPT#<seq:8 digits>`) names; undefined for any other key. */
function receiptSeqOf(sk: unknown): number | undefined {
  if (typeof sk !== 'string' || !sk.startsWith(keys.receiptPrefix)) return undefined;
  const digits = sk.slice(keys.receiptPrefix.length);
  return /^\d{8}$/.test(digits) ? Number(digits) : undefined;
}

/** A receipt as its item stores it: without the transaction ID and seq its key holds (checked equal before). */
function receiptWithoutKey(r: ReceiptAppend['receipt']): Item {
  const { transaction_id: _txn, seq: _seq, ...rest } = r;
  return rest;
}

/**
 * Status index keys: the record's write shard of its status (a hash of tenant and
 * transaction ID, so no partition takes every tenant's traffic), and as sort
 * time the reconciliation time for outcome_unknown, else the entry time.
 */
function statusIndex(status: TransactionStatus, tenant: string, transactionId: string, time: string, escalated: boolean) {
  return {
    GSI3PK: keys.statusIndex(status, escalated, keys.statusIndexShard(tenant, transactionId)),
    GSI3SK: keys.statusIndexSort(time, tenant, transactionId),
  };
}

/**
 * Items a terminal write stamps besides the record and its new receipt in its own atomic write: TransactWriteItems
 * holds 100, and the largest commit writes at most 8 items besides (lib/aws/dynamo/unit-of-work.ts).
 */
const STAMP_LIMIT = 90;

/** The bytes one write request unit holds: DynamoDB bills a write per started 1 KB of the larger of the item's images. */
const WRITE_UNIT_BYTES = 1024;
/**
 * What a record created open (not terminal) keeps free of its write unit when it takes its first receipt in
 * (docs/table-design.md, "The first receipt inside the record"): the growth of a record from its creation to its
 * settlement on the common path (an execute 437 → 528 B, a compensation 652 → 737 B in the bench: about 90 B),
 * with a margin, so that the receipt does not push the settlement over a 1 KB step. A record created terminal (a
 * dry run) is not written again and may fill its unit.
 */
const OPEN_RECORD_HEADROOM_BYTES = 128;

/**
 * The cap of a record item that takes a later receipt inside (docs/table-design.md, "Receipts inside the record"):
 * 2 write units. A receipt item costs 2 WRU in a TransactWriteItems and makes the record's own write transactional
 * (billed twice); inside, the write is one conditional UpdateItem (or one item fewer in a larger
 * TransactWriteItems) billed ceil(size / 1 KB). Capped at 2 KB, the record stays far under the 4 KB of one strongly
 * consistent read unit.
 */
const INSIDE_RECORD_CAP_BYTES = 2 * WRITE_UNIT_BYTES;
/**
 * What a receipt inside the record is taken to weigh when the pre-image cannot show it (a `held` image, below): a
 * receipt's body is about 150 B without evidence and 200–290 B with the runtime's evidence in the bench; a margin
 * above that. The first receipt has its own bound (`IMAGE_WITHOUT_ITEM`). An estimate that is off costs at most a
 * write unit: the receipt's place is decided once, by the record's own conditional write, and every reader reads
 * either place; and since each unknown receipt counts this much, a record decided on estimates holds at most
 * CAP / allowance of them.
 */
const UNSEEN_RECEIPT_ALLOWANCE_BYTES = 384;

/**
 * Where a receipt is: inside the record item (`inside`, `receipt<seq>`), its own `RCPT#` item (`item`), or not known
 * (no image of the item as stored, or an image built from a record: `IMAGE_WITHOUT_ITEM`). The stamps of a write's
 * other items need it (a late terminal write, a removal: `itemsStamp`; a prompt terminal write stamps nothing,
 * lib/runtime/retention.ts), and the size of a write that would take a receipt in.
 */
type ReceiptPlace = 'inside' | 'item' | 'unknown';

/**
 * Marks an in-memory image built from a record the step read (`held`), not from the stored item; its value is the
 * held record's `receipt_count`: the image cannot say where the receipts below it are (those this adapter appended
 * since, it can). Never written (images are only pre-images, ./known-images.ts).
 */
const IMAGE_WITHOUT_ITEM = '#image_of_record';

function unseenBelow(image: Item): number {
  const v = image[IMAGE_WITHOUT_ITEM];
  return typeof v === 'number' ? v : 0;
}

function placeOf(image: Item | undefined, seq: number): ReceiptPlace {
  if (image === undefined || seq < unseenBelow(image)) return 'unknown';
  return image[receiptAttribute(seq)] !== undefined ? 'inside' : 'item';
}

/**
 * The transaction item of a record as this adapter stores it (the creation's form: key attributes not stored again,
 * values stored once, packed attributes and the head packed, a fence and a reconcile counter at 0 not stored), with
 * `extra` (index keys, ttl) last.
 */
function storedRecordItem(record: TransactionRecord, extra: Item = {}): Item {
  const { tenant_id: _tenant, transaction_id: _txn, reconcile_attempts: attempts, ...lean } = leanTransaction(record as unknown as Item);
  const { fence: _unleased, ...unfenced } = lean;
  const stored: Item = { ...(record.fence === 0 ? unfenced : lean), ...(typeof attempts === 'number' && attempts > 0 ? { reconcile_attempts: attempts } : {}) };
  return packAttributes(
    {
      ...keys.transaction(record.tenant_id, record.transaction_id),
      ...stored,
      ...(stored.data !== undefined ? { data: packMapValues(stored.data) } : {}),
      ...(typeof stored.receipt_head === 'string' ? { [HEAD]: pack(stored.receipt_head) } : {}),
      ...extra,
    },
    PACKED,
  );
}

/**
 * The stored size an image built from a record (`held`) stands for, with the receipts inside it cannot show: its
 * first receipt (if unseen) at most what the creation's budget let in beside the fields a record holds from its
 * creation on, and every other unseen receipt UNSEEN_RECEIPT_ALLOWANCE_BYTES.
 */
function unseenAllowance(image: Item): number {
  const unseen = unseenBelow(image);
  if (unseen === 0) return 0;
  const r = image as unknown as TransactionRecord;
  const created: TransactionRecord = compact({
    tenant_id: r.tenant_id,
    transaction_id: r.transaction_id,
    status: r.status,
    revision: 1,
    mode: r.mode,
    capability_id: r.capability_id,
    plan_id: r.plan_id,
    plan: r.plan,
    principal: r.principal,
    identity: r.identity,
    compensation_for: r.compensation_for,
    reconcile_attempts: 0,
    fence: 0,
    receipt_count: 1,
    receipt_head: r.receipt_head,
    created_at: r.created_at,
    updated_at: r.created_at,
    data: {},
  }) as TransactionRecord;
  const floor = storedRecordItem(created, statusIndex(r.status, r.tenant_id, r.transaction_id, r.created_at, false));
  const first = Math.max(0, WRITE_UNIT_BYTES - OPEN_RECORD_HEADROOM_BYTES - itemSize(floor));
  return first + (unseen - 1) * UNSEEN_RECEIPT_ALLOWANCE_BYTES;
}

const RECORD_FIELD_NAMES: ReadonlySet<string> = new Set<string>(RECORD_FIELDS);

/**
 * The attributes an image built from a record holds beside the record's fields (index keys, ttl, receipts this
 * adapter took inside since), and the status index entry an open record holds, as the creation writes it.
 */
function itemAttributesBeside(image: Item): Item {
  const out: Item = {};
  for (const [name, value] of Object.entries(image)) {
    if (!RECORD_FIELD_NAMES.has(name) && name !== IMAGE_WITHOUT_ITEM && name !== 'PK' && name !== 'SK') out[name] = value;
  }
  const r = image as unknown as TransactionRecord;
  if (out.GSI3PK === undefined && isTransactionStatus(r.status) && !isTerminalStatus(r.status)) {
    Object.assign(out, statusIndex(r.status, r.tenant_id, r.transaction_id, r.updated_at, false));
  }
  return out;
}

/** An image without the marks that are not attributes (IMAGE_WITHOUT_ITEM). */
function withoutMarks(image: Item): Item {
  const { [IMAGE_WITHOUT_ITEM]: _mark, ...item } = image;
  return item;
}

/**
 * The record item with its first receipt inside (receipt0), when the two fit one write unit with
 * the headroom an open record keeps; otherwise undefined (the receipt is written as its own item). The one rule
 * at the creation's mapping: a receipt never moves afterwards.
 */
function withGenesisReceipt(item: Item, append: ReceiptAppend, terminal: boolean): Item | undefined {
  const embedded = { ...item, [receiptAttribute(0)]: insideBody(append) };
  const budget = terminal ? WRITE_UNIT_BYTES : WRITE_UNIT_BYTES - OPEN_RECORD_HEADROOM_BYTES;
  return itemSize(embedded) <= budget ? embedded : undefined;
}

/** What a write stamps on the record's other items: a ttl, or (`ttl` absent) its removal. */
interface ItemsStamp {
  readonly ttl?: number;
  readonly plan_id?: string;
}

/**
 * The stamp of a compare-and-set write's other items: the journal's decision (lib/runtime/retention.ts), or, for a
 * write that carries none, a terminal retention's ttl on every item (a record written before `items_ttl`).
 */
function itemsStamp(spec: CasSpec): ItemsStamp | undefined {
  const items = spec.items;
  if (items === undefined) return spec.retention;
  return items.kind === 'keep' ? undefined : items;
}

/** A write's checked items instruction, as the spec carries it. */
function itemsOf(input: { readonly items?: ItemsRetention }): { items?: ItemsRetention } {
  const items = checkItemsRetention(input.items);
  return items !== undefined ? { items } : {};
}

export class DynamoTransactionStore implements TransactionStore, IntentMapper {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly clock: () => Date;
  private readonly dryRunRetentionSeconds: number;
  /** Transaction items as this adapter last read or wrote them (lib/aws/dynamo/known-images.ts). */
  private readonly images: KnownImages;
  private readonly verifyImages: boolean;
  private readonly scanBudget: number;

  constructor(options: DynamoTransactionStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.clock = options.now ?? (() => new Date());
    this.dryRunRetentionSeconds = options.dryRunRetentionSeconds ?? DEFAULT_DRY_RUN_RETENTION_S;
    this.images = new KnownImages(Math.max(0, Math.floor(options.knownImages ?? DEFAULT_KNOWN_IMAGES)));
    this.verifyImages = options.verifyKnownImages ?? process.env.AIP_DYNAMO_VERIFY_IMAGES === '1';
    this.scanBudget = options.scopedListingScanBudget ?? SCOPED_LISTING_SCAN_BUDGET;
  }

  // --- creation ------------------------------------------------------------------------

  /** Maps a write intent on the transaction record (with its receipt) to its conditional items (lib/aws/dynamo/unit-of-work.ts). */
  map(intent: WriteIntent): MappedWrite {
    switch (intent.kind) {
      case 'transaction.create':
        return this.createWrite('create', intent.input);
      case 'transaction.claim_direct_commit':
        return this.createWrite('claim_direct_commit', { ...intent.input, status: 'committing' } as unknown as CreateTransactionInput);
      case 'transaction.claim_plan':
        return this.casWrite(this.claimPlanUpdate(intent.input), intent.held);
      case 'transaction.transition':
        return this.casWrite(this.transitionUpdate(intent.input, intent.held), intent.held);
      case 'transaction.settle':
        return this.casWrite(this.transitionUpdate(this.settleAsTransition(intent.input)), intent.held);
      case 'transaction.lease':
        return this.casWrite(this.leaseUpdate(intent.input), intent.held);
      case 'transaction.checkpoint':
        return this.casWrite(this.checkpointUpdate(intent.input), intent.held);
      default:
        throw new AipError('internal.unexpected', `the transaction store does not write ${intent.kind}`);
    }
  }

  /**
   * A creation: the transaction item (not exists), the plan-ID guard and the
   * first receipt, with the classifier of each item's refusal.
   */
  private createWrite(operation: 'create' | 'claim_direct_commit', input: CreateTransactionInput): MappedWrite<TransactionRecord, TransactionRecord> {
    checkCreate(operation, input);
    // The ttl of the other items of a record created open under a retention (lib/runtime/retention.ts).
    const itemsTtl = isTerminalStatus(input.status) ? undefined : checkItemsTtl(input.items_ttl);
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
      items_ttl: itemsTtl,
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
    // The record's other items: the record's own ttl when it is created terminal, else the items' ttl it stores.
    const itemTtl = itemsTtl !== undefined ? { [TTL_ATTRIBUTE]: itemsTtl } : ttl;
    // Not stored again: tenant_id, transaction_id and the item kind are in the key (toRecord reads them from it).
    // Nor are the values the record says elsewhere (./derived-attributes.ts): toRecord rebuilds them, and a
    // reconcile counter at 0 and a fence at 0, never leased (toRecord reads either absent as 0, no condition names
    // them, and the first increment starts each from 0).
    const recordItem: Item = storedRecordItem(record, {
      ...(isTerminalStatus(input.status) ? {} : statusIndex(input.status, tenant, txn, iso, false)),
      ...ttl,
    });
    // The first receipt inside the record when both fit its write unit: one item, written by this conditional put.
    const embedded = input.receipt !== undefined ? withGenesisReceipt(recordItem, input.receipt, isTerminalStatus(input.status)) : undefined;
    const item = embedded ?? recordItem;
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
          details: {
            transaction_id: txn,
            plan_id: planId,
            reason: 'plan_id_in_use',
            ...(old?.transaction_id ? { existing_transaction_id: old.transaction_id } : {}),
          },
        });
      transactItems.push({
        Put: {
          TableName: this.table,
          Item: {
            // The key holds the tenant and the plan ID.
            ...keys.planRef(tenant, planId),
            transaction_id: txn,
            created_at: iso,
            ...itemTtl,
          },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': 'PK' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      });
    }
    if (input.receipt !== undefined && embedded === undefined) {
      transactItems.push({ Put: this.receiptPut(tenant, txn, input.receipt, itemTtl) });
    }
    return {
      items: transactItems,
      refuse: (at, old) => {
        const error = (
          handlers[at] ??
          (() => stateConflict({ operation, tenant_id: tenant, transaction_id: txn, from: [], expected_revision: 0 }, undefined, 'receipt_exists'))
        )(old);
        return at === 0 && old !== undefined ? { error, current: toRecord(old) } : { error };
      },
      race: () => stateConflict({ operation, tenant_id: tenant, transaction_id: txn, from: [], expected_revision: 0 }, undefined, 'transaction_conflict'),
      written: () => {
        this.images.remember(compact(item));
        return record;
      },
    };
  }

  /**
   * The other items a write stamps (sets or removes the ttl of, `itemsStamp`): the receipt items written before this
   * one and the plan-ID item. `atomic`, in the same TransactWriteItems: the plan-ID item and the receipts the
   * pre-image shows to be items, the most recent first, at most `limit` in all. `after`, right after it or (a
   * journal's stamp) right before it, each alone with a refusal ignored: the older receipt items of a very long chain,
   * and the receipts whose place the pre-image cannot show (never named in the atomic write, where a missing item
   * would refuse the whole write). A receipt inside the record shares the record's own ttl and is never stamped.
   */
  private stampPlan(spec: CasSpec, before: Item | undefined, limit = STAMP_LIMIT): { atomic: TransactItem[]; after: Item[] } {
    const s = itemsStamp(spec);
    if (s === undefined || spec.receipt === undefined) return { atomic: [], after: [] };
    const seq = spec.receipt.receipt.seq;
    const stamp = (Key: Item): TransactItem => ({ Update: this.stampUpdate(Key, s) });
    const atomic: TransactItem[] = [];
    const after: Item[] = [];
    if (s.plan_id !== undefined) atomic.push(stamp(keys.planRef(spec.tenant_id, s.plan_id)));
    for (let i = seq - 1; i >= 0; i--) {
      const place = placeOf(before, i);
      const key = keys.receipt(spec.tenant_id, spec.transaction_id, i);
      if (place === 'item' && atomic.length < limit) atomic.push(stamp(key));
      else if (place !== 'inside') after.push(key);
    }
    return { atomic, after };
  }

  /** One item's stamp: its ttl set (or removed), conditioned on the item existing (an update never creates one). */
  private stampUpdate(Key: Item, s: ItemsStamp) {
    return {
      TableName: this.table,
      Key,
      ...(s.ttl !== undefined ? { UpdateExpression: 'SET #ttl = :ttl', ExpressionAttributeValues: { ':ttl': s.ttl } } : { UpdateExpression: 'REMOVE #ttl' }),
      ConditionExpression: 'attribute_exists(#pk)',
      ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE, '#pk': 'PK' },
    };
  }

  /**
   * The stamps the atomic write did not hold (`stampPlan`'s `after`): each alone, idempotent, a refusal (no such
   * item: the receipt is inside the record) ignored.
   */
  private async stampOverflow(spec: CasSpec, keyList: readonly Item[]): Promise<void> {
    const s = itemsStamp(spec);
    if (s === undefined) return;
    for (const key of keyList) {
      try {
        await this.client.send(new UpdateCommand(this.stampUpdate(key, s)));
      } catch (err) {
        if (errorName(err) !== 'ConditionalCheckFailedException') throw mapStoreError(err);
      }
    }
  }

  /**
   * A receipt's item. Its time is the receipt's own `at` (in the packed body): the item stores no `created_at` of
   * its own, which nothing read (receiptOf never did); items written before keep theirs, unread.
   */
  private receiptPut(tenant: string, txn: string, append: ReceiptAppend, ttl: Item = {}) {
    const r = append.receipt;
    return {
      TableName: this.table,
      Item: packAttributes(
        compact({
          // The key holds the tenant, the transaction ID and the seq, the receipt's own included (read back by receiptOf).
          ...keys.receipt(tenant, txn, r.seq),
          receipt: receiptWithoutKey(r),
          evidence: append.evidence,
          ...ttl,
        }),
        RECEIPT_PACKED,
      ),
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': 'PK' },
    };
  }

  // --- compare-and-set writes ---------------------------------------------------------------

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
      const head = b.n(HEAD);
      b.condition(
        r.prev_hash === GENESIS_RECEIPT_HASH ? `attribute_not_exists(${head})` : `${head} = ${b.v(pack(r.prev_hash))} OR ${head} = ${b.v(r.prev_hash)}`,
      );
      b.set('receipt_count', r.seq + 1);
      b.set(HEAD, pack(r.hash));
      // The record says what its other items hold: the stamp's ttl, or nothing once they lost theirs.
      if (spec.items?.kind === 'stamp') b.set('items_ttl', spec.items.ttl);
      if (spec.items?.kind === 'remove') b.remove('items_ttl');
    }
  }

  /**
   * A compare-and-set: status IN from AND revision = expected (+ the
   * update's own conditions, + the receipt chain). Without a receipt it is one
   * conditional UpdateItem; with one, the update, the receipt put (with the
   * record's ttl when the write is terminal) and the retention stamps of the
   * chain's older items, at most STAMP_LIMIT, written together.
   *
   * The record after the write is computed from the known pre-image: the one
   * this adapter last read or wrote at the expected revision, or the `held`
   * record the step read (the write is then also conditioned on its
   * created_at, so the pre-image is certainly the item written). Otherwise it
   * is read back strongly consistently.
   */
  private casWrite(update: CasUpdate, held: TransactionRecord | undefined): MappedWrite<TransactionRecord, never> {
    const { spec, b, now } = update;
    this.casConditions(spec, b, now);
    const key = keys.transaction(spec.tenant_id, spec.transaction_id);
    const refuse = (old: Item | undefined) => {
      this.images.forget(spec.tenant_id, spec.transaction_id);
      return { error: classifyCasFailure(spec, old) };
    };
    const race = () => {
      this.images.forget(spec.tenant_id, spec.transaction_id);
      return raceConflictFor(spec)();
    };
    if (spec.receipt === undefined) {
      return {
        items: [{ Update: { TableName: this.table, Key: key, ...b.render() } }],
        refuse: (_at, old) => refuse(old),
        race,
        written: async (image) => {
          if (image !== undefined) {
            this.images.remember(image);
            return toRecord(image);
          }
          return this.readBack(spec);
        },
      };
    }
    const before: Item | undefined =
      this.images.recall(spec.tenant_id, spec.transaction_id, spec.expected_revision) ??
      (held !== undefined && held.revision === spec.expected_revision && held.transaction_id === spec.transaction_id && held.tenant_id === spec.tenant_id
        ? { ...key, ...held, [IMAGE_WITHOUT_ITEM]: held.receipt_count }
        : undefined);
    if (before !== undefined) b.condition(`${b.n('created_at')} = ${b.v(before.created_at)}`);
    // Decided on the pre-image, before the stamps: the receipt inside the record when the record stays within its cap.
    const inside = this.takesReceiptInside(before, b, spec.receipt);
    const stamps = this.stampPlan(spec, before);
    // The receipt's item: the record's ttl when the write is terminal, else the items' ttl the record keeps (if any).
    const receiptTtl = spec.retention?.ttl ?? (spec.items !== undefined && spec.items.kind !== 'remove' ? spec.items.ttl : undefined);
    const ttl = receiptTtl !== undefined ? { [TTL_ATTRIBUTE]: receiptTtl } : {};
    return {
      items: [
        { Update: { TableName: this.table, Key: key, ...b.render() } },
        ...(inside ? [] : [{ Put: this.receiptPut(spec.tenant_id, spec.transaction_id, spec.receipt, ttl) }]),
        ...stamps.atomic,
      ],
      refuse: (at, old) => (at === 0 ? refuse(old) : { error: stateConflict(spec, undefined, 'receipt_exists') }),
      race,
      written: async (image) => {
        // Sent alone (the receipt inside, nothing stamped): one UpdateItem, whose new image is the stored item.
        if (image !== undefined) {
          this.images.remember(image);
          return toRecord(image);
        }
        const computed = before !== undefined ? b.applyTo(before) : undefined;
        if (computed !== undefined && !this.verifyImages) {
          this.images.remember(computed);
          return toRecord(structuredClone(computed));
        }
        // TransactWriteItems returns no item image: read the record back strongly
        // consistently. Its revision is >= the one this write produced.
        const stored = await this.readBackItem(spec);
        const after = toRecord(stored);
        if (computed !== undefined && after.revision === spec.expected_revision + 1) {
          // The computed image is the stored item: its record, and every receipt inside it the image can show.
          const shown = (i: Item) => canonicalJson(insideReceiptsOf(i).filter((r) => r.receipt.seq >= unseenBelow(computed)) as unknown as JsonObject);
          const expected = canonicalJson(toRecord(computed) as unknown as JsonObject);
          if (canonicalJson(after as unknown as JsonObject) !== expected || shown(stored) !== shown(computed)) {
            throw new AipError('internal.unexpected', 'The locally computed transaction image differs from the stored item', {
              details: { transaction_id: spec.transaction_id, operation: spec.operation },
            });
          }
        }
        return after;
      },
      // The items the atomic write cannot hold: a stamp the journal decided only raises their ttl (the record's new
      // one is later than what they hold) and a removal only keeps them longer, so both are done before the write,
      // where a crash in between leaves an item kept longer, never one expiring before its record. A record written
      // before `items_ttl` is stamped after the write, as before (its items hold no ttl: stamped early, they could
      // expire while the record stays open if the write were refused).
      ...(stamps.after.length === 0
        ? {}
        : spec.items !== undefined
          ? { before: () => this.stampOverflow(spec, stamps.after) }
          : { after: () => this.stampOverflow(spec, stamps.after) }),
    };
  }

  /**
   * Whether a write appending `append` takes it inside the record item (`receipt<seq>`, set on `b`): only with a
   * pre-image, when the record item after the write stays within INSIDE_RECORD_CAP_BYTES. With the stored image the
   * adapter knows, the size is exact; with one built from a record (`held`), it is estimated as the creation would
   * store that record, plus what the receipts inside it cannot show (`unseenAllowance`). Without a pre-image (or
   * one the update cannot be replayed on), the receipt is its own item, as before.
   */
  private takesReceiptInside(before: Item | undefined, b: UpdateBuilder, append: ReceiptAppend): boolean {
    if (before === undefined) return false;
    const fromRecord = before[IMAGE_WITHOUT_ITEM] !== undefined;
    const stored = fromRecord ? storedRecordItem(before as unknown as TransactionRecord, itemAttributesBeside(before)) : before;
    const after = b.applyTo(withoutMarks(stored));
    if (after === undefined) return false;
    const attribute = receiptAttribute(append.receipt.seq);
    const body = insideBody(append);
    const size = itemSize({ ...after, [attribute]: body }) + (fromRecord ? unseenAllowance(before) : 0);
    if (size > INSIDE_RECORD_CAP_BYTES) return false;
    b.set(attribute, body);
    return true;
  }

  /** The record's item as stored after a write (strongly consistent), learned as `get` learns it. */
  private async readBackItem(spec: CasSpec): Promise<Item> {
    let item: Item | undefined;
    try {
      const out = await this.client.send(
        new GetCommand({ TableName: this.table, Key: keys.transaction(spec.tenant_id, spec.transaction_id), ConsistentRead: true }),
      );
      item = out.Item;
    } catch (err) {
      throw mapStoreError(err);
    }
    if (item === undefined) {
      this.images.forget(spec.tenant_id, spec.transaction_id);
      throw new AipError('internal.unexpected', 'transaction vanished after a successful write');
    }
    this.images.remember(item);
    return item;
  }

  private async readBack(spec: CasSpec): Promise<TransactionRecord> {
    const after = await this.readTransaction(spec.tenant_id, spec.transaction_id);
    if (after === undefined) throw new AipError('internal.unexpected', 'transaction vanished after a successful write');
    return after;
  }

  /** Index and lease maintenance for a write that lands in `to` with the record's own status index entry. */
  private landIn(b: UpdateBuilder, tenant: string, txn: string, to: TransactionStatus, time: string, escalated = false): void {
    b.set('status', to);
    if (isTerminalStatus(to)) {
      b.remove('GSI3PK', 'GSI3SK', 'next_reconcile_at', 'escalated_at');
    } else {
      const idx = statusIndex(to, tenant, txn, time, escalated);
      b.set('GSI3PK', idx.GSI3PK).set('GSI3SK', idx.GSI3SK);
    }
    // The entry is the record's own again (or gone): no entry time kept from an earlier status's entry.
    b.remove(STATUS_ENTERED_ATTRIBUTE);
    if (!isAttemptStatus(to)) b.remove('lease_owner', 'lease_expires_at');
  }

  /**
   * A write that moves the record on within its episode (STATUS_INDEX_EPISODES: `planned → committing`,
   * `outcome_unknown → reconciling`, both attempt statuses): the index entry stays as it is, so the write
   * costs no index write unit, and the record stores when it entered `to` for the listings of `to`.
   */
  private keepEntry(b: UpdateBuilder, to: TransactionStatus, time: string): void {
    b.set('status', to);
    b.set(STATUS_ENTERED_ATTRIBUTE, time);
  }

  /**
   * Whether a begin_reconcile may keep the record's `outcome_unknown` entry: only when the record as it is at
   * the expected revision (the image this adapter last read or wrote, else the `held` record the step read; the
   * write is conditioned on that revision) is not escalated and was due by `iso`. Its entry is then a
   * non-escalated one whose sort time (`next_reconcile_at`) is at or before the begin, which the `reconciling`
   * listing's time bound needs. Otherwise (no known image, a reconciliation begun early or of an escalated
   * record) the entry moves to `reconciling` as before.
   */
  private keepsOutcomeUnknownEntry(input: TransitionInput, held: TransactionRecord | undefined, iso: string): boolean {
    const pre: Item | TransactionRecord | undefined =
      this.images.recall(input.tenant_id, input.transaction_id, input.expected_revision) ??
      (held !== undefined && held.revision === input.expected_revision && held.tenant_id === input.tenant_id && held.transaction_id === input.transaction_id
        ? held
        : undefined);
    if (pre === undefined || pre.status !== 'outcome_unknown' || pre.escalated_at !== undefined) return false;
    return typeof pre.next_reconcile_at === 'string' && pre.next_reconcile_at <= iso;
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

  private claimPlanUpdate(input: ClaimPlanInput): CasUpdate {
    checkRef(input);
    checkId('plan_id', input.plan_id);
    checkId('commit_action_id', input.commit_action_id);
    checkJson('data', input.data, true);
    checkLease(input.lease, 'committing');
    checkReceipt(input.receipt, input.transaction_id, input.expected_revision + 1, false);
    const now = this.clock();
    const iso = now.toISOString();
    const b = new UpdateBuilder(PACKED);
    const spec: CasSpec = {
      operation: 'claim_plan',
      tenant_id: input.tenant_id,
      transaction_id: input.transaction_id,
      from: ['planned'],
      expected_revision: input.expected_revision,
      ...(input.receipt ? { receipt: input.receipt } : {}),
      ...itemsOf(input),
      classifyAfter: (old) => (old.plan_id !== input.plan_id ? stateConflict(spec, old, 'plan_mismatch') : undefined),
    };
    checkFrom('claim_plan', spec.from, 'committing');
    b.condition(`${b.n('plan_id')} = ${b.v(input.plan_id)}`);
    // The claimed plan keeps its `planned` entry (its sort time, the plan's creation, is before the claim).
    this.keepEntry(b, 'committing', iso);
    b.set('action_id', input.commit_action_id);
    // A record written before the byAction index was retired leaves it here (no index write when it has no entry).
    b.remove('GSI2PK', 'GSI2SK');
    this.grantLease(b, input.lease, now);
    // The commit's context repeats the key and the plan ID (conditioned above): stored as a marker.
    b.mergeData(leanTransactionData(input.data, { transaction_id: input.transaction_id, plan_id: input.plan_id }));
    return { spec, b, now };
  }

  /** Validates a generic transition and builds its update (without the common CAS conditions). */
  private transitionUpdate(input: TransitionInput, held?: TransactionRecord): CasUpdate {
    const checked = checkTransition(input);
    const { patch, cursor, ref } = checked;
    let nextReconcileAt = checked.nextReconcileAt;

    const now = this.clock();
    const retention = isTerminalStatus(input.to) ? retentionOf(input.retention, now) : undefined;
    const iso = now.toISOString();
    const tenant = input.tenant_id;
    const txn = input.transaction_id;
    const b = new UpdateBuilder(PACKED);
    const spec: CasSpec = {
      operation: input.operation,
      tenant_id: tenant,
      transaction_id: txn,
      from: [...input.from],
      expected_revision: input.expected_revision,
      ...(input.receipt ? { receipt: input.receipt } : {}),
      ...(ref ? { classifyFirst: providerConflict(txn, ref) } : {}),
      ...(retention !== undefined ? { retention } : {}),
      ...itemsOf(input),
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
    } else if (input.operation === 'begin_reconcile' && this.keepsOutcomeUnknownEntry(input, held, iso)) {
      this.keepEntry(b, input.to, iso);
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
    // The result is stored once: either on the record, or on the action the reference names (never both).
    if (patch.result_ref !== undefined) {
      // The reference names the record's own bound action (the runtime names no other: settlement.ts `storedOnce`),
      // so it is stored as the marker `true` and rebuilt from `action_id` on read (./derived-attributes.ts); the
      // condition makes a reference to any other action a refusal, never a marker that reads as the wrong action.
      b.condition(`${b.n('action_id')} = ${b.v(patch.result_ref)}`);
      b.set('result_ref', true).remove('result');
    } else if (patch.result !== undefined) b.set('result', patch.result).remove('result_ref');
    b.set('reconciliation_cursor', cursor);
    this.grantLease(b, input.lease, now);
    // A terminal settlement's result is final: the reconcile's answer and evidence that repeat it are stored as markers.
    const finalResult = isTerminalStatus(input.to) && patch.result_ref === undefined ? patch.result : undefined;
    // A terminal settlement by reference is conditioned on the record's action_id being the reference (above): that
    // action is final, and the last attempt's action ID that repeats it is stored as a marker too.
    const finalAction = isTerminalStatus(input.to) ? patch.result_ref : undefined;
    b.mergeData(
      isTerminalStatus(input.to)
        ? leanTransactionData(input.data, { transaction_id: txn, result: finalResult, final_action_id: finalAction, final_status: input.to })
        : input.data,
    );
    return { spec, b, now };
  }

  private settleAsTransition(input: SettleInput): TransitionInput {
    if (input === null || typeof input !== 'object') throw invalid('transaction.invalid_record', 'input must be an object');
    if (!isTransactionStatus(input.to)) throw invalid('transaction.invalid_record', 'unknown target status', { field: 'to' });
    const from = input.from ?? allowedFrom('settle', input.to).filter((s): s is TransactionStatus => s !== null);
    const patch: TransitionPatch = compact({
      error: input.error,
      result: input.result,
      result_ref: input.result_ref,
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
      items: input.items,
    }) as TransitionInput;
  }

  private checkpointUpdate(input: CheckpointProviderOperationInput): CasUpdate {
    checkRef(input);
    const ref = checkProviderOperation(input.provider_operation);
    const cursor = checkCursor(input.reconciliation_cursor);
    checkJson('data', input.data, true);
    const from = input.from ?? ATTEMPT_STATUSES;
    checkFrom('checkpoint', from, 'self');
    checkReceipt(input.receipt, input.transaction_id, input.expected_revision + 1, false);
    const now = this.clock();
    const b = new UpdateBuilder(PACKED);
    const spec: CasSpec = {
      operation: 'checkpoint',
      tenant_id: input.tenant_id,
      transaction_id: input.transaction_id,
      from: [...from],
      expected_revision: input.expected_revision,
      ...(input.receipt ? { receipt: input.receipt } : {}),
      ...itemsOf(input),
      classifyFirst: providerConflict(input.transaction_id, ref),
    };
    this.providerOperationGuard(b, ref);
    b.set('reconciliation_cursor', cursor);
    b.mergeData(input.data);
    return { spec, b, now };
  }

  private leaseUpdate(input: AcquireLeaseInput): CasUpdate {
    checkRef(input);
    checkLease({ owner: input.owner, ttl_ms: input.ttl_ms }, undefined);
    checkJson('data', input.data, true);
    const from = input.from ?? ATTEMPT_STATUSES;
    checkFrom('lease', from, 'self');
    checkReceipt(input.receipt, input.transaction_id, input.expected_revision + 1, false);
    const now = this.clock();
    const iso = now.toISOString();
    const b = new UpdateBuilder(PACKED);
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
            details: {
              transaction_id: input.transaction_id,
              ...currentOf(old),
              lease_owner: old.lease_owner,
              lease_expires_at: expires,
              fence: old.fence ?? 0,
            },
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
      if (out.Item === undefined) this.images.forget(tenant, txn);
      else this.images.remember(out.Item);
      return out.Item ? toRecord(out.Item) : undefined;
    } catch (err) {
      throw mapStoreError(err);
    }
  }

  /**
   * The table and key of a transaction item for the attempt read (lib/aws/dynamo/attempt-reads.ts);
   * undefined when `get` would refuse the IDs (the caller then reads through `get`).
   */
  readKey(tenant_id: string, transaction_id: string): { readonly table: string; readonly key: { PK: string; SK: string } } | undefined {
    return isId(tenant_id) && isId(transaction_id) ? { table: this.table, key: keys.transaction(tenant_id, transaction_id) } : undefined;
  }

  /** The record of a transaction item read strongly consistently by a composite read (undefined: absent); learned as `get` learns it. */
  recordOf(tenant_id: string, transaction_id: string, item: Item | undefined): TransactionRecord | undefined {
    if (item === undefined) {
      this.images.forget(tenant_id, transaction_id);
      return undefined;
    }
    this.images.remember(item);
    return toRecord(item);
  }

  /** The transaction ID the action item of `action_id` names (strongly consistent), if the item exists and names one. */
  private async transactionOfAction(tenant: string, action_id: string): Promise<string | undefined> {
    try {
      const out = await this.client.send(
        new GetCommand({
          TableName: this.table,
          Key: keys.action(tenant, action_id),
          ProjectionExpression: '#t',
          ExpressionAttributeNames: { '#t': 'transaction_id' },
          ConsistentRead: true,
        }),
      );
      const txn = out.Item?.transaction_id;
      return typeof txn === 'string' ? txn : undefined;
    } catch (err) {
      throw mapStoreError(err);
    }
  }

  async get(selector: TransactionSelector): Promise<TransactionRecord | undefined> {
    const { tenant, field, value } = checkSelector(selector);

    if (field === 'transaction_id') return this.readTransaction(tenant, value);

    if (field === 'plan_id') {
      try {
        // A plan ID names at most one record: a record is created with its plan ID and that ID's plan_ref guard in one
        // write, conditioned on the guard not existing, and never takes another plan ID. So when the ID has the
        // runtime's default form `plan:<transaction_id>` (lib/runtime/modes/preview.ts) and the record of that ID
        // holds this plan ID, it is the record the guard names: one read instead of two. Any other ID (a caller's
        // own), or a record that does not hold it, is looked up through the guard as before.
        const named = value.startsWith(PLAN_ID_PREFIX) ? value.slice(PLAN_ID_PREFIX.length) : undefined;
        if (named !== undefined && isId(named)) {
          const direct = await this.readTransaction(tenant, named);
          if (direct?.plan_id === value) return direct;
        }
        // The plan_ref uniqueness item, read strongly consistently.
        const out = await this.client.send(new GetCommand({ TableName: this.table, Key: keys.planRef(tenant, value), ConsistentRead: true }));
        const txn = out.Item?.transaction_id;
        if (typeof txn !== 'string') return undefined;
        const record = await this.readTransaction(tenant, txn);
        return record?.plan_id === value ? record : undefined;
      } catch (err) {
        throw mapStoreError(err);
      }
    }

    // action_id: the action item names its transaction (one consistent read of one attribute), then the record is
    // read and its binding re-checked (a planning action's record is bound to the commit action after claim_plan).
    const bound = await this.transactionOfAction(tenant, value);
    if (bound !== undefined) {
      const record = await this.readTransaction(tenant, bound);
      return record?.action_id === value ? record : undefined;
    }
    // Records written before the byAction index was retired, whose action item names no transaction: the index.
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
      this.images.remember(out.Item);
      return out.Item ? toRecord(out.Item) : undefined;
    } catch (err) {
      throw mapStoreError(err);
    }
  }

  async listByStatus(query: ListByStatusQuery): Promise<Page<TransactionRecord>> {
    try {
      // Every write shard of the status and the legacy unsharded partition, merged in index order (./status-listing.ts).
      return await listStatusIndex(this.client, this.table, query, (entries) => this.batchRead(entries), this.scanBudget);
    } catch (err) {
      throw mapStoreError(err);
    }
  }

  /**
   * Several listings read together (the operator overview): each as `listByStatus` lists it, one after another, and
   * a Query that an earlier one sent alike (the `outcome_unknown` partitions, which the `reconciling` listing reads
   * for the entries its records keep) is not sent again: its answer is read again (docs/table-design.md, "The
   * overview's listings read together").
   */
  async listByStatuses(queries: readonly ListByStatusQuery[]): Promise<Page<TransactionRecord>[]> {
    const shared = new Map<string, Promise<QueryCommandOutput>>();
    try {
      const pages: Page<TransactionRecord>[] = [];
      // One after another, not at once: as many requests, and less CPU in a cold process (docs/table-design.md).
      for (const query of queries)
        pages.push(await listStatusIndex(this.client, this.table, query, (entries) => this.batchRead(entries), this.scanBudget, shared));
      return pages;
    } catch (err) {
      throw mapStoreError(err);
    }
  }

  /** Strongly consistent reads of the records at `keyList` (keyed `PK|SK`), learned as `get` learns them. */
  private async batchRead(keyList: readonly Item[]): Promise<Map<string, ListedRecord>> {
    const items = await consistentBatchGet(
      this.client,
      this.table,
      keyList.map((k) => ({ PK: k.PK, SK: k.SK })),
    );
    const found = new Map<string, ListedRecord>();
    for (const [key, item] of items) {
      this.images.remember(item);
      found.set(key, listedRecordOf(item, toRecord(item)));
    }
    return found;
  }

  /**
   * A page of the chain in seq order. A receipt is either inside the record item (`receipt<seq>`: the first receipt of
   * a record created with it, and later ones while the record stayed within its cap) or its own `RCPT#` item (one
   * that did not fit, or a chain written before): both read alike, merged in seq order.
   *
   * A page is one strongly consistent Query of the record's partition from the receipt after the cursor (the first
   * receipt item without one) to the record item (`RCPT#…` sorts before `TXN`), one item more than the page: a chain
   * that fits the page comes with its record and the receipts inside it. A page whose Query does not reach the record
   * reads the record's receipts with one GetItem, unless the items it read are the page's receipts without a gap
   * (then no receipt inside can be among them: a chain written before, all items, pages without it). A cursor names
   * the last receipt returned (`RCPT#<seq>`, whether or not that is an item).
   */
  async listReceipts(query: ListReceiptsQuery): Promise<Page<StoredReceipt>> {
    const limit = checkReceiptListing(query);
    const tenant = query.tenant_id;
    const txn = query.transaction_id;
    const base = keys.transaction(tenant, txn);
    const start = decodeCursor('transaction.invalid_listing', query.cursor, ['PK', 'SK']);
    if (start !== undefined && start.PK !== base.PK) throw invalid('transaction.invalid_listing', 'The cursor belongs to another listing', { field: 'cursor' });
    const after = start === undefined ? -1 : receiptSeqOf(start.SK);
    if (after === undefined) throw invalid('transaction.invalid_listing', 'The cursor does not name a receipt', { field: 'cursor' });
    let out;
    try {
      out = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :prefix AND :record',
          ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK' },
          ExpressionAttributeValues: { ':pk': base.PK, ':prefix': keys.receiptPrefix, ':record': base.SK },
          ConsistentRead: true,
          Limit: limit + 1,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
    } catch (err) {
      throw rejectedStartKey(err, 'transaction.invalid_listing', start) ?? mapStoreError(err);
    }
    const found = out.Items ?? [];
    const items = found.filter((i) => typeof i.SK === 'string' && i.SK.startsWith(keys.receiptPrefix)).map(receiptOf);
    const record = found.find((i) => i.SK === base.SK);
    // The Query read every receipt item after the cursor when it reached the record or the partition's end.
    const complete = record !== undefined || out.LastEvaluatedKey === undefined;
    const gapless = items.length >= limit && items.slice(0, limit).every((r, n) => r.receipt.seq === after + 1 + n);
    const holder = record ?? (gapless ? undefined : await this.recordItem(base));
    // Receipts inside the record after the cursor; up to the last item read when the Query stopped short of the record.
    const lastRead = items.length > 0 ? (items[items.length - 1] as StoredReceipt).receipt.seq : after;
    const inside = (holder !== undefined ? insideReceiptsOf(holder) : []).filter((r) => r.receipt.seq > after && (complete || r.receipt.seq < lastRead));
    const chain = [...inside, ...items].sort((a, b) => a.receipt.seq - b.receipt.seq);
    if (chain.length > limit || (!complete && chain.length > 0)) {
      const page = chain.slice(0, limit);
      const last = (page[page.length - 1] as StoredReceipt).receipt.seq;
      return { items: page, cursor: encodeCursor(keys.receipt(tenant, txn, last)) as string };
    }
    return { items: chain };
  }

  /** The record item (strongly consistent), for the receipts inside it, when a page of its chain does not reach it. */
  private async recordItem(key: { PK: string; SK: string }): Promise<Item | undefined> {
    try {
      const out = await this.client.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }));
      return out.Item;
    } catch (err) {
      throw mapStoreError(err);
    }
  }
}
