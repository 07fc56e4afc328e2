/**
 * Receipt-chain verification in the browser: the runtime's own verifier
 * (lib/protocol/receipt-chain.ts), given WebCrypto's SHA-256.
 */
import { verifyReceiptChainAsync, type ReceiptChainVerdict } from '../../packages/connector-sdk/src/protocol/receipt-chain.js';
import type { TransactionView } from './api.js';

export type { ReceiptChainVerdict };

export async function sha256hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Verifies the transaction's receipts against its anchor (receipt_count, receipt_head) and its action result. */
export function verifyTransaction(txn: TransactionView): Promise<ReceiptChainVerdict> {
  return verifyReceiptChainAsync(
    txn.receipts ?? [],
    {
      transaction_id: txn.transaction_id,
      ...(txn.receipt_count !== undefined ? { expected_count: txn.receipt_count } : {}),
      ...(txn.receipt_head !== undefined ? { expected_head: txn.receipt_head } : {}),
      ...(txn.action_result !== undefined ? { result: txn.action_result } : {}),
    },
    sha256hex,
  );
}
