/**
 * DynamoDB adapter of the RouteStore port (lib/ports/route-store.ts).
 *
 * Item: PK `ACTION#<tenant>#<action_id>`, SK `ROUTE`: in the action's own
 * partition, keyed by action ID only. Immutable: written once by a
 * conditional put, never updated. No index: there is no lookup by
 * transaction or plan ID.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { Sha256HexSchema } from '../../../packages/connector-sdk/src/protocol/index.js';
import { routeMismatches, type PutRouteResult, type RouteAssignment, type RouteRef, type RouteStore } from '../../ports/route-store.js';
import { checkId, checkNonNegativeInt, checkTime, compact, conditionalPut, consistentGet, invalid, type Item } from './store-support.js';
import { ITEM_TYPES, keys } from './table-design.js';

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

function toAssignment(item: Item): RouteAssignment {
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) if (item[f] !== undefined) out[f] = item[f];
  return out as unknown as RouteAssignment;
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

/** A put-if-absent of a route assignment, built but not sent. */
export interface PreparedRoutePut {
  readonly put: { TableName: string; Item: Item; ConditionExpression: string; ExpressionAttributeNames: Record<string, string> };
  /** The result when the put lands. */
  readonly created: PutRouteResult;
  /** The result when the put is refused: the stored assignment from the ALL_OLD image, reusable or not. */
  existing(old: Item | undefined): PutRouteResult;
}

/**
 * `DynamoRouteStore.putIfAbsent` built but not sent: the same checks, item and
 * condition (`attribute_not_exists(PK)`), for the composite attempt-start
 * write (lib/aws/dynamo/atomic-writes.ts), which classifies a refusal with
 * `existing(old)` exactly as putIfAbsent does. A module function, not a store
 * method: the store's surface stays `putIfAbsent` and `get` (no other lookup).
 */
export function prepareRoutePut(tableName: string, assignment: RouteAssignment): PreparedRoutePut {
  checkAssignment(assignment);
  const stored: RouteAssignment = compact(Object.fromEntries(FIELDS.map((f) => [f, assignment[f]])) as unknown as RouteAssignment);
  return {
    put: {
      TableName: tableName,
      Item: { ...keys.routeAssignment(assignment.tenant_id, assignment.action_id), item_type: ITEM_TYPES.routeAssignment, ...stored },
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': 'PK' },
    },
    created: { created: true, assignment: stored, reusable: true, mismatched: [] },
    existing: (old) => {
      if (old === undefined) throw new AipError('internal.unexpected', 'route assignment condition failed without an item');
      const existing = toAssignment(old);
      const mismatched = routeMismatches(existing, assignment);
      return { created: false, assignment: existing, reusable: mismatched.length === 0, mismatched };
    },
  };
}

export class DynamoRouteStore implements RouteStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(options: DynamoRouteStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
  }

  async putIfAbsent(assignment: RouteAssignment): Promise<PutRouteResult> {
    const prepared = prepareRoutePut(this.table, assignment);
    const out = await conditionalPut(this.client, prepared.put);
    if (out.ok) return prepared.created;
    return prepared.existing(out.old);
  }

  async get(ref: RouteRef): Promise<RouteAssignment | undefined> {
    if (ref === null || typeof ref !== 'object') throw invalid(CODE, 'input must be an object');
    checkId(CODE, 'tenant_id', ref.tenant_id);
    checkId(CODE, 'action_id', ref.action_id);
    const item = await consistentGet(this.client, this.table, keys.routeAssignment(ref.tenant_id, ref.action_id));
    return item === undefined ? undefined : toAssignment(item);
  }
}
