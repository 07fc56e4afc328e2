/**
 * Defect 4 (compensating another principal's charge), over HTTP on the local stack: compensation targets had
 * no ownership check; Bob could compensate Alice's committed charge once an
 * approver (who could not tell whose it was) approved. Now compensating needs
 * the target's owner, or a principal the tenant policy allows (the operator
 * scope by default), and the approval request shows the target's owner.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executed, mentions, refused, RW, securityStack, uid, writesNothing, type SecurityStack } from './support.js';

const T = 'demo';
let s: SecurityStack;
let alice: string;
let bob: string;
let operator: string;
let approver: string;

beforeAll(async () => {
  s = await securityStack('d4', T, {
    approvalPolicies: [
      { id: 'd4-compensate', connector: 'payments', modes: ['compensate'], approverScopes: ['aip:approve'], minApprovals: 1, expiresAfterSeconds: 3600 },
    ],
  });
  alice = await s.token('alice', RW);
  bob = await s.token('bob', RW);
  operator = await s.token('ops', [...RW, 'aip:operator']);
  approver = await s.token('approver', ['aip:actions:read', 'aip:approve']);
});
afterAll(async () => s?.stop());

function refund(id: string, target: { id: string; charge_id: string }) {
  return { id, capability_id: 'payments.charge', input: { charge_id: target.charge_id }, transaction: { mode: 'compensate', compensation_for: target.id } };
}

async function aliceCharge() {
  const done = await executed(s, alice);
  expect(done.transaction.status).toBe('committed');
  return { id: done.id, charge_id: (done.answer.body.action_result as { output: { charge_id: string } }).output.charge_id };
}

async function approvalOf(id: string, token: string) {
  const list = await s.call(token, 'GET', '/v1/approvals');
  expect(list.status, JSON.stringify(list.body)).toBe(200);
  return (list.body.items as { action_id: string; subject?: unknown }[]).find((a) => a.action_id === id);
}

describe('defect 4: who may compensate whose action', () => {
  it("Bob cannot compensate Alice's charge: answered as a target that does not exist, nothing written, no approval asked", async () => {
    const target = await aliceCharge();
    let theirs: Record<string, unknown> = {};
    let missing: Record<string, unknown> = {};
    await writesNothing(s, async () => {
      theirs = (await refused(s.call(bob, 'POST', '/v1/actions', refund(uid('b-comp'), target)), 404, 'runtime.compensation_target_not_found')).body;
      missing = (
        await refused(
          s.call(bob, 'POST', '/v1/actions', refund(uid('b-comp'), { id: uid('nothing'), charge_id: target.charge_id })),
          404,
          'runtime.compensation_target_not_found',
        )
      ).body;
    });
    expect(Object.keys(theirs.details as object)).toEqual(Object.keys(missing.details as object));
    expect(mentions(theirs, 'alice')).toBe(false);
  });

  it("the owner's compensation asks an approver, and the approval shows whose action it reverses", async () => {
    const target = await aliceCharge();
    const id = uid('a-comp');
    const sub = await s.call(alice, 'POST', '/v1/actions', refund(id, target));
    expect(sub.status, JSON.stringify(sub.body)).toBe(202);
    const approval = await approvalOf(id, approver);
    expect(approval?.subject).toMatchObject({ compensation_for: { action_id: target.id, owner: { id: 'alice', kind: 'user' } } });
  });

  it("an operator may compensate another principal's action (tenant policy), and the approver sees the owner is not the requester", async () => {
    const target = await aliceCharge();
    const id = uid('o-comp');
    const sub = await s.call(operator, 'POST', '/v1/actions', refund(id, target));
    expect(sub.status, JSON.stringify(sub.body)).toBe(202);
    const approval = (await approvalOf(id, approver)) as unknown as { requested_by: { id: string }; subject: { compensation_for: { owner: { id: string } } } };
    expect(approval.requested_by.id).toBe('ops');
    expect(approval.subject.compensation_for.owner.id).toBe('alice');
  });
});
