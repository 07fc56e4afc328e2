/**
 * End-to-end over real HTTP on loopback: the local stack of `npm start`
 * (dev/local/start.ts) with the real authorizer, HTTP handlers, Runtime,
 * DynamoDB stores, SQS pollers feeding the worker and reconcile handlers,
 * the Scheduler emulator and the payments connector against the payments
 * simulator. The stack reuses the run's DynamoDB Local and fauxqs (global
 * setup) under its own table and queue names; one stack serves this file.
 *
 * Determinism: nothing sleeps. Waits are the API's own long polls
 * (`Prefer: wait`, `?wait=`) and the simulator's events; the Scheduler
 * emulator fires only when `fireDue(at)` is called, and the Runtime's clock
 * ({@link SteppedClock}) is moved to a reconciliation's due time or past a
 * compensation window.
 *
 * Tenants (configuration of this stack):
 * - `demo`: commits and compensations of payments need one approval by a
 *   holder of `aip:approve` (a tenant approval policy);
 * - `acme`: no approval policy.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { startLocalStack, type LocalStack } from '../../dev/local/start.js';
import type { LedgerEntry } from '../../dev/payments-simulator/server.js';
import { reconcileScheduleName } from '../../lib/aws/scheduler/scheduler.js';
import { TERMINAL_STATUSES, type Action, type ActionState, type AipClient } from '../../lib/client/index.js';
import { reconcileActionId } from '../../lib/runtime/reconciliation.js';
import { SteppedClock, clientFor, problemOf } from './support.js';
import { HANG_MS } from '../support/wait.js';

const TENANT_A = 'demo';
const TENANT_B = 'acme';
const READ_WRITE = ['aip:actions:read', 'aip:actions:write'];
/** payments.charge's compensation window in this stack. */
const COMPENSATION_WINDOW_MS = 10 * 60_000;
/** Long-poll window of a submit (`Prefer: wait`; the API's maximum is 25 s). */
const WAIT = 20;
/** How long a test waits for an action to finish, in successive long polls: a bound on a hang (a loaded CI machine is slow). */
const FINISH_MS = HANG_MS;

const clock = new SteppedClock();
const violations: string[] = [];
let stack: LocalStack;
/** Tenant A: alice (requester), the approver, an operator. */
let alice: AipClient;
let approver: AipClient;
let operatorA: AipClient;
/** Tenant B: bob holds every scope there (read, write, operator, approve). */
let bob: AipClient;

beforeAll(async () => {
  stack = await startLocalStack({
    dynamoEndpoint: inject('dynamoEndpoint'),
    sqsEndpoint: inject('sqsEndpoint'),
    namePrefix: `e2e-${randomUUID().slice(0, 8)}`,
    inMemory: true,
    tenants: [TENANT_A, TENANT_B],
    approvalPolicies: [],
    runtimeSettings: {
      tenants: {
        [TENANT_A]: {
          approvals: [
            {
              policy_id: 'demo-payments',
              capabilities: ['payments.charge', 'payments.refund'],
              modes: ['commit', 'compensate'],
              approver_scopes: ['aip:approve'],
            },
          ],
        },
      },
    },
    payments: { compensationWindowMs: COMPENSATION_WINDOW_MS },
    clock,
    schedulerAutoFire: false,
    sweepIntervalMs: 0,
  });
  const mint = (sub: string, tenants: string[], scopes: string[]) => stack.mintToken({ sub, tenants, scopes, ttl: '2h' });
  const [a, ap, op, b] = await Promise.all([
    mint('alice', [TENANT_A], READ_WRITE),
    stack.mintApproverToken({ ttl: '2h' }),
    mint('ops-a', [TENANT_A], ['aip:actions:read', 'aip:operator']),
    mint('bob', [TENANT_B], [...READ_WRITE, 'aip:operator', 'aip:approve']),
  ]);
  alice = clientFor(stack.url, a, violations);
  approver = clientFor(stack.url, ap, violations);
  operatorA = clientFor(stack.url, op, violations);
  bob = clientFor(stack.url, b, violations);
});

afterAll(async () => {
  await stack?.stop();
});

afterEach(() => {
  // Every answer of every test: problems are RFC 9457 problem+json, successes JSON.
  expect(violations.splice(0)).toEqual([]);
});

// --- helpers -----------------------------------------------------------------------

const uid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 12)}`;

function charge(id: string, amount: number, transaction: NonNullable<Action['transaction']>, extra: Partial<Action> = {}): Action {
  return { id, capability_id: 'payments.charge', input: { amount, currency: 'eur', customer: 'cus_e2e' }, transaction, ...extra };
}

/** Long-polls (`?wait=`) until the action is terminal or waits for a human. */
function finished(client: AipClient, action_id: string): Promise<ActionState> {
  return client.waitForAction(action_id, { timeoutMs: FINISH_MS, pollSeconds: WAIT });
}

/**
 * Submits with `Prefer: wait`, then keeps long-polling if the action is still running: its settled state. A fresh
 * execute's first attempt runs in the submit (`attempt_when_waited: inline`, the local stack's default, as deployed):
 * the answer comes after its settlement and the settlement's side records (idempotency record, reconciliation
 * schedule), so there is no worker batch to wait for (lib/runtime/pipeline/inline-attempt.ts).
 */
async function submitted(client: AipClient, body: Action): Promise<ActionState> {
  const sub = await client.submitAction(body, { wait: WAIT });
  if (TERMINAL_STATUSES.includes(sub.action_result.status) || sub.action_result.status === 'requires_human') {
    return { action_result: sub.action_result, ...(sub.transaction_result !== undefined ? { transaction: sub.transaction_result } : {}) };
  }
  return finished(client, sub.action_id);
}

/** Ledger entries committed since `mark` (an earlier `ledger().length`). */
function ledgerSince(mark: number): LedgerEntry[] {
  return stack.simulator.ledger().slice(mark);
}

/** Executes a charge and waits for it: the completed result and its charge ID. */
async function executedCharge(client: AipClient, amount: number) {
  const id = uid('exec');
  const state = await submitted(client, charge(id, amount, { mode: 'execute' }));
  expect(state.action_result.status).toBe('completed');
  const output = state.action_result.output as { charge_id: string; operation_id: string };
  return { id, charge_id: output.charge_id, operation_id: output.operation_id, transaction_id: state.transaction?.transaction_id as string };
}

/** Plans a charge: its plan ID. */
async function planned(client: AipClient, amount: number) {
  const id = uid('plan');
  const sub = await client.submitAction(charge(id, amount, { mode: 'plan' }));
  expect(sub.disposition).toBe('completed');
  const output = sub.action_result.output as { plan_id: string; transaction_id: string; approval_required: boolean };
  return { id, ...output };
}

/** The pending approval of an action, as the approver lists it. */
async function approvalOf(client: AipClient, action_id: string): Promise<Record<string, unknown> | undefined> {
  const page = await client.listApprovals({ limit: 100 });
  return page.items.find((a) => a.action_id === action_id);
}

// --- the scenarios -------------------------------------------------------------------

describe('plan → approval → commit', () => {
  it('the commit waits as requires_human until another principal approves, then commits one charge', async () => {
    const mark = stack.simulator.ledger().length;
    const plan = await planned(alice, 4_200);
    expect(plan.plan_id).toBe(`plan:${plan.transaction_id}`);
    expect(plan.approval_required).toBe(true);

    const commitId = uid('commit');
    const sub = await alice.submitAction(charge(commitId, 4_200, { mode: 'commit', plan_id: plan.plan_id }));
    expect(sub).toMatchObject({ http_status: 202, disposition: 'requires_human', action_result: { status: 'requires_human' } });
    const approvalId = (sub.action_result.metadata as { approval_id: string }).approval_id;

    // It waits: a long poll ends at requires_human, the plan is still planned, the provider saw nothing.
    const waiting = await alice.getAction(commitId, { wait: 1 });
    expect(waiting.action_result.status).toBe('requires_human');
    expect((await alice.getTransaction({ plan_id: plan.plan_id })).status).toBe('planned');
    expect(ledgerSince(mark)).toEqual([]);

    // The requester cannot decide: without the approver scope, nor with it (no self-approval).
    await problemOf(alice.approve(approvalId), 403, 'runtime.approver_forbidden');
    const aliceApprover = clientFor(
      stack.url,
      await stack.mintToken({ sub: 'alice', tenants: [TENANT_A], scopes: [...READ_WRITE, 'aip:approve'] }),
      violations,
    );
    await problemOf(aliceApprover.approve(approvalId), 403, 'runtime.self_approval_forbidden');

    // The approver sees it pending and approves.
    expect(await approvalOf(approver, commitId)).toMatchObject({ approval_id: approvalId, status: 'pending', requested_by: { id: 'alice' } });
    const decided = await approver.approve(approvalId, { reason: 'e2e' });
    expect(decided).toMatchObject({ approval: { status: 'approved', decision: { decided_by: { id: 'dev-approver' } } } });
    await problemOf(approver.approve(approvalId), 409, 'approval.already_decided');

    const done = await finished(alice, commitId);
    expect(done.action_result.status).toBe('completed');
    const txn = await alice.getTransaction({ plan_id: plan.plan_id }, { include: ['result', 'receipts'] });
    expect(txn).toMatchObject({ transaction_id: plan.transaction_id, status: 'committed', action_result: { action_id: commitId, status: 'completed' } });
    expect(txn.receipts?.map((r) => r.event)).toEqual(
      expect.arrayContaining(['transaction.planned', 'transaction.plan_claimed', 'transaction.settled.committed']),
    );

    const effects = ledgerSince(mark);
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ kind: 'charge', amount: 4_200, currency: 'EUR', operation_id: txn.provider_operation?.operation_id });
    expect((done.action_result.output as { charge_id: string }).charge_id).toBe(effects[0]?.resource_id);
  });
});

describe('20 concurrent commits of one plan', () => {
  it('exactly one claim wins, the others get a typed conflict problem, and the provider charges once', async () => {
    const mark = stack.simulator.ledger().length;
    const plan = await planned(bob, 2_020);
    expect(plan.approval_required).toBe(false);

    const ids = Array.from({ length: 20 }, (_, i) => uid(`race${i}`));
    const settled = await Promise.allSettled(ids.map((id) => bob.submitAction(charge(id, 2_020, { mode: 'commit', plan_id: plan.plan_id }))));
    const winners = settled.flatMap((s, i) => (s.status === 'fulfilled' ? [{ id: ids[i] as string, sub: s.value }] : []));
    const losers = settled.flatMap((s, i) => (s.status === 'rejected' ? [{ id: ids[i] as string, err: s.reason as unknown }] : []));
    expect(winners).toHaveLength(1);
    expect(winners[0]?.sub).toMatchObject({ http_status: 202, disposition: 'accepted' });
    expect(losers).toHaveLength(19);
    for (const { err } of losers) {
      const problem = await problemOf(Promise.reject(err), 409, (err as { code: string }).code);
      expect(['runtime.plan_claim_conflict', 'runtime.plan_not_planned']).toContain(problem.code);
      expect(problem).toMatchObject({ category: 'conflict', retryable: false, details: { plan_id: plan.plan_id } });
    }

    const winner = winners[0]?.id as string;
    expect((await finished(bob, winner)).action_result.status).toBe('completed');
    const txn = await bob.getTransaction({ plan_id: plan.plan_id }, { include: ['result'] });
    expect(txn).toMatchObject({ status: 'committed', action_result: { action_id: winner } });
    // Each losing action ended failed with its conflict; none reached the provider.
    const lost = await Promise.all(losers.map(({ id }) => bob.getAction(id)));
    for (const state of lost) expect(state.action_result).toMatchObject({ status: 'failed', error: { category: 'conflict' } });

    const effects = ledgerSince(mark);
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ kind: 'charge', amount: 2_020, operation_id: txn.provider_operation?.operation_id });
  });
});

describe('provider timeout → outcome_unknown → reconciliation on its schedule', () => {
  it('a 504 after the provider committed is uncertain; the schedule fires, the operation lookup reconciles, no second charge', async () => {
    const mark = stack.simulator.ledger().length;
    // The provider commits the charge, then its gateway times out (504): the connector cannot know the outcome.
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
    const id = uid('timeout');
    const key = uid('key');
    const state = await submitted(bob, charge(id, 5_040, { mode: 'execute' }, { idempotency_key: key }));
    expect(state.action_result).toMatchObject({ status: 'failed', error: { uncertain_outcome: true, remote_status: 504, retryable: false } });
    const unknown = state.transaction;
    expect(unknown?.status).toBe('outcome_unknown');
    const txId = unknown?.transaction_id as string;
    const op = unknown?.provider_operation?.operation_id as string;
    expect(op).toMatch(/^op_/);
    expect(ledgerSince(mark)).toMatchObject([{ kind: 'charge', amount: 5_040, operation_id: op }]);

    // No blind retry: the same action is refused until reconciled, and so is the idempotency key.
    const again = await problemOf(bob.submitAction(charge(id, 5_040, { mode: 'execute' }, { idempotency_key: key })), 409, 'runtime.reconciliation_required');
    expect(again.details).toMatchObject({ transaction_id: txId, status: 'outcome_unknown' });
    await problemOf(bob.submitAction(charge(uid('timeout-again'), 5_040, { mode: 'execute' }, { idempotency_key: key })), 409, 'idempotency.outcome_unknown');
    const stuck = await bob.listOperator('outcome_unknown');
    expect(stuck.items.map((i) => (i.transaction as { transaction_id: string }).transaction_id)).toContain(txId);

    await reconciledOnSchedule(txId, unknown?.earliest_reconcile_at as string, op, mark);
  });

  it('a provider that does not answer before the request timeout (latency after commit): the probe in the margin learns the operation; outcome_unknown → schedule → reconciled, one charge', async () => {
    const mark = stack.simulator.ledger().length;
    // The provider commits the charge, then holds its answer far beyond the attempt deadline. The connector's
    // request times out at the deadline (payments.charge's 10 s, real timers) minus its default probe margin
    // (2 s), probes by idempotency key in that margin and checkpoints the operation: this test waits ~8 s.
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'latency', ms: 600_000, phase: 'after_commit' }, times: 1 }]);
    const id = uid('latency');
    const key = uid('key');
    const held = stack.simulator.waitForEvent((e) => e.type === 'fault_applied' && e.method === 'POST' && e.path === '/v1/charges');
    const probed = stack.simulator.waitForEvent((e) => e.type === 'response' && e.method === 'GET' && e.path === '/v1/operations');
    try {
      const state = await submitted(bob, charge(id, 5_050, { mode: 'execute' }, { idempotency_key: key }));
      await held;
      // The connector's request timed out inside its probe margin; the probe by idempotency key found the committed operation.
      expect(await probed).toMatchObject({ status: 200 });
      expect(state.action_result).toMatchObject({
        status: 'failed',
        error: { code: 'sla.timeout_exceeded', category: 'timeout', uncertain_outcome: true, retryable: false },
      });
      const unknown = state.transaction;
      expect(unknown?.status).toBe('outcome_unknown');
      const txId = unknown?.transaction_id as string;
      const op = unknown?.provider_operation?.operation_id as string;
      expect(op).toMatch(/^op_/);
      expect((state.action_result.error as { provider_operation?: { operation_id: string } } | undefined)?.provider_operation?.operation_id).toBe(op);
      expect(ledgerSince(mark)).toMatchObject([{ kind: 'charge', amount: 5_050, operation_id: op }]);

      // The held answer is released: it reaches nobody and changes nothing.
      stack.simulator.releaseDelays();
      await stack.simulator.idle();
      expect(ledgerSince(mark)).toHaveLength(1);

      // No blind retry while the outcome is unknown.
      await problemOf(bob.submitAction(charge(id, 5_050, { mode: 'execute' }, { idempotency_key: key })), 409, 'runtime.reconciliation_required');

      await reconciledOnSchedule(txId, unknown?.earliest_reconcile_at as string, op, mark);
    } finally {
      stack.simulator.setFaults([]);
      stack.simulator.releaseDelays();
      await stack.simulator.idle();
    }
  });
});

/**
 * The reconciliation of an outcome_unknown charge on its one-time schedule:
 * not before its time; at its time (schedule fired, the Runtime's clock
 * moved there) the reconcile consumer looks the operation up, the
 * transaction is reconciled, the schedule is gone, and the provider holds
 * exactly one charge since `mark`.
 */
async function reconciledOnSchedule(txId: string, earliestReconcileAt: string, op: string, mark: number): Promise<void> {
  // The one-time schedule: deterministic name, at or after the earliest reconciliation time, targeting the reconcile queue.
  const name = reconcileScheduleName({ tenant_id: TENANT_B, transaction_id: txId });
  const schedule = stack.scheduler.list().find((s) => s.name === name);
  expect(schedule).toMatchObject({ state: 'ENABLED', actionAfterCompletion: 'DELETE' });
  const at = schedule?.at as Date;
  expect(at.getTime()).toBeGreaterThanOrEqual(Date.parse(earliestReconcileAt));
  // The schedule's message names the transaction and carries the outcome_unknown record it was created for (change 18).
  const input = JSON.parse(schedule?.target.Input as string);
  expect(input).toMatchObject({ kind: 'reconcile', tenant_id: TENANT_B, transaction_id: txId, reason: 'schedule' });
  expect(input.scheduled.transaction).toMatchObject({ tenant_id: TENANT_B, transaction_id: txId, status: 'outcome_unknown' });

  // Not before its time.
  expect(await stack.scheduler.fireDue(new Date(at.getTime() - 1_000))).toEqual([]);
  expect(ledgerSince(mark)).toHaveLength(1);

  // At its time (the Runtime's clock too): delivered, deleted, and the reconcile consumer asks the provider.
  clock.advanceTo(at);
  const lookup = stack.simulator.waitForEvent((e) => e.type === 'response' && e.method === 'GET' && e.path === `/v1/operations/${op}`);
  const fired = await stack.scheduler.fireDue(at);
  expect(fired).toEqual([expect.objectContaining({ name, delivered: true, deleted: true })]);
  await lookup;

  const reconcileId = reconcileActionId(TENANT_B, txId, 1);
  const reconcile = await finished(bob, reconcileId);
  expect(reconcile.action_result).toMatchObject({ status: 'completed', output: { operation_id: op, status: 'succeeded' } });
  const txn = await bob.getTransaction({ transaction_id: txId }, { include: ['receipts'] });
  expect(txn.status).toBe('reconciled');
  expect(txn.receipts?.map((r) => r.status)).toEqual(expect.arrayContaining(['outcome_unknown', 'reconciling', 'reconciled']));
  expect(stack.scheduler.list().find((s) => s.name === name)).toBeUndefined();

  // Reconciled is not committed, and nothing was charged twice.
  expect(ledgerSince(mark)).toHaveLength(1);
  expect(stack.simulator.effectsFor(ledgerSince(mark)[0]?.idempotency_key as string)).toHaveLength(1);
}

describe('compensation and its window', () => {
  it('inside the window: the approved compensation refunds the charge', async () => {
    const mark = stack.simulator.ledger().length;
    const target = await executedCharge(alice, 3_100);

    const compId = uid('refund');
    const sub = await alice.submitAction({
      id: compId,
      capability_id: 'payments.charge',
      input: { charge_id: target.charge_id },
      transaction: { mode: 'compensate', compensation_for: target.id },
    });
    expect(sub.disposition).toBe('requires_human');
    const approval = await approvalOf(approver, compId);
    expect(approval).toBeDefined();
    await approver.approve(approval?.approval_id as string);

    const done = await finished(alice, compId);
    expect(done.action_result).toMatchObject({ status: 'completed', output: { charge_id: target.charge_id, amount: 3_100, status: 'succeeded' } });
    expect(done.transaction?.status).toBe('compensated');
    // The original stays committed: compensation is a new governed action, not a rollback.
    expect((await alice.getTransaction({ action_id: target.id })).status).toBe('committed');

    const effects = ledgerSince(mark);
    expect(effects.map((e) => ({ kind: e.kind, amount: e.amount, charge_id: e.charge_id }))).toEqual([
      { kind: 'charge', amount: 3_100, charge_id: target.charge_id },
      { kind: 'refund', amount: 3_100, charge_id: target.charge_id },
    ]);
  });

  it('outside the window: rejected with a typed problem, and nothing is refunded', async () => {
    const target = await executedCharge(bob, 3_200);
    const record = await bob.getTransaction({ action_id: target.id });
    expect(record.status).toBe('committed');
    const mark = stack.simulator.ledger().length;

    clock.advance(COMPENSATION_WINDOW_MS + 1_000);
    const compId = uid('late-refund');
    const problem = await problemOf(
      bob.submitAction({
        id: compId,
        capability_id: 'payments.charge',
        input: { charge_id: target.charge_id },
        transaction: { mode: 'compensate', compensation_for: target.id },
      }),
      409,
      'runtime.compensation_window_expired',
    );
    expect(problem.details).toMatchObject({ window_ms: COMPENSATION_WINDOW_MS, window_basis_kind: 'target_record_updated_at' });
    expect(Date.parse(problem.details?.closed_at as string)).toBeLessThan(clock.now().getTime());

    // The rejection is the compensating action's result; the charge is untouched.
    expect((await bob.getAction(compId)).action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.compensation_window_expired' } });
    expect((await bob.getTransaction({ action_id: target.id })).status).toBe('committed');
    expect(ledgerSince(mark)).toEqual([]);
  });
});

describe('idempotency keys', () => {
  it('the same key and body replays the stored result; a different body under the key is a 409 naming the mismatch', async () => {
    const mark = stack.simulator.ledger().length;
    const key = uid('idem');
    const first = uid('idem-first');
    const state = await submitted(bob, charge(first, 1_111, { mode: 'execute' }, { idempotency_key: key }));
    expect(state.action_result.status).toBe('completed');
    const chargeId = (state.action_result.output as { charge_id: string }).charge_id;

    // The same action again: its stored result.
    const resent = await bob.submitAction(charge(first, 1_111, { mode: 'execute' }, { idempotency_key: key }));
    expect(resent).toMatchObject({
      http_status: 200,
      disposition: 'replayed',
      action_result: { status: 'completed', replayed: true, output: { charge_id: chargeId } },
    });

    // Another action with the same key and body: the first one's result, marked as a replay.
    const second = uid('idem-second');
    const replay = await bob.submitAction(charge(second, 1_111, { mode: 'execute' }, { idempotency_key: key }));
    expect(replay).toMatchObject({
      http_status: 200,
      disposition: 'replayed',
      action_result: { status: 'completed', replayed: true, output: { charge_id: chargeId }, metadata: { replayed_from: first } },
    });

    // The key with a different body: a conflict naming the mismatch, and no effect.
    const third = uid('idem-third');
    const problem = await problemOf(
      bob.submitAction(charge(third, 9_999, { mode: 'execute' }, { idempotency_key: key })),
      409,
      'idempotency.fingerprint_mismatch',
    );
    expect(problem.details).toMatchObject({ reason: 'fingerprint_mismatch', action_id: first });

    expect(ledgerSince(mark)).toMatchObject([{ kind: 'charge', amount: 1_111, resource_id: chargeId }]);
  });
});

describe('cancellation', () => {
  it('an action waiting for approval is cancelled; a completed one cannot be', async () => {
    const mark = stack.simulator.ledger().length;
    const plan = await planned(alice, 6_600);
    const commitId = uid('to-cancel');
    const sub = await alice.submitAction(charge(commitId, 6_600, { mode: 'commit', plan_id: plan.plan_id }));
    expect(sub.disposition).toBe('requires_human');
    const approvalId = (sub.action_result.metadata as { approval_id: string }).approval_id;

    const cancelled = await alice.cancel(commitId);
    expect(cancelled).toMatchObject({ cancel_requested: false, action_result: { action_id: commitId, status: 'cancelled' } });
    expect((await alice.getAction(commitId)).action_result.status).toBe('cancelled');
    // Idempotent, and the approval withdraws itself with it: no pending approval, no late decision.
    expect((await alice.cancel(commitId)).action_result).toMatchObject({ status: 'cancelled' });
    expect(await approvalOf(approver, commitId)).toBeUndefined();
    await problemOf(approver.approve(approvalId), 409, 'runtime.approval_withdrawn');
    // The plan was never claimed.
    expect((await alice.getTransaction({ plan_id: plan.plan_id })).status).toBe('planned');

    const done = await executedCharge(alice, 6_700);
    const problem = await problemOf(alice.cancel(done.id), 409, 'runtime.cancel_not_allowed');
    expect(problem.details).toMatchObject({ action_id: done.id, status: 'completed' });
    expect((await alice.getAction(done.id)).action_result.status).toBe('completed');

    expect(ledgerSince(mark).map((e) => e.amount)).toEqual([6_700]);
  });
});

describe('tenant isolation', () => {
  it("tenant B cannot read, commit, cancel, approve or list tenant A's work, and nothing is written", async () => {
    const mark = stack.simulator.ledger().length;
    // Tenant A's work: a completed charge, a plan, and a commit waiting for approval.
    const done = await executedCharge(alice, 7_100);
    const plan = await planned(alice, 7_200);
    const pendingId = uid('a-pending');
    const pending = await alice.submitAction(charge(pendingId, 7_200, { mode: 'commit', plan_id: plan.plan_id }));
    const approvalId = (pending.action_result.metadata as { approval_id: string }).approval_id;
    const marked = stack.simulator.ledger().length;

    // Read: in B's tenant nothing is found; naming A's tenant is forbidden at the edge.
    await problemOf(bob.getAction(done.id), 404, 'action.not_found');
    await problemOf(bob.getAction(done.id, { tenant: TENANT_A }), 403, 'auth.tenant_forbidden');
    await problemOf(bob.readStream(done.id), 404, 'action.not_found');
    await problemOf(bob.readStream(done.id, { tenant: TENANT_A }), 403, 'auth.tenant_forbidden');
    await problemOf(bob.getTransaction({ transaction_id: done.transaction_id }), 404, 'transaction.not_found');
    await problemOf(bob.getTransaction({ plan_id: plan.plan_id }), 404, 'transaction.not_found');
    await problemOf(bob.getTransaction({ action_id: pendingId }), 404, 'transaction.not_found');
    await problemOf(bob.getTransaction({ plan_id: plan.plan_id }, { tenant: TENANT_A }), 403, 'auth.tenant_forbidden');

    // Commit A's plan: not found in B's tenant, forbidden when the body or the header names A's tenant.
    const stolen = [uid('b-commit'), uid('b-commit'), uid('b-commit')] as const;
    await problemOf(bob.submitAction(charge(stolen[0], 7_200, { mode: 'commit', plan_id: plan.plan_id })), 404, 'runtime.plan_not_found');
    await problemOf(
      bob.submitAction(charge(stolen[1], 7_200, { mode: 'commit', plan_id: plan.plan_id }, { identity: { tenant_id: TENANT_A } })),
      403,
      'runtime.tenant_forbidden',
    );
    await problemOf(bob.submitAction(charge(stolen[2], 7_200, { mode: 'commit', plan_id: plan.plan_id }), { tenant: TENANT_A }), 403, 'auth.tenant_forbidden');

    // Cancel and approve A's pending commit.
    await problemOf(bob.cancel(pendingId), 404, 'action.not_found');
    await problemOf(bob.cancel(pendingId, { tenant: TENANT_A }), 403, 'auth.tenant_forbidden');
    await problemOf(bob.approve(approvalId), 404, 'approval.not_found');
    await problemOf(bob.approve(approvalId, { tenant: TENANT_A }), 403, 'auth.tenant_forbidden');

    // Listings: B's approvals and operator views hold nothing of A's; A's tenant cannot be selected.
    expect((await bob.listApprovals()).items.map((a) => a.approval_id)).not.toContain(approvalId);
    await problemOf(bob.listApprovals({ tenant: TENANT_A }), 403, 'auth.tenant_forbidden');
    const bViews = await Promise.all((['pending_approvals', 'outcome_unknown', 'stalled_committing'] as const).map((v) => bob.listOperator(v)));
    expect(JSON.stringify(bViews)).not.toContain(TENANT_A);
    await problemOf(bob.listOperator('pending_approvals', { tenant: TENANT_A }), 403, 'auth.tenant_forbidden');

    // And the other way round: A cannot see B's work either.
    const bobs = await executedCharge(bob, 7_300);
    await problemOf(alice.getAction(bobs.id), 404, 'action.not_found');
    await problemOf(operatorA.getTransaction({ action_id: bobs.id }), 404, 'transaction.not_found');

    // Nothing was written: A's records are as they were, B's attempts left no action anywhere, the provider saw only B's own charge.
    expect((await alice.getAction(pendingId)).action_result.status).toBe('requires_human');
    expect(await approvalOf(approver, pendingId)).toMatchObject({ approval_id: approvalId, status: 'pending' });
    expect((await alice.getTransaction({ plan_id: plan.plan_id })).status).toBe('planned');
    expect((await alice.getTransaction({ action_id: done.id })).status).toBe('committed');
    for (const id of stolen) {
      await problemOf(bob.getAction(id), 404, 'action.not_found');
      await problemOf(operatorA.getAction(id), 404, 'action.not_found');
    }
    expect(ledgerSince(marked).map((e) => e.amount)).toEqual([7_300]);
    expect(ledgerSince(mark).map((e) => e.amount)).toEqual([7_100, 7_300]);
  });
});
