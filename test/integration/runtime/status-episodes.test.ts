/**
 * One byStatus entry per episode (docs/table-design.md, "`byStatus`", "One entry per episode")
 * through the Runtime, against DynamoDB Local and fauxqs: a claimed plan keeps its `planned`
 * entry and a due reconciliation its `outcome_unknown` entry, and still
 * - the sweeper re-drives a stuck `committing` and a stuck `reconciling` record once the stall
 *   time has passed since the record entered its status (not since its entry's older sort time),
 *   and leaves fresh ones alone;
 * - escalated records stay out of the sweeper;
 * - the operator views and the overview list and count each record in its own status only;
 * - the oldest-outcome_unknown age counts no record that is being reconciled.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import type { OperatorView } from '../../../lib/runtime/reads.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer, type ScenarioName } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

const STALL_MS = 60_000;

function harnessFor(prefix: string) {
  const provider = new TestProvider();
  let h!: Harness;
  beforeAll(async () => {
    h = await createHarness({ connectors: [testConnector(provider)], prefix, config: { stall_after_ms: STALL_MS } });
  });
  afterAll(async () => h?.destroy());

  const record = async (tx: string) => {
    const r = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
    if (r === undefined) throw new Error(`no record ${tx}`);
    return r;
  };
  const rawEntry = async (tx: string) =>
    (await h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: keys.transaction(TENANT, tx), ConsistentRead: true }))).Item?.GSI3PK;
  const listed = async (view: OperatorView) =>
    (await h.runtime.listOperator(operator, { view, limit: 100 })).items.map(
      (i) => (i as { transaction: { transaction_id: string } }).transaction.transaction_id,
    );
  const counts = async () => Object.fromEntries((await h.runtime.operatorOverview(operator, TENANT)).views.map((v) => [v.view, v.count]));

  /** An execute whose provider response is lost: outcome_unknown, due 5 s later. */
  async function outcomeUnknown(scenario: ScenarioName = 'uncertain'): Promise<string> {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario }));
    await h.drain();
    expect((await record(tx)).status).toBe('outcome_unknown');
    return tx;
  }
  async function untilDue(tx: string): Promise<void> {
    const due = Date.parse((await record(tx)).next_reconcile_at as string);
    h.clock.advance(Math.max(0, due - h.clock.now().getTime()));
  }
  /** A reconcile request for `tx` admitted (outcome_unknown → reconciling) whose attempt is never enqueued. */
  async function stuckReconciling(tx: string): Promise<void> {
    h.crash.arm('after_admission_before_enqueue');
    const request = { action: transfer(uid('r'), { transaction: { mode: 'reconcile' } }), transaction_id: tx, requested_by: caller().principal };
    expect(await codeOf(h.runtime.submit(caller(), request))).toBe('runtime.crash_injected');
    expect((await record(tx)).status).toBe('reconciling');
  }
  return {
    provider,
    get h() {
      return h;
    },
    record,
    rawEntry,
    listed,
    counts,
    outcomeUnknown,
    untilDue,
    stuckReconciling,
  };
}

describe('the sweeper and the operator views over kept entries', () => {
  const s = harnessFor('rt-episodes');
  const commit = (tx: string) => transfer(uid('c'), { transaction: { mode: 'commit', plan_id: `plan:${tx}` } });

  it('a stuck commit of a plan is re-driven once the stall time has passed since its claim, not since the plan', async () => {
    const { h } = s;
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }));
    // The plan's entry is older than the stall time when the commit claims it.
    h.clock.advance(2 * STALL_MS);
    h.crash.arm('after_admission_before_enqueue');
    expect(await codeOf(h.runtime.submit(caller(), commit(tx)))).toBe('runtime.crash_injected');
    expect((await s.record(tx)).status).toBe('committing');
    expect(await s.rawEntry(tx)).toMatch(/^STATUS#planned#\d\d$/);

    // Fresh: neither swept nor listed as stalled; never a plan to expire either.
    await h.runtime.sweep(h.clock.now());
    expect((await h.drain()).map((o) => o.transaction_id)).not.toContain(tx);
    expect((await s.record(tx)).status).toBe('committing');
    expect(await s.listed('stalled_committing')).not.toContain(tx);
    expect((await s.counts()).stalled_committing).toBe(0);

    h.clock.advance(STALL_MS + 1);
    expect(await s.listed('stalled_committing')).toEqual([tx]);
    expect((await s.counts()).stalled_committing).toBe(1);
    await h.runtime.sweep(h.clock.now());
    expect((await h.drain()).map((o) => o.transaction_id)).toEqual([tx]);
    expect((await s.record(tx)).status).toBe('committed');
    expect(s.provider.count('commit', tx) + s.provider.count('invoke', tx)).toBe(1);
    expect(await s.rawEntry(tx)).toBeUndefined();
    expect(await s.listed('stalled_committing')).toEqual([]);
  });

  it('a stuck reconciliation is re-driven once the stall time has passed since it began; listed as reconciling, not outcome_unknown', async () => {
    const { h } = s;
    const tx = await s.outcomeUnknown();
    await s.untilDue(tx);
    h.clock.advance(2 * STALL_MS);
    await h.receiveReconciles();
    await s.stuckReconciling(tx);
    expect(await s.rawEntry(tx)).toMatch(/^STATUS#outcome_unknown#\d\d$/);

    // Fresh: the sweeper enqueues nothing for it (its entry is due, its record is reconciling and not stalled).
    await h.runtime.sweep(h.clock.now());
    expect((await h.receiveReconciles()).map((m) => m.transaction_id)).not.toContain(tx);
    expect(await s.listed('reconciling')).toEqual([tx]);
    expect(await s.listed('outcome_unknown')).not.toContain(tx);
    expect(await s.counts()).toMatchObject({ reconciling: 1, outcome_unknown: 0 });

    h.clock.advance(STALL_MS + 1);
    await h.runtime.sweep(h.clock.now());
    const messages = (await h.receiveReconciles()).filter((m) => m.transaction_id === tx);
    expect(messages).toEqual([expect.objectContaining({ reason: 'sweeper' })]);
    expect((await h.runtime.reconcile(messages[0] as (typeof messages)[0])).disposition).toBe('reconciled');
    expect((await s.record(tx)).status).toBe('reconciled');
    expect(await s.rawEntry(tx)).toBeUndefined();
    expect(await s.listed('reconciling')).toEqual([]);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('escalated records stay out of the sweeper, and out of the outcome_unknown and reconciling views', async () => {
    const { h } = s;
    const tx = await s.outcomeUnknown('uncertain_silent');
    await s.untilDue(tx);
    expect((await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' })).disposition).toBe('escalated');
    expect(await s.rawEntry(tx)).toMatch(/^STATUS#outcome_unknown#escalated#\d\d$/);
    h.clock.advance(10 * STALL_MS);
    await h.runtime.sweep(h.clock.now());
    expect((await h.receiveReconciles()).map((m) => m.transaction_id)).not.toContain(tx);
    expect(await s.listed('requires_human')).toContain(tx);
    expect(await s.listed('outcome_unknown')).not.toContain(tx);
    expect(await s.listed('reconciling')).not.toContain(tx);
  });
});

describe('the oldest outcome_unknown age', () => {
  const s = harnessFor('rt-episodes-age');

  it('does not count a record being reconciled, whose kept entry is older; counts it again from its return to outcome_unknown', async () => {
    const { h } = s;
    const age = async () => (await h.runtime.sweep(h.clock.now())).oldest_outcome_unknown_age_seconds;
    // b: outcome_unknown first, and its reconciliation begins (and stalls) 5 s later.
    const b = await s.outcomeUnknown();
    await s.untilDue(b);
    await s.stuckReconciling(b);
    expect(await s.rawEntry(b)).toMatch(/^STATUS#outcome_unknown#\d\d$/);
    // a: outcome_unknown 25 s later.
    h.clock.advance(25_000);
    const a = await s.outcomeUnknown();
    h.clock.advance(70_000);
    expect(await age()).toBe(70);
    expect(await s.counts()).toMatchObject({ outcome_unknown: 1, reconciling: 1 });
    await h.receiveReconciles();

    // b's reconciliation is re-driven and stays inconclusive: b is outcome_unknown again from now.
    s.provider.operations.set((await s.record(b)).provider_operation?.operation_id as string, 'pending');
    expect((await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: b, reason: 'sweeper' })).disposition).toBe('still_unknown');
    expect(await s.rawEntry(b)).toMatch(/^STATUS#outcome_unknown#\d\d$/);
    h.clock.advance(10_000);
    expect(await age()).toBe(80);
    expect(await s.counts()).toMatchObject({ outcome_unknown: 2, reconciling: 0 });
    expect((await s.record(a)).status).toBe('outcome_unknown');
  });
});
