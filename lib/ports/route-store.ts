/**
 * Port: action-scoped route assignments (reads only).
 *
 * A RouteAssignment is keyed by (tenant, action ID) and is immutable once
 * written. It is an attribute of the action item (`ActionRecord.route`),
 * pinned by the attempt start's own conditional write of the action (the
 * lease, `action.lease` with `route`; a preview that calls its handler pins
 * it with `action.pin_route`): set only when the action read at the expected
 * revision held none, never overwritten. A later attempt reuses it only when
 * the capability and the tenant still match (`routeMismatches`). An action
 * admitted before holds it in an item of its own (`ROUTE`), read by `get`
 * (docs/table-design.md, "The route on the action").
 *
 * There is deliberately NO lookup by transaction ID or plan ID: distinct
 * plan, commit, compensation or reconciliation action IDs resolve
 * independently and may land on different replicas (AIP transactions page,
 * "Connector routing is action-scoped").
 *
 * Errors: `route.invalid_assignment` (400), `transaction.store_unavailable`.
 * The DynamoDB adapter is lib/aws/dynamo/route-store.ts.
 */

export interface RouteAssignment {
  readonly tenant_id: string;
  readonly action_id: string;
  readonly capability_id: string;
  /** The verified tenant the route was admitted for (normally equals tenant_id). */
  readonly verified_tenant: string;
  readonly connector_id: string;
  readonly connector_instance: string;
  readonly replica: string;
  readonly endpoint: string;
  readonly peer_identity?: string;
  readonly peer_did?: string;
  /** Connector version (semver). */
  readonly version: string;
  /** sha256 hex of the admitted manifest. */
  readonly manifest_hash: string;
  readonly policy_revision: string;
  readonly credential_revision: string;
  readonly health_revision: string;
  /** Opaque admission reservation token. */
  readonly admission_reservation: string;
  readonly fence_token: number;
  readonly created_at: string;
}

export type RouteMismatch = 'capability_id' | 'tenant_id';

export interface RouteRef {
  readonly tenant_id: string;
  readonly action_id: string;
}

export interface RouteStore {
  /**
   * The route pinned for the action, strongly consistent: the action item's `route`, else the `ROUTE` item an
   * earlier version wrote (migrate on read). Undefined when neither holds one.
   */
  get(ref: RouteRef): Promise<RouteAssignment | undefined>;
  /** The `ROUTE` item an earlier version wrote for the action, alone (one strongly consistent read), if any. */
  getLegacy(ref: RouteRef): Promise<RouteAssignment | undefined>;
}

/** Which of capability/tenant differ between a stored assignment and a new request. */
export function routeMismatches(
  existing: Pick<RouteAssignment, 'capability_id' | 'tenant_id' | 'verified_tenant'>,
  wanted: Pick<RouteAssignment, 'capability_id' | 'tenant_id' | 'verified_tenant'>,
): RouteMismatch[] {
  const out: RouteMismatch[] = [];
  if (existing.capability_id !== wanted.capability_id) out.push('capability_id');
  if (existing.tenant_id !== wanted.tenant_id || existing.verified_tenant !== wanted.verified_tenant) out.push('tenant_id');
  return out;
}
