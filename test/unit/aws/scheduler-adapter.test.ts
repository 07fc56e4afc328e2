/**
 * Request shapes of the EventBridge Scheduler adapter (aws-sdk-client-mock:
 * there is no AWS emulator to check them against; the behaviour against the
 * local emulator is in test/integration/scheduler-emulator.test.ts).
 */
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mockClient } from 'aws-sdk-client-mock';
import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  ThrottlingException,
  ValidationException,
} from '@aws-sdk/client-scheduler';
import {
  EventBridgeReconcileScheduler,
  SCHEDULE_NAME_MAX,
  SCHEDULE_NAME_PATTERN,
  atExpression,
  reconcileScheduleName,
} from '../../../lib/aws/scheduler/scheduler.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { TransactionRecord } from '../../../lib/ports/transaction-store.js';

const QUEUE_ARN = 'arn:aws:sqs:eu-west-1:123456789012:aip-reconcile';
const ROLE_ARN = 'arn:aws:iam::123456789012:role/aip-scheduler-to-reconcile-queue';
const GROUP = 'aip-reconcile';
const NOW = new Date('2030-06-15T10:20:30.000Z');

const schedulerMock = mockClient(SchedulerClient);
// The unit files share a module graph (vitest.config.ts): the client's own send comes back after this file.
afterAll(() => schedulerMock.restore());
const client = new SchedulerClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });

function adapter(extra: Partial<ConstructorParameters<typeof EventBridgeReconcileScheduler>[0]> = {}) {
  return new EventBridgeReconcileScheduler({
    client,
    groupName: GROUP,
    targetQueueArn: QUEUE_ARN,
    roleArn: ROLE_ARN,
    clock: { now: () => NOW },
    ...extra,
  });
}

const meta = { $metadata: {}, Message: 'service error' };

beforeEach(() => {
  schedulerMock.reset();
});

describe('scheduleReconcile', () => {
  it('sends a one-time at() schedule in UTC, OFF window, DELETE after completion, to the reconcile queue', async () => {
    schedulerMock.on(CreateScheduleCommand).resolves({ ScheduleArn: 'arn:aws:scheduler:eu-west-1:123456789012:schedule/g/n' });
    const ref = { tenant_id: 'tenant-1', transaction_id: 'txn-42' };
    const result = await adapter().scheduleReconcile({ ...ref, at: new Date('2030-06-15T12:00:00.000Z') });

    const calls = schedulerMock.commandCalls(CreateScheduleCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]!.args[0].input;
    expect(input).toMatchObject({
      Name: reconcileScheduleName(ref),
      GroupName: GROUP,
      ScheduleExpression: 'at(2030-06-15T12:00:00)',
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
      ActionAfterCompletion: 'DELETE',
      State: 'ENABLED',
      Target: { Arn: QUEUE_ARN, RoleArn: ROLE_ARN },
    });
    expect(input.FlexibleTimeWindow).toEqual({ Mode: 'OFF' });
    expect(JSON.parse(input.Target?.Input ?? '')).toEqual({ kind: 'reconcile', tenant_id: 'tenant-1', transaction_id: 'txn-42', reason: 'schedule' });
    expect(result).toEqual({ name: input.Name, created: true, at: new Date('2030-06-15T12:00:00.000Z') });
  });

  it('carries the outcome_unknown record it was created for (no action input exists in it); anything else, or too large, IDs only', async () => {
    schedulerMock.on(CreateScheduleCommand).resolves({});
    const ref = { tenant_id: 'tenant-1', transaction_id: 'txn-42' };
    const record: TransactionRecord = {
      ...ref,
      status: 'outcome_unknown',
      revision: 3,
      mode: 'execute',
      capability_id: 'payments.transfer',
      action_id: 'act-1',
      principal: { id: 'agent-1', kind: 'agent' },
      provider_operation: { provider: 'bank', operation_id: 'op-9' },
      error: { code: 'runtime.attempt_abandoned', message: 'lost', category: 'temporary', retryable: false, uncertain_outcome: true },
      next_reconcile_at: '2030-06-15T12:00:00.000Z',
      reconcile_attempts: 0,
      fence: 0,
      receipt_count: 2,
      receipt_head: 'h'.repeat(43),
      created_at: '2030-06-15T10:00:00.000Z',
      updated_at: '2030-06-15T10:00:01.000Z',
      data: { note: 'x' },
    };
    const at = new Date('2030-06-15T12:00:00.000Z');
    await adapter().scheduleReconcile({ ...ref, at, transaction: record });
    const sent = JSON.parse(schedulerMock.commandCalls(CreateScheduleCommand)[0]!.args[0].input.Target?.Input ?? '');
    expect(sent).toEqual({ kind: 'reconcile', ...ref, reason: 'schedule', scheduled: { transaction: record } });
    expect(JSON.stringify(sent)).not.toContain('"input"');

    const idsOnly = { kind: 'reconcile', ...ref, reason: 'schedule' };
    for (const other of [
      { ...record, status: 'prepared' as const },
      { ...record, transaction_id: 'txn-other' },
      { ...record, escalated_at: '2030-06-15T11:00:00.000Z' },
      { ...record, data: { big: 'x'.repeat(20_000) } },
    ]) {
      schedulerMock.reset();
      schedulerMock.on(CreateScheduleCommand).resolves({});
      await adapter().scheduleReconcile({ ...ref, at, transaction: other });
      expect(JSON.parse(schedulerMock.commandCalls(CreateScheduleCommand)[0]!.args[0].input.Target?.Input ?? '')).toEqual(idsOnly);
    }
  });

  it('writes the at() time in UTC whatever the input offset, rounding up to the next whole second', async () => {
    schedulerMock.on(CreateScheduleCommand).resolves({});
    const a = adapter();
    // 14:00:00.001 at +02:00 is 12:00:00.001 UTC.
    const r = await a.scheduleReconcile({ tenant_id: 't', transaction_id: 'x', at: new Date('2030-06-15T14:00:00.001+02:00') });
    expect(schedulerMock.commandCalls(CreateScheduleCommand)[0]!.args[0].input.ScheduleExpression).toBe('at(2030-06-15T12:00:01)');
    expect(r.at).toEqual(new Date('2030-06-15T12:00:01Z'));
    expect(atExpression(new Date('2031-01-02T03:04:05Z'))).toBe('at(2031-01-02T03:04:05)');
  });

  it('clamps a time in the past (or too near) to now plus the minimum lead', async () => {
    schedulerMock.on(CreateScheduleCommand).resolves({});
    await adapter().scheduleReconcile({ tenant_id: 't', transaction_id: 'x', at: new Date('2020-01-01T00:00:00Z') });
    await adapter({ minLeadSeconds: 30 }).scheduleReconcile({ tenant_id: 't', transaction_id: 'y', at: new Date(NOW.getTime() + 10_000) });
    const [first, second] = schedulerMock.commandCalls(CreateScheduleCommand).map((c) => c.args[0].input.ScheduleExpression);
    expect(first).toBe('at(2030-06-15T10:20:35)'); // default lead 5 s
    expect(second).toBe('at(2030-06-15T10:21:00)'); // lead 30 s
  });

  it('treats ConflictException (already scheduled) as success', async () => {
    schedulerMock.on(CreateScheduleCommand).rejects(new ConflictException({ message: 'Schedule already exists.', ...meta }));
    const r = await adapter().scheduleReconcile({ tenant_id: 't', transaction_id: 'x', at: new Date('2030-06-15T12:00:00Z') });
    expect(r).toMatchObject({ created: false, name: reconcileScheduleName({ tenant_id: 't', transaction_id: 'x' }) });
  });

  it('turns other service errors into a retryable scheduler.request_failed', async () => {
    for (const error of [
      new ThrottlingException({ message: 'slow down', ...meta }),
      new ValidationException({ message: 'nope', ...meta }),
      new Error('socket hang up'),
    ]) {
      schedulerMock.reset();
      schedulerMock.on(CreateScheduleCommand).rejects(error);
      const err = await adapter()
        .scheduleReconcile({ tenant_id: 't', transaction_id: 'x', at: new Date('2030-06-15T12:00:00Z') })
        .catch((e: unknown) => e);
      expect(isAipError(err, 'scheduler.request_failed')).toBe(true);
      expect(isAipError(err) && err.retryable).toBe(true);
      expect(isAipError(err) && err.details).toMatchObject({ operation: 'CreateSchedule' });
    }
  });

  it('validates IDs and the date before calling the service', async () => {
    schedulerMock.on(CreateScheduleCommand).resolves({});
    const a = adapter();
    await expect(a.scheduleReconcile({ tenant_id: 'a#b', transaction_id: 'x', at: NOW })).rejects.toMatchObject({ code: 'queue.message_invalid' });
    await expect(a.scheduleReconcile({ tenant_id: '', transaction_id: 'x', at: NOW })).rejects.toMatchObject({ code: 'queue.message_invalid' });
    await expect(a.scheduleReconcile({ tenant_id: 't', transaction_id: 'x', at: new Date('nope') })).rejects.toMatchObject({ code: 'queue.message_invalid' });
    expect(schedulerMock.commandCalls(CreateScheduleCommand)).toHaveLength(0);
  });

  it('adds the optional DLQ and retry policy to the target', async () => {
    schedulerMock.on(CreateScheduleCommand).resolves({});
    await adapter({ deadLetterQueueArn: 'arn:aws:sqs:eu-west-1:123456789012:dlq', retryPolicy: { maximumRetryAttempts: 10 } }).scheduleReconcile({
      tenant_id: 't',
      transaction_id: 'x',
      at: new Date('2030-06-15T12:00:00Z'),
    });
    expect(schedulerMock.commandCalls(CreateScheduleCommand)[0]!.args[0].input.Target).toMatchObject({
      DeadLetterConfig: { Arn: 'arn:aws:sqs:eu-west-1:123456789012:dlq' },
      RetryPolicy: { MaximumRetryAttempts: 10 },
    });
  });
});

describe('schedule names', () => {
  const id = fc.stringMatching(/^[A-Za-z0-9._:@/-]{1,252}$/);

  it('are deterministic, at most 64 characters of [0-9a-zA-Z-_.]', () => {
    fc.assert(
      fc.property(id, id, (tenant_id, transaction_id) => {
        const name = reconcileScheduleName({ tenant_id, transaction_id });
        expect(name.length).toBeLessThanOrEqual(SCHEDULE_NAME_MAX);
        expect(name).toMatch(SCHEDULE_NAME_PATTERN);
        expect(name.startsWith('aip-rc-')).toBe(true);
        expect(reconcileScheduleName({ tenant_id, transaction_id })).toBe(name);
      }),
    );
  });

  it('differ for different (tenant, transaction) pairs, including shifted boundaries', () => {
    expect(reconcileScheduleName({ tenant_id: 'ab', transaction_id: 'c' })).not.toBe(reconcileScheduleName({ tenant_id: 'a', transaction_id: 'bc' }));
    expect(reconcileScheduleName({ tenant_id: 't1', transaction_id: 'x' })).not.toBe(reconcileScheduleName({ tenant_id: 't2', transaction_id: 'x' }));
    fc.assert(
      fc.property(id, id, id, id, (t1, x1, t2, x2) => {
        fc.pre(t1 !== t2 || x1 !== x2);
        expect(reconcileScheduleName({ tenant_id: t1, transaction_id: x1 })).not.toBe(reconcileScheduleName({ tenant_id: t2, transaction_id: x2 }));
      }),
    );
  });

  it('reject a prefix that would break the limits', () => {
    expect(() => adapter({ namePrefix: 'x'.repeat(22) })).toThrow(RangeError);
    expect(() => adapter({ namePrefix: 'bad prefix ' })).toThrow(RangeError);
    expect(() => adapter({ groupName: 'bad group' })).toThrow(RangeError);
    expect(adapter({ namePrefix: 'x'.repeat(21) }).nameFor({ tenant_id: 't', transaction_id: 'x' })).toHaveLength(64);
  });
});

describe('cancelReconcile', () => {
  it('deletes the schedule by its deterministic name in the configured group', async () => {
    schedulerMock.on(DeleteScheduleCommand).resolves({});
    const ref = { tenant_id: 'tenant-1', transaction_id: 'txn-42' };
    await expect(adapter().cancelReconcile(ref)).resolves.toEqual({ name: reconcileScheduleName(ref), deleted: true });
    expect(schedulerMock.commandCalls(DeleteScheduleCommand)[0]!.args[0].input).toEqual({ Name: reconcileScheduleName(ref), GroupName: GROUP });
  });

  it('treats ResourceNotFoundException as success', async () => {
    schedulerMock.on(DeleteScheduleCommand).rejects(new ResourceNotFoundException({ message: 'Schedule does not exist.', ...meta }));
    await expect(adapter().cancelReconcile({ tenant_id: 't', transaction_id: 'x' })).resolves.toMatchObject({ deleted: false });
  });

  it('surfaces other failures as scheduler.request_failed', async () => {
    schedulerMock.on(DeleteScheduleCommand).rejects(new ThrottlingException({ message: 'slow down', ...meta }));
    await expect(adapter().cancelReconcile({ tenant_id: 't', transaction_id: 'x' })).rejects.toMatchObject({
      code: 'scheduler.request_failed',
      details: { operation: 'DeleteSchedule' },
    });
  });
});
