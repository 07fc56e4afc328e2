/**
 * SQS adapter for the queue port (lib/ports/queue.ts), plus the consumer-side
 * helpers the Lambda handlers and the local poller (./poller.ts) share.
 *
 * - Producer: `SqsMessageQueue` (SendMessage / SendMessageBatch). Every message
 *   is validated against the strict schema before any I/O. On a standard
 *   queue every message carries `MessageGroupId` = its tenant, which makes the
 *   queue an SQS fair queue (docs/queue-and-scheduler.md, "Fairness between
 *   tenants"); FIFO queues keep one group per transaction.
 * - Consumer in Lambda: `decodeSqsRecord` and `handleSqsBatch` turn an SQSEvent
 *   into decoded messages and an SQSBatchResponse (partial batch failures).
 * - Local consumer: `receiveMessages`, `deleteMessages`, `changeVisibility`.
 */
import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type Message,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { decodeQueueMessage, encodeValidQueueMessage, validateQueueMessage } from '../../ports/messages.js';
import { fairnessGroupOf } from '../../ports/queue.js';
import type {
  MessageQueue,
  QueueBatchEntry,
  QueueBatchFailure,
  QueueBatchResult,
  QueueMessage,
  QueueFairness,
  QueueMessageKind,
  QueueSendOptions,
  QueueSendResult,
  ReceivedQueueMessage,
} from '../../ports/queue.js';

/** SendMessageBatch / DeleteMessageBatch limit. */
export const SQS_BATCH_MAX = 10;
/** SQS limit on a message's visibility timeout, seconds (12 h). */
export const SQS_MAX_VISIBILITY_SECONDS = 43_200;
/** SQS per-message delay limit, seconds. */
export const SQS_MAX_DELAY_SECONDS = 900;
const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;
const DEDUP_ID = /^[\x21-\x7e]{1,128}$/;
/** SQS limit on `MessageGroupId` (FIFO and fair queues alike). */
export const SQS_MESSAGE_GROUP_ID_MAX = 128;

export interface SqsMessageQueueOptions {
  readonly client: SQSClient;
  readonly queueUrl: string;
  /** Message kinds this queue carries; others are rejected as `queue.message_invalid`. Default: all. */
  readonly accepts?: ReadonlyArray<QueueMessageKind>;
  /** FIFO queues only: message group of a message. Default: a hash of tenant and transaction (or action). */
  readonly messageGroupId?: (message: QueueMessage) => string;
  /**
   * Standard queues only. `tenant` (default): every message carries
   * `MessageGroupId` = {@link fairMessageGroupId}, so SQS serves the queue as a
   * fair queue. `none`: no group (oldest first). FIFO queues ignore it: their
   * group orders and locks, so a group per tenant would run a tenant's actions
   * one at a time.
   */
  readonly fairness?: QueueFairness;
  /** Extra SendMessageBatch rounds for entries that failed without sender fault. Default 2. */
  readonly batchRetries?: number;
}

function queueName(queueUrl: string): string {
  return queueUrl.slice(queueUrl.lastIndexOf('/') + 1);
}

function sendFailed(queueUrl: string, err: unknown): AipError {
  const name = err instanceof Error ? err.name : 'Error';
  return new AipError('queue.send_failed', undefined, { details: { queue: queueName(queueUrl), error: name }, cause: err });
}

function invalidOptions(reason: string): AipError {
  return new AipError('queue.message_invalid', undefined, { details: { reason } });
}

/** Default FIFO message group: one group per transaction (or per action without one). */
export function defaultMessageGroupId(message: QueueMessage): string {
  const subject = message.kind === 'invoke' ? (message.transaction_id ?? `action:${message.action_id}`) : message.transaction_id;
  return `g-${createHash('sha256')
    .update(JSON.stringify([message.tenant_id, subject]))
    .digest('base64url')}`;
}

/**
 * The fair-queue message group of a message: its tenant ID when it fits the
 * 128 characters SQS allows (tenant IDs use letters, digits and `. _ : @ / -`,
 * all valid in a group ID), else `#` + base64url(SHA-256(tenant ID)), which no
 * tenant ID can equal (`#` is not an ID character). The raw tenant ID keeps the
 * fair-queue metrics (noisy groups, Contributor Insights) readable; the body
 * already names the tenant, so the group reveals nothing more.
 */
export function fairMessageGroupId(message: QueueMessage): string {
  const tenant = fairnessGroupOf(message);
  return tenant.length <= SQS_MESSAGE_GROUP_ID_MAX ? tenant : `#${createHash('sha256').update(tenant).digest('base64url')}`;
}

export class SqsMessageQueue implements MessageQueue {
  readonly queueUrl: string;
  readonly fifo: boolean;
  /** What a standard queue's messages carry as their group (FIFO queues: not used). */
  readonly fairness: QueueFairness;
  private readonly client: SQSClient;
  private readonly accepts: ReadonlySet<QueueMessageKind> | undefined;
  private readonly groupId: (message: QueueMessage) => string;
  private readonly batchRetries: number;

  constructor(options: SqsMessageQueueOptions) {
    this.client = options.client;
    this.queueUrl = options.queueUrl;
    this.fifo = options.queueUrl.endsWith('.fifo');
    this.accepts = options.accepts ? new Set(options.accepts) : undefined;
    this.groupId = options.messageGroupId ?? defaultMessageGroupId;
    this.fairness = options.fairness ?? 'tenant';
    this.batchRetries = options.batchRetries ?? 2;
  }

  /** Validates the message and options; returns the wire fields of one entry. */
  private prepare(message: QueueMessage, options: QueueSendOptions = {}) {
    // Validated once: the body is the validated message, encoded (its size checked).
    const valid = validateQueueMessage(message);
    if (this.accepts && !this.accepts.has(valid.kind)) throw invalidOptions(`kind_not_accepted:${valid.kind}`);
    const body = encodeValidQueueMessage(valid);
    const fields: { MessageBody: string; DelaySeconds?: number; MessageDeduplicationId?: string; MessageGroupId?: string } = {
      MessageBody: body,
    };
    const { delaySeconds, deduplicationId } = options;
    if (delaySeconds !== undefined) {
      if (!Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > SQS_MAX_DELAY_SECONDS) {
        throw invalidOptions('delay_seconds_out_of_range');
      }
      if (this.fifo && delaySeconds !== 0) throw invalidOptions('fifo_queue_has_no_per_message_delay');
      if (delaySeconds > 0) fields.DelaySeconds = delaySeconds;
    }
    if (deduplicationId !== undefined && !DEDUP_ID.test(deduplicationId)) throw invalidOptions('deduplication_id_invalid');
    if (this.fifo) {
      fields.MessageGroupId = this.groupId(valid);
      if (deduplicationId !== undefined) fields.MessageDeduplicationId = deduplicationId;
    } else if (this.fairness === 'tenant') {
      // A standard queue with message groups is an SQS fair queue: a tenant's backlog does not delay other tenants.
      fields.MessageGroupId = fairMessageGroupId(valid);
    }
    return fields;
  }

  async send(message: QueueMessage, options?: QueueSendOptions): Promise<QueueSendResult> {
    const fields = this.prepare(message, options);
    let out;
    try {
      out = await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, ...fields }));
    } catch (err) {
      throw sendFailed(this.queueUrl, err);
    }
    if (!out.MessageId) throw sendFailed(this.queueUrl, new Error('SendMessage returned no MessageId'));
    return { messageId: out.MessageId };
  }

  async sendBatch(entries: ReadonlyArray<QueueBatchEntry>): Promise<QueueBatchResult> {
    // Validate everything first: an invalid entry sends nothing at all.
    const seen = new Set<string>();
    const prepared: SendMessageBatchRequestEntry[] = entries.map((e) => {
      if (!BATCH_ENTRY_ID.test(e.id)) throw invalidOptions('batch_entry_id_invalid');
      if (seen.has(e.id)) throw invalidOptions('batch_entry_id_duplicate');
      seen.add(e.id);
      return { Id: e.id, ...this.prepare(e.message, e.options) };
    });
    const sent: Array<{ id: string; messageId: string }> = [];
    const failed: QueueBatchFailure[] = [];
    for (let i = 0; i < prepared.length; i += SQS_BATCH_MAX) {
      const chunk = await this.sendChunk(prepared.slice(i, i + SQS_BATCH_MAX));
      sent.push(...chunk.sent);
      failed.push(...chunk.failed);
    }
    return { sent, failed };
  }

  /** ChangeMessageVisibility of a received message: it comes back after `delaySeconds` (clamped to SQS's 0..43 200). */
  async redeliverAfter(receiptHandle: string, delaySeconds: number): Promise<void> {
    const seconds = Math.min(SQS_MAX_VISIBILITY_SECONDS, Math.max(0, Math.ceil(delaySeconds)));
    await changeVisibility(this.client, this.queueUrl, receiptHandle, seconds);
  }

  private async sendChunk(chunk: SendMessageBatchRequestEntry[]): Promise<QueueBatchResult> {
    const sent: Array<{ id: string; messageId: string }> = [];
    const failed: QueueBatchFailure[] = [];
    let pending = chunk;
    for (let round = 0; pending.length > 0; round++) {
      const lastRound = round >= this.batchRetries;
      let out;
      try {
        out = await this.client.send(new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: pending }));
      } catch (err) {
        // The whole request failed (after the SDK's own retries).
        if (lastRound) {
          const code = err instanceof Error ? err.name : 'Error';
          failed.push(...pending.map((e) => ({ id: e.Id as string, code, senderFault: false })));
          break;
        }
        await delay(50 * 2 ** round);
        continue;
      }
      for (const s of out.Successful ?? []) {
        if (s.Id && s.MessageId) sent.push({ id: s.Id, messageId: s.MessageId });
      }
      const retry = new Set<string>();
      for (const f of out.Failed ?? []) {
        if (!f.Id) continue;
        if (!f.SenderFault && !lastRound) {
          retry.add(f.Id);
        } else {
          failed.push({ id: f.Id, code: f.Code ?? 'Unknown', senderFault: f.SenderFault ?? false, ...(f.Message ? { message: f.Message } : {}) });
        }
      }
      // An entry in neither list would be an SQS contract violation; report it rather than lose it.
      const answered = new Set([...(out.Successful ?? []).map((s) => s.Id), ...(out.Failed ?? []).map((f) => f.Id)]);
      for (const e of pending) {
        if (!answered.has(e.Id)) failed.push({ id: e.Id as string, code: 'NoResult', senderFault: false });
      }
      pending = pending.filter((e) => retry.has(e.Id as string));
      if (pending.length > 0) await delay(50 * 2 ** round);
    }
    return { sent, failed };
  }
}

// ---------------------------------------------------------------------------
// Consumer side (Lambda handlers)
// ---------------------------------------------------------------------------

/** Decodes one SQS record; throws `queue.message_invalid` for a body outside the schema. */
export function decodeSqsRecord(record: SQSRecord): ReceivedQueueMessage {
  const receiveCount = Number.parseInt(record.attributes?.ApproximateReceiveCount ?? '1', 10);
  const sent = Number.parseInt(record.attributes?.SentTimestamp ?? '', 10);
  return {
    messageId: record.messageId,
    ...(record.receiptHandle ? { receiptHandle: record.receiptHandle } : {}),
    message: decodeQueueMessage(record.body),
    receiveCount: Number.isFinite(receiveCount) && receiveCount > 0 ? receiveCount : 1,
    sentAt: Number.isFinite(sent) ? new Date(sent) : undefined,
  };
}

export interface HandleSqsBatchOptions {
  /** Records processed at once. Default 1 (in order). */
  readonly concurrency?: number;
  /** Called for a record whose body is not a valid message (it is reported failed, so it ends in the DLQ). */
  readonly onInvalid?: (record: SQSRecord, error: AipError) => void;
  /** Called when the handler throws for a record (it is reported failed and redelivered). */
  readonly onError?: (received: ReceivedQueueMessage, error: unknown) => void;
}

/**
 * Runs `handle` for each record and answers with the partial batch response:
 * a record fails when its body is invalid or `handle` throws; the others are
 * deleted by the event source. Invalid bodies are not acknowledged: with the
 * queue's redrive policy they move to the DLQ, where the alarm surfaces them.
 */
export async function handleSqsBatch(
  event: SQSEvent,
  handle: (received: ReceivedQueueMessage) => Promise<void>,
  options: HandleSqsBatchOptions = {},
): Promise<SQSBatchResponse> {
  const failures: string[] = [];
  const records = event.Records ?? [];
  const one = async (record: SQSRecord): Promise<void> => {
    let received: ReceivedQueueMessage;
    try {
      received = decodeSqsRecord(record);
    } catch (err) {
      failures.push(record.messageId);
      if (isAipError(err)) options.onInvalid?.(record, err);
      return;
    }
    try {
      await handle(received);
    } catch (err) {
      failures.push(record.messageId);
      options.onError?.(received, err);
    }
  };
  const width = Math.max(1, Math.floor(options.concurrency ?? 1));
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, records.length) }, async () => {
      while (next < records.length) {
        const record = records[next++] as SQSRecord;
        await one(record);
      }
    }),
  );
  // Keep the event's order in the response.
  const failed = new Set(failures);
  return { batchItemFailures: records.filter((r) => failed.has(r.messageId)).map((r) => ({ itemIdentifier: r.messageId })) };
}

// ---------------------------------------------------------------------------
// Local consumer helpers (the poller)
// ---------------------------------------------------------------------------

export interface ReceiveOptions {
  /** 1..10, default 10. */
  readonly maxMessages?: number;
  /** Long-poll wait, 0..20 s, default 20. */
  readonly waitTimeSeconds?: number;
  /** Overrides the queue's visibility timeout for these messages. */
  readonly visibilityTimeoutSeconds?: number;
  readonly abortSignal?: AbortSignal;
}

/** ReceiveMessage with all system and message attributes (what Lambda's event source asks for). */
export async function receiveMessages(client: SQSClient, queueUrl: string, options: ReceiveOptions = {}): Promise<Message[]> {
  const out = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: options.maxMessages ?? SQS_BATCH_MAX,
      WaitTimeSeconds: options.waitTimeSeconds ?? 20,
      ...(options.visibilityTimeoutSeconds !== undefined ? { VisibilityTimeout: options.visibilityTimeoutSeconds } : {}),
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
    options.abortSignal ? { abortSignal: options.abortSignal } : undefined,
  );
  return out.Messages ?? [];
}

/**
 * Deletes messages by receipt handle (DeleteMessageBatch, in chunks of 10).
 * Returns the receipt handles that could not be deleted; those messages will
 * reappear after their visibility timeout, which at-least-once consumers tolerate.
 */
export async function deleteMessages(client: SQSClient, queueUrl: string, receiptHandles: ReadonlyArray<string>): Promise<string[]> {
  const notDeleted: string[] = [];
  for (let i = 0; i < receiptHandles.length; i += SQS_BATCH_MAX) {
    const chunk = receiptHandles.slice(i, i + SQS_BATCH_MAX);
    const entries = chunk.map((handle, j) => ({ Id: `m${j}`, ReceiptHandle: handle }));
    try {
      const out = await client.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
      for (const f of out.Failed ?? []) {
        const entry = entries.find((e) => e.Id === f.Id);
        if (entry) notDeleted.push(entry.ReceiptHandle);
      }
    } catch {
      notDeleted.push(...chunk);
    }
  }
  return notDeleted;
}

/** ChangeMessageVisibility: makes a received message visible again after `seconds` (0 = now). */
export async function changeVisibility(client: SQSClient, queueUrl: string, receiptHandle: string, seconds: number): Promise<void> {
  await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds }));
}
