/**
 * The DynamoDB stores of one table, composed once: the read ports of each
 * record kind, the unit of work that writes every intent through the store
 * that owns its item (lib/aws/dynamo/unit-of-work.ts), and the attempt read.
 * The production composition, the bench and the tests all build them here.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoActionStore } from './action-store.js';
import { DynamoApprovalStore } from './approval-store.js';
import { DynamoAttemptReads } from './attempt-reads.js';
import { DynamoIdempotencyStore, type DynamoIdempotencyStoreOptions } from './idempotency-store.js';
import { DynamoRouteStore } from './route-store.js';
import { DynamoStreamStore, type DynamoStreamStoreOptions } from './stream-store.js';
import { DynamoTransactionStore, type DynamoTransactionStoreOptions } from './transaction-store.js';
import { DynamoUnitOfWork } from './unit-of-work.js';

export interface DynamoStoresOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  /** Clock (tests pin it). Default: system time. */
  readonly now?: () => Date;
  readonly transactions?: Partial<Omit<DynamoTransactionStoreOptions, 'client' | 'tableName' | 'now'>>;
  readonly idempotency?: Partial<Omit<DynamoIdempotencyStoreOptions, 'client' | 'tableName' | 'now'>>;
  readonly streams?: Partial<Omit<DynamoStreamStoreOptions, 'client' | 'tableName' | 'now'>>;
  /** Sends of a TransactWriteItems after a TransactionConflict before giving up. Default 6. */
  readonly conflictRetries?: number;
}

export interface DynamoStores {
  readonly transactions: DynamoTransactionStore;
  readonly actions: DynamoActionStore;
  readonly idempotency: DynamoIdempotencyStore;
  readonly approvals: DynamoApprovalStore;
  readonly routes: DynamoRouteStore;
  readonly streams: DynamoStreamStore;
  readonly uow: DynamoUnitOfWork;
  readonly attempts: DynamoAttemptReads;
}

export function createDynamoStores(options: DynamoStoresOptions): DynamoStores {
  const table = { client: options.client, tableName: options.tableName, ...(options.now !== undefined ? { now: options.now } : {}) };
  const transactions = new DynamoTransactionStore({ ...table, ...options.transactions });
  const actions = new DynamoActionStore(table);
  const idempotency = new DynamoIdempotencyStore({ ...table, ...options.idempotency });
  const approvals = new DynamoApprovalStore(table);
  const routes = new DynamoRouteStore(table);
  const streams = new DynamoStreamStore({ ...table, ...options.streams });
  const uow = new DynamoUnitOfWork({
    client: options.client,
    mappers: { transaction: transactions, action: actions, idempotency, approval: approvals, stream: streams },
    ...(options.conflictRetries !== undefined ? { conflictRetries: options.conflictRetries } : {}),
  });
  return {
    transactions,
    actions,
    idempotency,
    approvals,
    routes,
    streams,
    uow,
    attempts: new DynamoAttemptReads({ client: options.client, transactions, actions }),
  };
}
