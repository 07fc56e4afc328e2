/**
 * Creates the single table from lib/aws/dynamo/table-design.ts (the same
 * source the CDK stateful stack uses), waits until the table and its indexes
 * are ACTIVE, and enables TTL. Used by the tests and by `npm start` against
 * DynamoDB Local; production tables come from CDK.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { CreateTableCommand, DescribeTableCommand, UpdateTimeToLiveCommand, type CreateTableCommandInput, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GSIS, GSI_PROJECTION, KEY_ATTRIBUTES, TABLE_KEYS, TTL_ATTRIBUTE } from './table-design.js';

export interface CreateTableOptions {
  /** Give up waiting for ACTIVE after this long. Default 60 s. */
  readonly timeoutMs?: number;
  /** Treat an existing table as success (still waits for ACTIVE and enables TTL). Default false. */
  readonly ifNotExists?: boolean;
}

/** The CreateTable request for `tableName`, derived from the table design. */
export function tableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: KEY_ATTRIBUTES.map((name) => ({ AttributeName: name, AttributeType: 'S' as const })),
    KeySchema: [
      { AttributeName: TABLE_KEYS.partitionKey, KeyType: 'HASH' },
      { AttributeName: TABLE_KEYS.sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: Object.values(GSIS).map((g) => ({
      IndexName: g.name,
      KeySchema: [
        { AttributeName: g.partitionKey, KeyType: 'HASH' as const },
        { AttributeName: g.sortKey, KeyType: 'RANGE' as const },
      ],
      Projection: { ProjectionType: GSI_PROJECTION },
    })),
  };
}

export async function createTable(client: DynamoDBClient, tableName: string, options: CreateTableOptions = {}): Promise<void> {
  try {
    await client.send(new CreateTableCommand(tableDefinition(tableName)));
  } catch (err) {
    const name = (err as { name?: string }).name;
    if (!(options.ifNotExists === true && name === 'ResourceInUseException')) throw err;
  }
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (let i = 0; ; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (Table?.GlobalSecondaryIndexes ?? []).every((g) => g.IndexStatus === 'ACTIVE');
    if (Table?.TableStatus === 'ACTIVE' && indexesActive) break;
    if (Date.now() > deadline) throw new Error(`table ${tableName} not ACTIVE after ${options.timeoutMs ?? 60_000} ms`);
    // Polling an external resource's status (AWS takes seconds; DynamoDB Local is immediate).
    await delay(Math.min(2_000, 50 * 2 ** i));
  }
  try {
    await client.send(new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true } }));
  } catch (err) {
    // Re-enabling TTL on a table that already has it is a ValidationException.
    const message = String((err as { message?: string }).message ?? '');
    if (!(options.ifNotExists === true && /already enabled/i.test(message))) throw err;
  }
}
