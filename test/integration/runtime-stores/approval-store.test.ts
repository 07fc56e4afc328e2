/**
 * ApprovalStore against DynamoDB Local: one decision only (raced), expiry,
 * self-approval guard, min approvals by distinct approvers (raced), the
 * subject, and the sparse pending listing per tenant.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ApprovalRecord, CreateApprovalInput, DecideApprovalInput } from '../../../lib/ports/approval-store.js';
import type { Principal } from '../../../packages/connector-sdk/src/protocol/index.js';
import { sha256Hex } from '../../../packages/connector-sdk/src/protocol/index.js';
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
    policy: {
      policy_id: 'pol-payments',
      policy_hash: sha256Hex('policy'),
      approver_scopes: ['payments:approve'],
      allow_self_approval: false,
      min_approvals: 1,
    },
    expires_at: new Date(Date.parse(s.clock.iso()) + 3600_000).toISOString(),
    ...overrides,
  };
}

describe('create and get', () => {
  it('creates a pending approval at revision 1 carrying the policy evidence', async () => {
    const input = approvalInput();
    const r = await s.approvals.create(input);
    expect(r).toMatchObject({
      status: 'pending',
      revision: 1,
      policy: input.policy,
      requested_by: PRINCIPAL,
      action_id: input.action_id,
      transaction_id: input.transaction_id,
    });
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
    const r = await s.approvals.decide({
      tenant_id: TENANT,
      approval_id: input.approval_id,
      expected_revision: 1,
      decision_id: 'dec-1',
      decided_by: APPROVER,
      decision: 'approved',
      reason: 'within limits',
    });
    expect(r).toMatchObject({
      status: 'approved',
      revision: 2,
      decision: { decision_id: 'dec-1', decided_by: APPROVER, decision: 'approved', reason: 'within limits', decided_at: s.clock.iso() },
    });
  });

  it('a denial is recorded the same way', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    expect(
      (
        await s.approvals.decide({
          tenant_id: TENANT,
          approval_id: input.approval_id,
          expected_revision: 1,
          decision_id: 'dec-2',
          decided_by: APPROVER,
          decision: 'denied',
        })
      ).status,
    ).toBe('denied');
  });

  it(`${RACERS} concurrent decides (mixed approve/deny): exactly one decision, the rest approval.already_decided naming it`, async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const { won, lost } = split(
      await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          s.approvals.decide({
            tenant_id: TENANT,
            approval_id: input.approval_id,
            expected_revision: 1,
            decision_id: `dec-${i}`,
            decided_by: { id: `approver-${i}`, kind: 'user' },
            decision: i % 2 === 0 ? 'approved' : 'denied',
          }),
        ),
      ),
    );
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(RACERS - 1);
    const winner = won[0];
    for (const e of lost) {
      expect(e).toMatchObject({
        code: 'approval.already_decided',
        details: { current_status: winner?.status, current_revision: 2, decision: { decision_id: winner?.decision?.decision_id } },
      });
    }
    expect(await s.approvals.get(input)).toEqual(winner);
  });

  it('a second decision later is refused too', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    await s.approvals.decide({
      tenant_id: TENANT,
      approval_id: input.approval_id,
      expected_revision: 1,
      decision_id: 'd1',
      decided_by: APPROVER,
      decision: 'approved',
    });
    const err = await aipError(
      s.approvals.decide({
        tenant_id: TENANT,
        approval_id: input.approval_id,
        expected_revision: 2,
        decision_id: 'd2',
        decided_by: APPROVER,
        decision: 'denied',
      }),
    );
    expect(err.code).toBe('approval.already_decided');
  });

  it('a decision after expires_at is approval.expired and changes nothing', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    s.clock.advance(3600_000);
    const err = await aipError(
      s.approvals.decide({
        tenant_id: TENANT,
        approval_id: input.approval_id,
        expected_revision: 1,
        decision_id: 'late',
        decided_by: APPROVER,
        decision: 'approved',
      }),
    );
    expect(err.code).toBe('approval.expired');
    expect((await s.approvals.get(input))?.status).toBe('pending');
  });

  it('a stale revision on a pending approval is approval.state_conflict', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const err = await aipError(
      s.approvals.decide({
        tenant_id: TENANT,
        approval_id: input.approval_id,
        expected_revision: 5,
        decision_id: 'd',
        decided_by: APPROVER,
        decision: 'approved',
      }),
    );
    expect(err).toMatchObject({ code: 'approval.state_conflict', details: { current_revision: 1, expected_revision: 5 } });
  });

  it('the requester may not approve unless the policy allows self-approval (but may deny)', async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const err = await aipError(
      s.approvals.decide({
        tenant_id: TENANT,
        approval_id: input.approval_id,
        expected_revision: 1,
        decision_id: 'self',
        decided_by: PRINCIPAL,
        decision: 'approved',
      }),
    );
    expect(err.code).toBe('approval.self_approval_forbidden');
    expect(err.httpStatus).toBe(403);

    // Denying (withdrawing) one's own request is always allowed.
    expect(
      (
        await s.approvals.decide({
          tenant_id: TENANT,
          approval_id: input.approval_id,
          expected_revision: 1,
          decision_id: 'withdraw',
          decided_by: PRINCIPAL,
          decision: 'denied',
        })
      ).status,
    ).toBe('denied');

    const allowed = approvalInput({ policy: { ...input.policy, allow_self_approval: true } });
    await s.approvals.create(allowed);
    expect(
      (
        await s.approvals.decide({
          tenant_id: TENANT,
          approval_id: allowed.approval_id,
          expected_revision: 1,
          decision_id: 'self',
          decided_by: PRINCIPAL,
          decision: 'approved',
        })
      ).status,
    ).toBe('approved');
  });

  it('an unknown approval is approval.not_found', async () => {
    expect(
      (
        await aipError(
          s.approvals.decide({ tenant_id: TENANT, approval_id: 'nope', expected_revision: 1, decision_id: 'd', decided_by: APPROVER, decision: 'approved' }),
        )
      ).code,
    ).toBe('approval.not_found');
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
    await s.approvals.decide({
      tenant_id: TENANT,
      approval_id: input.approval_id,
      expected_revision: 1,
      decision_id: 'd',
      decided_by: APPROVER,
      decision: 'approved',
    });
    s.clock.advance(3600_000);
    expect((await aipError(s.approvals.expire({ tenant_id: TENANT, approval_id: input.approval_id, expected_revision: 2 }))).code).toBe(
      'approval.already_decided',
    );
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
            : s.approvals.decide({
                tenant_id: TENANT,
                approval_id: input.approval_id,
                expected_revision: 1,
                decision_id: `d${i}`,
                decided_by: APPROVER,
                decision: 'approved',
              }),
        ),
      ),
    );
    expect(won).toHaveLength(1);
    expect(won[0]?.status).toBe('expired');
  });
});

const approver = (i: number | string): Principal => ({ id: `approver-${i}`, kind: 'user' });
const needing = (min_approvals: number, overrides: Partial<CreateApprovalInput> = {}) => {
  const base = approvalInput(overrides);
  return { ...base, policy: { ...base.policy, min_approvals } };
};
const decideAs = (input: CreateApprovalInput, who: Principal, expected_revision: number, extra: Partial<DecideApprovalInput> = {}) =>
  s.approvals.decide({
    tenant_id: input.tenant_id,
    approval_id: input.approval_id,
    expected_revision,
    decision_id: uid('dec'),
    decided_by: who,
    decision: 'approved',
    ...extra,
  });

describe('min approvals: distinct approvers, one conditional write per decision', () => {
  it('stays pending (and listed) until min_approvals distinct approvers approved; every decision is kept', async () => {
    const tenant = uid('tenant-min');
    const input = needing(2, { tenant_id: tenant });
    expect((await s.approvals.create(input)).policy.min_approvals).toBe(2);
    const first = await decideAs(input, approver(1), 1, { decision_id: 'dec-a', reason: 'first' });
    expect(first).toMatchObject({
      status: 'pending',
      revision: 2,
      decisions: [{ decision_id: 'dec-a', decided_by: approver(1), decision: 'approved', reason: 'first' }],
    });
    expect(first.decision).toBeUndefined();
    expect((await s.approvals.listPending({ tenant_id: tenant })).items.map((a) => a.approval_id)).toEqual([input.approval_id]);

    const second = await decideAs(input, approver(2), 2, { decision_id: 'dec-b' });
    expect(second).toMatchObject({ status: 'approved', revision: 3, decision: { decision_id: 'dec-b', decided_by: approver(2) } });
    expect(second.decisions.map((d) => [d.decision_id, d.decided_by.id, d.decision])).toEqual([
      ['dec-a', 'approver-1', 'approved'],
      ['dec-b', 'approver-2', 'approved'],
    ]);
    expect(await s.approvals.get(input)).toEqual(second);
    expect((await s.rawItem(keys.approval(tenant, input.approval_id)))?.GSI3PK).toBeUndefined();
    expect((await s.approvals.listPending({ tenant_id: tenant })).items).toEqual([]);
  });

  it('the same approver approving twice is approval.already_approved_by_caller (409), decided inside the write', async () => {
    const input = needing(3);
    await s.approvals.create(input);
    await decideAs(input, approver('twice'), 1);
    const err = await aipError(decideAs(input, approver('twice'), 2));
    expect(err).toMatchObject({
      code: 'approval.already_approved_by_caller',
      httpStatus: 409,
      details: { approval_id: input.approval_id, current_status: 'pending', current_revision: 2, approvals: 1, min_approvals: 3 },
    });
    // A record claiming no approvals yet does not get past the write either.
    const held = (await s.approvals.get(input)) as ApprovalRecord;
    const forged: ApprovalRecord = { ...held, decisions: [] };
    expect((await aipError(decideAs(input, approver('twice'), 2, { current: forged }))).code).toBe('approval.already_approved_by_caller');
    // One identity per principal (the ID): the same subject under another kind claim is the same approver.
    for (const kind of ['agent', 'service', 'application'] as const) {
      expect((await aipError(decideAs(input, { id: 'approver-twice', kind }, 2))).code).toBe('approval.already_approved_by_caller');
    }
    expect((await s.approvals.get(input))?.decisions).toHaveLength(1);
  });

  it('a subject whose tokens differ only in the kind claim meets a two-approver policy once, whichever kind it approves with first', async () => {
    const input = needing(2);
    await s.approvals.create(input);
    await decideAs(input, { id: 'two-faced', kind: 'agent' }, 1);
    expect((await aipError(decideAs(input, { id: 'two-faced', kind: 'user' }, 2))).code).toBe('approval.already_approved_by_caller');
    expect((await s.approvals.get(input))?.status).toBe('pending');
    // Racing the two tokens at one revision: one decision lands, the approval stays pending.
    const raced = needing(2);
    await s.approvals.create(raced);
    const { won } = split(
      await Promise.allSettled((['user', 'agent', 'service', 'application'] as const).map((kind) => decideAs(raced, { id: 'two-faced', kind }, 1))),
    );
    expect(won).toHaveLength(1);
    expect(await s.approvals.get(raced)).toMatchObject({ status: 'pending', revision: 2 });
  });

  it('the requester under another kind claim is still the requester: approving is approval.self_approval_forbidden', async () => {
    const input = needing(1);
    await s.approvals.create(input);
    const err = await aipError(decideAs(input, { id: PRINCIPAL.id, kind: 'user' }, 1));
    expect(err.code).toBe('approval.self_approval_forbidden');
  });

  it('an approval recorded before the identity key (as `<kind>#<id>`) still counts for the subject under any kind', async () => {
    const input = needing(3);
    await s.approvals.create(input);
    const first = await decideAs(input, { id: 'old-key', kind: 'user' }, 1);
    // Rewrite the key as records written before the identity key hold it.
    await s.table.client.send(
      new PutCommand({
        TableName: s.table.tableName,
        Item: { ...(await s.rawItem(keys.approval(input.tenant_id, input.approval_id))), approver_keys: ['user#old-key'] },
      }),
    );
    expect((await aipError(decideAs(input, { id: 'old-key', kind: 'agent' }, first.revision))).code).toBe('approval.already_approved_by_caller');
    expect((await decideAs(input, approver('new-key'), first.revision)).status).toBe('pending');
  });

  it('a denial after a partial approval ends it denied, keeping both decisions; nothing decides it afterwards', async () => {
    const input = needing(2);
    await s.approvals.create(input);
    await decideAs(input, approver(1), 1, { decision_id: 'yes' });
    const denied = await decideAs(input, approver(2), 2, { decision_id: 'no', decision: 'denied', reason: 'too large' });
    expect(denied).toMatchObject({ status: 'denied', revision: 3, decision: { decision_id: 'no', decision: 'denied', reason: 'too large' } });
    expect(denied.decisions.map((d) => d.decision)).toEqual(['approved', 'denied']);
    expect((await aipError(decideAs(input, approver(3), 3))).code).toBe('approval.already_decided');
  });

  it('an approver may deny after approving (any denial ends it)', async () => {
    const input = needing(2);
    await s.approvals.create(input);
    await decideAs(input, approver('x'), 1);
    expect((await decideAs(input, approver('x'), 2, { decision: 'denied' })).status).toBe('denied');
  });

  it('a record that miscounts the approvals so far (stale or forged) loses the write: approval.state_conflict, nothing changes', async () => {
    const input = needing(3);
    await s.approvals.create(input);
    await decideAs(input, approver(1), 1);
    const held = (await s.approvals.get(input)) as ApprovalRecord;
    // Claims one approval more than the item holds (so the next one would complete it): the count is checked in the write.
    const forged: ApprovalRecord = { ...held, decisions: [...held.decisions, { ...held.decisions[0]!, decision_id: 'ghost', decided_by: approver('ghost') }] };
    expect((await aipError(decideAs(input, approver(2), 2, { current: forged }))).code).toBe('approval.state_conflict');
    // Claims a lower threshold than the item's (2 instead of 3): the threshold is checked in the write too.
    const cheaper: ApprovalRecord = { ...held, policy: { ...held.policy, min_approvals: 2 } };
    expect((await aipError(decideAs(input, approver(2), 2, { current: cheaper }))).code).toBe('approval.state_conflict');
    expect(await s.approvals.get(input)).toEqual(held);
  });

  it(`${RACERS} distinct approvers race at the same revision: exactly one write succeeds, the rest lose with approval.state_conflict`, async () => {
    const input = needing(3);
    await s.approvals.create(input);
    const { won, lost } = split(await Promise.allSettled(Array.from({ length: RACERS }, (_, i) => decideAs(input, approver(`r${i}`), 1))));
    expect(won).toHaveLength(1);
    expect(won[0]).toMatchObject({ status: 'pending', revision: 2 });
    for (const e of lost)
      expect(e).toMatchObject({ code: 'approval.state_conflict', details: { current_status: 'pending', current_revision: 2, approvals: 1 } });
    expect((await s.approvals.get(input))?.decisions).toHaveLength(1);
  });

  it(`${RACERS} distinct approvers, each deciding again on a lost race: exactly min_approvals writes succeed and the last one approves`, async () => {
    const input = needing(3);
    await s.approvals.create(input);
    type Outcome = { ok: ApprovalRecord } | { err: unknown };
    const outcomes = await Promise.all(
      Array.from({ length: RACERS }, async (_, i): Promise<Outcome> => {
        for (;;) {
          const held = (await s.approvals.get(input)) as ApprovalRecord;
          try {
            return { ok: await decideAs(input, approver(`q${i}`), held.revision, { current: held }) };
          } catch (err) {
            if (isAipError(err, 'approval.state_conflict')) continue;
            return { err };
          }
        }
      }),
    );
    const won = outcomes.flatMap((o) => ('ok' in o ? [o.ok] : []));
    expect(won).toHaveLength(3);
    expect(won.map((r) => r.status).sort()).toEqual(['approved', 'pending', 'pending']);
    for (const o of outcomes)
      if ('err' in o) expect(o.err).toMatchObject({ code: 'approval.already_decided', details: { current_status: 'approved', current_revision: 4 } });
    const final = (await s.approvals.get(input)) as ApprovalRecord;
    expect(final).toMatchObject({ status: 'approved', revision: 4 });
    expect(new Set(final.decisions.map((d) => d.decided_by.id)).size).toBe(3);
    expect(final.decision?.decision_id).toBe(final.decisions[2]?.decision_id);
  });

  it(`the same approver ${RACERS} times at once: one approval counts`, async () => {
    const input = needing(2);
    await s.approvals.create(input);
    const { won } = split(await Promise.allSettled(Array.from({ length: RACERS }, () => decideAs(input, approver('same'), 1))));
    expect(won).toHaveLength(1);
    const again = await aipError(decideAs(input, approver('same'), 2));
    expect(again.code).toBe('approval.already_approved_by_caller');
  });

  it("expiry follows the approval's own expires_at (the policy's lifetime): a partial approval expires with its decisions kept", async () => {
    const short = needing(2, { expires_at: new Date(Date.parse(s.clock.iso()) + 60_000).toISOString() });
    const long = needing(2, { expires_at: new Date(Date.parse(s.clock.iso()) + 7_200_000).toISOString() });
    await s.approvals.create({ ...short, policy: { ...short.policy, ttl_ms: 60_000 } });
    await s.approvals.create({ ...long, policy: { ...long.policy, ttl_ms: 7_200_000 } });
    expect((await s.approvals.get(short))?.policy.ttl_ms).toBe(60_000);
    await decideAs(short, approver(1), 1);
    await decideAs(long, approver(1), 1);
    s.clock.advance(60_000);
    expect((await aipError(decideAs(short, approver(2), 2))).code).toBe('approval.expired');
    const expired = await s.approvals.expire({ tenant_id: TENANT, approval_id: short.approval_id, expected_revision: 2 });
    expect(expired).toMatchObject({ status: 'expired', revision: 3 });
    expect(expired.decisions).toHaveLength(1);
    // The other policy's approval is still open and completes.
    expect((await decideAs(long, approver(2), 2)).status).toBe('approved');
  });

  it('rejects min_approvals or ttl_ms out of range', async () => {
    expect((await aipError(s.approvals.create(needing(0)))).code).toBe('approval.invalid_record');
    expect((await aipError(s.approvals.create(needing(11)))).code).toBe('approval.invalid_record');
    const input = approvalInput();
    expect((await aipError(s.approvals.create({ ...input, policy: { ...input.policy, ttl_ms: 10 } }))).code).toBe('approval.invalid_record');
  });

  it('an approval stores no attribute its key holds, and reads them from the key (the legacy record below stores them)', async () => {
    const input = approvalInput({ tenant_id: uid('tenant-lean') });
    const created = await s.approvals.create(input);
    const raw = (await s.rawItem(keys.approval(input.tenant_id, input.approval_id))) as Record<string, unknown>;
    for (const attribute of ['tenant_id', 'approval_id', 'item_type']) expect(raw).not.toHaveProperty(attribute);
    expect(await s.approvals.get(input)).toEqual(created);
    expect(created).toMatchObject({ tenant_id: input.tenant_id, approval_id: input.approval_id });
    expect((await s.approvals.listPending({ tenant_id: input.tenant_id })).items).toEqual([created]);
  });

  it('a record written before min approvals reads as one approval needed, with its one decision', async () => {
    const approval_id = uid('legacy');
    const now = s.clock.iso();
    const legacy = {
      tenant_id: TENANT,
      approval_id,
      action_id: uid('act'),
      capability_id: 'payments.transfer',
      requested_by: PRINCIPAL,
      policy: { policy_id: 'pol-old', policy_hash: sha256Hex('old'), approver_scopes: ['payments:approve'], allow_self_approval: false },
      status: 'pending',
      expires_at: new Date(Date.parse(now) + 3600_000).toISOString(),
      created_at: now,
      updated_at: now,
      revision: 1,
    };
    await s.table.client.send(
      new PutCommand({ TableName: s.table.tableName, Item: { ...keys.approval(TENANT, approval_id), item_type: 'approval', ...legacy } }),
    );
    expect(await s.approvals.get({ tenant_id: TENANT, approval_id })).toMatchObject({ policy: { min_approvals: 1 }, decisions: [] });
    const approved = await s.approvals.decide({
      tenant_id: TENANT,
      approval_id,
      expected_revision: 1,
      decision_id: 'd-old',
      decided_by: APPROVER,
      decision: 'approved',
    });
    expect(approved).toMatchObject({ status: 'approved', decision: { decision_id: 'd-old' }, decisions: [{ decision_id: 'd-old' }] });
  });
});

describe('withdraw: the runtime closes an approval whose action can no longer succeed', () => {
  it('pending → withdrawn with the typed reason, out of both indexes; a stale revision or a decided approval is refused', async () => {
    const tenant = uid('tenant-wd');
    const input = approvalInput({ tenant_id: tenant });
    await s.approvals.create(input);
    expect((await aipError(s.approvals.withdraw({ ...input, expected_revision: 2, reason: 'plan_claimed' }))).code).toBe('approval.state_conflict');
    expect((await aipError(s.approvals.withdraw({ ...input, expected_revision: 1, reason: 'bogus' as never }))).code).toBe('approval.invalid_record');
    const out = await s.approvals.withdraw({ ...input, expected_revision: 1, reason: 'plan_claimed', details: { plan_status: 'committing' } });
    expect(out).toMatchObject({
      status: 'withdrawn',
      revision: 2,
      withdrawal: { reason: 'plan_claimed', withdrawn_at: s.clock.iso(), details: { plan_status: 'committing' } },
    });
    expect(await s.approvals.get(input)).toEqual(out);
    const raw = await s.rawItem(keys.approval(tenant, input.approval_id));
    expect(raw?.GSI3PK).toBeUndefined();
    expect(raw?.GSI4PK).toBeUndefined();
    expect((await s.approvals.listPending({ tenant_id: tenant })).items).toEqual([]);
    expect((await aipError(s.approvals.withdraw({ ...input, expected_revision: 2, reason: 'action_ended' }))).code).toBe('approval.already_decided');
    expect((await aipError(decideAs(input, approver('late'), 2))).code).toBe('approval.already_decided');
  });

  it(`${RACERS} racers at one revision, withdrawing and deciding: exactly one write wins and the approval ends in its state`, async () => {
    const input = approvalInput();
    await s.approvals.create(input);
    const { won } = split(
      await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          i % 2 === 0 ? s.approvals.withdraw({ ...input, expected_revision: 1, reason: 'action_cancelled' }) : decideAs(input, approver(`w${i}`), 1),
        ),
      ),
    );
    expect(won).toHaveLength(1);
    expect((await s.approvals.get(input))?.status).toBe(won[0]?.status);
  });
});

describe('subject', () => {
  it("stores a compensation target's owner with the approval", async () => {
    const subject = { compensation_for: { action_id: uid('orig'), transaction_id: uid('txn'), owner: { id: 'alice', kind: 'user' as const } } };
    const input = approvalInput({ subject });
    expect((await s.approvals.create(input)).subject).toEqual(subject);
    expect((await s.approvals.get(input))?.subject).toEqual(subject);
    expect((await s.approvals.listPending({ tenant_id: TENANT, limit: 100 })).items.find((a) => a.approval_id === input.approval_id)?.subject).toEqual(subject);
  });

  it("stores a resolution proposal with the provider's answer at proposal time", async () => {
    const subject = {
      resolution: { effect: 'committed' as const, reason: 'charge found', transaction_id: uid('txn') },
      provider_check: {
        verdict: 'agrees' as const,
        answer: { obtained: true, looked_up_at: s.clock.iso(), capability_id: 'payments.charge', effect: 'committed', evidence: { status: 'succeeded' } },
      },
    };
    const input = approvalInput({ subject });
    expect((await s.approvals.create(input)).subject).toEqual(subject);
    expect((await s.approvals.get(input))?.subject).toEqual(subject);
  });

  it('rejects a malformed subject and writes nothing', async () => {
    const resolution = { effect: 'committed', reason: 'charge found', transaction_id: 'txn-1' };
    const answer = { obtained: false, looked_up_at: '2030-01-01T00:00:00.000Z', capability_id: 'c', reason: 'provider_unavailable' };
    const bad = [
      // A provider check without a resolution, with an unknown verdict, an answer that is not one, or extra fields.
      { provider_check: { verdict: 'agrees', answer } },
      { resolution, provider_check: { verdict: 'probably', answer } },
      { resolution, provider_check: { verdict: 'no_answer', answer: { looked_up_at: 'x' } } },
      { resolution, provider_check: { verdict: 'no_answer', answer: [] } },
      { resolution, provider_check: { verdict: 'no_answer', answer, note: 'x' } },
      { compensation_for: { action_id: 'has space', owner: { id: 'alice', kind: 'user' } } },
      { compensation_for: { action_id: 'a1', owner: { id: 'alice' } } },
      { compensation_for: { action_id: 'a1', owner: { id: 'alice', kind: 'user' }, secret: 'x' } },
      { other: true },
    ];
    for (const subject of bad) {
      const input = approvalInput({ subject: subject as unknown as CreateApprovalInput['subject'] });
      expect((await aipError(s.approvals.create(input))).code).toBe('approval.invalid_record');
      expect(await s.approvals.get(input)).toBeUndefined();
    }
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
    await s.approvals.decide({
      tenant_id: tenant,
      approval_id: decided?.approval_id as string,
      expected_revision: 1,
      decision_id: 'd',
      decided_by: APPROVER,
      decision: 'denied',
    });
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
