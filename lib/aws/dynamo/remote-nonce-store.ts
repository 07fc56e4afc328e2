/**
 * DynamoDB adapter of the connector host's NonceStore
 * (lib/runtime/remote/stores.ts): every Lambda environment of a host
 * shares it, so a request replayed to another environment is refused too.
 *
 * Table: the host's own (never the runtime's), partition key `PK` only,
 * TTL attribute `ttl`. `claim` is ONE conditional put
 * (`attribute_not_exists(PK)`); DynamoDB's TTL deletion is lazy, so an item
 * whose `expires_at` passed is treated as absent by the condition too.
 */
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { NonceStore } from '../../runtime/remote/stores.js';
import { errorName, mapStoreError } from './store-errors.js';

export interface DynamoNonceStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly now?: () => number;
}

export class DynamoNonceStore implements NonceStore {
  readonly #o: DynamoNonceStoreOptions;
  constructor(options: DynamoNonceStoreOptions) {
    this.#o = options;
  }

  async claim(nonce: string, expires_at: Date): Promise<boolean> {
    const now = (this.#o.now ?? Date.now)();
    try {
      await this.#o.client.send(
        new PutCommand({
          TableName: this.#o.tableName,
          Item: { PK: `NONCE#${nonce}`, expires_at: expires_at.getTime(), ttl: Math.ceil(expires_at.getTime() / 1000) + 60 },
          ConditionExpression: 'attribute_not_exists(PK) OR expires_at < :now',
          ExpressionAttributeValues: { ':now': now },
        }),
      );
      return true;
    } catch (err) {
      if (errorName(err) === 'ConditionalCheckFailedException') return false;
      throw mapStoreError(err);
    }
  }
}
