/**
 * The DynamoDB transaction store against DynamoDB Local: every operation and
 * its typed errors. One isolated table per file (plus one for the listings).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createTable } from '../../lib/aws/dynamo/create-table.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { ErrorCode } from '../../packages/connector-sdk/src/errors/catalogue.js';
import { GENESIS_RECEIPT_HASH, receiptHash } from '../../packages/connector-sdk/src/protocol/index.js';
import { GSIS, keys, TTL_ATTRIBUTE } from '../../lib/aws/dynamo/table-design.js';
import type { TransactionRecord } from '../../lib/transactions/record.js';
import { createTestTable, type TestTable } from '../support/dynamo.js';
import { TENANT, manualClock, nextReceipt, planFor, plannedInput, preparedInput, uid } from '../support/transaction-fixtures.js';

const clock = manualClock();
let t: TestTable;

beforeAll(async () => {
  t = await createTestTable({ now: clock.now, prefix: 'txstore' });
});
afterAll(async () => {
  await t?.destroy();
});

/** Awaits a rejection and returns the AipError, asserting its code. */
async function rejected(p: Promise<unknown>, code: ErrorCode): Promise<AipError> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected ${code}`).toBeInstanceOf(AipError);
  expect((caught as AipError).code).toBe(code);
  return caught as AipError;
}

async function rawItem(pk: string, sk: string) {
  const out = await t.client.send(new GetCommand({ TableName: t.tableName, Key: { PK: pk, SK: sk }, ConsistentRead: true }));
  return out.Item;
}

/** The action item of `action_id` naming its transaction (the action store writes it at admission; here, the one attribute a lookup by action ID reads). */
async function actionNaming(action_id: string, transaction_id: string) {
  await t.client.send(new PutCommand({ TableName: t.tableName, Item: { ...keys.action(TENANT, action_id), transaction_id } }));
}

async function createPrepared(overrides = {}) {
  return t.store.create(preparedInput(uid('txn'), overrides));
}

async function toOutcomeUnknown(): Promise<TransactionRecord> {
  const r = await t.store.claimDirectCommit({ ...preparedInput(uid('txn')), mode: 'commit' });
  return t.store.settle({ tenant_id: TENANT, transaction_id: r.transaction_id, expected_revision: r.revision, to: 'outcome_unknown' });
}

describe('createTable', () => {
  it('creates the table from the design: keys, KEYS_ONLY indexes, TTL enabled; ifNotExists is idempotent', async () => {
    const { Table } = await t.raw.send(new DescribeTableCommand({ TableName: t.tableName }));
    expect(Table?.TableStatus).toBe('ACTIVE');
    expect(Table?.KeySchema).toEqual([
      { AttributeName: 'PK', KeyType: 'HASH' },
      { AttributeName: 'SK', KeyType: 'RANGE' },
    ]);
    const indexes = (Table?.GlobalSecondaryIndexes ?? []).map((g) => [g.IndexName, g.KeySchema?.map((k) => k.AttributeName), g.Projection?.ProjectionType]);
    expect(indexes.sort()).toEqual(
      Object.values(GSIS)
        .map((g) => [g.name, [g.partitionKey, g.sortKey], 'KEYS_ONLY'])
        .sort(),
    );
    const ttl = await t.raw.send(new DescribeTimeToLiveCommand({ TableName: t.tableName }));
    expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: TTL_ATTRIBUTE });
    await expect(createTable(t.raw, t.tableName, { ifNotExists: true })).resolves.toBeUndefined();
    await expect(createTable(t.raw, t.tableName)).rejects.toMatchObject({ name: 'ResourceInUseException' });
  });
});

describe('create', () => {
  it('creates a planned record at revision 1, findable by transaction, plan and action ID', async () => {
    const input = plannedInput();
    const r = await t.store.create(input);
    expect(r).toMatchObject({
      tenant_id: TENANT,
      transaction_id: input.transaction_id,
      status: 'planned',
      revision: 1,
      mode: 'plan',
      plan_id: input.plan_id,
      reconcile_attempts: 0,
      fence: 0,
      receipt_count: 0,
      created_at: clock.iso(),
      updated_at: clock.iso(),
      data: {},
    });
    expect(r.plan).toEqual(input.plan);
    expect(await t.store.get({ tenant_id: TENANT, transaction_id: input.transaction_id })).toEqual(r);
    expect(await t.store.get({ tenant_id: TENANT, plan_id: input.plan_id })).toEqual(r);
    await actionNaming(input.action_id, input.transaction_id);
    expect(await t.store.get({ tenant_id: TENANT, action_id: input.action_id })).toEqual(r);
    // Tenant scoping: another tenant sees nothing.
    expect(await t.store.get({ tenant_id: 'tenant-b', transaction_id: input.transaction_id })).toBeUndefined();
    expect(await t.store.get({ tenant_id: 'tenant-b', plan_id: input.plan_id })).toBeUndefined();
  });

  it('rejects a second create of the same transaction ID, naming the current status and revision', async () => {
    const r = await createPrepared();
    const err = await rejected(t.store.create(preparedInput(r.transaction_id, { action_id: 'other-action' })), 'transaction.already_exists');
    expect(err.details).toMatchObject({ transaction_id: r.transaction_id, current_status: 'prepared', current_revision: 1 });
    expect(err.httpStatus).toBe(409);
    expect((await t.store.get({ tenant_id: TENANT, transaction_id: r.transaction_id }))?.action_id).toBe(r.action_id);
  });

  it('finds a plan by its ID in either form, and never takes the record its default form names for another plan', async () => {
    // Another transaction holds the plan ID `plan:<txA>` (a caller named it), while txA itself is an execute.
    const txA = uid('txn');
    const txB = uid('txn');
    const execute = await t.store.create(preparedInput(txA));
    const planned = await t.store.create(plannedInput(txB, { plan_id: `plan:${txA}`, plan: planFor(txB, `plan:${txA}`) }));
    expect(await t.store.get({ tenant_id: TENANT, plan_id: `plan:${txA}` })).toEqual(planned);
    expect(execute.plan_id).toBeUndefined();
    // A plan ID of the caller's own form, read through its guard.
    const txC = uid('txn');
    const own = await t.store.create(plannedInput(txC, { plan_id: `own-${txC}`, plan: planFor(txC, `own-${txC}`) }));
    expect(await t.store.get({ tenant_id: TENANT, plan_id: `own-${txC}` })).toEqual(own);
    // The default form of an ID with no record, and of one whose record holds no plan: nothing.
    expect(await t.store.get({ tenant_id: TENANT, plan_id: `plan:${uid('none')}` })).toBeUndefined();
    const txD = uid('txn');
    await t.store.create(preparedInput(txD));
    expect(await t.store.get({ tenant_id: TENANT, plan_id: `plan:${txD}` })).toBeUndefined();
  });

  it('rejects a duplicate planned create through the transactional path, and a plan ID already used', async () => {
    const input = plannedInput();
    await t.store.create(input);
    const dup = await rejected(t.store.create(input), 'transaction.already_exists');
    expect(dup.details).toMatchObject({ current_status: 'planned', current_revision: 1 });

    const other = uid('txn');
    const reuse = plannedInput(other, { plan_id: input.plan_id, plan: { ...input.plan!, transaction_id: other } });
    const err = await rejected(t.store.create(reuse), 'transaction.already_exists');
    expect(err.details).toMatchObject({ reason: 'plan_id_in_use', plan_id: input.plan_id, existing_transaction_id: input.transaction_id });
    expect(await t.store.get({ tenant_id: TENANT, transaction_id: other })).toBeUndefined();
  });

  it('rejects bad input with typed 4xx errors and writes nothing', async () => {
    const id = uid('txn');
    const cases: [Parameters<typeof t.store.create>[0], ErrorCode][] = [
      [{ ...preparedInput(id), status: 'committing' as never }, 'transaction.invalid_transition'],
      [{ ...preparedInput(id), status: 'outcome_unknown' as never }, 'transaction.invalid_transition'],
      [{ ...preparedInput(id), transaction_id: 'has#hash' }, 'transaction.invalid_record'],
      [{ ...preparedInput(id), tenant_id: '' }, 'transaction.invalid_record'],
      [{ ...preparedInput(id), mode: 'nope' as never }, 'transaction.invalid_record'],
      [{ ...preparedInput(id), principal: { id: 'x' } as never }, 'transaction.invalid_record'],
      [{ ...plannedInput(id), plan: undefined, plan_id: undefined }, 'transaction.invalid_record'],
      [{ ...plannedInput(id), plan_id: 'plan:other' }, 'transaction.invalid_record'],
      [{ ...plannedInput(id), lease: { owner: 'w1', ttl_ms: 1000 } }, 'transaction.invalid_record'],
      [{ ...preparedInput(id), lease: { owner: 'w1', ttl_ms: 0 } }, 'transaction.invalid_record'],
      [{ ...preparedInput(id), data: { when: new Date() } as never }, 'transaction.invalid_record'],
      [{ ...preparedInput(id), data: { big: 'x'.repeat(500 * 1024) } }, 'transaction.record_too_large'],
      [
        {
          ...preparedInput(id),
          receipt: { receipt: { ...nextReceipt({ transaction_id: id }, 1, 'prepared', 'transaction.prepared').receipt, hash: '0'.repeat(64) } },
        },
        'transaction.invalid_receipt',
      ],
      [{ ...preparedInput(id), receipt: nextReceipt({ transaction_id: id }, 2, 'prepared', 'transaction.prepared') }, 'transaction.invalid_receipt'],
    ];
    for (const [input, code] of cases) {
      const err = await rejected(t.store.create(input), code);
      expect(err.httpStatus).toBeGreaterThanOrEqual(400);
      expect(err.httpStatus).toBeLessThan(500);
    }
    expect(await t.store.get({ tenant_id: TENANT, transaction_id: id })).toBeUndefined();
  });

  it('creates each initial status; dry runs get a TTL and only non-terminal records enter the status index', async () => {
    const dry = await t.store.create({ ...preparedInput(uid('txn')), status: 'dry_run_completed', mode: 'dry_run' });
    const dryItem = await rawItem(keys.transaction(TENANT, dry.transaction_id).PK, 'TXN');
    expect(dryItem?.[TTL_ATTRIBUTE]).toBe(Math.floor(clock.now().getTime() / 1000) + 7 * 24 * 3600);
    expect(dryItem?.GSI3PK).toBeUndefined();

    const failed = await t.store.create({ ...preparedInput(uid('txn')), status: 'failed', mode: 'plan' });
    const failedItem = await rawItem(keys.transaction(TENANT, failed.transaction_id).PK, 'TXN');
    expect(failedItem?.GSI3PK).toBeUndefined();
    expect(failedItem?.[TTL_ATTRIBUTE]).toBeUndefined();

    for (const status of ['rollback_not_supported', 'compensating'] as const) {
      const r = await t.store.create({
        ...preparedInput(uid('txn')),
        status,
        mode: status === 'compensating' ? 'compensate' : 'rollback_not_supported',
        compensation_for: 'act-1',
      });
      expect(r.status).toBe(status);
    }
    const prepared = await createPrepared();
    const preparedItem = await rawItem(keys.transaction(TENANT, prepared.transaction_id).PK, 'TXN');
    expect(preparedItem?.GSI3PK).toBe(keys.statusIndex('prepared', false, keys.statusIndexShard(TENANT, prepared.transaction_id)));
    expect(preparedItem?.GSI3PK).toMatch(/^STATUS#prepared#\d\d$/);
    expect(preparedItem?.GSI3SK).toBe(`${clock.iso()}#${TENANT}#${prepared.transaction_id}`);
  });
});

describe('claim_direct_commit', () => {
  it('creates straight in committing with a fenced lease; an existing ID is a conflict', async () => {
    const input = { ...preparedInput(uid('txn')), mode: 'commit' as const, lease: { owner: 'worker-1', ttl_ms: 30_000 } };
    const r = await t.store.claimDirectCommit(input);
    expect(r).toMatchObject({ status: 'committing', revision: 1, lease_owner: 'worker-1', fence: 1 });
    expect(r.lease_expires_at).toBe(new Date(clock.now().getTime() + 30_000).toISOString());
    const err = await rejected(t.store.claimDirectCommit(input), 'transaction.already_exists');
    expect(err.details).toMatchObject({ current_status: 'committing', current_revision: 1, operation: 'claim_direct_commit' });
    // An existing record in any other status also conflicts.
    const planned = await t.store.create(plannedInput());
    await rejected(t.store.claimDirectCommit({ ...input, transaction_id: planned.transaction_id }), 'transaction.already_exists');
  });
});

describe('lookup by action ID', () => {
  it('reads the action item for its transaction; a record written before the byAction index was retired is found through the index', async () => {
    const fresh = await createPrepared();
    // No index entry is written any more: without an action item naming it, the record is not found by action ID.
    expect(await rawItem(keys.transaction(TENANT, fresh.transaction_id).PK, 'TXN')).not.toHaveProperty('GSI2PK');
    expect(await t.store.get({ tenant_id: TENANT, action_id: fresh.action_id })).toBeUndefined();
    await actionNaming(fresh.action_id, fresh.transaction_id);
    expect(await t.store.get({ tenant_id: TENANT, action_id: fresh.action_id })).toEqual(fresh);
    // A legacy record: its item carries the byAction keys an older runtime wrote, and no action item names it.
    const legacy = await createPrepared();
    await t.client.send(
      new PutCommand({
        TableName: t.tableName,
        Item: {
          ...(await rawItem(keys.transaction(TENANT, legacy.transaction_id).PK, 'TXN')),
          GSI2PK: keys.actionIndex(TENANT, legacy.action_id),
          GSI2SK: keys.actionIndexSort(legacy.created_at, legacy.transaction_id),
        },
      }),
    );
    expect(await t.store.get({ tenant_id: TENANT, action_id: legacy.action_id })).toEqual(legacy);
  });
});

describe('claim_plan', () => {
  it('moves planned → committing, binds the commit action and raises the revision', async () => {
    const p = await t.store.create(plannedInput());
    clock.advance(1000);
    const r = await t.store.claimPlan({
      tenant_id: TENANT,
      transaction_id: p.transaction_id,
      plan_id: p.plan_id!,
      expected_revision: 1,
      commit_action_id: 'commit-1',
      lease: { owner: 'worker-1', ttl_ms: 60_000 },
    });
    expect(r).toMatchObject({ status: 'committing', revision: 2, action_id: 'commit-1', lease_owner: 'worker-1', fence: 1, updated_at: clock.iso() });
    expect(r.created_at).toBe(p.created_at);
    await actionNaming('commit-1', p.transaction_id);
    await actionNaming(p.action_id, p.transaction_id);
    expect(await t.store.get({ tenant_id: TENANT, action_id: 'commit-1' })).toEqual(r);
    expect(await t.store.get({ tenant_id: TENANT, action_id: p.action_id })).toBeUndefined();
    expect(await t.store.get({ tenant_id: TENANT, plan_id: p.plan_id! })).toEqual(r);
  });

  it('loses with a typed error naming the current status and revision', async () => {
    const p = await t.store.create(plannedInput());
    const claim = (expected_revision: number, commit_action_id: string) =>
      t.store.claimPlan({ tenant_id: TENANT, transaction_id: p.transaction_id, plan_id: p.plan_id!, expected_revision, commit_action_id });
    const stale = await rejected(claim(7, 'c-x'), 'transaction.state_conflict');
    expect(stale.details).toMatchObject({ current_status: 'planned', current_revision: 1, expected_revision: 7, allowed_statuses: ['planned'] });
    await claim(1, 'c-1');
    const second = await rejected(claim(1, 'c-2'), 'transaction.state_conflict');
    expect(second.details).toMatchObject({ transaction_id: p.transaction_id, current_status: 'committing', current_revision: 2 });
    const third = await rejected(claim(2, 'c-3'), 'transaction.state_conflict');
    expect(third.details).toMatchObject({ current_status: 'committing', current_revision: 2 });
    expect((await t.store.get({ tenant_id: TENANT, transaction_id: p.transaction_id }))?.action_id).toBe('c-1');
  });

  it('rejects a plan ID that is not the record plan, and a missing transaction', async () => {
    const p = await t.store.create(plannedInput());
    const err = await rejected(
      t.store.claimPlan({ tenant_id: TENANT, transaction_id: p.transaction_id, plan_id: 'plan:other', expected_revision: 1, commit_action_id: 'c' }),
      'transaction.state_conflict',
    );
    expect(err.details).toMatchObject({ reason: 'plan_mismatch', current_status: 'planned' });
    await rejected(
      t.store.claimPlan({ tenant_id: TENANT, transaction_id: uid('missing'), plan_id: 'plan:x', expected_revision: 1, commit_action_id: 'c' }),
      'transaction.not_found',
    );
  });
});

describe('transition', () => {
  it('expires a plan (planned → failed) and drops it from the status index', async () => {
    const p = await t.store.create(plannedInput());
    const r = await t.store.transition({
      tenant_id: TENANT,
      transaction_id: p.transaction_id,
      expected_revision: 1,
      operation: 'expire_plan',
      from: ['planned'],
      to: 'failed',
      data: { expired_reason: 'plan_expired' },
    });
    expect(r).toMatchObject({ status: 'failed', revision: 2, data: { expired_reason: 'plan_expired' } });
    const item = await rawItem(keys.transaction(TENANT, p.transaction_id).PK, 'TXN');
    expect(item?.GSI3PK).toBeUndefined();
    expect(item?.GSI3SK).toBeUndefined();
  });

  it('rejects triples outside the table before writing', async () => {
    const p = await t.store.create(plannedInput());
    const base = { tenant_id: TENANT, transaction_id: p.transaction_id, expected_revision: 1 };
    await rejected(t.store.transition({ ...base, operation: 'settle', from: ['planned'], to: 'committed' }), 'transaction.invalid_transition');
    await rejected(t.store.transition({ ...base, operation: 'expire_plan', from: ['planned', 'committing'], to: 'failed' }), 'transaction.invalid_transition');
    await rejected(t.store.transition({ ...base, operation: 'settle', from: [], to: 'committed' }), 'transaction.invalid_transition');
    await rejected(t.store.transition({ ...base, operation: 'claim_plan' as never, from: ['planned'], to: 'committing' }), 'transaction.invalid_transition');
    await rejected(
      t.store.transition({ ...base, operation: 'expire_plan', from: ['planned'], to: 'failed', expected_revision: 0 }),
      'transaction.invalid_record',
    );
    expect((await t.store.get({ tenant_id: TENANT, transaction_id: p.transaction_id }))?.revision).toBe(1);
  });

  it('terminal statuses stay terminal: any write names a status the table cannot leave, or loses the CAS', async () => {
    const p = await createPrepared();
    const done = await t.store.settle({ tenant_id: TENANT, transaction_id: p.transaction_id, expected_revision: 1, to: 'committed' });
    await rejected(
      t.store.transition({ tenant_id: TENANT, transaction_id: p.transaction_id, expected_revision: 2, operation: 'settle', from: ['committed'], to: 'failed' }),
      'transaction.invalid_transition',
    );
    const err = await rejected(
      t.store.settle({ tenant_id: TENANT, transaction_id: p.transaction_id, expected_revision: 2, to: 'failed' }),
      'transaction.state_conflict',
    );
    expect(err.details).toMatchObject({ current_status: 'committed', current_revision: 2 });
    await rejected(
      t.store.checkpointProviderOperation({
        tenant_id: TENANT,
        transaction_id: p.transaction_id,
        expected_revision: 2,
        provider_operation: { provider: 'p', operation_id: 'o' },
      }),
      'transaction.state_conflict',
    );
    expect(await t.store.get({ tenant_id: TENANT, transaction_id: p.transaction_id })).toEqual(done);
  });

  it('runs the reconciliation loop: begin_reconcile counts attempts; settle back to outcome_unknown; escalate; reschedule', async () => {
    const u = await toOutcomeUnknown();
    expect(u.next_reconcile_at).toBe(new Date(clock.now().getTime() + 5_000).toISOString());
    const ref = { tenant_id: TENANT, transaction_id: u.transaction_id };
    const rec = await t.store.transition({
      ...ref,
      expected_revision: u.revision,
      operation: 'begin_reconcile',
      from: ['outcome_unknown'],
      to: 'reconciling',
      lease: { owner: 'rec-1', ttl_ms: 10_000 },
    });
    expect(rec).toMatchObject({ status: 'reconciling', reconcile_attempts: 1, lease_owner: 'rec-1' });
    expect(rec.next_reconcile_at).toBeUndefined();
    const back = await t.store.settle({
      ...ref,
      expected_revision: rec.revision,
      to: 'outcome_unknown',
      reconciliation_cursor: 'cursor-2',
      next_reconcile_at: '2030-01-01T01:00:00Z',
    });
    expect(back).toMatchObject({
      status: 'outcome_unknown',
      reconciliation_cursor: 'cursor-2',
      next_reconcile_at: '2030-01-01T01:00:00.000Z',
      reconcile_attempts: 1,
    });
    expect(back.lease_owner).toBeUndefined();
    const esc = await t.store.transition({ ...ref, expected_revision: back.revision, operation: 'escalate', from: ['outcome_unknown'], to: 'outcome_unknown' });
    expect(esc.escalated_at).toBe(clock.iso());
    expect((await rawItem(keys.transaction(TENANT, u.transaction_id).PK, 'TXN'))?.GSI3PK).toBe(
      keys.statusIndex('outcome_unknown', true, keys.statusIndexShard(TENANT, u.transaction_id)),
    );
    await rejected(
      t.store.transition({ ...ref, expected_revision: esc.revision, operation: 'reschedule_reconcile', from: ['outcome_unknown'], to: 'outcome_unknown' }),
      'transaction.invalid_record',
    );
    const again = await t.store.transition({
      ...ref,
      expected_revision: esc.revision,
      operation: 'reschedule_reconcile',
      from: ['outcome_unknown'],
      to: 'outcome_unknown',
      patch: { next_reconcile_at: '2030-01-02T00:00:00Z' },
    });
    expect(again.escalated_at).toBeUndefined();
    expect((await rawItem(keys.transaction(TENANT, u.transaction_id).PK, 'TXN'))?.GSI3SK).toBe(`2030-01-02T00:00:00.000Z#${TENANT}#${u.transaction_id}`);
    const rec2 = await t.store.transition({
      ...ref,
      expected_revision: again.revision,
      operation: 'begin_reconcile',
      from: ['outcome_unknown'],
      to: 'reconciling',
    });
    expect(rec2.reconcile_attempts).toBe(2);
    const done = await t.store.settle({ ...ref, expected_revision: rec2.revision, to: 'reconciled', result: { action_id: 'rec-action', status: 'completed' } });
    expect(done).toMatchObject({ status: 'reconciled', result: { action_id: 'rec-action', status: 'completed' } });
    // reconciled is never rewritten as committed.
    await rejected(t.store.settle({ ...ref, expected_revision: done.revision, to: 'committed', from: ['reconciled'] }), 'transaction.invalid_transition');
    await rejected(t.store.settle({ ...ref, expected_revision: done.revision, to: 'committed' }), 'transaction.state_conflict');
  });
});

describe('settle', () => {
  it('settles committed with the terminal result and releases the lease', async () => {
    const p = await createPrepared({ lease: { owner: 'w', ttl_ms: 5_000 } });
    expect(p.lease_owner).toBe('w');
    const r = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: p.transaction_id,
      expected_revision: 1,
      to: 'committed',
      result: { action_id: p.action_id, status: 'completed', output: { ok: true } },
    });
    expect(r).toMatchObject({ status: 'committed', revision: 2, fence: 1, result: { output: { ok: true } } });
    expect(r.lease_owner).toBeUndefined();
    expect(r.lease_expires_at).toBeUndefined();
  });

  it('the result stored once: a settlement with result_ref stores the reference and no result; a later result replaces the reference', async () => {
    const p = await createPrepared();
    const ref = { tenant_id: TENANT, transaction_id: p.transaction_id };
    const pk = keys.transaction(TENANT, p.transaction_id).PK;
    // Both, or a reference written by anything but a settlement: refused before anything is sent.
    await rejected(
      t.store.settle({ ...ref, expected_revision: 1, to: 'outcome_unknown', result_ref: p.action_id, result: { action_id: p.action_id, status: 'failed' } }),
      'transaction.invalid_record',
    );
    await rejected(t.store.settle({ ...ref, expected_revision: 1, to: 'outcome_unknown', result_ref: 'not#an#id' }), 'transaction.invalid_record');
    // A reference to another action than the one the record is bound to: refused by the write's condition, nothing written.
    await rejected(t.store.settle({ ...ref, expected_revision: 1, to: 'outcome_unknown', result_ref: 'another-action' }), 'transaction.state_conflict');
    expect((await rawItem(pk, 'TXN'))?.revision).toBe(1);
    const u = await t.store.settle({ ...ref, expected_revision: 1, to: 'outcome_unknown', result_ref: p.action_id });
    expect(u).toMatchObject({ status: 'outcome_unknown', result_ref: p.action_id });
    expect(u.result).toBeUndefined();
    const item = await rawItem(pk, 'TXN');
    // The reference names the record's own bound action: stored as the marker `true`, read back as that action's ID.
    expect(item).toMatchObject({ result_ref: true });
    expect(item).not.toHaveProperty('result');
    expect(await t.store.get(ref)).toMatchObject({ result_ref: p.action_id });
    const rec = await t.store.transition({ ...ref, expected_revision: u.revision, operation: 'begin_reconcile', from: ['outcome_unknown'], to: 'reconciling' });
    const done = await t.store.settle({ ...ref, expected_revision: rec.revision, to: 'reconciled', result: { action_id: 'rec-action', status: 'completed' } });
    expect(done).toMatchObject({ status: 'reconciled', result: { action_id: 'rec-action', status: 'completed' } });
    expect(done.result_ref).toBeUndefined();
    expect(await rawItem(pk, 'TXN')).not.toHaveProperty('result_ref');
  });

  it('settles outcome_unknown with the error, a parsed provider operation, and retry_after_ms as the delay', async () => {
    const p = await createPrepared();
    const error = {
      code: 'sla.timeout_exceeded',
      message: 'timed out',
      category: 'timeout' as const,
      retryable: false,
      retry_after_ms: 30_000,
      uncertain_outcome: true,
    };
    const r = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: p.transaction_id,
      expected_revision: 1,
      to: 'outcome_unknown',
      error,
      provider_operation: { provider: 'payments-sim', operation_id: 'op-1' },
    });
    expect(r).toMatchObject({ status: 'outcome_unknown', error, provider_operation: { provider: 'payments-sim', operation_id: 'op-1' } });
    expect(r.next_reconcile_at).toBe(new Date(clock.now().getTime() + 30_000).toISOString());
    expect((await rawItem(keys.transaction(TENANT, p.transaction_id).PK, 'TXN'))?.GSI3SK).toBe(`${r.next_reconcile_at}#${TENANT}#${p.transaction_id}`);
  });

  it('may not replace a checkpointed provider operation with a different one', async () => {
    const p = await createPrepared();
    const c = await t.store.checkpointProviderOperation({
      tenant_id: TENANT,
      transaction_id: p.transaction_id,
      expected_revision: 1,
      provider_operation: { provider: 'p', operation_id: 'op-A' },
    });
    const err = await rejected(
      t.store.settle({
        tenant_id: TENANT,
        transaction_id: p.transaction_id,
        expected_revision: c.revision,
        to: 'outcome_unknown',
        provider_operation: { provider: 'p', operation_id: 'op-B' },
      }),
      'transaction.provider_operation_conflict',
    );
    expect(err.details).toMatchObject({ current_status: 'prepared', current_revision: 2, current_provider_operation: { provider: 'p', operation_id: 'op-A' } });
    const ok = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: p.transaction_id,
      expected_revision: c.revision,
      to: 'outcome_unknown',
      provider_operation: { provider: 'p', operation_id: 'op-A' },
    });
    expect(ok.status).toBe('outcome_unknown');
  });

  it('settles compensating records to compensated or failed only', async () => {
    const c = await t.store.create({ ...preparedInput(uid('txn')), status: 'compensating', mode: 'compensate', compensation_for: 'orig-1' });
    await rejected(
      t.store.settle({ tenant_id: TENANT, transaction_id: c.transaction_id, expected_revision: 1, to: 'committed', from: ['compensating'] }),
      'transaction.invalid_transition',
    );
    const err = await rejected(
      t.store.settle({ tenant_id: TENANT, transaction_id: c.transaction_id, expected_revision: 1, to: 'committed' }),
      'transaction.state_conflict',
    );
    expect(err.details).toMatchObject({ current_status: 'compensating', allowed_statuses: ['prepared', 'committing'] });
    const r = await t.store.settle({ tenant_id: TENANT, transaction_id: c.transaction_id, expected_revision: 1, to: 'compensated' });
    expect(r).toMatchObject({ status: 'compensated', compensation_for: 'orig-1' });
  });
});

describe('checkpoint provider operation', () => {
  it('records the reference and cursor; the same reference again is idempotent; a different one is a conflict', async () => {
    const p = await createPrepared();
    const ref = { tenant_id: TENANT, transaction_id: p.transaction_id };
    const op = { provider: 'payments-sim', operation_id: 'op-1', request_id: 'req-1' };
    const a = await t.store.checkpointProviderOperation({ ...ref, expected_revision: 1, provider_operation: op, reconciliation_cursor: 'c1' });
    expect(a).toMatchObject({ revision: 2, status: 'prepared', provider_operation: op, reconciliation_cursor: 'c1' });
    const b = await t.store.checkpointProviderOperation({ ...ref, expected_revision: 2, provider_operation: op, reconciliation_cursor: 'c2' });
    expect(b).toMatchObject({ revision: 3, provider_operation: op, reconciliation_cursor: 'c2' });
    for (const other of [
      { ...op, operation_id: 'op-2' },
      { provider: 'payments-sim', operation_id: 'op-1' },
      { ...op, provider: 'x' },
    ]) {
      const err = await rejected(
        t.store.checkpointProviderOperation({ ...ref, expected_revision: 3, provider_operation: other }),
        'transaction.provider_operation_conflict',
      );
      expect(err.details).toMatchObject({ current_status: 'prepared', current_revision: 3, current_provider_operation: op });
    }
    // Fenced by revision: the same reference at a stale revision loses the CAS.
    const stale = await rejected(t.store.checkpointProviderOperation({ ...ref, expected_revision: 2, provider_operation: op }), 'transaction.state_conflict');
    expect(stale.details).toMatchObject({ current_revision: 3 });
  });

  it('validates the reference and allows only the four attempt statuses', async () => {
    const p = await createPrepared();
    const ref = { tenant_id: TENANT, transaction_id: p.transaction_id, expected_revision: 1 };
    for (const bad of [{ provider: '', operation_id: 'o' }, { provider: 'p', operation_id: '' }, { provider: 'p', operation_id: '   ' }, { provider: 'p' }]) {
      const err = await rejected(t.store.checkpointProviderOperation({ ...ref, provider_operation: bad as never }), 'transaction.invalid_provider_operation');
      expect(err.httpStatus).toBe(400);
    }
    await rejected(
      t.store.checkpointProviderOperation({ ...ref, provider_operation: { provider: 'p', operation_id: 'o' }, reconciliation_cursor: '' }),
      'transaction.invalid_record',
    );
    const planned = await t.store.create(plannedInput());
    const err = await rejected(
      t.store.checkpointProviderOperation({
        tenant_id: TENANT,
        transaction_id: planned.transaction_id,
        expected_revision: 1,
        provider_operation: { provider: 'p', operation_id: 'o' },
      }),
      'transaction.state_conflict',
    );
    expect(err.details).toMatchObject({ current_status: 'planned', allowed_statuses: ['prepared', 'committing', 'compensating', 'reconciling'] });
    await rejected(
      t.store.checkpointProviderOperation({
        tenant_id: TENANT,
        transaction_id: planned.transaction_id,
        expected_revision: 1,
        provider_operation: { provider: 'p', operation_id: 'o' },
        from: ['planned' as never],
      }),
      'transaction.invalid_transition',
    );
    // Works while committing, compensating and reconciling too.
    const u = await toOutcomeUnknown();
    const rec = await t.store.transition({
      tenant_id: TENANT,
      transaction_id: u.transaction_id,
      expected_revision: u.revision,
      operation: 'begin_reconcile',
      from: ['outcome_unknown'],
      to: 'reconciling',
    });
    const cp = await t.store.checkpointProviderOperation({
      tenant_id: TENANT,
      transaction_id: u.transaction_id,
      expected_revision: rec.revision,
      provider_operation: { provider: 'p', operation_id: 'late' },
      reconciliation_cursor: 'page-2',
    });
    expect(cp).toMatchObject({ status: 'reconciling', reconciliation_cursor: 'page-2' });
  });
});

describe('lease', () => {
  it('grants, refuses while another owner holds it, allows takeover after expiry; the zombie cannot settle', async () => {
    const p = await createPrepared({ lease: { owner: 'w1', ttl_ms: 10_000 } });
    const ref = { tenant_id: TENANT, transaction_id: p.transaction_id };
    const held = await rejected(t.store.acquireLease({ ...ref, expected_revision: 1, owner: 'w2', ttl_ms: 10_000 }), 'transaction.lease_held');
    expect(held.details).toMatchObject({ current_status: 'prepared', current_revision: 1, lease_owner: 'w1', fence: 1 });
    expect(held.retryable).toBe(true);
    const renewed = await t.store.acquireLease({ ...ref, expected_revision: 1, owner: 'w1', ttl_ms: 10_000 });
    expect(renewed).toMatchObject({ revision: 2, lease_owner: 'w1', fence: 2 });
    clock.advance(10_001);
    const taken = await t.store.acquireLease({ ...ref, expected_revision: 2, owner: 'w2', ttl_ms: 10_000 });
    expect(taken).toMatchObject({ revision: 3, lease_owner: 'w2', fence: 3, status: 'prepared' });
    // The zombie (w1) still holds revision 2: its settle loses.
    const zombie = await rejected(t.store.settle({ ...ref, expected_revision: 2, to: 'committed' }), 'transaction.state_conflict');
    expect(zombie.details).toMatchObject({ current_revision: 3, current_status: 'prepared' });
    const settled = await t.store.settle({ ...ref, expected_revision: 3, to: 'outcome_unknown' });
    expect(settled.lease_owner).toBeUndefined();
    await rejected(t.store.acquireLease({ ...ref, expected_revision: settled.revision, owner: 'w3', ttl_ms: 1000 }), 'transaction.state_conflict');
    await rejected(t.store.acquireLease({ ...ref, expected_revision: settled.revision, owner: '', ttl_ms: 1000 }), 'transaction.invalid_record');
  });
});

describe('receipts', () => {
  it('appends a hash chain atomically with each write and lists it in order', async () => {
    const id = uid('txn');
    const input = plannedInput(id);
    const r1 = await t.store.create({ ...input, receipt: nextReceipt({ transaction_id: id }, 1, 'planned', 'transaction.planned') });
    expect(r1).toMatchObject({ receipt_count: 1 });
    const r2 = await t.store.claimPlan({
      tenant_id: TENANT,
      transaction_id: id,
      plan_id: input.plan_id!,
      expected_revision: 1,
      commit_action_id: 'commit-r',
      receipt: nextReceipt(r1, 2, 'committing', 'transaction.commit_claimed'),
    });
    expect(r2).toMatchObject({ status: 'committing', revision: 2, receipt_count: 2, action_id: 'commit-r' });
    // A write without a receipt leaves the chain alone.
    const r3 = await t.store.checkpointProviderOperation({
      tenant_id: TENANT,
      transaction_id: id,
      expected_revision: 2,
      provider_operation: { provider: 'p', operation_id: 'o' },
    });
    expect(r3.receipt_count).toBe(2);
    const r4 = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: id,
      expected_revision: 3,
      to: 'committed',
      receipt: { ...nextReceipt(r3, 4, 'committed', 'transaction.committed'), evidence: { note: 'ok' } },
    });
    expect(r4).toMatchObject({ status: 'committed', revision: 4, receipt_count: 3 });

    const all = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id });
    expect(all.cursor).toBeUndefined();
    expect(all.items.map((i) => [i.receipt.seq, i.receipt.revision, i.receipt.event])).toEqual([
      [0, 1, 'transaction.planned'],
      [1, 2, 'transaction.commit_claimed'],
      [2, 4, 'transaction.committed'],
    ]);
    expect(all.items[2]?.evidence).toEqual({ note: 'ok' });
    let prev = GENESIS_RECEIPT_HASH;
    for (const { receipt } of all.items) {
      expect(receipt.prev_hash).toBe(prev);
      const { hash, ...rest } = receipt;
      expect(receiptHash(rest)).toBe(hash);
      prev = hash;
    }
    expect(r4.receipt_head).toBe(prev);

    // Pagination.
    const page1 = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id, limit: 2 });
    expect(page1.items).toHaveLength(2);
    const page2 = await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id, limit: 2, cursor: page1.cursor! });
    expect(page2.items.map((i) => i.receipt.seq)).toEqual([2]);
    await rejected(t.store.listReceipts({ tenant_id: TENANT, transaction_id: uid('other'), cursor: page1.cursor! }), 'transaction.invalid_listing');
  });

  it('a receipt that does not extend the stored chain is rejected and nothing is written', async () => {
    const id = uid('txn');
    const r1 = await t.store.create({ ...preparedInput(id), receipt: nextReceipt({ transaction_id: id }, 1, 'prepared', 'transaction.prepared') });
    // Pretends the chain is empty: seq 0 / genesis prev_hash.
    const forked = nextReceipt({ transaction_id: id }, 2, 'committed', 'transaction.committed');
    const err = await rejected(
      t.store.settle({ tenant_id: TENANT, transaction_id: id, expected_revision: 1, to: 'committed', receipt: forked }),
      'transaction.invalid_receipt',
    );
    expect(err.details).toMatchObject({ current_status: 'prepared', current_revision: 1, receipt_count: 1 });
    // Wrong revision in the receipt is caught before writing.
    await rejected(
      t.store.settle({
        tenant_id: TENANT,
        transaction_id: id,
        expected_revision: 1,
        to: 'committed',
        receipt: nextReceipt(r1, 5, 'committed', 'transaction.committed'),
      }),
      'transaction.invalid_receipt',
    );
    expect(await t.store.get({ tenant_id: TENANT, transaction_id: id })).toEqual(r1);
    expect((await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id })).items).toHaveLength(1);
  });

  it('the chain head is stored as its 32 bytes; a head an earlier version stored as hex extends the same way, and a fork of either is refused', async () => {
    const id = uid('txn');
    const pk = keys.transaction(TENANT, id).PK;
    const r1 = await t.store.create({ ...preparedInput(id), receipt: nextReceipt({ transaction_id: id }, 1, 'prepared', 'transaction.prepared') });
    const head = (await rawItem(pk, 'TXN'))?.receipt_head as Uint8Array;
    expect(head).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(head.subarray(1)).toString('hex')).toBe(r1.receipt_head);
    // The next seq, on another head than the stored one.
    const fork = {
      seq: 1,
      transaction_id: id,
      status: 'committed',
      revision: 2,
      at: '2030-01-01T00:00:00.000Z',
      prev_hash: 'a'.repeat(64),
      event: 'transaction.committed',
    } as const;
    const forked = { receipt: { ...fork, hash: receiptHash(fork) } };
    await rejected(
      t.store.settle({ tenant_id: TENANT, transaction_id: id, expected_revision: 1, to: 'committed', receipt: forked }),
      'transaction.invalid_receipt',
    );
    // The item as an earlier version wrote it: the head as the hex string.
    await t.client.send(new PutCommand({ TableName: t.tableName, Item: { ...(await rawItem(pk, 'TXN')), receipt_head: r1.receipt_head } }));
    expect(await t.store.get({ tenant_id: TENANT, transaction_id: id })).toEqual(r1);
    await rejected(
      t.store.settle({ tenant_id: TENANT, transaction_id: id, expected_revision: 1, to: 'committed', receipt: forked }),
      'transaction.invalid_receipt',
    );
    const r2 = await t.store.settle({
      tenant_id: TENANT,
      transaction_id: id,
      expected_revision: 1,
      to: 'committed',
      receipt: nextReceipt(r1, 2, 'committed', 'transaction.committed'),
    });
    expect((await rawItem(pk, 'TXN'))?.receipt_head).toBeInstanceOf(Uint8Array);
    expect(await t.store.get({ tenant_id: TENANT, transaction_id: id })).toEqual(r2);
    expect((await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id })).items.map((i) => i.receipt.hash)).toEqual([
      r1.receipt_head,
      r2.receipt_head,
    ]);
  });

  it('a lost race carrying a receipt is classified from the cancellation reason item, not a second read', async () => {
    const id = uid('txn');
    const r1 = await t.store.create(preparedInput(id));
    await t.store.settle({ tenant_id: TENANT, transaction_id: id, expected_revision: 1, to: 'failed' });
    const err = await rejected(
      t.store.settle({
        tenant_id: TENANT,
        transaction_id: id,
        expected_revision: 1,
        to: 'committed',
        receipt: nextReceipt(r1, 2, 'committed', 'transaction.committed'),
      }),
      'transaction.state_conflict',
    );
    expect(err.details).toMatchObject({ current_status: 'failed', current_revision: 2, expected_revision: 1 });
    expect((await t.store.listReceipts({ tenant_id: TENANT, transaction_id: id })).items).toHaveLength(0);
  });
});

describe('get', () => {
  it('needs exactly one selector within a tenant', async () => {
    for (const sel of [
      { tenant_id: TENANT },
      { tenant_id: TENANT, transaction_id: 'a', plan_id: 'b' },
      { tenant_id: TENANT, transaction_id: 'a', action_id: 'b' },
      { tenant_id: '', transaction_id: 'a' },
      { tenant_id: TENANT, transaction_id: '' },
      { tenant_id: TENANT, plan_id: 'x#y' },
      null,
    ]) {
      const err = await rejected(t.store.get(sel as never), 'transaction.invalid_selector');
      expect(err.httpStatus).toBe(400);
    }
    expect(await t.store.get({ tenant_id: TENANT, transaction_id: uid('none') })).toBeUndefined();
    expect(await t.store.get({ tenant_id: TENANT, plan_id: uid('none') })).toBeUndefined();
    expect(await t.store.get({ tenant_id: TENANT, action_id: uid('none') })).toBeUndefined();
  });
});

describe('list by status', () => {
  const lclock = manualClock('2031-06-01T00:00:00.000Z');
  let l: TestTable;
  beforeAll(async () => {
    l = await createTestTable({ now: lclock.now, prefix: 'txlist' });
  });
  afterAll(async () => {
    await l?.destroy();
  });

  it('lists overdue outcome_unknown records by reconciliation time, with pagination and a tenant filter', async () => {
    const due: string[] = [];
    for (let i = 0; i < 5; i++) {
      const tenant = i === 4 ? 'tenant-b' : TENANT;
      const r = await l.store.claimDirectCommit({ ...preparedInput(`u-${i}`), tenant_id: tenant, mode: 'commit' });
      const u = await l.store.settle({
        tenant_id: tenant,
        transaction_id: r.transaction_id,
        expected_revision: 1,
        to: 'outcome_unknown',
        next_reconcile_at: new Date(Date.parse('2031-06-01T00:00:00Z') + (i + 1) * 60_000).toISOString(),
      });
      due.push(u.transaction_id);
    }
    const committing = await l.store.claimDirectCommit({ ...preparedInput('stalled'), mode: 'commit' });

    const until = '2031-06-01T00:03:00.000Z'; // u-0, u-1, u-2 are due
    const first = await l.store.listByStatus({ status: 'outcome_unknown', until, limit: 2 });
    expect(first.items.map((r) => r.transaction_id)).toEqual(['u-0', 'u-1']);
    expect(first.cursor).toBeDefined();
    const second = await l.store.listByStatus({ status: 'outcome_unknown', until, limit: 2, cursor: first.cursor! });
    expect(second.items.map((r) => r.transaction_id)).toEqual(['u-2']);

    const all = await l.store.listByStatus({ status: 'outcome_unknown' });
    expect(all.items.map((r) => r.transaction_id)).toEqual(due);
    const tenantB = await l.store.listByStatus({ status: 'outcome_unknown', tenants: ['tenant-b'] });
    expect(tenantB.items.map((r) => r.transaction_id)).toEqual(['u-4']);

    const stalled = await l.store.listByStatus({ status: 'committing', until: lclock.iso() });
    expect(stalled.items.map((r) => r.transaction_id)).toEqual([committing.transaction_id]);

    // Escalation parks a record outside the sweeper's listing.
    const u0 = all.items[0]!;
    await l.store.transition({
      tenant_id: TENANT,
      transaction_id: u0.transaction_id,
      expected_revision: u0.revision,
      operation: 'escalate',
      from: ['outcome_unknown'],
      to: 'outcome_unknown',
    });
    expect((await l.store.listByStatus({ status: 'outcome_unknown', until })).items.map((r) => r.transaction_id)).toEqual(['u-1', 'u-2']);
    expect((await l.store.listByStatus({ status: 'outcome_unknown', escalated: true })).items.map((r) => r.transaction_id)).toEqual(['u-0']);

    // The raw index holds only non-terminal records.
    const settled = await l.store.settle({ tenant_id: TENANT, transaction_id: committing.transaction_id, expected_revision: 1, to: 'committed' });
    expect(settled.status).toBe('committed');
    for (const p of keys.statusIndexPartitions('committing')) {
      const raw = await l.client.send(
        new QueryCommand({
          TableName: l.tableName,
          IndexName: 'byStatus',
          KeyConditionExpression: 'GSI3PK = :p',
          ExpressionAttributeValues: { ':p': p },
        }),
      );
      expect(raw.Items).toEqual([]);
    }
  });

  it('rejects terminal statuses, bad bounds, limits and cursors', async () => {
    const cases = [
      { status: 'committed' },
      { status: 'nope' },
      { status: 'planned', escalated: true },
      { status: 'outcome_unknown', until: 'yesterday' },
      { status: 'outcome_unknown', limit: 0 },
      { status: 'outcome_unknown', limit: 101 },
      { status: 'outcome_unknown', cursor: 'not-a-cursor' },
      { status: 'outcome_unknown', cursor: Buffer.from(JSON.stringify({ GSI3PK: 'STATUS#committing', GSI3SK: 'x', PK: 'a', SK: 'b' })).toString('base64url') },
    ];
    for (const q of cases) await rejected(l.store.listByStatus(q as never), 'transaction.invalid_listing');
  });
});
