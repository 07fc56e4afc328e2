/**
 * The connector SDK's StreamSink (lib/connectors/ports/stream-sink.ts) over the
 * runtime's StreamStore (lib/ports/stream-store.ts), for one attempt: the
 * publisher numbers the attempt's chunks from 0, the sink stores chunk n at
 * the attempt's base seq + n, so a later attempt continues the action's stream.
 */
import type { StreamSink } from '../../../packages/connector-sdk/src/ports/stream-sink.js';
import type { StreamStore } from '../../ports/stream-store.js';
import type { SequencedStreamChunk } from '../../../packages/connector-sdk/src/protocol/stream-chunk.js';

/** StreamSink over a StreamStore for one attempt: seq = base_seq + chunk.sequence. */
export class StreamStoreSink implements StreamSink {
  constructor(
    private readonly store: StreamStore,
    private readonly tenant_id: string,
    private readonly action_id: string,
    private readonly base_seq: number,
  ) {}

  async write(chunk: SequencedStreamChunk): Promise<void> {
    await this.store.append({ tenant_id: this.tenant_id, action_id: this.action_id, seq: this.base_seq + chunk.sequence, chunk });
  }
}

/** A sink for a new attempt, continuing after the action's last stored chunk. */
export async function openStreamSink(store: StreamStore, tenant_id: string, action_id: string): Promise<StreamStoreSink> {
  return new StreamStoreSink(store, tenant_id, action_id, await store.nextSeq({ tenant_id, action_id }));
}
