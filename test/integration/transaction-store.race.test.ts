/**
 * Concurrency evidence: real concurrent SDK calls (maxAttempts 1, so no retry
 * can hide a race) against DynamoDB Local, 20 rounds each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { classifyTransactFailure, mapStoreError } from '../../lib/aws/dynamo/store-errors.js';
import { createDynamoStores } from '../../lib/aws/dynamo/stores.js';
import { keys, receiptAttribute, receiptAttributeSeq } from '../../lib/aws/dynamo/table-design.js';
import { createTestTable, type TestTable } from '../support/dynamo.js';
import { writableStores } from '../support/store-writes.js';
import { TENANT, nextReceipt, plannedInput, preparedInput, uid } from '../support/transaction-fixtures.js';

const ROUNDS = 20;
const RACERS = 50;
/** Rounds of the extra TransactWriteItems variants (slower on DynamoDB Local; the required races run ROUNDS). */
const TRANSACT_ROUNDS = 5;

let t: TestTable;
beforeAll(async () => {
  t = await createTestTable({ prefix: 'txrace' });
});
afterAll(async () => {
  await t?.destroy();
});

function split<T>(results: PromiseSettledResult<T>[]) {
  const won = results.filter((r): r is PromiseFulfilledResult<T> => r.status === 'fulfilled').map((r) => r.value);
  const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
  return { won, lost };
}

/** Every loser got the typed lost-race error; when the backend returned the item, it names the current state. */
function expectLostRace(lost: unknown[], code: string, current: { status: string; revision: number }) {
  for (const err of lost) {
    expect(err).toBeInstanceOf(AipError);
    const e = err as AipError;
    expect(e.code).toBe(code);
    expect(e.httpStatus).toBe(409);
    if (e.details.reason === 'transaction_conflict') {
      // DynamoDB reported a concurrent transaction without an item image.
      expect(e.details.current_status).toBeUndefined();
    } else {
      expect(e.details.current_status).toBe(current.status);
      expect(e.details.current_revision).toBe(current.revision);
    }
  }
}

async function partitionItems(tenant: string, transactionId: string) {
  const out = await t.client.send(
    new QueryCommand({
      TableName: t.tableName,
      KeyConditionExpression: 'PK = :pk',
      ExpressionAttributeValues: { ':pk': keys.transaction(tenant, transactionId).PK },
      ConsistentRead: true,
    }),
  );
  return out.Items ?? [];
}

describe(`${RACERS} concurrent claimants on one plan, ${ROUNDS} rounds`, () => {
  it('exactly one wins each round; the rest get transaction.state_conflict naming committing / revision 2', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await t.store.create(plannedInput(uid(`claim-${round}`)));
      const results = await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          t.store.claimPlan({
            tenant_id: TENANT,
            transaction_id: p.transaction_id,
            plan_id: p.plan_id!,
            expected_revision: 1,
            commit_action_id: `commit-${round}-${i}`,
          }),
        ),
      );
      const { won, lost } = split(results);
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(RACERS - 1);
      // UpdateItem path: every loser reads the winner's state from ALL_OLD.
      for (const err of lost) expect((err as AipError).details.reason).toBeUndefined();
      expectLostRace(lost, 'transaction.state_conflict', { status: 'committing', revision: 2 });
      const stored = await t.store.get({ tenant_id: TENANT, transaction_id: p.transaction_id });
      expect(stored).toMatchObject({ status: 'committing', revision: 2, action_id: won[0]!.action_id });
    }
  });

  it(`with a receipt appended (inside the record: one UpdateItem; its own item: TransactWriteItems; ${TRANSACT_ROUNDS} rounds each): exactly one wins and exactly one receipt is written`, async () => {
    // A store that knows the record's image takes the receipt inside (docs/table-design.md, "Receipts inside the
    // record"); one that knows none writes it as its own item, with the record's update, in a TransactWriteItems.
    const blind = writableStores(createDynamoStores({ client: t.client, tableName: t.tableName, transactions: { knownImages: 0 } })).transactions;
    for (let round = 0; round < 2 * TRANSACT_ROUNDS; round++) {
      const inside = round < TRANSACT_ROUNDS;
      const claimant = inside ? t.store : blind;
      const id = uid(`claim-rcpt-${round}`);
      const p = await t.store.create({ ...plannedInput(id), receipt: nextReceipt({ transaction_id: id }, 1, 'planned', 'transaction.planned') });
      const results = await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) =>
          claimant.claimPlan({
            tenant_id: TENANT,
            transaction_id: id,
            plan_id: p.plan_id!,
            expected_revision: 1,
            commit_action_id: `commit-${round}-${i}`,
            receipt: nextReceipt(p, 2, 'committing', 'transaction.commit_claimed', `2030-01-01T00:00:${String(i).padStart(2, '0')}.000Z`),
          }),
        ),
      );
      const { won, lost } = split(results);
      expect(won).toHaveLength(1);
      expectLostRace(lost, 'transaction.state_conflict', { status: 'committing', revision: 2 });
      const items = await partitionItems(TENANT, id);
      // The plan's own receipt item, and the claim's: inside the record or an item, exactly one.
      const receiptItems = items.filter((i) => String(i.SK).startsWith(keys.receiptPrefix));
      const record = items.find((i) => i.SK === 'TXN') ?? {};
      expect(receiptItems).toHaveLength(inside ? 1 : 2);
      expect(Object.keys(record).filter((name) => receiptAttributeSeq(name) !== undefined)).toEqual(inside ? [receiptAttribute(1)] : []);
      const chain = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id });
      expect(chain.items).toHaveLength(2);
      expect(chain.items[1]?.receipt.hash).toBe(won[0]!.receipt_head);
    }
  });
});

describe(`${RACERS} concurrent checkpoints with different references, ${ROUNDS} rounds`, () => {
  it('exactly one reference is kept; every other checkpoint is rejected naming the current revision', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await t.store.create(preparedInput(uid(`cp-${round}`)));
      const refs = Array.from({ length: RACERS }, (_, i) => ({ provider: 'payments-sim', operation_id: `op-${round}-${i}` }));
      const results = await Promise.allSettled(
        refs.map((provider_operation, i) =>
          t.store.checkpointProviderOperation({
            tenant_id: TENANT,
            transaction_id: p.transaction_id,
            expected_revision: 1,
            provider_operation,
            reconciliation_cursor: `cursor-${i}`,
          }),
        ),
      );
      const { won, lost } = split(results);
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(RACERS - 1);
      for (const err of lost) {
        const e = err as AipError;
        expect(e.code).toBe('transaction.provider_operation_conflict');
        expect(e.details).toMatchObject({ current_status: 'prepared', current_revision: 2, current_provider_operation: won[0]!.provider_operation });
      }
      const stored = await t.store.get({ tenant_id: TENANT, transaction_id: p.transaction_id });
      expect(stored?.provider_operation).toEqual(won[0]!.provider_operation);
      expect(stored?.revision).toBe(2);
      expect(refs).toContainEqual(stored?.provider_operation);
    }
  });
});

describe(`${RACERS} concurrent creations of one transaction ID, ${ROUNDS} rounds`, () => {
  it('exactly one record and no duplicate; the rest get transaction.already_exists naming revision 1', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const id = uid(`create-${round}`);
      const results = await Promise.allSettled(
        Array.from({ length: RACERS }, (_, i) => t.store.create(preparedInput(id, { action_id: `exec-${round}-${i}` }))),
      );
      const { won, lost } = split(results);
      expect(won).toHaveLength(1);
      expectLostRace(lost, 'transaction.already_exists', { status: 'prepared', revision: 1 });
      const items = await partitionItems(TENANT, id);
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({ status: 'prepared', revision: 1, action_id: won[0]!.action_id });
    }
  });

  it(`with a plan (TransactWriteItems with the plan-ID guard, ${TRANSACT_ROUNDS} rounds): exactly one record, one plan_ref, no duplicate`, async () => {
    for (let round = 0; round < TRANSACT_ROUNDS; round++) {
      const id = uid(`create-plan-${round}`);
      const results = await Promise.allSettled(Array.from({ length: RACERS }, (_, i) => t.store.create(plannedInput(id, { action_id: `plan-${round}-${i}` }))));
      const { won, lost } = split(results);
      expect(won).toHaveLength(1);
      for (const err of lost) {
        const e = err as AipError;
        expect(e).toBeInstanceOf(AipError);
        // A lost creation either read the winner (already_exists) or met its concurrent transaction.
        if (e.details.reason === 'transaction_conflict') expect(e.code).toBe('transaction.state_conflict');
        else expect(e.code).toBe('transaction.already_exists');
      }
      expect(await partitionItems(TENANT, id)).toHaveLength(1);
      const byPlan = await t.store.get({ tenant_id: TENANT, plan_id: `plan:${id}` });
      expect(byPlan?.action_id).toBe(won[0]!.action_id);
    }
  });
});

describe('TransactionConflict is a lost race', () => {
  const onRace = () => new AipError('transaction.state_conflict', 'race', { details: { reason: 'transaction_conflict' } });
  const onItem = () => new AipError('transaction.state_conflict', 'item', { details: { current_status: 'committing', current_revision: 2 } });

  it('maps TransactionConflictException and a TransactionConflict cancellation reason to the typed lost-race error', () => {
    const direct = Object.assign(new Error('conflict'), { name: 'TransactionConflictException' });
    expect(classifyTransactFailure(direct, { 0: onItem }, onRace).details).toEqual({ reason: 'transaction_conflict' });
    const cancelled = Object.assign(new Error('cancelled'), {
      name: 'TransactionCanceledException',
      CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }],
    });
    const e = classifyTransactFailure(cancelled, { 0: onItem }, onRace);
    expect(e.code).toBe('transaction.state_conflict');
    expect(e.details.reason).toBe('transaction_conflict');
  });

  it('prefers the condition failure with its item image when one is reported', () => {
    const cancelled = Object.assign(new Error('cancelled'), {
      name: 'TransactionCanceledException',
      CancellationReasons: [{ Code: 'ConditionalCheckFailed', Item: { status: { S: 'committing' }, revision: { N: '2' } } }, { Code: 'TransactionConflict' }],
    });
    let seen: unknown;
    const e = classifyTransactFailure(cancelled, { 0: (old) => ((seen = old), onItem()) }, onRace);
    expect(seen).toEqual({ status: 'committing', revision: 2 });
    expect(e.details).toMatchObject({ current_status: 'committing', current_revision: 2 });
  });

  it('maps throttling to a retryable store_unavailable and anything unknown to internal.unexpected', () => {
    expect(mapStoreError(Object.assign(new Error('x'), { name: 'ProvisionedThroughputExceededException' })).code).toBe('transaction.store_unavailable');
    expect(mapStoreError(Object.assign(new Error('x'), { name: 'ThrottlingException' })).retryable).toBe(true);
    expect(mapStoreError(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' })).code).toBe('transaction.store_unavailable');
    expect(mapStoreError(Object.assign(new Error('Item size has exceeded the maximum allowed size'), { name: 'ValidationException' })).code).toBe(
      'transaction.record_too_large',
    );
    expect(mapStoreError(new Error('boom')).code).toBe('internal.unexpected');
  });
});
