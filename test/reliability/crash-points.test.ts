/**
 * Crash points on the local stack: the same nine points as
 * test/integration/runtime/crash.test.ts, but over HTTP against the stack of
 * `npm start` (dev/local/start.ts): the real authorizer and HTTP handlers,
 * the Runtime built by the composition root, the DynamoDB stores, the invoke
 * and reconcile queues on fauxqs feeding the deployed worker and reconcile
 * handlers, the Scheduler emulator, and the payments connector against the
 * payments simulator.
 *
 * Each case submits real `payments.charge` actions (execute with an
 * idempotency key, or plan then commit with one), crashes once at its point,
 * and recovers only through the real mechanisms:
 * - SQS redelivery: the worker's failed message becomes visible again
 *   (`redeliveryDelaySeconds: 0`). The crash stands for the process dying,
 *   and SQS would redeliver only after the queue's visibility timeout, so the
 *   hook moves the Runtime's clock by that timeout when it fires (past the
 *   attempt's lease) instead of anyone sleeping;
 * - the sweeper (`stack.sweep()`, the deployed handler) once the clock is past
 *   the stall threshold or a reconciliation's due time;
 * - reconciliation: the one-time schedule fired by the Scheduler emulator
 *   (`fireDue(at)`, with the clock moved to `at`), or the sweeper's enqueue.
 * The same points also fire inside a waited submit (`Prefer: wait`: the first
 * attempt runs in the submit, lib/runtime/pipeline/inline-attempt.ts), which
 * dies with its attempt: no invoke message exists, so a record left in its
 * attempt status is re-driven by the sweeper's stalled-attempt pass once the
 * lease expired and the stall threshold passed.
 * Where a point leads to `outcome_unknown`, the simulator drops its answer
 * after committing the charge (`drop_after_commit`: the first request's, or,
 * installed when the crash fires, the answer to the recovery's replay), so
 * the path goes through reconciliation.
 *
 * Asserted for every case:
 * - the final state (per case below: `committed`, or `outcome_unknown` →
 *   `reconciled`);
 * - the provider ledger holds exactly one effect for the intent (the provider
 *   accepted in every case);
 * - nothing lost: every action terminal with its result, the transaction
 *   record present with its result, its receipts contiguous (the count and
 *   head the record anchors), and an idempotent resubmission (the same action, or
 *   the same request under the key from a new action ID) replays the
 *   stored result without reaching the provider;
 * - no blind retry: every charge request the provider saw for the intent
 *   carried the intent's one idempotency key (a second one is the declared
 *   retry with downstream idempotency of a record still in an attempt status,
 *   answered as a replay), and none at all once the record was
 *   `outcome_unknown`: from there only operation lookups reach the provider;
 * - every receipt chain (read back through `GET /v1/transactions`) verifies
 *   against the record's anchor.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_VISIBILITY_SECONDS, type LocalStack } from '../../dev/local/start.js';
import type { SimEvent } from '../../dev/payments-simulator/server.js';
import { DynamoTransactionStore } from '../../lib/aws/dynamo/transaction-store.js';
import { reconcileScheduleName } from '../../lib/aws/scheduler/scheduler.js';
import { AipClientError, type Action, type AipClient, type TransactionResult } from '../../lib/client/index.js';
import type { QueueMessage } from '../../lib/ports/messages.js';
import { ArmedCrashPoints, CRASH_POINTS, type CrashPointName } from '../../lib/runtime/crash-points.js';
import { verifyReceiptChain } from '../../lib/runtime/receipts.js';
import { reconcileActionId } from '../../lib/runtime/reconciliation.js';
import { SteppedClock, clientFor, problemOf } from '../e2e/support.js';
import { counter, dynamoClient, recordScenario, reliabilityStack } from './support.js';

const TENANT = 'acme';
/** The Runtime's default stall threshold (`stall_after_ms`): the sweeper re-drives older attempt records. */
const STALL_MS = 5 * 60_000;
/** How long SQS keeps a failed message invisible: the time a crash costs before the redelivery. */
const REDELIVERY_AFTER_MS = QUEUE_VISIBILITY_SECONDS * 1_000 + 1_000;

const clock = new SteppedClock();

/** Crashes once at an armed point; SQS would redeliver only after the visibility timeout, so the clock moves by it. */
class CrashAndWait extends ArmedCrashPoints {
  /** Runs when the crash fires (e.g. a provider fault for the retry only). */
  onCrash: (() => void) | undefined;
  override hit(name: CrashPointName): void {
    try {
      super.hit(name);
    } catch (err) {
      clock.advance(REDELIVERY_AFTER_MS);
      this.onCrash?.();
      this.onCrash = undefined;
      throw err;
    }
  }
}

const crash = new CrashAndWait();
const violations: string[] = [];
const events: SimEvent[] = [];
let stack: LocalStack;
let client: AipClient;
/** Reads the runtime's own reconcile actions (another principal's: the operator scope). */
let operator: AipClient;
let transactions: DynamoTransactionStore;
let documents: DynamoDBDocumentClient;

const { counts, bump } = counter();
const TOTALS = [
  'cases',
  'inline_cases',
  'execute_cases',
  'commit_cases',
  'actions',
  'provider_effects',
  'provider_charge_requests',
  'idempotent_replays',
  'blind_retries',
  'redeliveries',
  'sweeps',
  'schedule_fires',
  'outcome_unknown',
  'lookups',
  'committed',
  'reconciled',
  'chains_verified',
  'receipts',
];
/** Cases per crash point, then the totals, in a fixed order (zeros included). */
const ordered = (c: Record<string, number>): Record<string, number> => Object.fromEntries([...CRASH_POINTS, ...TOTALS].map((k) => [k, c[k] ?? 0]));

beforeAll(async () => {
  let table: string;
  ({ stack, table } = await reliabilityStack('crash', {
    tenants: [TENANT],
    approvalPolicies: [],
    runtimeSettings: { test_mode: true },
    crashPoints: crash,
    redeliveryDelaySeconds: 0,
    clock,
  }));
  stack.simulator.onEvent((e) => events.push(e));
  client = clientFor(
    stack.url,
    await stack.mintToken({ sub: 'crash-tester', tenants: [TENANT], scopes: ['aip:actions:read', 'aip:actions:write'], ttl: '2h' }),
    violations,
  );
  operator = clientFor(
    stack.url,
    await stack.mintToken({ sub: 'crash-operator', tenants: [TENANT], scopes: ['aip:actions:read', 'aip:operator'], ttl: '2h' }),
    violations,
  );
  documents = DynamoDBDocumentClient.from(dynamoClient());
  transactions = new DynamoTransactionStore({ client: documents, tableName: table });
});

afterAll(async () => {
  recordScenario('crash-points', {
    scenario: 'Crash points on the local stack',
    cases: counts.cases ?? 0,
    held: [
      'each of the 9 crash points fired once over HTTP on the local stack (execute, and plan+commit where a point applies to commits)',
      'the 8 points of an attempt also inside a waited submit (Prefer: wait, the attempt inside the submit): the submit dies with its attempt',
      'recovery only by SQS redelivery, the sweeper (its stalled-attempt pass for a submit that died) and reconciliation (Scheduler emulator or sweeper)',
      'final state right per point: committed, or outcome_unknown → reconciled',
      'exactly one provider effect per intent',
      'no action, result, transaction record or receipt lost; idempotent resubmission replays the stored result',
      'no blind retry: one idempotency key per intent, no charge request once outcome_unknown (lookups only)',
      'every receipt chain verifies against its record',
    ],
    counts: ordered(counts),
  });
  documents?.destroy();
  await stack?.stop();
});

afterEach(() => {
  expect(violations.splice(0)).toEqual([]);
  crash.disarm();
  crash.onCrash = undefined;
  stack.simulator.setFaults([]);
});

// --- helpers -----------------------------------------------------------------------

const uid = (prefix: string) => `${prefix}-${randomUUID().slice(0, 12)}`;
let amounts = 7_000;

function charge(id: string, amount: number, transaction: NonNullable<Action['transaction']>, idempotency_key: string): Action {
  return { id, capability_id: 'payments.charge', input: { amount, currency: 'eur', customer: 'cus_crash' }, transaction, idempotency_key };
}

/** Resolves once `n` worker batches holding an invoke message of this action have finished (side records included). */
function deliveries(action_id: string, n: number): Promise<void> {
  if (n <= 0) return Promise.resolve();
  // Re-subscribing in the continuation is in time: the next batch needs a queue round trip first.
  return stack.handled('invoke', (m: QueueMessage) => m.kind === 'invoke' && m.action_id === action_id).then(() => deliveries(action_id, n - 1));
}

const charges = (from: number) =>
  events.slice(from).filter((e): e is Extract<SimEvent, { type: 'response' }> => e.type === 'response' && e.method === 'POST' && e.path === '/v1/charges');
const lookups = (from: number, op: string) =>
  events.slice(from).filter((e) => e.type === 'response' && e.method === 'GET' && e.path === `/v1/operations/${op}`);

type Flow = 'execute' | 'commit';
type Final = 'committed' | 'reconciled';

interface CrashCase {
  readonly point: CrashPointName;
  readonly flow: Flow;
  /**
   * The simulator commits the charge and drops its answer, so the attempt settles outcome_unknown:
   * `answer` the first charge request's, `retry_answer` the answer to the recovery's replay.
   */
  readonly lost?: 'answer' | 'retry_answer';
  readonly final: Final;
  /** Charge requests the provider sees for the intent (a second is a replay under the same key). */
  readonly charge_requests: number;
  /** How the case recovers (for the test name). */
  readonly recovery: string;
  /**
   * Submitted with `Prefer: wait`, so the first attempt runs inside the submit (lib/runtime/pipeline/inline-attempt.ts)
   * and the crash kills the submit: no invoke message exists to be redelivered. `redrive`: the record is left in its
   * attempt status, and the sweeper's stalled-attempt pass sends the invoke message once the lease expired and the
   * record is older than the stall threshold; otherwise the crash came after the settlement write.
   */
  readonly inline?: { readonly redrive: boolean };
}

/**
 * The matrix. payments.charge declares retry with downstream idempotency, so
 * a redelivered attempt of a record still in an attempt status re-invokes
 * under the same idempotency key (the provider answers with the stored
 * charge); a record already `outcome_unknown` is only ever reconciled.
 */
const CASES: readonly CrashCase[] = [
  {
    point: 'after_admission_before_enqueue',
    flow: 'execute',
    final: 'committed',
    charge_requests: 1,
    recovery: 'nothing enqueued; the sweeper re-drives the stalled prepared record',
  },
  {
    point: 'after_admission_before_enqueue',
    flow: 'commit',
    final: 'committed',
    charge_requests: 1,
    recovery: 'nothing enqueued; the sweeper re-drives the stalled committing record',
  },
  { point: 'after_receive_before_lease', flow: 'execute', final: 'committed', charge_requests: 1, recovery: 'the redelivery runs the first attempt' },
  { point: 'after_receive_before_lease', flow: 'commit', final: 'committed', charge_requests: 1, recovery: 'the redelivery runs the first commit attempt' },
  {
    point: 'after_lease_before_provider_call',
    flow: 'execute',
    final: 'committed',
    charge_requests: 1,
    recovery: 'the redelivery after the lease re-invokes under the same key',
  },
  {
    point: 'after_lease_before_provider_call',
    flow: 'commit',
    final: 'committed',
    charge_requests: 1,
    recovery: 'the redelivery after the lease re-invokes the commit under the same key',
  },
  {
    point: 'after_provider_accept_before_checkpoint',
    flow: 'execute',
    final: 'committed',
    charge_requests: 2,
    recovery: 'the redelivery re-invokes under the same key; the provider replays the one charge',
  },
  {
    point: 'after_provider_accept_before_checkpoint',
    flow: 'commit',
    final: 'committed',
    charge_requests: 2,
    recovery: 'the commit is re-invoked under the same key; the provider replays the one charge',
  },
  {
    point: 'after_checkpoint_before_response',
    flow: 'execute',
    final: 'committed',
    charge_requests: 2,
    recovery:
      'the operation held for the settlement is lost with the process; the redelivery re-invokes under the same key and the provider replays the one charge',
  },
  {
    point: 'after_checkpoint_before_response',
    flow: 'commit',
    final: 'committed',
    charge_requests: 2,
    recovery:
      'the operation held for the settlement is lost with the process; the commit is re-invoked under the same key and the provider replays the one charge',
  },
  {
    point: 'after_checkpoint_before_response',
    flow: 'execute',
    lost: 'retry_answer',
    final: 'reconciled',
    charge_requests: 2,
    recovery:
      "the replay's answer is lost too; the probe finds the operation by the request's key, outcome_unknown keeps it; the Scheduler fires the reconciliation",
  },
  {
    point: 'after_response_before_settlement',
    flow: 'execute',
    final: 'committed',
    charge_requests: 2,
    recovery: 'the lost response is replayed by the provider under the same key',
  },
  {
    point: 'after_response_before_settlement',
    flow: 'commit',
    final: 'committed',
    charge_requests: 2,
    recovery: 'the lost commit response is replayed by the provider under the same key',
  },
  {
    point: 'after_action_settled_before_record',
    flow: 'execute',
    final: 'committed',
    charge_requests: 1,
    recovery: 'the action settled alone first; the redelivery finds it terminal and finishes the record from it',
  },
  {
    point: 'after_action_settled_before_record',
    flow: 'commit',
    final: 'committed',
    charge_requests: 1,
    recovery: 'the commit action settled alone first; the redelivery finishes the claimed record from it',
  },
  {
    point: 'during_settlement',
    flow: 'execute',
    final: 'committed',
    charge_requests: 1,
    recovery: 'the action, then the record settled; the redelivery finds them settled',
  },
  {
    point: 'during_settlement',
    flow: 'commit',
    final: 'committed',
    charge_requests: 1,
    recovery: 'the commit action, then its record settled; the redelivery finds them settled',
  },
  {
    point: 'during_settlement',
    flow: 'execute',
    lost: 'answer',
    final: 'reconciled',
    charge_requests: 1,
    recovery: 'outcome_unknown settled in one write before the schedule; the sweeper enqueues the overdue reconciliation',
  },
  {
    point: 'during_schedule_creation',
    flow: 'execute',
    lost: 'answer',
    final: 'reconciled',
    charge_requests: 1,
    recovery: 'the schedule is lost; the sweeper enqueues the overdue reconciliation',
  },
  {
    point: 'during_schedule_creation',
    flow: 'commit',
    lost: 'answer',
    final: 'reconciled',
    charge_requests: 1,
    recovery: 'the commit schedule is lost; the sweeper enqueues the overdue reconciliation',
  },
  // The attempt inside the submit (Prefer: wait): the same points, the submit dies with the attempt.
  ...(
    [
      ['after_receive_before_lease', 'execute', undefined, 1, 'the submit died before the lease; the sweeper re-drives the stalled prepared record'],
      ['after_lease_before_provider_call', 'execute', undefined, 1, 'once the lease expired the sweeper re-drives; the worker re-invokes under the same key'],
      ['after_lease_before_provider_call', 'commit', undefined, 1, 'once the lease expired the sweeper re-drives the commit; the worker re-invokes it'],
      [
        'after_provider_accept_before_checkpoint',
        'execute',
        undefined,
        2,
        'the sweeper re-drives; the worker re-invokes under the same key and the provider replays the one charge',
      ],
      [
        'after_checkpoint_before_response',
        'execute',
        undefined,
        2,
        'the sweeper re-drives; the worker re-invokes under the same key and the provider replays the one charge',
      ],
      [
        'after_checkpoint_before_response',
        'execute',
        'retry_answer',
        2,
        "the sweeper re-drives; the replay's answer is lost too, outcome_unknown; the Scheduler fires the reconciliation",
      ],
      ['after_response_before_settlement', 'execute', undefined, 2, 'the sweeper re-drives; the lost response is replayed by the provider under the same key'],
      ['after_response_before_settlement', 'commit', undefined, 2, 'the sweeper re-drives the commit; the provider replays the lost response'],
      [
        'after_action_settled_before_record',
        'execute',
        undefined,
        1,
        'the action settled alone first; the sweeper re-drives and the worker finishes the record',
      ],
    ] as const
  ).map(
    ([point, flow, lost, charge_requests, recovery]): CrashCase => ({
      point,
      flow,
      ...(lost !== undefined ? { lost } : {}),
      final: lost !== undefined ? 'reconciled' : 'committed',
      charge_requests,
      recovery,
      inline: { redrive: true },
    }),
  ),
  {
    point: 'during_settlement',
    flow: 'execute',
    final: 'committed',
    charge_requests: 1,
    recovery: 'the action and the record settled before the submit died: nothing to recover, a resubmission replays',
    inline: { redrive: false },
  },
  {
    point: 'during_settlement',
    flow: 'execute',
    lost: 'answer',
    final: 'reconciled',
    charge_requests: 1,
    recovery: 'outcome_unknown settled in one write, the submit died before the schedule; the sweeper enqueues the overdue reconciliation',
    inline: { redrive: false },
  },
  {
    point: 'during_schedule_creation',
    flow: 'commit',
    lost: 'answer',
    final: 'reconciled',
    charge_requests: 1,
    recovery: 'the submit died creating the schedule; the sweeper enqueues the overdue reconciliation',
    inline: { redrive: false },
  },
];

async function planned(amount: number): Promise<{ id: string; plan_id: string; transaction_id: string }> {
  const id = uid('plan');
  const sub = await client.submitAction(charge(id, amount, { mode: 'plan' }, uid('plan-key')));
  expect(sub.action_result.status).toBe('completed');
  const output = sub.action_result.output as { plan_id: string; transaction_id: string };
  return { id, ...output };
}

/** The stored record's anchor and the chain read back through the API verify; returns the chain. */
async function verifiedChain(view: TransactionResult): Promise<NonNullable<TransactionResult['receipts']>> {
  const record = await transactions.get({ tenant_id: TENANT, transaction_id: view.transaction_id });
  expect(record).toBeDefined();
  const receipts = view.receipts ?? [];
  const verdict = verifyReceiptChain(receipts, {
    transaction_id: view.transaction_id,
    expected_count: record?.receipt_count,
    ...(record?.receipt_head !== undefined ? { expected_head: record.receipt_head } : {}),
  });
  expect(verdict).toMatchObject({ valid: true, count: record?.receipt_count });
  // The API and the store hold the same chain.
  const stored = (await transactions.listReceipts({ tenant_id: TENANT, transaction_id: view.transaction_id, limit: 100 })).items.map((r) => r.receipt);
  expect(stored).toEqual(receipts);
  bump('chains_verified');
  bump('receipts', receipts.length);
  return receipts;
}

async function runCase(c: CrashCase): Promise<void> {
  const from = events.length;
  const ledgerMark = stack.simulator.ledger().length;
  const amount = (amounts += 1);
  const key = uid('key');
  const actions: string[] = [];

  let transaction: NonNullable<Action['transaction']> = { mode: 'execute' };
  if (c.flow === 'commit') {
    const plan = await planned(amount);
    actions.push(plan.id);
    transaction = { mode: 'commit', plan_id: plan.plan_id };
  }
  const id = uid(c.flow);
  actions.push(id);
  const body = charge(id, amount, transaction, key);

  const dropAnswer = () => stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'drop_after_commit' }, times: 1 }]);
  if (c.lost === 'answer') dropAnswer();
  if (c.lost === 'retry_answer') crash.onCrash = dropAnswer;
  crash.fired.splice(0);
  crash.arm(c.point);

  if (c.point === 'after_admission_before_enqueue') {
    // The admission wrote the records, then the process died before the enqueue: the caller saw a 500.
    await problemOf(client.submitAction(body), 500, 'runtime.crash_injected');
    const waiting = await client.getTransaction({ action_id: id });
    expect(waiting.status).toBe(c.flow === 'commit' ? 'committing' : 'prepared');
    expect((await client.getAction(id)).action_result.status).toBe('accepted');
    expect(charges(from)).toEqual([]);
    // Nothing redelivers what was never sent: the sweeper finds the stalled record once past the threshold.
    clock.advance(STALL_MS);
    const worked = deliveries(id, 1);
    expect((await stack.sweep()).enqueued).toBeGreaterThanOrEqual(1);
    await worked;
    bump('sweeps');
  } else if (c.inline !== undefined) {
    // The attempt ran inside the waited submit, which died with it: the client saw a 500, and no invoke message exists.
    await problemOf(client.submitAction(body, { wait: 20 }), 500, 'runtime.crash_injected');
    if (c.inline.redrive) {
      // The record stays in its attempt status: once the lease expired (the crash moved the clock past it) and the
      // record is older than the stall threshold, the sweeper's stalled-attempt pass sends the invoke message.
      clock.advance(STALL_MS);
      const worked = deliveries(id, 1);
      expect((await stack.sweep()).enqueued).toBeGreaterThanOrEqual(1);
      await worked;
      bump('sweeps');
    }
    bump('inline_cases');
  } else {
    // The crashing delivery, then the redelivery.
    const worked = deliveries(id, 2);
    const sub = await client.submitAction(body);
    expect(sub.http_status).toBe(202);
    await worked;
    bump('redeliveries');
  }
  expect(crash.fired).toEqual([c.point]);

  const settled = await client.getTransaction({ action_id: id }, { include: ['result'] });
  /** Simulator events index when the record was seen outcome_unknown (its attempt had finished). */
  let unknownAt: number | undefined;
  const transaction_id = settled.transaction_id;
  if (c.lost !== undefined) {
    // outcome_unknown: the action failed with an uncertain outcome, the operation the probe found is kept.
    expect(settled.status).toBe('outcome_unknown');
    const op = settled.provider_operation?.operation_id as string;
    expect(op).toMatch(/^op_/);
    expect((await client.getAction(id)).action_result).toMatchObject({ status: 'failed', error: { uncertain_outcome: true } });
    bump('outcome_unknown');
    unknownAt = events.length;
    // No blind retry through the API either: resubmitting the same action is refused until reconciled, or
    // answered with the stored (uncertain) result; the provider sees nothing.
    const resubmitted = await client.submitAction(body, c.inline !== undefined ? { wait: 20 } : {}).catch((err: unknown) => err);
    if (resubmitted instanceof AipClientError)
      expect({ status: resubmitted.status, code: resubmitted.code }).toEqual({ status: 409, code: 'runtime.reconciliation_required' });
    else expect(resubmitted).toMatchObject({ action_result: { status: 'failed', error: { uncertain_outcome: true } } });
    expect(charges(unknownAt)).toEqual([]);

    const name = reconcileScheduleName({ tenant_id: TENANT, transaction_id });
    const schedule = stack.scheduler.list().find((s) => s.name === name);
    const reconciled = stack.handled('reconcile', (m) => m.kind === 'reconcile' && m.transaction_id === transaction_id);
    if (c.point === 'during_schedule_creation' || c.point === 'during_settlement') {
      // The crash came after the one settlement write and took the schedule with it (the redelivery finds the
      // action settled): the sweeper is the safety net.
      expect(schedule).toBeUndefined();
      clock.advanceTo(new Date(settled.earliest_reconcile_at as string));
      expect((await stack.sweep()).enqueued).toBeGreaterThanOrEqual(1);
      bump('sweeps');
    } else {
      expect(schedule).toBeDefined();
      const at = schedule?.at as Date;
      clock.advanceTo(at);
      expect(await stack.scheduler.fireDue(at)).toEqual([expect.objectContaining({ name, delivered: true })]);
      bump('schedule_fires');
    }
    await reconciled;
    const rcn = await operator.getAction(reconcileActionId(TENANT, transaction_id, 1));
    expect(rcn.action_result).toMatchObject({ status: 'completed', output: { operation_id: op, status: 'succeeded' } });
    actions.push(rcn.action_result.action_id);
    // From outcome_unknown on, the provider saw lookups only.
    expect(charges(unknownAt)).toEqual([]);
    expect(lookups(unknownAt, op).length).toBeGreaterThanOrEqual(1);
    bump('lookups', lookups(unknownAt, op).length);
  } else {
    expect(settled.status).toBe('committed');
  }

  // The final state.
  const view = await client.getTransaction({ transaction_id }, { include: ['result', 'receipts'] });
  expect(view.status).toBe(c.final);
  expect(view.action_result).toBeDefined();
  bump(c.final);

  // Exactly one provider effect for the intent, under the one idempotency key every charge request carried.
  const effects = stack.simulator.ledger().slice(ledgerMark);
  expect(effects).toMatchObject([{ kind: 'charge', amount }]);
  const effect = effects[0];
  const requests = charges(from);
  // Blind: a charge request under another identity, or any charge request once the record was outcome_unknown.
  const blind = requests.filter((r) => r.idempotency_key !== effect?.idempotency_key).length + (unknownAt !== undefined ? charges(unknownAt).length : 0);
  expect(blind).toBe(0);
  bump('blind_retries', blind);
  expect(requests.map((r) => r.idempotency_key)).toEqual(Array(c.charge_requests).fill(effect?.idempotency_key));
  expect(stack.simulator.effectsFor(effect?.idempotency_key as string)).toHaveLength(1);
  expect(view.provider_operation?.operation_id).toBe(effect?.operation_id);
  bump('provider_effects', effects.length);
  bump('provider_charge_requests', requests.length);
  bump('idempotent_replays', requests.length - 1);

  // Nothing lost: every action terminal with its result.
  for (const a of actions) {
    const state = await (a.startsWith('rcn-') ? operator : client).getAction(a);
    expect(['completed', 'failed']).toContain(state.action_result.status);
    expect(state.action_result.status === 'completed' ? state.action_result.output : state.action_result.error).toBeDefined();
    bump('actions');
  }
  if (c.final === 'committed') {
    expect((await client.getAction(id)).action_result).toMatchObject({ status: 'completed', output: { operation_id: effect?.operation_id, amount } });
  }

  // The chain: contiguous, anchored, and it tells the path.
  const receipts = await verifiedChain(view);
  const statuses = receipts.map((r) => r.status);
  expect(statuses.at(-1)).toBe(c.final);
  if (c.lost !== undefined) expect(statuses).toEqual(expect.arrayContaining(['outcome_unknown', 'reconciling', 'reconciled']));
  else expect(statuses).not.toContain('outcome_unknown');

  // The idempotency record survived too: the same submission replays the stored result, and the provider sees nothing.
  const before = events.length;
  const stored = await client.getAction(id);
  const replay = await client.submitAction(body);
  expect(replay.disposition).toBe('replayed');
  expect(replay.action_result).toMatchObject({
    status: stored.action_result.status,
    ...(stored.action_result.output !== undefined ? { output: stored.action_result.output } : {}),
  });
  expect(charges(before)).toEqual([]);
  // So does the same request from a new action ID: the key answers the action's final result (read from the action
  // when the settlement left the reservation as admitted), and the provider still sees nothing.
  const again = await client.submitAction({ ...body, id: uid(`${c.flow}-again`) });
  expect(again.disposition).toBe('replayed');
  expect(again.action_result).toMatchObject({
    status: stored.action_result.status,
    replayed: true,
    metadata: { replayed_from: id },
    ...(stored.action_result.output !== undefined ? { output: stored.action_result.output } : {}),
  });
  expect(charges(before)).toEqual([]);
  expect(stack.simulator.ledger().slice(ledgerMark)).toHaveLength(1);

  bump('cases');
  bump(c.point);
  bump(c.flow === 'commit' ? 'commit_cases' : 'execute_cases');
}

describe('crash points on the local stack', () => {
  it('the matrix covers all nine crash points, and every point of an attempt inside a waited submit too', () => {
    expect(new Set(CASES.map((c) => c.point))).toEqual(new Set(CRASH_POINTS));
    expect(new Set(CASES.filter((c) => c.inline !== undefined).map((c) => c.point))).toEqual(
      new Set(CRASH_POINTS.filter((p) => p !== 'after_admission_before_enqueue')),
    );
  });

  for (const c of CASES) {
    it(`${c.inline !== undefined ? 'inside the waited submit: ' : ''}${c.point} (${c.flow}${c.lost === 'answer' ? ', provider answer lost' : c.lost === 'retry_answer' ? ', answer to the retry lost' : ''}): ${c.recovery} → ${c.final}`, async () => {
      await runCase(c);
    });
  }
});
