/**
 * A small long-polling loop that feeds an SQS queue into a Lambda SQS handler,
 * the way Lambda's SQS event source mapping does with ReportBatchItemFailures.
 * `npm start` uses it to run the same worker and reconcile handlers locally.
 *
 * Per batch:
 * - ReceiveMessage (long poll), converted into an `SQSEvent`;
 * - the handler is called with that event and a local Lambda `Context`;
 * - the answer is read as Lambda reads a partial batch response:
 *   - null, undefined, `{}`, or an empty or null `batchItemFailures`: every record succeeded;
 *   - `batchItemFailures` listing message IDs of the batch: those failed;
 *   - the handler threw, or an item identifier is missing, empty, not a string or
 *     not in the batch, or the answer is otherwise malformed: the whole batch failed;
 * - succeeded messages are deleted; failed ones are left alone and reappear after
 *   their visibility timeout (or after `retryDelaySeconds`, if set), with a higher
 *   receive count, until the queue's redrive policy moves them to the DLQ.
 *
 * Differences from Lambda: batches run one at a time; there is no batching
 * window; the handler is not killed at its timeout (the Context only reports
 * the remaining time). The local stack runs its workers with
 * ./local-event-source.ts instead: several instances at once, and SQS fair
 * queues' delivery order emulated.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { GetQueueAttributesCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda';
import { changeVisibility, deleteMessages, receiveMessages, SQS_BATCH_MAX } from './queue.js';

export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | null | undefined>;

export interface SqsPollerOptions {
  readonly client: SQSClient;
  readonly queueUrl: string;
  readonly handler: SqsBatchHandler;
  /** Messages per batch, 1..10. Default 10. */
  readonly batchSize?: number;
  /** Long-poll wait, 0..20 s. Default 20. */
  readonly waitTimeSeconds?: number;
  /** Visibility timeout requested on receive; default: the queue's. */
  readonly visibilityTimeoutSeconds?: number;
  /**
   * Local-only convenience: make failed messages visible again after this
   * many seconds (ChangeMessageVisibility) instead of waiting for the
   * visibility timeout. Unset (the Lambda behaviour): leave them alone.
   */
  readonly retryDelaySeconds?: number;
  /** Queue ARN for the records' eventSourceARN; default: read once with GetQueueAttributes. */
  readonly queueArn?: string;
  /** Name in the local Context. Default: `local-<queue name>`. */
  readonly functionName?: string;
  /** Reported by `context.getRemainingTimeInMillis()`. Default 30 000 ms. */
  readonly functionTimeoutMs?: number;
  /** Receive/delete errors and handler errors (the loop keeps going). */
  readonly onError?: (error: unknown) => void;
  /** Pause after a receive error. Default 1 000 ms. */
  readonly errorBackoffMs?: number;
}

export interface PollResult {
  /** Message IDs received in this batch, in order. */
  readonly received: ReadonlyArray<string>;
  readonly succeeded: ReadonlyArray<string>;
  readonly failed: ReadonlyArray<string>;
  /** Succeeded messages whose delete failed; they will be redelivered. */
  readonly notDeleted: ReadonlyArray<string>;
  /** Set when the handler threw (the whole batch failed). */
  readonly handlerError?: unknown;
}

export interface SqsPoller {
  /** One receive → handle → delete cycle. */
  pollOnce(abortSignal?: AbortSignal): Promise<PollResult>;
  /** Polls until `signal` aborts; the batch in hand is finished first. */
  run(signal: AbortSignal): Promise<void>;
}

/** Interprets a handler's answer; `'all'` means the whole batch failed. */
export function failedItemIds(response: unknown, batchIds: ReadonlySet<string>): 'all' | string[] {
  if (response === null || response === undefined) return [];
  if (typeof response !== 'object' || Array.isArray(response)) return 'all';
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === null || failures === undefined) return [];
  if (!Array.isArray(failures)) return 'all';
  const ids = new Set<string>();
  for (const f of failures) {
    if (typeof f !== 'object' || f === null) return 'all';
    const id = (f as { itemIdentifier?: unknown }).itemIdentifier;
    if (typeof id !== 'string' || id === '' || !batchIds.has(id)) return 'all';
    ids.add(id);
  }
  return [...ids];
}

function toLambdaAttributes(attrs: Message['Attributes']): SQSRecordAttributes {
  const a = (attrs ?? {}) as Record<string, string | undefined>;
  const out: SQSRecordAttributes = {
    ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
    SentTimestamp: a.SentTimestamp ?? '',
    SenderId: a.SenderId ?? '',
    ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? '',
  };
  for (const key of ['AWSTraceHeader', 'SequenceNumber', 'MessageGroupId', 'MessageDeduplicationId', 'DeadLetterQueueSourceArn'] as const) {
    const v = a[key];
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function toLambdaMessageAttributes(attrs: Message['MessageAttributes']): SQSMessageAttributes {
  const out: SQSMessageAttributes = {};
  for (const [name, v] of Object.entries(attrs ?? {})) {
    out[name] = {
      dataType: v.DataType ?? 'String',
      stringListValues: [],
      binaryListValues: [],
      ...(v.StringValue !== undefined ? { stringValue: v.StringValue } : {}),
      ...(v.BinaryValue !== undefined ? { binaryValue: Buffer.from(v.BinaryValue).toString('base64') } : {}),
    };
  }
  return out;
}

/** Converts received SDK messages into the records of a Lambda SQSEvent. */
export function toSqsRecord(message: Message, queueArn: string, region: string): SQSRecord {
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: toLambdaAttributes(message.Attributes),
    messageAttributes: toLambdaMessageAttributes(message.MessageAttributes),
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/** A Lambda Context for a local invocation. */
export function localLambdaContext(functionName: string, timeoutMs: number, region: string): Context {
  const deadline = Date.now() + timeoutMs;
  const unsupported = () => {
    throw new Error('callback-style completion is not supported; return a promise');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/** What {@link runSqsBatch} needs: the poller's options, resolved. */
export interface SqsBatchRunOptions extends Pick<SqsPollerOptions, 'client' | 'queueUrl' | 'handler' | 'functionTimeoutMs' | 'retryDelaySeconds' | 'onError'> {
  readonly functionName: string;
  readonly region: string;
}

/**
 * One Lambda invocation of a received batch: calls the handler with the
 * records and a local Context, reads its answer as Lambda reads a partial
 * batch response ({@link failedItemIds}), deletes the succeeded messages and,
 * with `retryDelaySeconds`, makes the failed ones visible again after it.
 */
export async function runSqsBatch(options: SqsBatchRunOptions, records: SQSRecord[]): Promise<PollResult> {
  const { client, queueUrl, handler } = options;
  const received = records.map((r) => r.messageId);
  if (records.length === 0) return { received, succeeded: [], failed: [], notDeleted: [] };

  let failedIds: 'all' | string[];
  let handlerError: unknown;
  let threw = false;
  try {
    const response = await handler({ Records: records }, localLambdaContext(options.functionName, options.functionTimeoutMs ?? 30_000, options.region));
    failedIds = failedItemIds(response, new Set(received));
  } catch (err) {
    threw = true;
    handlerError = err;
    failedIds = 'all';
    options.onError?.(err);
  }
  const failedSet = new Set(failedIds === 'all' ? received : failedIds);
  const succeededRecords = records.filter((r) => !failedSet.has(r.messageId));
  const failedRecords = records.filter((r) => failedSet.has(r.messageId));

  const notDeletedHandles = new Set(
    await deleteMessages(
      client,
      queueUrl,
      succeededRecords.map((r) => r.receiptHandle),
    ),
  );
  if (options.retryDelaySeconds !== undefined) {
    for (const r of failedRecords) {
      try {
        await changeVisibility(client, queueUrl, r.receiptHandle, options.retryDelaySeconds);
      } catch (err) {
        options.onError?.(err);
      }
    }
  }
  return {
    received,
    succeeded: succeededRecords.map((r) => r.messageId),
    failed: failedRecords.map((r) => r.messageId),
    notDeleted: succeededRecords.filter((r) => notDeletedHandles.has(r.receiptHandle)).map((r) => r.messageId),
    ...(threw ? { handlerError } : {}),
  };
}

export function createSqsPoller(options: SqsPollerOptions): SqsPoller {
  const { client, queueUrl } = options;
  const batchSize = Math.min(SQS_BATCH_MAX, Math.max(1, options.batchSize ?? SQS_BATCH_MAX));
  const functionName = options.functionName ?? `local-${queueUrl.slice(queueUrl.lastIndexOf('/') + 1)}`;
  let source: { arn: string; region: string } | undefined;

  async function eventSource(): Promise<{ arn: string; region: string }> {
    if (source) return source;
    const region = await client.config.region();
    let arn = options.queueArn;
    if (!arn) {
      const out = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
      arn = out.Attributes?.QueueArn ?? '';
    }
    source = { arn, region };
    return source;
  }

  async function pollOnce(abortSignal?: AbortSignal): Promise<PollResult> {
    const { arn, region } = await eventSource();
    const messages = await receiveMessages(client, queueUrl, {
      maxMessages: batchSize,
      waitTimeSeconds: options.waitTimeSeconds ?? 20,
      ...(options.visibilityTimeoutSeconds !== undefined ? { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds } : {}),
      ...(abortSignal ? { abortSignal } : {}),
    });
    const records = messages.filter((m) => m.MessageId && m.ReceiptHandle).map((m) => toSqsRecord(m, arn, region));
    return runSqsBatch({ ...options, functionName, region }, records);
  }

  async function run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await pollOnce(signal);
      } catch (err) {
        if (signal.aborted) break;
        options.onError?.(err);
        try {
          await delay(options.errorBackoffMs ?? 1_000, undefined, { signal });
        } catch {
          break;
        }
      }
    }
  }

  return { pollOnce, run };
}

/** Polls until `signal` aborts. */
export function runSqsPoller(options: SqsPollerOptions & { readonly signal: AbortSignal }): Promise<void> {
  return createSqsPoller(options).run(options.signal);
}

/** Starts polling in the background; `stop()` aborts and waits for the batch in hand. */
export function startSqsPoller(options: SqsPollerOptions): { readonly stopped: Promise<void>; stop(): Promise<void> } {
  const controller = new AbortController();
  const stopped = runSqsPoller({ ...options, signal: controller.signal });
  return {
    stopped,
    stop: async () => {
      controller.abort();
      await stopped;
    },
  };
}
