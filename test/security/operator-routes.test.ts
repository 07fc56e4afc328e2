/**
 * "Operators can act, with evidence", over real HTTP on the local
 * stack: the operator routes (functions/http/operator.ts →
 * lib/runtime/operator.ts).
 *
 * - `GET /v1/operator/overview`: each list's size and the age of its oldest
 *   item; only for operators.
 * - `POST /v1/operator/transactions/{id}/reconcile`: reconcile now. The attempt
 *   bound is reset once, an escalated record is un-escalated, a receipt names
 *   the operator and the reason, the reconcile consumer runs it.
 * - `POST /v1/operator/transactions/{id}/resolve`: an escalated record settles
 *   `reconciled` with the operator's evidence in its receipt (and the result's
 *   digest), the original request's uncertain reservation is completed; with
 *   four eyes it waits for a second operator's approval. The runtime asks the
 *   provider first and records its answer beside the operator's; a resolution
 *   the provider contradicts is refused (nothing written) unless overridden
 *   with a reason, on proposal and again on approval.
 * - Escalation receipts record the durable status (`outcome_unknown`), never
 *   the wire's `requires_human`.
 *
 * Escalated records are made the way they happen: a charge whose answer is
 * lost after the provider committed it, and whose lookups fail, reconciled
 * round by round (the runtime clock moved to each due time) until the bound
 * escalates it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FaultRuleInput } from '../../dev/payments-simulator/schemas.js';
import { DEFAULT_LOCAL_APPROVAL_POLICIES } from '../../dev/local/start.js';
import { PAYMENTS_PROVIDER } from '../../lib/connectors/reference/payments.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { sha256Hex, type Receipt } from '../../packages/connector-sdk/src/protocol/index.js';
import { resultDigestText } from '../../packages/connector-sdk/src/protocol/receipt-chain.js';
import { verifyReceiptChain } from '../../lib/runtime/receipts.js';
import { charge, executed, planned, reconcileUntil, refused, RW, securityStack, uid, writesNothing, type Answer, type SecurityStack } from './support.js';

const T = 'demo';
/** A tenant of its own for the overview, so the other tests' records do not count. */
const OVW = 'ovw';
const OPERATOR = [...RW, 'aip:operator'];

/** The provider commits the charge, and its answer is lost (the gateway times out). */
const ANSWER_LOST: FaultRuleInput = { match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 };
/** Lookups by idempotency key fail: no operation is found, none is checkpointed. */
const LOOKUPS_FAIL: FaultRuleInput = { match: { method: 'GET', path: '/v1/operations' }, fault: { type: 'error_before_commit', status: 503 }, times: 'always' };
/** Every read of an operation fails (by key and by ID): a checkpointed operation cannot be reconciled either. */
const OPERATION_READS_FAIL: FaultRuleInput = {
  match: { method: 'GET', path: '/v1/operations*' },
  fault: { type: 'error_before_commit', status: 503 },
  times: 'always',
};

interface Txn {
  transaction_id: string;
  status: string;
  provider_operation?: { provider: string; operation_id: string };
  receipts?: Receipt[];
  receipt_count: number;
  receipt_head?: string;
  action_result?: Record<string, unknown>;
  escalated?: { at: string; reason?: string };
  reconcile_attempts?: number;
  earliest_reconcile_at?: string;
}

interface Uncertain {
  /** The original charge: its action ID and idempotency key. */
  readonly id: string;
  readonly key: string;
  readonly amount: number;
  readonly transaction: Txn;
  /** The operation the provider committed (its ledger), which the runtime never saw. */
  readonly operation_id: string;
}

interface Env {
  readonly s: SecurityStack;
  readonly clock: SteppedClock;
}

async function view(e: Env, token: string, transaction_id: string, include = 'result,receipts'): Promise<Txn> {
  const a = await e.s.call(token, 'GET', `/v1/transactions?transaction_id=${encodeURIComponent(transaction_id)}&include=${include}`);
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  return a.body as unknown as Txn;
}

let charges = 0;

/** A charge whose answer is lost after the provider committed it: outcome_unknown; `lookups: false`, nor is its operation found. */
async function uncertain(e: Env, token: string, lookups: boolean): Promise<Uncertain> {
  const key = uid('k');
  const amount = 1_000 + ++charges;
  e.s.stack.simulator.setFaults([ANSWER_LOST, ...(lookups ? [] : [LOOKUPS_FAIL])]);
  try {
    const out = await executed(e.s, token, { idempotency_key: key, input: { amount, currency: 'eur', customer: 'cus_sec' } });
    expect(out.transaction.status).toBe('outcome_unknown');
    const committed = e.s.stack.simulator.ledger().at(-1) as { operation_id: string };
    return { id: out.id, key, amount, transaction: out.transaction as Txn, operation_id: committed.operation_id };
  } finally {
    e.s.stack.simulator.setFaults([]);
  }
}

/** Reconciles round by round (clock at each due time) while the provider cannot answer, until the bound escalates the record. */
async function escalate(e: Env, tenant_id: string, token: string, transaction_id: string, faults: FaultRuleInput[]): Promise<Txn> {
  e.s.stack.simulator.setFaults(faults);
  try {
    await reconcileUntil(e.s, e.clock, { token, tenant_id, transaction_id });
  } finally {
    e.s.stack.simulator.setFaults([]);
  }
  const escalated = await view(e, token, transaction_id);
  expect(escalated.status).toBe('requires_human');
  return escalated;
}

/** An escalated charge; `checkpointed`: its operation was found (and checkpointed) before the provider stopped answering. */
async function escalatedCharge(e: Env, tenant_id: string, token: string, checkpointed = false): Promise<Uncertain & { escalated: Txn }> {
  const u = await uncertain(e, token, checkpointed);
  if (checkpointed) expect(u.transaction.provider_operation?.operation_id).toBe(u.operation_id);
  else expect(u.transaction.provider_operation).toBeUndefined();
  return { ...u, escalated: await escalate(e, tenant_id, token, u.transaction.transaction_id, checkpointed ? [OPERATION_READS_FAIL] : [LOOKUPS_FAIL]) };
}

/** The chain verifies against the view's anchor (and its result, when the view carries one). */
function expectChainValid(t: Txn): void {
  expect(t.receipts).toBeDefined();
  expect(
    verifyReceiptChain(t.receipts ?? [], {
      transaction_id: t.transaction_id,
      expected_count: t.receipt_count,
      ...(t.receipt_head !== undefined ? { expected_head: t.receipt_head } : {}),
      ...(t.action_result !== undefined ? { result: t.action_result } : {}),
    }),
  ).toEqual({ valid: true, count: t.receipt_count, head: t.receipt_head });
}

/** What an operator found: the operation at the provider the payments connector reports (`PAYMENTS_PROVIDER`), a reason, a ticket. */
const resolution = (operation_id: string, extra: Record<string, unknown> = {}) => ({
  effect: 'committed',
  provider_operation: { provider: PAYMENTS_PROVIDER, operation_id },
  reason: 'charge found in the provider dashboard',
  attachments: [{ uri: 'https://tickets.example/T-1', description: 'dashboard export attached to the ticket' }],
  ...extra,
});

// ---------------------------------------------------------------------------

const main: Env = { s: undefined as unknown as SecurityStack, clock: new SteppedClock() };
let alice: string;
let ops: string;
let ovwAlice: string;
let ovwOps: string;
let ovwApprover: string;

beforeAll(async () => {
  // Commits need one approval (a pending approval for the overview); executes do not.
  (main as { s: SecurityStack }).s = await securityStack('ops-routes', T, {
    clock: main.clock,
    tenants: [T, OVW],
    approvalPolicies: DEFAULT_LOCAL_APPROVAL_POLICIES,
  });
  const { s } = main;
  [alice, ops, ovwAlice, ovwOps, ovwApprover] = await Promise.all([
    s.token('alice', RW),
    s.token('ops', OPERATOR),
    s.token('alice', RW, [OVW]),
    s.token('ops', OPERATOR, [OVW]),
    s.token('approver', ['aip:approve', 'aip:actions:read'], [OVW]),
  ]);
});
afterAll(async () => main.s?.stop());

describe('GET /v1/operator/overview', () => {
  it('counts each list and gives the age of its oldest item; a non-operator is refused', async () => {
    const { s } = main;
    // One of each: an escalated record, an outcome_unknown one (after it, so younger), a pending approval.
    const esc = await escalatedCharge(main, OVW, ovwAlice);
    const pending = await uncertain(main, ovwAlice, true);
    const plan = await planned(s, ovwAlice);
    const commitId = uid('commit');
    const commit = await s.call(ovwAlice, 'POST', '/v1/actions', charge(commitId, { mode: 'commit', plan_id: plan.plan_id }));
    expect((commit.body.action_result as { status: string }).status, JSON.stringify(commit.body)).toBe('requires_human');

    // What the lists say about each item: when it entered its state.
    const listed = async (v: string) => (await s.call(ovwOps, 'GET', `/v1/operator/transactions?view=${v}`)).body.items as Record<string, unknown>[];
    const [unknownItems, humanItems, approvalItems] = await Promise.all([listed('outcome_unknown'), listed('requires_human'), listed('pending_approvals')]);
    expect(unknownItems.map((i) => (i.transaction as Txn).transaction_id)).toEqual([pending.transaction.transaction_id]);
    expect(humanItems.map((i) => (i.transaction as Txn).transaction_id)).toEqual([esc.transaction.transaction_id]);
    expect(approvalItems).toHaveLength(1);
    const approval = (approvalItems[0] as { approval: { approval_id: string; action_id: string; created_at: string } }).approval;
    expect(approval.action_id).toBe(commitId);

    // Ten minutes later (the approval lives an hour).
    main.clock.advance(600_000);
    const overview = await s.call(ovwOps, 'GET', '/v1/operator/overview');
    expect(overview.status, JSON.stringify(overview.body)).toBe(200);
    type Entry = { view: string; count: number; more: boolean; oldest_at?: string; oldest_age_seconds?: number };
    const views: Record<string, Entry> = Object.fromEntries((overview.body.views as Entry[]).map((v) => [v.view, v]));
    expect(Object.keys(views).sort()).toEqual(['outcome_unknown', 'pending_approvals', 'reconciling', 'requires_human', 'stalled_committing']);
    expect(views.outcome_unknown).toMatchObject({ count: 1, more: false, oldest_at: unknownItems[0]?.updated_at });
    expect(views.requires_human).toMatchObject({ count: 1, more: false, oldest_at: humanItems[0]?.updated_at });
    expect(views.pending_approvals).toMatchObject({ count: 1, more: false, oldest_at: approval.created_at });
    expect(views.reconciling).toEqual({ view: 'reconciling', count: 0, more: false });
    expect(views.stalled_committing).toEqual({ view: 'stalled_committing', count: 0, more: false });
    // Each age counts from its item's own time, on the runtime's clock (moved ten minutes on).
    for (const v of ['outcome_unknown', 'requires_human', 'pending_approvals']) {
      const entry = views[v] as { oldest_at: string; oldest_age_seconds: number };
      expect(entry.oldest_age_seconds, v).toBeGreaterThanOrEqual(600);
    }
    // Older item, greater age: the escalated record entered its state before the outcome_unknown one re-entered it.
    expect(Date.parse(views.requires_human?.oldest_at as string)).toBeLessThan(Date.parse(views.outcome_unknown?.oldest_at as string));
    expect(views.requires_human?.oldest_age_seconds).toBeGreaterThanOrEqual(views.outcome_unknown?.oldest_age_seconds as number);

    // A member of the tenant without the operator scope: refused at the edge, nothing written.
    await writesNothing(s, async () => {
      await refused(s.call(ovwAlice, 'GET', '/v1/operator/overview'), 403, 'auth.insufficient_scope');
      await refused(s.call(ovwApprover, 'GET', '/v1/operator/overview'), 403, 'auth.insufficient_scope');
    });
  });
});

describe('POST /v1/operator/transactions/{id}/reconcile', () => {
  it('on an escalated record: 202, the bound reset and un-escalated, a receipt naming the operator, then reconciled by the consumer', async () => {
    const { s } = main;
    const esc = await escalatedCharge(main, T, alice);
    const id = esc.transaction.transaction_id;
    expect(esc.escalated.escalated).toBeDefined();
    const attemptsBefore = esc.escalated.reconcile_attempts as number;
    expect(attemptsBefore).toBeGreaterThan(0);

    // The provider answers again; the consumer's run is awaited through the stack, never by sleeping.
    const consumed = s.stack.handled('reconcile', (m) => m.transaction_id === id);
    const reason = 'provider incident INC-42 closed; lookups answer again';
    const requested = await s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/reconcile`, { reason });
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    const now = (requested.body as { transaction: Txn }).transaction;
    expect(now.status).toBe('outcome_unknown');
    expect(now.escalated).toBeUndefined();
    expect(now.reconcile_attempts).toBeUndefined(); // 0: absent from the view
    expect(await consumed).toMatchObject({ kind: 'reconcile', tenant_id: T, transaction_id: id, reason: 'operator' });

    const after = await view(main, ops, id);
    expect(after.status).toBe('reconciled');
    expect(after.provider_operation?.operation_id).toBe(esc.operation_id);
    const receipts = after.receipts as Receipt[];
    const request = receipts.filter((r) => r.event === 'transaction.reconcile_requested');
    expect(request).toHaveLength(1);
    expect(request[0]).toMatchObject({
      status: 'outcome_unknown',
      actor: { id: 'ops', kind: 'user' },
      evidence: { reason, requested_by: { id: 'ops', kind: 'user' }, previous_attempts: attemptsBefore, was_escalated: true },
    });
    // What followed the request: the consumer's reconciliation, as the runtime.
    const later = receipts.slice((request[0] as Receipt).seq + 1);
    expect(later.map((r) => r.event)).toContain('transaction.reconcile_started');
    expect(later.at(-1)).toMatchObject({ status: 'reconciled', actor: { kind: 'service' } });
    expectChainValid(after);
  });

  it('on a committed transaction: 409 runtime.reconcile_not_outcome_unknown, nothing written', async () => {
    const { s } = main;
    const done = await executed(s, alice);
    expect(done.transaction.status).toBe('committed');
    await writesNothing(s, async () => {
      const a = await refused(
        s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(done.transaction.transaction_id)}/reconcile`, { reason: 'just checking' }),
        409,
        'runtime.reconcile_not_outcome_unknown',
      );
      expect(a.body.details).toMatchObject({ transaction_id: done.transaction.transaction_id, status: 'committed' });
    });
  });
});

describe('POST /v1/operator/transactions/{id}/resolve', () => {
  it("settles an escalated record reconciled with the operator's evidence; the original request then replays", async () => {
    const { s } = main;
    const esc = await escalatedCharge(main, T, alice);
    const id = esc.transaction.transaction_id;
    const body = resolution(esc.operation_id);

    const resolved = await s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`, body);
    expect(resolved.status, JSON.stringify(resolved.body)).toBe(200);
    expect((resolved.body as { transaction: Txn }).transaction).toMatchObject({
      transaction_id: id,
      status: 'reconciled',
      provider_operation: body.provider_operation,
    });

    const after = await view(main, ops, id);
    expect(after.status).toBe('reconciled');
    const last = (after.receipts as Receipt[]).at(-1) as Receipt;
    expect(last).toMatchObject({
      event: 'transaction.resolved',
      status: 'reconciled',
      actor: { id: 'ops', kind: 'user' },
      evidence: {
        resolution: body,
        resolved_by: { id: 'ops', kind: 'user' },
        // The runtime asked the provider first (by the original request's idempotency key: nothing was checkpointed).
        provider_answer: {
          obtained: true,
          capability_id: 'payments.charge',
          effect: 'committed',
          provider_operation: { provider: PAYMENTS_PROVIDER, operation_id: esc.operation_id },
        },
        provider_verdict: 'agrees',
      },
    });
    expect(after.action_result).toMatchObject({
      status: 'completed',
      metadata: {
        reconciliation: {
          original_commit_completed: true,
          source: 'operator_resolution',
          resolved_by: { id: 'ops', kind: 'user' },
          provider_verdict: 'agrees',
          provider_operation: body.provider_operation,
        },
      },
    });
    expect(last.result_digest).toBe(sha256Hex(resultDigestText(after.action_result)));
    expectChainValid(after);

    // The original charge, resubmitted with the same idempotency key: its uncertain reservation was completed, so it replays.
    const again = await s.call(
      alice,
      'POST',
      '/v1/actions',
      charge(uid('again'), { mode: 'execute' }, { idempotency_key: esc.key, input: { amount: esc.amount, currency: 'eur', customer: 'cus_sec' } }),
    );
    expect(again.status, JSON.stringify(again.body)).toBeLessThan(300);
    expect(again.body.action_result).toMatchObject({
      action_id: esc.id,
      replayed: true,
      metadata: { transaction_status: 'reconciled', reconciled_by: 'operator:ops', reconciliation: { source: 'operator_resolution' } },
    });
  });

  it('refuses, writing nothing: a record that is not escalated (409), a body without a reason (400)', async () => {
    const { s } = main;
    const pending = await uncertain(main, alice, true);
    const done = await executed(s, alice);
    const esc = await escalatedCharge(main, T, alice);
    const { reason: _reason, ...noReason } = resolution(esc.operation_id);
    await writesNothing(s, async () => {
      for (const txn of [pending.transaction, done.transaction]) {
        const a = await refused(
          s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(txn.transaction_id)}/resolve`, resolution(pending.operation_id)),
          409,
          'runtime.resolve_not_escalated',
        );
        expect(a.body.details).toMatchObject({ transaction_id: txn.transaction_id, escalated: false });
      }
      await refused(
        s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(esc.transaction.transaction_id)}/resolve`, noReason),
        400,
        'request.invalid',
      );
      await refused(
        s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(esc.transaction.transaction_id)}/resolve`, {
          ...resolution(esc.operation_id),
          reason: '',
        }),
        400,
        'request.invalid',
      );
    });
    expect((await view(main, ops, esc.transaction.transaction_id)).status).toBe('requires_human');
  });

  it('a provider operation other than the checkpointed one: 409 transaction.provider_operation_conflict, nothing written', async () => {
    const { s } = main;
    const esc = await escalatedCharge(main, T, alice, true);
    const id = esc.transaction.transaction_id;
    await writesNothing(s, async () => {
      const a = await refused(
        s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`, resolution('op_not_the_checkpointed_one')),
        409,
        'transaction.provider_operation_conflict',
      );
      // The same operation ID under another provider name is another operation.
      await refused(
        s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`, {
          ...resolution(esc.operation_id),
          provider_operation: { provider: 'payments', operation_id: esc.operation_id },
        }),
        409,
        'transaction.provider_operation_conflict',
      );
      expect(a.body.details).toMatchObject({ current_provider_operation: { provider: PAYMENTS_PROVIDER, operation_id: esc.operation_id } });
    });
    // The checkpointed one itself (provider and ID; the operator need not know the provider's request ID) is accepted,
    // and the checkpoint stays as it was recorded.
    const checkpointed = esc.escalated.provider_operation;
    expect(checkpointed).toMatchObject({ provider: PAYMENTS_PROVIDER, operation_id: esc.operation_id, request_id: expect.any(String) });
    const ok = await s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`, resolution(esc.operation_id));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const after = await view(main, ops, id);
    expect(after).toMatchObject({ status: 'reconciled', provider_operation: checkpointed });
    expectChainValid(after);
  });

  it('a resolution the provider contradicts: 409 operator.resolution_contradicts_provider naming both, nothing written; overridden with a reason, it applies with both answers in the receipt', async () => {
    const { s } = main;
    const esc = await escalatedCharge(main, T, alice);
    const id = esc.transaction.transaction_id;
    const path = `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`;
    const claim = { effect: 'not_committed', reason: 'customer says the charge never went through' };
    await writesNothing(s, async () => {
      const a = await refused(s.call(ops, 'POST', path, claim), 409, 'operator.resolution_contradicts_provider');
      expect(a.body.details).toMatchObject({
        transaction_id: id,
        contradicted: ['effect'],
        resolution: { effect: 'not_committed' },
        provider_answer: { effect: 'committed', provider_operation: { provider: PAYMENTS_PROVIDER, operation_id: esc.operation_id } },
      });
      // Naming another operation than the one the provider found is contradicted too.
      const b = await refused(
        s.call(ops, 'POST', path, { ...resolution('op_somewhere_else'), reason: 'wrong operation' }),
        409,
        'operator.resolution_contradicts_provider',
      );
      expect(b.body.details).toMatchObject({ contradicted: ['provider_operation'] });
      // An override without a reason is not an override.
      await refused(s.call(ops, 'POST', path, { ...claim, provider_override: { reason: '' } }), 400, 'request.invalid');
    });
    expect((await view(main, ops, id)).status).toBe('requires_human');

    const override = { reason: 'the provider reversed it by hand (INC-77); its ledger lags' };
    const ok = await s.call(ops, 'POST', path, { ...claim, provider_override: override });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const after = await view(main, ops, id);
    expect(after.status).toBe('reconciled');
    expect((after.receipts as Receipt[]).at(-1)).toMatchObject({
      event: 'transaction.resolved',
      evidence: {
        resolution: { ...claim, provider_override: override },
        provider_answer: { obtained: true, effect: 'committed', provider_operation: { operation_id: esc.operation_id } },
        provider_verdict: 'overridden',
      },
    });
    expect(after.action_result).toMatchObject({ metadata: { reconciliation: { original_commit_completed: false, provider_verdict: 'overridden' } } });
    expectChainValid(after);
  });

  it('the provider cannot answer: the resolution applies on the operator’s word and reason, and the receipt says no answer was obtained', async () => {
    const { s } = main;
    const esc = await escalatedCharge(main, T, alice, true);
    const id = esc.transaction.transaction_id;
    s.stack.simulator.setFaults([OPERATION_READS_FAIL]);
    let ok: Answer;
    try {
      ok = await s.call(ops, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`, {
        effect: 'not_committed',
        reason: 'provider down; the customer’s bank statement shows no debit',
      });
    } finally {
      s.stack.simulator.setFaults([]);
    }
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const after = await view(main, ops, id);
    expect(after.status).toBe('reconciled');
    const last = (after.receipts as Receipt[]).at(-1) as Receipt;
    expect(last.evidence).toMatchObject({
      provider_answer: { obtained: false, capability_id: 'payments.charge', reason: 'provider_unavailable', code: expect.any(String) },
      provider_verdict: 'no_answer',
    });
    expect((last.evidence as { provider_answer: Record<string, unknown> }).provider_answer).not.toHaveProperty('effect');
    expectChainValid(after);
  });
});

describe('escalation receipts', () => {
  it('record the durable status outcome_unknown with escalated: true, while the view says requires_human', async () => {
    const esc = await escalatedCharge(main, T, alice);
    const t = esc.escalated;
    expect(t.status).toBe('requires_human');
    expect(t.escalated).toBeDefined();
    const receipts = t.receipts as Receipt[];
    const escalation = receipts.filter((r) => r.event === 'transaction.escalated');
    expect(escalation).toHaveLength(1);
    expect(escalation[0]).toMatchObject({ status: 'outcome_unknown', evidence: { escalated: true } });
    expect(receipts.map((r) => r.status)).not.toContain('requires_human');
    expectChainValid(t);
  });
});

describe('four eyes (resolution.four_eyes)', () => {
  const fe: Env = { s: undefined as unknown as SecurityStack, clock: new SteppedClock() };
  let owner: string;
  let first: string;
  let second: string;

  beforeAll(async () => {
    (fe as { s: SecurityStack }).s = await securityStack('ops-4eyes', T, { clock: fe.clock, runtimeSettings: { resolution: { four_eyes: true } } });
    [owner, first, second] = await Promise.all([fe.s.token('alice', RW), fe.s.token('ops-1', OPERATOR), fe.s.token('ops-2', OPERATOR)]);
  });
  afterAll(async () => fe.s?.stop());

  it("a resolution waits for a second operator: the proposer cannot approve it, another operator's approval applies it", async () => {
    const { s } = fe;
    const esc = await escalatedCharge(fe, T, owner);
    const id = esc.transaction.transaction_id;
    const body = resolution(esc.operation_id, { reason: 'charge found; second pair of eyes please' });

    const proposed = await s.call(first, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`, body);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(202);
    const { approval, status } = proposed.body as {
      approval: { approval_id: string; status: string; requested_by: unknown; subject: unknown };
      status: string;
    };
    expect(status).toBe('requires_human');
    expect(approval).toMatchObject({
      status: 'pending',
      requested_by: { id: 'ops-1', kind: 'user' },
      subject: { resolution: { ...body, transaction_id: id } },
    });
    expect((await view(fe, first, id)).status).toBe('requires_human');
    // What the second operator sees before deciding: the proposal with the provider's answer when it was proposed.
    const shown = await s.call(second, 'GET', `/v1/approvals/${encodeURIComponent(approval.approval_id)}`);
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    const atProposal = {
      verdict: 'agrees',
      answer: { obtained: true, effect: 'committed', provider_operation: { operation_id: esc.operation_id } },
    };
    expect(shown.body).toMatchObject({
      subject: { provider_check: atProposal },
      facts: {
        mode: 'resolve',
        resolution: { proposal: { ...body, transaction_id: id }, transaction_status: 'outcome_unknown', provider_check_at_proposal: atProposal },
      },
    });
    // Proposed again: the same approval, nothing new.
    await writesNothing(s, async () => {
      const again = await s.call(first, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`, body);
      expect(again.status).toBe(202);
      expect((again.body as { approval: { approval_id: string } }).approval.approval_id).toBe(approval.approval_id);
    });

    const decide = (token: string) =>
      s.call(token, 'POST', `/v1/approvals/${encodeURIComponent(approval.approval_id)}/decision`, { decision: 'approve', reason: 'checked the dashboard too' });
    await writesNothing(s, async () => {
      await refused(decide(first), 403, 'runtime.self_approval_forbidden');
    });
    expect((await view(fe, first, id)).status).toBe('requires_human');

    const approved: Answer = await decide(second);
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body.approval).toMatchObject({ status: 'approved' });

    const after = await view(fe, second, id);
    expect(after.status).toBe('reconciled');
    const last = (after.receipts as Receipt[]).at(-1) as Receipt;
    expect(last).toMatchObject({
      event: 'transaction.resolved',
      status: 'reconciled',
      actor: { id: 'ops-1', kind: 'user' },
      evidence: {
        resolution: body,
        resolved_by: { id: 'ops-1', kind: 'user' },
        approval_id: approval.approval_id,
        approved_by: [{ id: 'ops-2', kind: 'user' }],
        // Asked again when the second operator approved, beside what the proposal carried.
        provider_answer: { obtained: true, effect: 'committed' },
        provider_verdict: 'agrees',
        provider_check_at_proposal: { verdict: 'agrees', answer: { obtained: true, effect: 'committed' } },
      },
    });
    expect(last.result_digest).toBe(sha256Hex(resultDigestText(after.action_result)));
    expectChainValid(after);
  });

  it('a proposal the provider contradicts never reaches an approver; one it contradicts by the time of the decision is refused then, nothing written', async () => {
    const { s } = fe;
    const esc = await escalatedCharge(fe, T, owner, true);
    const id = esc.transaction.transaction_id;
    const path = `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`;
    const claim = { effect: 'not_committed', reason: 'no debit on the statement' };
    await writesNothing(s, async () => {
      await refused(s.call(first, 'POST', path, claim), 409, 'operator.resolution_contradicts_provider');
    });
    // Proposed while the provider cannot answer: it waits for a second operator.
    s.stack.simulator.setFaults([OPERATION_READS_FAIL]);
    let proposed: Answer;
    try {
      proposed = await s.call(first, 'POST', path, claim);
    } finally {
      s.stack.simulator.setFaults([]);
    }
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(202);
    const approval_id = (proposed.body as { approval: { approval_id: string } }).approval.approval_id;
    // The second operator sees that the provider could not answer when it was proposed.
    const noAnswer = { verdict: 'no_answer', answer: { obtained: false, reason: 'provider_unavailable' } };
    const shown = await s.call(second, 'GET', `/v1/approvals/${encodeURIComponent(approval_id)}`);
    expect(shown.body).toMatchObject({ facts: { resolution: { proposal: claim, provider_check_at_proposal: noAnswer } } });
    // The provider answers again, and contradicts it: approving is refused before the decision is written.
    await writesNothing(s, async () => {
      const a = await refused(
        s.call(second, 'POST', `/v1/approvals/${encodeURIComponent(approval_id)}/decision`, { decision: 'approve' }),
        409,
        'operator.resolution_contradicts_provider',
      );
      expect(a.body.details).toMatchObject({ transaction_id: id, provider_answer: { effect: 'committed' }, approval_id, provider_check_at_proposal: noAnswer });
    });
    const still = await s.call(second, 'GET', `/v1/approvals/${encodeURIComponent(approval_id)}`);
    expect(still.body).toMatchObject({ status: 'pending' });
    expect((await view(fe, second, id)).status).toBe('requires_human');
    // Denying it needs no provider: the proposal ends.
    const denied = await s.call(second, 'POST', `/v1/approvals/${encodeURIComponent(approval_id)}/decision`, {
      decision: 'deny',
      reason: 'the provider says committed',
    });
    expect(denied.status, JSON.stringify(denied.body)).toBe(200);
    expect(denied.body.approval).toMatchObject({ status: 'denied' });
    expect((await view(fe, second, id)).status).toBe('requires_human');
  });

  it('a competing proposal is withdrawn (resolution_refused) once another resolution applied: not listed, not decidable, shown withdrawn', async () => {
    const { s } = fe;
    const esc = await escalatedCharge(fe, T, owner);
    const id = esc.transaction.transaction_id;
    const propose = async (token: string, reason: string) => {
      const out = await s.call(token, 'POST', `/v1/operator/transactions/${encodeURIComponent(id)}/resolve`, resolution(esc.operation_id, { reason }));
      expect(out.status, JSON.stringify(out.body)).toBe(202);
      return (out.body as { approval: { approval_id: string } }).approval.approval_id;
    };
    const p1 = await propose(first, 'found it on the dashboard');
    const p2 = await propose(second, 'found it in the ledger export');
    // The facts show the proposal and the escalated transaction.
    const shown = await s.call(first, 'GET', `/v1/approvals/${encodeURIComponent(p2)}`);
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(shown.body).toMatchObject({ status: 'pending', facts: { mode: 'resolve', resolution: { transaction_status: 'outcome_unknown' } } });
    const applied = await s.call(second, 'POST', `/v1/approvals/${encodeURIComponent(p1)}/decision`, { decision: 'approve' });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect((await view(fe, second, id)).status).toBe('reconciled');
    const listed = await s.call(first, 'GET', '/v1/approvals?limit=100');
    expect(((listed.body as { items: { approval_id: string }[] }).items ?? []).map((a) => a.approval_id)).not.toContain(p2);
    await refused(s.call(first, 'POST', `/v1/approvals/${encodeURIComponent(p2)}/decision`, { decision: 'approve' }), 409, 'runtime.approval_withdrawn');
    const after = await s.call(first, 'GET', `/v1/approvals/${encodeURIComponent(p2)}`);
    expect(after.body).toMatchObject({ status: 'withdrawn', withdrawal: { reason: 'resolution_refused', details: { transaction_status: 'reconciled' } } });
  });
});
