/**
 * The attempt start (docs/table-design.md, "The attempt start", "The route on
 * the action"): a first attempt leases the action alone, one conditional
 * UpdateItem that also pins its action-scoped route as an attribute of the
 * action; the transaction record is not written until the attempt checkpoints
 * (fenced on the action in the same atomic write) or settles. A route already
 * pinned on the action is judged by routeToPin's reuse rules (reusable:
 * reused, not written again; another capability: runtime.route_mismatch;
 * another instance, replica, endpoint or peer: deferred, nothing leased). A
 * ROUTE item an earlier version wrote is read for an action leased before
 * (migrate on read). Requests are recorded by SDK middleware on the test
 * client; races are real concurrent writers (two Runtimes on one table).
 */
import { DeleteCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { createSqsClient } from '../../../lib/aws/clients.js';
import { SqsMessageQueue } from '../../../lib/aws/sqs/queue.js';
import { keys } from '../../../lib/aws/dynamo/table-design.js';
import type { InvokeMessage } from '../../../lib/ports/messages.js';
import type { RouteAssignment } from '../../../lib/ports/route-store.js';
import { parseRuntimeSettingsInput } from '../../../lib/runtime/config.js';
import { staticConnectorHost } from '../../../lib/runtime/deps.js';
import { Runtime } from '../../../lib/runtime/runtime.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import type { AttemptOutcome } from '../../../lib/runtime/types.js';
import { RecordingScheduler, TENANT, caller, createHarness, lostTheRace, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
const LEASE = 10_000 + 30_000; // capability timeout + lease margin

/**
 * DynamoDB requests of the test client: command and, for a TransactWriteItems, `<verb>:<SK kind>` per item (`Get:<SK kind> <PK>`
 * for a GetItem, `Update:<SK kind>` for an UpdateItem).
 */
const requests: { command: string; items: string[]; ok: boolean }[] = [];

function kindOf(key: Record<string, unknown> | undefined): string {
  const sk = typeof key?.SK === 'string' ? key.SK : '?';
  return sk.startsWith('RCPT#') ? 'RCPT' : sk;
}

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-route-fold' });
  h.table.raw.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName).replace(/Command$/, '');
      const input = args.input as {
        TransactItems?: Record<string, { Item?: Record<string, unknown>; Key?: Record<string, unknown> }>[];
        Key?: Record<string, unknown>;
      };
      const items = (input.TransactItems ?? []).map((it) => {
        const [verb, body] = Object.entries(it)[0] ?? ['?', {}];
        return `${verb}:${kindOf(body.Item ?? body.Key)}`;
      });
      // A single-item read names its item too, and so does a single-item update.
      if (command === 'GetItem') items.push(`Get:${kindOf(input.Key)} ${String(input.Key?.PK)}`);
      if (command === 'UpdateItem') items.push(`Update:${kindOf(input.Key)}`);
      try {
        const out = await next(args);
        requests.push({ command, items, ok: true });
        return out;
      } catch (err) {
        requests.push({ command, items, ok: false });
        throw err;
      }
    },
    { step: 'initialize', name: 'routeFoldCounter' },
  );
});
afterAll(async () => {
  await h?.destroy();
});
beforeEach(() => {
  requests.length = 0;
});

async function submitExecute(harness: Harness, capability = 'pay.transfer'): Promise<{ a: string; tx: string }> {
  const a = uid('a');
  const tx = uid('tx');
  await harness.runtime.submit(caller(), {
    ...transfer(a, { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: uid('key') }),
    capability_id: capability,
  });
  requests.length = 0;
  return { a, tx };
}

/** The assignment a first attempt of `a` here would pin (resolveRoute's fields), with overrides. */
function pinned(a: string, overrides: Partial<RouteAssignment> = {}): RouteAssignment {
  const reg = h.registry.lookup('pay.transfer');
  return {
    tenant_id: TENANT,
    action_id: a,
    capability_id: 'pay.transfer',
    verified_tenant: TENANT,
    connector_id: reg.connector_id,
    connector_instance: 'local',
    replica: 'local-0',
    endpoint: 'in-process',
    version: reg.connector_version,
    manifest_hash: reg.manifest_hash,
    policy_revision: '1',
    credential_revision: '0',
    health_revision: '0',
    admission_reservation: 'att-earlier-delivery',
    fence_token: 1,
    created_at: new Date(h.clock.now()).toISOString(),
    ...overrides,
  };
}

const routeOf = (harness: Harness, a: string) => harness.stores.routes.get({ tenant_id: TENANT, action_id: a });
/** Pins `route` on the action as an earlier attempt or a preview would have (action.pin_route at its revision). */
const pinOn = async (harness: Harness, route: RouteAssignment) => {
  const record = await harness.stores.actions.get({ tenant_id: TENANT, action_id: route.action_id });
  if (record === undefined) throw new Error(`no action ${route.action_id}`);
  return harness.stores.actions.pinRoute({ tenant_id: TENANT, action_id: route.action_id, expected_revision: record.revision, route });
};
const legacyItem = (a: string) =>
  h.table.client.send(new GetCommand({ TableName: h.table.tableName, Key: keys.routeAssignment(TENANT, a), ConsistentRead: true })).then((o) => o.Item);
const recordOf = (harness: Harness, tx: string) => harness.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const actionOf = (harness: Harness, a: string) => harness.stores.actions.get({ tenant_id: TENANT, action_id: a });
/** The attempt ID that settled the record (its last attempt). */
const lastAttemptOf = async (harness: Harness, tx: string) =>
  ((await recordOf(harness, tx))?.data.last_attempt as { attempt_id?: string } | undefined)?.attempt_id;
/** Drains the queue and returns the outcome for `a` (a deferred message of an earlier test may come round too). */
const drainFor = async (harness: Harness, a: string): Promise<AttemptOutcome | undefined> => (await harness.drain()).find((o) => o.action_id === a);

describe('A first attempt: the action lease alone, pinning the route in the same write', () => {
  it("the worker writes the lease with the route, the fenced checkpoint, the action's settlement and the record's; the checkpoint and the record's are transactions", async () => {
    const { a, tx } = await submitExecute(h);
    const before = await recordOf(h, tx);
    expect(await drainFor(h, a)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    // (A cancellation watch may read the action while the connector runs: reads of single items are left out.) The
    // first delivery starts from the images its admission sent: no read of the action or the record (first-read.test.ts).
    const worker = requests.filter((r) => r.command !== 'GetItem');
    expect(worker.map((r) => r.command)).toEqual(['UpdateItem', 'TransactWriteItems', 'UpdateItem', 'UpdateItem']);
    // The checkpoint's receipt is inside the record (docs/table-design.md, "Receipts inside the record").
    expect(worker[1]?.items).toEqual(['Update:TXN', 'ConditionCheck:ACTION']);
    // The settlement: the action alone (fenced), then the record with its receipt inside, one UpdateItem
    // (docs/table-design.md, "The action settles first"). The reservation is not rewritten by a prompt settlement
    // (the key answers the action's result).
    expect(worker[3]?.items).toEqual(['Update:TXN']);
    expect(requests.every((r) => r.ok)).toBe(true);
    const action = await actionOf(h, a);
    expect(action?.route).toMatchObject({ action_id: a, capability_id: 'pay.transfer', replica: 'local-0', endpoint: 'in-process', fence_token: 1 });
    expect(action?.route?.admission_reservation).toBe(await lastAttemptOf(h, tx));
    expect(await routeOf(h, a)).toEqual(action?.route);
    expect(await legacyItem(a)).toBeUndefined();
    // The record moved twice (checkpoint, settlement): the start did not write it.
    expect((await recordOf(h, tx))?.revision).toBe((before?.revision ?? 0) + 2);
    expect(provider.count('invoke', tx)).toBe(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });
});

describe('A route already pinned on the action: the reuse rules, before any lease', () => {
  it('reusable (pinned for this replica): the lease follows and does not write the route again; it stays as pinned', async () => {
    const { a, tx } = await submitExecute(h);
    const earlier = pinned(a);
    await pinOn(h, earlier);
    requests.length = 0;
    expect(await drainFor(h, a)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    // The pin moved the action past the image its admission sent: that lease is refused (nothing written), and the
    // attempt reads the action with its route and leases it without writing the route again; the last is the action's
    // settlement, written alone before the record's (one UpdateItem too: its receipt inside the record).
    expect(requests.filter((r) => r.command === 'PutItem' || r.command === 'UpdateItem').map((r) => [r.command, r.ok])).toEqual([
      ['UpdateItem', false],
      ['UpdateItem', true],
      ['UpdateItem', true],
      ['UpdateItem', true],
    ]);
    expect(await routeOf(h, a)).toEqual(earlier);
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('pinned to another capability: runtime.route_mismatch before any provider call', async () => {
    const { a, tx } = await submitExecute(h);
    await pinOn(h, pinned(a, { capability_id: 'pay.slow' }));
    const before = await recordOf(h, tx);
    requests.length = 0;
    await h.drain();
    expect(requests.find((r) => r.command === 'PutItem')).toBeUndefined();
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result).toMatchObject({ status: 'failed', error: { code: 'runtime.route_mismatch' } });
    const rec = await recordOf(h, tx);
    // No attempt had started (the action's fence was 0): the record failed straight from prepared, in one write.
    expect(rec?.status).toBe('failed');
    expect(rec?.revision).toBe((before?.revision ?? 0) + 1);
    expect(provider.calls.filter((c) => c.action_id === a)).toEqual([]);
  });

  it('a redelivery after a started attempt (fence 1) reads the route from the action and leases again without writing it', async () => {
    const { a, tx } = await submitExecute(h, 'pay.idempotent');
    h.crash.arm('after_lease_before_provider_call');
    await h.drain();
    const route = await routeOf(h, a);
    expect(route?.fence_token).toBe(1);
    h.clock.advance(LEASE);
    requests.length = 0;
    expect(await drainFor(h, a)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    expect(requests.find((r) => r.command === 'PutItem')).toBeUndefined();
    expect(requests.find((r) => r.command === 'UpdateItem')).toMatchObject({ ok: true });
    expect(await routeOf(h, a)).toEqual(route);
    expect(await legacyItem(a)).toBeUndefined();
    expect(await actionOf(h, a)).toMatchObject({ status: 'completed', fence: 2 });
    expect(provider.count('invoke', tx)).toBe(1);
  });

  for (const [what, overrides] of [
    ['another replica', { replica: 'replica-b' }],
    ['another endpoint', { endpoint: 'https://connectors.example/testpay' }],
    ['a remote peer (another peer identity)', { peer_identity: 'kid-host-b', peer_did: 'did:web:host-b.example' }],
  ] as const) {
    it(`pinned to ${what}: deferred to the pinned route; nothing leased, nothing called`, async () => {
      const { a, tx } = await submitExecute(h);
      await pinOn(h, pinned(a, overrides));
      const before = { action: await actionOf(h, a), record: await recordOf(h, tx) };
      expect(await drainFor(h, a)).toMatchObject({ disposition: 'deferred', retry: true, reason: 'runtime.connector_unavailable' });
      expect(await actionOf(h, a)).toEqual(before.action);
      expect(await recordOf(h, tx)).toEqual(before.record);
      expect(await routeOf(h, a)).toMatchObject(overrides);
      expect(provider.calls.filter((c) => c.action_id === a)).toEqual([]);
    });
  }
});

describe('Migrate on read: a ROUTE item an earlier version pinned', () => {
  it('an action leased before the upgrade (fence 1, route in a ROUTE item): the redelivery reuses that route and moves it onto the action with its lease', async () => {
    const { a, tx } = await submitExecute(h, 'pay.idempotent');
    h.crash.arm('after_lease_before_provider_call');
    await h.drain();
    const route = await h.stores.routes.moveToLegacy({ tenant_id: TENANT, action_id: a });
    expect((await actionOf(h, a))?.route).toBeUndefined();
    h.clock.advance(LEASE);
    requests.length = 0;
    expect(await drainFor(h, a)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    // The legacy item is read (this action was leased before), never written; the lease carries it onto the action.
    expect(requests.flatMap((r) => r.items)).toContain(`Get:ROUTE ${keys.action(TENANT, a).PK}`);
    expect(requests.filter((r) => r.command === 'PutItem')).toEqual([]);
    expect((await actionOf(h, a))?.route).toEqual(route);
    expect(await h.stores.routes.getLegacy({ tenant_id: TENANT, action_id: a })).toEqual(route);
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('an action leased before the upgrade on another replica: deferred to the pinned route; nothing leased, nothing called', async () => {
    const { a, tx } = await submitExecute(h);
    h.crash.arm('after_lease_before_provider_call');
    await h.drain();
    const route = await h.stores.routes.moveToLegacy({ tenant_id: TENANT, action_id: a });
    await h.table.client.send(new DeleteCommand({ TableName: h.table.tableName, Key: keys.routeAssignment(TENANT, a) }));
    await h.stores.routes.putLegacy({ ...route, replica: 'replica-b' });
    h.clock.advance(LEASE);
    const before = { action: await actionOf(h, a), record: await recordOf(h, tx) };
    expect(await drainFor(h, a)).toMatchObject({ disposition: 'deferred', retry: true, reason: 'runtime.connector_unavailable' });
    expect(await actionOf(h, a)).toEqual(before.action);
    expect(await recordOf(h, tx)).toEqual(before.record);
    expect(provider.calls.filter((c) => c.action_id === a)).toEqual([]);
  });

  it('an action never leased (an earlier worker pinned, then stopped before its lease): no provider call ran under that route, so it is not read; the attempt pins its own', async () => {
    const { a, tx } = await submitExecute(h);
    await h.stores.routes.putLegacy(pinned(a, { replica: 'replica-b', fence_token: 1 }));
    requests.length = 0;
    expect(await drainFor(h, a)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    expect(requests.flatMap((r) => r.items)).not.toContain(`Get:ROUTE ${keys.action(TENANT, a).PK}`);
    const action = await actionOf(h, a);
    expect(action?.route).toMatchObject({ replica: 'local-0', fence_token: 1 });
    // Readers see the route the provider call ran under: the action's.
    expect(await routeOf(h, a)).toEqual(action?.route);
    expect(provider.count('invoke', tx)).toBe(1);
  });
});

describe('Concurrent first attempts', () => {
  it('deliveries of one message to two runtimes hosting different replicas race: exactly one route and one lease, one provider call, on the pinned route', async () => {
    // Runtime B: the same table, stores and registry, the same connector code hosted as another replica.
    const sqs = createSqsClient({ endpoint: inject('sqsEndpoint') });
    const b = new Runtime({
      ...h.table.stores,
      invokeQueue: new SqsMessageQueue({ client: sqs, queueUrl: h.invokeQueueUrl, accepts: ['invoke'] }),
      reconcileQueue: new SqsMessageQueue({ client: sqs, queueUrl: h.reconcileQueueUrl, accepts: ['reconcile'] }),
      scheduler: new RecordingScheduler(),
      registry: h.registry,
      connectors: staticConnectorHost([{ connector: testConnector(provider), replica: 'replica-b' }]),
      clock: { now: h.clock.now },
      config: parseRuntimeSettingsInput({ test_mode: true }, 'test'),
    });
    const RACERS = 10;
    for (let round = 0; round < 3; round++) {
      const { a, tx } = await submitExecute(h);
      const message = (await h.receiveInvokes()).find((m) => m.message.action_id === a)?.message as InvokeMessage;
      expect(message).toBeDefined();
      const runtimes = Array.from({ length: RACERS }, (_, i) =>
        i % 2 === 0 ? { runtime: h.runtime, replica: 'local-0' } : { runtime: b, replica: 'replica-b' },
      );
      const results = await Promise.allSettled(runtimes.map((r) => r.runtime.runAttempt(message)));
      const settled = results.flatMap((r, i) =>
        r.status === 'fulfilled' && r.value.disposition === 'settled' ? [{ outcome: r.value, replica: runtimes[i]?.replica }] : [],
      );
      expect(settled).toHaveLength(1);
      for (const r of results) {
        if (r.status === 'rejected') expect(String((r.reason as { code?: string }).code)).toBe('transaction.state_conflict');
        else if (r.value.disposition !== 'settled') expect(r.value).toSatisfy(lostTheRace(settled[0]?.outcome));
      }
      const route = await routeOf(h, a);
      const partition = await h.table.client.send(
        new QueryCommand({
          TableName: h.table.tableName,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': keys.action(TENANT, a).PK },
          ConsistentRead: true,
        }),
      );
      expect(partition.Items?.map((i) => i.SK).sort()).toEqual(['ACTION']);
      const action = await actionOf(h, a);
      const rec = await recordOf(h, tx);
      expect(action).toMatchObject({ status: 'completed', fence: 1, attempt: 1 });
      expect(rec).toMatchObject({ status: 'committed' });
      // The one attempt that leased and called the provider ran on the pinned route.
      expect(route?.replica).toBe(settled[0]?.replica);
      expect(provider.count('invoke', tx)).toBe(1);
      expect((await h.verifyChain(tx)).valid).toBe(true);
    }
    sqs.destroy();
  });
});
