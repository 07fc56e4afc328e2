/**
 * The redelivery delay of an attempt deferred for capacity
 * (lib/runtime/config.ts capacityDeferralDelayMs): never before the host's
 * Retry-After, a jittered exponential window above it, capped by
 * `max_delay_ms`. Bounds only: the jitter draw is an input.
 */
import { describe, expect, it } from 'vitest';
import { capacityDeferralDelayMs, parseRuntimeSettingsInput } from '../../../lib/runtime/config.js';

const config = parseRuntimeSettingsInput({ test_mode: true, capacity_deferral: { base_delay_ms: 1_000, max_delay_ms: 8_000 } }, 'test');

describe('capacityDeferralDelayMs', () => {
  it('never redelivers before Retry-After, whatever the jitter draw', () => {
    for (const deferrals of [0, 1, 5, 40]) {
      expect(capacityDeferralDelayMs(config, 1_500, deferrals, 0)).toBe(1_500);
      expect(capacityDeferralDelayMs(config, 1_500, deferrals, 0.999)).toBeGreaterThanOrEqual(1_500);
    }
  });

  it('widens the jitter window exponentially with the deferrals, up to max_delay_ms above Retry-After', () => {
    const top = (deferrals: number) => capacityDeferralDelayMs(config, 1_000, deferrals, 0.999_999);
    expect(top(0)).toBe(1_000 + 999);
    expect(top(1)).toBe(1_000 + 1_999);
    expect(top(2)).toBe(1_000 + 3_999);
    expect(top(3)).toBe(1_000 + 7_999);
    expect(top(10)).toBe(1_000 + 7_999);
  });

  it('defaults: at most 3 deferrals within 15 minutes of the action, 1 s base, 60 s cap', () => {
    expect(parseRuntimeSettingsInput({ test_mode: true }, 'test').capacity_deferral).toEqual({
      max_deferrals: 3,
      base_delay_ms: 1_000,
      max_delay_ms: 60_000,
      max_age_ms: 900_000,
    });
  });
});
