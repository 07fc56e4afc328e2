/**
 * Paging through `listByStatus` in the store tests: every page of a listing, and the page sizes a listing of `n`
 * records in pages of `limit` must have.
 */
import type { ListByStatusQuery, TransactionStore } from '../../lib/ports/transaction-store.js';

/** Every page of a listing: the IDs in order and the size of each page (`max` only bounds a hang). */
export async function pages(store: TransactionStore, query: Omit<ListByStatusQuery, 'cursor'>, max = 500): Promise<{ ids: string[]; sizes: number[] }> {
  const ids: string[] = [];
  const sizes: number[] = [];
  let cursor: string | undefined;
  for (let n = 0; n < max; n++) {
    const page = await store.listByStatus({ ...query, ...(cursor ? { cursor } : {}) });
    ids.push(...page.items.map((r) => r.transaction_id));
    sizes.push(page.items.length);
    cursor = page.cursor;
    if (cursor === undefined) return { ids, sizes };
  }
  throw new Error(`more than ${max} pages`);
}

/** The page sizes of `n` records in pages of `limit`: full pages, then the rest (one empty page when there is nothing). */
export function fullPages(n: number, limit: number): number[] {
  if (n === 0) return [0];
  return Array.from({ length: Math.ceil(n / limit) }, (_, i) => Math.min(limit, n - i * limit));
}
