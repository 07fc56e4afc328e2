/**
 * Secret leakage: the payments credential is a planted, unique
 * secret. A representative workload runs over HTTP against the local stack
 * (execute, plan + commit, a provider 504 after commit → outcome_unknown →
 * scheduled reconciliation, a compensation, declined and failing calls,
 * rejected input). Then EVERYTHING written is scanned for the secret and its
 * base64, base64url and hex forms (and its SHA-256 hex, a tell-tale of a
 * "hashed" secret stored as a lookup key):
 * - every DynamoDB item (full Scan);
 * - every SQS message: each one the worker and reconcile consumer handled
 *   (observed through `stack.handled`), and whatever is left on the queues
 *   and their DLQs; an admission's invoke message carries the images of the
 *   items it wrote (the action without its input), so the queue holds
 *   no input either, nor any input value;
 * - every schedule of the Scheduler emulator (input included);
 * - every byte written to stdout/stderr and every console call during the
 *   run (the Powertools logger writes through them), at log level DEBUG
 *   (the test environment's default is WARN: vitest.config.ts); captured,
 *   not echoed (a hit is printed with its context);
 * - every API response body and header (receipts included: each transaction
 *   is read back with `include=receipts,result`).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { GetQueueUrlCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LocalStack } from '../../dev/local/start.js';
import type { QueueMessage } from '../../lib/ports/messages.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { reconcileActionId } from '../../lib/runtime/reconciliation.js';
import { dynamoClient, recordScenario, reliabilityStack, scanAll } from './support.js';
import { HANG_MS } from '../support/wait.js';
import { readableItem } from '../support/packed-items.js';

/** The planted secret: unique per run, never otherwise in the repository. */
const SECRET = `sk_planted_${randomBytes(24).toString('hex')}`;
const FORMS: Record<string, string> = {
  raw: SECRET,
  base64: Buffer.from(SECRET).toString('base64').replace(/=+$/, ''),
  base64url: Buffer.from(SECRET).toString('base64url'),
  hex: Buffer.from(SECRET).toString('hex'),
  sha256_hex: createHash('sha256').update(SECRET).digest('hex'),
  // A fragment long enough to be the secret, short enough to survive truncation in a log line.
  fragment: SECRET.slice('sk_planted_'.length, 'sk_planted_'.length + 24),
};
const TENANT = 'acme';
const WAIT = 20;

const clock = new SteppedClock();
let stack: LocalStack;
let table: string;
let ddb: DynamoDBClient;
let token: string;
let approverToken: string;
/** Everything observed, as text, by source. */
const observed: Record<string, string[]> = { dynamodb: [], sqs_handled: [], sqs_left: [], schedules: [], logs: [], api: [] };
const messages: QueueMessage[] = [];
const restore: (() => void)[] = [];

function captureOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write.bind(stream);
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      observed.logs?.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      done?.();
      return true;
    }) as typeof stream.write;
    restore.push(() => {
      stream.write = original as typeof stream.write;
    });
  }
  for (const level of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
    const original = console[level];
    console[level] = (...args: unknown[]) => {
      observed.logs?.push(args.map((a) => (typeof a === 'string' ? a : safeJson(a))).join(' '));
    };
    restore.push(() => {
      console[level] = original;
    });
  }
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => (x instanceof Error ? { name: x.name, message: x.message, stack: x.stack, cause: x.cause } : x)) ?? String(v);
  } catch {
    return String(v);
  }
}

beforeAll(async () => {
  // Every log line the functions write, whatever the test environment's level (made before the first handler runs).
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'DEBUG');
  captureOutput();
  ({ stack, table } = await reliabilityStack('leak', {
    tenants: [TENANT],
    approvalPolicies: [],
    runtimeSettings: {
      tenants: {
        [TENANT]: { approvals: [{ policy_id: 'leak-comp', capabilities: ['payments.charge'], modes: ['compensate'], approver_scopes: ['aip:approve'] }] },
      },
    },
    paymentsApiKey: SECRET,
    clock,
    log: (line) => observed.logs?.push(line),
  }));
  ddb = dynamoClient();
  token = await stack.mintToken({ sub: 'leaker', tenants: [TENANT], scopes: ['aip:actions:read', 'aip:actions:write', 'aip:operator'], ttl: '2h' });
  approverToken = await stack.mintToken({ sub: 'leak-approver', tenants: [TENANT], scopes: ['aip:actions:read', 'aip:approve'], ttl: '2h' });
  // Every message the worker and the reconcile consumer handle (the predicate sees each one; it never matches).
  for (const queue of ['invoke', 'reconcile'] as const) {
    void stack.handled(queue, (m) => {
      messages.push(m);
      return false;
    });
  }
});

afterAll(async () => {
  for (const r of restore.splice(0)) r();
  vi.unstubAllEnvs();
  ddb?.destroy();
  await stack?.stop();
});

const uid = (p: string) => `${p}-${randomUUID().slice(0, 12)}`;

async function call(method: string, path: string, body?: unknown, bearer = token): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(HANG_MS),
  });
  const text = await res.text();
  observed.api?.push(`${method} ${path} ${res.status} ${JSON.stringify([...res.headers])} ${text}`);
  return { status: res.status, body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function charge(id: string, amount: number, transaction: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { id, capability_id: 'payments.charge', input: { amount, currency: 'eur', customer: 'cus_leak' }, transaction, ...extra };
}

const settled = (b: Record<string, unknown>) => !['accepted', 'running'].includes((b.action_result as { status?: string } | undefined)?.status ?? '');

/** Submits and waits (long polls) for the worker to settle it, side records included. */
async function run(body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const id = body.id as string;
  const worked = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
  const sub = await call('POST', `/v1/actions`, body);
  expect(sub.status).toBeLessThan(500);
  if (sub.status >= 400 || sub.body.action_result === undefined) return sub.body;
  let state = sub.body;
  while (!settled(state) || (state.action_result as { status: string }).status === 'requires_human') {
    if ((state.action_result as { status: string }).status === 'requires_human') return state;
    state = (await call('GET', `/v1/actions/${id}?wait=${WAIT}`)).body;
  }
  if (sub.status === 202) await worked;
  return state;
}

async function finish(id: string): Promise<Record<string, unknown>> {
  for (;;) {
    const s = (await call('GET', `/v1/actions/${id}?wait=${WAIT}`)).body;
    if (settled(s)) return s;
  }
}

describe('secret leakage', () => {
  it('the planted credential appears nowhere the runtime writes or answers', async () => {
    const txIds: string[] = [];
    const txOf = (s: Record<string, unknown>) => (s.transaction as { transaction_id?: string } | undefined)?.transaction_id;

    // execute
    const exec = await run(charge(uid('exec'), 1_000, { mode: 'execute' }, { idempotency_key: uid('k') }));
    expect(exec.action_result).toMatchObject({ status: 'completed' });
    txIds.push(txOf(exec) as string);
    const execId = (exec.action_result as { action_id: string }).action_id;
    const chargeId = (exec.action_result as { output: { charge_id: string } }).output.charge_id;

    // idempotent replay
    await call('POST', '/v1/actions', charge(execId, 1_000, { mode: 'execute' }));

    // plan + commit
    const planId = uid('plan');
    const plan = await call('POST', '/v1/actions', charge(planId, 2_000, { mode: 'plan' }));
    const planOut = (plan.body.action_result as { output: { plan_id: string; transaction_id: string } }).output;
    const commit = await run(charge(uid('commit'), 2_000, { mode: 'commit', plan_id: planOut.plan_id }));
    expect(commit.action_result).toMatchObject({ status: 'completed' });
    txIds.push(planOut.transaction_id);

    // a declined charge and a provider 500 (failures)
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'decline' }, times: 1 }]);
    const failed = await run(charge(uid('decline'), 3_000, { mode: 'execute' }));
    expect((failed.action_result as { status: string }).status).toBe('failed');
    if (txOf(failed) !== undefined) txIds.push(txOf(failed) as string);
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_before_commit', status: 500 }, times: 1 }]);
    const errored = await run(charge(uid('err500'), 3_100, { mode: 'execute' }));
    expect(['failed', 'completed']).toContain((errored.action_result as { status: string }).status);
    if (txOf(errored) !== undefined) txIds.push(txOf(errored) as string);

    // timeout → outcome_unknown → scheduled reconciliation
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
    const unknown = await run(charge(uid('timeout'), 4_000, { mode: 'execute' }, { idempotency_key: uid('k') }));
    expect(unknown.transaction).toMatchObject({ status: 'outcome_unknown' });
    const unknownTx = txOf(unknown) as string;
    txIds.push(unknownTx);
    const schedule = stack.scheduler.list().find((s) => JSON.parse(s.target.Input ?? '{}').transaction_id === unknownTx);
    expect(schedule).toBeDefined();
    observed.schedules?.push(...stack.scheduler.list().map((s) => safeJson(s)));
    const at = schedule?.at as Date;
    clock.advanceTo(at);
    const reconciled = stack.handled('reconcile', (m) => m.kind === 'reconcile' && m.transaction_id === unknownTx);
    await stack.scheduler.fireDue(at);
    await reconciled;
    const rec = await finish(reconcileActionId(TENANT, unknownTx, 1));
    expect(rec.action_result).toMatchObject({ status: 'completed' });

    // compensation (approved by another principal)
    const compId = uid('refund');
    const comp = await call('POST', '/v1/actions', {
      id: compId,
      capability_id: 'payments.charge',
      input: { charge_id: chargeId },
      transaction: { mode: 'compensate', compensation_for: execId },
    });
    const approvalId = (comp.body.action_result as { metadata: { approval_id: string } }).metadata.approval_id;
    const compWorked = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === compId);
    await call('POST', `/v1/approvals/${approvalId}/decision`, { decision: 'approve' }, approverToken);
    const compDone = await finish(compId);
    await compWorked;
    expect(compDone.action_result).toMatchObject({ status: 'completed' });
    if (txOf(compDone) !== undefined) txIds.push(txOf(compDone) as string);

    // rejected input and operator views
    await call('POST', '/v1/actions', '{"id":');
    await call('POST', '/v1/actions', charge(uid('bad'), -1, { mode: 'execute' }));
    for (const view of ['pending_approvals', 'outcome_unknown', 'stalled_committing']) await call('GET', `/v1/operator/transactions?view=${view}`);

    // receipts and results of every transaction, through the API
    for (const tx of txIds) {
      const t = await call('GET', `/v1/transactions?transaction_id=${encodeURIComponent(tx)}&include=receipts,result`);
      expect(t.status).toBe(200);
    }

    // --- scan everything written -------------------------------------------------
    // Packed attributes decoded first (test/support/packed-items.ts): a search of compressed bytes would find nothing.
    observed.dynamodb = (await scanAll(ddb, table)).map((i) => JSON.stringify(readableItem(i)));
    observed.sqs_handled = messages.map((m) => JSON.stringify(m));
    observed.schedules?.push(...stack.scheduler.list().map((s) => safeJson(s)));
    const sqs = new SQSClient({ endpoint: inject('sqsEndpoint'), region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    try {
      for (const suffix of ['invoke', 'invoke-dlq', 'reconcile', 'reconcile-dlq']) {
        const url = (await sqs.send(new GetQueueUrlCommand({ QueueName: `${table}-${suffix}` }))).QueueUrl as string;
        const got = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 0, WaitTimeSeconds: 0, MessageAttributeNames: ['All'] }),
        );
        observed.sqs_left?.push(...(got.Messages ?? []).map((m) => JSON.stringify(m)));
      }
    } finally {
      sqs.destroy();
    }

    const hits: string[] = [];
    for (const [source, texts] of Object.entries(observed)) {
      for (const t of texts) {
        for (const [form, needle] of Object.entries(FORMS)) {
          if (t.includes(needle)) hits.push(`${source}/${form}: …${t.slice(Math.max(0, t.indexOf(needle) - 80), t.indexOf(needle) + 40)}…`);
        }
      }
    }
    // The admissions' invoke messages carry the images of what they wrote (docs/runtime.md, "The worker's first
    // read"): the execute's, the commit's and the approved compensation's, scanned above with every other message.
    // Those images are the stored items less the action's input: no message carries an input, nor the input's
    // values (`customer` is a redact pointer of payments.charge: stored until the outcome is definitive, never queued).
    const imaged = messages.filter((m) => m.kind === 'invoke' && m.admitted !== undefined);
    expect(imaged.map((m) => (m.kind === 'invoke' ? m.admitted?.transaction?.mode : undefined)).sort()).toEqual(
      expect.arrayContaining(['compensate', 'execute', 'plan']),
    );
    for (const text of [...observed.sqs_handled, ...(observed.sqs_left ?? [])]) {
      expect(text).not.toMatch(/\\?"input\\?"/);
      expect(text).not.toContain('cus_leak');
    }
    // A schedule's reconcile message carries the outcome_unknown record it was created for (docs/runtime.md, "The
    // reconcile consumer's first read"), scanned above as a handled message and here as the schedule's stored Input:
    // a transaction record, with no action input nor input value.
    expect(messages.some((m) => m.kind === 'reconcile' && m.scheduled?.transaction.transaction_id === unknownTx)).toBe(true);
    for (const text of observed.schedules ?? []) {
      expect(text).not.toMatch(/\\?"input\\?"/);
      expect(text).not.toContain('cus_leak');
    }

    // The scan looked at real data (not vacuous), and found no secret in it. Most receipts are inside their record
    // items (docs/table-design.md, "Receipts inside the record"), decoded with them: counted by their `prev_hash`.
    const receiptsScanned = observed.dynamodb.reduce((n, text) => n + (text.match(/"prev_hash"/g)?.length ?? 0), 0);
    expect(observed.dynamodb.length).toBeGreaterThan(15);
    expect(receiptsScanned).toBeGreaterThan(10);
    expect(observed.sqs_handled.length).toBeGreaterThan(4);
    expect(observed.api?.length).toBeGreaterThan(10);
    expect(observed.logs?.length).toBeGreaterThan(0);
    expect(stack.simulator.ledger().length).toBeGreaterThanOrEqual(3);
    expect(hits).toEqual([]);

    const counts = Object.fromEntries(Object.entries(observed).map(([k, v]) => [`${k}_scanned`, v.length]));
    recordScenario('secret-leakage', {
      scenario: 'Secret leakage (planted credential)',
      cases: Object.values(observed).reduce((n, v) => n + v.length, 0),
      held: [
        'secret (raw, base64, base64url, hex, sha256, fragment) absent from DynamoDB items, SQS messages (handled, left, DLQs), schedules, logs, API responses and receipts',
        "the admissions' invoke messages carry their stored images without any action input or input value",
        "a schedule's reconcile message carries its outcome_unknown record without any action input or input value",
      ],
      counts: { ...counts, transactions: txIds.length, forms: Object.keys(FORMS).length, hits: hits.length },
    });
  });
});
