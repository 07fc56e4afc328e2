/**
 * A minimal EventBridge Scheduler endpoint for local runs: a node:http server
 * speaking Scheduler's REST-JSON API as @aws-sdk/client-scheduler uses it, for
 * CreateSchedule, GetSchedule and DeleteSchedule of `at()` schedules with SQS
 * targets. It fires on time by sending Target.Input to the target queue with
 * SQS SendMessage (on the local SQS endpoint, e.g. fauxqs), then deletes the
 * schedule when ActionAfterCompletion is DELETE.
 *
 * Development tooling only: never deployed. See README.md in this folder.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { GetQueueUrlCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  SchedulerApiError,
  validateCreate,
  validateName,
  validation,
  type ActionAfterCompletion,
  type ScheduleState,
  type SqsTargetRef,
  type WireTarget,
} from './validate.js';

export interface SchedulerEmulatorOptions {
  /** Port on 127.0.0.1; 0 or omitted picks a free one. */
  readonly port?: number;
  /** SQS endpoint that target queues live on (fauxqs). */
  readonly sqsEndpoint: string;
  /** Clock for due-ness and the "in the past" check. Default `() => new Date()`. */
  readonly now?: () => Date;
  /** Fire due schedules on timers. Default true; tests may turn it off and call `fireDue`. */
  readonly autoFire?: boolean;
  /** Account ID in schedule ARNs. Default 000000000000. */
  readonly accountId?: string;
  /** Region when the request's signature names none. Default us-east-1. */
  readonly defaultRegion?: string;
  /** Delivery failures and internal errors. Default: ignored. */
  readonly onError?: (error: unknown, schedule?: EmulatedSchedule) => void;
}

export interface EmulatedSchedule {
  readonly name: string;
  readonly groupName: string;
  readonly arn: string;
  readonly expression: string;
  readonly at: Date;
  readonly timezone: string;
  readonly state: ScheduleState;
  readonly actionAfterCompletion: ActionAfterCompletion;
  readonly target: Readonly<WireTarget>;
  readonly description?: string;
  readonly createdAt: Date;
  /** The at() time passed and the target was invoked (or given up on). Only with NONE does a completed schedule stay. */
  readonly completed: boolean;
  /** Delivery attempts so far. */
  readonly attempts: number;
  readonly lastError?: string;
}

export interface FireResult {
  readonly name: string;
  readonly groupName: string;
  readonly delivered: boolean;
  /** SQS message ID of the delivered message. */
  readonly messageId?: string;
  /** The schedule was removed after firing (ActionAfterCompletion DELETE). */
  readonly deleted: boolean;
  /** Delivery failed; set with `retryAt` when it will be retried, or alone when given up. */
  readonly error?: string;
  readonly retryAt?: Date;
}

export interface SchedulerEmulator {
  /** `http://127.0.0.1:<port>`: give it to SchedulerClient as `endpoint` (or AWS_ENDPOINT_URL_SCHEDULER). */
  readonly endpoint: string;
  readonly port: number;
  /** Stops the server and the timers, after any delivery in progress. */
  stop(): Promise<void>;
  /** Snapshot of the stored schedules. */
  list(): EmulatedSchedule[];
  /** Fires every enabled schedule due at `now` (default: the clock) and waits for the deliveries. */
  fireDue(now?: Date): Promise<FireResult[]>;
}

interface StoredSchedule {
  name: string;
  groupName: string;
  arn: string;
  expression: string;
  at: Date;
  timezone: string;
  state: ScheduleState;
  actionAfterCompletion: ActionAfterCompletion;
  flexibleTimeWindow: { Mode: string; MaximumWindowInMinutes?: number };
  target: WireTarget;
  sqs: SqsTargetRef;
  description?: string;
  kmsKeyArn?: string;
  startDate?: number;
  endDate?: number;
  createdAt: Date;
  modifiedAt: Date;
  completed: boolean;
  attempts: number;
  nextAttemptAt: Date;
  lastError?: string;
}

const MAX_BODY_BYTES = 1024 * 1024;
const MAX_TIMER_MS = 2 ** 31 - 1;
const DEFAULT_MAX_RETRIES = 185;
const DEFAULT_MAX_EVENT_AGE_S = 86_400;

const key = (groupName: string, name: string) => `${groupName}/${name}`;
const epochSeconds = (d: Date) => d.getTime() / 1000;

function regionFromAuthorization(header: string | undefined): string | undefined {
  const m = header ? /Credential=[^/]+\/\d{8}\/([^/]+)\/scheduler\//.exec(header) : null;
  return m?.[1];
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(validation('The request body is too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, errorType?: string): void {
  const payload = JSON.stringify(body);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    'x-amzn-requestid': randomUUID(),
  };
  if (errorType) headers['x-amzn-errortype'] = errorType;
  res.writeHead(status, headers);
  res.end(payload);
}

/** Replaces Scheduler's context attributes in a target input. */
function withContextAttributes(input: string, s: StoredSchedule, executionId: string, attempt: number): string {
  return input
    .replaceAll('<aws.scheduler.schedule-arn>', s.arn)
    .replaceAll('<aws.scheduler.scheduled-time>', `${s.at.toISOString().slice(0, 19)}Z`)
    .replaceAll('<aws.scheduler.execution-id>', executionId)
    .replaceAll('<aws.scheduler.attempt-number>', String(attempt));
}

function snapshot(s: StoredSchedule): EmulatedSchedule {
  return {
    name: s.name,
    groupName: s.groupName,
    arn: s.arn,
    expression: s.expression,
    at: new Date(s.at),
    timezone: s.timezone,
    state: s.state,
    actionAfterCompletion: s.actionAfterCompletion,
    target: structuredClone(s.target),
    ...(s.description !== undefined ? { description: s.description } : {}),
    createdAt: new Date(s.createdAt),
    completed: s.completed,
    attempts: s.attempts,
    ...(s.lastError !== undefined ? { lastError: s.lastError } : {}),
  };
}

function getScheduleBody(s: StoredSchedule): Record<string, unknown> {
  return {
    Arn: s.arn,
    Name: s.name,
    GroupName: s.groupName,
    ScheduleExpression: s.expression,
    ScheduleExpressionTimezone: s.timezone,
    State: s.state,
    ActionAfterCompletion: s.actionAfterCompletion,
    FlexibleTimeWindow: s.flexibleTimeWindow,
    Target: s.target,
    CreationDate: epochSeconds(s.createdAt),
    LastModificationDate: epochSeconds(s.modifiedAt),
    ...(s.description !== undefined ? { Description: s.description } : {}),
    ...(s.kmsKeyArn !== undefined ? { KmsKeyArn: s.kmsKeyArn } : {}),
    ...(s.startDate !== undefined ? { StartDate: s.startDate } : {}),
    ...(s.endDate !== undefined ? { EndDate: s.endDate } : {}),
  };
}

export async function startSchedulerEmulator(options: SchedulerEmulatorOptions): Promise<SchedulerEmulator> {
  const now = options.now ?? (() => new Date());
  const autoFire = options.autoFire ?? true;
  const accountId = options.accountId ?? '000000000000';
  const defaultRegion = options.defaultRegion ?? 'us-east-1';
  const schedules = new Map<string, StoredSchedule>();
  const sqsClients = new Map<string, SQSClient>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  // Serialises firing, so a timer tick and a test's fireDue never deliver one schedule twice.
  let firing: Promise<unknown> = Promise.resolve();

  function sqsFor(region: string): SQSClient {
    let client = sqsClients.get(region);
    if (!client) {
      client = new SQSClient({ endpoint: options.sqsEndpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 2 });
      sqsClients.set(region, client);
    }
    return client;
  }

  // ---- HTTP ---------------------------------------------------------------

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://scheduler.local');
    const match = /^\/schedules\/([^/]+)$/.exec(url.pathname);
    if (!match) {
      throw new SchedulerApiError('UnknownOperationException', 404, `The scheduler emulator does not support ${req.method} ${url.pathname}`);
    }
    const name = decodeURIComponent(match[1] as string);
    switch (req.method) {
      case 'POST': {
        const raw = await readBody(req);
        let body: unknown;
        try {
          body = raw === '' ? {} : JSON.parse(raw);
        } catch {
          throw validation('The request body is not valid JSON');
        }
        const region = regionFromAuthorization(req.headers.authorization) ?? defaultRegion;
        const v = validateCreate(name, body, now());
        const k = key(v.groupName, v.name);
        if (schedules.has(k)) throw new SchedulerApiError('ConflictException', 409, `Schedule ${v.name} already exists.`);
        const created = now();
        const stored: StoredSchedule = {
          name: v.name,
          groupName: v.groupName,
          arn: `arn:aws:scheduler:${region}:${accountId}:schedule/${v.groupName}/${v.name}`,
          expression: v.expression,
          at: v.at,
          timezone: v.timezone,
          state: v.state,
          actionAfterCompletion: v.actionAfterCompletion,
          flexibleTimeWindow: v.flexibleTimeWindow,
          target: v.target,
          sqs: v.sqs,
          createdAt: created,
          modifiedAt: created,
          completed: false,
          attempts: 0,
          nextAttemptAt: v.at,
          ...(v.description !== undefined ? { description: v.description } : {}),
          ...(v.kmsKeyArn !== undefined ? { kmsKeyArn: v.kmsKeyArn } : {}),
          ...(v.startDate !== undefined ? { startDate: v.startDate } : {}),
          ...(v.endDate !== undefined ? { endDate: v.endDate } : {}),
        };
        schedules.set(k, stored);
        arm();
        send(res, 200, { ScheduleArn: stored.arn });
        return;
      }
      case 'GET':
      case 'DELETE': {
        await readBody(req);
        validateName(name, 'Name');
        const groupName = url.searchParams.get('groupName') || 'default';
        validateName(groupName, 'GroupName');
        const k = key(groupName, name);
        const stored = schedules.get(k);
        if (!stored) throw new SchedulerApiError('ResourceNotFoundException', 404, `Schedule ${name} does not exist.`);
        if (req.method === 'GET') {
          send(res, 200, getScheduleBody(stored));
        } else {
          schedules.delete(k);
          arm();
          send(res, 200, {});
        }
        return;
      }
      default:
        throw new SchedulerApiError('UnknownOperationException', 404, `The scheduler emulator does not support ${req.method} /schedules/{Name}`);
    }
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      const apiError = err instanceof SchedulerApiError ? err : new SchedulerApiError('InternalServerException', 500, 'The scheduler emulator failed');
      if (!(err instanceof SchedulerApiError)) options.onError?.(err);
      if (!res.headersSent) send(res, apiError.status, { Message: apiError.message }, apiError.type);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  // ---- firing ---------------------------------------------------------------

  async function deliver(s: StoredSchedule, at: Date): Promise<FireResult> {
    s.attempts += 1;
    const attempt = s.attempts;
    try {
      const client = sqsFor(s.sqs.region);
      const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: s.sqs.queueName, QueueOwnerAWSAccountId: s.sqs.accountId }));
      const executionId = randomBytes(8).toString('hex');
      // Without an Input, send an empty JSON object (AWS sends its own default notification).
      const body = withContextAttributes(s.target.Input ?? '{}', s, executionId, attempt);
      const out = await client.send(
        new SendMessageCommand({
          QueueUrl,
          MessageBody: body,
          ...(s.sqs.fifo ? { MessageGroupId: s.target.SqsParameters?.MessageGroupId, MessageDeduplicationId: executionId } : {}),
        }),
      );
      s.completed = true;
      delete s.lastError;
      const deleted = removeIfDelete(s);
      return { name: s.name, groupName: s.groupName, delivered: true, deleted, ...(out.MessageId ? { messageId: out.MessageId } : {}) };
    } catch (err) {
      const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      s.lastError = message;
      options.onError?.(err, snapshot(s));
      const maxRetries = s.target.RetryPolicy?.MaximumRetryAttempts ?? DEFAULT_MAX_RETRIES;
      const maxAgeMs = (s.target.RetryPolicy?.MaximumEventAgeInSeconds ?? DEFAULT_MAX_EVENT_AGE_S) * 1000;
      const backoffMs = Math.min(60_000, 1000 * 2 ** (attempt - 1));
      const retryAt = new Date(at.getTime() + backoffMs);
      if (attempt > maxRetries || retryAt.getTime() - s.at.getTime() > maxAgeMs) {
        // Given up: AWS would send the event to the DeadLetterConfig queue; the emulator drops it.
        s.completed = true;
        const deleted = removeIfDelete(s);
        return { name: s.name, groupName: s.groupName, delivered: false, deleted, error: message };
      }
      s.nextAttemptAt = retryAt;
      return { name: s.name, groupName: s.groupName, delivered: false, deleted: false, error: message, retryAt };
    }
  }

  function removeIfDelete(s: StoredSchedule): boolean {
    if (s.actionAfterCompletion !== 'DELETE') return false;
    const k = key(s.groupName, s.name);
    // Only remove this very schedule: it may have been deleted and recreated meanwhile.
    if (schedules.get(k) !== s) return false;
    schedules.delete(k);
    return true;
  }

  function isDue(s: StoredSchedule, t: number): boolean {
    return s.state === 'ENABLED' && !s.completed && s.at.getTime() <= t && s.nextAttemptAt.getTime() <= t;
  }

  function fireDue(at: Date = now()): Promise<FireResult[]> {
    const run = firing.then(async () => {
      const t = at.getTime();
      const due = [...schedules.values()]
        .filter((s) => isDue(s, t))
        .sort((a, b) => a.at.getTime() - b.at.getTime() || key(a.groupName, a.name).localeCompare(key(b.groupName, b.name)));
      const results: FireResult[] = [];
      for (const s of due) {
        // It may have been deleted while an earlier delivery was awaited.
        if (schedules.get(key(s.groupName, s.name)) !== s || !isDue(s, t)) continue;
        results.push(await deliver(s, at));
      }
      return results;
    });
    firing = run.catch(() => undefined);
    return run.finally(() => arm());
  }

  function arm(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (!autoFire || stopped) return;
    let next: number | undefined;
    for (const s of schedules.values()) {
      if (s.state !== 'ENABLED' || s.completed) continue;
      const t = Math.max(s.at.getTime(), s.nextAttemptAt.getTime());
      if (next === undefined || t < next) next = t;
    }
    if (next === undefined) return;
    const delayMs = Math.min(MAX_TIMER_MS, Math.max(0, next - now().getTime()));
    timer = setTimeout(() => {
      timer = undefined;
      fireDue().catch((err: unknown) => options.onError?.(err));
    }, delayMs);
    timer.unref();
  }

  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    list: () => [...schedules.values()].map(snapshot),
    fireDue,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await firing;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      for (const c of sqsClients.values()) c.destroy();
      sqsClients.clear();
    },
  };
}
