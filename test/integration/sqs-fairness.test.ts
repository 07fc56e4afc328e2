/**
 * Fairness between tenants on the work queues (docs/queue-and-scheduler.md,
 * "Fairness between tenants"), against fauxqs with the real SQSClient:
 * - the producer puts `MessageGroupId` = tenant on every message it sends to
 *   a standard queue (what makes it an SQS fair queue on AWS), checked on the
 *   wire; none with `fairness: 'none'`; FIFO queues keep a group per
 *   transaction;
 * - the local event source (the local stack's emulation of Lambda's event
 *   source and of a fair queue's delivery order) hands a tenant's message
 *   queued behind another tenant's backlog to the next free instance with
 *   fairness on, and after the whole backlog with fairness off.
 * Orders are asserted, never times; nothing sleeps.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CreateQueueCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createSqsClient } from '../../lib/aws/clients.js';
import {
  SQS_MESSAGE_GROUP_ID_MAX,
  SqsMessageQueue,
  decodeSqsRecord,
  defaultMessageGroupId,
  fairMessageGroupId,
  receiveMessages,
} from '../../lib/aws/sqs/queue.js';
import { messageGroupOf, startLocalEventSource } from '../../lib/aws/sqs/local-event-source.js';
import type { InvokeMessage } from '../../lib/ports/messages.js';
import type { QueueFairness } from '../../lib/ports/queue.js';

let client: SQSClient;
/** JSON bodies of the SendMessage / SendMessageBatch requests the client put on the wire. */
const wire: Array<{ target: string; body: Record<string, unknown> }> = [];

beforeAll(() => {
  client = createSqsClient({ endpoint: inject('sqsEndpoint') });
  client.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string>; body?: unknown };
      const target = request.headers?.['x-amz-target'] ?? '';
      // AWS JSON 1.0: the body is the JSON the SQS API receives (a string or its UTF-8 bytes).
      const body = typeof request.body === 'string' ? request.body : request.body instanceof Uint8Array ? new TextDecoder().decode(request.body) : undefined;
      if (body !== undefined && /SendMessage/.test(target)) wire.push({ target, body: JSON.parse(body) as Record<string, unknown> });
      return next(args);
    },
    { step: 'finalizeRequest', name: 'captureSqsSends' },
  );
});
afterAll(() => client.destroy());

async function createQueue(fifo = false): Promise<string> {
  const name = `sqs-fairness-${randomUUID().slice(0, 8)}${fifo ? '.fifo' : ''}`;
  const out = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '30', ...(fifo ? { FifoQueue: 'true' } : {}) } }));
  return out.QueueUrl as string;
}

const invoke = (tenant_id: string, n: number): InvokeMessage => ({
  kind: 'invoke',
  tenant_id,
  action_id: `act-${n}`,
  transaction_id: `txn-${n}`,
  fence: 1,
  attempt: 1,
});

/** The wire requests sent to one queue since `from`. */
function sentTo(queueUrl: string, from: number) {
  return wire.slice(from).filter((w) => w.body.QueueUrl === queueUrl);
}

describe('the producer names the tenant as the message group (SQS fair queues)', () => {
  it('puts MessageGroupId = tenant on SendMessage and on every SendMessageBatch entry of a standard queue', async () => {
    const queueUrl = await createQueue();
    const queue = new SqsMessageQueue({ client, queueUrl });
    expect(queue.fairness).toBe('tenant');
    const from = wire.length;
    await queue.send(invoke('tenant-a', 1));
    const batch = await queue.sendBatch([
      { id: 'b1', message: invoke('tenant-b', 2) },
      { id: 'r1', message: { kind: 'reconcile', tenant_id: 'tenant-c', transaction_id: 'txn-9', reason: 'sweeper' } },
    ]);
    expect(batch.failed).toEqual([]);
    const [single, many] = sentTo(queueUrl, from);
    expect(single?.target).toBe('AmazonSQS.SendMessage');
    expect(single?.body).toMatchObject({ MessageGroupId: 'tenant-a' });
    expect(single?.body).not.toHaveProperty('MessageDeduplicationId');
    expect(many?.target).toBe('AmazonSQS.SendMessageBatch');
    const entries = (many?.body.Entries ?? []) as Array<Record<string, unknown>>;
    expect(entries.map((e) => e.MessageGroupId)).toEqual(['tenant-b', 'tenant-c']);
    // fauxqs accepts the group on a standard queue (it keeps no group there: see the local event source).
    expect(await receiveMessages(client, queueUrl, { waitTimeSeconds: 1 })).toHaveLength(3);
  });

  it('sends no group with fairness "none" (oldest first, the behaviour before fair queues)', async () => {
    const queueUrl = await createQueue();
    const queue = new SqsMessageQueue({ client, queueUrl, fairness: 'none' });
    const from = wire.length;
    await queue.send(invoke('tenant-a', 1));
    await queue.sendBatch([{ id: 'b1', message: invoke('tenant-b', 2) }]);
    const [single, many] = sentTo(queueUrl, from);
    expect(single?.body).not.toHaveProperty('MessageGroupId');
    expect((many!.body.Entries as Array<Record<string, unknown>>)[0]).not.toHaveProperty('MessageGroupId');
  });

  it('keeps one group per transaction on a FIFO queue, whatever the fairness (a group per tenant would serialise it)', async () => {
    const queueUrl = await createQueue(true);
    const queue = new SqsMessageQueue({ client, queueUrl });
    const from = wire.length;
    const message = invoke('tenant-a', 1);
    await queue.send(message, { deduplicationId: 'd-1' });
    const [single] = sentTo(queueUrl, from);
    expect(single?.body).toMatchObject({ MessageGroupId: defaultMessageGroupId(message), MessageDeduplicationId: 'd-1' });
    expect(single?.body.MessageGroupId).not.toBe('tenant-a');
  });

  it('hashes a tenant ID longer than the 128 characters SQS allows into a group no tenant ID can equal', () => {
    const long = `t${'x'.repeat(200)}`;
    const group = fairMessageGroupId(invoke(long, 1));
    expect(group).toMatch(/^#[A-Za-z0-9_-]{43}$/);
    expect(group.length).toBeLessThanOrEqual(SQS_MESSAGE_GROUP_ID_MAX);
    expect(fairMessageGroupId(invoke(long, 2))).toBe(group);
    const edge = 'e'.repeat(SQS_MESSAGE_GROUP_ID_MAX);
    expect(fairMessageGroupId(invoke(edge, 1))).toBe(edge);
  });
});

describe('local event source: a tenant queued behind another tenant’s backlog', () => {
  const BACKLOG = 12;

  /**
   * Tenant A's BACKLOG invocations, then tenant B's one, all queued before the
   * source starts. One instance, batches of 1. The first batch is held until
   * the source has read every message ahead, so the order of the rest is the
   * backlog's decision alone. Returns the delivery order.
   */
  async function deliveryOrder(fairness: QueueFairness): Promise<string[]> {
    const queueUrl = await createQueue();
    const producer = new SqsMessageQueue({ client, queueUrl });
    const sent = await producer.sendBatch(Array.from({ length: BACKLOG }, (_, i) => ({ id: `a${i + 1}`, message: invoke('tenant-a', i + 1) })));
    expect(sent.failed).toEqual([]);
    await producer.send(invoke('tenant-b', 100));

    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let readAhead!: () => void;
    const allRead = new Promise<void>((r) => (readAhead = r));
    let finished!: () => void;
    const allHandled = new Promise<void>((r) => (finished = r));
    let read = 0;
    const errors: unknown[] = [];
    const source = startLocalEventSource({
      client,
      queueUrl,
      fairness,
      groupOf: messageGroupOf,
      instances: 1,
      batchSize: 1,
      waitTimeSeconds: 1,
      onError: (e) => errors.push(e),
      onReceived: (ids) => {
        read += ids.length;
        if (read === BACKLOG + 1) readAhead();
      },
      handler: async (event) => {
        for (const record of event.Records) {
          const { message } = decodeSqsRecord(record);
          order.push(message.tenant_id === 'tenant-b' ? 'B' : `A${(message as InvokeMessage).action_id.slice(4)}`);
        }
        if (order.length === 1) await gate;
        if (order.length === BACKLOG + 1) finished();
        return { batchItemFailures: [] };
      },
    });
    try {
      await allRead;
      release();
      await allHandled;
    } finally {
      await source.stop();
    }
    expect(errors).toEqual([]);
    // Every message was handled once and deleted.
    expect(await receiveMessages(client, queueUrl, { waitTimeSeconds: 0 })).toEqual([]);
    return order;
  }

  it('fairness on: B is delivered right after the batch in hand, before A’s backlog is exhausted', async () => {
    const order = await deliveryOrder('tenant');
    expect(order).toHaveLength(BACKLOG + 1);
    expect(order.indexOf('B')).toBe(1);
    expect(order.indexOf('B')).toBeLessThan(order.indexOf(`A${BACKLOG}`));
    // A's own messages keep their order.
    expect(order.filter((m) => m !== 'B')).toEqual(Array.from({ length: BACKLOG }, (_, i) => `A${i + 1}`));
  });

  it('fairness off: B waits for every message of A sent before it', async () => {
    const order = await deliveryOrder('none');
    expect(order).toEqual([...Array.from({ length: BACKLOG }, (_, i) => `A${i + 1}`), 'B']);
  });

  it('on stop, finishes the batch in hand and gives the messages it read ahead back to the queue at once', async () => {
    const queueUrl = await createQueue();
    const producer = new SqsMessageQueue({ client, queueUrl });
    const sent = await producer.sendBatch(Array.from({ length: 6 }, (_, i) => ({ id: `m${i + 1}`, message: invoke('tenant-a', i + 1) })));
    expect(sent.failed).toEqual([]);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const inHand = new Promise<void>((r) => (started = r));
    let readAhead!: () => void;
    const allRead = new Promise<void>((r) => (readAhead = r));
    let read = 0;
    const handled: string[] = [];
    const errors: unknown[] = [];
    const source = startLocalEventSource({
      client,
      queueUrl,
      groupOf: messageGroupOf,
      batchSize: 1,
      waitTimeSeconds: 1,
      onError: (e) => errors.push(e),
      onReceived: (ids) => {
        read += ids.length;
        if (read === 6) readAhead();
      },
      handler: async (event) => {
        handled.push(...event.Records.map((r) => r.messageId));
        started();
        await gate;
        return { batchItemFailures: [] };
      },
    });
    await Promise.all([inHand, allRead]);
    const stopping = source.stop();
    release();
    await stopping;
    expect(errors).toEqual([]);
    expect(handled).toHaveLength(1);
    // The five read ahead are visible again now (held for BACKLOG_HOLD_SECONDS otherwise); the handled one is deleted.
    const back: string[] = [];
    for (
      let m = await receiveMessages(client, queueUrl, { waitTimeSeconds: 1 });
      m.length > 0;
      m = await receiveMessages(client, queueUrl, { waitTimeSeconds: 0 })
    ) {
      back.push(...m.map((x) => x.MessageId as string));
    }
    expect(back).toHaveLength(5);
    expect(back).not.toContain(handled[0]);
  });

  it('derives the group the producer sent from the body, since fauxqs keeps none on a standard queue', async () => {
    const queueUrl = await createQueue();
    await new SqsMessageQueue({ client, queueUrl }).send(invoke('tenant-z', 1));
    const [m] = await receiveMessages(client, queueUrl, { waitTimeSeconds: 1 });
    expect(messageGroupOf(m!)).toBe('tenant-z');
    expect(messageGroupOf({ ...m!, Attributes: { ...m!.Attributes, MessageGroupId: 'kept' } })).toBe('kept');
    expect(messageGroupOf({ ...m!, Attributes: {}, Body: 'not a queue message' })).toBeUndefined();
  });
});
