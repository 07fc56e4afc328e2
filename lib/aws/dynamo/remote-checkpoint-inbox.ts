/**
 * DynamoDB adapter of the RemoteCheckpointInbox port
 * (lib/runtime/remote/stores.ts), on the runtime's single table.
 *
 * Item: PK `RCKPT#<tenant>#<transaction_id>`, SK `RCKPT` (the key holds the
 * tenant and transaction ID, which the item does not store again; items
 * written before carry them and `item_type`): its own partition (nothing that queries a transaction's
 * partition sees it). `put` is ONE conditional put: the item does not exist,
 * or it holds the same provider and operation ID (then only the cursor and
 * the publishing attempt change). A different operation is refused from the
 * failed write's ALL_OLD image: `transaction.provider_operation_conflict`
 * naming the current operation. TTL: 30 days (the record itself keeps the
 * operation once folded; the inbox only bridges a lost answer).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { ProviderOperationRefSchema } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { InboxCheckpoint, RemoteCheckpointInbox } from '../../runtime/remote/stores.js';
import { checkId, conditionalPut, consistentGet, epochSeconds, invalid } from './store-support.js';

export interface DynamoRemoteCheckpointInboxOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  /** Item lifetime. Default 30 days. */
  readonly retentionSeconds?: number;
  readonly now?: () => Date;
}

const CODE = 'transaction.invalid_provider_operation' as const;

export function remoteCheckpointKey(tenant_id: string, transaction_id: string): { PK: string; SK: string } {
  return { PK: `RCKPT#${tenant_id}#${transaction_id}`, SK: 'RCKPT' };
}

export class DynamoRemoteCheckpointInbox implements RemoteCheckpointInbox {
  readonly #o: DynamoRemoteCheckpointInboxOptions;
  constructor(options: DynamoRemoteCheckpointInboxOptions) {
    this.#o = options;
  }

  async put(c: InboxCheckpoint): Promise<void> {
    checkId(CODE, 'tenant_id', c.tenant_id);
    checkId(CODE, 'transaction_id', c.transaction_id);
    if (!ProviderOperationRefSchema.safeParse(c.provider_operation).success) throw invalid(CODE, 'provider_operation must be a provider operation reference');
    const now = (this.#o.now ?? (() => new Date()))();
    const item = {
      ...remoteCheckpointKey(c.tenant_id, c.transaction_id),
      provider_operation: { ...c.provider_operation },
      ...(c.cursor !== undefined ? { cursor: c.cursor } : {}),
      attempt_id: c.attempt_id,
      action_id: c.action_id,
      recorded_at: c.recorded_at,
      ttl: epochSeconds(now.getTime() + (this.#o.retentionSeconds ?? 30 * 86_400) * 1000),
    };
    const out = await conditionalPut(this.#o.client, {
      TableName: this.#o.tableName,
      Item: item,
      ConditionExpression: 'attribute_not_exists(PK) OR (provider_operation.provider = :provider AND provider_operation.operation_id = :operation_id)',
      ExpressionAttributeValues: { ':provider': c.provider_operation.provider, ':operation_id': c.provider_operation.operation_id },
    });
    if (!out.ok) {
      const current = out.old?.provider_operation as { provider?: string; operation_id?: string } | undefined;
      throw new AipError('transaction.provider_operation_conflict', undefined, {
        details: { current_provider_operation: { provider: current?.provider ?? null, operation_id: current?.operation_id ?? null } },
      });
    }
  }

  async get(ref: { readonly tenant_id: string; readonly transaction_id: string }): Promise<InboxCheckpoint | undefined> {
    const item = await consistentGet(this.#o.client, this.#o.tableName, remoteCheckpointKey(ref.tenant_id, ref.transaction_id));
    if (item === undefined) return undefined;
    const parsed = ProviderOperationRefSchema.safeParse(item.provider_operation);
    if (!parsed.success) return undefined;
    return {
      // The IDs the item was read by (its key).
      tenant_id: ref.tenant_id,
      transaction_id: ref.transaction_id,
      provider_operation: parsed.data,
      ...(typeof item.cursor === 'string' ? { cursor: item.cursor } : {}),
      attempt_id: String(item.attempt_id),
      action_id: String(item.action_id),
      recorded_at: String(item.recorded_at),
    };
  }
}
