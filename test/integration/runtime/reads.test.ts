/**
 * Records a request already holds are not read again: a commit's recheck
 * starts from the planned record `prepare` read, the reconcile consumer's
 * admission from the record it examined, a transaction view from the action
 * record getAction read; a wait polls the action item alone; a view of a
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
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { uid } from '../../support/transaction-fixtures.js';
import type { TransactionRecord } from '../../../lib/ports/transaction-store.js';
import { RECEIPT_EVENTS, TransactionJournal } from '../../../lib/runtime/journal.js';
import { reconcileActionId } from '../../../lib/runtime/reconciliation.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, operator, type Harness } from './support.js';

let h: Harness;
let journal: TransactionJournal;
const provider = new TestProvider();

interface Request {
  readonly command: string;
  /** Partition key of the item read (GetItem) or queried (Query). */
  readonly pk: string;
}
const requests: Request[] = [];
/** Runs once, just before the next TransactWriteItems: the moment a concurrent writer moves the record. */
let beforeNextTransactWrite: (() => Promise<void>) | undefined;

function pkOf(input: { Key?: { PK?: unknown }; ExpressionAttributeValues?: Record<string, unknown> }): string {
  const raw = input.Key?.PK ?? input.ExpressionAttributeValues?.[':pk'];
  if (typeof raw === 'string') return raw;
  if (raw !== null && typeof raw === 'object' && typeof (raw as { S?: unknown }).S === 'string') return (raw as { S: string }).S;
  return '';
}

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-reads' });
  journal = new TransactionJournal(h.table.store, { now: h.clock.now });
  h.table.raw.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand' && beforeNextTransactWrite !== undefined) {
        const run = beforeNextTransactWrite;
        beforeNextTransactWrite = undefined;
        await run();
      }
      requests.push({ command: String(context.commandName), pk: pkOf(args.input as Parameters<typeof pkOf>[0]) });
      return next(args);
    },
    { step: 'initialize', name: 'recordRequests' },
  );
});
afterAll(async () => h.destroy());
beforeEach(() => {
  beforeNextTransactWrite = undefined;
});

/** The GetItem requests made while `body` runs, by item partition-key prefix. */
async function readsDuring<T>(body: () => Promise<T>): Promise<{ value: T; gets: (prefix: string) => number; queries: (prefix: string) => number }> {
  const from = requests.length;
  const value = await body();
  const seen = requests.slice(from);
  return {
    value,
    gets: (prefix) => seen.filter((r) => r.command === 'GetItemCommand' && r.pk.startsWith(prefix)).length,
    queries: (prefix) => seen.filter((r) => r.command === 'QueryCommand' && r.pk.startsWith(prefix)).length,
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
  it('the planned record is looked up once (plan reference, then record); the claim and the attempt run as before', async () => {
    const tx = await planned();
    const c = commit(tx);
    const { value: out, gets } = await readsDuring(() => h.runtime.submit(caller(), c));
    expect(out.disposition).toBe('accepted');
    expect(gets('PLAN#')).toBe(1);
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
    beforeNextTransactWrite = async () => {
      expect((await h.runtime.submit(caller(), theirs)).disposition).toBe('accepted');
    };
    expect(await codeOf(h.runtime.submit(caller(), mine))).toBe('runtime.plan_not_planned');
    expect(await record(tx)).toMatchObject({ status: 'committing', action_id: theirs.id });
    expect((await h.runtime.getAction(caller(), TENANT, mine.id)).action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.plan_not_planned' } });
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
  });

  it('the same commit action’s claim landing first (a concurrent resubmission): admitted once, one claim receipt', async () => {
    const tx = await planned();
    const mine = commit(tx);
    beforeNextTransactWrite = async () => {
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
    const { value: out, gets } = await readsDuring(() => h.runtime.reconcile(msg(tx)));
    expect(out).toMatchObject({ disposition: 'reconciled', transaction_status: 'reconciled' });
    expect((await record(tx))?.status).toBe('reconciled');
    // Before: consumer, admission, attempt and a final read (4).
    expect(gets('TXN#')).toBeLessThanOrEqual(2);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('the same reconcile action begun after the consumer’s read (a concurrent delivery): re-driven from a fresh read, reconciled once', async () => {
    const tx = await uncertain();
    const before = (await record(tx)) as TransactionRecord;
    const actionId = reconcileActionId(TENANT, tx, before.reconcile_attempts + 1);
    beforeNextTransactWrite = async () => {
      const current = (await record(tx)) as TransactionRecord;
      await journal.transition(current, { operation: 'begin_reconcile', from: ['outcome_unknown'], to: 'reconciling', data: { reconcile_action_id: actionId } }, RECEIPT_EVENTS.reconcile_started);
    };
    const out = await h.runtime.reconcile(msg(tx));
    expect(out).toMatchObject({ disposition: 'reconciled', action_id: actionId, transaction_status: 'reconciled' });
    const receipts = await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 });
    expect(receipts.items.filter((r) => r.receipt.event === RECEIPT_EVENTS.reconcile_started)).toHaveLength(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('another reconciliation begun after the consumer’s read: in progress, nothing written over it', async () => {
    const tx = await uncertain();
    beforeNextTransactWrite = async () => {
      const current = (await record(tx)) as TransactionRecord;
      await journal.transition(current, { operation: 'begin_reconcile', from: ['outcome_unknown'], to: 'reconciling', data: { reconcile_action_id: 'rcn-someone-else' } }, RECEIPT_EVENTS.reconcile_started);
    };
    expect(await h.runtime.reconcile(msg(tx))).toMatchObject({ disposition: 'in_progress' });
    expect((await record(tx))?.data.reconcile_action_id).toBe('rcn-someone-else');
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
      { tenant_id: TENANT, transaction_id, status: 'prepared', mode: 'execute', capability_id: 'pay.transfer', action_id: uid('act-chain'), principal: caller().principal, data: {} },
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
