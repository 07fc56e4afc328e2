/**
 * A stream chunk, as a streaming capability emits it, as the runtime persists
 * it and as `GET /v1/actions/{id}/stream` serves it. The connector SDK
 * re-exports it (src/index.ts).
 */
import * as z from '../common/zod.js';
import { JsonValueSchema, type JsonValue } from './json.js';
import { TextSchema } from './primitives.js';

/**
 * One incremental piece of output a streaming capability publishes through
 * `context.stream.emit`. Streaming output never replaces the terminal result.
 */
export const StreamChunkSchema = z.deferred(() =>
  z.discriminatedUnion('type', [
    /** A piece of text (e.g. a token delta or a log line). */
    z.strictObject({ type: z.literal('text'), text: z.string().check(z.maxLength(262_144)) }),
    /** A piece of structured output. */
    z.strictObject({ type: z.literal('data'), data: JsonValueSchema }),
    /** Progress in [0, 1] with an optional operator-safe message. */
    z.strictObject({ type: z.literal('progress'), progress: z.number().check(z.gte(0), z.lte(1)), message: z.optional(TextSchema(1024)) }),
  ]),
);
export type StreamChunk =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'data'; readonly data: JsonValue }
  | { readonly type: 'progress'; readonly progress: number; readonly message?: string };

/** A chunk as the runtime persists it: the publisher's sequence and attempt identity. */
export interface SequencedStreamChunk {
  readonly action_id: string;
  readonly attempt_id: string;
  readonly capability_id: string;
  /** 0, 1, 2, ... in emit order within the attempt. */
  readonly sequence: number;
  /** RFC 3339 time the publisher accepted the chunk. */
  readonly emitted_at: string;
  readonly chunk: StreamChunk;
}
