/**
 * Crash points between units of work (issue 21): every durable change is one
 * commit of the unit of work, so the process can die only between two of
 * them. An execute with an idempotency key is run once to list its commits;
 * then, for each commit N, a fresh execute crashes right after its Nth commit
 * and is recovered only through the real mechanisms (SQS redelivery after the
 * lease, the sweeper, reconciliation). Asserted for every N:
 *
 * - it ends: committed, reconciled, or an escalated outcome_unknown (no
 *   operation to look up), and the action is terminal with its result;
 * - nothing duplicated: the provider saw at most one invocation of the intent;
 *   a recovery that cannot know whether the provider acted never calls it blindly;
 * - nothing lost: a committed or reconciled record carries the provider's effect,
 *   the receipt chain verifies;
 * - the key answers: a replay of the same request under the same key answers
 *   the action's final result (or, while the outcome is unknown,
 *   idempotency.outcome_unknown) and never executes again.
 *
 * Driving the recovery waits for events, not rounds: each step moves the
 * simulated clock past the lease and stall thresholds, then sweeps, drains and
 * runs due reconciliations; the test fails if a step changes nothing while the
 * records are not final.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
/** Past the attempt lease (capability timeout + margin) and the stall threshold. */
const STEP_MS = 120_000;

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-uow-crash', config: { stall_after_ms: 60_000 } });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const action = (a: string) => h.stores.actions.get({ tenant_id: TENANT, action_id: a });

function isFinal(rec: Awaited<ReturnType<typeof record>>): boolean {
  if (rec === undefined) return false;
  return (
    rec.status === 'committed' || rec.status === 'reconciled' || rec.status === 'failed' || (rec.status === 'outcome_unknown' && rec.escalated_at !== undefined)
  );
}

/** Submits an execute; a crash inside the submit (after the admission's commit) is the process dying there. */
async function submit(key: string) {
  const a = uid('a');
  const tx = uid('tx');
  const out = await h.runtime
    .submit(caller(), transfer(a, { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key }))
    .catch((err: unknown) => err);
  return { a, tx, out };
}

/** Recovers through redelivery, the sweeper and reconciliation until the records are final; each step must change something. */
async function recover(a: string, tx: string): Promise<void> {
  let seen = '';
  for (;;) {
    await h.drain();
    const [rec, act] = [await record(tx), await action(a)];
    if (isFinal(rec) && act !== undefined && ['completed', 'failed', 'cancelled'].includes(act.status)) return;
    const state = JSON.stringify([rec?.status, rec?.revision, act?.status, act?.revision, rec?.reconcile_attempts]);
    if (state === seen) throw new Error(`recovery made no progress: ${state}`);
    seen = state;
    h.clock.advance(STEP_MS);
    await h.runtime.sweep();
    if (rec?.status === 'outcome_unknown') await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
  }
}

/**
 * The same request under the same key from a new action ID: it answers the first action's final result marked as a
 * replay, or idempotency.outcome_unknown while the record's outcome is unknown; the provider is not called again.
 */
async function expectKeyAnswers(key: string, a: string, tx: string, label: string): Promise<void> {
  await h.drain(); // the crashed delivery's redelivery, if still queued, finds the records settled
  const invoked = provider.count('invoke', tx);
  const first = await action(a);
  const rec = await record(tx);
  const again = uid('a');
  const replay = h.runtime.submit(caller(), transfer(again, { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key }));
  if (rec?.status === 'outcome_unknown') expect(await codeOf(replay), label).toBe('idempotency.outcome_unknown');
  else {
    const out = await replay;
    expect(out.disposition, label).toBe('replayed');
    expect(out.action_result, label).toMatchObject({ status: first?.status, replayed: true, metadata: { replayed_from: a } });
    expect(out.action_result.output, label).toEqual(first?.result?.output);
  }
  expect(await h.drain(), label).toEqual([]); // the replay enqueued nothing
  expect(provider.count('invoke', tx), label).toBe(invoked);
}

describe('a crash between any two units of work of an execute', () => {
  let commits: (readonly string[])[] = [];

  beforeAll(async () => {
    h.crash.countCommits();
    const { a, tx } = await submit(uid('key'));
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
    expect((await action(a))?.status).toBe('completed');
    commits = [...h.crash.commits];
  });

  it('an execute commits few units of work: admission, attempt start, settlement of the action then of the record (and a checkpoint when the connector makes one)', () => {
    expect(commits[0]).toEqual(expect.arrayContaining(['action.create', 'idempotency.reserve', 'transaction.create']));
    // The reservation as admitted outlives the retention counted from a prompt settlement: the settlement leaves it alone.
    // The action settles alone first (its result is the durable answer), then the record with its receipt.
    expect(commits.slice(-2)).toEqual([['action.settle'], ['transaction.settle']]);
    expect(commits.length).toBeLessThanOrEqual(5);
  });

  it('after each commit N: the records end final, the provider saw at most one invocation, the chain verifies', async () => {
    for (let n = 1; n <= commits.length; n++) {
      const key = uid('key');
      h.crash.armAfterCommit(n);
      const { a, tx, out } = await submit(key);
      if (n === 1) expect(await codeOf(Promise.reject(out))).toBe('runtime.crash_injected');
      await recover(a, tx);
      h.crash.disarm();
      const rec = await record(tx);
      const invoked = provider.count('invoke', tx);
      expect(invoked, `commit ${n} (${commits[n - 1]?.join(', ')})`).toBeLessThanOrEqual(1);
      if (rec?.status === 'committed' || rec?.status === 'reconciled') expect(invoked).toBe(1);
      if (rec?.status === 'outcome_unknown') expect(rec.provider_operation).toBeUndefined();
      expect((await action(a))?.result).toBeDefined();
      await expectKeyAnswers(key, a, tx, `commit ${n}`);
      expect((await h.verifyChain(tx)).valid, `commit ${n}`).toBe(true);
    }
  });
});
