import { describe, expect, it } from 'vitest';
import {
  firstPollDelay,
  parsePreferWait,
  pollDelays,
  pollSchedule,
  pollUntil,
  SettleTimes,
  settleSample,
  waitBudgetMs,
  WAIT_RESPONSE_MARGIN_MS,
} from '../../../functions/shared/wait.js';
import { fakeClock } from './support.js';

describe('Prefer: wait', () => {
  it('parses the wait preference (RFC 7240), capped at 25 s', () => {
    expect(parsePreferWait(['wait=10'])).toBe(10);
    expect(parsePreferWait(['respond-async, wait=5'])).toBe(5);
    expect(parsePreferWait(['WAIT = "3"'])).toBe(3);
    expect(parsePreferWait(['handling=strict', 'wait=7; foo=bar'])).toBe(7);
    expect(parsePreferWait(['wait=100'])).toBe(25);
    expect(parsePreferWait(['wait=0'])).toBe(0);
  });
  it('ignores what it cannot apply', () => {
    expect(parsePreferWait([])).toBeUndefined();
    expect(parsePreferWait(['wait=-1'])).toBeUndefined();
    expect(parsePreferWait(['wait=1.5'])).toBeUndefined();
    expect(parsePreferWait(['wait'])).toBeUndefined();
    expect(parsePreferWait(['return=minimal'])).toBeUndefined();
  });
  it('never waits past the Lambda’s remaining time minus a margin', () => {
    expect(waitBudgetMs(10, undefined)).toBe(10_000);
    expect(waitBudgetMs(10, 60_000)).toBe(10_000);
    expect(waitBudgetMs(10, 5_000)).toBe(5_000 - WAIT_RESPONSE_MARGIN_MS);
    expect(waitBudgetMs(10, 1_000)).toBe(0);
    expect(waitBudgetMs(99, undefined)).toBe(25_000);
  });
});

const take = (it: Iterator<number>, n: number) => Array.from({ length: n }, () => it.next().value as number);

describe('the poll schedule (pollDelays)', () => {
  it('defaults: the first delay, 25 ms for 250 ms, then ×1.5 (rounded up) to 1 s', () => {
    expect(take(pollDelays(pollSchedule({}, 80)), 22)).toEqual([
      80, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 38, 57, 86, 129, 194, 291, 437, 656, 984, 1000,
    ]);
  });
  it('without a fast window it is the former schedule (a poll at once, then 200 ms ×1.5 up to 1 s)', () => {
    expect(take(pollDelays(pollSchedule({ intervalMs: 200, fastWindowMs: 0 }, 0)), 7)).toEqual([0, 200, 300, 450, 675, 1000, 1000]);
  });
  it('ignores unusable values', () => {
    expect(pollSchedule({ intervalMs: 0, maxIntervalMs: -5, factor: 0.5, fastWindowMs: -1 }, -10)).toEqual({
      firstMs: 0,
      intervalMs: 25,
      fastWindowMs: 0,
      factor: 1,
      maxIntervalMs: 1000,
    });
  });
  it('times the first poll one interval before the expected settlement', () => {
    expect(firstPollDelay(undefined, 25)).toBe(25);
    expect(firstPollDelay(130, 25)).toBe(105);
    expect(firstPollDelay(10, 25)).toBe(0);
  });
});

describe('settle times (adaptive first poll)', () => {
  it('a settlement seen after a miss is placed in the middle of the last interval', () => {
    expect(settleSample({ done: true, lastMissMs: 100, hitMs: 125 }, 25)).toBe(112.5);
  });
  it('a settlement seen at the first poll pulls the estimate down by one interval', () => {
    expect(settleSample({ done: true, hitMs: 105 }, 25)).toBe(80);
    expect(settleSample({ done: true, hitMs: 0 }, 25)).toBe(0);
  });
  it('a wait that did not see the settlement teaches nothing', () => {
    expect(settleSample({ done: false, lastMissMs: 900 }, 25)).toBeUndefined();
  });
  it('uses the settlement time of the result when it has one, within the wait', () => {
    expect(settleSample({ done: true, hitMs: 300 }, 25, 142)).toBe(142);
    expect(settleSample({ done: true, lastMissMs: 100, hitMs: 125 }, 25, Number.NaN)).toBe(112.5);
    // Later than the poll that saw it: another clock's skew; the polls decide.
    expect(settleSample({ done: true, lastMissMs: 100, hitMs: 125 }, 25, 400)).toBe(112.5);
    expect(settleSample({ done: true, hitMs: 20_000 }, 25, 15_000)).toBeUndefined();
  });
  it('keeps a weighted mean per key that follows faster settlements quickly and slower ones slowly, bounded in keys', () => {
    const t = new SettleTimes(0.1, 0.5, 2);
    expect(t.expected('a')).toBeUndefined();
    t.observe('a', 100);
    t.observe('a', 1_100);
    expect(t.expected('a')).toBe(200);
    t.observe('a', 100);
    expect(t.expected('a')).toBe(150);
    t.observe('a', Number.NaN);
    t.observe('a', -1);
    expect(t.expected('a')).toBe(150);
    t.observe('b', 10);
    t.observe('c', 20); // a third key: starts afresh
    expect(t.expected('a')).toBeUndefined();
    expect(t.expected('c')).toBe(20);
  });
  it('converges so that the first poll comes one interval before the settlement, which is then noticed by the second', async () => {
    const t = new SettleTimes();
    const settleAt = 140;
    let result: Awaited<ReturnType<typeof pollUntil<number>>> | undefined;
    for (let i = 0; i < 20; i++) {
      const clock = fakeClock();
      const start = clock.now();
      const first = firstPollDelay(t.expected('k'), 25);
      result = await pollUntil(
        async () => clock.now() - start,
        (elapsed) => elapsed >= settleAt,
        { deadline: start + 10_000, clock, delays: pollDelays(pollSchedule({}, first)) },
      );
      const sample = settleSample(result, 25);
      if (sample !== undefined) t.observe('k', sample);
    }
    expect(result?.polls).toBeLessThanOrEqual(3);
    expect((result?.hitMs ?? 0) - settleAt).toBeLessThanOrEqual(25);
  });
});

describe('pollUntil', () => {
  it('returns as soon as the value is done, sleeping the scheduled delays', async () => {
    const clock = fakeClock();
    let n = 0;
    const out = await pollUntil(
      async () => ++n,
      (x) => x >= 6,
      { deadline: clock.now() + 60_000, clock, delays: pollDelays(pollSchedule({ intervalMs: 200, fastWindowMs: 0 }, 0)) },
    );
    expect(out).toEqual({ value: 6, done: true, polls: 6, lastMissMs: 1625, hitMs: 2625 });
    expect(clock.sleeps).toEqual([200, 300, 450, 675, 1000]);
  });
  it('sleeps the first delay before the first poll', async () => {
    const clock = fakeClock();
    const out = await pollUntil(
      async () => 1,
      () => true,
      { deadline: clock.now() + 5_000, clock, delays: pollDelays(pollSchedule({}, 90)) },
    );
    expect(clock.sleeps).toEqual([90]);
    expect(out).toEqual({ value: 1, done: true, polls: 1, hitMs: 90 });
  });
  it('returns the last value at the deadline without sleeping past it', async () => {
    const clock = fakeClock();
    const start = clock.now();
    let n = 0;
    const out = await pollUntil(
      async () => ++n,
      () => false,
      { deadline: start + 1_000, clock, delays: pollDelays(pollSchedule({}, 25)) },
    );
    expect(clock.now()).toBe(start + 1_000);
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBe(1_000);
    expect(out.done).toBe(false);
    // Every poll follows a sleep (the first delay is 25 ms here).
    expect(out.value).toBe(clock.sleeps.length);
  });
  it('polls once without sleeping when already done or out of time', async () => {
    const clock = fakeClock();
    await pollUntil(
      async () => 1,
      () => true,
      { deadline: clock.now() + 5_000, clock, delays: pollDelays(pollSchedule({}, 0)) },
    );
    const late = await pollUntil(
      async () => 1,
      () => false,
      { deadline: clock.now(), clock, delays: pollDelays(pollSchedule({}, 50)) },
    );
    expect(late.polls).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });
});
