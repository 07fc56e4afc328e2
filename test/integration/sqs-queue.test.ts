/**
 * The SQS adapter, the consumer helpers and the local poller against fauxqs,
 * with the real SQSClient.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fc from 'fast-check';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { createSqsClient } from '../../lib/aws/clients.js';
import { SqsMessageQueue, decodeSqsRecord, handleSqsBatch, receiveMessages } from '../../lib/aws/sqs/queue.js';
import { createSqsPoller, failedItemIds, startSqsPoller } from '../../lib/aws/sqs/poller.js';
import { decodeQueueMessage, encodeQueueMessage, type InvokeMessage, type QueueMessage } from '../../lib/ports/messages.js';
import { isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';

let client: SQSClient;

beforeAll(() => {
  client = createSqsClient({ endpoint: inject('sqsEndpoint') });
});
afterAll(() => client.destroy());

async function createQueue(attributes: Record<string, string> = {}, fifo = false): Promise<string> {
  const name = `sqs-queue-test-${randomUUID().slice(0, 8)}${fifo ? '.fifo' : ''}`;
  const out = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: { ...(fifo ? { FifoQueue: 'true' } : {}), ...attributes } }));
  return out.QueueUrl as string;
}

async function counts(queueUrl: string): Promise<{ visible: number; inFlight: number; delayed: number }> {
  const out = await client.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const a = out.Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed),
  };
}

const invoke = (attempt: number, extra: Partial<InvokeMessage> = {}): InvokeMessage => ({
  kind: 'invoke',
  tenant_id: 'tenant-a',
  action_id: `act-${attempt}`,
  transaction_id: 'txn-1',
  fence: 7,
  attempt,
  ...extra,
});

describe('SqsMessageQueue against fauxqs', () => {
  it('sends a message that a consumer receives and decodes unchanged', async () => {
    const queueUrl = await createQueue();
    const queue = new SqsMessageQueue({ client, queueUrl });
    const message = invoke(1);
    const { messageId } = await queue.send(message);

    const [received] = await receiveMessages(client, queueUrl, { waitTimeSeconds: 5 });
    expect(received?.MessageId).toBe(messageId);
    expect(decodeQueueMessage(received?.Body ?? '')).toEqual(message);
    expect(JSON.parse(received?.Body ?? '')).toEqual(message);
  });

  it('holds a delayed message back', async () => {
    const queueUrl = await createQueue();
    const queue = new SqsMessageQueue({ client, queueUrl });
    await queue.send({ kind: 'reconcile', tenant_id: 't', transaction_id: 'x', reason: 'sweeper' }, { delaySeconds: 600 });
    expect(await receiveMessages(client, queueUrl, { waitTimeSeconds: 0 })).toEqual([]);
    expect((await counts(queueUrl)).delayed).toBe(1);
  });

  it('sends batches larger than ten in chunks', async () => {
    const queueUrl = await createQueue();
    const queue = new SqsMessageQueue({ client, queueUrl });
    const entries = Array.from({ length: 23 }, (_, i) => ({ id: `e${i}`, message: invoke(i + 1) }));
    const result = await queue.sendBatch(entries);
    expect(result.failed).toEqual([]);
    expect(result.sent.map((s) => s.id).sort()).toEqual(entries.map((e) => e.id).sort());
    expect((await counts(queueUrl)).visible).toBe(23);
  });

  it('reports per-entry failures of a batch and still sends the rest', async () => {
    // A FIFO queue without content-based deduplication rejects an entry that has no deduplication ID.
    const queueUrl = await createQueue({}, true);
    const queue = new SqsMessageQueue({ client, queueUrl });
    const result = await queue.sendBatch([
      { id: 'ok', message: invoke(1), options: { deduplicationId: 'dedup-1' } },
      { id: 'bad', message: invoke(2) },
    ]);
    expect(result.sent.map((s) => s.id)).toEqual(['ok']);
    expect(result.failed).toHaveLength(1);
    expect(result.failed[0]).toMatchObject({ id: 'bad', senderFault: true });
    const received = await receiveMessages(client, queueUrl, { waitTimeSeconds: 1 });
    expect(received.map((m) => decodeQueueMessage(m.Body ?? ''))).toEqual([invoke(1)]);
  });

  it('deduplicates on a FIFO queue by deduplication ID', async () => {
    const queueUrl = await createQueue({}, true);
    const queue = new SqsMessageQueue({ client, queueUrl });
    const first = await queue.send(invoke(1), { deduplicationId: 'same' });
    const second = await queue.send(invoke(1), { deduplicationId: 'same' });
    expect(second.messageId).toBe(first.messageId);
    expect((await counts(queueUrl)).visible).toBe(1);
  });

  it('rejects messages outside the schema before sending anything', async () => {
    const queueUrl = await createQueue();
    const queue = new SqsMessageQueue({ client, queueUrl, accepts: ['reconcile'] });
    const withInput = { ...invoke(1), input: { amount: 100, card: '4111111111111111' } } as unknown as QueueMessage;
    const withSecret = { kind: 'reconcile', tenant_id: 't', transaction_id: 'x', reason: 'schedule', secret: 'hunter2' } as unknown as QueueMessage;

    for (const bad of [withInput, withSecret]) {
      const err = await queue.send(bad).catch((e: unknown) => e);
      expect(isAipError(err, 'queue.message_invalid')).toBe(true);
      // The offending values never reach the error.
      expect(JSON.stringify((err as Error & { details: unknown }).details)).not.toMatch(/4111|hunter2/);
    }
    // The invoke kind is not accepted on this queue.
    await expect(queue.send(invoke(1))).rejects.toMatchObject({ code: 'queue.message_invalid' });
    // One invalid entry stops the whole batch.
    await expect(
      queue.sendBatch([
        { id: 'a', message: { kind: 'reconcile', tenant_id: 't', transaction_id: 'x', reason: 'schedule' } },
        { id: 'b', message: withSecret },
      ]),
    ).rejects.toMatchObject({ code: 'queue.message_invalid' });
    await expect(queue.send({ kind: 'reconcile', tenant_id: 't', transaction_id: 'x', reason: 'schedule' }, { delaySeconds: 901 })).rejects.toMatchObject({
      code: 'queue.message_invalid',
    });
    expect(await counts(queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('rejects raw fields on the consumer side too, and reports such records as failed', async () => {
    const queueUrl = await createQueue();
    // Written by something that bypassed the adapter.
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify({ ...invoke(1), raw_input: { to: 'x' } }) }));
    const messages = await receiveMessages(client, queueUrl, { waitTimeSeconds: 5 });
    expect(messages).toHaveLength(1);
    const record = {
      messageId: messages[0]?.MessageId ?? '',
      receiptHandle: messages[0]?.ReceiptHandle ?? '',
      body: messages[0]?.Body ?? '',
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'x', ApproximateFirstReceiveTimestamp: '0' },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
      awsRegion: 'us-east-1',
    };
    expect(() => decodeSqsRecord(record)).toThrow(expect.objectContaining({ code: 'queue.message_invalid' }));
    const invalid: string[] = [];
    let handled = 0;
    const response = await handleSqsBatch(
      { Records: [record] },
      async () => {
        handled++;
      },
      { onInvalid: (r) => invalid.push(r.messageId) },
    );
    expect(handled).toBe(0);
    expect(invalid).toEqual([record.messageId]);
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
  });

  it('accepts every schema-valid message and rejects any extra field (property)', () => {
    const id = fc.stringMatching(/^[A-Za-z0-9._:@/-]{1,40}$/);
    const message = fc.oneof(
      fc.record({
        kind: fc.constant('invoke' as const),
        tenant_id: id,
        action_id: id,
        transaction_id: id,
        fence: fc.nat(),
        attempt: fc.integer({ min: 1, max: 100 }),
      }),
      fc.record({
        kind: fc.constant('reconcile' as const),
        tenant_id: id,
        transaction_id: id,
        reason: fc.constantFrom('schedule' as const, 'sweeper' as const),
      }),
    );
    const extraKey = fc
      .string({ minLength: 1, maxLength: 12 })
      .filter((k) => !['kind', 'tenant_id', 'action_id', 'transaction_id', 'fence', 'attempt', 'reason'].includes(k));
    fc.assert(
      fc.property(message, extraKey, fc.jsonValue(), (m, k, v) => {
        expect(decodeQueueMessage(encodeQueueMessage(m))).toEqual(m);
        const body = JSON.stringify({ ...m, [k]: v });
        expect(() => decodeQueueMessage(body)).toThrow(expect.objectContaining({ code: 'queue.message_invalid' }));
      }),
    );
  });
});

describe('failedItemIds reads a partial batch response the way Lambda does', () => {
  const ids = new Set(['m1', 'm2']);
  it.each([
    [undefined, []],
    [null, []],
    [{}, []],
    [{ batchItemFailures: [] }, []],
    [{ batchItemFailures: null }, []],
    [{ batchItemFailures: [{ itemIdentifier: 'm2' }] }, ['m2']],
    [{ batchItemFailures: [{ itemIdentifier: '' }] }, 'all'],
    [{ batchItemFailures: [{ itemIdentifier: null }] }, 'all'],
    [{ batchItemFailures: [{ itemId: 'm1' }] }, 'all'],
    [{ batchItemFailures: [{ itemIdentifier: 'not-in-batch' }] }, 'all'],
    [{ batchItemFailures: 'm1' }, 'all'],
    ['ok', 'all'],
  ])('%j → %j', (response, expected) => {
    expect(failedItemIds(response, ids)).toEqual(expected);
  });
});

describe('SQS poller against fauxqs', () => {
  it('deletes the succeeded messages of a batch and redelivers the failed one', async () => {
    const queueUrl = await createQueue({ VisibilityTimeout: '30' });
    const queue = new SqsMessageQueue({ client, queueUrl });
    const sent = await queue.sendBatch([1, 2, 3].map((n) => ({ id: `m${n}`, message: invoke(n) })));
    expect(sent.failed).toEqual([]);
    const idOf = (n: number) => sent.sent.find((s) => s.id === `m${n}`)?.messageId;

    const events: SQSEvent[] = [];
    const poller = createSqsPoller({
      client,
      queueUrl,
      waitTimeSeconds: 5,
      // Make the failed message visible again at once rather than after 30 s.
      retryDelaySeconds: 0,
      handler: async (event) => {
        events.push(event);
        return handleSqsBatch(event, async ({ message }) => {
          if (message.kind === 'invoke' && message.attempt === 2) throw new Error('provider unavailable');
        });
      },
    });
    const result = await poller.pollOnce();
    expect([...result.received].sort()).toEqual([idOf(1), idOf(2), idOf(3)].sort());
    expect(result.failed).toEqual([idOf(2)]);
    expect([...result.succeeded].sort()).toEqual([idOf(1), idOf(3)].sort());
    expect(result.notDeleted).toEqual([]);

    // The handler saw a Lambda-shaped SQSEvent.
    const record = events[0]?.Records.find((r) => r.messageId === idOf(1));
    expect(record).toMatchObject({ eventSource: 'aws:sqs', awsRegion: 'us-east-1', attributes: { ApproximateReceiveCount: '1' } });
    expect(record?.eventSourceARN).toMatch(/^arn:aws:sqs:us-east-1:\d{12}:sqs-queue-test-/);
    expect(decodeSqsRecord(record!).message).toEqual(invoke(1));

    // Only the failed message comes back, on its second delivery.
    const again = await receiveMessages(client, queueUrl, { waitTimeSeconds: 5 });
    expect(again.map((m) => m.MessageId)).toEqual([idOf(2)]);
    expect(again[0]?.Attributes?.ApproximateReceiveCount).toBe('2');
    expect(await counts(queueUrl)).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
  });

  it('keeps the whole batch when the handler throws', async () => {
    const queueUrl = await createQueue({ VisibilityTimeout: '30' });
    const queue = new SqsMessageQueue({ client, queueUrl });
    await queue.sendBatch([1, 2].map((n) => ({ id: `m${n}`, message: invoke(n) })));
    const errors: unknown[] = [];
    const poller = createSqsPoller({
      client,
      queueUrl,
      waitTimeSeconds: 5,
      retryDelaySeconds: 0,
      onError: (e) => errors.push(e),
      handler: async () => {
        throw new Error('boom');
      },
    });
    const result = await poller.pollOnce();
    expect(result.received).toHaveLength(2);
    expect(result.succeeded).toEqual([]);
    expect(result.failed).toHaveLength(2);
    expect(errors).toHaveLength(1);
    const again = await receiveMessages(client, queueUrl, { waitTimeSeconds: 5 });
    expect(again.map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['2', '2']);
  });

  it('leaves a failed message invisible until its visibility timeout by default (as Lambda does)', async () => {
    const queueUrl = await createQueue({ VisibilityTimeout: '600' });
    const queue = new SqsMessageQueue({ client, queueUrl });
    await queue.send(invoke(1));
    const poller = createSqsPoller({
      client,
      queueUrl,
      waitTimeSeconds: 5,
      handler: async (event) => ({ batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) }),
    });
    const result = await poller.pollOnce();
    expect(result.failed).toHaveLength(1);
    expect(await counts(queueUrl)).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
  });

  it('brings a failed message back after the delay its consumer sets (redeliverAfter), not the visibility timeout', async () => {
    const queueUrl = await createQueue({ VisibilityTimeout: '600' });
    const queue = new SqsMessageQueue({ client, queueUrl });
    await queue.send(invoke(1));
    const poller = createSqsPoller({
      client,
      queueUrl,
      waitTimeSeconds: 5,
      // A deferred attempt: the handler sets the record's delay by its receipt handle, then reports it failed.
      handler: async (event) => {
        for (const r of event.Records) await queue.redeliverAfter(decodeSqsRecord(r).receiptHandle as string, 0);
        return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
      },
    });
    const result = await poller.pollOnce();
    expect(result.failed).toHaveLength(1);
    // Visible again at once, although the queue's visibility timeout is ten minutes: received a second time.
    const [again] = await receiveMessages(client, queueUrl, { waitTimeSeconds: 5 });
    expect(again?.MessageId).toBe(result.failed[0]);
    expect(decodeQueueMessage(again?.Body ?? '')).toEqual(invoke(1));
  });

  it('runs until its AbortSignal fires, finishing the batch in hand', async () => {
    const queueUrl = await createQueue();
    const queue = new SqsMessageQueue({ client, queueUrl });
    let resolveSeen!: (ids: string[]) => void;
    const seen = new Promise<string[]>((r) => (resolveSeen = r));
    const handled: string[] = [];
    const poller = startSqsPoller({
      client,
      queueUrl,
      waitTimeSeconds: 1,
      handler: async (event) =>
        handleSqsBatch(event, async ({ message }) => {
          if (message.kind === 'invoke') handled.push(message.action_id);
          if (handled.length === 3) resolveSeen([...handled]);
        }),
    });
    await queue.sendBatch([1, 2, 3].map((n) => ({ id: `m${n}`, message: invoke(n) })));
    expect((await seen).sort()).toEqual(['act-1', 'act-2', 'act-3']);
    await poller.stop();
    await expect(poller.stopped).resolves.toBeUndefined();
    expect(await counts(queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });
});
