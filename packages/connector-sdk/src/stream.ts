import { joinIssuePath } from './common/issues.js';
import type { Clock } from './ports/clock.js';
import type { StreamSink } from './ports/stream-sink.js';
import { ConnectorFailure, markSdkFailure, toConnectorFailure } from './failure.js';
import { StreamChunkSchema, type SequencedStreamChunk, type StreamChunk } from './protocol/stream-chunk.js';

/** What a connector sees as `context.stream`. */
export interface StreamPublisher {
  /** True when the capability was admitted with streaming. */
  readonly enabled: boolean;
  /**
   * Publishes one chunk. Resolves with its sequence number once the runtime
   * has persisted it (await it for back-pressure). Rejects with a
   * ConnectorFailure: `connector.operation_unsupported` (operation
   * `streaming`) when the capability has no streaming, `connector.stream_closed`
   * after the attempt ended or after an earlier chunk failed to persist,
   * `connector.stream_chunk_invalid` for a chunk that is not plain JSON.
   */
  emit(chunk: StreamChunk): Promise<{ readonly sequence: number }>;
}

export interface StreamSummary {
  /** Chunks accepted (sequence numbers 0 .. emitted-1). */
  readonly emitted: number;
  /** Chunks the sink persisted. */
  readonly persisted: number;
  /** The first persistence failure, if any (the stream stopped there). */
  readonly failure?: ConnectorFailure;
}

export interface RuntimeStreamPublisherOptions {
  readonly action_id: string;
  readonly attempt_id: string;
  readonly capability_id: string;
  readonly enabled: boolean;
  readonly sink?: StreamSink;
  readonly clock: Clock;
  readonly source?: string;
}

/**
 * The runtime-owned publisher behind `context.stream`.
 *
 * - Sequence numbers are assigned synchronously at `emit`, so they follow
 *   call order, start at 0 and increase by one.
 * - Sink writes are serialized: write n+1 starts only after write n
 *   resolved, so an async sink sees chunks in order, one at a time.
 * - A failed write breaks the stream; later chunks are rejected and never
 *   written, so the persisted sequence has no gaps.
 * - After `close()` (the attempt ended) every emit is rejected.
 * - Returned promises are marked handled: a connector that forgets to await
 *   does not crash the process; the failure still shows in the summary.
 */
export class RuntimeStreamPublisher implements StreamPublisher {
  readonly enabled: boolean;
  readonly #opts: RuntimeStreamPublisherOptions;
  #next = 0;
  #persisted = 0;
  #tail: Promise<void> = Promise.resolve();
  #closed = false;
  #failure: ConnectorFailure | undefined;

  constructor(opts: RuntimeStreamPublisherOptions) {
    if (opts.enabled && opts.sink === undefined) {
      throw new ConnectorFailure({
        code: 'connector.stream_sink_failed',
        message: 'streaming capability without a stream sink',
        operation: 'streaming',
        source: 'runtime:stream',
      });
    }
    this.enabled = opts.enabled;
    this.#opts = opts;
  }

  get closed(): boolean {
    return this.#closed;
  }

  emit(chunk: StreamChunk): Promise<{ readonly sequence: number }> {
    const p = this.#emit(chunk);
    p.catch(() => undefined);
    return p;
  }

  #emit(chunk: StreamChunk): Promise<{ readonly sequence: number }> {
    const source = this.#opts.source ?? 'runtime:stream';
    if (!this.enabled) {
      return Promise.reject(markSdkFailure(ConnectorFailure.unsupported('streaming', source, { capability_id: this.#opts.capability_id })));
    }
    if (this.#closed || this.#failure !== undefined) {
      return Promise.reject(
        markSdkFailure(
          new ConnectorFailure({
            code: 'connector.stream_closed',
            operation: 'streaming',
            source,
            redacted_details: { reason: this.#closed ? 'attempt_ended' : 'earlier_chunk_failed' },
          }),
        ),
      );
    }
    const parsed = StreamChunkSchema.safeParse(chunk);
    if (!parsed.success) {
      return Promise.reject(
        markSdkFailure(
          new ConnectorFailure({
            code: 'connector.stream_chunk_invalid',
            operation: 'streaming',
            source,
            redacted_details: { paths: parsed.error.issues.map((i) => joinIssuePath(i.path, '/')) },
          }),
        ),
      );
    }
    const sequence = this.#next++;
    const record: SequencedStreamChunk = Object.freeze({
      action_id: this.#opts.action_id,
      attempt_id: this.#opts.attempt_id,
      capability_id: this.#opts.capability_id,
      sequence,
      emitted_at: this.#opts.clock.now().toISOString(),
      chunk: structuredClone(parsed.data) as StreamChunk,
    });
    const sink = this.#opts.sink as StreamSink;
    const write = this.#tail.then(async () => {
      if (this.#failure !== undefined) throw this.#failure;
      try {
        await sink.write(record);
      } catch (err) {
        const failure = toSinkFailure(err, source);
        this.#failure ??= failure;
        throw failure;
      }
      this.#persisted += 1;
      return { sequence } as const;
    });
    this.#tail = write.then(
      () => undefined,
      () => undefined,
    );
    return write;
  }

  /** Ends the stream (the attempt ended): rejects later emits; with drain (default) waits for pending writes. */
  async close(options: { readonly drain?: boolean } = {}): Promise<StreamSummary> {
    this.#closed = true;
    if (options.drain !== false) await this.#tail;
    return this.summary();
  }

  summary(): StreamSummary {
    return this.#failure === undefined
      ? { emitted: this.#next, persisted: this.#persisted }
      : { emitted: this.#next, persisted: this.#persisted, failure: this.#failure };
  }
}

function toSinkFailure(err: unknown, source: string): ConnectorFailure {
  if (err instanceof ConnectorFailure) return markSdkFailure(err);
  const normalized = toConnectorFailure(err, 'streaming', source);
  return markSdkFailure(
    new ConnectorFailure({
      code: 'connector.stream_sink_failed',
      operation: 'streaming',
      source,
      redacted_details: { cause_code: normalized.code },
      cause: err,
    }),
  );
}
