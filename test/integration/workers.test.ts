/**
 * The worker and reconcile handlers against real fauxqs queues, driven by the
 * same poller the local stack uses (Lambda's SQS event source with
 * ReportBatchItemFailures), with a stub of the Runtime's method signatures.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createSchedulerClient, createSqsClient } from '../../lib/aws/clients.js';
import { SqsMessageQueue, receiveMessages } from '../../lib/aws/sqs/queue.js';
import { createSqsPoller } from '../../lib/aws/sqs/poller.js';
import { EventBridgeReconcileScheduler } from '../../lib/aws/scheduler/scheduler.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { InvokeMessage, ReconcileMessage } from '../../lib/ports/messages.js';
import { startSchedulerEmulator, type SchedulerEmulator } from '../../dev/scheduler-emulator/emulator.js';
import { createInvokeHandler } from '../../functions/worker/invoke.js';
import { createReconcileHandler } from '../../functions/worker/reconcile.js';
import { SILENT_LOGGER } from '../../functions/shared/logger.js';
import { eventually } from '../support/wait.js';

let sqs: SQSClient;
const obs = { logger: SILENT_LOGGER };

beforeAll(() => {
  sqs = createSqsClient({ endpoint: inject('sqsEndpoint') });
});
afterAll(() => sqs.destroy());

async function queueWithDlq(prefix: string, maxReceiveCount: number): Promise<{ url: string; arn: string; dlqUrl: string }> {
  const id = randomUUID().slice(0, 8);
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${prefix}-${id}-dlq` }));
  const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn as string;
  const main = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${prefix}-${id}`,
      Attributes: { VisibilityTimeout: '30', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount }) },
    }),
  );
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: main.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn as string;
  return { url: main.QueueUrl as string, arn, dlqUrl: dlq.QueueUrl as string };
}

async function depth(url: string): Promise<number> {
  const a = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))
  ).Attributes;
  return Number(a?.ApproximateNumberOfMessages ?? 0) + Number(a?.ApproximateNumberOfMessagesNotVisible ?? 0);
}

const invoke = (action_id: string): InvokeMessage => ({
  kind: 'invoke',
  tenant_id: 'tenant-w',
  action_id,
  transaction_id: `txn-${action_id}`,
  fence: 1,
  attempt: 1,
});

describe('invoke worker over fauxqs', () => {
  it('deletes settled messages, redelivers failed ones and moves poison messages to the DLQ', async () => {
    const q = await queueWithDlq('workers-invoke', 2);
    const calls: Record<string, number> = {};
    const handler = createInvokeHandler({
      observability: obs,
      runtime: async () => ({
        runAttempt: async (m: InvokeMessage) => {
          calls[m.action_id] = (calls[m.action_id] ?? 0) + 1;
          if (m.action_id === 'boom') throw new AipError('transaction.store_unavailable');
          if (m.action_id === 'busy' && calls[m.action_id] === 1) return { disposition: 'deferred', retry: true };
          return { disposition: 'settled', retry: false };
        },
      }),
    });
    const producer = new SqsMessageQueue({ client: sqs, queueUrl: q.url, accepts: ['invoke'] });
    await producer.sendBatch(['ok', 'busy', 'boom'].map((id) => ({ id, message: invoke(id) })));
    await sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: JSON.stringify({ ...invoke('poison'), input: { secret: 'x' } }) }));

    const poller = createSqsPoller({ client: sqs, queueUrl: q.url, queueArn: q.arn, handler, waitTimeSeconds: 0, retryDelaySeconds: 0 });
    const first = await poller.pollOnce();
    expect(first.received).toHaveLength(4);
    expect(first.succeeded).toHaveLength(1);
    expect(first.failed).toHaveLength(3);
    // Keep polling until every message was either deleted or moved to the DLQ (a deadline bounds a hang).
    await eventually(
      async () => {
        if ((await depth(q.url)) === 0) return true;
        await poller.pollOnce();
        return undefined;
      },
      { what: 'every message deleted or dead-lettered', intervalMs: 0 },
    );

    expect(await depth(q.url)).toBe(0);
    expect(calls).toEqual({ ok: 1, busy: 2, boom: 2 });
    const dead = await receiveMessages(sqs, q.dlqUrl, { waitTimeSeconds: 0 });
    const deadBodies = dead
      .map((m) => JSON.parse(m.Body as string) as { action_id: string })
      .map((b) => b.action_id)
      .sort();
    expect(deadBodies).toEqual(['boom', 'poison']);
  });
});

describe('reconcile consumer over fauxqs and the Scheduler emulator', () => {
  let emulator: SchedulerEmulator;
  let now = new Date('2030-01-01T00:00:00Z');
  beforeAll(async () => {
    emulator = await startSchedulerEmulator({ sqsEndpoint: inject('sqsEndpoint'), autoFire: false, now: () => now });
  });
  afterAll(async () => emulator.stop());

  it('receives the reconcile message of a fired one-time schedule and acknowledges it', async () => {
    const q = await queueWithDlq('workers-reconcile', 3);
    const schedulerClient = createSchedulerClient({ endpoint: emulator.endpoint });
    try {
      const scheduler = new EventBridgeReconcileScheduler({
        client: schedulerClient,
        groupName: 'workers-test',
        targetQueueArn: q.arn,
        roleArn: 'arn:aws:iam::000000000000:role/workers-test',
        clock: { now: () => now },
      });
      await scheduler.scheduleReconcile({ tenant_id: 'tenant-w', transaction_id: 'txn-unknown', at: new Date(now.getTime() + 30_000) });
      now = new Date(now.getTime() + 31_000);
      const fired = await emulator.fireDue(now);
      expect(fired).toMatchObject([{ delivered: true, deleted: true }]);

      const seen: ReconcileMessage[] = [];
      const handler = createReconcileHandler({
        observability: obs,
        runtime: async () => ({ reconcile: async (m: ReconcileMessage) => (seen.push(m), { disposition: 'reconciled', retry: false }) }),
      });
      const poller = createSqsPoller({ client: sqs, queueUrl: q.url, queueArn: q.arn, handler, waitTimeSeconds: 0 });
      const result = await poller.pollOnce();
      expect(result.succeeded).toHaveLength(1);
      expect(seen).toEqual([{ kind: 'reconcile', tenant_id: 'tenant-w', transaction_id: 'txn-unknown', reason: 'schedule' }]);
      expect(await depth(q.url)).toBe(0);
    } finally {
      schedulerClient.destroy();
    }
  });
});
