/**
 * Ports of the remote placement.
 *
 * - NonceStore (host side): replay protection. `claim` is one conditional
 *   write: true the first time a nonce is seen, false afterwards, for as long
 *   as the freshness window can still accept a message carrying it.
 *   Adapters: InMemoryNonceStore (one process: the Node server), DynamoDB
 *   (lib/aws/dynamo/remote-nonce-store.ts: every Lambda environment shares it).
 * - RemoteCheckpointInbox (runtime side): where the checkpoint receiver makes
 *   a host's provider-operation checkpoint durable before it acknowledges it
 *   (the host cannot write the runtime's transaction record). One item per
 *   (tenant, transaction): a different operation for the same transaction is
 *   `transaction.provider_operation_conflict`. The proxy folds it into the
 *   transaction record through the attempt's own fenced checkpoint writer.
 *   Adapter: lib/aws/dynamo/remote-checkpoint-inbox.ts.
 */
import type { ProviderOperationRef } from '../../../packages/connector-sdk/src/protocol/index.js';

export interface NonceStore {
  /** True when `nonce` was not seen before; remembered until `expires_at`. */
  claim(nonce: string, expires_at: Date): Promise<boolean>;
}

/** Nonces in process memory, pruned as they expire (a single host process). */
export class InMemoryNonceStore implements NonceStore {
  readonly #seen = new Map<string, number>();
  readonly #now: () => number;
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }
  async claim(nonce: string, expires_at: Date): Promise<boolean> {
    const now = this.#now();
    for (const [n, until] of this.#seen) if (until <= now) this.#seen.delete(n);
    if (this.#seen.has(nonce)) return false;
    this.#seen.set(nonce, expires_at.getTime());
    return true;
  }
}

export interface InboxCheckpoint {
  readonly tenant_id: string;
  readonly transaction_id: string;
  readonly provider_operation: ProviderOperationRef;
  readonly cursor?: string;
  /** The attempt (and its action) that published it. */
  readonly attempt_id: string;
  readonly action_id: string;
  readonly recorded_at: string;
}

export interface RemoteCheckpointInbox {
  /**
   * Durable once it resolves. The same operation again keeps the first
   * reference (a new cursor replaces the old); another operation throws
   * AipError `transaction.provider_operation_conflict`.
   */
  put(checkpoint: InboxCheckpoint): Promise<void>;
  /** Strongly consistent. */
  get(ref: { readonly tenant_id: string; readonly transaction_id: string }): Promise<InboxCheckpoint | undefined>;
}
