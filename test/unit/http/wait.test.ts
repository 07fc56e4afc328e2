import { describe, expect, it } from 'vitest';
import { parsePreferWait, pollUntil, waitBudgetMs, WAIT_RESPONSE_MARGIN_MS } from '../../../functions/shared/wait.js';
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

describe('pollUntil', () => {
  it('returns as soon as the value is done, with growing bounded intervals', async () => {
    const clock = fakeClock();
    let n = 0;
    const v = await pollUntil(
      async () => ++n,
      (x) => x >= 6,
      { deadline: clock.now() + 60_000, clock },
    );
    expect(v).toBe(6);
    expect(clock.sleeps).toEqual([200, 300, 450, 675, 1000]);
  });
  it('returns the last value at the deadline without sleeping past it', async () => {
    const clock = fakeClock();
    const start = clock.now();
    let n = 0;
    const v = await pollUntil(
      async () => ++n,
      () => false,
      { deadline: start + 1_000, clock },
    );
    expect(clock.now()).toBe(start + 1_000);
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBe(1_000);
    expect(v).toBe(clock.sleeps.length + 1);
  });
  it('does not sleep when already done or out of time', async () => {
    const clock = fakeClock();
    await pollUntil(
      async () => 1,
      () => true,
      { deadline: clock.now() + 5_000, clock },
    );
    await pollUntil(
      async () => 1,
      () => false,
      { deadline: clock.now(), clock },
    );
    expect(clock.sleeps).toEqual([]);
  });
});
