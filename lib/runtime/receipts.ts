/**
 * Transaction receipts: building the next link of a transaction's hash chain
 * and verifying a chain.
 *
 * A receipt's `hash` is sha256 over the canonical JSON (RFC 8785) of every
 * other receipt field (`receiptHash`, lib/protocol/canonical.ts); `prev_hash`
 * is the previous receipt's hash, GENESIS_RECEIPT_HASH for seq 0. The
 * transaction store appends a receipt in the same atomic write as the
 * transition it describes and only when it extends the stored head
 * (`receipt_count`, `receipt_head`), so a stored chain never forks.
 *
 * `verifyReceiptChain` detects any altered, removed or reordered receipt in
 * the presented list. Removing the LAST receipt (or altering it and
 * recomputing its hash) leaves a shorter chain that is internally consistent;
 * pass the record's anchor (`receipt_count`, `receipt_head`) to detect that
 * too. See docs/runtime-stores.md.
 */
import { GENESIS_RECEIPT_HASH, ReceiptSchema, receiptHash, type JsonValue, type Receipt, type TransactionProtocolStatus } from '../protocol/index.js';
import type { ReceiptAppend } from '../transactions/record.js';

/** The chain tip a new receipt extends (a transaction record has these fields). */
export interface ReceiptChainTip {
  readonly transaction_id: string;
  /** Number of receipts so far = the next receipt's seq. */
  readonly receipt_count: number;
  /** Hash of the last receipt; absent for an empty chain. */
  readonly receipt_head?: string;
  /** The record's current revision (the write will produce revision + 1). */
  readonly revision: number;
}

export interface BuildReceiptInput {
  /**
   * The record the write changes (its tip). Omit for the first receipt of a
   * record being created, and give `transaction_id` instead.
   */
  readonly record?: ReceiptChainTip;
  /** Alternatively, the previous receipt (seq and hash). */
  readonly prev?: Pick<Receipt, 'seq' | 'hash'>;
  /** Required when `record` is absent. */
  readonly transaction_id?: string;
  /** The wire status the transition lands in. */
  readonly status: TransactionProtocolStatus;
  /**
   * The revision the write produces. Default: record.revision + 1, or 1 when
   * there is no record (creation).
   */
  readonly revision?: number;
  /** Event name, e.g. `transaction.planned` (lower-case dotted). */
  readonly event: string;
  readonly at: string | Date;
  /** Optional redacted evidence stored beside the receipt (not hashed). */
  readonly evidence?: JsonValue;
}

/** Builds the receipt (hash included) that extends the given tip. */
export function buildReceipt(input: BuildReceiptInput): ReceiptAppend {
  const transaction_id = input.record?.transaction_id ?? input.transaction_id;
  if (transaction_id === undefined) throw new TypeError('buildReceipt needs record or transaction_id');
  let seq: number;
  let prev_hash: string;
  if (input.record !== undefined) {
    seq = input.record.receipt_count;
    prev_hash = input.record.receipt_head ?? GENESIS_RECEIPT_HASH;
  } else if (input.prev !== undefined) {
    seq = input.prev.seq + 1;
    prev_hash = input.prev.hash;
  } else {
    seq = 0;
    prev_hash = GENESIS_RECEIPT_HASH;
  }
  const revision = input.revision ?? (input.record !== undefined ? input.record.revision + 1 : 1);
  const at = typeof input.at === 'string' ? input.at : input.at.toISOString();
  const body = { seq, transaction_id, status: input.status, revision, at, prev_hash, event: input.event };
  const receipt: Receipt = { ...body, hash: receiptHash(body) };
  return input.evidence === undefined ? { receipt } : { receipt, evidence: input.evidence };
}

export type ReceiptChainProblem = 'altered' | 'removed' | 'reordered' | 'broken_link';

export type ReceiptChainVerdict =
  | { readonly valid: true; readonly count: number; readonly head?: string }
  | { readonly valid: false; readonly problem: ReceiptChainProblem; readonly at_seq: number };

export interface VerifyReceiptChainOptions {
  /** Every receipt must name this transaction. */
  readonly transaction_id?: string;
  /** The record's receipt_count: detects removal of trailing receipts. */
  readonly expected_count?: number;
  /** The record's receipt_head: detects a rewritten (re-hashed) last receipt. */
  readonly expected_head?: string;
}

/**
 * Verifies a receipt chain presented in order (seq 0 first). Checks, for each
 * position i: the receipt is well formed and its hash is its own
 * (`altered`); its seq is i (`removed` when receipt i is missing, `reordered`
 * when it appears elsewhere); its prev_hash is the previous hash
 * (`broken_link`); revisions strictly grow (`reordered`). Then the optional
 * anchor: fewer receipts than expected_count is `removed`, a head other
 * than expected_head is `altered`.
 */
export function verifyReceiptChain(receipts: readonly unknown[], options: VerifyReceiptChainOptions = {}): ReceiptChainVerdict {
  const seqs = receipts.map((r) => (r !== null && typeof r === 'object' && typeof (r as { seq?: unknown }).seq === 'number' ? (r as { seq: number }).seq : -1));
  let prevHash = GENESIS_RECEIPT_HASH;
  let prevRevision = -1;
  for (let i = 0; i < receipts.length; i++) {
    const parsed = ReceiptSchema.safeParse(receipts[i]);
    if (!parsed.success) return { valid: false, problem: 'altered', at_seq: i };
    const r = parsed.data;
    const { hash, ...body } = r;
    if (receiptHash(body) !== hash) return { valid: false, problem: 'altered', at_seq: i };
    if (options.transaction_id !== undefined && r.transaction_id !== options.transaction_id) return { valid: false, problem: 'altered', at_seq: i };
    if (i > 0 && r.transaction_id !== (receipts[0] as Receipt).transaction_id) return { valid: false, problem: 'altered', at_seq: i };
    if (r.seq !== i) {
      // Receipt i appears later (or r went backwards): the order changed. Otherwise i is gone.
      const elsewhere = seqs.indexOf(i, i + 1) !== -1;
      return { valid: false, problem: elsewhere || r.seq < i ? 'reordered' : 'removed', at_seq: i };
    }
    if (r.prev_hash !== prevHash) return { valid: false, problem: 'broken_link', at_seq: i };
    if (r.revision <= prevRevision) return { valid: false, problem: 'reordered', at_seq: i };
    prevHash = hash;
    prevRevision = r.revision;
  }
  if (options.expected_count !== undefined && receipts.length < options.expected_count) {
    return { valid: false, problem: 'removed', at_seq: receipts.length };
  }
  if (options.expected_count !== undefined && receipts.length > options.expected_count) {
    return { valid: false, problem: 'altered', at_seq: options.expected_count };
  }
  const head = receipts.length === 0 ? undefined : prevHash;
  if (options.expected_head !== undefined && head !== options.expected_head) {
    return { valid: false, problem: 'altered', at_seq: Math.max(0, receipts.length - 1) };
  }
  return head === undefined ? { valid: true, count: 0 } : { valid: true, count: receipts.length, head };
}
