/**
 * The stores' reads with their writes, for tests that exercise one store's
 * conditions: each write method commits ONE intent through the unit of work
 * (the same `commit` the runtime uses; no second write path), answering as
 * the store methods of old did: the record written, or the refusal's typed
 * error thrown; a held idempotency key answers its current record.
 */
import type { DynamoStores } from '../../lib/aws/dynamo/stores.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import type { Principal } from '../../packages/connector-sdk/src/protocol/index.js';
import { TransactionJournal } from '../../lib/runtime/journal.js';
import type { ReserveInput, ReserveOutcome } from '../../lib/ports/idempotency-store.js';
import type { RouteAssignment, RouteRef } from '../../lib/ports/route-store.js';
import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { packed } from '../../lib/aws/dynamo/packed-attributes.js';
import { keys } from '../../lib/aws/dynamo/table-design.js';
import { commitOne, type IntentTable, type UnitOfWork } from '../../lib/ports/unit-of-work.js';

type Writer<K extends keyof IntentTable> = (input: IntentTable[K]['input']) => Promise<NonNullable<IntentTable[K]['written']>>;

function writer<K extends keyof IntentTable>(uow: UnitOfWork, kind: K): Writer<K> {
  return (input) => commitOne(uow, { kind, input } as never) as Promise<NonNullable<IntentTable[K]['written']>>;
}

/** `store` with `writes` on it (reads stay the store's own). */
function withWrites<S extends object, W extends object>(store: S, writes: W): S & W {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (Object.hasOwn(writes, prop)) return (writes as Record<PropertyKey, unknown>)[prop];
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as S & W;
}

export function transactionWrites(uow: UnitOfWork) {
  return {
    create: writer(uow, 'transaction.create'),
    claimDirectCommit: writer(uow, 'transaction.claim_direct_commit'),
    claimPlan: writer(uow, 'transaction.claim_plan'),
    transition: writer(uow, 'transaction.transition'),
    checkpointProviderOperation: writer(uow, 'transaction.checkpoint'),
    settle: writer(uow, 'transaction.settle'),
    acquireLease: writer(uow, 'transaction.lease'),
  };
}

export function actionWrites(uow: UnitOfWork) {
  return {
    create: writer(uow, 'action.create'),
    transition: writer(uow, 'action.transition'),
    acquireLease: writer(uow, 'action.lease'),
    renewLease: writer(uow, 'action.renew_lease'),
    releaseLease: writer(uow, 'action.release_lease'),
    pinRoute: writer(uow, 'action.pin_route'),
    settle: writer(uow, 'action.settle'),
    redactTerminal: writer(uow, 'action.redact'),
    requestCancel: writer(uow, 'action.request_cancel'),
  };
}

export function idempotencyWrites(uow: UnitOfWork) {
  return {
    async reserve(input: ReserveInput): Promise<ReserveOutcome> {
      const out = await uow.commit([{ kind: 'idempotency.reserve', input }] as const);
      if (out.committed) return { outcome: 'reserved', reservation: out.written[0] };
      const refusal = out.refused[0];
      if (refusal?.kind === 'idempotency.reserve' && refusal.current !== undefined) return refusal.current;
      throw refusal?.error;
    },
    complete: writer(uow, 'idempotency.complete'),
    markUncertain: writer(uow, 'idempotency.mark_uncertain'),
    expireRejected: writer(uow, 'idempotency.expire_rejected'),
    adopt: writer(uow, 'idempotency.adopt'),
  };
}

/**
 * The runtime no longer writes a ROUTE item (the route is an attribute of the action, pinned by the attempt
 * start's lease): `putLegacy` plants one exactly as the version before wrote it (the fields but the key's two,
 * packed in `assignment`; put if absent), and `moveToLegacy` moves a pinned route there, for the tests of
 * migrate on read.
 */
export function legacyRouteWrites(routes: DynamoStores['routes']) {
  const { client, table } = routes as unknown as { client: DynamoDBDocumentClient; table: string };
  return {
    async putLegacy(input: RouteAssignment): Promise<void> {
      const { tenant_id: _t, action_id: _a, ...fields } = input;
      await client.send(
        new PutCommand({
          TableName: table,
          Item: { ...keys.routeAssignment(input.tenant_id, input.action_id), assignment: packed(fields) },
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      );
    },
    /** Moves the route pinned on the action into a ROUTE item, as the version before would have left it. */
    async moveToLegacy(ref: RouteRef): Promise<RouteAssignment> {
      const route = await routes.get(ref);
      if (route === undefined) throw new Error(`no route pinned on ${ref.action_id}`);
      await client.send(
        new UpdateCommand({
          TableName: table,
          Key: keys.action(ref.tenant_id, ref.action_id),
          UpdateExpression: 'REMOVE #r',
          ConditionExpression: 'attribute_exists(#r)',
          ExpressionAttributeNames: { '#r': 'route' },
        }),
      );
      await this.putLegacy(route);
      return route;
    },
  };
}

export function approvalWrites(uow: UnitOfWork, reads: DynamoStores['approvals']) {
  const decide = writer(uow, 'approval.decide');
  return {
    create: writer(uow, 'approval.create'),
    /** A decision is computed from the record it decides on: the one given, or a consistent read (as the runtime reads it first). */
    async decide(input: IntentTable['approval.decide']['input']) {
      const current = input.current ?? (await reads.get({ tenant_id: input.tenant_id, approval_id: input.approval_id }));
      if (current === undefined)
        throw new AipError('approval.not_found', `No approval ${input.approval_id}`, { details: { approval_id: input.approval_id, operation: 'decide' } });
      return decide({ ...input, current });
    },
    expire: writer(uow, 'approval.expire'),
    withdraw: writer(uow, 'approval.withdraw'),
  };
}

export function streamWrites(uow: UnitOfWork) {
  return { append: writer(uow, 'stream.append') };
}

/** Every store of `stores` with its writes. */
export function writableStores(stores: DynamoStores) {
  const { uow } = stores;
  return {
    transactions: withWrites(stores.transactions, transactionWrites(uow)),
    actions: withWrites(stores.actions, actionWrites(uow)),
    idempotency: withWrites(stores.idempotency, idempotencyWrites(uow)),
    approvals: withWrites(stores.approvals, approvalWrites(uow, stores.approvals)),
    routes: withWrites(stores.routes, legacyRouteWrites(stores.routes)),
    streams: withWrites(stores.streams, streamWrites(uow)),
  };
}

export type WritableStores = ReturnType<typeof writableStores>;

/**
 * A TransactionJournal whose intents are committed at once, one each (for tests that build records step by step).
 * `retentionDays`: the capabilities' retention, which gives a record created open its items' ttl (none by default).
 */
export function committingJournal(uow: UnitOfWork, clock: Clock, actor?: Principal, retentionDays?: (capability_id: string) => number | undefined) {
  const j = new TransactionJournal(clock, actor, retentionDays);
  return {
    create: (...a: Parameters<TransactionJournal['create']>) => commitOne(uow, j.create(...a)),
    claimDirectCommit: (...a: Parameters<TransactionJournal['claimDirectCommit']>) => commitOne(uow, j.claimDirectCommit(...a)),
    claimPlan: (...a: Parameters<TransactionJournal['claimPlan']>) => commitOne(uow, j.claimPlan(...a)),
    transition: (...a: Parameters<TransactionJournal['transition']>) => commitOne(uow, j.transition(...a)),
    settle: (...a: Parameters<TransactionJournal['settle']>) => commitOne(uow, j.settle(...a)),
    checkpoint: (...a: Parameters<TransactionJournal['checkpoint']>) => commitOne(uow, j.checkpoint(...a)),
  };
}
