/**
 * Request validation for the Scheduler emulator: the subset of EventBridge
 * Scheduler's CreateSchedule rules that matters for `at()` schedules with SQS
 * targets, with AWS's error types. Anything outside the subset is rejected
 * with a ValidationException that says so, rather than silently accepted.
 */

export class SchedulerApiError extends Error {
  constructor(
    readonly type: 'ValidationException' | 'ConflictException' | 'ResourceNotFoundException' | 'UnknownOperationException' | 'InternalServerException',
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = type;
  }
}

export const validation = (message: string) => new SchedulerApiError('ValidationException', 400, message);

export const NAME_PATTERN = /^[0-9a-zA-Z\-_.]{1,64}$/;
const AT_PATTERN = /^at\((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\)$/;
const SQS_ARN = /^arn:(aws[a-z-]*):sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$/;
const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/;
const UTC_ZONES = new Set(['UTC', 'Etc/UTC']);

export type FlexibleMode = 'OFF' | 'FLEXIBLE';
export type ActionAfterCompletion = 'NONE' | 'DELETE';
export type ScheduleState = 'ENABLED' | 'DISABLED';

/** The target as stored and echoed by GetSchedule (wire field names). */
export interface WireTarget {
  Arn: string;
  RoleArn: string;
  Input?: string;
  SqsParameters?: { MessageGroupId?: string };
  RetryPolicy?: { MaximumEventAgeInSeconds?: number; MaximumRetryAttempts?: number };
  DeadLetterConfig?: { Arn?: string };
}

export interface SqsTargetRef {
  region: string;
  accountId: string;
  queueName: string;
  fifo: boolean;
}

export interface ValidatedCreate {
  name: string;
  groupName: string;
  expression: string;
  at: Date;
  timezone: string;
  flexibleTimeWindow: { Mode: FlexibleMode; MaximumWindowInMinutes?: number };
  target: WireTarget;
  sqs: SqsTargetRef;
  actionAfterCompletion: ActionAfterCompletion;
  state: ScheduleState;
  description?: string;
  kmsKeyArn?: string;
  startDate?: number;
  endDate?: number;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function optionalString(body: Record<string, unknown>, key: string, max: number): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max) throw validation(`${key} must be a string of at most ${max} characters`);
  return v;
}

function optionalInt(obj: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw validation(`${key} must be an integer in ${min}..${max}`);
  return v;
}

/** Parses `at(yyyy-mm-ddThh:mm:ss)` as a UTC instant; undefined when it is not an at() expression. */
export function parseAtExpression(expression: string): Date | undefined {
  const m = AT_PATTERN.exec(expression);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // Reject calendar overflow such as 2025-02-30 (Date.UTC would roll it over).
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    return undefined;
  }
  return date;
}

export function parseSqsArn(arn: string): SqsTargetRef | undefined {
  const m = SQS_ARN.exec(arn);
  if (!m) return undefined;
  const queueName = m[4] as string;
  return { region: m[2] as string, accountId: m[3] as string, queueName, fifo: queueName.endsWith('.fifo') };
}

export function validateName(name: string, what: 'Name' | 'GroupName'): string {
  if (!NAME_PATTERN.test(name)) throw validation(`${what} must be 1..64 characters of [0-9a-zA-Z-_.]`);
  return name;
}

/** Validates a CreateSchedule request body for schedule `name`. */
export function validateCreate(name: string, body: unknown, now: Date): ValidatedCreate {
  validateName(name, 'Name');
  if (!isObject(body)) throw validation('The request body must be a JSON object');
  const groupName = body.GroupName === undefined || body.GroupName === null ? 'default' : body.GroupName;
  if (typeof groupName !== 'string') throw validation('GroupName must be a string');
  validateName(groupName, 'GroupName');

  const expression = body.ScheduleExpression;
  if (typeof expression !== 'string' || expression.length === 0 || expression.length > 256) {
    throw validation('ScheduleExpression is required (1..256 characters)');
  }
  if (/^(rate|cron)\(/.test(expression)) {
    throw validation(`The scheduler emulator supports only at() expressions, not ${expression}`);
  }
  const at = parseAtExpression(expression);
  if (!at) throw validation(`Invalid Schedule Expression ${expression}`);

  const timezone = optionalString(body, 'ScheduleExpressionTimezone', 50) ?? 'UTC';
  if (!UTC_ZONES.has(timezone)) {
    throw validation(`The scheduler emulator supports only the UTC time zone, not ${timezone}`);
  }
  if (at.getTime() < Math.floor(now.getTime() / 1000) * 1000) {
    throw validation(`The schedule expression ${expression} is in the past`);
  }

  const ftw = body.FlexibleTimeWindow;
  if (!isObject(ftw)) throw validation('FlexibleTimeWindow is required');
  const mode = ftw.Mode;
  if (mode !== 'OFF' && mode !== 'FLEXIBLE') throw validation('FlexibleTimeWindow.Mode must be OFF or FLEXIBLE');
  const window = optionalInt(ftw, 'MaximumWindowInMinutes', 1, 1440);
  if (mode === 'FLEXIBLE' && window === undefined) throw validation('MaximumWindowInMinutes is required when Mode is FLEXIBLE');

  const t = body.Target;
  if (!isObject(t)) throw validation('Target is required');
  if (typeof t.Arn !== 'string' || t.Arn.length === 0) throw validation('Target.Arn is required');
  const sqs = parseSqsArn(t.Arn);
  if (!sqs) throw validation(`The scheduler emulator supports only SQS queue targets (arn:aws:sqs:REGION:ACCOUNT:NAME), not ${t.Arn}`);
  if (typeof t.RoleArn !== 'string' || !ROLE_ARN.test(t.RoleArn)) throw validation('Target.RoleArn must be an IAM role ARN');
  const target: WireTarget = { Arn: t.Arn, RoleArn: t.RoleArn };
  if (t.Input !== undefined && t.Input !== null) {
    if (typeof t.Input !== 'string' || t.Input.length === 0) throw validation('Target.Input must be a non-empty string');
    target.Input = t.Input;
  }
  if (isObject(t.SqsParameters)) {
    const group = t.SqsParameters.MessageGroupId;
    if (group !== undefined && (typeof group !== 'string' || group.length < 1 || group.length > 128)) {
      throw validation('Target.SqsParameters.MessageGroupId must be 1..128 characters');
    }
    target.SqsParameters = group === undefined ? {} : { MessageGroupId: group };
  }
  if (sqs.fifo && !target.SqsParameters?.MessageGroupId) throw validation('A FIFO queue target needs SqsParameters.MessageGroupId');
  if (isObject(t.RetryPolicy)) {
    const age = optionalInt(t.RetryPolicy, 'MaximumEventAgeInSeconds', 60, 86_400);
    const attempts = optionalInt(t.RetryPolicy, 'MaximumRetryAttempts', 0, 185);
    target.RetryPolicy = {
      ...(age !== undefined ? { MaximumEventAgeInSeconds: age } : {}),
      ...(attempts !== undefined ? { MaximumRetryAttempts: attempts } : {}),
    };
  }
  if (isObject(t.DeadLetterConfig) && typeof t.DeadLetterConfig.Arn === 'string') {
    target.DeadLetterConfig = { Arn: t.DeadLetterConfig.Arn };
  }

  const aac = body.ActionAfterCompletion ?? 'NONE';
  if (aac !== 'NONE' && aac !== 'DELETE') throw validation('ActionAfterCompletion must be NONE or DELETE');
  const state = body.State ?? 'ENABLED';
  if (state !== 'ENABLED' && state !== 'DISABLED') throw validation('State must be ENABLED or DISABLED');

  const description = optionalString(body, 'Description', 512);
  const kmsKeyArn = optionalString(body, 'KmsKeyArn', 2048);
  const dates: { startDate?: number; endDate?: number } = {};
  for (const [key, field] of [
    ['StartDate', 'startDate'],
    ['EndDate', 'endDate'],
  ] as const) {
    const v = body[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw validation(`${key} must be a timestamp`);
    dates[field] = v;
  }

  return {
    name,
    groupName,
    expression,
    at,
    timezone,
    flexibleTimeWindow: window === undefined ? { Mode: mode } : { Mode: mode, MaximumWindowInMinutes: window },
    target,
    sqs,
    actionAfterCompletion: aac,
    state,
    ...(description !== undefined ? { description } : {}),
    ...(kmsKeyArn !== undefined ? { kmsKeyArn } : {}),
    ...dates,
  };
}
