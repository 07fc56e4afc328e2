/**
 * Records a request already holds are not read again: a commit's recheck
 * starts from the planned record `prepare` read, the reconcile consumer's
 * admission from the record it examined, a transaction view from the action
 * record getAction read; a wait polls the action item alone, and the poll
 * that sees it settled builds the view from it; a view of a
 * chain of exactly one page of receipts makes one Query.
 *
 * Reusing a record is safe because the write that follows is a compare-and-set
 * on its status and revision. When that write loses (the record moved between
 * the read and the write), the admission is decided from a fresh read, exactly
 * as before: these tests move the record at that moment and check the answer
 * is the one a later read would have given.
 *
 * DynamoDB requests are recorded by middleware on the SDK client (the pattern
 * of transaction-store.known-images.test.ts).
 */
import { committingJournal } from '../../support/store-writes.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import type { TransactionRecord } from '../../../lib/ports/transaction-store.js';
import type { AttemptOutcome } from '../../../lib/runtime/types.js';
import { RECEIPT_EVENTS } from '../../../lib/runtime/journal.js';
import { reconcileActionId } from '../../../lib/runtime/reconciliation.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

let h: Harness;
let journal: ReturnType<typeof committingJournal>;
const provider = new TestProvider();

interface Request {
  readonly command: string;
  /** Partition key of the item read (GetItem) or queried (Query). */
  readonly pk: string;
  /** BatchGetItem: the partition keys asked for. */
  readonly batch?: string[];
}
const requests: Request[] = [];
/**
 * Runs once, just before the next write of a transaction record (a TransactWriteItems, or an UpdateItem of a `TXN#`
 * item: a write whose receipt is inside the record): the moment a concurrent writer moves the record.
 */
let beforeNextRecordWrite: (() => Promise<void>) | undefined;
/** The next BatchGetItem answers its last key as unprocessed (as DynamoDB does under throttling). */
let throttleNextBatchGet = false;

function text(raw: unknown): string {
  if (typeof raw === 'string') return raw;
  if (raw !== null && typeof raw === 'object' && typeof (raw as { S?: unknown }).S === 'string') return (raw as { S: string }).S;
  return '';
}

function batchKeys(input: { RequestItems?: Record<string, { Keys?: { PK?: unknown }[] }> }): string[] | undefined {
  if (input.RequestItems === undefined) return undefined;
  return Object.values(input.RequestItems).flatMap((r) => (r.Keys ?? []).map((k) => text(k.PK)));
}

function pkOf(input: { Key?: { PK?: unknown }; ExpressionAttributeValues?: Record<string, unknown> }): string {
  const raw = input.Key?.PK ?? input.ExpressionAttributeValues?.[':pk'];
  if (typeof raw === 'string') return raw;
  if (raw !== null && typeof raw === 'object' && typeof (raw as { S?: unknown }).S === 'string') return (raw as { S: string }).S;
  return '';
}

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-reads' });
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
      const batch = batchKeys(args.input as Parameters<typeof batchKeys>[0]);
      requests.push({ command: String(context.commandName), pk: pkOf(args.input as Parameters<typeof pkOf>[0]), ...(batch !== undefined ? { batch } : {}) });
      if (context.commandName === 'BatchGetItemCommand' && throttleNextBatchGet) {
        throttleNextBatchGet = false;
        // Ask for all but the last key; hand the last one back as unprocessed.
        const input = args.input as { RequestItems: Record<string, { Keys: unknown[]; ConsistentRead?: boolean }> };
        const [table, request] = Object.entries(input.RequestItems)[0] as [string, { Keys: unknown[]; ConsistentRead?: boolean }];
        const held = request.Keys[request.Keys.length - 1];
        const out = await next({ ...args, input: { ...input, RequestItems: { [table]: { ...request, Keys: request.Keys.slice(0, -1) } } } });
        (out.output as { UnprocessedKeys?: unknown }).UnprocessedKeys = { [table]: { ...request, Keys: [held] } };
        return out;
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordRequests' },
  );
});
afterAll(async () => h.destroy());
beforeEach(() => {
  beforeNextRecordWrite = undefined;
  throttleNextBatchGet = false;
});

/** The read requests made while `body` runs, by item partition-key prefix. */
async function readsDuring<T>(
  body: () => Promise<T>,
): Promise<{ value: T; gets: (prefix: string) => number; queries: (prefix: string) => number; batches: string[][] }> {
  const from = requests.length;
  const value = await body();
  const seen = requests.slice(from);
  return {
    value,
    gets: (prefix) => seen.filter((r) => r.command === 'GetItemCommand' && r.pk.startsWith(prefix)).length,
    queries: (prefix) => seen.filter((r) => r.command === 'QueryCommand' && r.pk.startsWith(prefix)).length,
    batches: seen.filter((r) => r.command === 'BatchGetItemCommand').map((r) => (r.batch ?? []).map((pk) => pk.split('#')[0] as string)),
  };
}

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });

async function planned(): Promise<string> {
  const tx = uid('tx');
  await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }));
  return tx;
}
const commit = (tx: string, id = uid('c')) => transfer(id, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } });

describe('A commit recovers its transaction from the plan once and claims from that read', () => {
  it('the planned record is looked up once (a default plan ID names its record: no plan reference read); the claim and the attempt run as before', async () => {
    const tx = await planned();
    const c = commit(tx);
    const { value: out, gets } = await readsDuring(() => h.runtime.submit(caller(), c));
    expect(out.disposition).toBe('accepted');
    expect(gets('PLAN#')).toBe(0);
    expect(gets('TXN#')).toBe(1);
    expect(await record(tx)).toMatchObject({ status: 'committing', action_id: c.id });
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('another commit that claims the plan after it was read: this commit is rejected as plan_not_planned, as if it had read later', async () => {
    const tx = await planned();
    const mine = commit(tx);
    const theirs = commit(tx);
    beforeNextRecordWrite = async () => {
      expect((await h.runtime.submit(caller(), theirs)).disposition).toBe('accepted');
    };
    expect(await codeOf(h.runtime.submit(caller(), mine))).toBe('runtime.plan_not_planned');
    expect(await record(tx)).toMatchObject({ status: 'committing', action_id: theirs.id });
    expect((await h.runtime.getAction(caller(), TENANT, mine.id)).action_result).toMatchObject({
      status: 'failed',
      error: { code: 'runtime.plan_not_planned' },
    });
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
  });

  it('the same commit action’s claim landing first (a concurrent resubmission): admitted once, one claim receipt', async () => {
    const tx = await planned();
    const mine = commit(tx);
    beforeNextRecordWrite = async () => {
      const current = (await record(tx)) as TransactionRecord;
      await journal.claimPlan(current, { plan_id: `plan:${tx}`, commit_action_id: mine.id, data: {} }, { action_id: mine.id });
    };
    expect((await h.runtime.submit(caller(), mine)).disposition).toBe('accepted');
    const claimed = await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 });
    expect(claimed.items.filter((r) => r.receipt.event === RECEIPT_EVENTS.plan_claimed)).toHaveLength(1);
    await h.drain();
    expect(await record(tx)).toMatchObject({ status: 'committed', action_id: mine.id });
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });
});

describe('The reconcile consumer admits from the record it examined', () => {
  async function uncertain(): Promise<string> {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
    await h.drain();
    expect((await record(tx))?.status).toBe('outcome_unknown');
    h.clock.advance(5_000);
    return tx;
  }
  const msg = (tx: string) => ({ kind: 'reconcile' as const, tenant_id: TENANT, transaction_id: tx, reason: 'schedule' as const });

  it('reconciles with the transaction read by the consumer and by the attempt only', async () => {
    const tx = await uncertain();
    const { value: out, gets, batches } = await readsDuring(() => h.runtime.reconcile(msg(tx)));
    expect(out).toMatchObject({ disposition: 'reconciled', transaction_status: 'reconciled' });
    expect((await record(tx))?.status).toBe('reconciled');
    // Before: consumer, admission, attempt and a final read (4); then consumer and attempt (2). Now the
    // attempt starts from the records the admission's writes returned: the consumer's read only.
    expect(gets('TXN#')).toBe(1);
    expect(gets('ACTION#')).toBe(1);
    expect(batches).toEqual([]);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('the original action the consumer read (terminal) is not read again to complete its reservation; a replay of the key answers the reconciled result', async () => {
    const tx = uid('tx');
    const key = `k-${uid('x')}`;
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key }, { scenario: 'uncertain' });
    await h.runtime.submit(caller(), a);
    await h.drain();
    expect((await record(tx))?.status).toBe('outcome_unknown');
    h.clock.advance(5_000);
    const { value: out, gets } = await readsDuring(() => h.runtime.reconcile(msg(tx)));
    expect(out).toMatchObject({ disposition: 'reconciled', transaction_status: 'reconciled' });
    // The consumer's read of the original action only (before: a second one to complete the reservation).
    expect(gets('ACTION#')).toBe(1);
    const replay = await h.runtime.submit(caller(), { ...a, id: uid('again') });
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result.metadata).toMatchObject({ transaction_status: 'reconciled', reconciled_by: out.action_id });
  });

  it('the same reconcile action begun after the consumer’s read (a concurrent delivery): re-driven from a fresh read, reconciled once', async () => {
    const tx = await uncertain();
    const before = (await record(tx)) as TransactionRecord;
    const actionId = reconcileActionId(TENANT, tx, before.reconcile_attempts + 1);
    beforeNextRecordWrite = async () => {
      const current = (await record(tx)) as TransactionRecord;
      await journal.transition(
        current,
        { operation: 'begin_reconcile', from: ['outcome_unknown'], to: 'reconciling', data: { reconcile_action_id: actionId } },
        RECEIPT_EVENTS.reconcile_started,
      );
    };
    const { value: out, gets } = await readsDuring(() => h.runtime.reconcile(msg(tx)));
    expect(out).toMatchObject({ disposition: 'reconciled', action_id: actionId, transaction_status: 'reconciled' });
    // The consumer, the concurrent writer above, the admission's fresh read, and the attempt: the record the
    // admission found begun (a read, not its own write) is read again by the attempt.
    expect(gets('TXN#')).toBe(4);
    const receipts = await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 });
    expect(receipts.items.filter((r) => r.receipt.event === RECEIPT_EVENTS.reconcile_started)).toHaveLength(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('another reconciliation begun after the consumer’s read: in progress, nothing written over it', async () => {
    const tx = await uncertain();
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
  });
});

/** The queued invoke messages run as redeliveries (receive count 2), which read (a first delivery starts from the admission's images: first-read.test.ts). */
const redeliver = (): Promise<AttemptOutcome[]> => h.drain({ receive_count: 2 });

describe('An attempt that reads (a redelivery) reads its action and transaction in one request', () => {
  it('execute: one BatchGetItem for the action and the transaction, no GetItem of either; settled as before', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: `k-${uid('x')}` });
    await h.runtime.submit(caller(), a);
    const { value: outcomes, gets, batches } = await readsDuring(() => redeliver());
    expect(outcomes).toEqual([expect.objectContaining({ disposition: 'settled', action_id: a.id })]);
    expect(batches).toEqual([['ACTION', 'TXN']]);
    expect(gets('ACTION#')).toBe(0);
    expect(gets('TXN#')).toBe(0);
    expect(await record(tx)).toMatchObject({ status: 'committed', action_id: a.id });
    expect((await h.runtime.getAction(caller(), TENANT, a.id)).action_result).toMatchObject({ status: 'completed' });
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('a key DynamoDB leaves unprocessed is asked again: the attempt runs as usual', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } });
    await h.runtime.submit(caller(), a);
    throttleNextBatchGet = true;
    const { value: outcomes, gets, batches } = await readsDuring(() => redeliver());
    expect(throttleNextBatchGet).toBe(false);
    expect(outcomes).toEqual([expect.objectContaining({ disposition: 'settled', action_id: a.id })]);
    expect(batches).toEqual([['ACTION', 'TXN'], ['TXN']]);
    expect(gets('TXN#')).toBe(0);
    expect(await record(tx)).toMatchObject({ status: 'committed', action_id: a.id });
  });

  it('a message naming another transaction than the action’s: the action’s own transaction is read and used', async () => {
    const tx = uid('tx');
    const a = transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } });
    await h.runtime.submit(caller(), a);
    const message = { kind: 'invoke' as const, tenant_id: TENANT, action_id: a.id, transaction_id: uid('tx-other'), fence: 0, attempt: 1 };
    const { value: out, gets } = await readsDuring(() => h.runtime.runAttempt(message));
    expect(out).toMatchObject({ disposition: 'settled', action_id: a.id });
    expect(gets('TXN#')).toBe(1);
    expect(await record(tx)).toMatchObject({ status: 'committed', action_id: a.id });
    // The queued message finds the action settled.
    expect(await h.drain()).toEqual([expect.objectContaining({ disposition: 'already_settled' })]);
  });

  it('a message for an action that does not exist is dropped as before', async () => {
    const message = { kind: 'invoke' as const, tenant_id: TENANT, action_id: uid('ghost'), transaction_id: uid('tx'), fence: 0, attempt: 1 };
    expect(await h.runtime.runAttempt(message)).toMatchObject({ disposition: 'dropped', reason: 'action_not_found' });
  });
});

describe('Action reads', () => {
  async function committed(): Promise<{ id: string; tx: string }> {
    const id = uid('a');
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(id, { transaction: { mode: 'execute', transaction_id: tx } }));
    await h.drain();
    return { id, tx };
  }

  it('getAction reads the action and its transaction once each', async () => {
    const { id, tx } = await committed();
    const { value: state, gets } = await readsDuring(() => h.runtime.getAction(caller(), TENANT, id));
    expect(state).toMatchObject({ action_result: { action_id: id, status: 'completed' }, transaction: { transaction_id: tx, status: 'committed' } });
    expect(gets('ACTION#')).toBe(1);
    expect(gets('TXN#')).toBe(1);
  });

  it('getActionResult (what a wait polls) reads the action item alone, with the same answer and the same authorization', async () => {
    const { id } = await committed();
    const { value: result, gets } = await readsDuring(() => h.runtime.getActionResult(caller(), TENANT, id));
    expect(result).toEqual((await h.runtime.getAction(caller(), TENANT, id)).action_result);
    expect(gets('ACTION#')).toBe(1);
    expect(gets('TXN#')).toBe(0);
    expect(await codeOf(h.runtime.getActionResult(caller('agent-2'), TENANT, id))).toBe('action.not_found');
    expect(await codeOf(h.runtime.getActionResult(caller(), 'tenant-b', id))).toBe(await codeOf(h.runtime.getAction(caller(), 'tenant-b', id)));
  });

  it('pollAction (what a wait polls) builds the full state from its one read of the action once the status is one it names', async () => {
    const { id } = await committed();
    const full = await h.runtime.getAction(caller(), TENANT, id);
    const settled = await readsDuring(() => h.runtime.pollAction(caller(), TENANT, id, new Set(['completed', 'failed'])));
    expect(settled.value).toEqual({ action_result: full.action_result, state: full });
    expect(settled.gets('ACTION#')).toBe(1);
    expect(settled.gets('TXN#')).toBe(1);
    // A status the poll does not name: the result alone, from the one read.
    const pending = await readsDuring(() => h.runtime.pollAction(caller(), TENANT, id, new Set(['failed'])));
    expect(pending.value).toEqual({ action_result: full.action_result });
    expect(pending.gets('ACTION#')).toBe(1);
    expect(pending.gets('TXN#')).toBe(0);
    const all = new Set(['completed'] as const);
    expect(await codeOf(h.runtime.pollAction(caller('agent-2'), TENANT, id, all))).toBe('action.not_found');
    expect(await codeOf(h.runtime.pollAction(caller(), 'tenant-b', id, all))).toBe(await codeOf(h.runtime.getAction(caller(), 'tenant-b', id)));
  });

  it('a view of a reconcile action binds the transaction to the original action, not to the action read', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: 'uncertain' }));
    await h.drain();
    h.clock.advance(5_000);
    const out = await h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: tx, reason: 'schedule' });
    const state = await h.runtime.getAction(operator, TENANT, out.action_id as string);
    expect(state.transaction).toMatchObject({ transaction_id: tx, status: 'reconciled' });
  });
});

describe('A transaction view lists its receipt chain', () => {
  async function chain(n: number): Promise<string> {
    const transaction_id = uid('txn-chain');
    let r = await journal.create(
      {
        tenant_id: TENANT,
        transaction_id,
        status: 'prepared',
        mode: 'execute',
        capability_id: 'pay.transfer',
        action_id: uid('act-chain'),
        principal: caller().principal,
        data: {},
      },
      RECEIPT_EVENTS.prepared,
    );
    const op = { provider: 'test-provider', operation_id: 'op-chain' };
    for (let i = 1; i < n; i++) r = await journal.checkpoint(r, op);
    expect(r.receipt_count).toBe(n);
    return transaction_id;
  }

  it.each([99, 100, 101])('a chain of %i receipts comes back whole, in order, with one Query per page it needs', async (n) => {
    const tx = await chain(n);
    const { value: view, queries } = await readsDuring(() => h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { receipts: true }));
    expect(view.receipts?.map((r) => r.seq)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(queries('TXN#')).toBe(n <= 100 ? 1 : 2);
  });
});
