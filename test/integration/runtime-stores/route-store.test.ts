/**
 * The action-scoped route against DynamoDB Local: an immutable assignment pinned on the action item by the
 * attempt start's lease (`action.lease` with `route`) or a preview's `action.pin_route`, read by RouteStore.get;
 * a ROUTE item an earlier version wrote is read where the action holds none (migrate on read).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import { routeMismatches, type RouteAssignment } from '../../../lib/ports/route-store.js';
import { sha256Hex } from '../../../packages/connector-sdk/src/protocol/index.js';
import { PRINCIPAL, RACERS, TENANT, OTHER_TENANT, action, aipError, createStores, split, uid, type Stores } from './support.js';

let s: Stores;
beforeAll(async () => {
  s = await createStores('routes');
});
afterAll(async () => {
  await s?.table.destroy();
});

async function admitted(action_id: string, tenant_id = TENANT) {
  return s.actions.create({ tenant_id, principal: PRINCIPAL, action: action({ id: action_id }) });
}

const lease = (a: RouteAssignment, revision: number, owner = 'att-1') =>
  s.actions.acquireLease({ tenant_id: a.tenant_id, action_id: a.action_id, owner, ttl_ms: 60_000, expected_revision: revision, route: a });

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

describe('the route on the action', () => {
  it('is pinned by the lease and read back by action ID, from the action item (no ROUTE item)', async () => {
    const a = assignment({ peer_identity: 'spiffe://payments', peer_did: 'did:web:payments.example' });
    const created = await admitted(a.action_id);
    const leased = await lease(a, created.revision);
    expect(leased.route).toEqual(a);
    expect(await s.routes.get(a)).toEqual(a);
    expect((await s.actions.get(a))?.route).toEqual(a);
    expect(await s.rawItem(keys.routeAssignment(TENANT, a.action_id))).toBeUndefined();
    // Stored packed, without the two fields the key holds.
    const raw = await s.rawItem(keys.action(TENANT, a.action_id));
    expect(raw?.route).toBeInstanceOf(Uint8Array);
  });

  it('is pinned by a preview without a lease (action.pin_route, revision + 1), once', async () => {
    const a = assignment();
    const created = await admitted(a.action_id);
    const pinned = await s.actions.pinRoute({ tenant_id: TENANT, action_id: a.action_id, expected_revision: created.revision, route: a });
    expect(pinned).toMatchObject({ revision: created.revision + 1, status: 'accepted', route: a, fence: 0 });
    const again = await aipError(
      s.actions.pinRoute({ tenant_id: TENANT, action_id: a.action_id, expected_revision: created.revision, route: { ...a, replica: 'replica-b' } }),
    );
    expect(again.code).toBe('action.state_conflict');
    expect(await s.routes.get(a)).toEqual(a);
  });

  it('routeMismatches names a capability or a tenant mismatch', () => {
    const a = assignment();
    expect(routeMismatches(a, { ...a, capability_id: 'payments.refund' })).toEqual(['capability_id']);
    expect(routeMismatches(a, { ...a, verified_tenant: 'someone-else' })).toEqual(['tenant_id']);
    expect(routeMismatches(a, a)).toEqual([]);
  });

  it(`${RACERS} concurrent first leases of one action pinning different replicas: exactly one lands, with its route`, async () => {
    const actionId = uid('act');
    const created = await admitted(actionId);
    const results = await Promise.allSettled(
      Array.from({ length: RACERS }, (_, i) =>
        lease(assignment({ action_id: actionId, replica: `replica-${i}`, admission_reservation: `att-${i}` }), created.revision, `att-${i}`),
      ),
    );
    const { won, lost } = split(results);
    expect(won).toHaveLength(1);
    for (const e of lost) expect(['action.state_conflict', 'action.lease_held']).toContain((e as { code?: string }).code);
    const owner = won[0]?.lease_owner as string;
    expect(await s.routes.get({ tenant_id: TENANT, action_id: actionId })).toMatchObject({
      replica: `replica-${owner.slice('att-'.length)}`,
      admission_reservation: owner,
    });
  });

  it('is keyed by tenant and action only: the same action ID in another tenant is independent', async () => {
    const a = assignment();
    await lease(a, (await admitted(a.action_id)).revision);
    const other = { ...a, tenant_id: OTHER_TENANT, verified_tenant: OTHER_TENANT };
    await lease(other, (await admitted(a.action_id, OTHER_TENANT)).revision);
    expect(await s.routes.get(a)).toEqual(a);
    expect(await s.routes.get(other)).toEqual(other);
  });

  it('there is no lookup by transaction or plan ID: the route lives only in the action item', async () => {
    const a = assignment();
    await lease(a, (await admitted(a.action_id)).revision);
    expect(Object.getOwnPropertyNames(Object.getPrototypeOf(s.routes)).sort()).toEqual(['constructor', 'get', 'getLegacy']);
    const partition = await s.table.client.send(
      new QueryCommand({
        TableName: s.table.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.action(TENANT, a.action_id).PK },
        ConsistentRead: true,
      }),
    );
    expect(partition.Items?.map((i) => i.SK)).toEqual(['ACTION']);
  });

  it('rejects a malformed assignment, or one of another action, with route.invalid_assignment and writes nothing', async () => {
    for (const bad of [{ manifest_hash: 'nope' }, { endpoint: 'bad\nendpoint' }, { fence_token: -1 }] as const) {
      const a = assignment(bad);
      const created = await admitted(a.action_id);
      expect((await aipError(lease(a, created.revision))).code).toBe('route.invalid_assignment');
      expect(await s.actions.get(a)).toEqual(created);
    }
    const a = assignment();
    const created = await admitted(a.action_id);
    expect((await aipError(lease({ ...a, action_id: uid('act') }, created.revision).then(() => undefined))).code).toBe('action.not_found');
    expect(
      (
        await aipError(
          s.actions.acquireLease({
            tenant_id: TENANT,
            action_id: a.action_id,
            owner: 'att-1',
            ttl_ms: 1_000,
            expected_revision: 1,
            route: { ...a, action_id: 'act-other' },
          }),
        )
      ).code,
    ).toBe('route.invalid_assignment');
  });

  it('get of an unknown action is undefined', async () => {
    expect(await s.routes.get({ tenant_id: TENANT, action_id: 'unknown' })).toBeUndefined();
  });
});

describe('a ROUTE item an earlier version wrote (migrate on read)', () => {
  it("is read by get where the action holds no route, and by legacy; the action's route wins where both exist", async () => {
    const a = assignment();
    await admitted(a.action_id);
    await s.routes.putLegacy(a);
    expect(await s.routes.get(a)).toEqual(a);
    expect(await s.routes.getLegacy(a)).toEqual(a);
    const b = assignment();
    const created = await admitted(b.action_id);
    await s.routes.putLegacy({ ...b, replica: 'replica-old' });
    await lease(b, created.revision);
    expect(await s.routes.get(b)).toEqual(b);
    expect((await s.routes.getLegacy(b))?.replica).toBe('replica-old');
  });
});
