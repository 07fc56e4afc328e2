/**
 * DynamoDB adapter of the StreamStore port (lib/ports/stream-store.ts).
 *
 * Item: PK `ACTION#<tenant>#<action_id>`, SK `CHUNK#<seq:8 digits>`, in the
 * action's partition, so one strongly consistent Query returns the stream in
 * order. Each chunk is written by a conditional put on its seq not existing
 * and carries `ttl` (default 24 h).
 */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { StreamChunkSchema } from '../../../packages/connector-sdk/src/protocol/stream-chunk.js';
import type { ListChunksQuery, StoredStreamChunk, StreamStore } from '../../ports/stream-store.js';
import type { WriteIntent } from '../../ports/unit-of-work.js';
import type { Page } from '../../ports/transaction-store.js';
import {
  checkId,
  checkJson,
  checkLimit,
  checkNonNegativeInt,
  checkRetention,
  checkTime,
  decodeCursor,
  encodeCursor,
  epochSeconds,
  invalid,
  mapStoreError,
  type Item,
} from './store-support.js';
import { rejectedStartKey } from './pagination.js';
import { TTL_ATTRIBUTE, keys, withKeyAttributes } from './table-design.js';
import { packAttributes, unpackAttributes } from './packed-attributes.js';
import type { IntentMapper, MappedWrite } from './unit-of-work.js';

export interface DynamoStreamStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly now?: () => Date;
  /** Chunk retention. Default 24 h. */
  readonly retentionSeconds?: number;
}

const CODE = 'stream.invalid_chunk' as const;
export const DEFAULT_STREAM_RETENTION_SECONDS = 24 * 3600;

/** The attributes a chunk item stores packed (./packed-attributes.ts): written once, never conditioned. */
const PACKED: ReadonlySet<string> = new Set(['chunk']);

/** A stored chunk from its item; `tenant_id`, `action_id` and `seq` come from the key (stored only by items written before the lean item model). */
function toChunk(stored: Item): StoredStreamChunk {
  const item = withKeyAttributes(unpackAttributes(stored, PACKED));
  return {
    tenant_id: String(item.tenant_id),
    action_id: String(item.action_id),
    seq: Number(item.seq),
    chunk: item.chunk as StoredStreamChunk['chunk'],
    stored_at: String(item.stored_at),
  };
}

function checkSeq(field: string, value: unknown): number {
  const n = checkNonNegativeInt(CODE, field, value);
  if (n > keys.maxStreamSeq) throw invalid(CODE, `${field} must be at most ${keys.maxStreamSeq}`, { field });
  return n;
}

export class DynamoStreamStore implements StreamStore, IntentMapper {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly clock: () => Date;
  private readonly retentionSeconds: number;

  constructor(options: DynamoStreamStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.clock = options.now ?? (() => new Date());
    this.retentionSeconds = checkRetention(CODE, 'retentionSeconds', options.retentionSeconds) ?? DEFAULT_STREAM_RETENTION_SECONDS;
  }

  /** Maps `stream.append`: a chunk, conditional on its seq not existing for the action. */
  map(intent: WriteIntent): MappedWrite<StoredStreamChunk, never> {
    if (intent.kind !== 'stream.append') throw new AipError('internal.unexpected', `the stream store does not write ${intent.kind}`);
    const input = intent.input;
    if (input === null || typeof input !== 'object') throw invalid(CODE, 'input must be an object');
    checkId(CODE, 'tenant_id', input.tenant_id);
    checkId(CODE, 'action_id', input.action_id);
    const seq = checkSeq('seq', input.seq);
    const c = input.chunk as unknown as Record<string, unknown> | undefined;
    if (c === undefined || c === null || typeof c !== 'object') throw invalid(CODE, 'chunk must be a sequenced stream chunk', { field: 'chunk' });
    checkJson(CODE, 'chunk', c, true);
    if (c.action_id !== input.action_id) throw invalid(CODE, 'chunk.action_id must be the action ID', { field: 'chunk.action_id' });
    checkId(CODE, 'chunk.capability_id', c.capability_id);
    if (typeof c.attempt_id !== 'string' || c.attempt_id.length === 0 || c.attempt_id.length > 256)
      throw invalid(CODE, 'chunk.attempt_id must be a non-empty string', { field: 'chunk.attempt_id' });
    checkNonNegativeInt(CODE, 'chunk.sequence', c.sequence);
    checkTime(CODE, 'chunk.emitted_at', c.emitted_at);
    const body = StreamChunkSchema.safeParse(c.chunk);
    if (!body.success)
      throw invalid(CODE, 'chunk.chunk is not a stream chunk', { field: 'chunk.chunk', issues: body.error.issues.map((i) => i.path.join('.') || '(root)') });

    const now = this.clock();
    const stored: StoredStreamChunk = { tenant_id: input.tenant_id, action_id: input.action_id, seq, chunk: input.chunk, stored_at: now.toISOString() };
    const conflict = (old: Item | undefined) =>
      new AipError('stream.sequence_conflict', `Stream seq ${seq} of action ${input.action_id} already exists`, {
        details: {
          action_id: input.action_id,
          seq,
          ...(old ? { existing_attempt_id: (toChunk(old).chunk as { attempt_id?: unknown } | undefined)?.attempt_id } : {}),
        },
      });
    return {
      items: [
        {
          Put: {
            TableName: this.table,
            Item: packAttributes(
              {
                // Not stored again: tenant_id, action_id, seq and the item kind are in the key (toChunk reads them from it).
                ...keys.streamChunk(input.tenant_id, input.action_id, seq),
                chunk: stored.chunk,
                stored_at: stored.stored_at,
                [TTL_ATTRIBUTE]: epochSeconds(now.getTime()) + this.retentionSeconds,
              },
              PACKED,
            ),
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#pk': 'PK' },
          },
        },
      ],
      refuse: (_at, old) => ({ error: conflict(old) }),
      race: () => conflict(undefined),
      written: () => stored,
    };
  }

  async list(query: ListChunksQuery): Promise<Page<StoredStreamChunk>> {
    if (query === null || typeof query !== 'object') throw invalid(CODE, 'query must be an object');
    checkId(CODE, 'tenant_id', query.tenant_id);
    checkId(CODE, 'action_id', query.action_id);
    const after = query.after === undefined ? undefined : checkSeq('after', query.after);
    const limit = checkLimit(CODE, query.limit, 100, 1000);
    const pk = keys.action(query.tenant_id, query.action_id).PK;
    const start = decodeCursor(CODE, query.cursor, ['PK', 'SK']);
    if (start !== undefined && start.PK !== pk) throw invalid(CODE, 'The cursor belongs to another stream', { field: 'cursor' });
    const low = keys.streamChunk(query.tenant_id, query.action_id, after === undefined ? 0 : after + 1).SK;
    const high = keys.streamChunk(query.tenant_id, query.action_id, keys.maxStreamSeq).SK;
    if (after !== undefined && after >= keys.maxStreamSeq) return { items: [] };
    let out;
    try {
      out = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :low AND :high',
          ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK' },
          ExpressionAttributeValues: { ':pk': pk, ':low': low, ':high': high },
          ConsistentRead: true,
          Limit: limit,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
    } catch (err) {
      throw rejectedStartKey(err, CODE, start) ?? mapStoreError(err);
    }
    const items = (out.Items ?? []).map(toChunk);
    const cursor = encodeCursor(out.LastEvaluatedKey);
    return cursor === undefined ? { items } : { items, cursor };
  }

  async nextSeq(ref: { readonly tenant_id: string; readonly action_id: string }): Promise<number> {
    if (ref === null || typeof ref !== 'object') throw invalid(CODE, 'input must be an object');
    checkId(CODE, 'tenant_id', ref.tenant_id);
    checkId(CODE, 'action_id', ref.action_id);
    let out;
    try {
      out = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: { '#pk': 'PK', '#sk': 'SK' },
          ExpressionAttributeValues: { ':pk': keys.action(ref.tenant_id, ref.action_id).PK, ':prefix': keys.streamChunkPrefix },
          ConsistentRead: true,
          ScanIndexForward: false,
          Limit: 1,
        }),
      );
    } catch (err) {
      throw mapStoreError(err);
    }
    const last = out.Items?.[0];
    return last === undefined ? 0 : toChunk(last).seq + 1;
  }
}
