/**
 * Section 3: end to end on the local stack (dev/local/start.ts
 * `startLocalStack`: DynamoDB Local, fauxqs, the Scheduler emulator, the
 * payments simulator, the local API Gateway with the Lambda authorizer and
 * the HTTP handlers, the SQS poller feeding the worker handler), over HTTP
 * on loopback with the typed client (lib/client).
 *
 * Latency is measured from the HTTP submit to the terminal result:
 * POST /v1/actions with `Prefer: wait=N` (the handler polls the action
 * until it settles), falling back to long-polling GET /v1/actions/{id}
 * (`?wait=`) if the first wait ends early. plan+commit is a plan
 * (synchronous) followed by the commit of that plan, timed together.
 *
 * The local stack runs ONE worker poller (batches of up to 10 messages, up
 * to 10 records at once) and one DynamoDB Local on the same machine as the
 * clients: throughput here measures this machine, not the deployed
 * runtime, whose API and worker Lambdas scale out.
 */
import { randomUUID } from 'node:crypto';
import { startLocalStack } from '../../dev/local/start.js';
import { AipClient } from '../../lib/client/index.js';
import { distribution, type Distribution } from '../lib/stats.js';

export interface LevelFigures {
  readonly flow: 'execute' | 'plan+commit';
  readonly concurrency: number;
  readonly requests: number;
  readonly completed: number;
  readonly failed: number;
  readonly wall_seconds: number;
  /** Terminal results per second over the level's wall time. */
  readonly throughput_per_s: number;
  readonly latency_ms: Distribution;
  readonly errors?: string[];
}

export interface E2eFigures {
  readonly note: string;
  readonly levels: LevelFigures[];
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

function chargeBody(mode: string, extra: Record<string, unknown> = {}, key = true): Record<string, unknown> {
  const id = randomUUID().slice(0, 12);
  return {
    id: `e2e-${mode.slice(0, 3)}-${id}`,
    capability_id: 'payments.charge',
    input: { amount: 1250, currency: 'eur', customer: 'cus_e2e' },
    ...(key ? { idempotency_key: `e2e-${id}` } : {}),
    transaction: { mode, ...extra },
  };
}

async function untilTerminal(client: AipClient, body: Record<string, unknown>): Promise<string> {
  const sub = await client.submitAction(body as never, { wait: 20 });
  let status = sub.action_result.status;
  if (!TERMINAL.has(status)) {
    const done = await client.waitForAction(sub.action_id, { timeoutMs: 120_000, pollSeconds: 20 });
    status = done.action_result.status;
  }
  return status;
}

async function executeFlow(client: AipClient): Promise<string> {
  return untilTerminal(client, chargeBody('execute'));
}

async function planCommitFlow(client: AipClient): Promise<string> {
  const plan = await client.submitAction(chargeBody('plan', {}, false) as never);
  const plan_id = (plan.action_result.output as { plan_id?: string } | undefined)?.plan_id;
  if (plan.action_result.status !== 'completed' || plan_id === undefined) return `plan_${plan.action_result.status}`;
  return untilTerminal(client, chargeBody('commit', { plan_id }));
}

async function runLevel(client: AipClient, flow: LevelFigures['flow'], concurrency: number, requests: number): Promise<LevelFigures> {
  const run = flow === 'execute' ? executeFlow : planCommitFlow;
  const latencies: number[] = [];
  const errors: string[] = [];
  let failed = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        if (next >= requests) return;
        next++;
        const s = performance.now();
        try {
          const status = await run(client);
          if (status === 'completed') latencies.push(performance.now() - s);
          else {
            failed++;
            if (errors.length < 5) errors.push(`terminal status ${status}`);
          }
        } catch (err) {
          failed++;
          if (errors.length < 5) errors.push(err instanceof Error ? `${(err as { code?: string }).code ?? err.name}: ${err.message}` : String(err));
        }
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  return {
    flow,
    concurrency,
    requests,
    completed: latencies.length,
    failed,
    wall_seconds: Math.round(wall * 100) / 100,
    throughput_per_s: Math.round((latencies.length / wall) * 10) / 10,
    latency_ms: distribution(latencies, 0),
    ...(errors.length > 0 ? { errors } : {}),
  };
}

export async function runE2eSection(
  options: { concurrency: readonly number[]; perClient: number; min: number },
  log: (line: string) => void,
): Promise<E2eFigures> {
  const stack = await startLocalStack({
    inMemory: true,
    ports: { api: 0, dynamodb: 0, sqs: 0, scheduler: 0, payments: 0 },
    // No approval gate: commits run as soon as they are submitted (the default local policy asks for an approval).
    approvalPolicies: [],
    sweepIntervalMs: 0,
  });
  try {
    const token = await stack.mintToken({ ttl: '2h' });
    const client = new AipClient({ baseUrl: stack.url, token, tenant: stack.tenant });
    // Warm-up: the first requests build the runtime and open connections.
    for (let i = 0; i < 3; i++) await executeFlow(client);
    await planCommitFlow(client);
    const levels: LevelFigures[] = [];
    for (const flow of ['execute', 'plan+commit'] as const) {
      for (const c of options.concurrency) {
        const requests = Math.max(options.min, c * options.perClient);
        const fig = await runLevel(client, flow, c, requests);
        log(`  ${flow} x${c}: ${fig.completed}/${requests} in ${fig.wall_seconds} s, p50 ${fig.latency_ms.p50} ms`);
        levels.push(fig);
      }
    }
    return {
      note: 'local stack on one machine: one worker poller (batches of <= 10, <= 10 records at once), Prefer: wait polls the action every 200 ms growing to 1 s',
      levels,
    };
  } finally {
    await stack.stop();
  }
}
