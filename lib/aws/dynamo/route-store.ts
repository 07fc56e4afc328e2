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
import type { WriteIntent } from '../../ports/unit-of-work.js';
import { checkId, checkNonNegativeInt, checkTime, compact, consistentGet, invalid, type Item } from './store-support.js';
import { keys, withKeyAttributes } from './table-design.js';
import { packed, unpack } from './packed-attributes.js';
import type { IntentMapper, MappedWrite } from './unit-of-work.js';

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

/**
 * The attribute a route item stores its assignment in, packed whole (./packed-attributes.ts): the item is written
 * once and never updated, and no condition, projection or index names a field of it. An item written before holds
 * the fields as attributes of their own, and reads exactly as before.
 */
const ASSIGNMENT = 'assignment';

/** The assignment of a route item; `tenant_id` and `action_id` come from the key (stored only by items written before the lean item model). */
function toAssignment(stored: Item): RouteAssignment {
  const { [ASSIGNMENT]: packedFields, ...rest } = stored;
  const fields = packedFields === undefined ? {} : (unpack(packedFields, ASSIGNMENT) as Item);
  const item = withKeyAttributes({ ...rest, ...fields });
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) if (item[f] !== undefined) out[f] = item[f];
  return out as unknown as RouteAssignment;
}

/** The stored attributes of an assignment: every field but the two its key holds. */
function withoutKeyFields(a: RouteAssignment): Item {
  const { tenant_id: _tenant, action_id: _action, ...rest } = a;
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

export class DynamoRouteStore implements RouteStore, IntentMapper {
  private readonly client: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(options: DynamoRouteStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
  }

  /**
   * Maps `route.pin`: the assignment is written unless one exists for the action (never overwritten). A refusal
   * carries the stored assignment, reusable or not (`route.already_assigned`); a lone pin of a reusable one
   * answers it as written.
   */
  map(intent: WriteIntent): MappedWrite<PutRouteResult, PutRouteResult> {
    if (intent.kind !== 'route.pin') throw new AipError('internal.unexpected', `the route store does not write ${intent.kind}`);
    const assignment = intent.input;
    checkAssignment(assignment);
    const stored: RouteAssignment = compact(Object.fromEntries(FIELDS.map((f) => [f, assignment[f]])) as unknown as RouteAssignment);
    const raced = () =>
      new AipError('route.already_assigned', 'a concurrent write to the route assignment won the race', {
        details: { action_id: assignment.action_id, reason: 'transaction_conflict' },
      });
    return {
      items: [
        {
          Put: {
            TableName: this.table,
            // Not stored again: tenant_id, action_id and the item kind are in the key.
            Item: { ...keys.routeAssignment(assignment.tenant_id, assignment.action_id), [ASSIGNMENT]: packed(withoutKeyFields(stored)) },
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#pk': 'PK' },
          },
        },
      ],
      refuse: (_at, old) => {
        if (old === undefined) return { error: raced() };
        const existing = toAssignment(old);
        const mismatched = routeMismatches(existing, assignment);
        const current: PutRouteResult = { created: false, assignment: existing, reusable: mismatched.length === 0, mismatched };
        const error = new AipError('route.already_assigned', 'The action already has a route assignment', {
          details: { action_id: assignment.action_id, reusable: current.reusable, mismatched },
        });
        return { error, current, ...(current.reusable ? { already: current } : {}) };
      },
      race: raced,
      written: () => ({ created: true, assignment: stored, reusable: true, mismatched: [] }),
    };
  }

  async get(ref: RouteRef): Promise<RouteAssignment | undefined> {
    if (ref === null || typeof ref !== 'object') throw invalid(CODE, 'input must be an object');
    checkId(CODE, 'tenant_id', ref.tenant_id);
    checkId(CODE, 'action_id', ref.action_id);
    const item = await consistentGet(this.client, this.table, keys.routeAssignment(ref.tenant_id, ref.action_id));
    return item === undefined ? undefined : toAssignment(item);
  }
}
