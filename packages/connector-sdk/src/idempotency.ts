/**
 * The downstream idempotency key: derived deterministically from the
 * action's idempotency identity, so every retry of the same action sends the
 * same key and the provider deduplicates it.
 *
 * Identity (all from the trusted context, never from the action body):
 * - with an idempotency reservation (ctx.idempotency, set by the runtime
 *   when the action carries an idempotency key):
 *     ["aip-idem/v2", namespace, capability_id, purpose, "reservation", reservation_id]
 * - without one:
 *     ["aip-idem/v2", namespace, capability_id, purpose, "action", tenant_id or "", action_id, transaction_id or ""]
 *
 * The key sent is `aip1-` + base64url(SHA-256(JSON.stringify(identity))),
 * 48 printable ASCII characters.
 *
 * Why the reservation ID and not the caller's key: reservations are scoped to
 * (tenant, principal, key), so two principals of one tenant may submit the
 * same key and body as two separate actions with two effects. A key derived
 * from the tenant and the raw key would make the provider deduplicate the
 * second principal's request into the first one's effect (v1 did this).
 * `reservation_id` is the scope-unique identity of the reservation (see
 * `reservationIdentity` in lib/ports/idempotency-store.ts), stable across
 * every attempt of the action. Without a reservation, the action ID is unique
 * per tenant only, so the tenant from the trusted context is part of the
 * identity: two tenants sharing a provider account never collide.
 *
 * Hashing keeps tenant IDs, principals and caller keys out of the provider's
 * records and bounds the length; the capability and the purpose keep a
 * charge, a refund and a cancel of the same action apart. `namespace`
 * defaults to the connector ID. Every request of an action that names the
 * key (the effect and the lookup by key, `context: 'idempotency_key'`) uses
 * this same derivation.
 *
 * Reconciling by key: a reconcile action is another action (its own ID, maybe
 * its own reservation), so its own derivation is NOT the key the original
 * request sent. `originalIdempotencyKey` recomputes that key from
 * `ctx.transaction.original_request` (the original action's identity, filled
 * by the runtime) and the trusted tenant, with the same derivation.
 */
import { createHash } from 'node:crypto';
import { sha256Hex, type Action, type PrincipalKind } from './protocol/index.js';
import type { ActionExecutionContext, OriginalRequestIdentity } from './context.js';

/** Version tag hashed into every reservation identity (bump when the covered fields change). */
export const RESERVATION_IDENTITY_VERSION = 'aip-idr/v1';
/** Prefix of a reservation identity. */
export const RESERVATION_IDENTITY_PREFIX = 'idr-';

/** A reservation's scope with the principal's kind: the input of `reservationIdentity`. */
export interface ReservationIdentityScope {
  readonly tenant_id: string;
  readonly principal_kind: PrincipalKind;
  readonly principal_id: string;
  /** The caller's raw idempotency key. */
  readonly key: string;
}

/**
 * The scope-unique identity of a reservation (the connector context's
 * `idempotency.reservation_id`):
 *
 *   `idr-` + first 40 hex of sha256(JSON.stringify(["aip-idr/v1", tenant_id, principal_kind, principal_id, key]))
 *
 * Deterministic from the reservation's scope only: every retry and attempt of
 * the action that owns the reservation gets the same identity, and two
 * principals or two tenants using the same raw key get different ones. It is
 * what downstream idempotency keys derive from: the raw key alone is the
 * caller's and is not unique across principals. Hashing keeps the tenant,
 * principal and raw key out of the connector's provider requests.
 */
export function reservationIdentity(scope: ReservationIdentityScope): string {
  const material = [RESERVATION_IDENTITY_VERSION, scope.tenant_id, scope.principal_kind, scope.principal_id, scope.key];
  return RESERVATION_IDENTITY_PREFIX + sha256Hex(JSON.stringify(material)).slice(0, 40);
}

export const IDEMPOTENCY_DERIVATION_VERSION = 'aip-idem/v2';
export const IDEMPOTENCY_KEY_PREFIX = 'aip1-';

/** `effect`: invoke, commit and compensate requests. `cancel`: the remote cancellation of the action's operation. */
export type IdempotencyPurpose = 'effect' | 'cancel';

export type IdempotencyIdentity =
  | {
      readonly namespace: string;
      readonly capability_id: string;
      readonly purpose: IdempotencyPurpose;
      readonly kind: 'reservation';
      /** ctx.idempotency.reservation_id: unique per (tenant, principal, key). */
      readonly reservation_id: string;
    }
  | {
      readonly namespace: string;
      readonly capability_id: string;
      readonly purpose: IdempotencyPurpose;
      readonly kind: 'action';
      /** ctx.tenant.tenant_id (action IDs are unique per tenant only). */
      readonly tenant_id?: string;
      readonly action_id: string;
      readonly transaction_id?: string;
    };

/**
 * The identity of one action's downstream request, read from trusted state
 * only: the reservation when the runtime gave one, else the action's
 * identity within its tenant. `action.idempotency_key` is never used: it is
 * the caller's raw key, not unique across principals.
 */
export function idempotencyIdentityOf(
  action: Pick<Action, 'id' | 'capability_id'>,
  ctx: ActionExecutionContext,
  namespace: string,
  purpose: IdempotencyPurpose,
): IdempotencyIdentity {
  return identityFrom(
    {
      capability_id: action.capability_id,
      action_id: action.id,
      reservation_id: ctx.idempotency?.reservation_id,
      tenant_id: ctx.tenant?.tenant_id,
      transaction_id: ctx.transaction?.transaction_id,
    },
    namespace,
    purpose,
  );
}

/**
 * The identity of the ORIGINAL request a reconcile attempt is about: the same
 * derivation as idempotencyIdentityOf, from `ctx.transaction.original_request`
 * (its action, capability, transaction and reservation) and the trusted
 * tenant. Undefined without `original_request`.
 */
export function originalIdempotencyIdentityOf(
  ctx: ActionExecutionContext,
  namespace: string,
  purpose: IdempotencyPurpose = 'effect',
): IdempotencyIdentity | undefined {
  const original: OriginalRequestIdentity | undefined = ctx.transaction?.original_request;
  if (original === undefined) return undefined;
  return identityFrom(
    {
      capability_id: original.capability_id,
      action_id: original.action_id,
      reservation_id: original.reservation_id,
      tenant_id: ctx.tenant?.tenant_id,
      transaction_id: original.transaction_id,
    },
    namespace,
    purpose,
  );
}

function identityFrom(
  facts: { capability_id: string; action_id: string; reservation_id: string | undefined; tenant_id: string | undefined; transaction_id: string | undefined },
  namespace: string,
  purpose: IdempotencyPurpose,
): IdempotencyIdentity {
  const { capability_id, reservation_id, tenant_id, action_id, transaction_id } = facts;
  if (reservation_id !== undefined) return { namespace, capability_id, purpose, kind: 'reservation', reservation_id };
  return {
    namespace,
    capability_id,
    purpose,
    kind: 'action',
    ...(tenant_id !== undefined ? { tenant_id } : {}),
    action_id,
    ...(transaction_id !== undefined ? { transaction_id } : {}),
  };
}

/** The key sent to the provider for an identity. */
export function deriveIdempotencyKey(identity: IdempotencyIdentity): string {
  const material =
    identity.kind === 'reservation'
      ? [IDEMPOTENCY_DERIVATION_VERSION, identity.namespace, identity.capability_id, identity.purpose, 'reservation', identity.reservation_id]
      : [
          IDEMPOTENCY_DERIVATION_VERSION,
          identity.namespace,
          identity.capability_id,
          identity.purpose,
          'action',
          identity.tenant_id ?? '',
          identity.action_id,
          identity.transaction_id ?? '',
        ];
  return IDEMPOTENCY_KEY_PREFIX + createHash('sha256').update(JSON.stringify(material), 'utf8').digest('base64url');
}

/** Shorthand: the key for an action in a context (what connectors send; see the file comment). */
export function downstreamIdempotencyKey(
  action: Pick<Action, 'id' | 'capability_id'>,
  ctx: ActionExecutionContext,
  namespace: string,
  purpose: IdempotencyPurpose = 'effect',
): string {
  return deriveIdempotencyKey(idempotencyIdentityOf(action, ctx, namespace, purpose));
}

/**
 * The downstream key the ORIGINAL request of a reconcile attempt sent: what
 * `downstreamIdempotencyKey(originalAction, originalCtx, namespace, purpose)`
 * returned in the original attempt, recomputed from
 * `ctx.transaction.original_request` and the trusted tenant. Undefined when
 * the context has no `original_request`. Use it to look the provider
 * operation up by key when no provider operation ID was checkpointed.
 */
export function originalIdempotencyKey(ctx: ActionExecutionContext, namespace: string, purpose: IdempotencyPurpose = 'effect'): string | undefined {
  const identity = originalIdempotencyIdentityOf(ctx, namespace, purpose);
  return identity !== undefined ? deriveIdempotencyKey(identity) : undefined;
}
