/**
 * Defect 3 (reading through another principal's plan), over HTTP on the local stack: naming Alice's plan or
 * transaction in Bob's own commit or execute made `GET /v1/actions/{bob's
 * action}` return her transaction view (planned_by, plan input, provider
 * operation). Now such a commit or execute is refused before anything is
 * written, with the same answer as a plan (or transaction) that does not
 * exist, and nothing of hers can be read back through his action.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { charge, executed, mentions, planned, refused, RW, securityStack, uid, writesNothing, type SecurityStack } from './support.js';

const T = 'demo';
let s: SecurityStack;
let alice: string;
let bob: string;

beforeAll(async () => {
  s = await securityStack('d3', T);
  alice = await s.token('alice', RW);
  bob = await s.token('bob', RW);
});
afterAll(async () => s?.stop());

/** The problem without the IDs the caller named itself (to compare two answers). */
function shape(body: Record<string, unknown>) {
  const { instance: _i, details, ...rest } = body as { instance?: unknown; details?: Record<string, unknown> };
  void _i;
  return { ...rest, detail_keys: Object.keys(details ?? {}).sort() };
}

describe("defect 3: another principal's plan or transaction through one's own action", () => {
  it("a commit naming Alice's plan is answered as a plan that does not exist, nothing is written, and Bob's action does not exist", async () => {
    const plan = await planned(s, alice);
    const mine = uid('b-commit');
    const nope = uid('b-commit-nope');
    let theirs: Record<string, unknown> = {};
    let missing: Record<string, unknown> = {};
    await writesNothing(s, async () => {
      theirs = (await refused(s.call(bob, 'POST', '/v1/actions', charge(mine, { mode: 'commit', plan_id: plan.plan_id })), 404, 'runtime.plan_not_found')).body;
      missing = (
        await refused(s.call(bob, 'POST', '/v1/actions', charge(nope, { mode: 'commit', plan_id: `plan:${uid('none')}` })), 404, 'runtime.plan_not_found')
      ).body;
      // Naming her transaction as well changes nothing.
      await refused(
        s.call(bob, 'POST', '/v1/actions', charge(uid('b-commit-tx'), { mode: 'commit', plan_id: plan.plan_id, transaction_id: plan.transaction_id })),
        404,
        'runtime.plan_not_found',
      );
      await refused(s.call(bob, 'GET', `/v1/actions/${mine}`), 404, 'action.not_found');
    });
    expect(shape(theirs)).toEqual(shape(missing));
    expect(mentions(theirs, 'alice')).toBe(false);
    // Her plan is untouched and still commits.
    const view = await s.call(alice, 'GET', `/v1/transactions?plan_id=${encodeURIComponent(plan.plan_id)}`);
    expect(view.body).toMatchObject({ status: 'planned' });
  });

  it("an execute naming Alice's transaction ID is refused naming nothing of hers, nothing is written, and Bob's action does not exist", async () => {
    const done = await executed(s, alice);
    expect(done.transaction.status).toBe('committed');
    const mine = uid('b-exec');
    await writesNothing(s, async () => {
      const a = await refused(
        s.call(bob, 'POST', '/v1/actions', charge(mine, { mode: 'execute', transaction_id: done.transaction.transaction_id })),
        409,
        'runtime.execution_contract_mismatch',
      );
      expect(a.body.details).toEqual({ transaction_id: done.transaction.transaction_id });
      expect(mentions(a.body, 'alice')).toBe(false);
      expect(mentions(a.body, 'committed')).toBe(false);
      await refused(s.call(bob, 'GET', `/v1/actions/${mine}`), 404, 'action.not_found');
    });
  });

  it("the owner's own conflicting execute still names the differing fields", async () => {
    const done = await executed(s, alice);
    const a = await refused(
      s.call(alice, 'POST', '/v1/actions', charge(uid('a-exec'), { mode: 'execute', transaction_id: done.transaction.transaction_id })),
      409,
      'runtime.execution_contract_mismatch',
    );
    expect(a.body.details).toMatchObject({ transaction_id: done.transaction.transaction_id, fields: expect.arrayContaining(['action_id']) });
  });

  it("a commit naming one's own plan with another transaction ID is refused before it is bound to that transaction", async () => {
    const hers = await executed(s, alice);
    const plan = await planned(s, bob);
    const mine = uid('b-commit-other-tx');
    await writesNothing(s, async () => {
      const a = await refused(
        s.call(bob, 'POST', '/v1/actions', charge(mine, { mode: 'commit', plan_id: plan.plan_id, transaction_id: hers.transaction.transaction_id })),
        409,
        'runtime.plan_transaction_mismatch',
      );
      expect(a.body.details).toMatchObject({ transaction_id: plan.transaction_id });
      await refused(s.call(bob, 'GET', `/v1/actions/${mine}`), 404, 'action.not_found');
    });
  });
});
