/**
 * Pagination and status-index querying shared by the DynamoDB adapters.
 * Depends on nothing else in this folder (besides the table design), so every
 * adapter can import it without cycles.
 */
import { QueryCommand, type DynamoDBDocumentClient, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../errors/aip-error.js';
import type { ErrorCode } from '../../errors/catalogue.js';
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
