/**
 * Runtime.sweep() reports the age of the oldest outcome_unknown record (the
 * sweeper publishes it as OldestOutcomeUnknownAgeSeconds, which the stack
 * alarms on). Age = now − the record's last write (`updated_at`): when it
 * (re-)entered outcome_unknown or was escalated. Escalated records count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer, type ScenarioName } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-sweep-age' });
});
afterAll(async () => h.destroy());

const record = async (tx: string) => {
  const r = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
  if (r === undefined) throw new Error(`no record ${tx}`);
  return r;
};
const age = async () => (await h.runtime.sweep(h.clock.now())).oldest_outcome_unknown_age_seconds;
const reconcile = (tx: string) => h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });

async function outcomeUnknown(scenario: ScenarioName) {
  const tx = uid('tx');
  await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario }));
  await h.drain();
  const r = await record(tx);
  expect(r.status).toBe('outcome_unknown');
  return r;
}

/** Advances the clock to the record's next_reconcile_at (if it is later). */
async function untilDue(tx: string) {
  const due = Date.parse((await record(tx)).next_reconcile_at as string);
  h.clock.advance(Math.max(0, due - h.clock.now().getTime()));
}

describe('Runtime.sweep: oldest outcome_unknown age', () => {
  it('is 0 when nothing is outcome_unknown; then the seconds since the record’s last write; an inconclusive reconciliation restarts it', async () => {
    expect(await age()).toBe(0);

    const b = await outcomeUnknown('uncertain');
    expect(b.updated_at).toBe(h.clock.iso());
    h.clock.advance(40_500);
    expect(await age()).toBe(40);

    provider.operations.set(b.provider_operation?.operation_id as string, 'pending');
    await untilDue(b.transaction_id);
    expect((await reconcile(b.transaction_id)).disposition).toBe('still_unknown');
    expect((await record(b.transaction_id)).updated_at).toBe(h.clock.iso());
    expect(await age()).toBe(0);
    h.clock.advance(20_000);
    expect(await age()).toBe(20);

    provider.operations.set(b.provider_operation?.operation_id as string, 'committed');
    await untilDue(b.transaction_id);
    expect((await reconcile(b.transaction_id)).disposition).toBe('reconciled');
    expect(await age()).toBe(0);
  });

  it('counts escalated records (which the sweeper no longer enqueues), and reports the oldest of all', async () => {
    const a = await outcomeUnknown('uncertain_silent');
    await untilDue(a.transaction_id);
    expect((await reconcile(a.transaction_id)).disposition).toBe('escalated');
    const escalatedAt = Date.parse((await record(a.transaction_id)).escalated_at as string);
    expect(escalatedAt).toBe(h.clock.now().getTime());

    h.clock.advance(600_000);
    await h.receiveReconciles();
    const swept = await h.runtime.sweep(h.clock.now());
    expect(swept).toEqual({ enqueued: 0, oldest_outcome_unknown_age_seconds: 600 });

    const c = await outcomeUnknown('uncertain');
    h.clock.advance(30_000);
    expect(await age()).toBe(630);
    // The younger record alone would be 30 s old.
    expect(Math.floor((h.clock.now().getTime() - Date.parse(c.updated_at)) / 1000)).toBe(30);
  });
});
