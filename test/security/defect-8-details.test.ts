/**
 * Defect 8, second half (what error details reveal), over HTTP on the local stack: error
 * details revealed whether another principal's action exists and its
 * status. Now an answer about another principal's action is the answer about
 * one that does not exist; where an ID is taken (action IDs are unique per
 * tenant and cannot be created twice), the conflict names nothing of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { charge, executed, mentions, refused, RW, securityStack, uid, writesNothing, type SecurityStack } from './support.js';

const T = 'demo';
let s: SecurityStack;
let alice: string;
let bob: string;

beforeAll(async () => {
  s = await securityStack('d8', T);
  alice = await s.token('alice', RW);
  bob = await s.token('bob', RW);
});
afterAll(async () => s?.stop());

describe("defect 8: details about another principal's action", () => {
  it("reusing Alice's action ID is a conflict that names no field, status or owner; her own resubmission still names the fields", async () => {
    const done = await executed(s, alice);
    await writesNothing(s, async () => {
      const a = await refused(s.call(bob, 'POST', '/v1/actions', charge(done.id, { mode: 'execute' })), 409, 'runtime.action_conflict');
      expect(a.body.details).toEqual({ action_id: done.id });
      for (const leak of ['alice', 'completed', 'committed', 'principal', done.transaction.transaction_id]) expect(mentions(a.body, leak), leak).toBe(false);
    });
    const own = await refused(s.call(alice, 'POST', '/v1/actions', charge(done.id, { mode: 'execute' }, {}, 2_000)), 409, 'runtime.action_conflict');
    expect(own.body.details).toMatchObject({ fields: expect.arrayContaining(['input']) });
  });

  it("cancelling, reading or streaming Alice's action answers exactly as for an action that does not exist", async () => {
    const done = await executed(s, alice);
    const ghost = uid('ghost');
    await writesNothing(s, async () => {
      for (const [method, suffix] of [
        ['GET', ''],
        ['GET', '/stream'],
        ['POST', '/cancel'],
      ] as const) {
        const body = method === 'POST' ? {} : undefined;
        const theirs = await refused(s.call(bob, method, `/v1/actions/${done.id}${suffix}`, body), 404, 'action.not_found');
        const none = await refused(s.call(bob, method, `/v1/actions/${ghost}${suffix}`, body), 404, 'action.not_found');
        expect(Object.keys((theirs.body.details as object | undefined) ?? {})).toEqual(Object.keys((none.body.details as object | undefined) ?? {}));
        expect(mentions(theirs.body, 'completed')).toBe(false);
      }
    });
  });

  it("a compensation naming Alice's failed action does not reveal its status", async () => {
    s.stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'decline' }, times: 1 }]);
    const failed = await executed(s, alice);
    s.stack.simulator.setFaults([]);
    expect(failed.transaction.status).toBe('failed');
    await writesNothing(s, async () => {
      const a = await refused(
        s.call(bob, 'POST', '/v1/actions', {
          id: uid('b-comp'),
          capability_id: 'payments.charge',
          input: { charge_id: 'ch_x' },
          transaction: { mode: 'compensate', compensation_for: failed.id },
        }),
        404,
        'runtime.compensation_target_not_found',
      );
      expect(mentions(a.body, 'failed')).toBe(false);
    });
  });
});
