/**
 * Port: enqueue connector invocations and reconciliation jobs.
 *
 * Delivery is at least once. A message can arrive twice, late or after a
 * newer attempt; consumers rely on the fence token and the durable record's
 * conditional writes, never on the queue, for exactly-once effects.
 *
 * The AWS adapter is lib/aws/sqs/queue.ts (one instance per queue).
 */
import type { QueueMessage } from './messages.js';

export type { QueueMessage, QueueMessageKind } from './messages.js';

/**
 * Fairness between the tenants sharing a queue.
 *
 * - `tenant`: every message names its tenant as its fairness group. A queue
 *   that serves groups fairly (SQS fair queues on AWS, the local event
 *   source's emulation of them) then keeps one tenant's backlog, say 1 000
 *   invocations of a slow provider, from delaying another tenant's message:
 *   the next free worker gets the quiet tenant's message first.
 * - `none`: messages carry no group; the queue serves them oldest first, so a
 *   message waits behind every message sent before it.
 *
 * docs/queue-and-scheduler.md, "Fairness between tenants".
 */
export type QueueFairness = 'tenant' | 'none';

/** The fairness group of a message: its tenant (every message kind names one). */
export function fairnessGroupOf(message: QueueMessage): string {
  return message.tenant_id;
}

export interface QueueSendOptions {
  /** Delay before the message becomes visible, 0..900 s (standard queues only). */
  readonly delaySeconds?: number;
  /**
   * Deduplication ID (1..128 chars). Honoured by FIFO queues, whose 5-minute
   * window drops repeats; a standard queue has no deduplication, so the
   * adapter does not send it there. Correctness never depends on it.
   */
  readonly deduplicationId?: string;
}

export interface QueueSendResult {
  readonly messageId: string;
}

export interface QueueBatchEntry {
  /** Caller-chosen ID, unique in the batch: 1..80 of [A-Za-z0-9_-]. */
  readonly id: string;
  readonly message: QueueMessage;
  readonly options?: QueueSendOptions;
}

export interface QueueBatchFailure {
  readonly id: string;
  readonly code: string;
  /** True when the request itself was wrong; retrying it unchanged will fail again. */
  readonly senderFault: boolean;
  readonly message?: string;
}

export interface QueueBatchResult {
  readonly sent: ReadonlyArray<{ readonly id: string; readonly messageId: string }>;
  /** Entries that were not enqueued, after the adapter's own retries. */
  readonly failed: ReadonlyArray<QueueBatchFailure>;
}

export interface MessageQueue {
  /**
   * Validates and enqueues one message. Throws `queue.message_invalid` for a
   * message outside the schema (before any I/O), `queue.send_failed` when the
   * queue did not accept it.
   */
  send(message: QueueMessage, options?: QueueSendOptions): Promise<QueueSendResult>;
  /**
   * Enqueues many messages (chunked into batches of 10). Partial failures are
   * reported per entry in `failed`, never thrown; invalid messages throw
   * `queue.message_invalid` before anything is sent.
   */
  sendBatch(entries: ReadonlyArray<QueueBatchEntry>): Promise<QueueBatchResult>;
  /**
   * Consumer side: a received message that its consumer reports failed comes
   * back after `delaySeconds` (0..43 200) instead of the queue's visibility
   * timeout (SQS ChangeMessageVisibility by its receipt handle). A deferred
   * attempt's backoff (docs/workers.md, "Capacity deferral"). Optional: a
   * queue without it redelivers after its visibility timeout.
   */
  redeliverAfter?(receiptHandle: string, delaySeconds: number): Promise<void>;
}

/** A message as a consumer sees it, after decoding and validation. */
export interface ReceivedQueueMessage<M extends QueueMessage = QueueMessage> {
  /** Queue-assigned ID; the item identifier for partial batch failures. */
  readonly messageId: string;
  /** The receipt handle of this delivery (a visibility change names it). */
  readonly receiptHandle?: string;
  readonly message: M;
  /** 1 on first delivery; grows on every redelivery. */
  readonly receiveCount: number;
  readonly sentAt: Date | undefined;
}
