/**
 * A transaction's receipt chain as the store lists it, for the store tests that page and verify it
 * (transaction-store.genesis-receipt and transaction-store.inside-receipts).
 */
import { expect } from 'vitest';
import type { DynamoTransactionStore } from '../../lib/aws/dynamo/transaction-store.js';
import { verifyReceiptChain } from '../../lib/runtime/receipts.js';
import type { StoredReceipt, TransactionRecord } from '../../lib/transactions/record.js';

/** The whole chain, page by page (`limit` each): every page within its limit, the cursor absent only at the end. */
export async function chainInPages(store: Pick<DynamoTransactionStore, 'listReceipts'>, tenant: string, txn: string, limit: number): Promise<StoredReceipt[]> {
  const out: StoredReceipt[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await store.listReceipts({ tenant_id: tenant, transaction_id: txn, limit, ...(cursor !== undefined ? { cursor } : {}) });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    out.push(...page.items);
    cursor = page.cursor;
    if (cursor === undefined) return out;
  }
  throw new Error('the listing did not end');
}

/** The chain verified against its record's count and head. */
export function verifiedChain(record: TransactionRecord, chain: readonly StoredReceipt[]) {
  return verifyReceiptChain(
    chain.map((r) => r.receipt),
    { transaction_id: record.transaction_id, expected_count: record.receipt_count, ...(record.receipt_head ? { expected_head: record.receipt_head } : {}) },
  );
}
