/**
 * Shared setup of the runtime-store integration tests: one DynamoDB Local
 * table per test file (test/support/dynamo.ts) with every runtime store on it,
 * all on one hand-moved clock.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import type { DynamoIdempotencyStoreOptions } from '../../../lib/aws/dynamo/idempotency-store.js';
import { createDynamoStores } from '../../../lib/aws/dynamo/stores.js';
import type { UnitOfWork } from '../../../lib/ports/unit-of-work.js';
import { writableStores, type WritableStores } from '../../support/store-writes.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { Action } from '../../../packages/connector-sdk/src/protocol/index.js';
import { createTestTable, type TestTable } from '../../support/dynamo.js';
import { manualClock, uid } from '../../support/transaction-fixtures.js';

export { uid };
export const TENANT = 'tenant-a';
export const OTHER_TENANT = 'tenant-b';
export const PRINCIPAL = { id: 'agent-1', kind: 'agent' } as const;
/** Concurrent writers per race (real concurrent SDK calls, maxAttempts 1). */
export const RACERS = 30;

export interface Stores {
  readonly table: TestTable;
  readonly clock: ReturnType<typeof manualClock>;
  readonly uow: UnitOfWork;
  readonly actions: WritableStores['actions'];
  readonly idempotency: WritableStores['idempotency'];
  readonly approvals: WritableStores['approvals'];
  readonly routes: WritableStores['routes'];
  readonly streams: WritableStores['streams'];
  /** Another idempotency store (with its writes) on the same table with other options. */
  idempotencyWith(options: Partial<DynamoIdempotencyStoreOptions>): WritableStores['idempotency'];
  /** The raw item, strongly consistent. */
  rawItem(key: { PK: string; SK: string }): Promise<Record<string, unknown> | undefined>;
}

export async function createStores(prefix: string): Promise<Stores> {
  const table = await createTestTable({ prefix });
  const clock = manualClock();
  const base = { client: table.client, tableName: table.tableName, now: clock.now };
  const dynamo = createDynamoStores(base);
  const stores = writableStores(dynamo);
  return {
    table,
    clock,
    uow: dynamo.uow,
    actions: stores.actions,
    idempotency: stores.idempotency,
    approvals: stores.approvals,
    routes: stores.routes,
    streams: stores.streams,
    idempotencyWith: (options) => writableStores(createDynamoStores({ ...base, idempotency: options })).idempotency,
    rawItem: async (key) => (await table.client.send(new GetCommand({ TableName: table.tableName, Key: key, ConsistentRead: true }))).Item,
  };
}

export function split<T>(results: PromiseSettledResult<T>[]) {
  const won = results.filter((r): r is PromiseFulfilledResult<T> => r.status === 'fulfilled').map((r) => r.value);
  const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
  return { won, lost };
}

/** Awaits `p` and returns the AipError it rejects with (fails the test otherwise). */
export async function aipError(p: Promise<unknown>): Promise<AipError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AipError);
    return err as AipError;
  }
  throw new Error('expected an AipError, but the call succeeded');
}

export function action(overrides: Partial<Action> = {}): Action {
  return {
    id: uid('act'),
    capability_id: 'payments.transfer',
    input: { amount: 125, currency: 'EUR', iban: 'DE89370400440532013000' },
    idempotency_key: uid('idem'),
    identity: { tenant_id: TENANT, external_account_id: 'acct-1' },
    transaction: { mode: 'execute', transaction_id: uid('txn') },
    ...overrides,
  };
}
