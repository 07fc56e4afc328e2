/**
 * ApprovalStore against DynamoDB Local: one decision only (raced), expiry,
 * self-approval guard, and the sparse pending listing per tenant.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import type { CreateApprovalInput } from '../../../lib/ports/approval-store.js';
import { sha256Hex } from '../../../lib/protocol/index.js';
import { RACERS, TENANT, OTHER_TENANT, PRINCIPAL, aipError, createStores, split, uid, type Stores } from './support.js';

let s: Stores;
beforeAll(async () => {
  s = await createStores('approvals');
});
afterAll(async () => {
  await s?.table.destroy();
});

const APPROVER = { id: 'ops-7', kind: 'user' } as const;

function approvalInput(overrides: Partial<CreateApprovalInput> = {}): CreateApprovalInput {
  return {
    tenant_id: TENANT,
    approval_id: uid('appr'),
    action_id: uid('act'),
    transaction_id: uid('txn'),
    capability_id: 'payments.transfer',
    requested_by: PRINCIPAL,
    policy: { policy_id: 'pol-payments', policy_hash: sha256Hex('policy'), approver_scopes: ['payments:approve'], allow_self_approval: false },
    expires_at: new Date(Date.parse(s.clock.iso()) + 3600_000).toISOString(),
    ...overrides,
  };
}

describe('create and get', () => {
  it('creates a pending approval at revision 1 carrying the policy evidence', async () => {
    const input = approvalInput();
    const r = await s.approvals.create(input);
    expect(r).toMatchObject({ status: 'pending', revision: 1, policy: input.policy, requested_by: PRINCIPAL, action_id: input.action_id, transaction_id: input.transaction_id });
    expect(await s.approvals.get(input)).toEqual(r);
  });

  it('is conditional on the approval not existing', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const err = await aipError(s.approvals.create(input));
    expect(err.code).toBe('approval.already_exists');
    expect(err.details).toMatchObject({ current_status: 'pending', current_revision: 1 });
  });

  it('rejects a malformed approval (bad policy hash, expiry in the past)', async () => {
    const p = approvalInput().policy;
    expect((await aipError(s.approvals.create(approvalInput({ policy: { ...p, policy_hash: 'abc' } })))).code).toBe('approval.invalid_record');
    expect((await aipError(s.approvals.create(approvalInput({ expires_at: s.clock.iso() })))).code).toBe('approval.invalid_record');
  });

  it('get returns undefined for an unknown approval and never crosses tenants', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    expect(await s.approvals.get({ tenant_id: OTHER_TENANT, approval_id: input.approval_id })).toBeUndefined();
  });
});

describe('decide: one decision only', () => {
  it('an authorized approver approves; the decision carries decision ID, decider, time and reason', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const r = await s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: 'dec-1', decided_by: APPROVER, decision: 'approved', reason: 'within limits' });
    expect(r).toMatchObject({ status: 'approved', revision: 2, decision: { decision_id: 'dec-1', decided_by: APPROVER, decision: 'approved', reason: 'within limits', decided_at: s.clock.iso() } });
  });

  it('a denial is recorded the same way', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    expect((await s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: 'dec-2', decided_by: APPROVER, decision: 'denied' })).status).toBe('denied');
  });

  it(`${RACERS} concurrent decides (mixed approve/deny): exactly one decision, the rest approval.already_decided naming it`, async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const { won, lost } = split(
      await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: `dec-${i}`, decided_by: { id: `approver-${i}`, kind: 'user' }, decision: i % 2 === 0 ? 'approved' : 'denied' }),
        ),
      ),
    );
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(RACERS - 1);
    const winner = won[0];
    for (const e of lost) {
      expect(e).toMatchObject({ code: 'approval.already_decided', details: { current_status: winner?.status, current_revision: 2, decision: { decision_id: winner?.decision?.decision_id } } });
    }
    expect(await s.approvals.get(input)).toEqual(winner);
  });

  it('a second decision later is refused too', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    await s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: 'd1', decided_by: APPROVER, decision: 'approved' });
    const err = await aipError(s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 2, decision_id: 'd2', decided_by: APPROVER, decision: 'denied' }));
    expect(err.code).toBe('approval.already_decided');
  });

  it('a decision after expires_at is approval.expired and changes nothing', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    s.clock.advance(3600_000);
    const err = await aipError(s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: 'late', decided_by: APPROVER, decision: 'approved' }));
    expect(err.code).toBe('approval.expired');
    expect((await s.approvals.get(input))?.status).toBe('pending');
  });

  it('a stale revision on a pending approval is approval.state_conflict', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const err = await aipError(s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 5, decision_id: 'd', decided_by: APPROVER, decision: 'approved' }));
    expect(err).toMatchObject({ code: 'approval.state_conflict', details: { current_revision: 1, expected_revision: 5 } });
  });

  it('the requester may not approve unless the policy allows self-approval (but may deny)', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const err = await aipError(s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: 'self', decided_by: PRINCIPAL, decision: 'approved' }));
    expect(err.code).toBe('approval.self_approval_forbidden');
    expect(err.httpStatus).toBe(403);

    // Denying (withdrawing) one's own request is always allowed.
    expect((await s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: 'withdraw', decided_by: PRINCIPAL, decision: 'denied' })).status).toBe('denied');

    const allowed = approvalInput({ policy: { ...input.policy, allow_self_approval: true } });
    await s.approvals.create(allowed);
    expect((await s.approvals.decide({ tenant_id: TENANT, approval_id: allowed.approval_id, expected_revision: 1, decision_id: 'self', decided_by: PRINCIPAL, decision: 'approved' })).status).toBe('approved');
  });

  it('an unknown approval is approval.not_found', async () => {
    expect((await aipError(s.approvals.decide({ tenant_id: TENANT, approval_id: 'nope', expected_revision: 1, decision_id: 'd', decided_by: APPROVER, decision: 'approved' }))).code).toBe('approval.not_found');
  });
});

describe('expire', () => {
  it('refuses before expires_at (approval.not_expired) and expires after it', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    expect((await aipError(s.approvals.expire({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1 }))).code).toBe('approval.not_expired');
    s.clock.advance(3600_000);
    const r = await s.approvals.expire({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1 });
    expect(r).toMatchObject({ status: 'expired', revision: 2 });
    expect(r.decision).toBeUndefined();
  });

  it('a decided approval does not expire (approval.already_decided)', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    await s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: 'd', decided_by: APPROVER, decision: 'approved' });
    s.clock.advance(3600_000);
    expect((await aipError(s.approvals.expire({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 2 }))).code).toBe('approval.already_decided');
  });

  it(`${RACERS} concurrent expire/decide racers right at expiry: the approval ends in exactly one final state`, async () => {
    const input = approvalInput({ expires_at: new Date(Date.parse(s.clock.iso()) + 1).toISOString() });
    await s.approvals.create(input);
    s.clock.advance(1);
    const { won } = split(
      await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          i % 2 === 0
            ? s.approvals.expire({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1 })
            : s.approvals.decide({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 1, decision_id: `d${i}`, decided_by: APPROVER, decision: 'approved' }),
        ),
      ),
    );
    expect(won).toHaveLength(1);
    expect(won[0]?.status).toBe('expired');
  });
});

describe('listPending (sparse byStatus index, per tenant)', () => {
  it('lists only pending approvals of the tenant, oldest expiry first, with pagination; decided and expired ones leave the index', async () => {
    const tenant = uid('tenant-list');
    const base = Date.parse(s.clock.iso());
    const created = [];
    for (let i = 0; i < 5; i++) {
      created.push(await s.approvals.create(approvalInput({ tenant_id: tenant, expires_at: new Date(base + (10 - i) * 60_000).toISOString() })));
    }
    await s.approvals.create(approvalInput({ tenant_id: uid('other-tenant') }));
    const decided = created[0];
    await s.approvals.decide({ tenant_id: tenant, approval_id: decided?.approval_id as string, expected_revision: 1, decision_id: 'd', decided_by: APPROVER, decision: 'denied' });
    const raw = await s.rawItem(keys.approval(tenant, decided?.approval_id as string));
    expect(raw?.GSI3PK).toBeUndefined();

    const page1 = await s.approvals.listPending({ tenant_id: tenant, limit: 2 });
    expect(page1.cursor).toBeDefined();
    const page2 = await s.approvals.listPending({ tenant_id: tenant, limit: 2, cursor: page1.cursor as string });
    const rest = page2.cursor ? await s.approvals.listPending({ tenant_id: tenant, limit: 10, cursor: page2.cursor }) : { items: [] };
    const listed = [...page1.items, ...page2.items, ...rest.items];
    const expected = created.slice(1).sort((a, b) => a.expires_at.localeCompare(b.expires_at));
    expect(listed.map((r) => r.approval_id)).toEqual(expected.map((r) => r.approval_id));
    expect(listed.every((r) => r.tenant_id === tenant && r.status === 'pending')).toBe(true);
  });

  it('expires_before selects the overdue ones (the expiry sweep)', async () => {
    const tenant = uid('tenant-sweep');
    const base = Date.parse(s.clock.iso());
    const soon = await s.approvals.create(approvalInput({ tenant_id: tenant, expires_at: new Date(base + 60_000).toISOString() }));
    await s.approvals.create(approvalInput({ tenant_id: tenant, expires_at: new Date(base + 3600_000).toISOString() }));
    s.clock.advance(60_000);
    const due = await s.approvals.listPending({ tenant_id: tenant, expires_before: s.clock.iso() });
    expect(due.items.map((r) => r.approval_id)).toEqual([soon.approval_id]);
    await s.approvals.expire({ tenant_id: tenant, approval_id: soon.approval_id, expected_revision: 1 });
    expect((await s.approvals.listPending({ tenant_id: tenant, expires_before: s.clock.iso() })).items).toEqual([]);
  });

  it('rejects a bad limit or a cursor from another listing', async () => {
    expect((await aipError(s.approvals.listPending({ tenant_id: TENANT, limit: 0 }))).code).toBe('approval.invalid_listing');
    const tenant = uid('tenant-cur');
    for (let i = 0; i < 2; i++) await s.approvals.create(approvalInput({ tenant_id: tenant }));
    const page = await s.approvals.listPending({ tenant_id: tenant, limit: 1 });
    expect((await aipError(s.approvals.listPending({ tenant_id: TENANT, cursor: page.cursor as string }))).code).toBe('approval.invalid_listing');
    expect((await aipError(s.approvals.listPending({ tenant_id: TENANT, cursor: 'garbage' }))).code).toBe('approval.invalid_listing');
  });

  it('approvals never show up in the transaction status listing (distinct index partition)', async () => {
    const page = await s.table.store.listByStatus({ status: 'planned' });
    expect(page.items).toEqual([]);
  });
});
