/**
 * The unit of work (lib/ports/unit-of-work.ts, lib/aws/dynamo/unit-of-work.ts)
 * on DynamoDB Local, committing the runtime's three composite transitions:
 * admission (action + reservation + prepared record + first receipt, or the
 * plan claim), attempt start (leases, receipt, adoption, and a first
 * attempt's route pin) and settlement (transaction + receipt + action +
 * reservation). Each is one TransactWriteItems; refusals are classified from
 * the cancelled write's own images and name the refusing intents; nothing
 * partial is ever written; real concurrent writers.
 *
 * `admit`, `startAttempt` and `settle` below only assemble the intents of each
 * transition as the runtime steps do (lib/runtime/pipeline/admit.ts,
 * attempts/worker.ts, attempts/settlement.ts) and sort the refusals by intent
 * for the assertions; every write goes through `uow.commit`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENESIS_RECEIPT_ATTRIBUTE, keys } from '../../../lib/aws/dynamo/table-design.js';
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { AcquireActionLeaseInput, ActionRecord, CreateActionInput, SettleActionInput } from '../../../lib/ports/action-store.js';
import type { RouteAssignment } from '../../../lib/ports/route-store.js';
import {
  idempotencyFingerprint,
  idempotencyKeyHash,
  type AdoptInput,
  type CompleteInput,
  type IdempotencyReservation,
  type OwnerInput,
  type ReserveInput,
  type ReserveOutcome,
} from '../../../lib/ports/idempotency-store.js';
import type { AcquireLeaseInput, ClaimPlanInput, CreateTransactionInput, SettleInput, TransactionRecord } from '../../../lib/ports/transaction-store.js';
import type { Refusal, WriteIntent } from '../../../lib/ports/unit-of-work.js';
import { sha256Hex, type Action, type ActionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import { createTestTable, type TestTable } from '../../support/dynamo.js';
import { readableItem } from '../../support/packed-items.js';
import { writableStores, type WritableStores } from '../../support/store-writes.js';
import { manualClock, nextReceipt, plannedInput, preparedInput } from '../../support/transaction-fixtures.js';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { PRINCIPAL, TENANT, action as actionFixture, split, uid } from './support.js';

interface AdmitWriteInput {
  readonly action: CreateActionInput;
  readonly reservation?: ReserveInput;
  readonly transaction?: CreateTransactionInput;
  readonly claim?: { readonly input: ClaimPlanInput; readonly held: TransactionRecord };
}
type AdmitWriteOutcome =
  | { readonly admitted: true; readonly action: ActionRecord; readonly reservation?: IdempotencyReservation; readonly transaction?: TransactionRecord }
  | {
      readonly admitted: false;
      readonly existing_action?: ActionRecord;
      readonly reservation?: Exclude<ReserveOutcome, { outcome: 'reserved' }>;
      readonly reservation_error?: AipError;
      readonly existing_transaction?: TransactionRecord;
      readonly claim_error?: AipError;
    };
interface StartWriteInput {
  readonly action: { readonly input: AcquireActionLeaseInput; readonly held: ActionRecord };
  readonly transaction?: { readonly input: AcquireLeaseInput; readonly held: TransactionRecord };
  readonly idempotency?: AdoptInput;
}
interface SettleWriteInput {
  readonly transaction?: { readonly input: SettleInput; readonly held: TransactionRecord };
  readonly action?: SettleActionInput;
  readonly idempotency?: { readonly kind: 'complete'; readonly input: CompleteInput } | { readonly kind: 'mark_uncertain'; readonly input: OwnerInput };
}

function refusalOf<K extends WriteIntent['kind']>(refused: readonly Refusal[], kind: K): Extract<Refusal, { kind: K }> | undefined {
  return refused.find((r): r is Extract<Refusal, { kind: K }> => r.kind === kind);
}

async function admit(input: AdmitWriteInput): Promise<AdmitWriteOutcome> {
  const intents: WriteIntent[] = [
    { kind: 'action.create', input: input.action },
    ...(input.reservation !== undefined ? [{ kind: 'idempotency.reserve', input: input.reservation } as const] : []),
    ...(input.transaction !== undefined ? [{ kind: 'transaction.create', input: input.transaction } as const] : []),
    ...(input.claim !== undefined ? [{ kind: 'transaction.claim_plan', input: input.claim.input, held: input.claim.held } as const] : []),
  ];
  const out = await table.stores.uow.commit(intents);
  if (out.committed) {
    const at = (kind: WriteIntent['kind']) => out.written[intents.findIndex((i) => i.kind === kind)];
    return {
      admitted: true,
      action: at('action.create') as ActionRecord,
      ...(input.reservation !== undefined ? { reservation: at('idempotency.reserve') as IdempotencyReservation } : {}),
      ...(input.transaction !== undefined ? { transaction: at('transaction.create') as TransactionRecord } : {}),
      ...(input.claim !== undefined ? { transaction: at('transaction.claim_plan') as TransactionRecord } : {}),
    };
  }
  const reserve = refusalOf(out.refused, 'idempotency.reserve');
  const create = refusalOf(out.refused, 'transaction.create');
  if (create !== undefined && create.current === undefined) throw create.error;
  return {
    admitted: false,
    ...(refusalOf(out.refused, 'action.create')?.current !== undefined ? { existing_action: refusalOf(out.refused, 'action.create')?.current } : {}),
    ...(reserve?.current !== undefined ? { reservation: reserve.current } : {}),
    ...(reserve !== undefined && reserve.current === undefined ? { reservation_error: reserve.error } : {}),
    ...(create?.current !== undefined ? { existing_transaction: create.current } : {}),
    ...(refusalOf(out.refused, 'transaction.claim_plan') !== undefined ? { claim_error: refusalOf(out.refused, 'transaction.claim_plan')?.error } : {}),
  } as AdmitWriteOutcome;
}

async function startAttempt(input: StartWriteInput) {
  const intents: WriteIntent[] = [
    { kind: 'action.lease', input: input.action.input, held: input.action.held },
    ...(input.transaction !== undefined ? [{ kind: 'transaction.lease', input: input.transaction.input, held: input.transaction.held } as const] : []),
    ...(input.idempotency !== undefined ? [{ kind: 'idempotency.adopt', input: input.idempotency } as const] : []),
  ];
  const out = await table.stores.uow.commit(intents);
  if (out.committed) {
    const at = (kind: WriteIntent['kind']) => out.written[intents.findIndex((i) => i.kind === kind)];
    return {
      started: true as const,
      action: at('action.lease') as ActionRecord,
      ...(input.transaction !== undefined ? { transaction: at('transaction.lease') as TransactionRecord } : {}),
    };
  }
  const refused: { action?: AipError; transaction?: AipError; idempotency?: AipError } = {};
  const a = refusalOf(out.refused, 'action.lease')?.error;
  const t = refusalOf(out.refused, 'transaction.lease')?.error;
  const i = refusalOf(out.refused, 'idempotency.adopt')?.error;
  if (a !== undefined) refused.action = a;
  if (t !== undefined) refused.transaction = t;
  if (i !== undefined) refused.idempotency = i;
  return { started: false as const, refused };
}

/** The transaction's refusal is thrown (the attempt lost); the action's and the reservation's are returned. */
async function settle(input: SettleWriteInput) {
  const intents: WriteIntent[] = [
    ...(input.transaction !== undefined ? [{ kind: 'transaction.settle', input: input.transaction.input, held: input.transaction.held } as const] : []),
    ...(input.action !== undefined ? [{ kind: 'action.settle', input: input.action } as const] : []),
    ...(input.idempotency !== undefined
      ? [
          input.idempotency.kind === 'complete'
            ? ({ kind: 'idempotency.complete', input: input.idempotency.input } as const)
            : ({ kind: 'idempotency.mark_uncertain', input: input.idempotency.input } as const),
        ]
      : []),
  ];
  const out = await table.stores.uow.commit(intents);
  if (out.committed) return { settled: true as const, ...(input.transaction !== undefined ? { transaction: out.written[0] as TransactionRecord } : {}) };
  const t = refusalOf(out.refused, 'transaction.settle');
  if (t !== undefined) throw t.error;
  const refused: { action?: AipError; idempotency?: AipError } = {};
  const a = refusalOf(out.refused, 'action.settle')?.error;
  const i = (refusalOf(out.refused, 'idempotency.complete') ?? refusalOf(out.refused, 'idempotency.mark_uncertain'))?.error;
  if (a !== undefined) refused.action = a;
  if (i !== undefined) refused.idempotency = i;
  return { settled: false as const, refused };
}

const RACERS = 50;
let table: TestTable;
let actions: WritableStores['actions'];
let idempotency: WritableStores['idempotency'];
const clock = manualClock();
/** DynamoDB commands sent, by name (SDK middleware on the test client). */
const sent: string[] = [];

beforeAll(async () => {
  table = await createTestTable({ prefix: 'atomic', now: clock.now });
  ({ actions, idempotency } = writableStores(table.stores));
  table.raw.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(String(context.commandName).replace(/Command$/, ''));
      return next(args);
    },
    { step: 'initialize', name: 'atomicTestCounter' },
  );
});
afterAll(async () => table.destroy());

/** An item as stored, its packed attributes decoded (test/support/packed-items.ts). */
const raw = async (key: { PK: string; SK: string }) => {
  const item = (await table.client.send(new GetCommand({ TableName: table.tableName, Key: key, ConsistentRead: true }))).Item;
  return item === undefined ? undefined : readableItem(item);
};

function fingerprint(a: Action): string {
  return idempotencyFingerprint({
    capability_id: a.capability_id,
    input: a.input,
    ...(a.transaction ? { transaction: a.transaction } : {}),
    ...(a.identity ? { identity: a.identity } : {}),
  });
}

/** An execute admission of `a` (its reservation and prepared record with the first receipt). */
function admission(a: Action = actionFixture()): AdmitWriteInput {
  const txn = a.transaction?.transaction_id as string;
  const reservation: ReserveInput = {
    tenant_id: TENANT,
    principal_id: PRINCIPAL.id,
    key: a.idempotency_key as string,
    fingerprint: fingerprint(a),
    action_id: a.id,
    fence: 0,
    transaction_id: txn,
  };
  return {
    action: { tenant_id: TENANT, principal: PRINCIPAL, action: a },
    reservation,
    transaction: {
      ...preparedInput(txn, { action_id: a.id, capability_id: a.capability_id }),
      receipt: nextReceipt({ transaction_id: txn }, 1, 'prepared', 'transaction.prepared'),
    },
  };
}

function itemKeys(input: AdmitWriteInput) {
  const a = input.action.action;
  const txn = a.transaction?.transaction_id as string;
  return {
    action: keys.action(TENANT, a.id),
    idem: keys.idempotency(TENANT, PRINCIPAL.id, idempotencyKeyHash(a.idempotency_key as string)),
    txn: keys.transaction(TENANT, txn),
    receipt: keys.receipt(TENANT, txn, 0),
  };
}

async function expectNothingOf(input: AdmitWriteInput, except: readonly ('action' | 'idem' | 'txn' | 'receipt')[] = []) {
  for (const [name, key] of Object.entries(itemKeys(input))) {
    if (except.includes(name as 'action')) continue;
    expect(await raw(key), `${name} must not have been written`).toBeUndefined();
  }
}

async function admitted(input: AdmitWriteInput) {
  const out = await admit(input);
  if (!out.admitted) throw new Error('expected the admission to be written');
  return out;
}

function refused(out: AdmitWriteOutcome) {
  if (out.admitted) throw new Error('expected the admission to be refused');
  return out;
}

/** Leases the action and the transaction for attempt `owner` (what the worker does). */
async function leaseBoth(a: Action, txn: TransactionRecord, owner: string): Promise<{ action: ActionRecord; txn: TransactionRecord }> {
  const current = (await actions.get({ tenant_id: TENANT, action_id: a.id })) as ActionRecord;
  const leased = await actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner, ttl_ms: 1_000, expected_revision: current.revision });
  const held = await table.store.acquireLease({
    tenant_id: TENANT,
    transaction_id: txn.transaction_id,
    expected_revision: txn.revision,
    owner,
    ttl_ms: 1_000,
    data: { attempt_action_id: a.id, attempt_fence: leased.fence },
    receipt: nextReceipt(txn, txn.revision + 1, txn.status, 'transaction.attempt_started'),
  });
  await idempotency.adopt({ tenant_id: TENANT, principal_id: PRINCIPAL.id, key: a.idempotency_key as string, action_id: a.id, fence: leased.fence });
  return { action: leased, txn: held };
}

function settlement(a: Action, held: TransactionRecord, fence: number, result: ActionResult) {
  return {
    transaction: {
      held,
      input: {
        tenant_id: TENANT,
        transaction_id: held.transaction_id,
        expected_revision: held.revision,
        to: 'committed' as const,
        from: [held.status],
        result,
        receipt: nextReceipt(held, held.revision + 1, 'committed', 'transaction.settled.committed'),
      },
    },
    action: { tenant_id: TENANT, action_id: a.id, fence, to: 'completed' as const, result },
    idempotency: {
      kind: 'complete' as const,
      input: { tenant_id: TENANT, principal_id: PRINCIPAL.id, key: a.idempotency_key as string, action_id: a.id, fence, result },
    },
  };
}

describe('Composite admission', () => {
  it('writes the action, the reservation, the prepared record and its first receipt in one TransactWriteItems, reading nothing', async () => {
    const input = admission();
    sent.length = 0;
    const out = await admitted(input);
    expect(sent).toEqual(['TransactWriteItems']);
    expect(out.action).toMatchObject({ status: 'accepted', revision: 1, fence: 0 });
    expect(out.reservation).toMatchObject({ status: 'in_flight', action_id: input.action.action.id, fence: 0 });
    expect(out.transaction).toMatchObject({ status: 'prepared', revision: 1, receipt_count: 1 });
    const k = itemKeys(input);
    expect(await raw(k.action)).toMatchObject({ status: 'accepted' });
    expect(await raw(k.idem)).toMatchObject({ status: 'in_flight' });
    // The first receipt is inside the record item (docs/table-design.md, "The first receipt inside the record"): no item of its own.
    expect(await raw(k.txn)).toMatchObject({ status: 'prepared', revision: 1, [GENESIS_RECEIPT_ATTRIBUTE]: { receipt: { status: 'prepared' } } });
    expect(await raw(k.receipt)).toBeUndefined();
    const txn = out.transaction?.transaction_id as string;
    expect(await table.store.get({ tenant_id: TENANT, transaction_id: txn })).toEqual(out.transaction);
    const chain = (await table.store.listReceipts({ tenant_id: TENANT, transaction_id: txn })).items;
    expect(chain.map((r) => [r.tenant_id, r.receipt.transaction_id, r.receipt.seq, r.receipt.status])).toEqual([[TENANT, txn, 0, 'prepared']]);
    expect(chain[0]?.receipt.hash).toBe(out.transaction?.receipt_head);
  });

  it('the same action ID: refused with the existing action from the cancelled write, and nothing of the second admission written', async () => {
    const first = admission();
    await admitted(first);
    await actions.requestCancel({ tenant_id: TENANT, action_id: first.action.action.id }); // revision 2
    // Same action ID, but another key and transaction: only the action item can refuse.
    const again = admission({ ...first.action.action, idempotency_key: uid('idem'), transaction: { mode: 'execute', transaction_id: uid('txn') } });
    sent.length = 0;
    const out = refused(await admit(again));
    expect(sent).toEqual(['TransactWriteItems']);
    expect(out.existing_action).toMatchObject({ action_id: first.action.action.id, status: 'accepted', revision: 2 });
    expect(out.reservation).toBeUndefined();
    expect(out.existing_transaction).toBeUndefined();
    await expectNothingOf(again, ['action']);
  });

  it('a held key: completed answers its stored result, in_flight names its owner, another fingerprint is idempotency.fingerprint_mismatch; nothing written', async () => {
    const first = admission();
    await admitted(first);
    const key = first.action.action.idempotency_key as string;
    const retry = admission(
      actionFixture({ idempotency_key: key, input: first.action.action.input, transaction: { mode: 'execute', transaction_id: uid('txn') } }),
    );
    // transaction_id is part of the fingerprint: use the first one's fingerprint for a same-request retry
    const sameRequest: AdmitWriteInput = {
      ...retry,
      reservation: { ...(retry.reservation as ReserveInput), fingerprint: (first.reservation as ReserveInput).fingerprint },
    };
    const idemKey = itemKeys(first).idem;
    const stored = await raw(idemKey);
    const inFlight = refused(await admit(sameRequest));
    expect(inFlight.reservation).toMatchObject({ outcome: 'in_flight', reservation: { action_id: first.action.action.id } });
    await expectNothingOf(sameRequest, ['idem']);
    expect(await raw(idemKey)).toEqual(stored);

    const mismatch = refused(await admit(retry));
    expect(mismatch.reservation_error).toBeInstanceOf(AipError);
    expect(mismatch.reservation_error?.code).toBe('idempotency.fingerprint_mismatch');
    await expectNothingOf(retry, ['idem']);
    expect(await raw(idemKey)).toEqual(stored);

    const result: ActionResult = { action_id: first.action.action.id, status: 'completed', output: { ok: true } };
    await idempotency.complete({ tenant_id: TENANT, principal_id: PRINCIPAL.id, key, action_id: first.action.action.id, fence: 0, result });
    const completed = refused(await admit(sameRequest));
    expect(completed.reservation).toMatchObject({ outcome: 'completed', result });
    await expectNothingOf(sameRequest, ['idem']);
    expect(await raw(idemKey)).toMatchObject({ status: 'completed', action_id: first.action.action.id, result });
  });

  it('an existing transaction ID: refused with the stored record (for the replay gate), and no action or reservation written', async () => {
    const first = admission();
    const out1 = await admitted(first);
    const other = admission(actionFixture({ transaction: { mode: 'execute', transaction_id: out1.transaction?.transaction_id as string } }));
    const out = refused(await admit(other));
    expect(out.existing_transaction).toMatchObject({
      transaction_id: out1.transaction?.transaction_id,
      status: 'prepared',
      revision: 1,
      action_id: first.action.action.id,
    });
    expect(out.existing_action).toBeUndefined();
    expect(out.reservation).toBeUndefined();
    await expectNothingOf(other, ['txn', 'receipt']);
  });

  it('a planned commit: the action, the reservation and the plan claim (with its receipt) in one write; a claim on a moved record is refused with the typed lost race and writes nothing', async () => {
    const txn = uid('txn');
    const plannedRecord = await table.store.create({
      ...plannedInput(txn),
      receipt: nextReceipt({ transaction_id: txn }, 1, 'planned', 'transaction.planned'),
    });
    const claimOf = (a: Action, held: TransactionRecord) => ({
      held,
      input: {
        tenant_id: TENANT,
        transaction_id: txn,
        expected_revision: held.revision,
        plan_id: `plan:${txn}`,
        commit_action_id: a.id,
        receipt: nextReceipt(held, held.revision + 1, 'committing', 'transaction.plan_claimed'),
      },
    });
    const commitOf = () => actionFixture({ transaction: { mode: 'commit', plan_id: `plan:${txn}`, transaction_id: txn } });
    const winner = commitOf();
    const { transaction: _none, ...base } = admission(winner);
    sent.length = 0;
    const out = await admitted({ ...base, claim: claimOf(winner, plannedRecord) });
    expect(sent).toEqual(['TransactWriteItems']);
    expect(out.transaction).toEqual(await table.store.get({ tenant_id: TENANT, transaction_id: txn }));
    expect(out.transaction).toMatchObject({ status: 'committing', action_id: winner.id, revision: 2, receipt_count: 2 });

    const loser = commitOf();
    const { transaction: _none2, ...loserBase } = admission(loser);
    const lost = refused(await admit({ ...loserBase, claim: claimOf(loser, plannedRecord) }));
    expect(lost.claim_error?.code).toBe('transaction.state_conflict');
    expect(lost.claim_error?.details).toMatchObject({ current_status: 'committing', current_revision: 2, expected_revision: 1 });
    await expectNothingOf({ ...loserBase }, ['txn', 'receipt']);
    expect(await raw(keys.receipt(TENANT, txn, 2))).toBeUndefined();
  });

  it(`${RACERS} concurrent admissions of the same idempotency key: exactly one is written; every other is refused by the reservation the winner holds`, async () => {
    const key = uid('idem');
    const input = actionFixture({ idempotency_key: key });
    const fp = fingerprint({ ...input, transaction: { mode: 'execute' } });
    const racers = Array.from({ length: RACERS }, () => {
      const a = actionFixture({ idempotency_key: key, input: input.input, transaction: { mode: 'execute', transaction_id: uid('txn') } });
      const adm = admission(a);
      return { ...adm, reservation: { ...(adm.reservation as ReserveInput), fingerprint: fp } };
    });
    const results = await Promise.allSettled(racers.map((r) => admit(r)));
    const { won, lost } = split(results);
    expect(lost).toEqual([]);
    const winners = won.filter((o) => o.admitted);
    expect(winners).toHaveLength(1);
    const winner = winners[0]?.admitted ? winners[0].action.action_id : '';
    for (const o of won) {
      if (o.admitted) continue;
      expect(o.reservation).toMatchObject({ outcome: 'in_flight', reservation: { action_id: winner } });
    }
    for (const r of racers) if (r.action.action.id !== winner) await expectNothingOf(r, ['idem']);
    expect(await raw(itemKeys(racers[0] as AdmitWriteInput).idem)).toMatchObject({ action_id: winner, revision: 1 });
  });

  it(`${RACERS} concurrent admissions of the same action: exactly one is written; every other is a resubmission naming the stored action`, async () => {
    const input = admission();
    const results = await Promise.allSettled(Array.from({ length: RACERS }, () => admit(input)));
    const { won, lost } = split(results);
    expect(lost).toEqual([]);
    expect(won.filter((o) => o.admitted)).toHaveLength(1);
    for (const o of won) if (!o.admitted) expect(o.existing_action).toMatchObject({ action_id: input.action.action.id, revision: 1 });
    // One first receipt, inside the record: no receipt item at all.
    expect(await raw(itemKeys(input).txn)).toMatchObject({ [GENESIS_RECEIPT_ATTRIBUTE]: { receipt: { status: 'prepared' } } });
    expect(await raw(itemKeys(input).receipt)).toBeUndefined();
    expect(await raw(keys.receipt(TENANT, input.action.action.transaction?.transaction_id as string, 1))).toBeUndefined();
  });
});

describe('Composite settlement', () => {
  it('settles the transaction (with its receipt), the action and the reservation in one TransactWriteItems, with no read-back', async () => {
    const a = actionFixture();
    const { transaction } = await admitted(admission(a));
    const lease = await leaseBoth(a, transaction as TransactionRecord, 'att-1');
    const result: ActionResult = { action_id: a.id, status: 'completed', output: { paid: true } };
    sent.length = 0;
    const out = await settle(settlement(a, lease.txn, lease.action.fence, result));
    expect(sent).toEqual(['TransactWriteItems']);
    expect(out).toMatchObject({ settled: true, transaction: { status: 'committed', revision: lease.txn.revision + 1, receipt_count: 3 } });
    expect(out.settled && out.transaction).toEqual(await table.store.get({ tenant_id: TENANT, transaction_id: lease.txn.transaction_id }));
    expect(await actions.get({ tenant_id: TENANT, action_id: a.id })).toMatchObject({ status: 'completed', result, fence: 1 });
    expect(await idempotency.get({ tenant_id: TENANT, principal_id: PRINCIPAL.id, key: a.idempotency_key as string })).toMatchObject({
      status: 'completed',
      result,
    });
  });

  it('a refused part leaves every item as it was: the stale transaction revision throws the typed lost race, a stale action fence and a foreign reservation are named', async () => {
    const a = actionFixture();
    const { transaction } = await admitted(admission(a));
    const lease = await leaseBoth(a, transaction as TransactionRecord, 'att-1');
    const result: ActionResult = { action_id: a.id, status: 'completed' };
    const before = {
      txn: await raw(keys.transaction(TENANT, lease.txn.transaction_id)),
      action: await raw(keys.action(TENANT, a.id)),
      idem: await raw(itemKeys(admission(a)).idem),
    };
    const unchanged = async () => {
      expect(await raw(keys.transaction(TENANT, lease.txn.transaction_id))).toEqual(before.txn);
      expect(await raw(keys.action(TENANT, a.id))).toEqual(before.action);
      expect(await raw(itemKeys(admission(a)).idem)).toEqual(before.idem);
      expect(await raw(keys.receipt(TENANT, lease.txn.transaction_id, 2))).toBeUndefined();
    };

    const stale = settlement(a, transaction as TransactionRecord, lease.action.fence, result);
    const err = await settle(stale).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAipError(err, 'transaction.state_conflict')).toBe(true);
    expect((err as AipError).details).toMatchObject({ current_status: 'prepared', current_revision: lease.txn.revision, expected_revision: 1 });
    await unchanged();

    const zombieFence = await settle(settlement(a, lease.txn, 7, result));
    expect(zombieFence.settled).toBe(false);
    expect(!zombieFence.settled && zombieFence.refused.action?.code).toBe('action.fence_stale');
    expect(!zombieFence.settled && zombieFence.refused.action?.details).toMatchObject({ current_fence: 1, held_fence: 7 });
    await unchanged();

    const foreign = settlement(a, lease.txn, lease.action.fence, result);
    const notOwner = await settle({
      ...foreign,
      idempotency: { kind: 'complete', input: { ...foreign.idempotency.input, action_id: uid('other'), result: { ...result } } },
    });
    expect(!notOwner.settled && notOwner.refused.idempotency?.code).toBe('idempotency.not_owner');
    expect(!notOwner.settled && notOwner.refused.action).toBeUndefined();
    await unchanged();

    // Without the refused part the same settlement goes through.
    const { idempotency: _skip, ...withoutReservation } = foreign;
    expect(await settle(withoutReservation)).toMatchObject({ settled: true, transaction: { status: 'committed' } });
  });

  it('a zombie and the attempt that took over settle concurrently: the takeover wins, the zombie gets the typed lost race naming the current revision', async () => {
    for (let round = 0; round < 5; round++) {
      const a = actionFixture();
      const { transaction } = await admitted(admission(a));
      const zombie = await leaseBoth(a, transaction as TransactionRecord, 'att-zombie');
      clock.advance(2_000); // the zombie's lease expires
      const takeover = await leaseBoth(a, zombie.txn, 'att-takeover');
      const zombieResult: ActionResult = { action_id: a.id, status: 'completed', output: { by: 'zombie' } };
      const takeoverResult: ActionResult = { action_id: a.id, status: 'completed', output: { by: 'takeover' } };
      const [z, t] = await Promise.allSettled([
        settle(settlement(a, zombie.txn, zombie.action.fence, zombieResult)),
        settle(settlement(a, takeover.txn, takeover.action.fence, takeoverResult)),
      ]);
      expect(t).toMatchObject({ status: 'fulfilled', value: { settled: true } });
      expect(z?.status).toBe('rejected');
      const err = (z as PromiseRejectedResult).reason as AipError;
      expect(err.code).toBe('transaction.state_conflict');
      expect(err.details.current_revision).toBeGreaterThan(zombie.txn.revision);
      expect((await table.store.get({ tenant_id: TENANT, transaction_id: zombie.txn.transaction_id }))?.result).toEqual(takeoverResult);
      expect((await actions.get({ tenant_id: TENANT, action_id: a.id }))?.result).toEqual(takeoverResult);
      expect(await idempotency.get({ tenant_id: TENANT, principal_id: PRINCIPAL.id, key: a.idempotency_key as string })).toMatchObject({
        result: takeoverResult,
        fence: 2,
      });
    }
  });

  it(`${RACERS} concurrent settlements from the same held record: exactly one is written, the others lose the compare-and-set`, async () => {
    const a = actionFixture();
    const { transaction } = await admitted(admission(a));
    const lease = await leaseBoth(a, transaction as TransactionRecord, 'att-1');
    const results = await Promise.allSettled(
      Array.from({ length: RACERS }, (_, i) =>
        settle(settlement(a, lease.txn, lease.action.fence, { action_id: a.id, status: 'completed', output: { racer: i } })),
      ),
    );
    const { won, lost } = split(results);
    expect(won.filter((o) => o.settled)).toHaveLength(1);
    expect(won.filter((o) => !o.settled)).toEqual([]);
    for (const e of lost) expect(isAipError(e, 'transaction.state_conflict')).toBe(true);
    const stored = await table.store.get({ tenant_id: TENANT, transaction_id: lease.txn.transaction_id });
    expect(stored).toMatchObject({ status: 'committed', revision: lease.txn.revision + 1, receipt_count: 3 });
    expect((await actions.get({ tenant_id: TENANT, action_id: a.id }))?.result).toEqual(stored?.result);
  });
});

describe('A transaction write fenced on the action (action.check_fence)', () => {
  it('a checkpoint with the current fence lands; one with an older fence (a newer lease was granted) is action.fence_stale and writes nothing', async () => {
    const a = actionFixture({ transaction: { mode: 'execute', transaction_id: uid('txn') } });
    const { action: created, transaction } = await admitted({
      action: { tenant_id: TENANT, principal: PRINCIPAL, action: a },
      transaction: preparedInput(a.transaction?.transaction_id as string, { action_id: a.id }),
    });
    const txn = transaction as TransactionRecord;
    const first = await actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'att-1', ttl_ms: 1, expected_revision: created.revision });
    clock.advance(10);
    const second = await actions.acquireLease({ tenant_id: TENANT, action_id: a.id, owner: 'att-2', ttl_ms: 1_000, expected_revision: first.revision });
    const checkpoint = (fence: number, op: string) =>
      table.stores.uow.commit([
        {
          kind: 'transaction.checkpoint',
          input: {
            tenant_id: TENANT,
            transaction_id: txn.transaction_id,
            expected_revision: txn.revision,
            provider_operation: { provider: 'p', operation_id: op },
            receipt: nextReceipt(txn, txn.revision + 1, txn.status, 'transaction.provider_operation_checkpointed'),
          },
          held: txn,
        },
        { kind: 'action.check_fence', input: { tenant_id: TENANT, action_id: a.id, fence } },
      ] as const);
    const stale = await checkpoint(first.fence, 'op-zombie');
    expect(stale.committed).toBe(false);
    if (stale.committed) return;
    expect(stale.refused.map((r) => [r.kind, r.error.code])).toEqual([['action.check_fence', 'action.fence_stale']]);
    expect(await table.store.get({ tenant_id: TENANT, transaction_id: txn.transaction_id })).toEqual(txn);
    const current = await checkpoint(second.fence, 'op-1');
    expect(current.committed).toBe(true);
    expect(await table.store.get({ tenant_id: TENANT, transaction_id: txn.transaction_id })).toMatchObject({
      revision: txn.revision + 1,
      provider_operation: { operation_id: 'op-1' },
    });
  });
});

describe('Composite attempt start', () => {
  function start(a: Action, held: { action: ActionRecord; txn: TransactionRecord }, owner: string, withAdopt = true) {
    const fence = held.action.fence + 1;
    return {
      action: { input: { tenant_id: TENANT, action_id: a.id, owner, ttl_ms: 1_000, expected_revision: held.action.revision }, held: held.action },
      transaction: {
        held: held.txn,
        input: {
          tenant_id: TENANT,
          transaction_id: held.txn.transaction_id,
          expected_revision: held.txn.revision,
          owner,
          ttl_ms: 1_000,
          data: { attempt_action_id: a.id, attempt_fence: fence },
          receipt: nextReceipt(held.txn, held.txn.revision + 1, held.txn.status, 'transaction.attempt_started'),
        },
      },
      ...(withAdopt ? { idempotency: { tenant_id: TENANT, principal_id: PRINCIPAL.id, key: a.idempotency_key as string, action_id: a.id, fence } } : {}),
    };
  }

  it('leases the action and the transaction (with its receipt) and adopts the reservation in one TransactWriteItems; the returned records are the stored ones', async () => {
    const a = actionFixture();
    const out1 = await admitted(admission(a));
    sent.length = 0;
    const out = await startAttempt(start(a, { action: out1.action, txn: out1.transaction as TransactionRecord }, 'att-1'));
    expect(sent).toEqual(['TransactWriteItems']);
    if (!out.started) throw new Error('expected the attempt to start');
    expect(out.action).toEqual(await actions.get({ tenant_id: TENANT, action_id: a.id }));
    expect(out.action).toMatchObject({ status: 'running', fence: 1, attempt: 1, lease_owner: 'att-1', revision: 2 });
    expect(out.transaction).toEqual(await table.store.get({ tenant_id: TENANT, transaction_id: out1.transaction?.transaction_id as string }));
    expect(out.transaction).toMatchObject({ status: 'prepared', revision: 2, fence: 1, lease_owner: 'att-1', receipt_count: 2 });
    expect(await idempotency.get({ tenant_id: TENANT, principal_id: PRINCIPAL.id, key: a.idempotency_key as string })).toMatchObject({
      fence: 1,
      status: 'in_flight',
    });
  });

  it('a refused part writes nothing: a live transaction lease and a foreign reservation are named with their typed errors', async () => {
    const a = actionFixture();
    const out1 = await admitted(admission(a));
    const txn = out1.transaction as TransactionRecord;
    const other = await table.store.acquireLease({
      tenant_id: TENANT,
      transaction_id: txn.transaction_id,
      expected_revision: 1,
      owner: 'att-other',
      ttl_ms: 60_000,
      receipt: nextReceipt(txn, 2, 'prepared', 'transaction.attempt_started'),
    });
    const idemKey = itemKeys(admission(a)).idem;
    const before = { action: await raw(keys.action(TENANT, a.id)), txn: await raw(keys.transaction(TENANT, txn.transaction_id)), idem: await raw(idemKey) };
    const held = await startAttempt(start(a, { action: out1.action, txn: other }, 'att-1'));
    expect(held.started).toBe(false);
    expect(!held.started && held.refused.transaction?.code).toBe('transaction.lease_held');
    expect(!held.started && held.refused.action).toBeUndefined();
    const foreign = start(a, { action: out1.action, txn: other }, 'att-other');
    const adopt = foreign.idempotency as NonNullable<typeof foreign.idempotency>;
    const notOwner = await startAttempt({ ...foreign, idempotency: { ...adopt, action_id: uid('someone-else') } });
    expect(!notOwner.started && notOwner.refused.idempotency?.code).toBe('idempotency.not_owner');
    expect(await raw(keys.action(TENANT, a.id))).toEqual(before.action);
    expect(await raw(keys.transaction(TENANT, txn.transaction_id))).toEqual(before.txn);
    expect(await raw(idemKey)).toEqual(before.idem);
    expect(await raw(keys.receipt(TENANT, txn.transaction_id, 2))).toBeUndefined();
  });

  it(`${RACERS} concurrent starts of the same action from the same read: exactly one attempt holds the leases`, async () => {
    const a = actionFixture();
    const out1 = await admitted(admission(a));
    const results = await Promise.allSettled(
      Array.from({ length: RACERS }, (_, i) => startAttempt(start(a, { action: out1.action, txn: out1.transaction as TransactionRecord }, `att-${i}`))),
    );
    const { won, lost } = split(results);
    const started = won.filter((o) => o.started);
    expect(started).toHaveLength(1);
    for (const o of won)
      if (!o.started) expect(o.refused.action?.code ?? o.refused.transaction?.code).toMatch(/^(action|transaction)\.(state_conflict|lease_held)$/);
    for (const e of lost) expect(isAipError(e, 'transaction.state_conflict')).toBe(true);
    const owner = started[0]?.started ? started[0].action.lease_owner : '';
    expect(await actions.get({ tenant_id: TENANT, action_id: a.id })).toMatchObject({ fence: 1, lease_owner: owner });
    expect(await table.store.get({ tenant_id: TENANT, transaction_id: out1.transaction?.transaction_id as string })).toMatchObject({
      fence: 1,
      lease_owner: owner,
      receipt_count: 2,
    });
  });
});

describe('Attempt start pinning the route on the action (a first attempt)', () => {
  function route(a: Action, overrides: Partial<RouteAssignment> = {}): RouteAssignment {
    return {
      tenant_id: TENANT,
      action_id: a.id,
      capability_id: a.capability_id,
      verified_tenant: TENANT,
      connector_id: 'payments',
      connector_instance: 'local',
      replica: 'replica-a',
      endpoint: 'in-process',
      version: '1.0.0',
      manifest_hash: sha256Hex('manifest'),
      policy_revision: '1',
      credential_revision: '0',
      health_revision: '0',
      admission_reservation: 'att-1',
      fence_token: 1,
      created_at: clock.iso(),
      ...overrides,
    };
  }

  function firstStart(a: Action, held: { action: ActionRecord; txn: TransactionRecord }, owner: string, pinned: RouteAssignment): StartWriteInput {
    const fence = held.action.fence + 1;
    return {
      action: {
        input: { tenant_id: TENANT, action_id: a.id, owner, ttl_ms: 1_000, expected_revision: held.action.revision, route: pinned },
        held: held.action,
      },
      transaction: {
        held: held.txn,
        input: {
          tenant_id: TENANT,
          transaction_id: held.txn.transaction_id,
          expected_revision: held.txn.revision,
          owner,
          ttl_ms: 1_000,
          data: { attempt_action_id: a.id, attempt_fence: fence },
          receipt: nextReceipt(held.txn, held.txn.revision + 1, held.txn.status, 'transaction.attempt_started'),
        },
      },
      idempotency: { tenant_id: TENANT, principal_id: PRINCIPAL.id, key: a.idempotency_key as string, action_id: a.id, fence },
    };
  }

  const routeKey = (a: Action) => keys.routeAssignment(TENANT, a.id);

  it('the route is an attribute the action lease sets: the route, both leases and the adoption land together, and no ROUTE item is written', async () => {
    const a = actionFixture();
    const out1 = await admitted(admission(a));
    const pinned = route(a);
    sent.length = 0;
    const out = await startAttempt(firstStart(a, { action: out1.action, txn: out1.transaction as TransactionRecord }, 'att-1', pinned));
    expect(sent).toEqual(['TransactWriteItems']);
    if (!out.started) throw new Error('expected the attempt to start');
    expect(out.action.route).toEqual(pinned);
    expect(await table.stores.routes.get({ tenant_id: TENANT, action_id: a.id })).toEqual(pinned);
    expect(await raw(routeKey(a))).toBeUndefined();
    expect(out.action).toEqual(await actions.get({ tenant_id: TENANT, action_id: a.id }));
    expect(out.transaction).toEqual(await table.store.get({ tenant_id: TENANT, transaction_id: out1.transaction?.transaction_id as string }));
    expect(await idempotency.get({ tenant_id: TENANT, principal_id: PRINCIPAL.id, key: a.idempotency_key as string })).toMatchObject({ fence: 1 });
  });

  it("a route is never overwritten: a lease that would pin one over the held record's is refused before anything is sent, and one at a moved revision is refused by the revision", async () => {
    const a = actionFixture();
    const out1 = await admitted(admission(a));
    const txn = out1.transaction as TransactionRecord;
    const first = await startAttempt(firstStart(a, { action: out1.action, txn }, 'att-1', route(a)));
    if (!first.started) throw new Error('expected the attempt to start');
    sent.length = 0;
    const err = await table.stores.uow
      .commit([
        {
          kind: 'action.lease',
          input: {
            tenant_id: TENANT,
            action_id: a.id,
            owner: 'att-2',
            ttl_ms: 1_000,
            expected_revision: first.action.revision,
            route: route(a, { replica: 'replica-b' }),
          },
          held: first.action,
        },
      ])
      .catch((e: unknown) => e);
    expect(isAipError(err, 'action.invalid_record')).toBe(true);
    expect(sent).toEqual([]);
    // Conditioned on the revision read before the pin: refused, the first route stays.
    const stale = await startAttempt(firstStart(a, { action: out1.action, txn }, 'att-2', route(a, { replica: 'replica-b' }))).catch((e: unknown) => e);
    expect((stale as { started?: boolean }).started).not.toBe(true);
    expect((await actions.get({ tenant_id: TENANT, action_id: a.id }))?.route).toEqual(route(a));
  });

  it("a lease without the held record names the action's capability: the route stores none of its own, reads it back, and a wrong one is refused", async () => {
    const a = actionFixture();
    const out1 = await admitted(admission(a));
    const lease = (owner: string, action_capability_id: string) => ({
      kind: 'action.lease' as const,
      input: { tenant_id: TENANT, action_id: a.id, owner, ttl_ms: 1_000, expected_revision: out1.action.revision, route: route(a), action_capability_id },
    });
    const wrong = await table.stores.uow.commit([lease('att-1', 'other.capability')]);
    expect(wrong.committed).toBe(false);
    expect((await raw(keys.action(TENANT, a.id)))?.route).toBeUndefined();
    const out = await table.stores.uow.commit([lease('att-2', a.capability_id)]);
    if (!out.committed) throw new Error('expected the lease to land');
    const stored = (await raw(keys.action(TENANT, a.id)))?.route as Record<string, unknown>;
    expect(stored).not.toHaveProperty('capability_id');
    expect(stored).not.toHaveProperty('verified_tenant');
    expect((await actions.get({ tenant_id: TENANT, action_id: a.id }))?.route).toEqual(route(a));
    expect(await table.stores.routes.get({ tenant_id: TENANT, action_id: a.id })).toEqual(route(a));
  });

  it('a malformed assignment is route.invalid_assignment before anything is sent', async () => {
    const a = actionFixture();
    const out1 = await admitted(admission(a));
    sent.length = 0;
    const err = await startAttempt(
      firstStart(a, { action: out1.action, txn: out1.transaction as TransactionRecord }, 'att-1', route(a, { manifest_hash: 'nope' })),
    ).catch((e: unknown) => e);
    expect(isAipError(err, 'route.invalid_assignment')).toBe(true);
    expect(sent).toEqual([]);
  });

  it(`${RACERS} concurrent first attempts of the same action, each pinning its own replica: exactly one route and one lease, both the winner's`, async () => {
    const a = actionFixture();
    const out1 = await admitted(admission(a));
    const held = { action: out1.action, txn: out1.transaction as TransactionRecord };
    const results = await Promise.allSettled(
      Array.from({ length: RACERS }, (_, i) =>
        startAttempt(firstStart(a, held, `att-${i}`, route(a, { replica: `replica-${i}`, admission_reservation: `att-${i}` }))),
      ),
    );
    const { won, lost } = split(results);
    const started = won.filter((o) => o.started);
    expect(started).toHaveLength(1);
    const winner = started[0];
    if (winner === undefined || !winner.started) throw new Error('expected one start');
    const owner = winner.action.lease_owner as string;
    expect(winner.action.route?.admission_reservation).toBe(owner);
    for (const o of won) {
      if (o.started) continue;
      // Every loser is refused by a part the winner wrote: the lease it holds or the revision it moved (with its route).
      expect(o.refused.action ?? o.refused.transaction).toBeDefined();
    }
    for (const e of lost) expect(isAipError(e, 'transaction.state_conflict')).toBe(true);
    expect(await table.stores.routes.get({ tenant_id: TENANT, action_id: a.id })).toMatchObject({
      replica: `replica-${owner.slice('att-'.length)}`,
      admission_reservation: owner,
    });
    const partition = await table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': keys.action(TENANT, a.id).PK },
        ConsistentRead: true,
      }),
    );
    expect(partition.Items?.map((i) => i.SK).sort()).toEqual(['ACTION']);
    expect(await actions.get({ tenant_id: TENANT, action_id: a.id })).toMatchObject({ fence: 1, attempt: 1, lease_owner: owner });
    expect(await table.store.get({ tenant_id: TENANT, transaction_id: held.txn.transaction_id })).toMatchObject({
      fence: 1,
      lease_owner: owner,
      receipt_count: 2,
    });
  });
});

describe('loadAttempt: the action and its transaction in one strongly consistent read', () => {
  it('returns what the two stores’ own reads return, in one BatchGetItem', async () => {
    const a = actionFixture();
    await admitted(admission(a));
    const txnId = a.transaction?.transaction_id as string;
    const from = sent.length;
    const read = await table.stores.attempts.loadAttempt({ tenant_id: TENANT, action_id: a.id, transaction_id: txnId });
    expect(sent.slice(from)).toEqual(['BatchGetItem']);
    expect(read.action).toEqual(await actions.get({ tenant_id: TENANT, action_id: a.id }));
    expect(read.transaction).toEqual({ transaction_id: txnId, record: await table.store.get({ tenant_id: TENANT, transaction_id: txnId }) });
  });

  it('absent items read as absent; without a transaction ID only the action is read', async () => {
    const missing = await table.stores.attempts.loadAttempt({ tenant_id: TENANT, action_id: uid('none'), transaction_id: uid('txn-none') });
    expect(missing.action).toBeUndefined();
    expect(missing.transaction).toEqual({ transaction_id: expect.any(String), record: undefined });
    const a = actionFixture();
    await admitted(admission(a));
    const alone = await table.stores.attempts.loadAttempt({ tenant_id: TENANT, action_id: a.id });
    expect(alone.action?.action_id).toBe(a.id);
    expect(alone.transaction).toBeUndefined();
  });

  it('IDs the stores refuse: the action store’s error; a transaction ID get would refuse is left to get', async () => {
    const badAction = await table.stores.attempts.loadAttempt({ tenant_id: TENANT, action_id: 'not an id' }).then(
      () => undefined,
      (err: unknown) => (err instanceof AipError ? err.code : 'other'),
    );
    const viaGet = await actions.get({ tenant_id: TENANT, action_id: 'not an id' }).then(
      () => undefined,
      (err: unknown) => (err instanceof AipError ? err.code : 'other'),
    );
    expect(badAction).toBe(viaGet);
    expect(badAction).toBeDefined();
    const a = actionFixture();
    await admitted(admission(a));
    const read = await table.stores.attempts.loadAttempt({ tenant_id: TENANT, action_id: a.id, transaction_id: 'not an id' });
    expect(read.action?.action_id).toBe(a.id);
    expect(read.transaction).toBeUndefined();
  });
});
