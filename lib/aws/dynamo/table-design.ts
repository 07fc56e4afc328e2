/**
 * The single-table design, shared by the DynamoDB adapters, the CDK stateful
 * stack, lib/aws/dynamo/create-table.ts and the tests, so they can never
 * disagree. Documented in docs/table-design.md.
 *
 * Pure constants and string builders: no AWS SDK import, so the CDK app can
 * use it too.
 */
export const TABLE_KEYS = { partitionKey: 'PK', sortKey: 'SK' } as const;

/** TTL attribute: epoch seconds. DynamoDB deletes the item some time after. */
export const TTL_ATTRIBUTE = 'ttl' as const;

/**
 * The attribute of a transaction item that holds the first receipt of its chain (seq 0), when the record was
 * created with it and the two fit its write unit (docs/table-design.md, "The first receipt inside the record"):
 * the receipt's body and evidence, packed as one value (./packed-attributes.ts), written once by the record's own
 * conditional creation and never updated. The chain then has no `RCPT#00000000` item; every reader of the chain
 * reads this attribute as seq 0.
 */
export const GENESIS_RECEIPT_ATTRIBUTE = 'receipt0' as const;

/**
 * The attribute of a transaction item that holds the receipt of seq `seq` inside the record (docs/table-design.md,
 * "Receipts inside the record"): `receipt<seq>`, the same packed body as `receipt0` (GENESIS_RECEIPT_ATTRIBUTE),
 * written once by the record's own conditional write that appends it, never updated.
 */
export function receiptAttribute(seq: number): string {
  return `receipt${seq}`;
}

/** The seq of a `receipt<seq>` attribute name (receiptAttribute), undefined for any other name (`receipt_count`, …). */
export function receiptAttributeSeq(name: string): number | undefined {
  const m = /^receipt(0|[1-9][0-9]{0,8})$/.exec(name);
  return m === null ? undefined : Number(m[1]);
}

/**
 * Every GSI projects KEYS_ONLY: a lookup through an index yields the base-table
 * key, and the adapter then reads the item with a strongly consistent
 * GetItem/BatchGetItem, so a compare-and-set revision never comes from an
 * eventually consistent index copy.
 */
export const GSI_PROJECTION = 'KEYS_ONLY' as const;

export const GSIS = {
  // No plan index: lookup by plan ID reads the `plan_ref` uniqueness item
  // (keys.planRef) with a strongly consistent GetItem. (GSI1 is retired.)
  /**
   * Lookup by the action bound to a transaction: PK `ACTION#<tenant>#<action_id>`,
   * SK `<created_at>#<transaction_id>`. The commit action replaces the planning
   * action on claim_plan.
   */
  byAction: { name: 'byAction', partitionKey: 'GSI2PK', sortKey: 'GSI2SK' },
  /**
   * Sparse operator/sweeper index: only non-terminal records carry it.
   * PK `STATUS#<status>#<shard>` (or `STATUS#outcome_unknown#escalated#<shard>`
   * for records parked for a human), the shard one of STATUS_INDEX_SHARDS
   * write shards (keys.statusIndexShard), SK `<iso time>#<tenant>#<transaction_id>`
   * where the time is next_reconcile_at for `outcome_unknown`, otherwise the
   * time the record entered its status. A claimed plan and a due
   * reconciliation keep their `planned` / `outcome_unknown` entry
   * (STATUS_INDEX_EPISODES). A listing reads every shard of a status (and the
   * legacy unsharded partition `STATUS#<status>`; for `committing` and
   * `reconciling` those of the status whose entry they keep too) and merges
   * them by SK; the sweeper lists `outcome_unknown` with SK <= now.
   */
  byStatus: { name: 'byStatus', partitionKey: 'GSI3PK', sortKey: 'GSI3SK' },
  /**
   * Sparse expiry index across tenants: only pending approvals carry it. PK
   * `EXPIRY#approval#<shard>` (APPROVAL_EXPIRY_SHARDS write shards, read
   * merged with the legacy `EXPIRY#approval`), SK
   * `<expires_at>#<tenant>#<approval_id>`. The sweeper
   * expires every tenant's overdue approvals from it, tenants named in no
   * configuration included (the byStatus partition of approvals is per tenant,
   * for the tenant's own listing).
   */
  byExpiry: { name: 'byExpiry', partitionKey: 'GSI4PK', sortKey: 'GSI4SK' },
} as const;

/** Every key attribute (all strings), for CreateTable's AttributeDefinitions. */
export const KEY_ATTRIBUTES = [TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey, ...Object.values(GSIS).flatMap((g) => [g.partitionKey, g.sortKey])] as const;

/** The `item_type` attribute of every item. */
export const ITEM_TYPES = {
  transaction: 'transaction',
  receipt: 'receipt',
  /** Uniqueness guard: one plan ID per tenant maps to one transaction. */
  planRef: 'plan_ref',
  // Runtime stores (lib/aws/dynamo/{action,idempotency,approval,stream,route}-store.ts).
  action: 'action',
  idempotency: 'idempotency',
  approval: 'approval',
  streamChunk: 'stream_chunk',
  routeAssignment: 'route_assignment',
} as const;

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** The item kind a sort key names (the `item_type` items written before the lean item model carry). */
function itemTypeOf(sk: string): string | undefined {
  if (sk === 'ACTION') return ITEM_TYPES.action;
  if (sk === 'TXN') return ITEM_TYPES.transaction;
  if (sk.startsWith('RCPT#')) return ITEM_TYPES.receipt;
  if (sk === 'IDEM') return ITEM_TYPES.idempotency;
  if (sk === 'ROUTE') return ITEM_TYPES.routeAssignment;
  if (sk.startsWith('CHUNK#')) return ITEM_TYPES.streamChunk;
  if (sk === 'APPROVAL') return ITEM_TYPES.approval;
  if (sk === 'PLAN') return ITEM_TYPES.planRef;
  return undefined;
}

/** The 8-digit sequence after `prefix` in a sort key, if it is one. */
function seqOf(sk: string, prefix: string): number | undefined {
  if (!sk.startsWith(prefix)) return undefined;
  const digits = sk.slice(prefix.length);
  return /^\d{8}$/.test(digits) ? Number(digits) : undefined;
}

/**
 * The attributes an item's key already holds: the inverse of `keys` below. Items are written without
 * them (the lean item model, docs/table-design.md "Key attributes not stored again"): `tenant_id` and
 * the item's own ID (`action_id`, `transaction_id`, `approval_id`, `plan_id`; `principal_id` and
 * `key_hash` of a reservation), a receipt's or stream chunk's `seq`, and `item_type`. Unknown keys
 * give nothing. IDs never contain `#` (the protocol ID pattern), so the split is exact.
 */
export function keyAttributes(item: { readonly PK?: unknown; readonly SK?: unknown }): Record<string, string | number> {
  if (typeof item.PK !== 'string' || typeof item.SK !== 'string') return {};
  const [type, tenant, id, rest, ...extra] = item.PK.split('#');
  if (tenant === undefined || id === undefined || extra.length > 0) return {};
  const out: Record<string, string | number> = { tenant_id: tenant };
  const itemType = itemTypeOf(item.SK);
  if (itemType !== undefined) out.item_type = itemType;
  if (type === 'IDEM') {
    if (rest === undefined) return {};
    out.principal_id = id;
    out.key_hash = rest;
    return out;
  }
  if (rest !== undefined) return {};
  if (type === 'ACTION') out.action_id = id;
  else if (type === 'TXN') out.transaction_id = id;
  else if (type === 'APPROVAL') out.approval_id = id;
  else if (type === 'PLAN') out.plan_id = id;
  else return {};
  const seq = seqOf(item.SK, 'RCPT#') ?? seqOf(item.SK, 'CHUNK#');
  if (seq !== undefined) out.seq = seq;
  return out;
}

/**
 * An item read with the attributes its key holds filled in. Migrate on read: an item written before
 * the lean item model still carries them, and its stored values are kept (they equal the key's).
 */
export function withKeyAttributes<T extends { readonly PK?: unknown; readonly SK?: unknown }>(item: T): T & Record<string, unknown> {
  return { ...keyAttributes(item), ...item };
}

/**
 * Write shards of the byStatus index per status. Every admission puts its
 * record into the index and settlement deletes it, so a single `STATUS#<status>`
 * partition would take every tenant's traffic (one index partition absorbs about
 * 1,000 writes a second). The shard of a record is a hash of its tenant and
 * transaction ID, so one tenant's traffic spreads over every shard too; a
 * listing reads all of them. The count may be raised, never lowered (a lower
 * count would stop reading the upper shards). docs/table-design.md, "byStatus".
 */
export const STATUS_INDEX_SHARDS = 32;

/** FNV-1a (32 bit) of a string's UTF-16 code units: stable, dependency free, well spread for the shard choice. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * Write shards of the byExpiry index: every approval request puts its entry and
 * its decision or expiry deletes it, across tenants, so a single
 * `EXPIRY#approval` partition would cap approval-gated actions near 500 a
 * second. Same rules as STATUS_INDEX_SHARDS.
 */
export const APPROVAL_EXPIRY_SHARDS = 32;

function statusPartition(status: string, escalated: boolean): string {
  return escalated ? `STATUS#${status}#escalated` : `STATUS#${status}`;
}

/**
 * One byStatus entry per episode (docs/table-design.md, "`byStatus`", "One entry per episode"): a record
 * that moves on within the episode its entry began keeps that entry, so the move writes nothing to the
 * index. A claimed plan (`committing`) stays under its `planned` entry (sort time: the plan's creation), a
 * reconciliation begun when due (`reconciling`) under its `outcome_unknown` entry (sort time: the
 * `next_reconcile_at` it was due at). Both sort times are at or before the time the record entered the
 * later status, which it stores in `STATUS_ENTERED_ATTRIBUTE`: a listing of the later status reads the
 * earlier status's partitions with the same time bound and keeps the records in its status whose entry
 * time is within it. Keys: the later status; values: the status whose entry it keeps.
 */
export const STATUS_INDEX_EPISODES: Readonly<Record<string, string>> = Object.freeze({ committing: 'planned', reconciling: 'outcome_unknown' });

/**
 * When a record kept an earlier status's byStatus entry (STATUS_INDEX_EPISODES), the time (RFC 3339) it
 * entered its current status; every write that sets the record's own entry removes it. Not a record
 * field: the index's bookkeeping, read by the status listing only.
 */
export const STATUS_ENTERED_ATTRIBUTE = 'entered_at' as const;

/** `base#00` .. `base#<count - 1>`. */
function shardKey(base: string, shard: number): string {
  return `${base}#${pad(shard, 2)}`;
}

/** The legacy unsharded partition `base`, then every shard of it. */
function partitionsOf(base: string, count: number): string[] {
  return [base, ...Array.from({ length: count }, (_, shard) => shardKey(base, shard))];
}

const APPROVAL_EXPIRY_PARTITION = 'EXPIRY#approval';

/** Key builders. IDs never contain '#': the protocol ID pattern forbids it. */
export const keys = {
  transaction: (tenant: string, transactionId: string) => ({ PK: `TXN#${tenant}#${transactionId}`, SK: 'TXN' }),
  /** Receipts live in the transaction's partition, ordered by chain sequence. */
  receipt: (tenant: string, transactionId: string, seq: number) => ({
    PK: `TXN#${tenant}#${transactionId}`,
    SK: `RCPT#${pad(seq, 8)}`,
  }),
  receiptPrefix: 'RCPT#',
  planRef: (tenant: string, planId: string) => ({ PK: `PLAN#${tenant}#${planId}`, SK: 'PLAN' }),
  actionIndex: (tenant: string, actionId: string) => `ACTION#${tenant}#${actionId}`,
  actionIndexSort: (createdAt: string, transactionId: string) => `${createdAt}#${transactionId}`,
  /** The byStatus partition key of a record in `status` on write shard `shard` (keys.statusIndexShard). */
  statusIndex: (status: string, escalated: boolean, shard: number) => shardKey(statusPartition(status, escalated), shard),
  /** The write shard of a transaction: 0 .. STATUS_INDEX_SHARDS - 1. */
  statusIndexShard: (tenant: string, transactionId: string) => fnv1a(`${tenant}#${transactionId}`) % STATUS_INDEX_SHARDS,
  /**
   * The unsharded partition key every record in `status` was written under
   * before the index was sharded. Listings still read it (records written by
   * an earlier version stay there until their next status change), and it
   * names the listing in a store cursor.
   */
  statusIndexLegacy: (status: string, escalated = false) => statusPartition(status, escalated),
  /** Every partition of `status`'s own entries: the legacy one, then each shard. */
  statusIndexPartitions: (status: string, escalated = false) => partitionsOf(statusPartition(status, escalated), STATUS_INDEX_SHARDS),
  /**
   * Every partition a listing of `status` reads: its own (keys.statusIndexPartitions), then, for a status
   * whose records may keep an earlier status's entry (STATUS_INDEX_EPISODES), that status's.
   */
  statusListingPartitions: (status: string, escalated = false) => {
    const own = partitionsOf(statusPartition(status, escalated), STATUS_INDEX_SHARDS);
    const kept = escalated ? undefined : STATUS_INDEX_EPISODES[status];
    return kept === undefined ? own : [...own, ...partitionsOf(statusPartition(kept, false), STATUS_INDEX_SHARDS)];
  },
  /** Whether the byStatus partition key `pk` is one of `status`'s own (legacy or sharded), not an entry kept from an earlier status. */
  isOwnStatusEntry: (pk: unknown, status: string, escalated = false) => {
    const base = statusPartition(status, escalated);
    return typeof pk === 'string' && (pk === base || (pk.startsWith(`${base}#`) && /^\d\d$/.test(pk.slice(base.length + 1))));
  },
  statusIndexSort: (time: string, tenant: string, transactionId: string) => `${time}#${tenant}#${transactionId}`,

  // --- runtime stores (documented in docs/table-design.md) ------------------
  action: (tenant: string, actionId: string) => ({ PK: `ACTION#${tenant}#${actionId}`, SK: 'ACTION' }),
  /** Idempotency keys may contain `#`: the key component is their sha256 hex. */
  idempotency: (tenant: string, principalId: string, keyHash: string) => ({ PK: `IDEM#${tenant}#${principalId}#${keyHash}`, SK: 'IDEM' }),
  approval: (tenant: string, approvalId: string) => ({ PK: `APPROVAL#${tenant}#${approvalId}`, SK: 'APPROVAL' }),
  streamChunk: (tenant: string, actionId: string, seq: number) => ({ PK: `ACTION#${tenant}#${actionId}`, SK: `CHUNK#${pad(seq, 8)}` }),
  routeAssignment: (tenant: string, actionId: string) => ({ PK: `ACTION#${tenant}#${actionId}`, SK: 'ROUTE' }),
  streamChunkPrefix: 'CHUNK#',
  /** Largest stream seq the 8-digit sort key holds. */
  maxStreamSeq: 99_999_999,
  /**
   * Pending approvals in the sparse byStatus index (GSI3), one partition per
   * tenant: GSI3PK `APPROVAL#pending#<tenant>`, GSI3SK `<expires_at>#<approval_id>`.
   * Never collides with the transaction entries (`STATUS#...`).
   */
  approvalPendingIndex: (tenant: string) => `APPROVAL#pending#${tenant}`,
  approvalPendingIndexSort: (expiresAt: string, approvalId: string) => `${expiresAt}#${approvalId}`,
  /**
   * Pending approvals of every tenant in the sparse byExpiry index (GSI4), oldest
   * expiry first: GSI4PK `EXPIRY#approval#<shard>`, the shard a hash of tenant
   * and approval ID (as the status index's).
   */
  approvalExpiryIndex: (shard: number) => shardKey(APPROVAL_EXPIRY_PARTITION, shard),
  approvalExpiryIndexShard: (tenant: string, approvalId: string) => fnv1a(`${tenant}#${approvalId}`) % APPROVAL_EXPIRY_SHARDS,
  /** The partition every pending approval was written under before the sharding; it names the listing in a store cursor. */
  approvalExpiryIndexLegacy: APPROVAL_EXPIRY_PARTITION,
  /** Every partition the expiry listing reads: the legacy one, then each shard. */
  approvalExpiryIndexPartitions: () => partitionsOf(APPROVAL_EXPIRY_PARTITION, APPROVAL_EXPIRY_SHARDS),
  approvalExpiryIndexSort: (expiresAt: string, tenant: string, approvalId: string) => `${expiresAt}#${tenant}#${approvalId}`,
} as const;
