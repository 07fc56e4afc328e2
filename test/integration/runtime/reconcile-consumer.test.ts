/**
 * What the reconcile consumer reads and writes (issue 21, change 18).
 *
 * The reconcile consumer's action is created already leased (docs/table-design.md, "The reconcile action created
 * leased"): its creation is its first attempt's lease (running, fence 1, attempt 1, owner, expiry, route pinned), so
 * the attempt writes no lease of its own. The begin (outcome_unknown → reconciling) still comes before any provider
 * call. Every path around it, against DynamoDB Local through the real SDK client: the requests a reconcile makes, the
 * begin refused after the creation (the action ends), a crash after the creation and one after the begin (the
 * sweeper's re-drive recovers the leased action once its lease lapsed), and two concurrent consumers.
 *
 * A schedule's message carries the `outcome_unknown` record it was created for (docs/runtime.md, "The reconcile
 * consumer's first read"), built here by the production Scheduler adapter exactly as its CreateSchedule Input: the
 * first delivery starts from it without reading the record; a redelivery reads; an image the record moved past
 * (re-driven, or escalated, between scheduling and firing) is refused by the begin or answered from a read, with the
 * answer a read gives.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { committingJournal } from '../../support/store-writes.js';
import { uid } from '../../support/transaction-fixtures.js';
import type { ActionRecord } from '../../../lib/ports/action-store.js';
import type { TransactionRecord } from '../../../lib/ports/transaction-store.js';
import { RECEIPT_EVENTS } from '../../../lib/runtime/journal.js';
import { reconcileActionId } from '../../../lib/runtime/reconciliation.js';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { EventBridgeReconcileScheduler } from '../../../lib/aws/scheduler/scheduler.js';
import { decodeQueueMessage, type ReconcileMessage } from '../../../lib/ports/messages.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, type Harness } from './support.js';

const STALL_MS = 60_000;
let h: Harness;
let journal: ReturnType<typeof committingJournal>;
const provider = new TestProvider();

interface Request {
  readonly command: string;
  readonly pk: string;
}
const requests: Request[] = [];
/**
 * Runs once, just before the next write of a transaction record (the begin: an UpdateItem of the `TXN#` item when its
 * receipt is inside the record, else a TransactWriteItems): the moment a concurrent writer moves the record.
 */
let beforeNextRecordWrite: (() => Promise<void>) | undefined;

function pkOf(input: { Key?: { PK?: unknown }; Item?: { PK?: unknown } }): string {
  const raw = input.Key?.PK ?? input.Item?.PK;
  return typeof raw === 'string' ? raw : '';
}

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-rcn-leased', config: { stall_after_ms: STALL_MS } });
  journal = committingJournal(h.table.stores.uow, { now: h.clock.now });
  h.table.raw.middlewareStack.add(
    (next, context) => async (args) => {
      const recordWrite =
        context.commandName === 'TransactWriteItemsCommand' ||
        (context.commandName === 'UpdateItemCommand' && pkOf(args.input as Parameters<typeof pkOf>[0]).startsWith('TXN#'));
      if (recordWrite && beforeNextRecordWrite !== undefined) {
        const run = beforeNextRecordWrite;
        beforeNextRecordWrite = undefined;
        await run();
      }
      requests.push({ command: String(context.commandName), pk: pkOf(args.input as Parameters<typeof pkOf>[0]) });
      return next(args);
    },
    { step: 'initialize', name: 'recordRequests' },
  );
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const action = (id: string) => h.stores.actions.get({ tenant_id: TENANT, action_id: id });
const msg = (tx: string) => ({ kind: 'reconcile' as const, tenant_id: TENANT, transaction_id: tx, reason: 'schedule' as const });

async function uncertain(): Promise<{ tx: string; rcn: string }> {
  const tx = uid('tx');
  await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
  await h.drain();
  const rec = (await record(tx)) as TransactionRecord;
  expect(rec.status).toBe('outcome_unknown');
  h.clock.advance(5_000);
  return { tx, rcn: reconcileActionId(TENANT, tx, rec.reconcile_attempts + 1) };
}

/** Moves the clock past the reconcile action's lease and the stall time, then runs the sweeper and the messages it sent. */
async function sweepAfterLease(rcn: string): Promise<void> {
  const leased = (await action(rcn)) as ActionRecord;
  h.clock.advanceTo(Date.parse(leased.lease_expires_at as string) + 1);
  h.clock.advance(STALL_MS + 1);
  await h.runtime.sweep();
  for (const m of await h.receiveReconciles()) await h.runtime.reconcile(m);
}

describe('The reconcile action is created leased', () => {
  it('one PutItem creates it running at fence 1 with its route; no lease UpdateItem of it follows; reconciled', async () => {
    const { tx, rcn } = await uncertain();
    const from = requests.length;
    h.crash.countCommits();
    const out = await h.runtime.reconcile(msg(tx));
    expect(out).toMatchObject({ disposition: 'reconciled', action_id: rcn, transaction_status: 'reconciled' });
    const seen = requests.slice(from);
    const onAction = seen.filter((r) => r.pk.startsWith('ACTION#') && r.pk.includes(rcn)).map((r) => r.command);
    // The creation (the lease) and nothing else on the item until the settlement's TransactWriteItems.
    expect(onAction).toEqual(['PutItemCommand']);
    expect(seen.filter((r) => r.command === 'UpdateItemCommand' && r.pk.includes(rcn))).toEqual([]);
    // Units of work: the creation, the begin, the settlement, then the original's side records.
    expect(h.crash.commits[0]).toEqual(['action.create']);
    expect(h.crash.commits[1]).toEqual(['transaction.transition']);
    expect(h.crash.commits[2]).toEqual(expect.arrayContaining(['transaction.settle', 'action.settle']));
    expect(h.crash.commits.flat()).not.toContain('action.lease');
    const settled = (await action(rcn)) as ActionRecord;
    expect(settled).toMatchObject({ status: 'completed', fence: 1, attempt: 1, revision: 2 });
    expect(settled.route).toMatchObject({ action_id: rcn, fence_token: 1 });
    expect(provider.count('reconcile', tx)).toBe(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('the begin refused after the creation (the record moved): in progress, and the leased action ends without a provider call', async () => {
    const { tx, rcn } = await uncertain();
    beforeNextRecordWrite = async () => {
      const current = (await record(tx)) as TransactionRecord;
      await journal.transition(
        current,
        { operation: 'begin_reconcile', from: ['outcome_unknown'], to: 'reconciling', data: { reconcile_action_id: 'rcn-someone-else' } },
        RECEIPT_EVENTS.reconcile_started,
      );
    };
    expect(await h.runtime.reconcile(msg(tx))).toMatchObject({ disposition: 'in_progress' });
    expect((await record(tx))?.data.reconcile_action_id).toBe('rcn-someone-else');
    const ended = (await action(rcn)) as ActionRecord;
    expect(ended).toMatchObject({ status: 'failed', fence: 1, revision: 2 });
    expect(ended.lease_owner).toBeUndefined();
    expect(provider.count('reconcile', tx)).toBe(0);
  });

  it('a crash after the leased creation (before the begin): answered in progress while the lease lives, then the sweeper’s re-drive reconciles once', async () => {
    const { tx, rcn } = await uncertain();
    h.crash.armAfterCommit(1);
    expect(await codeOf(h.runtime.reconcile(msg(tx)))).toBe('runtime.crash_injected');
    h.crash.disarm();
    expect(await action(rcn)).toMatchObject({ status: 'running', fence: 1, revision: 1 });
    expect((await record(tx))?.status).toBe('outcome_unknown');
    // Another delivery while the lease lives: the creating consumer may still be running.
    expect(await h.runtime.reconcile(msg(tx))).toMatchObject({ disposition: 'in_progress', action_id: rcn });
    expect(await action(rcn)).toMatchObject({ status: 'running', fence: 1, revision: 1 });
    await sweepAfterLease(rcn);
    expect(await record(tx)).toMatchObject({ status: 'reconciled', data: { reconcile_action_id: rcn } });
    // The resumed admission began with the same action, whose attempt leased it again (fence 2).
    expect(await action(rcn)).toMatchObject({ status: 'completed', fence: 2 });
    expect(provider.count('reconcile', tx)).toBe(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('a crash after the begin (before the provider call): the sweeper re-drives the reconciling record once the lease lapsed', async () => {
    const { tx, rcn } = await uncertain();
    h.crash.armAfterCommit(2);
    expect(await codeOf(h.runtime.reconcile(msg(tx)))).toBe('runtime.crash_injected');
    h.crash.disarm();
    expect(await record(tx)).toMatchObject({ status: 'reconciling', data: { reconcile_action_id: rcn } });
    // The lease lives: the re-drive is refused and writes nothing.
    expect(await h.runtime.reconcile(msg(tx))).toMatchObject({ disposition: 'in_progress' });
    expect(await action(rcn)).toMatchObject({ status: 'running', fence: 1, revision: 1 });
    await sweepAfterLease(rcn);
    expect((await record(tx))?.status).toBe('reconciled');
    expect(await action(rcn)).toMatchObject({ status: 'completed', fence: 2 });
    expect(provider.count('reconcile', tx)).toBe(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('two concurrent consumers: one creation wins; the other is answered in progress (or finds it done); one provider call', async () => {
    const { tx, rcn } = await uncertain();
    const outs = await Promise.all([h.runtime.reconcile(msg(tx)), h.runtime.reconcile(msg(tx))]);
    const dispositions = outs.map((o) => o.disposition);
    expect(dispositions).toContain('reconciled');
    for (const d of dispositions) expect(['reconciled', 'in_progress', 'not_applicable']).toContain(d);
    expect((await record(tx))?.status).toBe('reconciled');
    expect(await action(rcn)).toMatchObject({ status: 'completed', fence: 1 });
    expect(provider.count('reconcile', tx)).toBe(1);
    const receipts = await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 });
    expect(receipts.items.filter((r) => r.receipt.event === RECEIPT_EVENTS.reconcile_started)).toHaveLength(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });
});

/** The production adapter, for the Input of the CreateSchedule it would send (no request is sent). */
const adapter = new EventBridgeReconcileScheduler({
  client: new SchedulerClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
  groupName: 'aip-reconcile',
  targetQueueArn: 'arn:aws:sqs:eu-west-1:123456789012:aip-reconcile',
  roleArn: 'arn:aws:iam::123456789012:role/aip-scheduler',
});

/** The message the last schedule the runtime asked for would deliver. */
function scheduledMessage(tx: string): ReconcileMessage {
  const request = h.scheduler.for(tx).at(-1);
  if (request === undefined) throw new Error(`no schedule for ${tx}`);
  return decodeQueueMessage(adapter.createInput(request).input.Target?.Input as string) as ReconcileMessage;
}

function getsDuring(from: number, prefix: string): number {
  return requests.slice(from).filter((r) => r.command === 'GetItemCommand' && r.pk.startsWith(prefix)).length;
}

describe('A schedule’s message carries the record it was created for', () => {
  it('the first delivery starts from it: the original action is the only read; reconciled', async () => {
    const { tx, rcn } = await uncertain();
    const m = scheduledMessage(tx);
    expect(m.scheduled?.transaction).toMatchObject({ transaction_id: tx, status: 'outcome_unknown' });
    expect(JSON.stringify(m)).not.toContain('"input"');
    const from = requests.length;
    expect(await h.runtime.reconcile(m)).toMatchObject({ disposition: 'reconciled', action_id: rcn, transaction_status: 'reconciled' });
    expect(getsDuring(from, 'TXN#')).toBe(0);
    expect(getsDuring(from, 'ACTION#')).toBe(1);
    expect(requests.slice(from).filter((r) => r.command === 'BatchGetItemCommand')).toEqual([]);
    expect(provider.count('reconcile', tx)).toBe(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('a redelivery reads the record, as a message of IDs does', async () => {
    const { tx } = await uncertain();
    const from = requests.length;
    expect(await h.runtime.reconcile(scheduledMessage(tx), { receive_count: 2 })).toMatchObject({ disposition: 'reconciled' });
    expect(getsDuring(from, 'TXN#')).toBe(1);
  });

  it('re-driven between scheduling and firing (reconciled by the sweeper’s message): the image is not current, the read answers not_applicable; one provider call', async () => {
    const { tx } = await uncertain();
    const m = scheduledMessage(tx);
    expect(await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'sweeper' })).toMatchObject({
      disposition: 'reconciled',
    });
    const from = requests.length;
    expect(await h.runtime.reconcile(m)).toMatchObject({ disposition: 'not_applicable', transaction_status: 'reconciled' });
    expect(getsDuring(from, 'TXN#')).toBeGreaterThanOrEqual(1);
    expect(provider.count('reconcile', tx)).toBe(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('the schedule’s message and the sweeper’s at once: one reconciliation, one provider call; the other is in progress or finds it done', async () => {
    const { tx, rcn } = await uncertain();
    const outs = await Promise.all([
      h.runtime.reconcile(scheduledMessage(tx)),
      h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'sweeper' }),
    ]);
    const dispositions = outs.map((o) => o.disposition);
    expect(dispositions).toContain('reconciled');
    for (const d of dispositions) expect(['reconciled', 'in_progress', 'not_applicable']).toContain(d);
    expect(await record(tx)).toMatchObject({ status: 'reconciled', data: { reconcile_action_id: rcn } });
    expect(await action(rcn)).toMatchObject({ status: 'completed' });
    expect(provider.count('reconcile', tx)).toBe(1);
    const receipts = await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 });
    expect(receipts.items.filter((r) => r.receipt.event === RECEIPT_EVENTS.reconcile_started)).toHaveLength(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('escalated by an operator between scheduling and firing: the begin from the image is refused, its action ends, and the read answers requires_human', async () => {
    const { tx, rcn } = await uncertain();
    const m = scheduledMessage(tx);
    const current = (await record(tx)) as TransactionRecord;
    await journal.transition(
      current,
      { operation: 'escalate', from: ['outcome_unknown'], to: 'outcome_unknown', data: { escalation_reason: 'operator' } },
      RECEIPT_EVENTS.escalated,
      { escalated: true, reason: 'operator', reconcile_attempts: current.reconcile_attempts },
    );
    expect(await h.runtime.reconcile(m)).toMatchObject({ disposition: 'requires_human', reason: 'escalated' });
    const after = (await record(tx)) as TransactionRecord;
    expect(after.status).toBe('outcome_unknown');
    expect(after.escalated_at).toBeDefined();
    expect(after.revision).toBe(current.revision + 1);
    // The action the image admitted was created leased, then ended when its begin lost: it never reached the provider.
    expect(await action(rcn)).toMatchObject({ status: 'failed', fence: 1, revision: 2 });
    expect(provider.count('reconcile', tx)).toBe(0);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });
});
