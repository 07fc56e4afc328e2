/**
 * Pagination and status-index querying shared by the DynamoDB adapters.
 * Depends on nothing else in this folder (besides the table design), so every
 * adapter can import it without cycles.
 */
import { QueryCommand, type DynamoDBDocumentClient, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
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
  /** Store cursor (base64url JSON, the shape of a LastEvaluatedKey); absent on the last page. */
  readonly cursor?: string;
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
 * Each partition is read up to `limit` + 1 keys: the page is the first `limit`
 * keys that are certainly in order, i.e. no later than the last key read of a
 * partition that has more.
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
    cursor?: unknown;
    index: (typeof GSIS)['byStatus' | 'byExpiry'];
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
  if (after !== undefined && bound !== undefined && after >= bound) return { keys: [] };
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
  const answers = await Promise.all(
    opts.partitions.map((pk) =>
      client.send(
        new QueryCommand({
          TableName: table,
          IndexName: index.name,
          KeyConditionExpression: `#pk = :pk${range}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ...values, ':pk': pk },
          Limit: opts.limit + 1,
        }),
      ),
    ),
  );
  const sortOf = (k: Record<string, unknown>) => String(k[index.sortKey]);
  let horizon: string | undefined;
  const merged: Record<string, unknown>[] = [];
  for (const out of answers) {
    const items = (out.Items ?? []).filter((k) => sortOf(k) !== after);
    merged.push(...items);
    if (out.LastEvaluatedKey !== undefined && items.length > 0) {
      const last = sortOf(items[items.length - 1] as Record<string, unknown>);
      if (horizon === undefined || last < horizon) horizon = last;
    }
  }
  merged.sort((a, b) => (sortOf(a) < sortOf(b) ? -1 : sortOf(a) > sortOf(b) ? 1 : 0));
  const certain = horizon === undefined ? merged : merged.filter((k) => sortOf(k) <= (horizon as string));
  const page = certain.slice(0, opts.limit);
  const more = merged.length > page.length || answers.some((out) => out.LastEvaluatedKey !== undefined);
  const last = page[page.length - 1];
  if (!more || last === undefined) return { keys: page };
  const cursor = encodeCursor({ PK: last.PK, SK: last.SK, [index.partitionKey]: opts.listing, [index.sortKey]: sortOf(last) });
  return { keys: page, ...(cursor !== undefined ? { cursor } : {}) };
}
