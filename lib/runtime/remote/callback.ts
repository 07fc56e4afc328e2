/**
 * The runtime's checkpoint receiver: where a connector host publishes a
 * transaction checkpoint (a provider operation ID) during a remote attempt,
 * and from which it gets a signed acknowledgement once the checkpoint is
 * durable in the runtime's table. The connector's `checkpoint()` resolves
 * only then, so the operation is durable before the connector awaits a
 * commit response that may be lost (the page's rule), although the host
 * cannot write the runtime's table.
 *
 * A callback is accepted when:
 * - it is signed by a host key the runtime knows, addressed to this
 *   receiver (`aud`), and fresh (`iat`);
 * - it carries the runtime's own signed request of the attempt (verified
 *   with the runtime's key: the runtime issued this attempt), whose pinned
 *   peer is the key that signed the callback, whose deadline is at most one
 *   freshness window old, and whose trusted context is transactional in a
 *   mode that checkpoints.
 * The checkpoint then goes to the RemoteCheckpointInbox (one item per
 * tenant and transaction; a different operation is refused with
 * `transaction.provider_operation_conflict`). Callbacks are idempotent: a
 * replay writes the same reference again, so no nonce store is needed.
 * The proxy folds the inbox into the transaction record through the
 * attempt's own fenced checkpoint writer (./proxy.ts).
 */
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { JsonObject } from '../../../packages/connector-sdk/src/protocol/index.js';
import { systemClock, type Clock } from '../../../packages/connector-sdk/src/ports/clock.js';
import { TRANSACTION_CHECKPOINT_MODES } from '../../../packages/connector-sdk/src/context.js';
import { ConnectorFailure } from '../../../packages/connector-sdk/src/failure.js';
import { messageDigest, signCompact, verifyCompact, type RemoteKeyring, type RemoteSigner } from './jws.js';
import type { HostRequest, HostResponse } from './host.js';
import {
  FRESHNESS_WINDOW_MS,
  REMOTE_CONTENT_TYPE,
  REMOTE_TYP,
  RemoteCheckpointCallbackSchema,
  RemoteRequestSchema,
  isFresh,
  type RemoteCheckpointAck,
} from './protocol.js';
import type { RemoteCheckpointInbox } from './stores.js';

export interface CheckpointReceiverOptions {
  /** The runtime's signing key (signs acknowledgements). */
  readonly signer: RemoteSigner;
  /** The runtime's own public keys (verify the embedded requests). */
  readonly runtime_keys: RemoteKeyring;
  /** The connector hosts' public keys. */
  readonly host_keys: RemoteKeyring;
  readonly inbox: RemoteCheckpointInbox;
  /** This receiver's public URL, as requests name it (`callback.url`). */
  readonly url: string;
  readonly clock?: Clock;
}

export const CHECKPOINT_RECEIVER_SOURCE = 'runtime:checkpoint-receiver';

export class CheckpointReceiver {
  readonly #o: CheckpointReceiverOptions;
  readonly #clock: Clock;
  constructor(options: CheckpointReceiverOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
  }

  async handle(req: HostRequest): Promise<HostResponse> {
    if (req.method.toUpperCase() !== 'POST')
      return { status: 405, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'method_not_allowed' }) };
    const now = this.#clock.now().getTime();
    let callback;
    try {
      const verified = verifyCompact(req.body, REMOTE_TYP.checkpoint, this.#o.host_keys);
      const parsed = RemoteCheckpointCallbackSchema.safeParse(verified.payload);
      if (!parsed.success) return this.#refuse(undefined, 'connector.remote_signature_invalid', { reason: 'payload_schema' });
      callback = parsed.data;
      if (callback.iss !== verified.kid) return this.#refuse(callback, 'connector.remote_signature_invalid', { reason: 'issuer' });
    } catch (err) {
      return this.#refuse(undefined, 'connector.remote_signature_invalid', {
        reason: isAipError(err) && typeof err.details.reason === 'string' ? err.details.reason : 'unverifiable',
      });
    }
    if (callback.aud !== this.#o.url) return this.#refuse(callback, 'connector.remote_route_mismatch', { mismatched: ['aud'] });
    if (!isFresh(callback.iat, now)) return this.#refuse(callback, 'connector.remote_stale', { reason: 'iat' });
    let request;
    try {
      const verified = verifyCompact(callback.request, REMOTE_TYP.request, this.#o.runtime_keys);
      const parsed = RemoteRequestSchema.safeParse(verified.payload);
      if (!parsed.success || parsed.data.iss !== verified.kid) return this.#refuse(callback, 'connector.remote_signature_invalid', { reason: 'request' });
      request = parsed.data;
    } catch {
      return this.#refuse(callback, 'connector.remote_signature_invalid', { reason: 'request' });
    }
    if (request.route.peer_identity !== callback.iss) return this.#refuse(callback, 'connector.remote_route_mismatch', { mismatched: ['peer_identity'] });
    if (Date.parse(request.deadline) + FRESHNESS_WINDOW_MS <= now)
      return this.#refuse(callback, 'connector.remote_deadline_exceeded', { deadline: request.deadline });
    const tx = request.context.transaction;
    if (tx === undefined || !TRANSACTION_CHECKPOINT_MODES.has(tx.mode) || request.context.tenant === undefined) {
      return this.#refuse(callback, 'connector.transaction_checkpoint_unavailable', { mode: tx?.mode ?? null });
    }
    try {
      await this.#o.inbox.put({
        tenant_id: request.route.tenant_id,
        transaction_id: tx.transaction_id,
        provider_operation: callback.provider_operation,
        ...(callback.cursor !== undefined ? { cursor: callback.cursor } : {}),
        attempt_id: request.context.attempt_id,
        action_id: request.action.id,
        recorded_at: new Date(now).toISOString(),
      });
    } catch (err) {
      if (isAipError(err, 'transaction.provider_operation_conflict')) return this.#refuse(callback, err.code, { ...(err.details as JsonObject) });
      throw err;
    }
    return this.#ack(callback, 'durable', 200);
  }

  async #ack(
    callback: { nonce: string; request: string; seq: number; iss: string } | undefined,
    status: 'durable' | 'refused',
    http: number,
    failure?: ConnectorFailure,
  ): Promise<HostResponse> {
    const ack: RemoteCheckpointAck = {
      v: 1,
      kind: 'checkpoint_ack',
      iss: this.#o.signer.kid,
      aud: callback?.iss ?? 'unknown',
      iat: this.#clock.now().getTime(),
      nonce: callback?.nonce ?? 'A'.repeat(22),
      request_digest: callback !== undefined ? messageDigest(callback.request.trim()) : 'unknown',
      seq: callback?.seq ?? 0,
      status,
      ...(failure !== undefined ? { failure: failure.toJSON() } : {}),
    };
    return {
      status: http,
      headers: { 'content-type': REMOTE_CONTENT_TYPE, 'cache-control': 'no-store' },
      body: await signCompact(this.#o.signer, REMOTE_TYP.checkpoint_ack, ack),
    };
  }

  async #refuse(callback: { nonce: string; request: string; seq: number; iss: string } | undefined, code: string, details: JsonObject): Promise<HostResponse> {
    const failure = new ConnectorFailure({ code, operation: 'transaction_commit', source: CHECKPOINT_RECEIVER_SOURCE, redacted_details: details });
    return this.#ack(callback, 'refused', code === 'transaction.provider_operation_conflict' ? 409 : 401, failure);
  }
}
