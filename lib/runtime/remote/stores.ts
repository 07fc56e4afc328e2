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
 * - CapacityGate (host side): the per-connector concurrency limit of the
 *   host's admission (./host.ts). `acquire` takes one of `limit` slots of a
 *   connector, or answers undefined when all are held; a slot is held until
 *   it is released or until `expires_at` (a host that died holding one frees
 *   it when its attempt's deadline has long passed). Adapters:
 *   InMemoryCapacityGate (one process: the Node server, where one process
 *   serves many requests at once), DynamoDB
 *   (lib/aws/dynamo/remote-capacity-gate.ts: every Lambda environment of the
 *   host counts against the same slots, since one environment serves one
 *   request at a time).
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

/** One held slot of a connector's concurrency limit. */
export interface CapacitySlot {
  /** Frees the slot. Never throws (a slot that cannot be freed expires). */
  release(): Promise<void>;
}

export interface CapacityGate {
  /** One of the `limit` slots of connector `connector_id` until `expires_at`, or undefined when every slot is held. */
  acquire(connector_id: string, limit: number, expires_at: Date): Promise<CapacitySlot | undefined>;
}

/** Slots in process memory (a single host process). */
export class InMemoryCapacityGate implements CapacityGate {
  /** Per connector: the expiry of each held slot, by slot token. */
  readonly #held = new Map<string, Map<symbol, number>>();
  readonly #now: () => number;
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }
  async acquire(connector_id: string, limit: number, expires_at: Date): Promise<CapacitySlot | undefined> {
    const held = this.#held.get(connector_id) ?? new Map<symbol, number>();
    this.#held.set(connector_id, held);
    const now = this.#now();
    for (const [token, until] of held) if (until <= now) held.delete(token);
    if (held.size >= limit) return undefined;
    const token = Symbol(connector_id);
    held.set(token, expires_at.getTime());
    return { release: async () => void held.delete(token) };
  }
}
