/**
 * Pagination and status-index querying shared by the DynamoDB adapters.
 * Depends on nothing else in this folder (besides the table design), so every
 * adapter can import it without cycles.
 */
import { QueryCommand, type DynamoDBDocumentClient, type QueryCommandInput, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ErrorCode } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { GSIS } from './table-design.js';

/** Opaque cursor: base64url JSON of the LastEvaluatedKey. */
export function encodeCursor(key: Record<string, unknown> | undefined): string | undefined {
  return key === undefined ? undefined : Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/** Decodes a cursor made by encodeCursor; anything else is `code` (a 4xx listing error). */
export function decodeCursor(code: ErrorCode, cursor: unknown, allowed: readonly string[]): Record<string, string> | undefined {
  if (cursor === undefined) return undefined;
  try {
    if (typeof cursor !== 'string' || cursor.length > 4096) throw new Error('shape');
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('shape');
    const entries = Object.entries(parsed as Record<string, unknown>);
    if (entries.length === 0 || entries.some(([k, v]) => !allowed.includes(k) || typeof v !== 'string')) throw new Error('shape');
    return Object.fromEntries(entries) as Record<string, string>;
  } catch {
    throw new AipError(code, 'The pagination cursor is not valid', { details: { field: 'cursor' } });
  }
}

/**
 * A Query that failed because of the ExclusiveStartKey a cursor decoded to
 * (DynamoDB answers `ValidationException`: a missing or empty key attribute,
 * a key outside the key condition) is the listing's typed 4xx `code`, not a
 * store failure. Defence in depth: the runtime seals the cursors callers see
 * (lib/runtime/cursor.ts), so a forged one is refused before it gets here.
 */
export function rejectedStartKey(err: unknown, code: ErrorCode, start: Record<string, string> | undefined): AipError | undefined {
  const name = err !== null && typeof err === 'object' && 'name' in err ? String((err as { name: unknown }).name) : '';
  if (start === undefined || name !== 'ValidationException') return undefined;
  return new AipError(code, 'The pagination cursor is not valid', { details: { field: 'cursor' } });
}

/**
 * One page of the sparse byStatus index under `pk`. Its sort keys start with an
 * RFC 3339 time followed by '#', so `upTo` (inclusive) bounds them as `< upTo + '$'`
 * ('#' sorts below '$'). A cursor from another listing, or one DynamoDB refuses
 * as a start key, is `code`.
 */
export async function queryStatusIndex(
  client: DynamoDBDocumentClient,
  table: string,
  opts: { code: ErrorCode; pk: string; upTo?: string; limit: number; cursor?: unknown; index?: (typeof GSIS)['byStatus' | 'byExpiry'] },
): Promise<QueryCommandOutput> {
  const index = opts.index ?? GSIS.byStatus;
  const start = decodeCursor(opts.code, opts.cursor, ['PK', 'SK', index.partitionKey, index.sortKey]);
  if (start !== undefined && start[index.partitionKey] !== opts.pk) {
    throw new AipError(opts.code, 'The cursor belongs to another listing', { details: { field: 'cursor' } });
  }
  const names: Record<string, string> = { '#pk': index.partitionKey };
  const values: Record<string, unknown> = { ':pk': opts.pk };
  let condition = '#pk = :pk';
  if (opts.upTo !== undefined) {
    names['#sk'] = index.sortKey;
    values[':bound'] = `${opts.upTo}$`;
    condition += ' AND #sk < :bound';
  }
  try {
    return await client.send(
      new QueryCommand({
        TableName: table,
        IndexName: index.name,
        KeyConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        Limit: opts.limit,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
  } catch (err) {
    throw rejectedStartKey(err, opts.code, start) ?? err;
  }
}

/** One page of a listing merged over several partitions of an index: index keys in sort-key order. */
export interface MergedPage {
  readonly keys: Record<string, unknown>[];
  /**
   * Store cursor (base64url JSON, the shape of a LastEvaluatedKey); absent on the last page. With `only`, a
   * page can be short (even empty) and still carry one: the position up to which every partition was read.
   */
  readonly cursor?: string;
  /** Index entries DynamoDB evaluated for this page (the sum of the queries' ScannedCount, filtered ones included). */
  readonly scanned: number;
}

/** A store cursor at the index entry `key` of the merged listing `listing` (the shape `queryMergedPartitions` pages with). */
export function mergedCursorAt(index: (typeof GSIS)['byStatus' | 'byExpiry'], listing: string, key: Record<string, unknown>): string {
  return encodeCursor({ PK: key.PK, SK: key.SK, [index.partitionKey]: listing, [index.sortKey]: String(key[index.sortKey]) }) as string;
}

/**
 * One page of a listing spread over several partitions of an index whose sort
 * keys are unique across them (the sharded byStatus index: `<time>#<tenant>#<id>`).
 * Every partition is queried (in parallel) from the cursor's position on, and
 * the answers are merged by sort key, so the pages come in one order across
 * partitions and the cursor is one position in it: a key shaped like a
 * LastEvaluatedKey whose index partition key is `listing` (the name of the
 * listing, e.g. the legacy unsharded partition) and whose sort key is the
 * last one returned. A cursor the unsharded listing produced is the same
 * position, so cursors issued before the index was sharded keep working.
 *
 * Each partition is evaluated up to `perPartition` entries (default `limit` + 1):
 * the page is the first `limit` keys that are certainly in order, i.e. no later
 * than the last entry evaluated in a partition that has more (its
 * LastEvaluatedKey: the horizon).
 *
 * `only` keeps the entries whose base-table attribute `attribute` begins with
 * one of `prefixes` (a FilterExpression: DynamoDB still evaluates, and bills,
 * the entries it drops, but does not return them). A filtered page can then
 * hold fewer than `limit` keys while more remain; its cursor is the horizon,
 * so the next call continues after every entry already evaluated.
 */
export async function queryMergedPartitions(
  client: DynamoDBDocumentClient,
  table: string,
  opts: {
    code: ErrorCode;
    listing: string;
    partitions: readonly string[];
    upTo?: string;
    limit: number;
    perPartition?: number;
    cursor?: unknown;
    index: (typeof GSIS)['byStatus' | 'byExpiry'];
    only?: { readonly attribute: string; readonly prefixes: readonly string[] };
    /**
     * The Queries of listings read together (`listByStatuses`), by their input: a Query that another of them sent
     * alike is not sent again, its answer (or the one in flight) is read again.
     */
    shared?: Map<string, Promise<QueryCommandOutput>>;
  },
): Promise<MergedPage> {
  const { index } = opts;
  const start = decodeCursor(opts.code, opts.cursor, ['PK', 'SK', index.partitionKey, index.sortKey]);
  if (start !== undefined) {
    if (start[index.partitionKey] !== opts.listing) throw new AipError(opts.code, 'The cursor belongs to another listing', { details: { field: 'cursor' } });
    if (['PK', 'SK', index.sortKey].some((k) => !start[k]))
      throw new AipError(opts.code, 'The pagination cursor is not valid', { details: { field: 'cursor' } });
  }
  const after = start?.[index.sortKey];
  const bound = opts.upTo !== undefined ? `${opts.upTo}$` : undefined;
  if (after !== undefined && bound !== undefined && after >= bound) return { keys: [], scanned: 0 };
  const names: Record<string, string> = { '#pk': index.partitionKey };
  if (after !== undefined || bound !== undefined) names['#sk'] = index.sortKey;
  let range = '';
  const values: Record<string, unknown> = {};
  if (after !== undefined && bound !== undefined) {
    // BETWEEN is inclusive: the key at `after` itself (already returned) is dropped below.
    range = ' AND #sk BETWEEN :after AND :bound';
    Object.assign(values, { ':after': after, ':bound': bound });
  } else if (after !== undefined) {
    range = ' AND #sk > :after';
    values[':after'] = after;
  } else if (bound !== undefined) {
    range = ' AND #sk < :bound';
    values[':bound'] = bound;
  }
  let filter: string | undefined;
  if (opts.only !== undefined) {
    names['#only'] = opts.only.attribute;
    const clauses: string[] = [];
    for (const [i, prefix] of opts.only.prefixes.entries()) {
      values[`:only${i}`] = prefix;
      clauses.push(`begins_with(#only, :only${i})`);
    }
    filter = clauses.join(' OR ');
  }
  const send = (input: QueryCommandInput): Promise<QueryCommandOutput> => {
    if (opts.shared === undefined) return client.send(new QueryCommand(input));
    const key = JSON.stringify(input);
    let answer = opts.shared.get(key);
    if (answer === undefined) {
      answer = client.send(new QueryCommand(input));
      opts.shared.set(key, answer);
    }
    return answer;
  };
  const answers = await Promise.all(
    opts.partitions.map((pk) =>
      send({
        TableName: table,
        IndexName: index.name,
        KeyConditionExpression: `#pk = :pk${range}`,
        ...(filter !== undefined ? { FilterExpression: filter } : {}),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ...values, ':pk': pk },
        Limit: opts.perPartition ?? opts.limit + 1,
      }),
    ),
  );
  const sortOf = (k: Record<string, unknown>) => String(k[index.sortKey]);
  /** The earliest last-evaluated entry of a partition with more: every entry up to it has been evaluated everywhere. */
  let horizon: Record<string, unknown> | undefined;
  let scanned = 0;
  const merged: Record<string, unknown>[] = [];
  for (const out of answers) {
    scanned += out.ScannedCount ?? 0;
    merged.push(...(out.Items ?? []).filter((k) => sortOf(k) !== after));
    const evaluated = out.LastEvaluatedKey;
    if (evaluated !== undefined && (horizon === undefined || sortOf(evaluated) < sortOf(horizon))) horizon = evaluated;
  }
  merged.sort((a, b) => (sortOf(a) < sortOf(b) ? -1 : sortOf(a) > sortOf(b) ? 1 : 0));
  const certain = horizon === undefined ? merged : merged.filter((k) => sortOf(k) <= sortOf(horizon));
  const page = certain.slice(0, opts.limit);
  const last = page[page.length - 1];
  if (page.length === opts.limit && last !== undefined && (merged.length > page.length || horizon !== undefined)) {
    return { keys: page, cursor: mergedCursorAt(index, opts.listing, last), scanned };
  }
  // A short page: everything up to the horizon is in it (none when no partition has more).
  return horizon === undefined ? { keys: page, scanned } : { keys: page, cursor: mergedCursorAt(index, opts.listing, horizon), scanned };
}
