/**
 * DynamoDB adapter of the connector host's CapacityGate
 * (lib/runtime/remote/stores.ts): every Lambda environment of a host
 * counts against the same slots. A Lambda environment serves one request at
 * a time, so a limit held in process memory would bound nothing there.
 *
 * Table: the host's own (the nonce table; partition key `PK`, TTL `ttl`).
 * Connector `c` with limit `n` has the slots `CAP#<c>#0` … `CAP#<c>#<n-1>`.
 * `acquire` tries them from a random one, each with ONE conditional put that
 * succeeds only on a free slot (absent, or its holder's expiry passed) and
 * records this holder's token; the first success holds the slot. All `n`
 * refused: the limit is reached. `release` is one conditional delete on the
 * holder's own token, so a late release never frees a slot someone else took
 * after it expired. A host that died holding a slot frees it at its expiry
 * (the attempt's deadline plus a margin, set by the host).
 *
 * Cost: one write per admitted attempt while slots are free; up to `n`
 * refused writes when the limit is reached (configuration caps `n`).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { DeleteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CapacityGate, CapacitySlot } from '../../runtime/remote/stores.js';
import { errorName, mapStoreError } from './store-errors.js';

export interface DynamoCapacityGateOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly now?: () => number;
}

export class DynamoCapacityGate implements CapacityGate {
  readonly #o: DynamoCapacityGateOptions;
  constructor(options: DynamoCapacityGateOptions) {
    this.#o = options;
  }

  async acquire(connector_id: string, limit: number, expires_at: Date): Promise<CapacitySlot | undefined> {
    const holder = randomBytes(16).toString('base64url');
    const start = randomInt(limit);
    for (let i = 0; i < limit; i++) {
      const PK = `CAP#${connector_id}#${(start + i) % limit}`;
      const now = (this.#o.now ?? Date.now)();
      try {
        await this.#o.client.send(
          new PutCommand({
            TableName: this.#o.tableName,
            Item: { PK, holder, expires_at: expires_at.getTime(), ttl: Math.ceil(expires_at.getTime() / 1000) + 60 },
            ConditionExpression: 'attribute_not_exists(PK) OR expires_at < :now',
            ExpressionAttributeValues: { ':now': now },
          }),
        );
        return { release: () => this.#release(PK, holder) };
      } catch (err) {
        if (errorName(err) !== 'ConditionalCheckFailedException') throw mapStoreError(err);
      }
    }
    return undefined;
  }

  async #release(PK: string, holder: string): Promise<void> {
    try {
      await this.#o.client.send(
        new DeleteCommand({
          TableName: this.#o.tableName,
          Key: { PK },
          ConditionExpression: 'holder = :holder',
          ExpressionAttributeValues: { ':holder': holder },
        }),
      );
    } catch {
      // Taken over after it expired, or the store failed: either way the slot frees itself at its expiry.
    }
  }
}
