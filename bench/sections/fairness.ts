/**
 * Section `fairness`: one tenant with a slow provider must not stall the
 * others. On the local stack (dev/local/start.ts), tenant `noisy` submits a
 * backlog of charges its provider answers slowly (the payments simulator's
 * latency fault on customer `cus_slow`), then tenant `quiet` submits a few
 * ordinary charges and waits for them over HTTP (`Prefer: wait`). Measured:
 * the quiet tenant's submit → terminal latency, against its own latency on an
 * idle stack, and what fairness costs the noisy tenant (its backlog's drain).
 *
 * Two variants, each on a fresh stack with the same worker shape
 * (`instances` batches of `batchSize` at once, as Lambda runs an SQS event
 * source with a maximum concurrency):
 * - **before** (`fairness: 'none'`): the queue serves messages oldest first,
 *   as a standard queue without message groups does: the quiet charges wait
 *   for the whole backlog ahead of them;
 * - **after** (`fairness: 'tenant'`): the producers send MessageGroupId =
 *   tenant, which makes the deployed queue an SQS fair queue; fauxqs does not
 *   implement fair queues, so the local event source emulates their delivery
 *   order (lib/aws/sqs/local-event-source.ts).
 *
 * Timing: submit start → the client's answer for the quiet charges (the wait
 * polls every 25 ms → ≤ 100 ms here, so the poll adds little); submit start →
 * the worker's batch holding it done (the stack's `handled` hook) for the
 * noisy ones, so that 40 concurrent waits do not load DynamoDB Local.
 */
import { randomUUID } from 'node:crypto';
import { startLocalStack, type LocalStack } from '../../dev/local/start.js';
import { AipClient } from '../../lib/client/index.js';
import type { QueueFairness } from '../../lib/ports/queue.js';
import { distribution, type Distribution } from '../lib/stats.js';

export interface FairnessOptions {
  /** The noisy tenant's backlog of slow charges, per round. */
  readonly slowActions: number;
  /** The provider's latency on the noisy tenant's charges, ms. */
  readonly slowMs: number;
  /** Charges the quiet tenant submits at once behind the backlog, per round. */
  readonly quietActions: number;
  /** Worker batches at once (Lambda concurrency) and messages per batch. */
  readonly instances: number;
  readonly batchSize: number;
  /** Rounds per variant. */
  readonly rounds: number;
  /** Sequential quiet charges on the idle stack (the baseline). */
  readonly baselineRuns: number;
}

/** BENCH_FAIRNESS_SLOW, BENCH_FAIRNESS_SLOW_MS, BENCH_FAIRNESS_QUIET, BENCH_FAIRNESS_INSTANCES, BENCH_FAIRNESS_BATCH, BENCH_FAIRNESS_ROUNDS. */
export function fairnessOptions(quick: boolean, env: NodeJS.ProcessEnv = process.env): FairnessOptions {
  const int = (name: string, fallback: number, min: number, max: number) => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}`);
    return n;
  };
  return {
    slowActions: int('BENCH_FAIRNESS_SLOW', quick ? 20 : 40, 1, 1_000),
    // Below the payments connector's 10 s timeout: the slow charges complete.
    slowMs: int('BENCH_FAIRNESS_SLOW_MS', quick ? 1_500 : 2_000, 1, 8_000),
    quietActions: int('BENCH_FAIRNESS_QUIET', quick ? 3 : 5, 1, 10),
    instances: int('BENCH_FAIRNESS_INSTANCES', 2, 1, 20),
    batchSize: int('BENCH_FAIRNESS_BATCH', 5, 1, 10),
    rounds: int('BENCH_FAIRNESS_ROUNDS', quick ? 1 : 3, 1, 20),
    baselineRuns: quick ? 5 : 10,
  };
}

export interface FairnessVariantFigures {
  readonly id: 'before' | 'after';
  readonly fairness: QueueFairness;
  readonly label: string;
  /** The quiet tenant's charges on the idle stack, ms. */
  readonly quiet_idle_ms: Distribution;
  /** The quiet tenant's charges submitted right behind the noisy backlog, ms. */
  readonly quiet_ms: Distribution;
  /** The noisy tenant's slow charges: submit → the worker's batch done, ms. */
  readonly noisy_ms: Distribution;
  /** First noisy submit → the last noisy charge done, per round, ms. */
  readonly drain_ms: Distribution;
  /** Terminal statuses seen (all should be `completed`). */
  readonly statuses: Record<string, number>;
  readonly errors?: string[];
}

export interface FairnessFigures {
  readonly note: string;
  readonly options: FairnessOptions;
  /** What the backlog alone takes: ceil(slow / (instances × batch)) × slowMs, ms. */
  readonly backlog_rounds_ms: number;
  readonly variants: FairnessVariantFigures[];
}

const TENANTS = { noisy: 'noisy', quiet: 'quiet' } as const;
const SLOW_CUSTOMER = 'cus_slow';
const MAX_WAIT = 25;

function chargeBody(tag: string, customer: string): Record<string, unknown> {
  const id = `${tag}-${randomUUID().slice(0, 12)}`;
  return { id, capability_id: 'payments.charge', input: { amount: 1250, currency: 'eur', customer }, idempotency_key: id, transaction: { mode: 'execute' } };
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'requires_human']);

/** Submit with `Prefer: wait`, then long-poll until terminal; returns the status. */
async function untilTerminal(client: AipClient, body: Record<string, unknown>): Promise<string> {
  const sub = await client.submitAction(body as never, { wait: MAX_WAIT });
  if (TERMINAL.has(sub.action_result.status)) return sub.action_result.status;
  const done = await client.waitForAction(sub.action_id, { timeoutMs: 300_000, pollSeconds: MAX_WAIT });
  return done.action_result.status;
}

/** Runs `f` over `items` with at most `limit` at once. */
async function pool<T>(items: readonly T[], limit: number, f: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await f(items[next++] as T);
    }),
  );
}

async function runVariant(id: 'before' | 'after', fairness: QueueFairness, o: FairnessOptions, log: (line: string) => void): Promise<FairnessVariantFigures> {
  const stack: LocalStack = await startLocalStack({
    inMemory: true,
    ports: { api: 0, dynamodb: 0, sqs: 0, scheduler: 0, payments: 0 },
    tenants: [TENANTS.noisy, TENANTS.quiet],
    approvalPolicies: [],
    sweepIntervalMs: 0,
    fairness,
    workerInstances: o.instances,
    workerBatchSize: o.batchSize,
    // A fine wait poll, so that the quiet tenant's figure is its queueing, not the poll's step.
    waitPoll: { intervalMs: 25, fastWindowMs: 0, maxIntervalMs: 100, adaptive: false, firstMs: 0 },
    // The fairness measured is the invoke queue's: a waited execute runs its attempt inside the submit by default
    // (attempt_when_waited "inline", docs/runtime.md), where neither tenant queues behind the other at all. What goes
    // through the queue (an execute nobody waits on, a slow capability, every retry) is what this section measures.
    runtimeSettings: { attempt_when_waited: 'queue' },
  });
  const errors: string[] = [];
  const statuses: Record<string, number> = {};
  const note = (status: string) => (statuses[status] = (statuses[status] ?? 0) + 1);
  try {
    const client = async (tenant: string) =>
      new AipClient({
        baseUrl: stack.url,
        tenant,
        token: await stack.mintToken({ sub: `bench-${tenant}`, tenants: [tenant], scopes: ['aip:actions:read', 'aip:actions:write'], ttl: '2h' }),
      });
    const noisy = await client(TENANTS.noisy);
    const quiet = await client(TENANTS.quiet);
    stack.simulator.setFaults([{ match: { customer: SLOW_CUSTOMER }, fault: { type: 'latency', ms: o.slowMs }, times: 'always' }]);

    // Warm-up (both tenants, fast charges), then the quiet tenant alone on the idle stack.
    for (let i = 0; i < 3; i++) {
      await untilTerminal(noisy, chargeBody('warm', 'cus_warm'));
      await untilTerminal(quiet, chargeBody('warm', 'cus_warm'));
    }
    const idle: number[] = [];
    for (let i = 0; i < o.baselineRuns; i++) {
      const t0 = performance.now();
      note(await untilTerminal(quiet, chargeBody('idle', 'cus_quiet')));
      idle.push(performance.now() - t0);
    }

    const quietMs: number[] = [];
    const noisyMs: number[] = [];
    const drain: number[] = [];
    for (let round = 0; round < o.rounds; round++) {
      const bodies = Array.from({ length: o.slowActions }, () => chargeBody('slow', SLOW_CUSTOMER));
      const t0 = performance.now();
      const noisyDone: Promise<void>[] = [];
      await pool(bodies, 8, async (body) => {
        const started = performance.now();
        // Subscribed before the submit: resolves when the worker's batch holding this charge is done.
        const handled = stack.handled('invoke', (m) => m.tenant_id === TENANTS.noisy && m.kind === 'invoke' && m.action_id === body.id);
        noisyDone.push(handled.then(() => void noisyMs.push(performance.now() - started)));
        await noisy.submitAction(body as never);
      });
      // The whole backlog is queued: the quiet tenant's charges go in behind it.
      await Promise.all(
        Array.from({ length: o.quietActions }, async () => {
          const started = performance.now();
          try {
            note(await untilTerminal(quiet, chargeBody('quiet', 'cus_quiet')));
            quietMs.push(performance.now() - started);
          } catch (err) {
            errors.push(`quiet: ${err instanceof Error ? err.message : String(err)}`);
          }
        }),
      );
      await Promise.all(noisyDone);
      drain.push(performance.now() - t0);
      // The noisy charges' terminal statuses (one read each, after the drain).
      for (const body of bodies) note((await noisy.getAction(body.id as string)).action_result.status);
    }
    const figures: FairnessVariantFigures = {
      id,
      fairness,
      label: id === 'before' ? 'before: no message groups, oldest first' : 'after: a message group per tenant (SQS fair queue)',
      quiet_idle_ms: distribution(idle),
      quiet_ms: distribution(quietMs),
      noisy_ms: distribution(noisyMs),
      drain_ms: distribution(drain),
      statuses,
      ...(errors.length > 0 ? { errors: errors.slice(0, 5) } : {}),
    };
    log(
      `  ${id}: quiet p50 ${figures.quiet_ms.p50} ms (idle ${figures.quiet_idle_ms.p50}), max ${figures.quiet_ms.max}; noisy drain p50 ${figures.drain_ms.p50} ms`,
    );
    return figures;
  } finally {
    stack.simulator.releaseDelays();
    await stack.stop();
  }
}

export async function runFairnessSection(options: FairnessOptions, log: (line: string) => void): Promise<FairnessFigures> {
  const variants = [await runVariant('before', 'none', options, log), await runVariant('after', 'tenant', options, log)];
  return {
    note:
      `local stack, tenant "noisy" queues ${options.slowActions} charges its provider answers in ${options.slowMs} ms (simulator latency fault on its customer), ` +
      `then tenant "quiet" submits ${options.quietActions} ordinary charges at once and waits (Prefer: wait, polled every 25 → 100 ms); ` +
      `worker: ${options.instances} batches of ${options.batchSize} at once; the attempt through the invoke queue (attempt_when_waited "queue": by default a waited execute's attempt runs inside the submit, queueing behind nobody); ${options.rounds} round(s) per variant, each variant on a fresh stack`,
    options,
    backlog_rounds_ms: Math.ceil(options.slowActions / (options.instances * options.batchSize)) * options.slowMs,
    variants,
  };
}

// --- rendering ------------------------------------------------------------------------------

const f = (x: number, d = 0) => (Number.isFinite(x) ? (Math.round(x * 10 ** d) / 10 ** d).toLocaleString('en') : '–');

export function renderFairnessMarkdown(r: FairnessFigures, heading = '## Fairness between tenants (local stack)'): string[] {
  const lines: string[] = [heading, ''];
  lines.push(
    `${r.note}. **before** serves the invoke queue oldest first (a standard queue without message groups); **after** sends MessageGroupId = tenant (an SQS fair queue on AWS; ` +
      'fauxqs does not implement fair queues, so the local event source emulates their delivery order: lib/aws/sqs/local-event-source.ts). ' +
      `The backlog alone takes about ${f(r.backlog_rounds_ms)} ms (${Math.ceil(r.options.slowActions / (r.options.instances * r.options.batchSize))} rounds of ${f(r.options.slowMs)} ms).`,
    '',
    '| variant | quiet tenant idle, p50 ms | quiet behind the backlog, p50 ms | max ms | noisy charge, p50 ms | noisy backlog drained, p50 ms | statuses |',
    '|---|---:|---:|---:|---:|---:|---|',
  );
  for (const v of r.variants) {
    const statuses = Object.entries(v.statuses)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    lines.push(
      `| ${v.label} | ${f(v.quiet_idle_ms.p50)} | ${f(v.quiet_ms.p50)} | ${f(v.quiet_ms.max)} | ${f(v.noisy_ms.p50)} | ${f(v.drain_ms.p50)} | ${statuses} |`,
    );
  }
  lines.push('');
  for (const v of r.variants) if (v.errors) lines.push(`Errors (${v.id}): ${v.errors.join('; ')}`, '');
  return lines;
}

/** One line for the report's headline. */
export function fairnessHeadline(r: FairnessFigures): string | undefined {
  const before = r.variants.find((v) => v.id === 'before');
  const after = r.variants.find((v) => v.id === 'after');
  if (!before || !after) return undefined;
  return (
    `- **fairness**: a quiet tenant's charge behind ${r.options.slowActions} slow charges (${f(r.options.slowMs)} ms each) of another tenant: p50 ${f(before.quiet_ms.p50)} ms oldest first → ` +
    `${f(after.quiet_ms.p50)} ms with a message group per tenant (idle: ${f(after.quiet_idle_ms.p50)} ms); the noisy backlog drains in ${f(before.drain_ms.p50)} → ${f(after.drain_ms.p50)} ms.`
  );
}
