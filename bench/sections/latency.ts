/**
 * Section `latency`: where the local stack's end-to-end time of ONE execute
 * goes (HTTP submit with `Prefer: wait` → terminal result, one client), and
 * what of it would remain on AWS.
 *
 * The whole stack runs in this process (dev/local/start.ts), so one clock
 * (performance.now) times every step. Instrumentation is bench-only and
 * removed afterwards; nothing in the runtime changes:
 * - the Runtime instance's submit / runAttempt / getActionResult / pollAction / getAction
 *   are wrapped (the handlers reach that instance through getRuntime);
 * - DynamoUnitOfWork.prototype.commit marks the settlement write (the commit that settles the action);
 * - the SDK clients' `send` (DynamoDB, document client, SQS) records each
 *   request's op and time, so DynamoDB Local's share of every segment is
 *   measured and the poller's ReceiveMessage that got the message is seen;
 * - node:http's `request` is wrapped (the HTTP connector's client,
 *   lib/connectors/http/provider-fetch.ts, calls it through the module object
 *   at call time): the provider call's start and the arrival of its response
 *   head.
 *
 * Runs are sequential (one action in flight, sweeper off), after a warm-up
 * (which also teaches the deployed schedule the settle time). Three poll
 * schedules of the `Prefer: wait` loop take turns run by run on the same
 * stack (one `waitPoll` object handed to the stack, switched between runs):
 * the deployed default (functions/shared/wait.ts: the first poll one 25 ms
 * interval before the settle time measured for the capability, 25 ms steps
 * for 250 ms, then ×1.5 to 1 s), a fixed fast one (BENCH_WAIT_POLL_MS,
 * default 25 ms, ×1.5, ≤ BENCH_WAIT_POLL_MAX_MS; a poll at once) and the
 * schedule deployed before (a poll at once, then 200 ms, ×1.5, ≤ 1 s).
 *
 * It also times, for the cost model (bench/sections/awscost.ts): the JWT
 * authorizer warm (in-process, ES256 dev key) and a bare provider call
 * (POST /v1/charges on the simulator, as the peer handlers make it).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ClientRequest } from 'node:http';
import { createRequire } from 'node:module';
import { randomBytes, randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startLocalStack } from '../../dev/local/start.js';
import { generateDevKeys, devVerifierConfig } from '../../dev/auth/keys.js';
import { mintToken } from '../../dev/auth/mint.js';
import { createAuthorizerHandler } from '../../functions/authorizer.js';
import { DynamoUnitOfWork } from '../../lib/aws/dynamo/unit-of-work.js';
import { createTokenVerifier } from '../../lib/auth/verifier.js';
import { AipClient } from '../../lib/client/index.js';
import { DEFAULT_WAIT_POLL, type WaitPollOptions } from '../../functions/shared/wait.js';
import { distribution, type Distribution } from '../lib/stats.js';

export interface LatencyOptions {
  readonly runs: number;
  readonly warmup: number;
  readonly tuned: { readonly initialIntervalMs: number; readonly maxIntervalMs: number };
  /** Authorizer / bare provider call samples. */
  readonly probes: number;
}

/** BENCH_LATENCY_RUNS (per variant), BENCH_WAIT_POLL_MS, BENCH_WAIT_POLL_MAX_MS. */
export function latencyOptions(quick: boolean, env: NodeJS.ProcessEnv = process.env): LatencyOptions {
  const int = (name: string, fallback: number, min: number) => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer ≥ ${min}`);
    return n;
  };
  const initial = int('BENCH_WAIT_POLL_MS', 25, 1);
  return {
    runs: int('BENCH_LATENCY_RUNS', quick ? 6 : 30, 1),
    warmup: quick ? 4 : 10,
    tuned: { initialIntervalMs: initial, maxIntervalMs: Math.max(initial, int('BENCH_WAIT_POLL_MAX_MS', 1_000, 1)) },
    probes: quick ? 20 : 100,
  };
}

export type SegmentId = 'edge' | 'admit' | 'queue' | 'dispatch' | 'pre_provider' | 'provider' | 'settle' | 'notice' | 'respond';

export interface SegmentFigures {
  readonly id: SegmentId;
  readonly label: string;
  readonly ms: Distribution;
  /**
   * DynamoDB Local time on the segment's critical path, mean ms: its requests' time inside the segment
   * ({@link requestsOf}).
   */
  readonly dynamo_ms_mean: number;
  /**
   * The DynamoDB requests the segment's step sends (mean), counted from the calls observed: the actor that issued
   * each (admission, attempt or wait) and when ({@link requestsOf}), whether on the answer's path or beside it.
   */
  readonly dynamo_requests_mean: number;
  /**
   * Of those, the requests beside the answer's path (mean): the record's settlement, which the attempt writes after
   * the action's and the wait does not wait for; the polls that saw the action still running. Absent in runs before
   * issue 22.
   */
  readonly dynamo_requests_beside_mean?: number;
  /** `local-only`: machinery of the local stack; `remains`: the same work on AWS (at AWS's latency); `wait-poll`: the runtime's own Prefer: wait polling, deployed as is. */
  readonly kind: 'local-only' | 'remains' | 'wait-poll';
  readonly on_aws: string;
}

export interface VariantFigures {
  readonly id: 'default' | 'tuned' | 'previous';
  readonly label: string;
  /** `initial_ms`: the interval the growth starts from (the adaptive default's first poll is learnt, not fixed). */
  readonly wait_poll: { readonly initial_ms: number; readonly max_ms: number; readonly factor: number; readonly adaptive: boolean };
  readonly runs: number;
  readonly total_ms: Distribution;
  readonly segments: SegmentFigures[];
  /** Wait polls per execute (mean): pollAction, or getActionResult on a runtime without it. */
  readonly polls_mean: number;
  /** The submit handler's busy span: runtime.submit start → the final view read (what the submit Lambda is billed for, minus the edge), ms. */
  readonly api_handler_ms: Distribution;
  /** DynamoDB Local time on the whole path (mean ms) and the share of the total. */
  readonly dynamo_ms_mean: number;
  readonly dynamo_share: number;
  readonly errors?: string[];
}

export interface LatencyFigures {
  readonly note: string;
  readonly variants: VariantFigures[];
  /** DynamoDB Local round trips seen on the path, per operation (ms). */
  readonly dynamo_ops: Record<string, Distribution>;
  /** The JWT authorizer handler, warm, in-process (ES256 dev key), ms. */
  readonly authorizer_ms: Distribution;
  /** A bare POST /v1/charges to the simulator from this process, ms. */
  readonly provider_call_ms: Distribution;
}

const SEGMENTS: Record<SegmentId, { label: string; kind: SegmentFigures['kind']; on_aws: string }> = {
  edge: {
    label: 'client → handler (loopback HTTP, local API Gateway, authorizer, middlewares)',
    kind: 'local-only',
    on_aws:
      'replaced by API Gateway REST + the TOKEN authorizer (cached 60 s per token) + a warm Lambda invoke: typically tens of ms over the internet, not measured here',
  },
  admit: {
    label: 'admission (its DynamoDB write + SendMessage)',
    kind: 'remains',
    on_aws: 'remains (same requests; DynamoDB and SQS on AWS answer in single-digit ms each)',
  },
  queue: {
    label: "queue hop (SendMessage done → the event source's long-poll ReceiveMessage returns)",
    kind: 'local-only',
    on_aws:
      "fauxqs wakes a waiting long poll at once (no poll interval here); on AWS the SQS event source's pollers deliver with their own latency (commonly tens of ms, not measured here)",
  },
  dispatch: {
    label: 'event source → worker handler → runtime.runAttempt (visibility reset, Lambda middlewares)',
    kind: 'local-only',
    on_aws: "in-process call here, plus the local event source's ChangeMessageVisibilityBatch; a warm Lambda invoke on AWS (part of the event source delivery)",
  },
  pre_provider: {
    label: 'attempt until the provider call (the lease write; the invoke message carries the admitted records, so no read)',
    kind: 'remains',
    on_aws: 'remains (same requests)',
  },
  provider: {
    label: 'provider call (payments simulator)',
    kind: 'remains',
    on_aws: "remains, at the real provider's latency (the simulator answers in ~1 ms; a card API takes hundreds)",
  },
  settle: {
    label:
      'settlement (and checkpoint) writes: the action\'s, which the wait notices, then the record\'s with its receipt, beside the wait (docs/table-design.md, "The action settles first")',
    kind: 'remains',
    on_aws: 'remains (same requests)',
  },
  notice: {
    label: 'settled → the wait notices (sleep to the next poll + that GetItem; beside: the polls that saw the action running)',
    kind: 'wait-poll',
    on_aws: 'NOT an emulator artefact: the deployed submit handler polls the same way; remains on AWS unless the poll schedule is tuned',
  },
  respond: {
    label: "final view (the transaction's read: the action record is the noticing poll's) + response over HTTP",
    kind: 'remains',
    on_aws: 'remains (1 read), plus API Gateway on the way out',
  },
};

/** Who issued a request: the admission, the worker's attempt, or the wait loop (AsyncLocalStorage around the Runtime methods). */
export type Actor = 'admit' | 'worker' | 'wait';

export interface Call {
  readonly op: string;
  readonly actor: Actor | undefined;
  readonly t0: number;
  t1: number;
  messages?: number;
}

export interface Timeline {
  t_req: number;
  t_resp: number;
  submit?: [number, number];
  attempt?: [number, number];
  provider?: [number, number];
  settle1?: number;
  polls: { t0: number; t1: number; status: string }[];
  view1?: number;
  dynamo: Call[];
  sqs: Call[];
}

type Patch = () => void;

/** Replaces `obj[key]` with `wrap(original)`; returns the undo. */
function patch<T extends object, K extends keyof T>(obj: T, key: K, wrap: (original: T[K]) => T[K]): Patch {
  const had = Object.hasOwn(obj, key);
  const original = obj[key];
  (obj as Record<K, T[K]>)[key] = wrap(original);
  return () => {
    if (had) (obj as Record<K, T[K]>)[key] = original;
    else delete (obj as Record<K, unknown>)[key];
  };
}

/** node:http's module object, as the connector's client reaches it (through require: its ES namespace would load undici). */
const nodeHttp = createRequire(import.meta.url)('node:http') as typeof import('node:http');

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'requires_human']);

function urlOf(input: unknown): string {
  if (typeof input === 'string') return input;
  if (input instanceof URL) return input.href;
  return (input as { url?: string } | undefined)?.url ?? '';
}

/** A run's segments (start, end on the one clock) and the poll that noticed the settlement. */
export interface Segmented {
  readonly seg: Record<SegmentId, [number, number]>;
  readonly noticed: Timeline['polls'][number];
}

export function segmentsOf(t: Timeline): Segmented | string {
  if (!t.submit) return 'no submit';
  if (!t.attempt) return 'no attempt';
  if (!t.provider) return 'no provider call';
  if (t.settle1 === undefined) return 'no settlement write';
  // The first poll that saw the action settled. Its GetItem may return a hair before the settlement
  // write's own response is processed (the write is done on the server first): the settlement then ends there.
  const noticed = t.polls.find((p) => TERMINAL.has(p.status));
  if (!noticed) return 'the wait did not notice the settlement';
  const settled = Math.min(t.settle1, noticed.t1);
  const recv = t.sqs.find((c) => c.op === 'ReceiveMessage' && (c.messages ?? 0) > 0 && c.t1 >= t.submit![1] - 1)?.t1 ?? t.attempt[0];
  const seg: Record<SegmentId, [number, number]> = {
    edge: [t.t_req, t.submit[0]],
    admit: [t.submit[0], t.submit[1]],
    queue: [t.submit[1], Math.min(recv, t.attempt[0])],
    dispatch: [Math.min(recv, t.attempt[0]), t.attempt[0]],
    pre_provider: [t.attempt[0], t.provider[0]],
    provider: [t.provider[0], t.provider[1]],
    settle: [t.provider[1], settled],
    notice: [settled, noticed.t1],
    respond: [noticed.t1, t.t_resp],
  };
  return { seg, noticed };
}

/** One step's DynamoDB requests: all it sends, and those on the answer's critical path. */
export interface StepRequests {
  readonly calls: Call[];
  readonly onPath: Call[];
}

/**
 * The DynamoDB requests of each step, from the calls observed: who issued each (the admission, the worker's
 * attempt or the wait: AsyncLocalStorage around the Runtime methods) and when, not a window alone. A step's work
 * can run beside the answer's path: the attempt settles the action, then writes the record with its receipt
 * (docs/table-design.md, "The action settles first") while the wait, which notices the action, moves on; and the
 * polls before the one that noticed ran beside the attempt. Those are counted with their step, as beside the path.
 */
export function requestsOf(t: Timeline, { seg, noticed }: Segmented): { steps: Record<SegmentId, StepRequests>; unattributed: number } {
  const steps = Object.fromEntries((Object.keys(SEGMENTS) as SegmentId[]).map((id): [SegmentId, StepRequests] => [id, { calls: [], onPath: [] }])) as Record<
    SegmentId,
    StepRequests
  >;
  let unattributed = 0;
  const put = (id: SegmentId, c: Call, onPath: boolean) => {
    steps[id].calls.push(c);
    if (onPath) steps[id].onPath.push(c);
  };
  for (const c of t.dynamo) {
    if (c.t1 <= 0) continue;
    if (c.actor === 'admit') put('admit', c, true);
    else if (c.actor === 'worker') {
      // Before the provider call: the attempt's start (its lease). After it: the settlement (and checkpoint) writes, on
      // the path until the wait noticed the action settled; what starts after that (the record's write) is beside it.
      if (c.t0 < t.provider![0]) put('pre_provider', c, true);
      else put('settle', c, c.t0 < seg.settle[1]);
    } else if (c.actor === 'wait') {
      // The noticing poll's own read ends the notice; a poll before it saw the action running, beside the attempt.
      if (c.t0 >= noticed.t1) put('respond', c, true);
      else put('notice', c, c.t0 >= noticed.t0);
    } else unattributed++;
  }
  return { steps, unattributed };
}

/** The time of `calls` inside [a, b]. */
function timeInside(calls: readonly Call[], [a, b]: [number, number]): number {
  return calls.reduce((sum, c) => sum + Math.max(0, Math.min(c.t1, b) - Math.max(c.t0, a)), 0);
}

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const mean = (xs: readonly number[]) => (xs.length === 0 ? Number.NaN : xs.reduce((s, x) => s + x, 0) / xs.length);

export async function runLatencySection(options: LatencyOptions, log: (line: string) => void): Promise<LatencyFigures> {
  const undo: Patch[] = [];
  const actor = new AsyncLocalStorage<Actor>();
  let current: Timeline | undefined;
  let simUrl: string | undefined;
  const allDynamo: Call[] = [];

  // --- instrumentation: the provider call, from the request to its response head
  undo.push(
    patch(nodeHttp, 'request', (original) => {
      return function (this: unknown, ...args: unknown[]) {
        const isCharge = simUrl !== undefined && urlOf(args[0]).startsWith(`${simUrl}/v1/charges`);
        const t0 = performance.now();
        const req = (original as (...a: unknown[]) => ClientRequest).apply(this, args);
        if (isCharge) {
          const timeline = current;
          req.once('response', () => {
            if (timeline && timeline.provider === undefined) timeline.provider = [t0, performance.now()];
          });
        }
        return req;
      } as typeof nodeHttp.request;
    }),
  );
  const sendWrap = (record: (c: Call, out: unknown) => void) => (original: unknown) =>
    async function (this: unknown, command: { constructor: { name: string } }, ...rest: unknown[]) {
      const call: Call = { op: command.constructor.name.replace(/Command$/, ''), actor: actor.getStore(), t0: performance.now(), t1: 0 };
      const out = await (original as (...a: unknown[]) => Promise<unknown>).call(this, command, ...rest);
      call.t1 = performance.now();
      record(call, out);
      return out;
    };
  const onDynamo = (c: Call) => {
    if (!current) return;
    allDynamo.push(c);
    current.dynamo.push(c);
  };
  undo.push(patch(DynamoDBClient.prototype, 'send', sendWrap(onDynamo) as never));
  undo.push(patch(DynamoDBDocumentClient.prototype, 'send', sendWrap(onDynamo) as never));
  undo.push(
    patch(
      SQSClient.prototype,
      'send',
      sendWrap((c, out) => {
        if (c.op === 'ReceiveMessage') c.messages = ((out as { Messages?: unknown[] }).Messages ?? []).length;
        current?.sqs.push(c);
      }) as never,
    ),
  );
  undo.push(
    patch(DynamoUnitOfWork.prototype, 'commit', (original) => {
      return async function (this: DynamoUnitOfWork, ...args: Parameters<DynamoUnitOfWork['commit']>) {
        const out = await original.apply(this, args);
        if (current && args[0].some((intent) => intent.kind === 'action.settle')) current.settle1 = performance.now();
        return out;
      } as DynamoUnitOfWork['commit'];
    }),
  );

  const waitPoll: { -readonly [K in keyof WaitPollOptions]: WaitPollOptions[K] } = {};
  const paymentsApiKey = `sk_bench_${randomBytes(12).toString('base64url')}`;
  try {
    const stack = await startLocalStack({
      inMemory: true,
      ports: { api: 0, dynamodb: 0, sqs: 0, scheduler: 0, payments: 0 },
      approvalPolicies: [],
      sweepIntervalMs: 0,
      // The breakdown is of the queue path (SQS, the worker, the wait's polls): a waited execute's attempt runs
      // inside the submit by default (attempt_when_waited "inline", docs/runtime.md), which has no queue, worker or
      // notice segment; the queue path is what a client that waits on a slow capability, or the switch off, gets.
      runtimeSettings: { attempt_when_waited: 'queue' },
      paymentsApiKey,
      waitPoll,
    });
    simUrl = stack.simulator.url;
    try {
      const rt = stack.runtime as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
      for (const method of ['submit', 'runAttempt', 'getActionResult', 'pollAction', 'getAction'] as const) {
        undo.push(
          patch(rt, method, (original) => async (...args: unknown[]) => {
            const t0 = performance.now();
            const who: Actor = method === 'submit' ? 'admit' : method === 'runAttempt' ? 'worker' : 'wait';
            const out = await actor.run(who, () => original.apply(stack.runtime, args));
            const t1 = performance.now();
            const t = current;
            if (t) {
              if (method === 'submit') t.submit ??= [t0, t1];
              else if (method === 'runAttempt') t.attempt ??= [t0, t1];
              else if (method === 'getActionResult') t.polls.push({ t0, t1, status: String((out as { status?: unknown }).status) });
              else if (method === 'pollAction') {
                // The poll's own read is its first DynamoDB request; a poll that saw the action settled then builds the final view.
                const { action_result, state } = out as { action_result: { status: string }; state?: unknown };
                const read = t.dynamo.find((c) => c.actor === 'wait' && c.t0 >= t0);
                t.polls.push({ t0, t1: state !== undefined && read !== undefined ? read.t1 : t1, status: action_result.status });
                if (state !== undefined) t.view1 = t1;
              } else t.view1 = t1;
            }
            return out;
          }),
        );
      }
      const token = await stack.mintToken({ ttl: '2h' });
      const client = new AipClient({ baseUrl: stack.url, token, tenant: stack.tenant });
      /**
       * One execute over HTTP; resolves once the client has its answer AND the
       * worker's batch holding the action is done (the stack's `handled` hook),
       * so that no worker tail overlaps the next run.
       */
      const execute = async (): Promise<string> => {
        const id = `lat-${randomUUID().slice(0, 12)}`;
        const workerDone = stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === id);
        const sub = await client.submitAction(
          {
            id,
            capability_id: 'payments.charge',
            input: { amount: 1250, currency: 'eur', customer: 'cus_lat' },
            idempotency_key: id,
            transaction: { mode: 'execute' },
          } as never,
          { wait: 20 },
        );
        // Admitted, so its invoke message is (or will be) handled.
        await workerDone;
        return sub.action_result.status;
      };
      for (let i = 0; i < options.warmup; i++) await execute();

      const fixed = (initial: number, max: number): WaitPollOptions => ({
        intervalMs: initial,
        fastWindowMs: 0,
        maxIntervalMs: max,
        adaptive: false,
        firstMs: 0,
      });
      const variants: { id: VariantFigures['id']; label: string; poll: WaitPollOptions; initial: number; max: number; adaptive: boolean }[] = [
        {
          id: 'default',
          label: `deployed: first poll at the learnt settle time − ${DEFAULT_WAIT_POLL.intervalMs} ms, ${DEFAULT_WAIT_POLL.intervalMs} ms for ${DEFAULT_WAIT_POLL.fastWindowMs} ms, then ×1.5, ≤ 1 s`,
          poll: {},
          initial: DEFAULT_WAIT_POLL.intervalMs,
          max: DEFAULT_WAIT_POLL.maxIntervalMs,
          adaptive: true,
        },
        {
          id: 'tuned',
          label: `fixed: at once, then ${options.tuned.initialIntervalMs} ms, ×1.5, ≤ ${options.tuned.maxIntervalMs} ms`,
          poll: fixed(options.tuned.initialIntervalMs, options.tuned.maxIntervalMs),
          initial: options.tuned.initialIntervalMs,
          max: options.tuned.maxIntervalMs,
          adaptive: false,
        },
        { id: 'previous', label: 'deployed before: at once, then 200 ms, ×1.5, ≤ 1 s', poll: fixed(200, 1_000), initial: 200, max: 1_000, adaptive: false },
      ];
      const timelines = new Map<string, Timeline[]>(variants.map((v) => [v.id, []]));
      const errors = new Map<string, string[]>(variants.map((v) => [v.id, []]));
      for (let i = 0; i < options.runs; i++) {
        for (const v of variants) {
          for (const k of Object.keys(waitPoll) as (keyof WaitPollOptions)[]) delete waitPoll[k];
          Object.assign(waitPoll, v.poll);
          const t: Timeline = { t_req: performance.now(), t_resp: 0, polls: [], dynamo: [], sqs: [] };
          current = t;
          try {
            const status = await execute();
            t.t_resp = performance.now();
            if (status !== 'completed') errors.get(v.id)!.push(`terminal status ${status}`);
            else timelines.get(v.id)!.push(t);
          } catch (err) {
            errors.get(v.id)!.push(err instanceof Error ? err.message : String(err));
          } finally {
            current = undefined;
          }
        }
      }

      const figures: VariantFigures[] = variants.map((v) => {
        const list = timelines.get(v.id)!;
        const errs = errors.get(v.id)!;
        const bySegment = new Map<SegmentId, { ms: number[]; dyn: number[]; dynN: number[]; beside: number[] }>();
        const totals: number[] = [];
        const handler: number[] = [];
        const polls: number[] = [];
        const dynamoTotal: number[] = [];
        for (const t of list) {
          const segmented = segmentsOf(t);
          if (typeof segmented === 'string') {
            if (errs.length < 5) errs.push(segmented);
            continue;
          }
          const { steps, unattributed } = requestsOf(t, segmented);
          // Every DynamoDB request of the run belongs to a step: one that does not would be missing from the counts.
          if (unattributed > 0 && errs.length < 5) errs.push(`${unattributed} DynamoDB request(s) issued outside the admission, the attempt and the wait`);
          totals.push(t.t_resp - t.t_req);
          if (t.submit && t.view1 !== undefined) handler.push(t.view1 - t.submit[0]);
          polls.push(t.polls.length);
          let dyn = 0;
          for (const [id, window] of Object.entries(segmented.seg) as [SegmentId, [number, number]][]) {
            const step = steps[id];
            const d = timeInside(step.onPath, window);
            dyn += d;
            const slot = bySegment.get(id) ?? { ms: [], dyn: [], dynN: [], beside: [] };
            slot.ms.push(window[1] - window[0]);
            slot.dyn.push(d);
            slot.dynN.push(step.calls.length);
            slot.beside.push(step.calls.length - step.onPath.length);
            bySegment.set(id, slot);
          }
          dynamoTotal.push(dyn);
        }
        const total = distribution(totals);
        return {
          id: v.id,
          label: v.label,
          wait_poll: { initial_ms: v.initial, max_ms: v.max, factor: 1.5, adaptive: v.adaptive },
          runs: totals.length,
          total_ms: total,
          segments: (Object.keys(SEGMENTS) as SegmentId[]).map((id) => {
            const slot = bySegment.get(id) ?? { ms: [], dyn: [], dynN: [], beside: [] };
            return {
              id,
              ...SEGMENTS[id],
              ms: distribution(slot.ms),
              dynamo_ms_mean: round(mean(slot.dyn)),
              dynamo_requests_mean: round(mean(slot.dynN), 2),
              dynamo_requests_beside_mean: round(mean(slot.beside), 2),
            };
          }),
          polls_mean: round(mean(polls), 2),
          api_handler_ms: distribution(handler),
          dynamo_ms_mean: round(mean(dynamoTotal)),
          dynamo_share: round(mean(dynamoTotal) / total.mean, 3),
          ...(errs.length > 0 ? { errors: errs.slice(0, 5) } : {}),
        };
      });
      for (const f of figures) log(`  ${f.id}: p50 ${f.total_ms.p50} ms over ${f.runs} runs, ${f.polls_mean} polls, DynamoDB Local ${f.dynamo_ms_mean} ms`);

      // --- probes for the cost model: a bare provider call, the authorizer warm
      const provider: number[] = [];
      for (let i = 0; i < options.probes; i++) {
        const t0 = performance.now();
        const res = await fetch(`${stack.simulator.url}/v1/charges`, {
          method: 'POST',
          headers: { authorization: `Bearer ${paymentsApiKey}`, 'content-type': 'application/json', 'idempotency-key': `probe-${randomUUID()}` },
          body: JSON.stringify({ amount: 1250, currency: 'eur' }),
        });
        await res.arrayBuffer();
        if (i > 0) provider.push(performance.now() - t0);
      }
      const dynamoOps: Record<string, number[]> = {};
      for (const c of allDynamo) if (c.t1 > 0) (dynamoOps[c.op] ??= []).push(c.t1 - c.t0);
      return {
        note:
          'one client, sequential executes on the in-process local stack (DynamoDB Local, fauxqs, the Scheduler emulator, the payments simulator, the local API Gateway, the local SQS event source with one instance); ' +
          'the three poll schedules take turns run by run; segment means add up to the mean total',
        variants: figures,
        dynamo_ops: Object.fromEntries(Object.entries(dynamoOps).map(([op, xs]) => [op, distribution(xs)])),
        authorizer_ms: await timeAuthorizer(options.probes),
        provider_call_ms: distribution(provider),
      };
    } finally {
      await stack.stop();
    }
  } finally {
    for (const u of undo.reverse()) u();
  }
}

/** The real authorizer handler with the dev verifier, warm: median of `n` calls on one token. */
async function timeAuthorizer(n: number): Promise<Distribution> {
  const keys = await generateDevKeys();
  const handler = createAuthorizerHandler({ verifier: createTokenVerifier(devVerifierConfig(keys)) });
  const token = await mintToken({ sub: 'bench', tenants: ['bench'], scopes: ['aip:actions:write'], ttl: '1h' }, keys);
  const event = {
    type: 'TOKEN' as const,
    authorizationToken: `Bearer ${token}`,
    methodArn: 'arn:aws:execute-api:us-east-1:000000000000:api/bench/POST/v1/actions',
  };
  const context = { getRemainingTimeInMillis: () => 10_000, functionName: 'bench-authorizer', awsRequestId: 'bench' } as never;
  const ms: number[] = [];
  for (let i = 0; i < n + 5; i++) {
    const t0 = performance.now();
    await handler(event, context);
    if (i >= 5) ms.push(performance.now() - t0);
  }
  return distribution(ms, 2);
}

// --- rendering ------------------------------------------------------------------------------

const f = (x: number, d = 1) => (Number.isFinite(x) ? (Math.round(x * 10 ** d) / 10 ** d).toString() : '–');

export function renderLatencyMarkdown(l: LatencyFigures, heading = '## Latency breakdown of one execute (local stack)'): string[] {
  const lines: string[] = [heading, ''];
  const def = l.variants.find((v) => v.id === 'default');
  lines.push(
    `HTTP submit with \`Prefer: wait=20\` → terminal result, one client, the queue path (attempt_when_waited "queue"; by default a waited execute runs its attempt inside the submit); ${l.note}. Timestamps from wrappers on the Runtime instance, the settlement write, the SDK clients and node:http's request (bench/sections/latency.ts). ` +
      "**local-only** = machinery of the local stack; **remains** = the same work on AWS, at AWS's latency; **wait-poll** = the runtime's own `Prefer: wait` polling (functions/http/actions.ts), deployed as is.",
    '',
    "DynamoDB Local ms: its requests' time inside the segment (on the critical path). Requests: what the step sends, counted from the calls observed (the actor that issued each and when); \"beside\": of those, the ones off the answer's path (the record's settlement after the action's, which the wait does not wait for; the polls that saw the action running).",
    '',
    `| segment | kind | ${l.variants.map((v) => `${v.id}: mean ms (p50) [DynamoDB Local ms / requests]`).join(' | ')} | on AWS |`,
    `|---|---|${l.variants.map(() => '---:').join('|')}|---|`,
  );
  for (const s of def?.segments ?? []) {
    const cells = l.variants.map((v) => {
      const x = v.segments.find((y) => y.id === s.id);
      if (!x) return '–';
      const beside = x.dynamo_requests_beside_mean ?? 0;
      return `${f(x.ms.mean)} (${f(x.ms.p50)}) [${f(x.dynamo_ms_mean)} / ${f(x.dynamo_requests_mean, 2)}${beside > 0 ? `, ${f(beside, 2)} beside` : ''}]`;
    });
    lines.push(`| ${s.label} | ${s.kind} | ${cells.join(' | ')} | ${s.on_aws} |`);
  }
  lines.push(
    `| **total** | | ${l.variants.map((v) => `**${f(v.total_ms.mean)} (${f(v.total_ms.p50)})** [${f(v.dynamo_ms_mean)}, ${f(v.dynamo_share * 100, 0)} %]`).join(' | ')} | |`,
    `| p95 total | | ${l.variants.map((v) => f(v.total_ms.p95)).join(' | ')} | |`,
    `| polls per execute (pollAction) | | ${l.variants.map((v) => f(v.polls_mean, 2)).join(' | ')} | 1 RRU each on AWS |`,
    `| submit handler busy (submit → final view), p50 | | ${l.variants.map((v) => f(v.api_handler_ms.p50)).join(' | ')} | what the submit Lambda is billed for |`,
    '',
  );
  const ops = Object.entries(l.dynamo_ops)
    .map(([op, d]) => `${op} ${f(d.p50)} ms (n ${d.n})`)
    .join(', ');
  lines.push(
    `DynamoDB Local round trips in the runs (on the path and beside it), p50: ${ops}. Authorizer handler warm (ES256 dev key, in-process): p50 ${f(l.authorizer_ms.p50, 2)} ms. Bare provider call (POST /v1/charges to the simulator): p50 ${f(l.provider_call_ms.p50, 2)} ms.`,
    '',
  );
  if (def) {
    const seg = (v: VariantFigures, id: SegmentId) => v.segments.find((x) => x.id === id)?.ms.mean ?? Number.NaN;
    const split = (v: VariantFigures) =>
      `queue ${f(seg(v, 'queue'))} ms, attempt ${f(seg(v, 'pre_provider') + seg(v, 'provider') + seg(v, 'settle'))} ms (provider ${f(seg(v, 'provider'))}), wait ${f(seg(v, 'notice'))} ms, DynamoDB Local ${f(v.dynamo_ms_mean)} ms on the path`;
    lines.push(
      `**Deployed \`Prefer: wait\`**: p50 ${f(def.total_ms.p50)} ms / p95 ${f(def.total_ms.p95)} ms at one client; mean split: ${split(def)}; ${f(def.polls_mean, 2)} polls per execute.`,
      '',
    );
    for (const v of l.variants.filter((x) => x.id !== 'default')) {
      lines.push(
        `- ${v.label}: p50 ${f(v.total_ms.p50)} / p95 ${f(v.total_ms.p95)} ms; wait ${f(seg(v, 'notice'))} ms; ${f(v.polls_mean, 2)} polls (${f(v.polls_mean - def.polls_mean, 2)} against the deployed one).`,
      );
    }
    lines.push('');
  }
  for (const v of l.variants) if (v.errors) lines.push(`Errors (${v.id}): ${v.errors.join('; ')}`, '');
  return lines;
}

/** One line for the report's headline. */
export function latencyHeadline(l: LatencyFigures): string | undefined {
  const def = l.variants.find((v) => v.id === 'default');
  const previous = l.variants.find((v) => v.id === 'previous');
  if (!def) return undefined;
  const notice = (v: VariantFigures) => v.segments.find((s) => s.id === 'notice')?.ms.mean ?? Number.NaN;
  return (
    `- **latency of one execute** (local stack, 1 client, \`Prefer: wait\`): p50 ${f(def.total_ms.p50, 0)} ms / p95 ${f(def.total_ms.p95, 0)} ms with the deployed poll, of which ${f(notice(def), 0)} ms is the wait noticing the settlement, ${f(def.polls_mean, 1)} polls, and ${f(def.dynamo_share * 100, 0)} % DynamoDB Local` +
    (previous
      ? `; with the schedule deployed before (200 ms ×1.5): p50 ${f(previous.total_ms.p50, 0)} / p95 ${f(previous.total_ms.p95, 0)} ms, notice ${f(notice(previous), 0)} ms, ${f(previous.polls_mean, 1)} polls.`
      : '.')
  );
}
