/**
 * Waiting for an action to settle: `Prefer: wait=N` (RFC 7240) on
 * POST /v1/actions and `?wait=N` on GET /v1/actions/{id}.
 *
 * The wait polls the runtime's getActionResult (one strongly consistent read
 * of the action record) on a schedule ({@link pollDelays}), then reads the
 * full state once with getAction: a real wait for state another process (the
 * queue worker) changes. It ends when the action reaches a terminal status
 * or `requires_human` (which only a person can move on), when N seconds
 * pass, or when the Lambda is about to run out of time.
 *
 * The schedule (docs/runtime.md, "Prefer: wait"): a fast phase that polls
 * every 25 ms for 250 ms, then intervals growing ×1.5 up to 1 s. On POST the
 * first poll is timed to the settle time this execution environment measured
 * for the capability ({@link SettleTimes}): one interval before the expected
 * settlement, so that the wait notices it within about one interval (25 ms)
 * for about two reads; a settlement the environment has not seen yet starts
 * after one interval. GET `?wait=` polls at once (the action may have settled
 * long ago).
 */
import { MAX_WAIT_SECONDS } from '../../lib/http/schemas.js';
import type { ActionStatus } from '../../packages/connector-sdk/src/protocol/action.js';
import type { ActionState, CallerIdentity, RuntimeApi } from './runtime-api.js';

export interface WaitClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const SYSTEM_CLOCK: WaitClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Statuses a wait ends on. */
export const SETTLED_STATUSES: ReadonlySet<ActionStatus> = new Set<ActionStatus>(['completed', 'failed', 'cancelled', 'requires_human']);

/** Time kept back from the Lambda's remaining time for answering. */
export const WAIT_RESPONSE_MARGIN_MS = 2_000;

/**
 * The `wait` preference from Prefer header values, in whole seconds, capped
 * at MAX_WAIT_SECONDS. Malformed or absent → undefined (a server ignores
 * preferences it cannot apply, RFC 7240 §2).
 */
export function parsePreferWait(values: readonly string[]): number | undefined {
  for (const value of values) {
    for (const pref of value.split(',')) {
      const first = pref.split(';')[0]?.trim() ?? '';
      const m = /^wait\s*=\s*"?(\d{1,9})"?$/i.exec(first);
      if (m) return Math.min(Number(m[1]), MAX_WAIT_SECONDS);
    }
  }
  return undefined;
}

/** How long a wait of `seconds` may actually last, given the Lambda's remaining time. */
export function waitBudgetMs(seconds: number, remainingMs: number | undefined): number {
  const wanted = Math.max(0, Math.min(seconds, MAX_WAIT_SECONDS)) * 1000;
  if (remainingMs === undefined) return wanted;
  return Math.max(0, Math.min(wanted, remainingMs - WAIT_RESPONSE_MARGIN_MS));
}

/** The `Prefer: wait` poll schedule (HttpDeps.waitPoll); every field has a default. */
export interface WaitPollOptions {
  /** Interval of the fast phase; also the first delay of a POST wait with nothing learnt. @default 25 */
  readonly intervalMs?: number;
  /** How long after its first poll the wait keeps polling every `intervalMs`. @default 250 */
  readonly fastWindowMs?: number;
  /** Growth of the interval per poll after the fast phase, and its cap. @default 1.5 and 1000 */
  readonly factor?: number;
  readonly maxIntervalMs?: number;
  /** POST: time the first poll to the measured settle time of the capability. @default true */
  readonly adaptive?: boolean;
  /** POST: a fixed delay before the first poll (0: at once), instead of the adaptive or default one. */
  readonly firstMs?: number;
}

export const DEFAULT_WAIT_POLL = { intervalMs: 25, fastWindowMs: 250, factor: 1.5, maxIntervalMs: 1_000 } as const;

/** A resolved poll schedule: the delay before the first poll, then the phases. */
export interface PollSchedule {
  readonly firstMs: number;
  readonly intervalMs: number;
  readonly fastWindowMs: number;
  readonly factor: number;
  readonly maxIntervalMs: number;
}

/** The schedule of a wait from the options; `firstMs` is the delay chosen for this wait. */
export function pollSchedule(options: WaitPollOptions, firstMs: number): PollSchedule {
  const atLeast1 = (x: number | undefined, fallback: number) => (x !== undefined && Number.isFinite(x) && x >= 1 ? x : fallback);
  const intervalMs = atLeast1(options.intervalMs, DEFAULT_WAIT_POLL.intervalMs);
  return {
    firstMs: Math.max(0, Math.round(firstMs)),
    intervalMs,
    fastWindowMs: Math.max(0, options.fastWindowMs ?? DEFAULT_WAIT_POLL.fastWindowMs),
    factor: Math.max(1, options.factor ?? DEFAULT_WAIT_POLL.factor),
    maxIntervalMs: Math.max(intervalMs, atLeast1(options.maxIntervalMs, DEFAULT_WAIT_POLL.maxIntervalMs)),
  };
}

/**
 * The delays before each poll, without end: `firstMs`; then `intervalMs`
 * while less than `fastWindowMs` has passed since the first poll; then
 * intervals from `intervalMs` growing ×`factor` (rounded up) to `maxIntervalMs`.
 */
export function* pollDelays(s: PollSchedule): Generator<number, never> {
  yield s.firstMs;
  let sinceFirst = 0;
  while (sinceFirst < s.fastWindowMs) {
    sinceFirst += s.intervalMs;
    yield s.intervalMs;
  }
  let interval = s.intervalMs;
  for (;;) {
    yield interval;
    interval = Math.min(Math.ceil(interval * s.factor), s.maxIntervalMs);
  }
}

/**
 * The settle time an execution environment measured per capability, which
 * times the first poll of the next wait: a weighted mean that follows a
 * faster settlement quickly (weight `down`) and a slower one slowly (`up`),
 * so one slow outlier (a cold worker, a provider hiccup) delays the first
 * poll of the next waits little; a first poll too early costs a 1-RRU read,
 * one too late costs the client latency. Bounded: past `maxKeys` keys it
 * starts afresh.
 */
export class SettleTimes {
  readonly #mean = new Map<string, number>();
  constructor(
    private readonly up = 0.1,
    private readonly down = 0.5,
    private readonly maxKeys = 256,
  ) {}

  expected(key: string): number | undefined {
    return this.#mean.get(key);
  }

  observe(key: string, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    const before = this.#mean.get(key);
    if (before === undefined && this.#mean.size >= this.maxKeys) this.#mean.clear();
    this.#mean.set(key, before === undefined ? ms : before + (ms > before ? this.up : this.down) * (ms - before));
  }
}

/** This execution environment's settle times (module state: one per Lambda instance). */
export const SETTLE_TIMES = new SettleTimes();

/** The first delay of a POST wait: one interval before the expected settlement, or one interval with nothing learnt. */
export function firstPollDelay(expectedMs: number | undefined, intervalMs: number): number {
  return expectedMs === undefined ? intervalMs : Math.max(0, expectedMs - intervalMs);
}

export interface PollOptions {
  /** Absolute deadline on `clock.now()`. */
  deadline: number;
  clock: WaitClock;
  /** The delays before each poll (see {@link pollDelays}). */
  delays: Iterator<number>;
}

export interface PollOutcome<T> {
  /** The last value read. */
  readonly value: T;
  readonly done: boolean;
  readonly polls: number;
  /** When the last poll that was not done started, ms after the wait began (undefined: none was). */
  readonly lastMissMs?: number;
  /** When the poll that was done started, ms after the wait began. */
  readonly hitMs?: number;
}

/** Calls `fetch` on the schedule until `done` holds or the deadline passes (at least once). */
export async function pollUntil<T>(fetch: () => Promise<T>, done: (value: T) => boolean, options: PollOptions): Promise<PollOutcome<T>> {
  const start = options.clock.now();
  let lastMissMs: number | undefined;
  let polls = 0;
  for (;;) {
    const delay = options.delays.next().value as number;
    const left = options.deadline - options.clock.now();
    if (delay > 0 && left > 0) await options.clock.sleep(Math.min(delay, left));
    const at = options.clock.now() - start;
    const value = await fetch();
    polls++;
    if (done(value)) return { value, done: true, polls, hitMs: at, ...(lastMissMs !== undefined ? { lastMissMs } : {}) };
    lastMissMs = at;
    if (options.deadline - options.clock.now() <= 0) return { value, done: false, polls, lastMissMs };
  }
}

/** What a wait polls: an action's status and, once settled, when it settled. */
export interface SettleProbe {
  readonly status: ActionStatus;
  readonly completed_at?: string;
}

/** One poll of an action's wait: its status and, from the poll that saw it settled, the full state. */
export interface ActionProbe extends SettleProbe {
  readonly state?: ActionState;
}

/**
 * The poll of a wait for an action (Prefer: wait, the MCP tools' waits): RuntimeApi.pollAction, whose
 * poll that sees a {@link SETTLED_STATUSES} status carries the full state built from the record it read,
 * so the wait needs no getAction after it; a runtime without pollAction is polled with getActionResult.
 * Either way one read of the action record per poll.
 */
export function actionPoll(rt: RuntimeApi, caller: CallerIdentity, tenant_id: string, action_id: string): () => Promise<ActionProbe> {
  const poll = rt.pollAction?.bind(rt);
  if (poll === undefined) return () => rt.getActionResult(caller, tenant_id, action_id);
  return async () => {
    const { action_result, state } = await poll(caller, tenant_id, action_id, SETTLED_STATUSES);
    return {
      status: action_result.status,
      ...(action_result.completed_at !== undefined ? { completed_at: action_result.completed_at } : {}),
      ...(state !== undefined ? { state } : {}),
    };
  };
}

export interface SettleWaitOptions {
  /** The schedule (HttpDeps.waitPoll). */
  readonly options: WaitPollOptions;
  /** The settle times that time the first poll and learn from this wait. */
  readonly times: SettleTimes;
  /** Absolute deadline on `clock.now()`. */
  readonly deadline: number;
  readonly clock: WaitClock;
  /**
   * The key under which the settle times time the first poll and learn from
   * this wait (POST); without it the first poll is at once (GET).
   */
  readonly learn?: string;
}

/**
 * A wait for an action to settle (functions/http/actions.ts): polls `fetch`
 * on the schedule of `options` until the status is settled or the deadline
 * passes, the first poll timed to the settle time learnt under `learn`, and
 * learns from what it saw. The bench's cost model runs this same function on
 * a virtual clock (bench/lib/awscost-model.ts).
 */
export async function waitForSettlement<T extends SettleProbe>(fetch: () => Promise<T>, w: SettleWaitOptions): Promise<PollOutcome<T>> {
  const adaptive = w.learn !== undefined && w.options.adaptive !== false;
  const interval = pollSchedule(w.options, 0).intervalMs;
  const first = w.learn === undefined ? 0 : (w.options.firstMs ?? firstPollDelay(adaptive ? w.times.expected(w.learn) : undefined, interval));
  const startedAt = w.clock.now();
  const outcome = await pollUntil(fetch, (r) => SETTLED_STATUSES.has(r.status), {
    deadline: w.deadline,
    clock: w.clock,
    delays: pollDelays(pollSchedule(w.options, first)),
  });
  // The settlement's own time (the worker's clock; Lambda clocks are synchronised) when the result has it.
  const completedAt = outcome.done ? Date.parse(outcome.value.completed_at ?? '') : Number.NaN;
  const sample = adaptive ? settleSample(outcome, interval, Number.isNaN(completedAt) ? undefined : completedAt - startedAt) : undefined;
  if (sample !== undefined) w.times.observe(w.learn as string, sample);
  return outcome;
}

/** Longest settle time a wait learns from (a longer one is not what the first poll should wait for). */
const MAX_LEARNT_SETTLE_MS = 10_000;

/**
 * What a finished wait says about the settle time (ms after it began).
 * `measuredMs`: the action's own settlement time (its result's
 * `completed_at`) minus the wait's start, when known: used as is. Else from
 * the polls: the middle of the last interval, the one in which the action
 * settled; when the first poll already found it settled, one interval before
 * that poll. Undefined when the wait did not see the settlement, or the
 * figure is out of range.
 */
export function settleSample(
  outcome: Pick<PollOutcome<unknown>, 'done' | 'lastMissMs' | 'hitMs'>,
  intervalMs: number,
  measuredMs?: number,
): number | undefined {
  if (!outcome.done || outcome.hitMs === undefined) return undefined;
  let sample: number;
  if (measuredMs !== undefined && Number.isFinite(measuredMs) && measuredMs <= outcome.hitMs) sample = Math.max(0, measuredMs);
  else if (outcome.lastMissMs === undefined) sample = Math.max(0, outcome.hitMs - intervalMs);
  else sample = (outcome.lastMissMs + outcome.hitMs) / 2;
  return sample <= MAX_LEARNT_SETTLE_MS ? sample : undefined;
}
