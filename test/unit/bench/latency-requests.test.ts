/**
 * The latency breakdown's request counts (bench/sections/latency.ts
 * `requestsOf`): each step counts the DynamoDB requests it sends, from the
 * calls observed (the actor that issued each and when), including those
 * beside the answer's path. A timeline of one waited execute on the queue
 * path, on a made-up clock, as the section records it.
 */
import { describe, expect, it } from 'vitest';
import { type Actor, type Call, requestsOf, segmentsOf, type Timeline } from '../../../bench/sections/latency.js';

const call = (op: string, actor: Actor | undefined, t0: number, t1: number): Call => ({ op, actor, t0, t1 });

/**
 * Admission 10-30 (its TransactWriteItems 12-28), the attempt 40-90 (lease 41-48, provider 50-55, the action's
 * settlement 56-63, the record's 64-72), polls 30-45 (saw it running) and 60-66 (its read started before the
 * action's settlement returned, and saw it settled), the final view's read 66-70, the answer at 75.
 */
function timeline(): Timeline {
  return {
    t_req: 5,
    t_resp: 75,
    submit: [10, 30],
    attempt: [40, 90],
    provider: [50, 55],
    settle1: 63,
    polls: [
      { t0: 30, t1: 45, status: 'running' },
      { t0: 60, t1: 66, status: 'completed' },
    ],
    view1: 70,
    dynamo: [
      call('TransactWriteItems', 'admit', 12, 28),
      call('GetItem', 'wait', 31, 44),
      call('UpdateItem', 'worker', 41, 48),
      call('UpdateItem', 'worker', 56, 63),
      call('GetItem', 'wait', 61, 66),
      call('UpdateItem', 'worker', 64, 72),
      call('GetItem', 'wait', 66, 70),
    ],
    sqs: [call('ReceiveMessage', undefined, 30.5, 38)],
  };
}

describe('the latency breakdown: the DynamoDB requests of each step', () => {
  it("counts the settlement's two writes, the record's beside the path, and every poll the wait sent", () => {
    const t = timeline();
    const segmented = segmentsOf(t);
    if (typeof segmented === 'string') throw new Error(segmented);
    // The action settled at 63 (its write answered), the wait noticed it at 66.
    expect(segmented.seg.settle).toEqual([55, 63]);
    expect(segmented.seg.notice).toEqual([63, 66]);
    const { steps, unattributed } = requestsOf(t, segmented);
    const counts = Object.fromEntries(Object.entries(steps).map(([id, s]) => [id, [s.calls.length, s.calls.length - s.onPath.length]]));
    expect(counts).toEqual({
      edge: [0, 0],
      admit: [1, 0],
      queue: [0, 0],
      dispatch: [0, 0],
      pre_provider: [1, 0],
      provider: [0, 0],
      // The action's settlement on the path, the record's (with its receipt) after it, beside the wait.
      settle: [2, 1],
      // The noticing poll's read on the path; the poll that saw the action running beside the attempt.
      notice: [2, 1],
      respond: [1, 0],
    });
    expect(unattributed).toBe(0);
    // Every DynamoDB request of the run is counted once.
    expect(Object.values(steps).reduce((n, s) => n + s.calls.length, 0)).toBe(t.dynamo.length);
  });

  it("counts the noticing poll's read on the path even when the action's settlement returned after it", () => {
    // The action's write answers at 67 (the read at 61-66 saw it applied first); the record's follows at 68.
    const base = timeline();
    const t: Timeline = {
      ...base,
      settle1: 67,
      dynamo: base.dynamo.map((c) => (c.t0 === 56 ? call('UpdateItem', 'worker', 56, 67) : c.t0 === 64 ? call('UpdateItem', 'worker', 68, 74) : c)),
    };
    const segmented = segmentsOf(t);
    if (typeof segmented === 'string') throw new Error(segmented);
    // Settled where the wait saw it: the notice segment is empty, its read still the one that ended the path.
    expect(segmented.seg.notice).toEqual([66, 66]);
    const { steps } = requestsOf(t, segmented);
    expect(steps.notice.onPath.map((c) => c.t0)).toEqual([61]);
    expect(steps.settle.onPath.map((c) => c.t0)).toEqual([56]);
    expect(steps.settle.calls.map((c) => c.t0)).toEqual([56, 68]);
  });

  it('reports a request no step issued', () => {
    const t = timeline();
    t.dynamo.push(call('GetItem', undefined, 50, 51));
    const segmented = segmentsOf(t);
    if (typeof segmented === 'string') throw new Error(segmented);
    expect(requestsOf(t, segmented).unattributed).toBe(1);
  });
});
