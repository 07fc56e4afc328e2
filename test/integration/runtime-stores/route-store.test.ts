/**
 * RouteStore against DynamoDB Local: an immutable, action-scoped assignment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import { routeMismatches, type RouteAssignment } from '../../../lib/ports/route-store.js';
import { sha256Hex } from '../../../packages/connector-sdk/src/protocol/index.js';
import { RACERS, TENANT, OTHER_TENANT, aipError, createStores, uid, type Stores } from './support.js';

let s: Stores;
beforeAll(async () => {
  s = await createStores('routes');
});
afterAll(async () => {
  await s?.table.destroy();
});

function assignment(overrides: Partial<RouteAssignment> = {}): RouteAssignment {
  return {
    tenant_id: TENANT,
    action_id: uid('act'),
    capability_id: 'payments.transfer',
    verified_tenant: TENANT,
    connector_id: 'payments',
    connector_instance: 'payments-eu-1',
    replica: 'replica-a',
    endpoint: 'lambda:payments-connector',
    version: '1.4.2',
    manifest_hash: sha256Hex('manifest'),
    policy_revision: 'pol-7',
    credential_revision: 'cred-3',
    health_revision: 'h-99',
    admission_reservation: 'adm-1',
    fence_token: 1,
    created_at: s.clock.iso(),
    ...overrides,
  };
}

describe('putIfAbsent', () => {
  it('writes a new assignment and reads it back by action ID', async () => {
    const a = assignment({ peer_identity: 'spiffe://payments', peer_did: 'did:web:payments.example' });
    const out = await s.routes.putIfAbsent(a);
    expect(out).toEqual({ created: true, assignment: a, reusable: true, mismatched: [] });
    expect(await s.routes.get(a)).toEqual(a);
  });

  it('is immutable: a second put returns the existing assignment and overwrites nothing (retries stay on the pinned route)', async () => {
    const a = assignment();
    await s.routes.putIfAbsent(a);
    const out = await s.routes.putIfAbsent({ ...a, replica: 'replica-b', fence_token: 2 });
    expect(out).toEqual({ created: false, assignment: a, reusable: true, mismatched: [] });
    expect((await s.routes.get(a))?.replica).toBe('replica-a');
  });

  it('is reused only when the capability still matches', async () => {
    const a = assignment();
    await s.routes.putIfAbsent(a);
    const out = await s.routes.putIfAbsent({ ...a, capability_id: 'payments.refund' });
    expect(out.created).toBe(false);
    expect(out.reusable).toBe(false);
    expect(out.mismatched).toEqual(['capability_id']);
  });

  it('routeMismatches also names a tenant mismatch', () => {
    const a = assignment();
    expect(routeMismatches(a, { ...a, verified_tenant: 'someone-else' })).toEqual(['tenant_id']);
    expect(routeMismatches(a, a)).toEqual([]);
  });

  it(`${RACERS} concurrent resolvers of one action pinning different replicas: exactly one assignment is created and all see it`, async () => {
    const actionId = uid('act');
    const outs = await Promise.all(
      Array.from({ length: RACERS }, (_, i) => s.routes.putIfAbsent(assignment({ action_id: actionId, replica: `replica-${i}` }))),
    );
    const created = outs.filter((o) => o.created);
    expect(created).toHaveLength(1);
    const pinned = created[0]?.assignment.replica;
    for (const o of outs) expect(o.assignment.replica).toBe(pinned);
  });

  it('is keyed by tenant and action only: the same action ID in another tenant is independent', async () => {
    const a = assignment();
    await s.routes.putIfAbsent(a);
    expect((await s.routes.putIfAbsent({ ...a, tenant_id: OTHER_TENANT, verified_tenant: OTHER_TENANT })).created).toBe(true);
  });

  it('there is no lookup by transaction or plan ID: the item lives only under the action key', async () => {
    const a = assignment();
    await s.routes.putIfAbsent(a);
    const raw = await s.rawItem(keys.routeAssignment(TENANT, a.action_id));
    expect(Object.keys(raw ?? {}).filter((k) => k.startsWith('GSI'))).toEqual([]);
    expect(Object.getOwnPropertyNames(Object.getPrototypeOf(s.routes)).sort()).toEqual(['constructor', 'get', 'map']);
    const partition = await s.table.client.send(
      new QueryCommand({
        TableName: s.table.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.action(TENANT, a.action_id).PK },
        ConsistentRead: true,
      }),
    );
    expect(partition.Items?.map((i) => i.SK)).toEqual(['ROUTE']);
  });

  it('rejects a malformed assignment with route.invalid_assignment and writes nothing', async () => {
    const a = assignment({ manifest_hash: 'nope' });
    expect((await aipError(s.routes.putIfAbsent(a))).code).toBe('route.invalid_assignment');
    expect(await s.routes.get(a)).toBeUndefined();
    expect((await aipError(s.routes.putIfAbsent(assignment({ endpoint: 'bad\nendpoint' })))).code).toBe('route.invalid_assignment');
    expect((await aipError(s.routes.putIfAbsent(assignment({ fence_token: -1 })))).code).toBe('route.invalid_assignment');
  });

  it('get of an unknown action is undefined', async () => {
    expect(await s.routes.get({ tenant_id: TENANT, action_id: 'unknown' })).toBeUndefined();
  });
});
