/**
 * Port: where the runtime-owned stream publisher persists chunks.
 *
 * The publisher (lib/connectors/stream.ts) assigns sequence numbers and calls
 * `write` strictly one at a time, in sequence order; a sink never sees two
 * concurrent writes for the same attempt. A rejected write breaks the stream:
 * no later chunk is written, so the persisted sequence has no gaps.
 * Persistence (DynamoDB) and exposure through the action lifecycle come with
 * the runtime issue.
 */
import type { SequencedStreamChunk } from '../connectors/stream-chunk.js';

export type { SequencedStreamChunk, StreamChunk } from '../connectors/stream-chunk.js';

export interface StreamSink {
  write(chunk: SequencedStreamChunk): Promise<void>;
}
