/**
 * The delivery order of the local fair-queue emulation
 * (lib/aws/sqs/local-event-source.ts `FairBacklog`), without I/O: orders, not
 * times. Durations are given explicitly.
 */
import { describe, expect, it } from 'vitest';
import { FairBacklog, NOISY_SHARE, RECENT_COMPLETIONS } from '../../../lib/aws/sqs/local-event-source.js';

/** Tenant A's messages a1..a{n}. */
function tenantA(n: number, fairness: 'tenant' | 'none' = 'tenant'): FairBacklog<string> {
  const backlog = new FairBacklog<string>(fairness);
  for (let i = 1; i <= n; i++) backlog.add(`a${i}`, 'tenant-a', `a${i}`);
  return backlog;
}

/**
 * Two instances, batches of 5: both take a batch of A's 20 messages, then B's
 * message arrives while every instance is busy; the instances then take a new
 * batch each time theirs is done, until the backlog is empty.
 */
function scenario(fairness: 'tenant' | 'none'): string[][] {
  const backlog = tenantA(20, fairness);
  const running = [backlog.take(5), backlog.take(5)];
  const batches = running.map((b) => b.map((e) => e.item));
  backlog.add('b1', 'tenant-b', 'b1');
  while (running.some((b) => b.length > 0)) {
    for (let i = 0; i < running.length; i++) {
      if (running[i]!.length === 0) continue;
      backlog.done(running[i]!, 3_000);
      running[i] = backlog.take(5);
      if (running[i]!.length > 0) batches.push(running[i]!.map((e) => e.item));
    }
  }
  return batches;
}

const A = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `a${from + i}`);

describe('FairBacklog (SQS fair queue emulation)', () => {
  it('fairness on: a quiet tenant behind 20 messages of a busy one goes with the next free batch', () => {
    const batches = scenario('tenant');
    expect(batches).toEqual([A(1, 5), A(6, 10), ['b1', ...A(11, 14)], A(15, 19), ['a20']]);
    const flat = batches.flat();
    expect(flat.indexOf('b1')).toBeLessThan(flat.indexOf('a20'));
  });

  it('fairness off: the same message waits until the busy tenant’s backlog is exhausted (oldest first)', () => {
    expect(scenario('none')).toEqual([A(1, 5), A(6, 10), A(11, 15), A(16, 20), ['b1']]);
  });

  it('fairness on: a tenant holding the instances is noisy at once; the quiet tenant fills the next batch first', () => {
    const backlog = tenantA(20);
    const first = backlog.take(5);
    expect(first.map((e) => e.item)).toEqual(A(1, 5));
    backlog.add('b1', 'tenant-b', 'b1');
    backlog.add('b2', 'tenant-b', 'b2');
    expect(backlog.isNoisy('tenant-a')).toBe(true);
    expect(backlog.take(5).map((e) => e.item)).toEqual(['b1', 'b2', ...A(6, 8)]);
  });

  it('one instance: recent processing time makes the busy tenant noisy even with nothing in flight', () => {
    const backlog = tenantA(12);
    backlog.add('b1', 'tenant-b', 'b1');
    const first = backlog.take(1);
    expect(first.map((e) => e.item)).toEqual(['a1']);
    backlog.done(first, 3_000);
    expect(backlog.inFlightCount).toBe(0);
    expect(backlog.isNoisy('tenant-a')).toBe(true);
    expect(backlog.isNoisy('tenant-b')).toBe(false);
    expect(backlog.take(1).map((e) => e.item)).toEqual(['b1']);
  });

  it('serves quiet tenants oldest first, then the noisy tenant with the fewest messages in flight', () => {
    const backlog = new FairBacklog<string>();
    for (let i = 1; i <= 6; i++) backlog.add(`a${i}`, 'A', `a${i}`);
    for (let i = 1; i <= 6; i++) backlog.add(`c${i}`, 'C', `c${i}`);
    // Nothing in flight yet: oldest first.
    expect(backlog.take(3).map((e) => e.item)).toEqual(['a1', 'a2', 'a3']);
    // A is noisy: C's messages first.
    expect(backlog.take(2).map((e) => e.item)).toEqual(['c1', 'c2']);
    backlog.add('q1', 'Q', 'q1');
    backlog.add('r1', 'R', 'r1');
    // Both A (3 in flight) and C (2) are noisy now: the quiet tenants first, oldest first; then the
    // noisy tenant with the fewest in flight, counting this batch's: C (2), then A (3, tied with C at 3:
    // A's waiting message is the older), then C.
    expect(backlog.take(5).map((e) => e.item)).toEqual(['q1', 'r1', 'c3', 'a4', 'c4']);
  });

  it('a single tenant is served in arrival order (fairness changes nothing without another tenant)', () => {
    const backlog = tenantA(15);
    const order: string[] = [];
    for (let batch = backlog.take(5); batch.length > 0; batch = backlog.take(5)) {
      order.push(...batch.map((e) => e.item));
      backlog.done(batch, 1_000);
    }
    expect(order).toEqual(A(1, 15));
  });

  it('a message without a group is a tenant of its own, hence quiet', () => {
    const backlog = new FairBacklog<string>();
    for (let i = 1; i <= 4; i++) backlog.add(`a${i}`, 'A', `a${i}`);
    backlog.add('x', undefined, 'x');
    backlog.done(backlog.take(1), 500);
    expect(backlog.take(1).map((e) => e.item)).toEqual(['x']);
  });

  it('a tenant whose backlog is drained is quiet again', () => {
    const backlog = new FairBacklog<string>();
    backlog.add('a1', 'A', 'a1');
    backlog.done(backlog.take(1), 10_000);
    expect(backlog.isNoisy('A')).toBe(false);
  });

  it('a message received again keeps its place and takes the new receipt', () => {
    const backlog = new FairBacklog<string>();
    backlog.add('m1', 'A', 'handle-1');
    backlog.add('m2', 'A', 'handle-2');
    expect(backlog.add('m1', 'A', 'handle-1b')).toBe('replaced');
    expect(backlog.size).toBe(2);
    expect(backlog.take(2).map((e) => e.item)).toEqual(['handle-1b', 'handle-2']);
  });

  it('forgets completions older than the recent window', () => {
    const backlog = new FairBacklog<string>();
    backlog.add('a0', 'A', 'a0');
    backlog.add('a-keep', 'A', 'a-keep');
    backlog.done(backlog.take(1), 60_000);
    // C always has one message waiting, so its backlog is never drained.
    backlog.add('c-first', 'C', 'c-first');
    for (let i = 0; i < RECENT_COMPLETIONS; i++) {
      backlog.add(`c${i}`, 'C', `c${i}`);
      backlog.done(backlog.take(1), 1);
    }
    // A's one slow message has left the window; C did all the recent work.
    expect(backlog.isNoisy('A')).toBe(false);
    expect(NOISY_SHARE).toBe(0.1);
  });
});
