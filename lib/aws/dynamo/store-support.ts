/**
 * Shared plumbing of the runtime-store adapters (action, idempotency,
 * approval, route, stream) on the single table, with the expression builder
 * (lib/aws/dynamo/update-builder.ts) and error mapping (lib/aws/dynamo/store-errors.ts)
 * the transaction store uses too:
 *
 * - a conditional write returns the item DynamoDB hands back with the
 *   failure (ReturnValuesOnConditionCheckFailure: ALL_OLD), so every lost
 *   race is classified from the same call, never a second read;
 * - any other SDK failure goes through `mapStoreError`
 *   (`transaction.store_unavailable`, `transaction.record_too_large`,
 *   `internal.unexpected`): the stores share one table and one failure vocabulary.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { BatchGetCommand, GetCommand, PutCommand, type DynamoDBDocumentClient, type PutCommandInput } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ErrorCode } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { ID_MAX_LENGTH, ID_PATTERN, inspectJson } from '../../../packages/connector-sdk/src/protocol/index.js';
import { fromAttributeMap } from './attribute-values.js';
import { errorName, mapStoreError } from './store-errors.js';

export { mapStoreError } from './store-errors.js';
export { UpdateBuilder, compact } from './update-builder.js';
export { decodeCursor, encodeCursor } from './pagination.js';

export type Item = Record<string, unknown>;

/** JSON kept on an item stays well below DynamoDB's 400 KB item limit. */
export const ITEM_JSON_LIMITS = { maxDepth: 64, maxNodes: 50_000, maxSize: 350 * 1024, maxStringLength: 350 * 1024 } as const;
export const MAX_LEASE_MS = 86_400_000;

export type WriteOutcome = { readonly ok: true; readonly item: Item } | { readonly ok: false; readonly old: Item | undefined };

/** One conditional PutItem (ALL_OLD on a failed condition). */
export async function conditionalPut(
  client: DynamoDBDocumentClient,
  params: Omit<PutCommandInput, 'ReturnValuesOnConditionCheckFailure'>,
): Promise<WriteOutcome> {
  try {
    await client.send(new PutCommand({ ...params, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
    return { ok: true, item: params.Item ?? {} };
  } catch (err) {
    if (errorName(err) === 'ConditionalCheckFailedException') return { ok: false, old: fromAttributeMap((err as { Item?: unknown }).Item) };
    throw mapStoreError(err);
  }
}

/** Strongly consistent GetItem. */
export async function consistentGet(client: DynamoDBDocumentClient, tableName: string, key: { PK: string; SK: string }): Promise<Item | undefined> {
  try {
    const out = await client.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
    return out.Item;
  } catch (err) {
    throw mapStoreError(err);
  }
}

export function invalid(code: ErrorCode, message: string, details: Record<string, unknown> = {}): AipError {
  return new AipError(code, message, { details });
}

export function isId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= ID_MAX_LENGTH && ID_PATTERN.test(value);
}

export function checkId(code: ErrorCode, field: string, value: unknown): string {
  if (!isId(value)) throw invalid(code, `${field} must be a protocol ID`, { field });
  return value;
}

export function checkRevision(code: ErrorCode, value: unknown, field = 'expected_revision'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw invalid(code, `${field} must be a positive integer`, { field });
  return value;
}

export function checkNonNegativeInt(code: ErrorCode, field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalid(code, `${field} must be a non-negative integer`, { field });
  return value;
}

export function checkJson(code: ErrorCode, field: string, value: unknown, object: boolean): void {
  if (value === undefined) return;
  if (object && (value === null || typeof value !== 'object' || Array.isArray(value))) throw invalid(code, `${field} must be a JSON object`, { field });
  const problem = inspectJson(value, ITEM_JSON_LIMITS);
  if (problem !== undefined) {
    throw invalid(problem.kind === 'too_large' ? 'transaction.record_too_large' : code, `${field} is not storable JSON (${problem.kind})`, {
      field,
      problem: problem.kind,
    });
  }
}

export function checkTime(code: ErrorCode, field: string, value: unknown): string {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalid(code, `${field} must be an RFC 3339 time`, { field });
  return new Date(ms).toISOString();
}

export function checkRetention(code: ErrorCode, field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > 10 * 365 * 86_400) {
    throw invalid(code, `${field} must be a positive number of seconds (at most 10 years)`, { field });
  }
  return value;
}

export function checkLeaseOwner(code: ErrorCode, owner: unknown, ttlMs: unknown): void {
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > 256 || /[\x00-\x1f\x7f]/.test(owner)) {
    throw invalid(code, 'lease owner must be a non-empty printable string of at most 256 characters', { field: 'owner' });
  }
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_LEASE_MS) {
    throw invalid(code, `lease ttl_ms must be an integer from 1 to ${MAX_LEASE_MS}`, { field: 'ttl_ms' });
  }
}

/** 1 .. max, default `fallback`. */
export function checkLimit(code: ErrorCode, limit: unknown, fallback: number, max: number): number {
  if (limit === undefined) return fallback;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > max) {
    throw invalid(code, `limit must be an integer from 1 to ${max}`, { field: 'limit' });
  }
  return limit;
}

export function epochSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/** Strongly consistent BatchGetItem of up to 100 keys, retrying UnprocessedKeys with backoff. Keyed `PK|SK`. */
export async function consistentBatchGet(
  client: DynamoDBDocumentClient,
  tableName: string,
  keyList: readonly { PK: unknown; SK: unknown }[],
): Promise<Map<string, Item>> {
  const found = new Map<string, Item>();
  let pending: Item[] = keyList.map((k) => ({ PK: k.PK, SK: k.SK }));
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 0) {
      if (attempt > 8) throw new AipError('transaction.store_unavailable', undefined, { details: { reason: 'unprocessed_keys' } });
      await delay(Math.min(1000, 25 * 2 ** attempt)); // backoff for UnprocessedKeys (throttling)
    }
    let out;
    try {
      out = await client.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } } }));
    } catch (err) {
      throw mapStoreError(err);
    }
    for (const item of out.Responses?.[tableName] ?? []) found.set(`${String(item.PK)}|${String(item.SK)}`, item);
    pending = (out.UnprocessedKeys?.[tableName]?.Keys as Item[] | undefined) ?? [];
  }
  return found;
}
