/**
 * Port: persisted stream chunks of an action.
 *
 * One ordered stream per (tenant, action ID), spanning every attempt: each
 * chunk has a stream-wide `seq` (0, 1, 2, ...). `append` is ONE conditional
 * put on the seq not existing, so two writers can never both write a seq (a
 * zombie attempt racing a newer one loses: `stream.sequence_conflict`).
 * Chunks are TTL'd (`ttl`, default 24 h, configurable).
 *
 * The runtime adapts the store to the connector SDK's StreamSink
 * (lib/runtime/attempts/stream-sink.ts): the publisher numbers chunks per
 * attempt from 0, the sink adds the attempt's base seq (read with `nextSeq`),
 * so a second attempt continues the action's stream.
 *
 * Errors: `stream.sequence_conflict` (409), `stream.invalid_chunk` (400),
 * `transaction.store_unavailable`, `transaction.record_too_large`.
 * The DynamoDB adapter is lib/aws/dynamo/stream-store.ts.
 */
import type { SequencedStreamChunk } from '../../packages/connector-sdk/src/protocol/stream-chunk.js';
import type { Page } from './transaction-store.js';

export interface StoredStreamChunk {
  readonly tenant_id: string;
  readonly action_id: string;
  /** Stream-wide sequence (across attempts). */
  readonly seq: number;
  /** The chunk as the publisher produced it (its `sequence` is per attempt). */
  readonly chunk: SequencedStreamChunk;
  readonly stored_at: string;
}

export interface AppendChunkInput {
  readonly tenant_id: string;
  readonly action_id: string;
  readonly seq: number;
  readonly chunk: SequencedStreamChunk;
}

export interface ListChunksQuery {
  readonly tenant_id: string;
  readonly action_id: string;
  /** Only chunks with seq > after. */
  readonly after?: number;
  /** 1 .. 1000, default 100. */
  readonly limit?: number;
  readonly cursor?: string;
}

export interface StreamStore {
  /** In seq order (strongly consistent). */
  list(query: ListChunksQuery): Promise<Page<StoredStreamChunk>>;
  /** The seq the next chunk gets (0 for an empty stream). */
  nextSeq(ref: { readonly tenant_id: string; readonly action_id: string }): Promise<number>;
}
