/**
 * The payments provider simulator over real HTTP on loopback (global fetch).
 * No sleeps: latency faults are observed through the simulator's own events,
 * ended with `releaseDelays()`, and settled with `idle()`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  startPaymentsSimulator,
  type PaymentsSimulator,
  type PaymentsSimulatorOptions,
  type SimEvent,
  type SimLogLine,
} from '../../dev/payments-simulator/server.js';
import { ConfigError, startFromEnv } from '../../dev/payments-simulator/main.js';

const API_KEY = 'sk_test_simulator_Zq81Lm0Pa9';
const OTHER_KEY = 'sk_test_second_key_77Hh2';

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** Every response any test saw, to prove no API key ever appears in one. */
const seen: string[] = [];

function record(r: Reply): Reply {
  seen.push(`${r.status} ${JSON.stringify([...r.headers.entries()])} ${r.text}`);
  return r;
}

async function toReply(res: Response): Promise<Reply> {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return record({ status: res.status, headers: res.headers, text, body });
}

interface CallOptions {
  key?: string | null;
  auth?: string | null;
  signal?: AbortSignal;
  contentType?: string | null;
  rawBody?: string;
}

function client(sim: PaymentsSimulator) {
  const headers = (o: CallOptions): Record<string, string> => {
    const h: Record<string, string> = {};
    const auth = o.auth === undefined ? `Bearer ${API_KEY}` : o.auth;
    if (auth !== null) h.authorization = auth;
    if (o.key !== undefined && o.key !== null) h['idempotency-key'] = o.key;
    const ct = o.contentType === undefined ? 'application/json' : o.contentType;
    if (ct !== null) h['content-type'] = ct;
    return h;
  };
  const post = async (path: string, body: unknown, o: CallOptions = {}): Promise<Reply> => {
    const res = await fetch(`${sim.url}${path}`, {
      method: 'POST',
      headers: headers(o),
      body: o.rawBody ?? JSON.stringify(body),
      ...(o.signal ? { signal: o.signal } : {}),
    });
    return toReply(res);
  };
  const get = async (path: string, o: CallOptions = {}): Promise<Reply> => {
    const res = await fetch(`${sim.url}${path}`, { headers: headers({ ...o, contentType: null }) });
    return toReply(res);
  };
  return {
    post,
    get,
    charge: (key: string, body: unknown = { amount: 1250, currency: 'EUR' }, o: CallOptions = {}) => post('/v1/charges', body, { ...o, key }),
    refund: (key: string, body: unknown, o: CallOptions = {}) => post('/v1/refunds', body, { ...o, key }),
    opByKey: (key: string) => get(`/v1/operations?idempotency_key=${encodeURIComponent(key)}`),
    op: (id: string) => get(`/v1/operations/${id}`),
  };
}

/** Resolves with the first event the predicate accepts (subscribe before acting). */
function nextFault(sim: PaymentsSimulator, key: string): Promise<SimEvent> {
  return sim.waitForEvent((e) => e.type === 'fault_applied' && e.idempotency_key === key);
}

async function expectSocketError(p: Promise<unknown>): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TypeError); // undici: "fetch failed"
  const cause = (err as { cause?: { code?: string } }).cause;
  expect(['UND_ERR_SOCKET', 'ECONNRESET', 'UND_ERR_CLOSED']).toContain(cause?.code);
}

async function expectAbort(p: Promise<unknown>): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect((err as Error | undefined)?.name).toBe('AbortError');
}

let sim: PaymentsSimulator;
let api: ReturnType<typeof client>;
let logs: SimLogLine[];

async function boot(extra: Partial<PaymentsSimulatorOptions> = {}): Promise<void> {
  logs = [];
  sim = await startPaymentsSimulator({
    apiKeys: [API_KEY, OTHER_KEY],
    seed: 7,
    logger: (l) => logs.push(l),
    ...extra,
  });
  api = client(sim);
}

beforeEach(async () => {
  await boot();
});

afterEach(async () => {
  await sim.stop();
  // The API keys never appear in a response or log line, whatever the test did.
  const everything = `${seen.join('\n')}\n${JSON.stringify(logs)}`;
  expect(everything).not.toContain(API_KEY);
  expect(everything).not.toContain(OTHER_KEY);
});

describe('charges and idempotency', () => {
  it('creates a charge with an operation and exactly one ledger effect', async () => {
    const r = await api.charge('order-1', { amount: 1250, currency: 'eur', customer: 'cus_1', metadata: { order: '1' } });
    expect(r.status).toBe(201);
    expect(r.headers.get('idempotent-replayed')).toBeNull();
    expect(r.headers.get('request-id')).toMatch(/^req_/);
    expect(r.body).toMatchObject({
      object: 'charge',
      status: 'succeeded',
      amount: 1250,
      currency: 'EUR',
      customer: 'cus_1',
      metadata: { order: '1' },
      amount_refunded: 0,
    });
    expect(r.body.id).toMatch(/^ch_/);
    expect(r.body.operation_id).toMatch(/^op_/);
    expect(Number.isNaN(Date.parse(r.body.created_at))).toBe(false);

    expect(sim.ledger()).toEqual([
      expect.objectContaining({
        seq: 1,
        kind: 'charge',
        operation_id: r.body.operation_id,
        resource_id: r.body.id,
        idempotency_key: 'order-1',
        amount: 1250,
        currency: 'EUR',
      }),
    ]);
    const overHttp = await api.get('/_sim/ledger');
    expect(overHttp.body.entries).toEqual(sim.ledger());

    const charge = await api.get(`/v1/charges/${r.body.id}`);
    expect(charge.status).toBe(200);
    expect(charge.body).toEqual(r.body);
  });

  it('replays a repeated key with the same body (key order and currency case do not matter)', async () => {
    const first = await api.charge('order-2', { amount: 900, currency: 'usd', description: 'x' });
    const again = await api.post('/v1/charges', { description: 'x', currency: 'USD', amount: 900 }, { key: 'order-2' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(sim.effectsFor('order-2')).toHaveLength(1);
    expect(sim.ledger()).toHaveLength(1);
    expect(logs.filter((l) => l.replayed)).toHaveLength(1);
  });

  it('rejects a reused key with a different body or endpoint (409 idempotency_key_reuse)', async () => {
    const first = await api.charge('order-3', { amount: 100, currency: 'EUR' });
    const other = await api.charge('order-3', { amount: 101, currency: 'EUR' });
    expect(other.status).toBe(409);
    expect(other.body.error.type).toBe('idempotency_key_reuse');
    const asRefund = await api.refund('order-3', { charge_id: first.body.id });
    expect(asRefund.status).toBe(409);
    expect(asRefund.body.error.type).toBe('idempotency_key_reuse');
    expect(sim.ledger()).toHaveLength(1);
  });

  it('turns 50 concurrent identical requests into one effect', async () => {
    const replies = await Promise.all(Array.from({ length: 50 }, () => api.charge('burst-1', { amount: 4200, currency: 'GBP' })));
    expect(replies.every((r) => r.status === 201)).toBe(true);
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(1);
    expect(replies.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);
    expect(sim.effectsFor('burst-1')).toHaveLength(1);
    expect(sim.ledger()).toHaveLength(1);
  });

  it('answers duplicates of a request still in progress with 409 idempotency_key_in_use, then one effect', async () => {
    sim.setFaults([{ match: { path: '/v1/charges', idempotency_key: 'burst-2' }, fault: { type: 'latency', ms: 3_600_000, phase: 'before_commit' } }]);
    const held = nextFault(sim, 'burst-2');
    const first = api.charge('burst-2');
    await held;
    const dups = await Promise.all(Array.from({ length: 49 }, () => api.charge('burst-2')));
    expect(dups.every((r) => r.status === 409 && r.body.error.type === 'idempotency_key_in_use')).toBe(true);
    expect(dups[0]?.headers.get('retry-after')).toBe('1');
    expect(sim.ledger()).toHaveLength(0);
    expect(sim.releaseDelays()).toBe(1);
    expect((await first).status).toBe(201);
    await sim.idle();
    expect(sim.effectsFor('burst-2')).toHaveLength(1);
  });
});

describe('operation lookup', () => {
  it('finds an operation by id and by idempotency key; unknown ones are 404', async () => {
    const c = await api.charge('lookup-1', { amount: 300, currency: 'EUR' });
    const byId = await api.op(c.body.operation_id);
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({
      object: 'operation',
      operation_id: c.body.operation_id,
      kind: 'charge',
      status: 'succeeded',
      resource_id: c.body.id,
      charge_id: null,
      amount: 300,
      currency: 'EUR',
      idempotency_key: 'lookup-1',
    });
    const byKey = await api.opByKey('lookup-1');
    expect(byKey.status).toBe(200);
    expect(byKey.body).toEqual(byId.body);

    expect((await api.op('op_doesnotexist')).body.error.type).toBe('resource_missing');
    expect((await api.op('op_doesnotexist')).status).toBe(404);
    expect((await api.op('not-an-id')).status).toBe(404);
    expect((await api.opByKey('never-used')).status).toBe(404);
    expect((await api.get('/v1/operations')).status).toBe(400);
    expect((await api.get('/v1/operations?idempotency_key=a&x=1')).status).toBe(400);
  });
});

describe('refunds', () => {
  it('refunds partially, refuses to exceed the charge, and refuses a second full refund', async () => {
    const c = await api.charge('rf-charge', { amount: 1000, currency: 'EUR' });
    const part = await api.refund('rf-1', { charge_id: c.body.id, amount: 400 });
    expect(part.status).toBe(201);
    expect(part.body).toMatchObject({ object: 'refund', status: 'succeeded', amount: 400, currency: 'EUR', charge_id: c.body.id });
    expect(part.body.id).toMatch(/^re_/);

    const tooMuch = await api.refund('rf-2', { charge_id: c.body.id, amount: 601 });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body.error).toMatchObject({ type: 'refund_exceeds_charge', refundable_amount: 600 });

    const rest = await api.refund('rf-3', { charge_id: c.body.id });
    expect(rest.status).toBe(201);
    expect(rest.body.amount).toBe(600);

    const again = await api.refund('rf-4', { charge_id: c.body.id });
    expect(again.status).toBe(409);
    expect(again.body.error.type).toBe('charge_already_refunded');

    expect((await api.get(`/v1/charges/${c.body.id}`)).body.amount_refunded).toBe(1000);
    const op = await api.opByKey('rf-1');
    expect(op.body).toMatchObject({ kind: 'refund', status: 'succeeded', resource_id: part.body.id, charge_id: c.body.id, amount: 400 });
    expect(sim.ledger().map((e) => [e.kind, e.amount])).toEqual([
      ['charge', 1000],
      ['refund', 400],
      ['refund', 600],
    ]);
    // A rejected refund does not consume its key: it can be used once the request is valid.
    expect(sim.effectsFor('rf-2')).toEqual([]);
  });

  it('rejects refunds of unknown or unsettled charges, and pending refunds hold their amount', async () => {
    expect((await api.refund('rf-x', { charge_id: 'ch_unknown' })).status).toBe(404);

    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'pending' }]);
    const pendingCharge = await api.charge('rf-pending-charge', { amount: 500, currency: 'EUR' });
    expect(pendingCharge.status).toBe(202);
    const notYet = await api.refund('rf-y', { charge_id: pendingCharge.body.id });
    expect(notYet.status).toBe(409);
    expect(notYet.body.error.type).toBe('charge_not_refundable');

    const c = await api.charge('rf-charge-2', { amount: 500, currency: 'EUR' });
    sim.setFaults([{ match: { path: '/v1/refunds' }, fault: 'pending' }]);
    const pendingRefund = await api.refund('rf-z', { charge_id: c.body.id, amount: 300 });
    expect(pendingRefund.status).toBe(202);
    expect(pendingRefund.body.status).toBe('pending');
    const over = await api.refund('rf-w', { charge_id: c.body.id, amount: 201 });
    expect(over.body.error).toMatchObject({ type: 'refund_exceeds_charge', refundable_amount: 200 });
    sim.resolveOperation(pendingRefund.body.operation_id, 'failed');
    expect((await api.refund('rf-w2', { charge_id: c.body.id, amount: 500 })).status).toBe(201);
    expect(
      sim
        .ledger()
        .filter((e) => e.kind === 'refund')
        .map((e) => e.amount),
    ).toEqual([500]);
  });
});

describe('faults', () => {
  it('latency after commit: the client gives up, the effect is committed anyway', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'latency', ms: 3_600_000 } }]);
    const ac = new AbortController();
    const applied = nextFault(sim, 'lat-after');
    const call = api.charge('lat-after', undefined, { signal: ac.signal });
    await applied;
    ac.abort(); // the connector's deadline
    await expectAbort(call);
    expect(sim.effectsFor('lat-after')).toHaveLength(1);
    sim.releaseDelays();
    await sim.idle();
    const retry = await api.charge('lat-after');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.effectsFor('lat-after')).toHaveLength(1);
  });

  it('latency before commit: nothing is committed until the delay ends', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'latency', ms: 3_600_000, phase: 'before_commit' } }]);
    const ac = new AbortController();
    const applied = nextFault(sim, 'lat-before');
    const call = api.charge('lat-before', undefined, { signal: ac.signal });
    await applied;
    ac.abort();
    await expectAbort(call);
    expect(sim.ledger()).toHaveLength(0);
    const lookup = await api.opByKey('lat-before');
    expect(lookup.status).toBe(409);
    expect(lookup.body.error.type).toBe('idempotency_key_in_use');

    sim.releaseDelays();
    await sim.idle();
    expect(sim.effectsFor('lat-before')).toHaveLength(1);
    expect((await api.opByKey('lat-before')).body.status).toBe('succeeded');
    const retry = await api.charge('lat-before');
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.ledger()).toHaveLength(1);
  });

  it('drop_after_commit: the socket is destroyed without a response, the effect exists', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'drop_after_commit' }]);
    await expectSocketError(api.charge('drop-1'));
    await sim.idle();
    expect(sim.effectsFor('drop-1')).toHaveLength(1);
    expect(logs.find((l) => l.idempotency_key === 'drop-1')).toMatchObject({ status: 'dropped', fault: 'drop_after_commit' });
    const op = await api.opByKey('drop-1');
    expect(op.body).toMatchObject({ status: 'succeeded', kind: 'charge' });
    const retry = await api.charge('drop-1');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.operation_id).toBe(op.body.operation_id);
    expect(sim.ledger()).toHaveLength(1);
  });

  it('error_before_commit: 5xx, nothing committed, the key stays usable', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: { type: 'error_before_commit', status: 503 } }]);
    const r = await api.charge('ebc-1');
    expect(r.status).toBe(503);
    expect(r.body.error.type).toBe('provider_unavailable');
    expect(r.headers.get('retry-after')).toBe('1');
    expect(sim.ledger()).toHaveLength(0);
    expect((await api.opByKey('ebc-1')).status).toBe(404);
    const retry = await api.charge('ebc-1');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(sim.effectsFor('ebc-1')).toHaveLength(1);
  });

  it('error_after_commit: 5xx, the effect is committed, a retry replays it', async () => {
    sim.setFaults([{ match: { path: '/v1/refunds' }, fault: { type: 'error_after_commit', status: 500 } }]);
    const c = await api.charge('eac-charge');
    const r = await api.refund('eac-1', { charge_id: c.body.id });
    expect(r.status).toBe(500);
    expect(r.body.error.type).toBe('provider_unavailable');
    expect(JSON.stringify(r.body)).not.toContain('op_');
    expect(sim.effectsFor('eac-1')).toHaveLength(1);
    const retry = await api.refund('eac-1', { charge_id: c.body.id });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.effectsFor('eac-1')[0]?.operation_id).toBe(retry.body.operation_id);
    expect(sim.ledger()).toHaveLength(2);
  });

  it('pending: accepted without effect; resolved over HTTP it commits; final operations cannot change', async () => {
    sim.setFaults([{ match: { path: '/v1/charges' }, fault: 'pending', times: 2 }]);
    const a = await api.charge('pend-1');
    expect(a.status).toBe(202);
    expect(a.body.status).toBe('pending');
    expect((await api.op(a.body.operation_id)).body.status).toBe('pending');
    expect(sim.ledger()).toHaveLength(0);

    const resolved = await api.post(`/_sim/operations/${a.body.operation_id}/resolve`, { status: 'succeeded' });
    expect(resolved.status).toBe(200);
    expect(resolved.body.status).toBe('succeeded');
    expect(sim.effectsFor('pend-1')).toHaveLength(1);
    expect((await api.get(`/v1/charges/${a.body.id}`)).body.status).toBe('succeeded');
    const twice = await api.post(`/_sim/operations/${a.body.operation_id}/resolve`, { status: 'failed' });
    expect(twice.status).toBe(409);
    expect(twice.body.error.type).toBe('operation_not_pending');
    expect((await api.post(`/_sim/operations/${a.body.operation_id}/resolve`, { status: 'maybe' })).status).toBe(400);

    const b = await api.charge('pend-2');
    expect(b.status).toBe(202);
    const cancel = await api.post(`/v1/operations/${b.body.operation_id}/cancel`, {}, { key: 'cancel-1' });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ operation_id: b.body.operation_id, status: 'canceled' });
    const cancelReplay = await api.post(`/v1/operations/${b.body.operation_id}/cancel`, {}, { key: 'cancel-1' });
    expect(cancelReplay.status).toBe(200);
    expect(cancelReplay.headers.get('idempotent-replayed')).toBe('true');
    const cancelAgain = await api.post(`/v1/operations/${b.body.operation_id}/cancel`, {}, { key: 'cancel-2' });
    expect(cancelAgain.status).toBe(409);
    expect(cancelAgain.body.error).toMatchObject({ type: 'operation_not_pending', operation_status: 'canceled' });
    const cancelFinal = await api.post(`/v1/operations/${a.body.operation_id}/cancel`, {}, { key: 'cancel-3' });
    expect(cancelFinal.status).toBe(409);
    expect((await api.post('/v1/operations/op_unknown/cancel', {}, { key: 'cancel-4' })).status).toBe(404);
    expect((await api.post(`/v1/operations/${b.body.operation_id}/cancel`, {})).status).toBe(400);
    expect(sim.effectsFor('pend-2')).toHaveLength(0);
    expect(sim.ledger()).toHaveLength(1);
  });

  it('decline: the operation is recorded as failed with no effect, and replays as 402', async () => {
    sim.setFaults([{ fault: { type: 'decline', code: 'insufficient_funds' } }]);
    const r = await api.charge('dec-1');
    expect(r.status).toBe(402);
    expect(r.body.error).toMatchObject({ type: 'card_declined', code: 'insufficient_funds' });
    const op = await api.op(r.body.error.operation_id);
    expect(op.body).toMatchObject({ status: 'failed', failure_code: 'insufficient_funds' });
    const again = await api.charge('dec-1');
    expect(again.status).toBe(402);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.ledger()).toHaveLength(0);
  });

  it('matches rules by path, method and key, in order, for the given number of times', async () => {
    sim.setFaults([
      { match: { path: '/v1/charges', idempotency_key: 'm-2' }, fault: 'error_before_commit', times: 2 },
      { match: { method: 'GET', path: '/v1/operations*' }, fault: 'error_before_commit' },
    ]);
    expect((await api.charge('m-1')).status).toBe(201);
    expect((await api.charge('m-2')).status).toBe(503);
    expect(sim.faults()).toMatchObject([{ remaining: 1 }, { remaining: 1 }]);
    expect((await api.charge('m-2')).status).toBe(503);
    expect((await api.charge('m-2')).status).toBe(201);
    expect((await api.opByKey('m-1')).status).toBe(503);
    expect((await api.opByKey('m-1')).status).toBe(200);
    expect(sim.faults()).toEqual([]);

    sim.setFaults([{ fault: 'error_after_commit', times: 'always' }]);
    expect((await api.charge('m-3')).status).toBe(503);
    expect((await api.charge('m-3')).status).toBe(503);
    expect(sim.effectsFor('m-3')).toHaveLength(1);
    expect(sim.faults()).toMatchObject([{ remaining: 'always' }]);
  });

  it("matches a charge body's customer, and nothing else, when the rule names one", async () => {
    sim.setFaults([{ match: { customer: 'cus_slow' }, fault: 'error_before_commit', times: 'always' }]);
    expect((await api.charge('c-1', { amount: 100, currency: 'EUR', customer: 'cus_slow' })).status).toBe(503);
    expect((await api.charge('c-2', { amount: 100, currency: 'EUR', customer: 'cus_fast' })).status).toBe(201);
    expect((await api.charge('c-3', { amount: 100, currency: 'EUR' })).status).toBe(201);
    // A refund has no customer: it never matches.
    const charge = (await api.charge('c-4', { amount: 100, currency: 'EUR', customer: 'cus_fast' })).body as { id: string };
    expect((await api.refund('r-1', { charge_id: charge.id })).status).toBe(201);
    expect(sim.faults()).toMatchObject([{ remaining: 'always' }]);
  });

  it('draws probabilistic faults from the seeded RNG (same seed, same sequence)', async () => {
    const run = async (): Promise<number[]> => {
      sim.reset();
      sim.setFaults([{ fault: 'error_before_commit', times: 'always', probability: 0.5 }]);
      const statuses: number[] = [];
      for (let i = 0; i < 24; i++) statuses.push((await api.charge(`p-${i}`)).status);
      return statuses;
    };
    const a = await run();
    const b = await run();
    expect(a).toEqual(b);
    expect(a).toContain(503);
    expect(a).toContain(201);
    expect(sim.ledger()).toHaveLength(a.filter((s) => s === 201).length);
  });

  it('is configured over HTTP: POST /_sim/faults replaces or appends, GET lists, DELETE clears, bad rules are 400', async () => {
    const set = await api.post('/_sim/faults', [{ id: 'one', match: { path: '/v1/charges' }, fault: 'drop_after_commit' }]);
    expect(set.status).toBe(200);
    expect(set.body.faults).toEqual([
      { id: 'one', match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'drop_after_commit' }, remaining: 1, probability: 1 },
    ]);
    const appended = await api.post('/_sim/faults?mode=append', [{ fault: { type: 'latency', ms: 5 } }]);
    expect(appended.body.faults.map((f: { fault: { type: string } }) => f.fault.type)).toEqual(['drop_after_commit', 'latency']);
    expect(appended.body.faults[1].fault.phase).toBe('after_commit');
    expect((await api.get('/_sim/faults')).body.faults).toHaveLength(2);

    for (const bad of [
      [{ fault: 'explode' }],
      [{ fault: { type: 'latency' } }],
      [{ fault: 'pending', probability: 2 }],
      [{ fault: 'pending', times: 0 }],
      { fault: 'pending' },
    ]) {
      const r = await api.post('/_sim/faults', bad);
      expect(r.status).toBe(400);
      expect(r.body.error.type).toBe('invalid_request');
    }
    expect(sim.faults()).toHaveLength(2); // a rejected list changes nothing
    expect((await api.post('/_sim/faults?mode=merge', [])).status).toBe(400);
    const cleared = await fetch(`${sim.url}/_sim/faults`, { method: 'DELETE' });
    expect(cleared.status).toBe(200);
    await cleared.body?.cancel();
    expect(sim.faults()).toEqual([]);
  });

  it('stop() ends pending latency delays so the process can exit', async () => {
    sim.setFaults([{ fault: { type: 'latency', ms: 3_600_000, phase: 'before_commit' } }]);
    const applied = nextFault(sim, 'stop-1');
    const call = api.charge('stop-1');
    await applied;
    await sim.stop();
    await expectSocketError(call);
    expect(sim.ledger()).toHaveLength(0);
    await sim.stop(); // idempotent
  });
});

describe('authentication', () => {
  it('rejects a missing or wrong bearer key with 401 and no effect; any configured key works', async () => {
    const missing = await api.charge('auth-1', undefined, { auth: null });
    expect(missing.status).toBe(401);
    expect(missing.body.error.type).toBe('authentication_failed');
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await api.charge('auth-1', undefined, { auth: `Bearer ${API_KEY}x` });
    expect(wrong.status).toBe(401);
    const notBearer = await api.charge('auth-1', undefined, { auth: `Basic ${API_KEY}` });
    expect(notBearer.status).toBe(401);
    expect((await api.get('/v1/operations/op_x', { auth: null })).status).toBe(401);
    expect(sim.ledger()).toHaveLength(0);

    expect((await api.charge('auth-2', undefined, { auth: `Bearer ${OTHER_KEY}` })).status).toBe(201);
    const health = await api.get('/_sim/health', { auth: null });
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
  });

  it('refuses to start without a usable key', async () => {
    await expect(startPaymentsSimulator({ apiKeys: [] })).rejects.toThrow(TypeError);
    await expect(startPaymentsSimulator({ apiKeys: [''] })).rejects.toThrow(TypeError);
  });
});

describe('input validation', () => {
  it('answers bad input with a typed 4xx, never a 5xx', async () => {
    const cases: Array<[unknown, string]> = [
      [{ amount: 0, currency: 'EUR' }, 'amount'],
      [{ amount: -5, currency: 'EUR' }, 'amount'],
      [{ amount: 1.5, currency: 'EUR' }, 'amount'],
      [{ amount: '100', currency: 'EUR' }, 'amount'],
      [{ amount: 100, currency: 'EURO' }, 'currency'],
      [{ amount: 100, currency: '€€€' }, 'currency'],
      [{ amount: 100 }, 'currency'],
      [{ amount: 100, currency: 'EUR', extra: true }, ''],
      [{ amount: 100, currency: 'EUR', metadata: { k: 5 } }, 'metadata.k'],
      [[], ''],
      [null, ''],
    ];
    for (const [body, param] of cases) {
      const r = await api.charge('val-1', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.type).toBe('invalid_request');
      expect(r.body.error.issues[0].path).toBe(param);
    }
    const refund = await api.refund('val-2', { charge_id: '', amount: 1 });
    expect(refund.status).toBe(400);

    expect((await api.charge('val-3', null, { rawBody: '{"amount":' })).body.error.type).toBe('invalid_json');
    expect((await api.charge('val-3', null, { rawBody: '' })).status).toBe(400);
    expect((await api.charge('val-3', null, { contentType: 'text/plain' })).status).toBe(415);
    expect((await api.charge('val-3', null, { rawBody: JSON.stringify({ description: 'x'.repeat(70_000) }) })).status).toBe(413);
    const noKey = await api.post('/v1/charges', { amount: 1, currency: 'EUR' });
    expect(noKey.status).toBe(400);
    expect(noKey.body.error.type).toBe('idempotency_key_missing');
    expect((await api.charge('has space', { amount: 1, currency: 'EUR' })).status).toBe(400);
    expect((await api.charge('k'.repeat(256), { amount: 1, currency: 'EUR' })).status).toBe(400);
    expect((await api.get('/v1/nothing')).status).toBe(404);
    expect((await api.get('/v1/operations/%E0%A4%A')).status).toBe(404);
    expect((await api.get('/v1/charges/%ZZ')).status).toBe(404);
    expect((await api.post('/v1/operations/%E0%A4%A/cancel', {}, { key: 'val-4' })).status).toBe(404);
    expect((await api.post('/_sim/operations/%ZZ/resolve', { status: 'failed' })).status).toBe(404);
    const wrongMethod = await api.get('/v1/charges');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    expect(sim.ledger()).toHaveLength(0);
    expect(logs.every((l) => l.status === 'dropped' || l.status < 500)).toBe(true);
  });

  it('never answers an arbitrary JSON body with a 5xx (property)', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), fc.record({ amount: fc.jsonValue(), currency: fc.jsonValue() })), async (body) => {
        const r = await api.charge(`prop-${n++}`, body);
        expect([201, 400]).toContain(r.status);
        if (r.status === 400) expect(r.body.error.type).toBe('invalid_request');
      }),
      { numRuns: 150, seed: 42 },
    );
    expect(sim.ledger().length).toBeLessThanOrEqual(n);
  });
});

describe('state control', () => {
  it('reset() forgets charges, keys, ledger and faults', async () => {
    await api.charge('reset-1');
    sim.setFaults([{ fault: 'pending' }]);
    const viaHttp = await api.post('/_sim/reset', {});
    expect(viaHttp.status).toBe(200);
    expect(sim.ledger()).toEqual([]);
    expect(sim.faults()).toEqual([]);
    expect((await api.opByKey('reset-1')).status).toBe(404);
    const again = await api.charge('reset-1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });

  it('can hide the control routes (health stays)', async () => {
    await sim.stop();
    await boot({ controlRoutes: false });
    expect((await api.get('/_sim/ledger')).status).toBe(404);
    expect((await api.get('/_sim/health')).status).toBe(200);
  });
});

describe('CLI entry (startFromEnv)', () => {
  it('starts from PORT and PAYMENTS_SIM_API_KEY and never prints the key', async () => {
    const lines: string[] = [];
    const cli = await startFromEnv({ PORT: '0', PAYMENTS_SIM_API_KEY: `${API_KEY}, ${OTHER_KEY}` }, (l) => lines.push(l));
    try {
      const r = await client(cli).charge('cli-1');
      expect(r.status).toBe(201);
      const denied = await client(cli).charge('cli-2', undefined, { auth: 'Bearer nope' });
      expect(denied.status).toBe(401);
      expect(cli.ledger()).toHaveLength(1);
    } finally {
      await cli.stop();
    }
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ msg: 'listening', url: cli.url });
    expect(lines.join('\n')).not.toContain(API_KEY);
    expect(lines.join('\n')).not.toContain(OTHER_KEY);
  });

  it('refuses to start without a key or with a bad port', async () => {
    await expect(startFromEnv({ PORT: '0' }, () => {})).rejects.toThrow(ConfigError);
    await expect(startFromEnv({ PORT: 'abc', PAYMENTS_SIM_API_KEY: API_KEY }, () => {})).rejects.toThrow(ConfigError);
  });
});
