/**
 * The real SchedulerClient (and the production adapter, unchanged) against the
 * local EventBridge Scheduler emulator, which delivers to fauxqs queues.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  GetScheduleCommand,
  ResourceNotFoundException,
  ValidationException,
  type CreateScheduleCommandInput,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createSchedulerClient, createSqsClient } from '../../lib/aws/clients.js';
import { EventBridgeReconcileScheduler } from '../../lib/aws/scheduler/scheduler.js';
import { receiveMessages } from '../../lib/aws/sqs/queue.js';
import { decodeQueueMessage } from '../../lib/ports/messages.js';
import { startSchedulerEmulator, type SchedulerEmulator } from '../../dev/scheduler-emulator/emulator.js';

const ROLE_ARN = 'arn:aws:iam::000000000000:role/aip-scheduler';
const GROUP = 'aip-reconcile';
const T0 = new Date('2030-01-01T00:00:00.000Z');

let sqs: SQSClient;
let clock: Date;
let emulator: SchedulerEmulator;
let scheduler: SchedulerClient;

beforeAll(async () => {
  sqs = createSqsClient({ endpoint: inject('sqsEndpoint') });
  clock = T0;
  emulator = await startSchedulerEmulator({ sqsEndpoint: inject('sqsEndpoint'), now: () => clock, autoFire: false });
  scheduler = createSchedulerClient({ endpoint: emulator.endpoint });
});
afterAll(async () => {
  scheduler.destroy();
  sqs.destroy();
  await emulator.stop();
});

async function createQueue(): Promise<{ url: string; arn: string }> {
  const name = `sched-emu-${randomUUID().slice(0, 8)}`;
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { url: QueueUrl as string, arn: attrs.Attributes?.QueueArn as string };
}

function adapter(queueArn: string): EventBridgeReconcileScheduler {
  return new EventBridgeReconcileScheduler({ client: scheduler, groupName: GROUP, targetQueueArn: queueArn, roleArn: ROLE_ARN, clock: { now: () => clock } });
}

function rawInput(name: string, queueArn: string, overrides: Partial<CreateScheduleCommandInput> = {}): CreateScheduleCommandInput {
  return {
    Name: name,
    ScheduleExpression: 'at(2030-01-01T00:01:00)',
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: queueArn, RoleArn: ROLE_ARN, Input: '{"hello":"world"}' },
    ...overrides,
  };
}

const uniqueTxn = () => `txn-${randomUUID()}`;

describe('the production adapter against the Scheduler emulator', () => {
  it('creates a schedule, and a repeat is harmless', async () => {
    const q = await createQueue();
    const a = adapter(q.arn);
    const ref = { tenant_id: 'tenant-a', transaction_id: uniqueTxn() };
    const first = await a.scheduleReconcile({ ...ref, at: new Date(T0.getTime() + 60_000) });
    expect(first).toMatchObject({ created: true, at: new Date('2030-01-01T00:01:00Z') });
    const again = await a.scheduleReconcile({ ...ref, at: new Date(T0.getTime() + 120_000) });
    expect(again).toMatchObject({ name: first.name, created: false });

    const mine = emulator.list().filter((s) => s.name === first.name);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ groupName: GROUP, expression: 'at(2030-01-01T00:01:00)', completed: false });
  });

  it('returns the schedule from GetSchedule in the AWS wire shape', async () => {
    const q = await createQueue();
    const a = adapter(q.arn);
    const ref = { tenant_id: 'tenant-a', transaction_id: uniqueTxn() };
    const { name } = await a.scheduleReconcile({ ...ref, at: new Date('2030-01-01T00:05:00.250Z') });
    const got = await scheduler.send(new GetScheduleCommand({ Name: name, GroupName: GROUP }));
    expect(got).toMatchObject({
      Name: name,
      GroupName: GROUP,
      Arn: `arn:aws:scheduler:us-east-1:000000000000:schedule/${GROUP}/${name}`,
      ScheduleExpression: 'at(2030-01-01T00:05:01)',
      ScheduleExpressionTimezone: 'UTC',
      State: 'ENABLED',
      ActionAfterCompletion: 'DELETE',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: { Arn: q.arn, RoleArn: ROLE_ARN },
    });
    expect(got.CreationDate).toEqual(T0);
    expect(JSON.parse(got.Target?.Input ?? '')).toEqual({ kind: 'reconcile', ...ref, reason: 'schedule' });
  });

  it('deletes a schedule; deleting or getting a missing one is ResourceNotFoundException, which cancel treats as success', async () => {
    const q = await createQueue();
    const a = adapter(q.arn);
    const ref = { tenant_id: 'tenant-b', transaction_id: uniqueTxn() };
    const { name } = await a.scheduleReconcile({ ...ref, at: new Date(T0.getTime() + 60_000) });
    await expect(a.cancelReconcile(ref)).resolves.toEqual({ name, deleted: true });
    await expect(a.cancelReconcile(ref)).resolves.toEqual({ name, deleted: false });
    await expect(scheduler.send(new GetScheduleCommand({ Name: name, GroupName: GROUP }))).rejects.toBeInstanceOf(ResourceNotFoundException);
    await expect(scheduler.send(new DeleteScheduleCommand({ Name: name, GroupName: GROUP }))).rejects.toBeInstanceOf(ResourceNotFoundException);
    // After a cancel the same transaction can be scheduled again (e.g. the next backoff step).
    await expect(a.scheduleReconcile({ ...ref, at: new Date(T0.getTime() + 90_000) })).resolves.toMatchObject({ created: true });
  });

  it('fires on time: delivers the reconcile message to the queue, then deletes the schedule', async () => {
    const q = await createQueue();
    const a = adapter(q.arn);
    const ref = { tenant_id: 'tenant-c', transaction_id: uniqueTxn() };
    const { name } = await a.scheduleReconcile({ ...ref, at: new Date(T0.getTime() + 60_000) });

    const early = await emulator.fireDue(new Date(T0.getTime() + 59_000));
    expect(early.filter((r) => r.name === name)).toEqual([]);
    expect(await receiveMessages(sqs, q.url, { waitTimeSeconds: 0 })).toEqual([]);

    const fired = (await emulator.fireDue(new Date(T0.getTime() + 60_000))).filter((r) => r.name === name);
    expect(fired).toEqual([expect.objectContaining({ name, groupName: GROUP, delivered: true, deleted: true })]);

    const [message] = await receiveMessages(sqs, q.url, { waitTimeSeconds: 5 });
    expect(message?.MessageId).toBe(fired[0]?.messageId);
    expect(decodeQueueMessage(message?.Body ?? '')).toEqual({ kind: 'reconcile', ...ref, reason: 'schedule' });
    expect(emulator.list().some((s) => s.name === name)).toBe(false);
    await expect(scheduler.send(new GetScheduleCommand({ Name: name, GroupName: GROUP }))).rejects.toBeInstanceOf(ResourceNotFoundException);

    // Firing again delivers nothing more.
    expect((await emulator.fireDue(new Date(T0.getTime() + 3_600_000))).filter((r) => r.name === name)).toEqual([]);
  });
});

describe('Scheduler emulator wire behaviour', () => {
  it('answers a second CreateSchedule of the same name with ConflictException', async () => {
    const q = await createQueue();
    const name = `raw-${randomUUID().slice(0, 8)}`;
    await scheduler.send(new CreateScheduleCommand(rawInput(name, q.arn)));
    const err = await scheduler.send(new CreateScheduleCommand(rawInput(name, q.arn))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictException);
    expect((err as ConflictException).$metadata.httpStatusCode).toBe(409);
    // The same name in another group is a different schedule.
    await expect(scheduler.send(new CreateScheduleCommand(rawInput(name, q.arn, { GroupName: 'other' })))).resolves.toHaveProperty('ScheduleArn');
    await expect(scheduler.send(new GetScheduleCommand({ Name: name }))).resolves.toMatchObject({ GroupName: 'default' });
  });

  it.each([
    ['a rate() expression', { ScheduleExpression: 'rate(5 minutes)' }],
    ['a malformed at()', { ScheduleExpression: 'at(2030-02-30T00:00:00)' }],
    ['an at() in the past', { ScheduleExpression: 'at(2029-12-31T23:59:59)' }],
    ['a non-UTC time zone', { ScheduleExpressionTimezone: 'Europe/Paris' }],
    ['a Lambda target', { Target: { Arn: 'arn:aws:lambda:us-east-1:000000000000:function:f', RoleArn: ROLE_ARN } }],
    ['a target without a role', { Target: { Arn: 'arn:aws:sqs:us-east-1:000000000000:q', RoleArn: 'not-a-role' } }],
    ['a bad ActionAfterCompletion', { ActionAfterCompletion: 'ARCHIVE' as 'DELETE' }],
    ['FLEXIBLE without a window', { FlexibleTimeWindow: { Mode: 'FLEXIBLE' as const } }],
    ['a bad group name', { GroupName: 'no spaces allowed' }],
  ])('rejects %s with ValidationException', async (_what, overrides) => {
    const q = await createQueue();
    const err = await scheduler.send(new CreateScheduleCommand(rawInput(`bad-${randomUUID().slice(0, 8)}`, q.arn, overrides))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationException);
    expect((err as ValidationException).$metadata.httpStatusCode).toBe(400);
  });

  it('keeps a fired schedule with ActionAfterCompletion NONE, fires it once, and fills in context attributes', async () => {
    const q = await createQueue();
    const name = `none-${randomUUID().slice(0, 8)}`;
    const { ScheduleArn } = await scheduler.send(
      new CreateScheduleCommand(
        rawInput(name, q.arn, {
          ActionAfterCompletion: 'NONE',
          Target: {
            Arn: q.arn,
            RoleArn: ROLE_ARN,
            Input: '{"arn":"<aws.scheduler.schedule-arn>","at":"<aws.scheduler.scheduled-time>","n":<aws.scheduler.attempt-number>}',
          },
        }),
      ),
    );
    const fired = (await emulator.fireDue(new Date('2030-01-01T00:01:00Z'))).filter((r) => r.name === name);
    expect(fired).toEqual([expect.objectContaining({ delivered: true, deleted: false })]);
    const [message] = await receiveMessages(sqs, q.url, { waitTimeSeconds: 5 });
    expect(JSON.parse(message?.Body ?? '')).toEqual({ arn: ScheduleArn, at: '2030-01-01T00:01:00Z', n: 1 });
    expect(emulator.list().find((s) => s.name === name)).toMatchObject({ completed: true, attempts: 1 });
    expect((await emulator.fireDue(new Date('2030-01-01T01:00:00Z'))).filter((r) => r.name === name)).toEqual([]);
    await expect(scheduler.send(new GetScheduleCommand({ Name: name }))).resolves.toMatchObject({ Name: name });
  });

  it('does not fire a DISABLED schedule', async () => {
    const q = await createQueue();
    const name = `off-${randomUUID().slice(0, 8)}`;
    await scheduler.send(new CreateScheduleCommand(rawInput(name, q.arn, { State: 'DISABLED' })));
    expect((await emulator.fireDue(new Date('2030-01-02T00:00:00Z'))).filter((r) => r.name === name)).toEqual([]);
  });

  it('retries a delivery that failed until the target queue exists', async () => {
    const name = `retry-${randomUUID().slice(0, 8)}`;
    const queueName = `sched-emu-late-${randomUUID().slice(0, 8)}`;
    const arn = `arn:aws:sqs:us-east-1:000000000000:${queueName}`;
    await scheduler.send(new CreateScheduleCommand(rawInput(name, arn, { ActionAfterCompletion: 'DELETE' })));
    const at = new Date('2030-01-01T00:01:00Z');
    const [failed] = (await emulator.fireDue(at)).filter((r) => r.name === name);
    expect(failed).toMatchObject({ delivered: false, deleted: false });
    expect(failed?.error).toMatch(/QueueDoesNotExist|NonExistentQueue/);
    expect(failed?.retryAt?.getTime()).toBeGreaterThan(at.getTime());

    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: queueName }));
    const [retried] = (await emulator.fireDue(failed?.retryAt)).filter((r) => r.name === name);
    expect(retried).toMatchObject({ delivered: true, deleted: true });
    const [message] = await receiveMessages(sqs, QueueUrl as string, { waitTimeSeconds: 5 });
    expect(message?.Body).toBe('{"hello":"world"}');
  });

  it('fires by itself on its timer when auto-firing (real clock)', async () => {
    const live = await startSchedulerEmulator({ sqsEndpoint: inject('sqsEndpoint') });
    const client = createSchedulerClient({ endpoint: live.endpoint });
    try {
      const q = await createQueue();
      const a = new EventBridgeReconcileScheduler({ client, groupName: GROUP, targetQueueArn: q.arn, roleArn: ROLE_ARN, minLeadSeconds: 1 });
      const ref = { tenant_id: 'tenant-live', transaction_id: uniqueTxn() };
      await a.scheduleReconcile({ ...ref, at: new Date() });
      // Waits (long poll, bounded) for the emulator's own timer to deliver.
      const messages = await receiveMessages(sqs, q.url, { waitTimeSeconds: 20 });
      expect(messages.map((m) => decodeQueueMessage(m.Body ?? ''))).toEqual([{ kind: 'reconcile', ...ref, reason: 'schedule' }]);
      // fireDue queues behind the timer's firing, so the deletion after delivery is done once it returns.
      expect(await live.fireDue()).toEqual([]);
      expect(live.list()).toEqual([]);
    } finally {
      client.destroy();
      await live.stop();
    }
  });

  it.each(['AWS_ENDPOINT_URL_SCHEDULER', 'AWS_ENDPOINT_URL'])('reaches the emulator through %s alone (SDK-native endpoint configuration)', async (variable) => {
    const saved = { specific: process.env.AWS_ENDPOINT_URL_SCHEDULER, generic: process.env.AWS_ENDPOINT_URL };
    delete process.env.AWS_ENDPOINT_URL_SCHEDULER;
    delete process.env.AWS_ENDPOINT_URL;
    process.env[variable] = emulator.endpoint;
    const client = createSchedulerClient();
    try {
      const q = await createQueue();
      const a = new EventBridgeReconcileScheduler({ client, groupName: GROUP, targetQueueArn: q.arn, roleArn: ROLE_ARN, clock: { now: () => clock } });
      const ref = { tenant_id: 'tenant-env', transaction_id: uniqueTxn() };
      const { name } = await a.scheduleReconcile({ ...ref, at: new Date(T0.getTime() + 60_000) });
      expect(emulator.list().some((s) => s.name === name)).toBe(true);
      await expect(a.cancelReconcile(ref)).resolves.toEqual({ name, deleted: true });
    } finally {
      client.destroy();
      for (const [k, v] of [
        ['AWS_ENDPOINT_URL_SCHEDULER', saved.specific],
        ['AWS_ENDPOINT_URL', saved.generic],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('answers unsupported operations with an error, not a crash', async () => {
    const res = await fetch(`${emulator.endpoint}/schedules`, { method: 'GET' });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-amzn-errortype')).toBe('UnknownOperationException');
    const bad = await fetch(`${emulator.endpoint}/schedules/x`, { method: 'POST', body: '{not json' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('x-amzn-errortype')).toBe('ValidationException');
  });
});
