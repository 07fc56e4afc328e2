/**
 * Per-file isolated DynamoDB tables on the DynamoDB Local started by
 * test/support/global-setup.ts. Every call creates a uniquely named table,
 * so no test depends on another's data.
 *
 *   const { client, tableName, store } = await createTestTable();
 */
import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { createTable } from '../../lib/aws/dynamo/create-table.js';
import { createDynamoStores, type DynamoStores } from '../../lib/aws/dynamo/stores.js';
import { writableStores, type WritableStores } from './store-writes.js';

export interface TestTable {
  /** Document client on the DynamoDB Local endpoint (maxAttempts 1: no retry can hide a race). */
  readonly client: DynamoDBDocumentClient;
  /** The underlying low-level client. */
  readonly raw: DynamoDBClient;
  readonly tableName: string;
  /** The transaction store with its writes (test/support/store-writes.ts). */
  readonly store: WritableStores['transactions'];
  /** Every store on the table, and the unit of work that writes them. */
  readonly stores: DynamoStores;
  /** Deletes the table and closes the client. */
  destroy(): Promise<void>;
}

export interface TestTableOptions {
  /** Store clock. */
  readonly now?: () => Date;
  readonly dryRunRetentionSeconds?: number;
  /** Name prefix (letters, digits, `-`, `_`). */
  readonly prefix?: string;
}

/** A low-level client on DynamoDB Local: region us-east-1, static dummy credentials, no retries, 128 sockets. */
export function localDynamoClient(endpoint = inject('dynamoEndpoint')): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
    requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets: 128 }) },
  });
}

export async function createTestTable(options: TestTableOptions = {}): Promise<TestTable> {
  const raw = localDynamoClient();
  const client = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  const tableName = `${options.prefix ?? 'test'}-${process.pid}-${randomUUID()}`;
  await createTable(raw, tableName);
  const stores = createDynamoStores({
    client,
    tableName,
    ...(options.now ? { now: options.now } : {}),
    ...(options.dryRunRetentionSeconds !== undefined ? { transactions: { dryRunRetentionSeconds: options.dryRunRetentionSeconds } } : {}),
  });
  return {
    client,
    raw,
    tableName,
    store: writableStores(stores).transactions,
    stores,
    destroy: async () => {
      try {
        await raw.send(new DeleteTableCommand({ TableName: tableName }));
      } finally {
        raw.destroy();
      }
    },
  };
}
