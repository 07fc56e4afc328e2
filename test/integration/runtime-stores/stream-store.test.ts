/**
 * StreamStore against DynamoDB Local, and the StreamSink adapter driven by the
 * connector SDK's RuntimeStreamPublisher.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuntimeStreamPublisher } from '../../../packages/connector-sdk/src/stream.js';
import type { SequencedStreamChunk } from '../../../packages/connector-sdk/src/protocol/stream-chunk.js';
import { DEFAULT_STREAM_RETENTION_SECONDS } from '../../../lib/aws/dynamo/stream-store.js';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import { ManualClock } from '../../../packages/connector-sdk/src/ports/clock.js';
import { openStreamSink } from '../../../lib/runtime/attempts/stream-sink.js';
import { RACERS, TENANT, OTHER_TENANT, aipError, createStores, uid, type Stores } from './support.js';

let s: Stores;
beforeAll(async () => {
  s = await createStores('streams');
});
afterAll(async () => {
  await s?.table.destroy();
});

function chunk(action_id: string, sequence: number, attempt_id = 'att-1'): SequencedStreamChunk {
  return { action_id, attempt_id, capability_id: 'llm.complete', sequence, emitted_at: s.clock.iso(), chunk: { type: 'text', text: `part ${sequence}` } };
}

describe('append', () => {
  it('stores a chunk with a TTL', async () => {
    const id = uid('act');
    const stored = await s.streams.append({ tenant_id: TENANT, action_id: id, seq: 0, chunk: chunk(id, 0) });
    expect(stored).toMatchObject({ tenant_id: TENANT, action_id: id, seq: 0, stored_at: s.clock.iso() });
    const raw = await s.rawItem(keys.streamChunk(TENANT, id, 0));
    expect(raw?.ttl).toBe(Math.floor(Date.parse(s.clock.iso()) / 1000) + DEFAULT_STREAM_RETENTION_SECONDS);
  });

  it('is conditional on the seq not existing (stream.sequence_conflict)', async () => {
    const id = uid('act');
    await s.streams.append({ tenant_id: TENANT, action_id: id, seq: 0, chunk: chunk(id, 0, 'att-1') });
    const err = await aipError(s.streams.append({ tenant_id: TENANT, action_id: id, seq: 0, chunk: chunk(id, 0, 'att-2') }));
    expect(err.code).toBe('stream.sequence_conflict');
    expect(err.details).toMatchObject({ seq: 0, existing_attempt_id: 'att-1' });
  });

  it(`${RACERS} concurrent writers of the same seq: exactly one lands`, async () => {
    const id = uid('act');
    const results = await Promise.allSettled(
      Array.from({ length: RACERS }, (_, i) => s.streams.append({ tenant_id: TENANT, action_id: id, seq: 3, chunk: chunk(id, 3, `att-${i}`) })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('rejects a chunk of another action or a malformed chunk', async () => {
    const id = uid('act');
    expect((await aipError(s.streams.append({ tenant_id: TENANT, action_id: id, seq: 0, chunk: chunk('other', 0) }))).code).toBe('stream.invalid_chunk');
    const bad = { ...chunk(id, 0), chunk: { type: 'progress', progress: 7 } } as unknown as SequencedStreamChunk;
    expect((await aipError(s.streams.append({ tenant_id: TENANT, action_id: id, seq: 0, chunk: bad }))).code).toBe('stream.invalid_chunk');
    expect((await aipError(s.streams.append({ tenant_id: TENANT, action_id: id, seq: -1, chunk: chunk(id, 0) }))).code).toBe('stream.invalid_chunk');
  });
});

describe('key attributes not stored again', () => {
  it('a chunk stores no attribute its key holds; one written the old way (with them) lists and numbers the same', async () => {
    const id = uid('act');
    const lean = await s.streams.append({ tenant_id: TENANT, action_id: id, seq: 0, chunk: chunk(id, 0) });
    const raw = (await s.rawItem(keys.streamChunk(TENANT, id, 0))) as Record<string, unknown>;
    for (const attribute of ['tenant_id', 'action_id', 'seq', 'item_type']) expect(raw).not.toHaveProperty(attribute);
    // The previous code's shape of the next chunk: the key attributes repeated on the item.
    const old = chunk(id, 1);
    await s.table.client.send(
      new PutCommand({
        TableName: s.table.tableName,
        Item: { ...keys.streamChunk(TENANT, id, 1), item_type: 'stream_chunk', tenant_id: TENANT, action_id: id, seq: 1, chunk: old, stored_at: s.clock.iso() },
      }),
    );
    expect((await s.streams.list({ tenant_id: TENANT, action_id: id })).items).toEqual([
      lean,
      { tenant_id: TENANT, action_id: id, seq: 1, chunk: old, stored_at: s.clock.iso() },
    ]);
    expect(await s.streams.nextSeq({ tenant_id: TENANT, action_id: id })).toBe(2);
    await s.streams.append({ tenant_id: TENANT, action_id: id, seq: 2, chunk: chunk(id, 2) });
    expect(await s.streams.nextSeq({ tenant_id: TENANT, action_id: id })).toBe(3);
  });
});

describe('list and nextSeq', () => {
  it('lists in seq order, after a given seq, with pagination, tenant-scoped', async () => {
    const id = uid('act');
    // Written out of order on purpose: the key order is the seq order.
    for (const seq of [4, 0, 2, 1, 3, 10]) await s.streams.append({ tenant_id: TENANT, action_id: id, seq, chunk: chunk(id, seq) });
    await s.streams.append({ tenant_id: OTHER_TENANT, action_id: id, seq: 5, chunk: chunk(id, 5) });
    expect((await s.streams.list({ tenant_id: TENANT, action_id: id })).items.map((c) => c.seq)).toEqual([0, 1, 2, 3, 4, 10]);
    expect((await s.streams.list({ tenant_id: TENANT, action_id: id, after: 2 })).items.map((c) => c.seq)).toEqual([3, 4, 10]);
    const p1 = await s.streams.list({ tenant_id: TENANT, action_id: id, limit: 4 });
    expect(p1.items.map((c) => c.seq)).toEqual([0, 1, 2, 3]);
    const p2 = await s.streams.list({ tenant_id: TENANT, action_id: id, limit: 4, cursor: p1.cursor as string });
    expect(p2.items.map((c) => c.seq)).toEqual([4, 10]);
    expect(await s.streams.nextSeq({ tenant_id: TENANT, action_id: id })).toBe(11);
    expect(await s.streams.nextSeq({ tenant_id: TENANT, action_id: uid('empty') })).toBe(0);
  });

  it('stream chunks share the action partition with the action and route items without mixing into them', async () => {
    const id = uid('act');
    await s.streams.append({ tenant_id: TENANT, action_id: id, seq: 0, chunk: chunk(id, 0) });
    expect(await s.routes.get({ tenant_id: TENANT, action_id: id })).toBeUndefined();
    expect(await s.actions.get({ tenant_id: TENANT, action_id: id })).toBeUndefined();
  });

  it('rejects a cursor of another stream', async () => {
    const a = uid('act');
    for (const seq of [0, 1]) await s.streams.append({ tenant_id: TENANT, action_id: a, seq, chunk: chunk(a, seq) });
    const page = await s.streams.list({ tenant_id: TENANT, action_id: a, limit: 1 });
    expect((await aipError(s.streams.list({ tenant_id: TENANT, action_id: uid('act'), cursor: page.cursor as string }))).code).toBe('stream.invalid_chunk');
  });
});

describe('StreamStoreSink with the runtime stream publisher', () => {
  it('persists a publisher stream in order; a second attempt continues the action stream after the first', async () => {
    const id = uid('act');
    const clock = new ManualClock(Date.parse(s.clock.iso()));
    for (const attempt of ['att-1', 'att-2']) {
      const sink = await openStreamSink(s.uow, s.streams, TENANT, id);
      const pub = new RuntimeStreamPublisher({ action_id: id, attempt_id: attempt, capability_id: 'llm.complete', enabled: true, sink, clock });
      await Promise.all([
        pub.emit({ type: 'text', text: `${attempt} a` }),
        pub.emit({ type: 'progress', progress: 0.5 }),
        pub.emit({ type: 'data', data: { n: 1 } }),
      ]);
      const summary = await pub.close();
      expect(summary).toMatchObject({ emitted: 3, persisted: 3 });
    }
    const items = (await s.streams.list({ tenant_id: TENANT, action_id: id })).items;
    expect(items.map((c) => [c.seq, c.chunk.attempt_id, c.chunk.sequence])).toEqual([
      [0, 'att-1', 0],
      [1, 'att-1', 1],
      [2, 'att-1', 2],
      [3, 'att-2', 0],
      [4, 'att-2', 1],
      [5, 'att-2', 2],
    ]);
  });

  it('a zombie attempt racing a newer one on the same seqs breaks its own stream, never overwrites', async () => {
    const id = uid('act');
    const clock = new ManualClock(Date.parse(s.clock.iso()));
    const zombieSink = await openStreamSink(s.uow, s.streams, TENANT, id);
    const newSink = await openStreamSink(s.uow, s.streams, TENANT, id);
    const fresh = new RuntimeStreamPublisher({ action_id: id, attempt_id: 'new', capability_id: 'llm.complete', enabled: true, sink: newSink, clock });
    await fresh.emit({ type: 'text', text: 'fresh' });
    const zombie = new RuntimeStreamPublisher({ action_id: id, attempt_id: 'zombie', capability_id: 'llm.complete', enabled: true, sink: zombieSink, clock });
    await expect(zombie.emit({ type: 'text', text: 'stale' })).rejects.toMatchObject({ code: 'connector.stream_sink_failed' });
    const items = (await s.streams.list({ tenant_id: TENANT, action_id: id })).items;
    expect(items.map((c) => c.chunk.attempt_id)).toEqual(['new']);
  });
});
