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
import {
  GENESIS_RECEIPT_HASH,
  RECEIPT_VERSION,
  receiptHash,
  sha256Hex,
  type ActionResult,
  type JsonValue,
  type Principal,
  type Receipt,
  type TransactionProtocolStatus,
} from '../../packages/connector-sdk/src/protocol/index.js';
import {
  resultDigestText,
  verifyReceiptChainSync,
  type ReceiptChainVerdict,
  type VerifyReceiptChainOptions,
} from '../../packages/connector-sdk/src/protocol/receipt-chain.js';
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
  /** Redacted evidence of the write (inside the receipt, covered by its hash). */
  readonly evidence?: JsonValue;
  /** Who acted (the runtime's service principal for its own writes). */
  readonly actor?: Principal;
  /** The action result this write records: its digest goes into the receipt. */
  readonly result?: ActionResult;
}

/** Builds the receipt (hash included) that extends the given tip: a version 2 receipt (see lib/protocol/receipt-chain.ts). */
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
  const body: Omit<Receipt, 'hash'> = {
    v: RECEIPT_VERSION,
    seq,
    transaction_id,
    status: input.status,
    revision,
    at,
    prev_hash,
    event: input.event,
    ...(input.actor !== undefined ? { actor: { id: input.actor.id, kind: input.actor.kind } } : {}),
    ...(input.evidence !== undefined ? { evidence: input.evidence } : {}),
    ...(input.result !== undefined ? { result_digest: sha256Hex(resultDigestText(input.result)) } : {}),
  };
  return { receipt: { ...body, hash: receiptHash(body) } };
}

export type { ReceiptChainVerdict, VerifyReceiptChainOptions } from '../../packages/connector-sdk/src/protocol/receipt-chain.js';

/**
 * Verifies a receipt chain presented in order (seq 0 first): the checks of
 * lib/protocol/receipt-chain.ts with node:crypto's SHA-256.
 */
export function verifyReceiptChain(receipts: readonly unknown[], options: VerifyReceiptChainOptions = {}): ReceiptChainVerdict {
  return verifyReceiptChainSync(receipts, options, (text) => sha256Hex(text));
}
