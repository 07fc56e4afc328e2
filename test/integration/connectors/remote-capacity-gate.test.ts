/**
 * The DynamoDB CapacityGate of the Lambda connector host
 * (lib/aws/dynamo/remote-capacity-gate.ts) on DynamoDB Local, through the
 * real SDK: concurrent acquisitions from separate gates (as separate Lambda
 * environments would) never hold more slots than the limit; a released slot
 * is taken again; a slot whose holder died frees at its expiry, and that
 * holder's late release cannot free its successor's slot.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoCapacityGate } from '../../../lib/aws/dynamo/remote-capacity-gate.js';
import type { CapacitySlot } from '../../../lib/runtime/remote/stores.js';
import { localDynamoClient } from '../../support/dynamo.js';

let raw: DynamoDBClient;
let client: DynamoDBDocumentClient;
const tableName = `host-capacity-${process.pid}-${randomUUID()}`;

beforeAll(async () => {
  raw = localDynamoClient();
  client = DynamoDBDocumentClient.from(raw);
  // The host table's shape (infra/remote-host.ts HostNonces): partition key PK only.
  await raw.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: 'PK', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'PK', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
});

afterAll(async () => {
  await raw.send(new DeleteTableCommand({ TableName: tableName }));
  raw.destroy();
});

const later = () => new Date(Date.now() + 600_000);

describe('DynamoCapacityGate', () => {
  it('never holds more slots than the limit, however many environments race for them', async () => {
    const gates = Array.from({ length: 8 }, () => new DynamoCapacityGate({ client, tableName }));
    const slots = await Promise.all(gates.map((gate) => gate.acquire('race', 3, later())));
    const held = slots.filter((s): s is CapacitySlot => s !== undefined);
    expect(held).toHaveLength(3);
    // Full: one more is refused; a released slot is taken again.
    expect(await gates[0]!.acquire('race', 3, later())).toBeUndefined();
    await held[0]!.release();
    const again = await gates[1]!.acquire('race', 3, later());
    expect(again).toBeDefined();
    expect(await gates[2]!.acquire('race', 3, later())).toBeUndefined();
    // Another connector has slots of its own.
    expect(await gates[3]!.acquire('another', 3, later())).toBeDefined();
  });

  it('frees the slot of a holder that died at its expiry, and that holder’s late release does not free the successor', async () => {
    let now = Date.now();
    const gate = new DynamoCapacityGate({ client, tableName, now: () => now });
    const dead = await gate.acquire('expiry', 1, new Date(now + 1_000));
    expect(dead).toBeDefined();
    expect(await gate.acquire('expiry', 1, new Date(now + 60_000))).toBeUndefined();
    now += 2_000;
    const successor = await gate.acquire('expiry', 1, new Date(now + 60_000));
    expect(successor).toBeDefined();
    // The dead holder comes back and releases: the successor keeps its slot.
    await dead!.release();
    expect(await gate.acquire('expiry', 1, new Date(now + 60_000))).toBeUndefined();
    await successor!.release();
    expect(await gate.acquire('expiry', 1, new Date(now + 60_000))).toBeDefined();
  });
});
