/**
 * `listByStatus`'s read path (lib/aws/dynamo/transaction-store.ts): the
 * byStatus index merged over its write shards (./pagination.ts), and for
 * `committing` and `reconciling` over the partitions of the status whose
 * entry their records may keep (STATUS_INDEX_EPISODES), each entry read
 * again strongly consistently and checked against the listing: its status,
 * and for a kept entry the time the record entered its status.
 *
 * A page is filled: the merged read goes on past entries whose record is in
 * another status (a kept entry, or index lag), and, scoped to some tenants
 * (an operator's listing), past other tenants' entries, until it holds one
 * record more than the page, or the index is exhausted. So a page is short
 * only at the end, there is a cursor only when another record of the listing
 * follows, and the number of pages follows the listing's records alone. The
 * cursor stays one position in the merged order (after the page's last
 * record). Cost and bound: docs/table-design.md, "Listing one tenant's
 * records" and "One entry per episode".
 */
import type { DynamoDBDocumentClient, QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { ListByStatusQuery, Page } from '../../ports/transaction-store.js';
import type { TransactionRecord } from '../../transactions/record.js';
import { mergedCursorAt, queryMergedPartitions, type MergedPage } from './pagination.js';
import { checkStatusListing } from './transaction-checks.js';
import { GSIS, STATUS_ENTERED_ATTRIBUTE, keys } from './table-design.js';
import type { Item } from './store-support.js';

/**
 * Index entries one page may evaluate at most (about 10 MB of keys, some 1,250 read units): past it the page
 * is returned short with a cursor rather than keep an API request waiting. Only other tenants' stuck work in
 * the same status, and the entries of the earlier status of an episode, lie between, so this takes more of
 * them than a deployment is expected to hold.
 */
export const SCOPED_LISTING_SCAN_BUDGET = 50_000;

/** Entries a partition evaluates per query at most; the first round reads `limit` + 1, each next round twice as many. */
const MAX_PER_PARTITION = 1_000;

/** Tenants named in the query's FilterExpression at most (an expression is at most 4 KB); a larger scope is filtered here only. */
const MAX_FILTERED_TENANTS = 32;

/** The tenant of a byStatus entry: its base-table key is `TXN#<tenant>#<transaction_id>` (IDs never contain '#'). */
function tenantOf(entry: Item): string | undefined {
  return String(entry.PK).split('#')[1];
}

/** A record read for a listing, with the entry time it keeps beside a kept index entry (STATUS_ENTERED_ATTRIBUTE). */
export interface ListedRecord {
  readonly record: TransactionRecord;
  readonly entered_at?: string;
}

/** The listed record of a transaction item read by a listing. */
export function listedRecordOf(item: Item, record: TransactionRecord): ListedRecord {
  const entered = item[STATUS_ENTERED_ATTRIBUTE];
  return typeof entered === 'string' ? { record, entered_at: entered } : { record };
}

export async function listStatusIndex(
  client: DynamoDBDocumentClient,
  table: string,
  query: ListByStatusQuery,
  read: (entries: readonly Item[]) => Promise<Map<string, ListedRecord>>,
  scanBudget: number = SCOPED_LISTING_SCAN_BUDGET,
  shared?: Map<string, Promise<QueryCommandOutput>>,
): Promise<Page<TransactionRecord>> {
  const { escalated, until, limit } = checkStatusListing(query);
  const tenants = query.tenants !== undefined ? new Set(query.tenants) : undefined;
  if (tenants?.size === 0) return { items: [] };
  const listing = keys.statusIndexLegacy(query.status, escalated);
  const merged = (want: number, perPartition: number, cursor: unknown): Promise<MergedPage> =>
    queryMergedPartitions(client, table, {
      code: 'transaction.invalid_listing',
      index: GSIS.byStatus,
      listing,
      partitions: keys.statusListingPartitions(query.status, escalated),
      upTo: until,
      limit: want,
      perPartition,
      cursor,
      ...(tenants !== undefined && tenants.size <= MAX_FILTERED_TENANTS
        ? { only: { attribute: 'PK', prefixes: [...tenants].map((t) => `${keys.transaction(t, '').PK}`) } }
        : {}),
      ...(shared !== undefined ? { shared } : {}),
    });
  /** Records already on the page: an entry that moved between partitions while they were read is listed once. */
  const seen = new Set<string>();
  /** The entries of `out` whose record is still what the listing asks for, with the record. */
  const listed = async (out: MergedPage): Promise<{ entry: Item; record: TransactionRecord }[]> => {
    const entries = tenants === undefined ? out.keys : out.keys.filter((e) => tenants.has(tenantOf(e) ?? ''));
    const records = await read(entries);
    const found: { entry: Item; record: TransactionRecord }[] = [];
    for (const entry of entries) {
      const key = `${String(entry.PK)}|${String(entry.SK)}`;
      const listedRecord = records.get(key);
      const r = listedRecord?.record;
      // Another status: a kept entry whose record is in the episode's other status, or index lag.
      if (r === undefined || r.status !== query.status || (r.escalated_at !== undefined) !== escalated) continue;
      if (tenants !== undefined && !tenants.has(r.tenant_id)) continue;
      if (until !== undefined && !escalated && r.status === 'outcome_unknown' && r.next_reconcile_at !== undefined && r.next_reconcile_at > until) continue;
      // A kept entry's sort time is at or before the record's entry into its status: the bound is the record's own time.
      if (until !== undefined && !keys.isOwnStatusEntry(entry[GSIS.byStatus.partitionKey], query.status, escalated)) {
        if ((listedRecord?.entered_at ?? r.updated_at) > until) continue;
      }
      if (seen.has(key)) continue;
      seen.add(key);
      found.push({ entry, record: r });
    }
    return found;
  };

  // One record more than the page: the cursor is given only when another record of the listing follows.
  const wanted = limit + 1;
  const found: { entry: Item; record: TransactionRecord }[] = [];
  let position: string | undefined = query.cursor;
  let scanned = 0;
  for (let round = 0; found.length < wanted; round++) {
    const perPartition = Math.max(2, Math.min(MAX_PER_PARTITION, (limit + 1) * 2 ** round));
    const out = await merged(wanted - found.length, perPartition, position);
    found.push(...(await listed(out)));
    position = out.cursor;
    scanned += out.scanned;
    if (position === undefined) break;
    if (scanned >= scanBudget && found.length < wanted) {
      // Bounded: a short page, its cursor where the reading stopped.
      return { items: found.map((f) => f.record), cursor: position };
    }
  }
  if (found.length <= limit) return { items: found.map((f) => f.record) };
  const page = found.slice(0, limit);
  return { items: page.map((f) => f.record), cursor: mergedCursorAt(GSIS.byStatus, listing, (page[page.length - 1] as { entry: Item }).entry) };
}
