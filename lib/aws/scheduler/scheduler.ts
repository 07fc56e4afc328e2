/**
 * EventBridge Scheduler adapter for the reconcile scheduler port
 * (lib/ports/scheduler.ts).
 *
 * One one-time schedule per (tenant, transaction):
 * - Name: `<prefix><sha256(tenant, transaction) as base64url>`, at most 64 of
 *   [0-9a-zA-Z-_.]; a repeated create hits ConflictException, which is success.
 * - ScheduleExpression `at(yyyy-mm-ddThh:mm:ss)` in UTC (ScheduleExpressionTimezone
 *   'UTC'), rounded up to the next whole second, never earlier than now plus
 *   `minLeadSeconds`.
 * - FlexibleTimeWindow OFF; ActionAfterCompletion DELETE, so fired schedules
 *   do not accumulate.
 * - Target: the reconcile queue ARN, the role Scheduler assumes, and as Input
 *   the reconcile message `{kind:'reconcile', tenant_id, transaction_id, reason:'schedule'}`, with the
 *   `outcome_unknown` record the schedule is for (`scheduled`) when the caller gave it and it fits the
 *   message bound (lib/ports/messages.ts `reconcileWithImages`).
 * Delete: ResourceNotFoundException is success.
 *
 * Locally the same code runs against dev/scheduler-emulator (just the endpoint).
 */
import { createHash } from 'node:crypto';
import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  type CreateScheduleCommandInput,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { systemClock, type Clock } from '../../../packages/connector-sdk/src/ports/clock.js';
import { encodeQueueMessage, reconcileWithImages, type ReconcileMessage } from '../../ports/messages.js';
import type {
  CancelReconcileResult,
  ReconcileScheduler,
  ReconcileScheduleRef,
  ScheduleReconcileRequest,
  ScheduleReconcileResult,
} from '../../ports/scheduler.js';

/** Scheduler's limits on schedule and group names. */
export const SCHEDULE_NAME_MAX = 64;
export const SCHEDULE_NAME_PATTERN = /^[0-9a-zA-Z\-_.]+$/;
export const DEFAULT_SCHEDULE_NAME_PREFIX = 'aip-rc-';
/** Base64url SHA-256 length. */
const HASH_LENGTH = 43;
export const DEFAULT_MIN_LEAD_SECONDS = 5;

export interface EventBridgeReconcileSchedulerOptions {
  readonly client: SchedulerClient;
  /** Schedule group (created by the stateless stack). */
  readonly groupName: string;
  /** ARN of the reconcile SQS queue. */
  readonly targetQueueArn: string;
  /** Role Scheduler assumes to send to the queue. */
  readonly roleArn: string;
  /** Name prefix, at most 21 characters of [0-9a-zA-Z-_.]. Default `aip-rc-`. */
  readonly namePrefix?: string;
  /** A past or too-near `at` is moved to now plus this lead. Default 5 s. */
  readonly minLeadSeconds?: number;
  /** Optional DLQ for events Scheduler could not deliver. */
  readonly deadLetterQueueArn?: string;
  /** Optional delivery retry policy (Scheduler's defaults otherwise: 185 retries, 24 h). */
  readonly retryPolicy?: { readonly maximumRetryAttempts?: number; readonly maximumEventAgeInSeconds?: number };
  /** Clock (lib/ports/clock.ts). Default: the system clock. */
  readonly clock?: Clock;
}

/** Deterministic, collision-resistant schedule name for a tenant and transaction. */
export function reconcileScheduleName(ref: ReconcileScheduleRef, prefix: string = DEFAULT_SCHEDULE_NAME_PREFIX): string {
  assertPrefix(prefix);
  // JSON framing keeps ("a","bc") and ("ab","c") apart.
  const hash = createHash('sha256')
    .update(JSON.stringify([ref.tenant_id, ref.transaction_id]))
    .digest('base64url');
  return `${prefix}${hash}`;
}

function assertPrefix(prefix: string): void {
  if (prefix.length + HASH_LENGTH > SCHEDULE_NAME_MAX || (prefix !== '' && !SCHEDULE_NAME_PATTERN.test(prefix))) {
    throw new RangeError(`schedule name prefix must be at most ${SCHEDULE_NAME_MAX - HASH_LENGTH} of [0-9a-zA-Z-_.]`);
  }
}

/** `at(yyyy-mm-ddThh:mm:ss)` for a UTC instant (whole seconds). */
export function atExpression(at: Date): string {
  return `at(${at.toISOString().slice(0, 19)})`;
}

/** Rounds up to a whole second, and moves a time earlier than now + lead to now + lead. */
export function effectiveFireTime(at: Date, now: Date, minLeadSeconds: number): Date {
  if (Number.isNaN(at.getTime())) {
    throw new AipError('queue.message_invalid', 'The reconciliation time is not a valid date', { details: { reason: 'invalid_date' } });
  }
  const earliest = now.getTime() + minLeadSeconds * 1000;
  const t = Math.max(at.getTime(), earliest);
  return new Date(Math.ceil(t / 1000) * 1000);
}

function failed(operation: string, name: string, err: unknown): AipError {
  const error = err instanceof Error ? err.name : 'Error';
  return new AipError('scheduler.request_failed', undefined, { details: { operation, schedule: name, error }, cause: err });
}

export class EventBridgeReconcileScheduler implements ReconcileScheduler {
  private readonly client: SchedulerClient;
  private readonly options: EventBridgeReconcileSchedulerOptions;
  private readonly prefix: string;
  private readonly minLeadSeconds: number;
  private readonly clock: Clock;

  constructor(options: EventBridgeReconcileSchedulerOptions) {
    this.client = options.client;
    this.options = options;
    this.prefix = options.namePrefix ?? DEFAULT_SCHEDULE_NAME_PREFIX;
    assertPrefix(this.prefix);
    if (!SCHEDULE_NAME_PATTERN.test(options.groupName) || options.groupName.length > SCHEDULE_NAME_MAX) {
      throw new RangeError('schedule group name must be 1..64 of [0-9a-zA-Z-_.]');
    }
    this.minLeadSeconds = Math.max(0, options.minLeadSeconds ?? DEFAULT_MIN_LEAD_SECONDS);
    this.clock = options.clock ?? systemClock;
  }

  nameFor(ref: ReconcileScheduleRef): string {
    return reconcileScheduleName(ref, this.prefix);
  }

  /** The CreateSchedule input for a request (exported for inspection and tests). */
  createInput(request: ScheduleReconcileRequest): { input: CreateScheduleCommandInput; at: Date } {
    // Validates the IDs (and the record image) through the strict message schema before any I/O. The record the
    // schedule is for travels with it when it fits the message bound (far under the 256 KB of Scheduler's Input).
    const message: ReconcileMessage = { kind: 'reconcile', tenant_id: request.tenant_id, transaction_id: request.transaction_id, reason: 'schedule' };
    const body = encodeQueueMessage(request.transaction !== undefined ? reconcileWithImages(message, request.transaction) : message);
    const at = effectiveFireTime(request.at, this.clock.now(), this.minLeadSeconds);
    const { deadLetterQueueArn, retryPolicy } = this.options;
    const input: CreateScheduleCommandInput = {
      Name: this.nameFor(request),
      GroupName: this.options.groupName,
      ScheduleExpression: atExpression(at),
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
      ActionAfterCompletion: 'DELETE',
      State: 'ENABLED',
      Description: 'AIP reconciliation trigger',
      Target: {
        Arn: this.options.targetQueueArn,
        RoleArn: this.options.roleArn,
        Input: body,
        ...(deadLetterQueueArn ? { DeadLetterConfig: { Arn: deadLetterQueueArn } } : {}),
        ...(retryPolicy
          ? {
              RetryPolicy: {
                ...(retryPolicy.maximumRetryAttempts !== undefined ? { MaximumRetryAttempts: retryPolicy.maximumRetryAttempts } : {}),
                ...(retryPolicy.maximumEventAgeInSeconds !== undefined ? { MaximumEventAgeInSeconds: retryPolicy.maximumEventAgeInSeconds } : {}),
              },
            }
          : {}),
      },
    };
    return { input, at };
  }

  async scheduleReconcile(request: ScheduleReconcileRequest): Promise<ScheduleReconcileResult> {
    const { input, at } = this.createInput(request);
    const name = input.Name as string;
    try {
      await this.client.send(new CreateScheduleCommand(input));
      return { name, created: true, at };
    } catch (err) {
      if (err instanceof ConflictException || (err as { name?: unknown })?.name === 'ConflictException') {
        return { name, created: false, at };
      }
      throw failed('CreateSchedule', name, err);
    }
  }

  async cancelReconcile(ref: ReconcileScheduleRef): Promise<CancelReconcileResult> {
    const name = this.nameFor(ref);
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.options.groupName }));
      return { name, deleted: true };
    } catch (err) {
      if (err instanceof ResourceNotFoundException || (err as { name?: unknown })?.name === 'ResourceNotFoundException') {
        return { name, deleted: false };
      }
      throw failed('DeleteSchedule', name, err);
    }
  }
}
