/**
 * DynamoDB adapter of the AttemptReads port (lib/ports/attempt-reads.ts): one
 * BatchGetItem (ConsistentRead) for the action and its transaction. Keys
 * DynamoDB leaves unprocessed (throttling) are asked again with a short
 * backoff; after 8 rounds the read fails as `transaction.store_unavailable`.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { AttemptRead, AttemptReadInput, AttemptReads } from '../../ports/attempt-reads.js';
import type { DynamoActionStore } from './action-store.js';
import { consistentBatchGet } from './store-support.js';
import type { DynamoTransactionStore } from './transaction-store.js';

export interface DynamoAttemptReadsOptions {
  readonly client: DynamoDBDocumentClient;
  readonly transactions: DynamoTransactionStore;
  readonly actions: DynamoActionStore;
}

export class DynamoAttemptReads implements AttemptReads {
  constructor(private readonly options: DynamoAttemptReadsOptions) {}

  async loadAttempt(input: AttemptReadInput): Promise<AttemptRead> {
    const { client, actions, transactions } = this.options;
    const action = actions.readKey({ tenant_id: input.tenant_id, action_id: input.action_id });
    const txn = input.transaction_id !== undefined ? transactions.readKey(input.tenant_id, input.transaction_id) : undefined;
    if (txn !== undefined && txn.table !== action.table) throw new AipError('internal.unexpected', 'the action and transaction stores use different tables');
    const id = (k: { PK: unknown; SK: unknown }) => `${String(k.PK)}|${String(k.SK)}`;
    const found = await consistentBatchGet(client, action.table, [action.key, ...(txn !== undefined ? [txn.key] : [])]);
    const actionItem = found.get(id(action.key));
    return {
      action: actionItem !== undefined ? actions.recordOf(actionItem) : undefined,
      ...(txn !== undefined && input.transaction_id !== undefined
        ? {
            transaction: {
              transaction_id: input.transaction_id,
              record: transactions.recordOf(input.tenant_id, input.transaction_id, found.get(id(txn.key))),
            },
          }
        : {}),
    };
  }
}
