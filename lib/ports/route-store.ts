/**
 * Port: action-scoped route assignments.
 *
 * A RouteAssignment is keyed by (tenant, action ID) and is immutable once
 * written: `putIfAbsent` is ONE conditional put; when an assignment already
 * exists it is returned instead (from the failed write's ALL_OLD image) and
 * nothing is overwritten. The caller reuses it only when the capability and
 * the tenant still match (`reusable`, `mismatched`).
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

export interface PutRouteResult {
  /** True when this call wrote the assignment. */
  readonly created: boolean;
  /** The stored assignment (the existing one when created is false). */
  readonly assignment: RouteAssignment;
  /** True when the stored assignment matches the requested capability and tenant. */
  readonly reusable: boolean;
  /** What differs when not reusable. */
  readonly mismatched: readonly RouteMismatch[];
}

export interface RouteRef {
  readonly tenant_id: string;
  readonly action_id: string;
}

export interface RouteStore {
  /** Strongly consistent read by action ID. */
  get(ref: RouteRef): Promise<RouteAssignment | undefined>;
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
