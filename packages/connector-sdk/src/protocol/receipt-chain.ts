/**
 * Receipt-chain verification with no Node.js import, shared by the runtime
 * (lib/runtime/receipts.ts), the `aip verify` CLI and the operator console
 * in the browser (WebCrypto). The caller supplies SHA-256; everything else
 * (canonical JSON, the hashed fields, the checks) is here, once.
 *
 * A chain verifies when, for each position i: the receipt is well formed and
 * its hash is its own (`altered`); its seq is i (`removed` when receipt i is
 * missing, `reordered` when it appears elsewhere); its prev_hash is the
 * previous hash (`broken_link`); revisions strictly grow (`reordered`).
 * Then the optional anchor: fewer receipts than `expected_count` is
 * `removed` (a truncated chain), a head other than `expected_head` is
 * `altered`; and an optional `result` must match the digest of the receipt
 * that recorded it (`result_mismatch`).
 */
import { canonicalJson } from './jcs.js';
import { GENESIS_RECEIPT_HASH, ReceiptSchema, RECEIPT_VERSION, type Receipt } from './transaction.js';

/** The fields a receipt's hash covers: all but `hash` (v2), or the seven original ones (legacy, no `v`). */
export function receiptHashInput(receipt: Omit<Receipt, 'hash'> & { hash?: string }): Record<string, unknown> {
  if (receipt.v === RECEIPT_VERSION) {
    const { hash: _hash, ...body } = receipt;
    void _hash;
    return body;
  }
  const { seq, transaction_id, status, revision, at, prev_hash, event } = receipt;
  return { seq, transaction_id, status, revision, at, prev_hash, event };
}

/** The text whose SHA-256 is a receipt's hash. */
export function receiptHashText(receipt: Omit<Receipt, 'hash'> & { hash?: string }): string {
  return canonicalJson(receiptHashInput(receipt));
}

/** The text whose SHA-256 is an action result's digest (`result_digest`). */
export function resultDigestText(result: unknown): string {
  return canonicalJson(result);
}

export type ReceiptChainProblem = 'altered' | 'removed' | 'reordered' | 'broken_link' | 'result_mismatch';

export type ReceiptChainVerdict =
  | { readonly valid: true; readonly count: number; readonly head?: string }
  | { readonly valid: false; readonly problem: ReceiptChainProblem; readonly at_seq: number };

export interface VerifyReceiptChainOptions {
  /** Every receipt must name this transaction. */
  readonly transaction_id?: string;
  /** The record's receipt_count: a shorter chain was truncated. */
  readonly expected_count?: number;
  /** The record's receipt_head: the last hash must equal it. */
  readonly expected_head?: string;
  /**
   * The action result the record holds: the last receipt carrying a
   * `result_digest` must be its digest.
   */
  readonly result?: unknown;
}

/** SHA-256 as lower-case hex of a UTF-8 string, sync (node:crypto) or async (WebCrypto). */
export type Sha256Hex = (text: string) => string | Promise<string>;

/** The verdict, given each receipt's computed hash (undefined for one that is not well formed). */
function verdictOf(
  receipts: readonly unknown[],
  computed: readonly (string | undefined)[],
  options: VerifyReceiptChainOptions,
  resultDigest: string | undefined,
): ReceiptChainVerdict {
  const seqs = receipts.map((r) => (r !== null && typeof r === 'object' && typeof (r as { seq?: unknown }).seq === 'number' ? (r as { seq: number }).seq : -1));
  let prevHash = GENESIS_RECEIPT_HASH;
  let prevRevision = -1;
  let lastDigest: { seq: number; digest: string } | undefined;
  for (let i = 0; i < receipts.length; i++) {
    const parsed = ReceiptSchema.safeParse(receipts[i]);
    if (!parsed.success || computed[i] === undefined) return { valid: false, problem: 'altered', at_seq: i };
    const r = parsed.data;
    if (computed[i] !== r.hash) return { valid: false, problem: 'altered', at_seq: i };
    if (options.transaction_id !== undefined && r.transaction_id !== options.transaction_id) return { valid: false, problem: 'altered', at_seq: i };
    if (i > 0 && r.transaction_id !== (receipts[0] as Receipt).transaction_id) return { valid: false, problem: 'altered', at_seq: i };
    if (r.seq !== i) {
      // Receipt i appears later (or r went backwards): the order changed. Otherwise i is gone.
      const elsewhere = seqs.indexOf(i, i + 1) !== -1;
      return { valid: false, problem: elsewhere || r.seq < i ? 'reordered' : 'removed', at_seq: i };
    }
    if (r.prev_hash !== prevHash) return { valid: false, problem: 'broken_link', at_seq: i };
    if (r.revision <= prevRevision) return { valid: false, problem: 'reordered', at_seq: i };
    if (r.result_digest !== undefined) lastDigest = { seq: r.seq, digest: r.result_digest };
    prevHash = r.hash;
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
  if (resultDigest !== undefined && lastDigest !== undefined && lastDigest.digest !== resultDigest) {
    return { valid: false, problem: 'result_mismatch', at_seq: lastDigest.seq };
  }
  return head === undefined ? { valid: true, count: 0 } : { valid: true, count: receipts.length, head };
}

function hashTextOf(receipt: unknown): string | undefined {
  const parsed = ReceiptSchema.safeParse(receipt);
  if (!parsed.success) return undefined;
  try {
    return receiptHashText(parsed.data);
  } catch {
    return undefined;
  }
}

/** Verifies with a synchronous SHA-256 (the runtime, the CLI). */
export function verifyReceiptChainSync(
  receipts: readonly unknown[],
  options: VerifyReceiptChainOptions,
  sha256: (text: string) => string,
): ReceiptChainVerdict {
  const computed = receipts.map((r) => {
    const text = hashTextOf(r);
    return text === undefined ? undefined : sha256(text);
  });
  const resultDigest = options.result !== undefined ? sha256(resultDigestText(options.result)) : undefined;
  return verdictOf(receipts, computed, options, resultDigest);
}

/** Verifies with an asynchronous SHA-256 (the browser's WebCrypto). */
export async function verifyReceiptChainAsync(
  receipts: readonly unknown[],
  options: VerifyReceiptChainOptions,
  sha256: Sha256Hex,
): Promise<ReceiptChainVerdict> {
  const computed = await Promise.all(
    receipts.map(async (r) => {
      const text = hashTextOf(r);
      return text === undefined ? undefined : await sha256(text);
    }),
  );
  const resultDigest = options.result !== undefined ? await sha256(resultDigestText(options.result)) : undefined;
  return verdictOf(receipts, computed, options, resultDigest);
}
