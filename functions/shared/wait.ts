/**
 * Waiting for an action to settle: `Prefer: wait=N` (RFC 7240) on
 * POST /v1/actions and `?wait=N` on GET /v1/actions/{id}.
 *
 * The wait is a polling loop with a bounded, growing interval (by default
 * 200 ms, ×1.5, up to 1 s; `HttpDeps.waitPoll` changes the first interval and
 * the cap) on the runtime's getActionResult (one read of the action record), then one
 * getAction for the full state: a real wait for state another process (the
 * queue worker) changes. It ends when the action reaches a terminal
 * status or `requires_human` (which only a person can move on), when N
 * seconds pass, or when the Lambda is about to run out of time.
 */
import { MAX_WAIT_SECONDS } from '../../lib/http/schemas.js';
import type { ActionStatus } from '../../lib/protocol/action.js';

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

export interface PollOptions {
  /** Absolute deadline on `clock.now()`. */
  deadline: number;
  clock: WaitClock;
  initialIntervalMs?: number;
  maxIntervalMs?: number;
}

/** Calls `fetch` until `done` holds or the deadline passes; returns the last value. */
export async function pollUntil<T>(fetch: () => Promise<T>, done: (value: T) => boolean, options: PollOptions): Promise<T> {
  const maxInterval = options.maxIntervalMs ?? 1_000;
  let interval = options.initialIntervalMs ?? 200;
  let value = await fetch();
  for (;;) {
    if (done(value)) return value;
    const left = options.deadline - options.clock.now();
    if (left <= 0) return value;
    await options.clock.sleep(Math.min(interval, left));
    interval = Math.min(Math.ceil(interval * 1.5), maxInterval);
    value = await fetch();
  }
}
