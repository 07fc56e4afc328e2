/**
 * The transaction store's known images (docs/bench/analysis.md, 4.1): after a
 * write that carries a receipt (a TransactWriteItems, which returns no item
 * image) the adapter returns the record computed from the image it already
 * holds instead of reading it back, and only when that image is certainly the
 * item the write applied to.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../lib/aws/dynamo/table-design.js';
import { createDynamoStores } from '../../lib/aws/dynamo/stores.js';
import { writableStores, type WritableStores } from '../support/store-writes.js';
import { isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { TransactionRecord } from '../../lib/transactions/record.js';
import { createTestTable, type TestTable } from '../support/dynamo.js';
import { TENANT, manualClock, nextReceipt, preparedInput, uid } from '../support/transaction-fixtures.js';

const clock = manualClock();
let t: TestTable;
const reads: string[] = [];

beforeAll(async () => {
  t = await createTestTable({ now: clock.now, prefix: 'txknown' });
  // Count the GetItem requests the store makes (the read-backs this feature removes).
  t.raw.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'GetItemCommand') reads.push(String((args.input as { Key?: { PK?: unknown } }).Key?.PK ?? ''));
      return next(args);
    },
    { step: 'initialize', name: 'countReads' },
  );
});
afterAll(async () => t.destroy());

type Store = WritableStores['transactions'];

function store(options: { now?: () => Date; verify?: boolean; knownImages?: number } = {}): Store {
  return writableStores(
    createDynamoStores({
      client: t.client,
      tableName: t.tableName,
      now: options.now ?? clock.now,
      transactions: { verifyKnownImages: options.verify ?? false, ...(options.knownImages !== undefined ? { knownImages: options.knownImages } : {}) },
    }),
  ).transactions;
}

async function lease(s: Store, r: TransactionRecord, owner = 'att-1'): Promise<TransactionRecord> {
  return s.acquireLease({
    tenant_id: r.tenant_id,
    transaction_id: r.transaction_id,
    expected_revision: r.revision,
    owner,
    ttl_ms: 60_000,
    data: { attempt_action_id: r.action_id, attempt_fence: r.fence + 1 },
    receipt: nextReceipt(r, r.revision + 1, r.status, 'transaction.attempt_started'),
  });
}

async function checkpoint(s: Store, r: TransactionRecord): Promise<TransactionRecord> {
  return s.checkpointProviderOperation({
    tenant_id: r.tenant_id,
    transaction_id: r.transaction_id,
    expected_revision: r.revision,
    provider_operation: { provider: 'sim', operation_id: 'op-1' },
    reconciliation_cursor: 'cursor-1',
    receipt: nextReceipt(r, r.revision + 1, r.status, 'transaction.provider_operation_checkpointed'),
  });
}

async function settle(s: Store, r: TransactionRecord): Promise<TransactionRecord> {
  return s.settle({
    tenant_id: r.tenant_id,
    transaction_id: r.transaction_id,
    expected_revision: r.revision,
    from: [r.status],
    to: 'committed',
    result: { action_id: r.action_id, status: 'completed', output: { ok: true, nested: { list: [1, 'two', null] } } },
    data: { last_attempt: { fence: 1 } },
    receipt: nextReceipt(r, r.revision + 1, 'committed', 'transaction.settled.committed'),
  });
}

describe('known images', () => {
  it('returns, without reading back, exactly the record DynamoDB holds after each receipt-carrying write', async () => {
    const s = store({ verify: true }); // verify: reads back anyway and fails on any difference
    const txn = uid('txn');
    let r = await s.create({ ...preparedInput(txn), receipt: nextReceipt({ transaction_id: txn }, 1, 'prepared', 'transaction.prepared') });
    r = await lease(s, r);
    r = await checkpoint(s, r);
    r = await settle(s, r);
    expect(r).toEqual(await s.get({ tenant_id: TENANT, transaction_id: txn }));
    expect(r).toMatchObject({ status: 'committed', revision: 4, fence: 1, receipt_count: 4, provider_operation: { operation_id: 'op-1' } });
    expect(r.lease_owner).toBeUndefined();
  });

  it('issues no GetItem after a lease, a checkpoint and a settlement when it holds the image', async () => {
    const s = store();
    const txn = uid('txn');
    const pk = keys.transaction(TENANT, txn).PK;
    await s.create({ ...preparedInput(txn), receipt: nextReceipt({ transaction_id: txn }, 1, 'prepared', 'transaction.prepared') });
    let r = (await s.get({ tenant_id: TENANT, transaction_id: txn })) as TransactionRecord;
    const before = reads.filter((k) => k === pk).length;
    r = await lease(s, r);
    r = await checkpoint(s, r);
    r = await settle(s, r);
    expect(reads.filter((k) => k === pk).length).toBe(before);
    expect(r).toEqual(await store().get({ tenant_id: TENANT, transaction_id: txn }));
  });

  it('reads back as before when turned off', async () => {
    const s = store({ knownImages: 0 });
    const txn = uid('txn');
    const pk = keys.transaction(TENANT, txn).PK;
    let r = await s.create({ ...preparedInput(txn), receipt: nextReceipt({ transaction_id: txn }, 1, 'prepared', 'transaction.prepared') });
    const before = reads.filter((k) => k === pk).length;
    r = await lease(s, r);
    expect(reads.filter((k) => k === pk).length).toBe(before + 1);
    expect(r.revision).toBe(2);
  });

  it('never applies a stale image: another writer moved the record, so the write loses its race and the next read refreshes the image', async () => {
    const a = store();
    const b = store();
    const txn = uid('txn');
    const r1 = await a.create({ ...preparedInput(txn), receipt: nextReceipt({ transaction_id: txn }, 1, 'prepared', 'transaction.prepared') });
    const stale = (await a.get({ tenant_id: TENANT, transaction_id: txn })) as TransactionRecord;
    await lease(b, (await b.get({ tenant_id: TENANT, transaction_id: txn })) as TransactionRecord, 'att-b');
    const lost = await lease(a, stale, 'att-a').catch((err: unknown) => err);
    expect(isAipError(lost, 'transaction.state_conflict') || isAipError(lost, 'transaction.lease_held')).toBe(true);
    const fresh = (await a.get({ tenant_id: TENANT, transaction_id: txn })) as TransactionRecord;
    expect(fresh).toMatchObject({ revision: 2, lease_owner: 'att-b' });
    const cp = await checkpoint(a, fresh);
    expect(cp).toEqual(await store().get({ tenant_id: TENANT, transaction_id: txn }));
    expect(r1.revision).toBe(1);
  });

  it('never applies the image of an earlier incarnation: a record deleted and created again at the same revision is not mistaken for it', async () => {
    const a = store();
    const txn = uid('txn');
    await a.create({ ...preparedInput(txn), receipt: nextReceipt({ transaction_id: txn }, 1, 'prepared', 'transaction.prepared') });
    const old = (await a.get({ tenant_id: TENANT, transaction_id: txn })) as TransactionRecord;
    // As if TTL deleted it and another writer created the same transaction ID again (a later created_at, another principal).
    await t.client.send(new DeleteCommand({ TableName: t.tableName, Key: keys.transaction(TENANT, txn) }));
    await t.client.send(new DeleteCommand({ TableName: t.tableName, Key: keys.receipt(TENANT, txn, 0) }));
    const later = manualClock('2031-01-01T00:00:00.000Z');
    const other = store({ now: later.now });
    await other.create({
      ...preparedInput(txn, { principal: { id: 'someone-else', kind: 'agent' } }),
      receipt: nextReceipt({ transaction_id: txn }, 1, 'prepared', 'transaction.prepared'),
    });
    // Same revision (1) and receipt chain position: only created_at tells the incarnations apart.
    const err = await lease(a, old).catch((e: unknown) => e);
    expect(isAipError(err, 'transaction.state_conflict')).toBe(true);
    const now = (await a.get({ tenant_id: TENANT, transaction_id: txn })) as TransactionRecord;
    expect(now.principal.id).toBe('someone-else');
    const leased = await lease(a, now);
    expect(leased).toEqual(await store().get({ tenant_id: TENANT, transaction_id: txn }));
    expect(leased.principal.id).toBe('someone-else');
  });
});
