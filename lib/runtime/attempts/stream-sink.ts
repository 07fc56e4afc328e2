/**
 * The connector SDK's StreamSink (packages/connector-sdk/src/ports/stream-sink.ts) over the
 * runtime's StreamStore (lib/ports/stream-store.ts), for one attempt: the
 * publisher numbers the attempt's chunks from 0, the sink stores chunk n at
 * the attempt's base seq + n, so a later attempt continues the action's stream.
 */
import type { StreamSink } from '../../../packages/connector-sdk/src/ports/stream-sink.js';
import { commitOne, type UnitOfWork } from '../../ports/unit-of-work.js';
import type { StreamStore } from '../../ports/stream-store.js';
import type { SequencedStreamChunk } from '../../../packages/connector-sdk/src/protocol/stream-chunk.js';

/** StreamSink of one attempt, appending through the unit of work: seq = base_seq + chunk.sequence. */
export class StreamStoreSink implements StreamSink {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly tenant_id: string,
    private readonly action_id: string,
    private readonly base_seq: number,
  ) {}

  async write(chunk: SequencedStreamChunk): Promise<void> {
    await commitOne(this.uow, {
      kind: 'stream.append',
      input: { tenant_id: this.tenant_id, action_id: this.action_id, seq: this.base_seq + chunk.sequence, chunk },
    });
  }
}

/** A sink for a new attempt, continuing after the action's last stored chunk. */
export async function openStreamSink(uow: UnitOfWork, store: StreamStore, tenant_id: string, action_id: string): Promise<StreamStoreSink> {
  return new StreamStoreSink(uow, tenant_id, action_id, await store.nextSeq({ tenant_id, action_id }));
}
