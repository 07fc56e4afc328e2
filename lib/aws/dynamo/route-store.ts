/**
 * DynamoDB adapter of the RouteStore port (lib/ports/route-store.ts): reads only.
 *
 * The route is an attribute of the action item (`route`, packed whole): the attempt start's own conditional
 * write of the action pins it (./action-store.ts, the lease; `action.pin_route` for a preview), so this module
 * holds its codec (`storedRoute`, `routeOf`), shared with the action store. An action admitted before holds it in
 * an item of its own, PK `ACTION#<tenant>#<action_id>`, SK `ROUTE` (its fields packed in one attribute
 * `assignment`, or, written before that, as attributes of their own), never written again and read here
 * (docs/table-design.md, "The route on the action").
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Sha256HexSchema } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { RouteAssignment, RouteRef, RouteStore } from '../../ports/route-store.js';
import { checkId, checkNonNegativeInt, checkTime, compact, consistentGet, invalid, type Item } from './store-support.js';
import { keys, withKeyAttributes } from './table-design.js';
import { unpack } from './packed-attributes.js';

export interface DynamoRouteStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
}

const CODE = 'route.invalid_assignment' as const;

const FIELDS = [
  'tenant_id',
  'action_id',
  'capability_id',
  'verified_tenant',
  'connector_id',
  'connector_instance',
  'replica',
  'endpoint',
  'peer_identity',
  'peer_did',
  'version',
  'manifest_hash',
  'policy_revision',
  'credential_revision',
  'health_revision',
  'admission_reservation',
  'fence_token',
  'created_at',
] as const satisfies readonly (keyof RouteAssignment)[];

/** The attribute of the action item the route is pinned in, packed whole (the action store's PACKED set holds it). */
export const ROUTE_ATTRIBUTE = 'route';

/**
 * The attribute a legacy route item stores its assignment in, packed whole (./packed-attributes.ts). An item
 * written before packing holds the fields as attributes of their own, and reads exactly as before.
 */
const ASSIGNMENT = 'assignment';

/**
 * The assignment of stored fields (unpacked); `tenant_id` and `action_id` are the action's (its key). A route pinned on
 * its action stores no `verified_tenant` equal to the tenant, nor a `capability_id` equal to the action's
 * (`action_capability_id`): absent, they are those (docs/table-design.md, "Attributes that repeat the item").
 */
export function routeOf(fields: Item, tenant_id: string, action_id: string, action_capability_id?: string): RouteAssignment {
  const defaults: Item = { verified_tenant: tenant_id, ...(action_capability_id !== undefined ? { capability_id: action_capability_id } : {}) };
  const item: Item = { ...defaults, ...fields, tenant_id, action_id };
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) if (item[f] !== undefined) out[f] = item[f];
  return out as unknown as RouteAssignment;
}

/** A legacy route item's assignment; `tenant_id` and `action_id` come from the key (stored only by items written before the lean item model). */
function toAssignment(stored: Item): RouteAssignment {
  const { [ASSIGNMENT]: packedFields, ...rest } = stored;
  const fields = packedFields === undefined ? {} : (unpack(packedFields, ASSIGNMENT) as Item);
  const item = withKeyAttributes({ ...rest, ...fields });
  return routeOf(item, item.tenant_id as string, item.action_id as string);
}

/**
 * What the action item `ref` stores of `route` (checked: `route.invalid_assignment`, and its tenant and action ID
 * must be the action's): every field but the two its key holds, packed by the action store's update; nor a
 * `verified_tenant` equal to the tenant, nor a `capability_id` equal to the action's when the writer knows it
 * (`action_capability_id`: an action's capability never changes), which {@link routeOf} reads back.
 */
export function storedRoute(route: RouteAssignment, ref: RouteRef, action_capability_id?: string): Item {
  checkAssignment(route);
  if (route.tenant_id !== ref.tenant_id || route.action_id !== ref.action_id)
    throw invalid(CODE, 'the route is pinned on its own action only', { field: 'route.action_id' });
  const { tenant_id: _tenant, action_id: _action, ...rest } = compact(Object.fromEntries(FIELDS.map((f) => [f, route[f]]))) as Item;
  if (rest.verified_tenant === ref.tenant_id) delete rest.verified_tenant;
  if (action_capability_id !== undefined && rest.capability_id === action_capability_id) delete rest.capability_id;
  return rest;
}

/** Printable, non-empty, bounded (revisions, endpoint, tokens: opaque but never control characters). */
function checkText(field: string, value: unknown, max: number): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > max || /[\x00-\x1f\x7f]/.test(value)) {
    throw invalid(CODE, `${field} must be a printable string of 1 to ${max} characters`, { field });
  }
}

function checkAssignment(a: RouteAssignment): void {
  if (a === null || typeof a !== 'object') throw invalid(CODE, 'assignment must be an object');
  for (const f of ['tenant_id', 'action_id', 'capability_id', 'verified_tenant', 'connector_id', 'connector_instance', 'replica'] as const)
    checkId(CODE, f, a[f]);
  checkText('endpoint', a.endpoint, 2048);
  if (a.peer_identity !== undefined) checkText('peer_identity', a.peer_identity, 1024);
  if (a.peer_did !== undefined) checkText('peer_did', a.peer_did, 1024);
  checkText('version', a.version, 64);
  if (!Sha256HexSchema.safeParse(a.manifest_hash).success) throw invalid(CODE, 'manifest_hash must be a sha256 hex digest', { field: 'manifest_hash' });
  for (const f of ['policy_revision', 'credential_revision', 'health_revision', 'admission_reservation'] as const) checkText(f, a[f], 256);
  checkNonNegativeInt(CODE, 'fence_token', a.fence_token);
  checkTime(CODE, 'created_at', a.created_at);
}

export class DynamoRouteStore implements RouteStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(options: DynamoRouteStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
  }

  async get(ref: RouteRef): Promise<RouteAssignment | undefined> {
    checkRef(ref);
    // One item under 4 KB: the whole action reads for the same 1 RRU as a projection of its route.
    const action = await consistentGet(this.client, this.table, keys.action(ref.tenant_id, ref.action_id));
    const pinned = action?.[ROUTE_ATTRIBUTE];
    if (pinned !== undefined)
      return routeOf(unpack(pinned, ROUTE_ATTRIBUTE) as Item, ref.tenant_id, ref.action_id, action?.capability_id as string | undefined);
    return this.getLegacy(ref);
  }

  async getLegacy(ref: RouteRef): Promise<RouteAssignment | undefined> {
    checkRef(ref);
    const item = await consistentGet(this.client, this.table, keys.routeAssignment(ref.tenant_id, ref.action_id));
    return item === undefined ? undefined : toAssignment(item);
  }
}

function checkRef(ref: RouteRef): void {
  if (ref === null || typeof ref !== 'object') throw invalid(CODE, 'input must be an object');
  checkId(CODE, 'tenant_id', ref.tenant_id);
  checkId(CODE, 'action_id', ref.action_id);
}
