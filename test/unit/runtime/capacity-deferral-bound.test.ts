/**
 * The bound on capacity deferrals (lib/runtime/config.ts capacityDeferralBound,
 * mayDeferForCapacity): `max_deferrals`, capped by the invoke queue's
 * maxReceiveCount − 1, against the action's durable count and the message's
 * receive count. SQS delivers a message at most maxReceiveCount times, so a
 * deferral on receive r asks for receive r + 1: allowed while
 * r ≤ maxReceiveCount − 1, never on the queue's last delivery.
 */
import { describe, expect, it } from 'vitest';
import { capacityDeferralBound, mayDeferForCapacity, parseRuntimeSettingsInput } from '../../../lib/runtime/config.js';

const settings = (capacity_deferral: Record<string, number>) => parseRuntimeSettingsInput({ test_mode: true, capacity_deferral }, 'test');

describe('capacityDeferralBound', () => {
  it('is max_deferrals while the queue is unknown', () => {
    expect(capacityDeferralBound(settings({}))).toBe(3);
    expect(capacityDeferralBound(settings({ max_deferrals: 40 }))).toBe(40);
  });

  it("is min(max_deferrals, the queue's maxReceiveCount - 1)", () => {
    expect(capacityDeferralBound(settings({ max_deferrals: 3, queue_max_receive_count: 5 }))).toBe(3);
    expect(capacityDeferralBound(settings({ max_deferrals: 4, queue_max_receive_count: 5 }))).toBe(4);
    expect(capacityDeferralBound(settings({ max_deferrals: 10, queue_max_receive_count: 5 }))).toBe(4);
    expect(capacityDeferralBound(settings({ max_deferrals: 3, queue_max_receive_count: 2 }))).toBe(1);
    // A queue that delivers once leaves no room for a redelivery: never defer.
    expect(capacityDeferralBound(settings({ max_deferrals: 3, queue_max_receive_count: 1 }))).toBe(0);
  });

  it('refuses a queue_max_receive_count SQS would not accept', () => {
    expect(() => settings({ queue_max_receive_count: 0 })).toThrow();
    expect(() => settings({ queue_max_receive_count: 1001 })).toThrow();
  });
});

describe('mayDeferForCapacity', () => {
  it("defers on every receive but the queue's last: with maxReceiveCount 5 and max_deferrals 10, receive 4 defers and receive 5 settles", () => {
    const config = settings({ max_deferrals: 10, queue_max_receive_count: 5 });
    for (const received of [1, 2, 3, 4]) expect(mayDeferForCapacity(config, received - 1, received)).toBe(true);
    expect(mayDeferForCapacity(config, 4, 5)).toBe(false);
  });

  it('counts earlier crashed or raced deliveries: a message on its last receive settles although the action never deferred', () => {
    const config = settings({ max_deferrals: 10, queue_max_receive_count: 5 });
    expect(mayDeferForCapacity(config, 0, 4)).toBe(true);
    expect(mayDeferForCapacity(config, 0, 5)).toBe(false);
    expect(mayDeferForCapacity(config, 0, 6)).toBe(false);
  });

  it('counts the durable deferrals too: a fresh message (re-enqueued by the sweeper) cannot exceed the bound', () => {
    const config = settings({ max_deferrals: 10, queue_max_receive_count: 5 });
    expect(mayDeferForCapacity(config, 3, 1)).toBe(true);
    expect(mayDeferForCapacity(config, 4, 1)).toBe(false);
    expect(mayDeferForCapacity(config, 4, undefined)).toBe(false);
  });

  it('keeps max_deferrals when it is the smaller bound (the defaults: 3 deferrals, receives 1-3 defer, receive 4 settles)', () => {
    const config = settings({ queue_max_receive_count: 5 });
    expect(mayDeferForCapacity(config, 2, 3)).toBe(true);
    expect(mayDeferForCapacity(config, 2, 4)).toBe(false);
    expect(mayDeferForCapacity(config, 3, 3)).toBe(false);
  });

  it('with the receive count unknown, bounds by the durable count alone', () => {
    const config = settings({ max_deferrals: 2 });
    expect(mayDeferForCapacity(config, 1, undefined)).toBe(true);
    expect(mayDeferForCapacity(config, 2, undefined)).toBe(false);
  });
});
