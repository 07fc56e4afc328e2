/**
 * The messages the runtime puts on its queues.
 *
 * A message names work; it never carries it. It holds identifiers and fence
 * tokens only: never the action input, provider payloads, credentials or any
 * other secret. The worker reloads everything else from the durable record,
 * so a message that is read from a queue, a DLQ or a log reveals nothing.
 *
 * The schemas are strict: an unknown field (for example `input`, `secret` or
 * `credentials`) is rejected on both the sending and the receiving side.
 */
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { joinIssuePath } from '../../packages/connector-sdk/src/common/issues.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { IdSchema, TransactionIdSchema } from '../../packages/connector-sdk/src/protocol/primitives.js';

/**
 * A fence token: a non-negative safe integer that only ever grows. A worker
 * presents it on every conditional write, so a zombie attempt holding an older
 * token cannot settle over a newer one.
 */
export const FenceTokenSchema = z.int().check(z.gte(0));

/** Connector invocation: run (or re-drive) attempt `attempt` of action `action_id`. */
export const InvokeMessageSchema = z.deferred(() =>
  z.strictObject({
    kind: z.literal('invoke'),
    tenant_id: IdSchema,
    action_id: IdSchema,
    transaction_id: z.optional(TransactionIdSchema),
    fence: FenceTokenSchema,
    attempt: z.int().check(z.gte(1), z.lte(1_000_000)),
  }),
);
export type InvokeMessage = z.infer<typeof InvokeMessageSchema>;

/** Why a reconciliation was enqueued: its Scheduler schedule fired, the sweeper found it overdue, or an operator asked. */
export const RECONCILE_REASONS = ['schedule', 'sweeper', 'operator'] as const;

/** Reconciliation job for one `outcome_unknown` transaction. */
export const ReconcileMessageSchema = z.deferred(() =>
  z.strictObject({
    kind: z.literal('reconcile'),
    tenant_id: IdSchema,
    transaction_id: TransactionIdSchema,
    reason: z.enum(RECONCILE_REASONS),
  }),
);
export type ReconcileMessage = z.infer<typeof ReconcileMessageSchema>;

export const QueueMessageSchema = z.deferred(() => z.discriminatedUnion('kind', [InvokeMessageSchema, ReconcileMessageSchema]));
export type QueueMessage = z.infer<typeof QueueMessageSchema>;
export type QueueMessageKind = QueueMessage['kind'];

/** Upper bound for an encoded message; real ones are a few hundred bytes. */
export const QUEUE_MESSAGE_MAX_BYTES = 4_096;

function invalid(reason: string, issues?: z.core.$ZodIssue[]): AipError {
  // Only paths and issue codes go into details: never the offending values,
  // which could be exactly the raw input or secret this schema keeps out.
  const details: Record<string, unknown> = { reason };
  if (issues) {
    details.issues = issues.map((i) => ({
      path: joinIssuePath(i.path, '.'),
      code: i.code,
      ...(i.code === 'unrecognized_keys' ? { keys: (i as { keys: string[] }).keys } : {}),
    }));
  }
  return new AipError('queue.message_invalid', undefined, { details });
}

/** Validates a message; throws `queue.message_invalid` on anything else. */
export function validateQueueMessage(value: unknown): QueueMessage {
  const parsed = QueueMessageSchema.safeParse(value);
  if (!parsed.success) throw invalid('schema', parsed.error.issues);
  return parsed.data;
}

/** Validates and serialises a message into a queue message body. */
export function encodeQueueMessage(message: QueueMessage): string {
  const body = JSON.stringify(validateQueueMessage(message));
  if (Buffer.byteLength(body, 'utf8') > QUEUE_MESSAGE_MAX_BYTES) throw invalid('too_large');
  return body;
}

/** Parses and validates a queue message body; throws `queue.message_invalid`. */
export function decodeQueueMessage(body: string): QueueMessage {
  if (Buffer.byteLength(body, 'utf8') > QUEUE_MESSAGE_MAX_BYTES) throw invalid('too_large');
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw invalid('malformed_json');
  }
  return validateQueueMessage(value);
}
