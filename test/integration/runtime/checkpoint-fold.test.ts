/**
 * The provider-operation checkpoint folded into the settlement
 * (docs/bench/analysis.md, "Writes and capacity per execute"). The connector
 * page asks for the transaction checkpoint when "a provider operation ID
 * exists, before awaiting a commit response that may be lost". A connector
 * that already holds the provider's final answer (the operation ID is in the
 * body it has read, and it returns next) publishes it with
 * `checkpoint_with_answer`: the runtime writes it in the settlement write, not
 * in a write of its own. A connector that still has a wait ahead (a pending
 * operation it polls) gets the durable checkpoint first, as before.
 *
 * The real Runtime on DynamoDB Local and fauxqs, the payments connector (the
 * declarative HTTP connector) against the payments simulator. DynamoDB
 * requests are recorded by SDK middleware on the test client, simulator
 * events by its listener, both in one sequence, so "before" is the order the
 * requests completed in.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startPaymentsSimulator, type PaymentsSimulator, type SimEvent } from '../../../dev/payments-simulator/server.js';
import { EnvCredentialProvider } from '../../../packages/connector-sdk/src/credentials/env-provider.js';
import type { DefinedConnector } from '../../../packages/connector-sdk/src/define.js';
import { createPaymentsConnector, DEFAULT_PAYMENTS_CREDENTIAL_HANDLE } from '../../../lib/connectors/reference/payments.js';
import type { InvokeMessage } from '../../../lib/ports/messages.js';
import type { AttemptOutcome } from '../../../lib/runtime/types.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TENANT, caller, createHarness, lostTheRace, type Harness } from './support.js';

const KEY = 'sk_test_checkpoint_fold';
const KEY_VARIABLE = 'AIP_TEST_PAYMENTS_KEY';
/** Past any attempt lease (payments timeout 10 s + the lease margin). */
const PAST_LEASE = 10 * 60_000;

let h: Harness;
let sim: PaymentsSimulator;
let seq = 0;
/** DynamoDB requests of the test client: command, `<verb>:<SK kind>` per TransactWriteItems item (and of an UpdateItem), completion order. */
const requests: { seq: number; command: string; items: string[]; ok: boolean }[] = [];
const events: { seq: number; event: SimEvent }[] = [];

function kindOf(key: Record<string, unknown> | undefined): string {
  const sk = typeof key?.SK === 'string' ? key.SK : '?';
  return sk.startsWith('RCPT#') ? 'RCPT' : sk;
}

beforeAll(async () => {
  sim = await startPaymentsSimulator({ port: 0, host: '127.0.0.1', apiKeys: [KEY], seed: 7 });
  sim.onEvent((event) => events.push({ seq: ++seq, event }));
  const credentials = new EnvCredentialProvider({
    connector_id: 'payments',
    references: [{ connector_id: 'payments', handle: DEFAULT_PAYMENTS_CREDENTIAL_HANDLE, tenant_id: TENANT, env: KEY_VARIABLE }],
    env: { [KEY_VARIABLE]: KEY },
  });
  // pollIntervalMs 1: the pending case polls without idling (the test resolves the operation on the first poll).
  const connector = createPaymentsConnector({ credentials, baseUrl: sim.url, pollIntervalMs: 1 });
  h = await createHarness({
    connectors: [{ connector: connector as unknown as DefinedConnector, credential_handle: () => DEFAULT_PAYMENTS_CREDENTIAL_HANDLE }],
    prefix: 'rt-ckpt-fold',
  });
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
      // A single-item update names its item too.
      if (command === 'UpdateItem') items.push(`Update:${kindOf(input.Key)}`);
      try {
        const out = await next(args);
        requests.push({ seq: ++seq, command, items, ok: true });
        return out;
      } catch (err) {
        requests.push({ seq: ++seq, command, items, ok: false });
        throw err;
      }
    },
    { step: 'initialize', name: 'checkpointFoldCounter' },
  );
});
afterAll(async () => {
  await h?.destroy();
  await sim?.stop();
});
beforeEach(() => {
  requests.length = 0;
  sim.setFaults([]);
});

let amounts = 4_100;
function chargeAction(id: string, key: string) {
  return {
    id,
    capability_id: 'payments.charge',
    input: { amount: (amounts += 1), currency: 'eur', customer: 'cus_fold' },
    transaction: { mode: 'execute' as const, transaction_id: uid('tx') },
    idempotency_key: key,
  };
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);
const recordOf = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const receiptsOf = async (tx: string) => (await h.table.store.listReceipts({ tenant_id: TENANT, transaction_id: tx, limit: 100 })).items.map((r) => r.receipt);
const CHECKPOINT_EVENT = 'transaction.provider_operation_checkpointed';
const drainFor = async (a: string): Promise<AttemptOutcome | undefined> => (await h.drain()).find((o) => o.action_id === a);
const chargeRequests = (from: number) =>
  events.filter((e) => e.seq > from && e.event.type === 'response' && e.event.method === 'POST' && e.event.path === '/v1/charges');

describe('A charge the provider answers at once', () => {
  it('the operation ID goes into the settlement writes: admission, attempt start (with the route) and the settlement (action, then record) are the only writes of the execute', async () => {
    const a = uid('a');
    const action = chargeAction(a, uid('key'));
    const ledger = sim.ledger().length;
    const sub = await h.runtime.submit(caller(), action);
    expect(sub.disposition).toBe('accepted');
    expect(await drainFor(a)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });

    const writes = requests.filter((r) => WRITES.has(r.command));
    expect(writes.map((r) => [r.command, r.ok])).toEqual([
      ['TransactWriteItems', true],
      ['UpdateItem', true],
      ['UpdateItem', true],
      ['UpdateItem', true],
    ]);
    // admission; the attempt start (the action lease alone, pinning the route); settlement: the action alone (it
    // carries the operation for its record's settlement), then the record with its receipt inside, one UpdateItem
    // (docs/table-design.md, "Receipts inside the record"; the reservation as admitted outlives the retention counted
    // from a prompt settlement, so it is not rewritten).
    expect(writes[3]?.items).toEqual(['Update:TXN']);

    const effect = sim.ledger().slice(ledger);
    expect(effect).toHaveLength(1);
    const record = await recordOf(action.transaction.transaction_id);
    expect(record).toMatchObject({ status: 'committed', provider_operation: { provider: 'payments-simulator', operation_id: effect[0]?.operation_id } });
    const receipts = await receiptsOf(action.transaction.transaction_id);
    expect(receipts.map((r) => r.event)).not.toContain(CHECKPOINT_EVENT);
    // The settled receipt names the operation it recorded.
    expect(receipts.at(-1)).toMatchObject({ status: 'committed', evidence: { provider: 'payments-simulator', operation_id: effect[0]?.operation_id } });
    expect((await h.verifyChain(action.transaction.transaction_id)).valid).toBe(true);
  });

  it('a declined charge (final 402 naming the operation) settles failed with the operation in the same write', async () => {
    const a = uid('a');
    const action = chargeAction(a, uid('key'));
    sim.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'decline', code: 'insufficient_funds' }, times: 1 }]);
    await h.runtime.submit(caller(), action);
    expect(await drainFor(a)).toMatchObject({ disposition: 'settled', transaction_status: 'failed' });
    // Admission, attempt start, the action's settlement, the record's.
    expect(requests.filter((r) => WRITES.has(r.command))).toHaveLength(4);
    const record = await recordOf(action.transaction.transaction_id);
    expect(record?.provider_operation?.operation_id).toMatch(/^op_/);
    expect((await receiptsOf(action.transaction.transaction_id)).map((r) => r.event)).not.toContain(CHECKPOINT_EVENT);
  });
});

describe('A wait that can be lost keeps the durable checkpoint before it', () => {
  it('a pending charge: the operation is checkpointed in its own write before the first poll, then the poll answers', async () => {
    const a = uid('a');
    const action = chargeAction(a, uid('key'));
    sim.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'pending' }, times: 1 }]);
    const from = seq;
    // The first poll resolves the operation: the next one finds it succeeded.
    const off = sim.onEvent((e) => {
      if (e.type !== 'response' || e.method !== 'GET' || !e.path.startsWith('/v1/operations/op_')) return;
      const op = e.path.slice('/v1/operations/'.length);
      if (sim.operation(op)?.status === 'pending') sim.resolveOperation(op, 'succeeded');
    });
    try {
      await h.runtime.submit(caller(), action);
      expect(await drainFor(a)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
    } finally {
      off();
    }
    // The checkpoint checks the attempt's fence on the action in the same atomic write (its receipt inside the record).
    const checkpoint = requests.find((r) => r.command === 'TransactWriteItems' && r.items.join() === 'Update:TXN,ConditionCheck:ACTION');
    expect(checkpoint).toMatchObject({ ok: true });
    const polls = events.filter(
      (e) => e.seq > from && e.event.type === 'response' && e.event.method === 'GET' && e.event.path.startsWith('/v1/operations/op_'),
    );
    expect(polls.length).toBeGreaterThanOrEqual(1);
    // Durable before the connector sent its first poll.
    expect(checkpoint?.seq).toBeLessThan(polls[0]?.seq as number);
    // Admission, attempt start, the checkpoint, the action's settlement, the record's.
    expect(requests.filter((r) => WRITES.has(r.command))).toHaveLength(5);
    const receipts = await receiptsOf(action.transaction.transaction_id);
    expect(receipts.map((r) => r.event)).toContain(CHECKPOINT_EVENT);
    expect(await recordOf(action.transaction.transaction_id)).toMatchObject({
      status: 'committed',
      provider_operation: { operation_id: expect.stringMatching(/^op_/) },
    });
  });
});

describe('Crashes around the folded checkpoint', () => {
  for (const point of ['after_provider_accept_before_checkpoint', 'after_checkpoint_before_response'] as const) {
    it(`${point}: nothing of the attempt after its start is durable; the redelivery re-invokes under the same key and settles the one charge with its operation`, async () => {
      const a = uid('a');
      const key = uid('key');
      const action = chargeAction(a, key);
      const ledger = sim.ledger().length;
      const from = seq;
      await h.runtime.submit(caller(), action);
      h.crash.arm(point);
      await h.drain();
      expect(h.crash.fired).toContain(point);
      // The crash took the held reference with it: the record is as the admission left it (the attempt start wrote
      // only the action's lease).
      const crashed = await recordOf(action.transaction.transaction_id);
      expect(crashed).toMatchObject({ status: 'prepared', revision: 1 });
      expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: a })).toMatchObject({ status: 'running', fence: 1 });
      expect(crashed?.provider_operation).toBeUndefined();
      h.clock.advance(PAST_LEASE);
      expect(await drainFor(a)).toMatchObject({ disposition: 'settled', transaction_status: 'committed' });
      const effects = sim.ledger().slice(ledger);
      expect(effects).toHaveLength(1);
      // Two charge requests under the one key: the provider replayed the charge it had made.
      const charges = chargeRequests(from);
      expect(charges).toHaveLength(2);
      expect(new Set(charges.map((c) => (c.event as { idempotency_key?: string }).idempotency_key)).size).toBe(1);
      expect(await recordOf(action.transaction.transaction_id)).toMatchObject({
        status: 'committed',
        provider_operation: { operation_id: effects[0]?.operation_id },
      });
      expect((await h.verifyChain(action.transaction.transaction_id)).valid).toBe(true);
      h.crash.disarm();
    });
  }
});

describe('Concurrent deliveries', () => {
  it('10 concurrent attempts of one message: one charge, one settlement carrying its operation', async () => {
    for (let round = 0; round < 2; round++) {
      const a = uid('a');
      const action = chargeAction(a, uid('key'));
      const ledger = sim.ledger().length;
      await h.runtime.submit(caller(), action);
      const message = (await h.receiveInvokes()).find((m) => m.message.action_id === a)?.message as InvokeMessage;
      expect(message).toBeDefined();
      const results = await Promise.allSettled(Array.from({ length: 10 }, () => h.runtime.runAttempt(message)));
      const settled = results.flatMap((r) => (r.status === 'fulfilled' && r.value.disposition === 'settled' ? [r.value] : []));
      expect(settled).toHaveLength(1);
      for (const r of results) {
        if (r.status === 'rejected') expect(String((r.reason as { code?: string }).code)).toBe('transaction.state_conflict');
        else if (r.value.disposition !== 'settled') expect(r.value).toSatisfy(lostTheRace(settled[0]));
      }
      const effects = sim.ledger().slice(ledger);
      expect(effects).toHaveLength(1);
      expect(await recordOf(action.transaction.transaction_id)).toMatchObject({
        status: 'committed',
        provider_operation: { operation_id: effects[0]?.operation_id },
      });
      expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: a })).toMatchObject({ status: 'completed', fence: 1 });
      expect((await h.verifyChain(action.transaction.transaction_id)).valid).toBe(true);
    }
  });
});
