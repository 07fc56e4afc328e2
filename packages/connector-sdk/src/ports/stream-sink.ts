/**
 * Port of the connector SDK: where the runtime-owned stream publisher persists chunks.
 *
 * The publisher (../stream.ts) assigns sequence numbers and calls
 * `write` strictly one at a time, in sequence order; a sink never sees two
 * concurrent writes for the same attempt. A rejected write breaks the stream:
 * no later chunk is written, so the persisted sequence has no gaps.
 * The runtime's sink (lib/runtime/attempts/stream-sink.ts) appends each chunk
 * to the action's stream store, which `GET /v1/actions/{id}/stream` reads.
 */
import type { SequencedStreamChunk } from '../protocol/stream-chunk.js';

export type { SequencedStreamChunk } from '../protocol/stream-chunk.js';

export interface StreamSink {
  write(chunk: SequencedStreamChunk): Promise<void>;
}
