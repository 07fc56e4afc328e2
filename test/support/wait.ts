/**
 * Waiting for an event in a test without depending on how fast the machine
 * is. A test waits for the event itself (a state it can read, a promise that
 * settles), never for a number of rounds or a stretch of wall-clock time; the
 * deadline only bounds a hang, so it is generous (HANG_MS) and a test that
 * meets it fails naming what it waited for and the last state it saw.
 */
import { setTimeout as pause } from 'node:timers/promises';

/** The default bound on a wait: long enough for a busy machine, short of vitest's test timeout. */
export const HANG_MS = 120_000;

export interface WaitOptions {
  /** What is awaited, for the failure message ("the record escalated"). */
  readonly what: string;
  readonly timeoutMs?: number;
  /** Pause between two probes (default 25 ms): a probe that does work of its own (a round) can set 0. */
  readonly intervalMs?: number;
}

/**
 * Runs `probe` until it returns something other than `undefined`, and
 * resolves with it. A probe that throws is tried again (its last error is in
 * the failure message); after `timeoutMs` the wait fails.
 */
export async function eventually<T>(probe: () => Promise<T | undefined> | T | undefined, options: WaitOptions): Promise<T> {
  const timeoutMs = options.timeoutMs ?? HANG_MS;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let probes = 0;
  for (;;) {
    probes++;
    try {
      const value = await probe();
      if (value !== undefined) return value;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const seen = last instanceof Error ? `; last error: ${last.message}` : '';
      throw new Error(`${options.what}: not seen within ${timeoutMs} ms (${probes} probes)${seen}`);
    }
    const interval = options.intervalMs ?? 25;
    if (interval > 0) await pause(interval);
  }
}

/** Resolves as `p` does, or with 'timed_out' after `ms` (a bound on a hang, not an assertion on speed). */
export function within<T>(p: Promise<T>, ms: number = HANG_MS): Promise<T | 'timed_out'> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'timed_out'>((resolve) => {
    timer = setTimeout(() => resolve('timed_out'), ms);
  });
  return Promise.race([p, bound]).finally(() => clearTimeout(timer));
}
