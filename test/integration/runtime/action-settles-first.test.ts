/**
 * The action settles first (docs/table-design.md, "The action settles first"): a definitive settlement writes the
 * action alone (its result is the durable answer), then the record with its receipt. A crash between the two
 * (`after_action_settled_before_record`) leaves a terminal action whose record is still in its attempt status; every
 * path that meets it finishes the record from the action, writing what the uncrashed attempt writes:
 *
 * - the redelivered message (the worker finds the action terminal);
 * - the sweeper's re-invoke of the stalled record (the message itself lost);
 * - a resubmission of the same action;
 * - a compensation of the action (its target is judged on the finished record).
 *
 * Readers in the window (the view, the wait's poll) show the record as its settlement will write it. Two finishers
 * racing each other both answer; the record is settled once. Against DynamoDB Local and fauxqs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionRecord } from '../../../lib/ports/action-store.js';
import type { TransactionRecord } from '../../../lib/ports/transaction-store.js';
import type { Receipt } from '../../../packages/connector-sdk/src/protocol/index.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
/** Past the attempt lease (capability timeout + margin) and the stall threshold. */
const STEP_MS = 120_000;

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-first', config: { stall_after_ms: 60_000 } });
});
afterAll(async () => h.destroy());

const record = async (tx: string) => (await h.table.store.get({ tenant_id: TENANT, transaction_id: tx })) as TransactionRecord;
const action = async (a: string) => (await h.stores.actions.get({ tenant_id: TENANT, action_id: a })) as ActionRecord;
const receipts = async (tx: string) => (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items.map((r) => r.receipt);

function body(a: string, tx: string, key: string) {
  return transfer(a, { transaction: { mode: 'execute', transaction_id: tx }, idempotency_key: key });
}

/** Submits an execute; returns its IDs. */
async function submit() {
  const ids = { a: uid('a'), tx: uid('tx'), key: uid('key') };
  expect((await h.runtime.submit(caller(), body(ids.a, ids.tx, ids.key))).disposition).toBe('accepted');
  return ids;
}

/**
 * What a settled execute leaves, with its run's own IDs, times and attempt ID taken out: the record's durable fields,
 * the action's, and each receipt's status, event and evidence.
 */
async function settledShape(a: string, tx: string) {
  const [rec, act, chain] = [await record(tx), await action(a), await receipts(tx)];
  const attempt = (rec.data.last_attempt as { attempt_id?: string } | undefined)?.attempt_id ?? act.route?.admission_reservation;
  const scrub = (v: unknown): unknown =>
    JSON.parse(
      JSON.stringify(v ?? null)
        .replaceAll(a, '<action>')
        .replaceAll(tx, '<tx>')
        .replaceAll(String(attempt), '<attempt>'),
    );
  return {
    record: scrub({
      status: rec.status,
      revision: rec.revision,
      receipt_count: rec.receipt_count,
      result: rec.result,
      result_ref: rec.result_ref,
      error: rec.error,
      provider_operation: rec.provider_operation === undefined ? undefined : { provider: rec.provider_operation.provider },
      last_attempt: rec.data.last_attempt,
      lease_owner: rec.lease_owner,
    }),
    action: scrub({
      status: act.status,
      revision: act.revision,
      fence: act.fence,
      result: { ...act.result, completed_at: '<t>', ...(isObject(act.result?.output) ? { output: { ...act.result.output, transfer_id: '<op>' } } : {}) },
    }),
    receipts: chain.map((r: Receipt) => scrub({ status: r.status, event: r.event, evidence: withoutOperationId(r.evidence) })),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function withoutOperationId(evidence: unknown): unknown {
  if (evidence === null || typeof evidence !== 'object') return evidence;
  const { operation_id: _op, ...rest } = evidence as Record<string, unknown>;
  return rest;
}

/** Crashes the next attempt between its two settlement writes: the action terminal, the record still prepared. */
async function crashBetween() {
  h.clock.advance(STEP_MS);
  await h.drain(); // nothing of an earlier test left queued
  const ids = await submit();
  h.crash.arm('after_action_settled_before_record');
  expect(await h.drain()).toEqual([]);
  expect(h.crash.fired.at(-1)).toBe('after_action_settled_before_record');
  expect((await action(ids.a)).status).toBe('completed');
  expect((await record(ids.tx)).status).toBe('prepared');
  return ids;
}

/** The crashed delivery's message, taken off the queue (lost, as to a dead-letter queue). */
async function loseTheMessage() {
  h.clock.advance(STEP_MS);
  const msgs = await h.receiveInvokes();
  expect(msgs.map((m) => m.message.action_id).length).toBeGreaterThanOrEqual(1);
}

let reference: Awaited<ReturnType<typeof settledShape>>;

describe('the action settles first, then the record', () => {
  beforeAll(async () => {
    const { a, tx } = await submit();
    h.crash.countCommits();
    expect((await h.drain()).map((o) => o.disposition)).toEqual(['settled']);
    // The attempt's units of work: the lease, then the action alone, then the record with its receipt.
    expect(h.crash.commits.slice(-2)).toEqual([['action.settle'], ['transaction.settle']]);
    reference = await settledShape(a, tx);
    expect(reference.record).toMatchObject({ status: 'committed', result_ref: '<action>' });
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('the settled action carries what its record settlement needs: the attempt that settled it, named by the route it pinned', async () => {
    const { a, tx } = await submit();
    await h.drain();
    const [act, rec] = [await action(a), await record(tx)];
    // The attempt that pinned the route with this fence settled it: the route names it (admission_reservation).
    expect(act.settlement?.attempt_id).toBe(true);
    expect(act.route).toMatchObject({ fence_token: act.fence, admission_reservation: expect.stringMatching(/^att-/) });
    const attempt = act.route?.admission_reservation;
    expect(rec.data.last_attempt).toMatchObject({ action_id: a, attempt_id: attempt, fence: act.fence, outcome: 'committed' });
    expect((await receipts(tx)).at(-1)?.evidence).toMatchObject({ action_id: a, attempt_id: attempt, fence: act.fence });
  });

  it('readers in the window: the view and the wait show the record as its settlement will write it', async () => {
    const { a, tx } = await crashBetween();
    const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: tx }, { result: true, receipts: true });
    expect(view.status).toBe('committed');
    expect(view.action_result).toMatchObject({ status: 'completed', output: { amount: 100 } });
    // The chain is the chain as stored: the settlement's receipt is written with the record.
    expect(view.receipts?.map((r) => r.status)).not.toContain('committed');
    const polled = await h.runtime.pollAction(caller(), TENANT, a, new Set(['completed', 'failed', 'cancelled'] as const));
    expect(polled.state?.transaction?.status).toBe('committed');
    expect((await h.runtime.getAction(caller(), TENANT, a)).transaction?.status).toBe('committed');
    // Reading wrote nothing.
    expect((await record(tx)).status).toBe('prepared');
    await h.drain(); // leave nothing queued for the next test
  });

  it('recovered by the redelivered message: the record, its receipts and the action are what the uncrashed attempt writes', async () => {
    const { a, tx } = await crashBetween();
    h.clock.advance(STEP_MS);
    expect(await h.drain()).toEqual([expect.objectContaining({ disposition: 'already_settled', transaction_status: 'committed' })]);
    expect(await settledShape(a, tx)).toEqual(reference);
    expect((await h.verifyChain(tx)).valid).toBe(true);
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it("recovered by the sweeper's re-invoke of the stalled record when the message is lost", async () => {
    const { a, tx } = await crashBetween();
    await loseTheMessage();
    expect(await h.drain()).toEqual([]);
    expect((await h.runtime.sweep(h.clock.now())).enqueued).toBeGreaterThanOrEqual(1);
    expect(await h.drain()).toEqual(expect.arrayContaining([expect.objectContaining({ action_id: a, disposition: 'already_settled' })]));
    expect(await settledShape(a, tx)).toEqual(reference);
    expect((await h.verifyChain(tx)).valid).toBe(true);
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('recovered by a resubmission of the same action: answered as a replay of the settled transaction', async () => {
    const { a, tx, key } = await crashBetween();
    await loseTheMessage();
    const again = await h.runtime.submit(caller(), body(a, tx, key));
    expect(again.disposition).toBe('replayed');
    expect(again.action_result).toMatchObject({ status: 'completed', output: { amount: 100 } });
    expect(await settledShape(a, tx)).toEqual(reference);
    expect((await h.verifyChain(tx)).valid).toBe(true);
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('recovered by a compensation of the action: the target is finished, then judged committed', async () => {
    const { a, tx } = await crashBetween();
    await loseTheMessage();
    const refund = await h.runtime.submit(caller(), transfer(uid('k'), { transaction: { mode: 'compensate', compensation_for: a } }));
    expect(refund.disposition).toBe('accepted');
    expect(await settledShape(a, tx)).toEqual(reference);
    expect((await h.verifyChain(tx)).valid).toBe(true);
    await h.drain();
  });

  it('two finishers racing (the redelivery and a resubmission): both answer, the record is settled once', async () => {
    const { a, tx, key } = await crashBetween();
    h.clock.advance(STEP_MS);
    const [msg] = await h.receiveInvokes();
    const [attempt, resubmitted] = await Promise.all([h.runtime.runAttempt(msg!.message), h.runtime.submit(caller(), body(a, tx, key))]);
    expect(attempt).toMatchObject({ disposition: 'already_settled', action_id: a });
    expect(resubmitted).toMatchObject({ disposition: 'replayed', action_result: { status: 'completed' } });
    expect(await settledShape(a, tx)).toEqual(reference);
    expect((await receipts(tx)).filter((r) => r.status === 'committed')).toHaveLength(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('a failed outcome settles the same way and recovers to the same failed record', async () => {
    const failing = (ids: { a: string; tx: string; key: string }) =>
      transfer(ids.a, { transaction: { mode: 'execute', transaction_id: ids.tx }, idempotency_key: ids.key }, { scenario: 'fail' });
    const first = { a: uid('a'), tx: uid('tx'), key: uid('key') };
    await h.runtime.submit(caller(), failing(first));
    await h.drain();
    const expected = await settledShape(first.a, first.tx);
    expect(expected.record).toMatchObject({ status: 'failed' });

    const crashed = { a: uid('a'), tx: uid('tx'), key: uid('key') };
    await h.runtime.submit(caller(), failing(crashed));
    h.crash.arm('after_action_settled_before_record');
    expect(await h.drain()).toEqual([]);
    expect((await action(crashed.a)).status).toBe('failed');
    expect((await record(crashed.tx)).status).toBe('prepared');
    h.clock.advance(STEP_MS);
    await h.drain();
    expect(await settledShape(crashed.a, crashed.tx)).toEqual(expected);
    expect((await h.verifyChain(crashed.tx)).valid).toBe(true);
  });
});
