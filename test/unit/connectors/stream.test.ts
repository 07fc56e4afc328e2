import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../packages/connector-sdk/src/ports/clock.js';
import { ConnectorFailure } from '../../../packages/connector-sdk/src/index.js';
import { ControlledSink, MemorySink, T0, attempt, flushMicrotasks } from './fixtures.js';

describe('context.stream publisher', () => {
  it('assigns monotonically increasing sequence numbers in emit order', async () => {
    const sink = new MemorySink();
    const a = attempt({ streaming: true }, { stream_sink: sink, clock: new ManualClock(T0) });
    const receipts = await Promise.all([0, 1, 2, 3, 4].map((i) => a.context.stream.emit({ type: 'text', text: `t${i}` })));
    expect(receipts.map((r) => r.sequence)).toEqual([0, 1, 2, 3, 4]);
    expect(sink.written.map((c) => [c.sequence, c.chunk])).toEqual([0, 1, 2, 3, 4].map((i) => [i, { type: 'text', text: `t${i}` }]));
    expect(sink.written[0]).toMatchObject({ action_id: 'act-1', attempt_id: 'att-1', capability_id: 'payments.charge', emitted_at: T0.toISOString() });
  });

  it('serializes writes to an async sink: one at a time, in order, whatever order the sink would finish in', async () => {
    const sink = new ControlledSink();
    const a = attempt({ streaming: true }, { stream_sink: sink });
    const p = [
      a.context.stream.emit({ type: 'text', text: 'a' }),
      a.context.stream.emit({ type: 'data', data: { n: 1 } }),
      a.context.stream.emit({ type: 'progress', progress: 0.5 }),
    ];
    await flushMicrotasks();
    expect(sink.pending).toHaveLength(1);
    expect(sink.maxInFlight).toBe(1);
    for (let i = 0; i < 3; i++) {
      await flushMicrotasks();
      expect(sink.inFlight).toBe(1);
      sink.pending[i]?.resolve();
    }
    await Promise.all(p);
    expect(sink.maxInFlight).toBe(1);
    expect(sink.written.map((c) => c.sequence)).toEqual([0, 1, 2]);
  });

  it('rejects emits after the attempt ended', async () => {
    const sink = new MemorySink();
    const a = attempt({ streaming: true }, { stream_sink: sink });
    await a.context.stream.emit({ type: 'text', text: 'before' });
    const summary = await a.end();
    expect(summary).toEqual({ emitted: 1, persisted: 1 });
    await expect(a.context.stream.emit({ type: 'text', text: 'after' })).rejects.toMatchObject({ code: 'connector.stream_closed', operation: 'streaming' });
    expect(sink.written).toHaveLength(1);
  });

  it('end() waits for pending writes so the terminal result follows every chunk', async () => {
    const sink = new ControlledSink();
    const a = attempt({ streaming: true }, { stream_sink: sink });
    void a.context.stream.emit({ type: 'text', text: 'x' });
    let ended = false;
    const end = a.end().then(() => (ended = true));
    await flushMicrotasks();
    expect(ended).toBe(false);
    sink.pending[0]?.resolve();
    await end;
    expect(sink.written).toHaveLength(1);
  });

  it('is available only for capabilities admitted with streaming', async () => {
    const a = attempt({ streaming: false });
    expect(a.context.stream.enabled).toBe(false);
    const err = await a.context.stream.emit({ type: 'text', text: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorFailure);
    expect((err as ConnectorFailure).toJSON()).toMatchObject({
      code: 'connector.operation_unsupported',
      category: 'permanent',
      retryable: false,
      operation: 'streaming',
    });
  });

  it('stops at the first failed write so the persisted sequence has no gaps', async () => {
    const sink = new ControlledSink();
    const a = attempt({ streaming: true }, { stream_sink: sink });
    const first = a.context.stream.emit({ type: 'text', text: '0' });
    const second = a.context.stream.emit({ type: 'text', text: '1' });
    const third = a.context.stream.emit({ type: 'text', text: '2' });
    await flushMicrotasks();
    sink.pending[0]?.resolve();
    await first;
    await flushMicrotasks();
    sink.pending[1]?.reject(new Error('dynamo down'));
    await expect(second).rejects.toMatchObject({ code: 'connector.stream_sink_failed' });
    await expect(third).rejects.toMatchObject({ code: 'connector.stream_sink_failed' });
    await expect(a.context.stream.emit({ type: 'text', text: '3' })).rejects.toMatchObject({ code: 'connector.stream_closed' });
    expect(sink.pending).toHaveLength(2);
    expect(sink.written.map((c) => c.sequence)).toEqual([0]);
    const summary = await a.end();
    expect(summary.persisted).toBe(1);
    expect(summary.failure?.code).toBe('connector.stream_sink_failed');
  });

  it('rejects a chunk that is not plain JSON', async () => {
    const a = attempt({ streaming: true }, { stream_sink: new MemorySink() });
    await expect(a.context.stream.emit({ type: 'data', data: new Date() as never })).rejects.toMatchObject({ code: 'connector.stream_chunk_invalid' });
  });
});
