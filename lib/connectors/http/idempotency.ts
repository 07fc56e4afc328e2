/**
 * The downstream idempotency key: derived deterministically from the
 * action's idempotency identity, so every retry of the same action sends the
 * same key and the provider deduplicates it.
 *
 * Identity (all from the trusted context or the validated envelope):
 * - with an idempotency key (ctx.idempotency.key, else action.idempotency_key):
 *     ["aip-idem/v1", namespace, capability_id, purpose, "key", tenant_id or "", key]
 * - without one:
 *     ["aip-idem/v1", namespace, capability_id, purpose, "action", action_id, transaction_id or ""]
 *
 * The key sent is `aip1-` + base64url(SHA-256(JSON.stringify(identity))),
 * 48 printable ASCII characters. Hashing keeps tenant IDs and caller keys
 * out of the provider's records and bounds the length; the tenant in the
 * identity keeps two tenants' equal keys apart in a shared provider account;
 * the capability and the purpose keep a charge, a refund and a cancel of the
 * same action apart. `namespace` defaults to the connector ID.
 */
import { createHash } from 'node:crypto';
import type { Action } from '../../protocol/index.js';
import type { ActionExecutionContext } from '../context.js';

export const IDEMPOTENCY_DERIVATION_VERSION = 'aip-idem/v1';
export const IDEMPOTENCY_KEY_PREFIX = 'aip1-';

/** `effect`: invoke, commit and compensate requests. `cancel`: the remote cancellation of the action's operation. */
export type IdempotencyPurpose = 'effect' | 'cancel';

export type IdempotencyIdentity =
  | {
      readonly namespace: string;
      readonly capability_id: string;
      readonly purpose: IdempotencyPurpose;
      readonly kind: 'key';
      readonly tenant_id?: string;
      readonly idempotency_key: string;
    }
  | {
      readonly namespace: string;
      readonly capability_id: string;
      readonly purpose: IdempotencyPurpose;
      readonly kind: 'action';
      readonly action_id: string;
      readonly transaction_id?: string;
    };

/** The identity of one action's downstream request, read from trusted state only. */
export function idempotencyIdentityOf(action: Pick<Action, 'id' | 'capability_id' | 'idempotency_key'>, ctx: ActionExecutionContext, namespace: string, purpose: IdempotencyPurpose): IdempotencyIdentity {
  const key = ctx.idempotency?.key ?? action.idempotency_key;
  if (key !== undefined) {
    const tenant_id = ctx.tenant?.tenant_id;
    return { namespace, capability_id: action.capability_id, purpose, kind: 'key', idempotency_key: key, ...(tenant_id !== undefined ? { tenant_id } : {}) };
  }
  const transaction_id = ctx.transaction?.transaction_id;
  return { namespace, capability_id: action.capability_id, purpose, kind: 'action', action_id: action.id, ...(transaction_id !== undefined ? { transaction_id } : {}) };
}

/** The key sent to the provider for an identity. */
export function deriveIdempotencyKey(identity: IdempotencyIdentity): string {
  const material =
    identity.kind === 'key'
      ? [IDEMPOTENCY_DERIVATION_VERSION, identity.namespace, identity.capability_id, identity.purpose, 'key', identity.tenant_id ?? '', identity.idempotency_key]
      : [IDEMPOTENCY_DERIVATION_VERSION, identity.namespace, identity.capability_id, identity.purpose, 'action', identity.action_id, identity.transaction_id ?? ''];
  return IDEMPOTENCY_KEY_PREFIX + createHash('sha256').update(JSON.stringify(material), 'utf8').digest('base64url');
}

/** Shorthand: the key for an action in a context. */
export function downstreamIdempotencyKey(action: Pick<Action, 'id' | 'capability_id' | 'idempotency_key'>, ctx: ActionExecutionContext, namespace: string, purpose: IdempotencyPurpose = 'effect'): string {
  return deriveIdempotencyKey(idempotencyIdentityOf(action, ctx, namespace, purpose));
}
