/**
 * Defect 9 (the plan recheck before the approval gate), over HTTP on the local stack: a commit whose input,
 * principal or transaction ID differs from its plan was first put to an
 * approver (202 requires_human) and refused only after approval. Now the
 * seven-point recheck runs before the approval gate: such a commit is
 * refused at once with a 4xx problem and no approval is created.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { charge, executed, planned, refused, RW, securityStack, uid, type SecurityStack } from './support.js';

const T = 'demo';
let s: SecurityStack;
let alice: string;
let operator: string;
let approver: string;

beforeAll(async () => {
  s = await securityStack('d9', T, {
    approvalPolicies: [
      { id: 'd9-commit', connector: 'payments', modes: ['commit'], approverScopes: ['aip:approve'], minApprovals: 1, expiresAfterSeconds: 3600 },
    ],
  });
  alice = await s.token('alice', RW);
  operator = await s.token('ops', [...RW, 'aip:operator']);
  approver = await s.token('approver', ['aip:actions:read', 'aip:approve']);
});
afterAll(async () => s?.stop());

async function pendingApprovals(): Promise<string[]> {
  const list = await s.call(approver, 'GET', '/v1/approvals');
  expect(list.status, JSON.stringify(list.body)).toBe(200);
  return (list.body.items as { action_id: string }[]).map((a) => a.action_id);
}

describe('defect 9: a commit that can never succeed is refused before an approver is asked', () => {
  it('input differs from the plan: 409 runtime.plan_input_mismatch at once, no approval', async () => {
    const plan = await planned(s, alice, 1_000);
    const id = uid('c-input');
    await refused(s.call(alice, 'POST', '/v1/actions', charge(id, { mode: 'commit', plan_id: plan.plan_id }, {}, 9_999)), 409, 'runtime.plan_input_mismatch');
    expect(await pendingApprovals()).not.toContain(id);
  });

  it('principal differs from the planner (an operator, who may see the plan): 409 runtime.plan_principal_mismatch at once, no approval', async () => {
    const plan = await planned(s, alice, 1_000);
    const id = uid('c-principal');
    await refused(s.call(operator, 'POST', '/v1/actions', charge(id, { mode: 'commit', plan_id: plan.plan_id })), 409, 'runtime.plan_principal_mismatch');
    expect(await pendingApprovals()).not.toContain(id);
  });

  it('transaction ID differs from the plan: 409 runtime.plan_transaction_mismatch at once, no approval', async () => {
    const plan = await planned(s, alice, 1_000);
    const other = await executed(s, alice);
    const id = uid('c-txn');
    await refused(
      s.call(alice, 'POST', '/v1/actions', charge(id, { mode: 'commit', plan_id: plan.plan_id, transaction_id: other.transaction.transaction_id })),
      409,
      'runtime.plan_transaction_mismatch',
    );
    expect(await pendingApprovals()).not.toContain(id);
  });

  it('a commit that matches its plan still goes to the approver', async () => {
    const plan = await planned(s, alice, 1_000);
    const id = uid('c-ok');
    const sub = await s.call(alice, 'POST', '/v1/actions', charge(id, { mode: 'commit', plan_id: plan.plan_id }));
    expect(sub.status, JSON.stringify(sub.body)).toBe(202);
    expect(sub.body.disposition).toBe('requires_human');
    expect(await pendingApprovals()).toContain(id);
  });
});
