/**
 * A provider outage at scale turns every execute into an `outcome_unknown`
 * record and one CreateSchedule call; EventBridge Scheduler refuses calls
 * beyond its quotas (ThrottlingException, HTTP 429; ServiceQuotaExceededException,
 * HTTP 402). A refused schedule must lose nothing: the attempt settles and
 * acknowledges its message, the record stays durable in the status index, and
 * the sweeper re-drives its reconciliation once it is due
 * (docs/bench/analysis.md, "Scale on paper").
 *
 * The records, the sweeper and the queues are real (DynamoDB Local, fauxqs);
 * only the Scheduler API is mocked (aws-sdk-client-mock: no emulator returns
 * its throttling errors), behind the real EventBridge Scheduler adapter.
 */
import { mockClient } from 'aws-sdk-client-mock';
import { CreateScheduleCommand, DeleteScheduleCommand, SchedulerClient, ServiceQuotaExceededException, ThrottlingException } from '@aws-sdk/client-scheduler';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EventBridgeReconcileScheduler, reconcileScheduleName } from '../../../lib/aws/scheduler/scheduler.js';
import { Runtime } from '../../../lib/runtime/runtime.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

const schedulerMock = mockClient(SchedulerClient);
// The integration files share a module graph (vitest.config.ts): the client's own send comes back after this file.
afterAll(() => schedulerMock.restore());
const client = new SchedulerClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });

/** The errors Scheduler answers with when a call exceeds a quota (shapes of @aws-sdk/client-scheduler). */
const throttled = () => new ThrottlingException({ message: 'Rate exceeded', Message: 'Rate exceeded', $metadata: { httpStatusCode: 429 } });
const quotaExceeded = () => new ServiceQuotaExceededException({ message: 'Quota exceeded', Message: 'Quota exceeded', $metadata: { httpStatusCode: 402 } });

let h: Harness;
let runtime: Runtime;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-sched-throttle' });
  const scheduler = new EventBridgeReconcileScheduler({
    client,
    groupName: 'aip-reconcile',
    targetQueueArn: 'arn:aws:sqs:eu-west-1:123456789012:aip-reconcile',
    roleArn: 'arn:aws:iam::123456789012:role/aip-scheduler',
    clock: { now: h.clock.now },
  });
  // The harness's stores, queues and clock, with the real Scheduler adapter.
  runtime = new Runtime({ ...h.readDeps, scheduler, registry: h.registry, connectors: h.connectors });
});
afterAll(async () => h.destroy());
beforeEach(() => {
  schedulerMock.reset();
});

const record = async (tx: string) => {
  const r = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
  if (r === undefined) throw new Error(`no record ${tx}`);
  return r;
};

/** Runs every visible invoke message through the runtime under test. */
async function runInvokes() {
  const outcomes = [];
  for (const { message } of await h.receiveInvokes()) outcomes.push(await runtime.runAttempt(message));
  return outcomes;
}

/** Moves the clock to the latest next_reconcile_at of `txs`. */
async function due(txs: readonly string[]) {
  const at = Math.max(...(await Promise.all(txs.map(async (tx) => Date.parse((await record(tx)).next_reconcile_at as string)))));
  h.clock.advance(Math.max(0, at - h.clock.now().getTime()));
}

describe('EventBridge Scheduler refuses the reconciliation trigger', () => {
  it('ThrottlingException and ServiceQuotaExceededException: the records stay durable and the sweeper re-drives their reconciliation', async () => {
    schedulerMock.on(CreateScheduleCommand).rejectsOnce(throttled()).rejectsOnce(quotaExceeded());
    schedulerMock.on(DeleteScheduleCommand).rejects(throttled());

    const txs = [uid('tx'), uid('tx')];
    for (const tx of txs) {
      const out = await runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
      expect(out.disposition).toBe('accepted');
    }
    const outcomes = await runInvokes();
    // Each attempt settled and acknowledges its message: a refused trigger is not a failed attempt.
    expect(outcomes.map((o) => [o.transaction_id, o.disposition, o.retry, o.transaction_status]).sort()).toEqual(
      txs.map((tx) => [tx, 'settled', false, 'outcome_unknown']).sort(),
    );
    // One CreateSchedule per record, each refused.
    const created = schedulerMock.commandCalls(CreateScheduleCommand).map((c) => c.args[0].input.Name);
    expect(created.sort()).toEqual(txs.map((tx) => reconcileScheduleName({ tenant_id: TENANT, transaction_id: tx })).sort());
    for (const tx of txs) {
      const r = await record(tx);
      expect(r).toMatchObject({ status: 'outcome_unknown', reconcile_attempts: 0 });
      expect(r.next_reconcile_at).toBeDefined();
      expect(r.provider_operation).toBeDefined();
      expect((await h.verifyChain(tx)).valid).toBe(true);
    }

    // Not due yet: the sweeper leaves them alone.
    expect((await runtime.sweep(h.clock.now())).enqueued).toBe(0);
    expect(await h.receiveReconciles()).toEqual([]);

    // Due: the sweeper finds both through the status index and enqueues their reconciliation.
    await due(txs);
    const swept = await runtime.sweep(h.clock.now());
    expect(swept.enqueued).toBe(2);
    const messages = await h.receiveReconciles();
    expect(messages.map((m) => [m.transaction_id, m.reason]).sort()).toEqual(txs.map((tx) => [tx, 'sweeper']).sort());

    // One settles once the provider answers, although deleting its trigger is throttled as well.
    const [done, still] = txs as [string, string];
    provider.operations.set((await record(done)).provider_operation?.operation_id as string, 'committed');
    expect((await runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: done, reason: 'sweeper' })).disposition).toBe('reconciled');
    expect((await record(done)).status).toBe('reconciled');
    expect((await h.verifyChain(done)).valid).toBe(true);

    // The other: the provider still does not know. Its next trigger is refused too (DeleteSchedule and
    // CreateSchedule throttled): the record stays outcome_unknown, due later, and the sweeper finds it again.
    schedulerMock.on(CreateScheduleCommand).rejects(throttled());
    provider.operations.set((await record(still)).provider_operation?.operation_id as string, 'pending');
    expect((await runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: still, reason: 'sweeper' })).disposition).toBe('still_unknown');
    expect(await record(still)).toMatchObject({ status: 'outcome_unknown', reconcile_attempts: 1 });
    expect((await runtime.sweep(h.clock.now())).enqueued).toBe(0);
    await due([still]);
    expect((await runtime.sweep(h.clock.now())).enqueued).toBe(1);
    expect((await h.receiveReconciles()).map((m) => m.transaction_id)).toEqual([still]);
    provider.operations.set((await record(still)).provider_operation?.operation_id as string, 'committed');
    expect((await runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: still, reason: 'sweeper' })).disposition).toBe('reconciled');
    expect((await h.verifyChain(still)).valid).toBe(true);
    expect(schedulerMock.commandCalls(DeleteScheduleCommand).length).toBeGreaterThan(0);
    // Nothing left behind: no open record, nothing for the sweeper.
    expect((await h.table.store.listByStatus({ status: 'outcome_unknown' })).items).toEqual([]);
    expect((await runtime.sweep(h.clock.now())).enqueued).toBe(0);
  });
});
