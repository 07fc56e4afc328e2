/**
 * The typed client against a real local HTTP server (test/support/api-stub.ts).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AipClient, AipClientError, CLIENT_ERROR_CODES, TENANT_HEADER, isSettled, type ActionState } from '../../../lib/client/index.js';
import type { Action, TransactionRequest } from '../../../packages/connector-sdk/src/protocol/index.js';
import { freePort } from '../../../dev/emulators/net.js';
import { problem, startApiStub, type ApiStub } from '../../support/api-stub.js';

let stub: ApiStub;
beforeAll(async () => {
  stub = await startApiStub();
});
afterAll(async () => stub.stop());
beforeEach(() => {
  stub.requests.length = 0;
});

const action: Action = {
  id: 'act-1',
  capability_id: 'payments.charge',
  input: { amount: 1250, currency: 'eur', customer: 'cus_1' },
  idempotency_key: 'order-1',
  transaction: { mode: 'execute' },
};
const state = (status: ActionState['action_result']['status'], extra: Record<string, unknown> = {}): ActionState => ({
  action_result: {
    action_id: 'act-1',
    status,
    ...(status === 'failed' ? { error: { code: 'x.y', message: 'm', category: 'permanent', retryable: false } } : {}),
    ...extra,
  },
});

async function caught(p: Promise<unknown>): Promise<AipClientError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AipClientError);
    return err as AipClientError;
  }
  throw new Error('expected an AipClientError');
}

describe('AipClient requests', () => {
  it('submits an action with the bearer token, tenant header and Prefer: wait', async () => {
    stub.setRoute(() => ({
      status: 202,
      body: { action_id: 'act-1', tenant_id: 'demo', disposition: 'accepted', status_url: '/v1/actions/act-1', action_result: state('accepted').action_result },
    }));
    const client = new AipClient({ baseUrl: `${stub.url}/`, token: 'tok-1', tenant: 'demo' });
    const res = await client.submitAction(action, { wait: 5 });
    expect(res).toMatchObject({ http_status: 202, action_id: 'act-1', disposition: 'accepted' });
    const [req] = stub.requests;
    expect(req).toMatchObject({ method: 'POST', path: '/v1/actions', body: action });
    expect(req?.headers.authorization).toBe('Bearer tok-1');
    expect(req?.headers[TENANT_HEADER.toLowerCase()]).toBe('demo');
    expect(req?.headers.prefer).toBe('wait=5');
    expect(req?.headers['content-type']).toBe('application/json');
  });

  it('submits a TransactionRequest unchanged, and a per-call tenant wins', async () => {
    stub.setRoute(() => ({
      status: 200,
      body: { action_id: 'act-1', tenant_id: 't2', disposition: 'completed', status_url: '/v1/actions/act-1', action_result: state('completed').action_result },
    }));
    const request: TransactionRequest = {
      action: { ...action, transaction: { mode: 'plan' } },
      transaction_id: 'txn-1',
      requested_by: { id: 'alice', kind: 'user' },
    };
    const client = new AipClient({ baseUrl: stub.url, tenant: 'demo' });
    const res = await client.submitAction(request, { tenant: 't2' });
    expect(res.http_status).toBe(200);
    expect(stub.requests[0]?.body).toEqual(request);
    expect(stub.requests[0]?.headers[TENANT_HEADER.toLowerCase()]).toBe('t2');
    expect(stub.requests[0]?.headers.prefer).toBeUndefined();
    expect(stub.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('encodes IDs in paths and maps every route', async () => {
    stub.setRoute((req) => ({
      status: 200,
      body: req.path.startsWith('/v1/actions/') && req.method === 'GET' && !req.path.endsWith('/stream') ? state('running') : { items: [] },
    }));
    let calls = 0;
    const client = new AipClient({ baseUrl: stub.url, token: () => `tok-${++calls}` });
    await client.getAction('tenant:a/1', { wait: 3 });
    await client.cancel('a1');
    await client.readStream('a1', { after: 4 });
    await client.getTransaction({ plan_id: 'plan:txn-1' }, { include: ['result', 'receipts'] });
    await client.listOperator('outcome_unknown', { cursor: 'c1', limit: 10 });
    await client.listApprovals({ limit: 5 });
    await client.approve('ap-1', { reason: 'looks right' });
    await client.deny('ap-2');
    await client.capabilities();
    await client.openapi();
    const seen = stub.requests.map((r) => [r.method, r.path, r.query, r.body]);
    expect(seen).toEqual([
      ['GET', '/v1/actions/tenant%3Aa%2F1', { wait: '3' }, undefined],
      ['POST', '/v1/actions/a1/cancel', {}, {}],
      ['GET', '/v1/actions/a1/stream', { after: '4' }, undefined],
      ['GET', '/v1/transactions', { plan_id: 'plan:txn-1', include: 'result,receipts' }, undefined],
      ['GET', '/v1/operator/transactions', { view: 'outcome_unknown', cursor: 'c1', limit: '10' }, undefined],
      ['GET', '/v1/approvals', { limit: '5' }, undefined],
      ['POST', '/v1/approvals/ap-1/decision', {}, { decision: 'approve', reason: 'looks right' }],
      ['POST', '/v1/approvals/ap-2/decision', {}, { decision: 'deny' }],
      ['GET', '/v1/capabilities', {}, undefined],
      ['GET', '/v1/openapi.json', {}, undefined],
    ]);
    // The token source is asked once per request.
    expect(stub.requests.map((r) => r.headers.authorization)).toEqual(stub.requests.map((_, i) => `Bearer tok-${i + 1}`));
  });

  it('refuses bad arguments before sending anything', async () => {
    const client = new AipClient({ baseUrl: stub.url });
    expect((await caught(client.getAction('a', { wait: 26 }))).code).toBe(CLIENT_ERROR_CODES.badRequest);
    expect((await caught(client.submitAction(action, { wait: -1 }))).code).toBe(CLIENT_ERROR_CODES.badRequest);
    expect((await caught(client.getTransaction({ transaction_id: 't', plan_id: 'p' } as never))).code).toBe(CLIENT_ERROR_CODES.badRequest);
    expect((await caught(client.decideApproval('a', 'maybe' as never))).code).toBe(CLIENT_ERROR_CODES.badRequest);
    expect(stub.requests).toEqual([]);
    expect(() => new AipClient({ baseUrl: 'ftp://x' })).toThrow(AipClientError);
  });
});

describe('AipClient errors', () => {
  it('turns a problem+json answer into a typed error with code, status and details', async () => {
    stub.setRoute(() => problem(409, 'idempotency.in_flight', { retryable: true, retry_after_ms: 1000, details: { action_id: 'act-0' } }));
    const err = await caught(new AipClient({ baseUrl: stub.url }).submitAction(action));
    expect(err).toMatchObject({
      status: 409,
      code: 'idempotency.in_flight',
      retryable: true,
      retryAfterMs: 1000,
      details: { action_id: 'act-0' },
      request: 'POST /v1/actions',
    });
    expect(err.problem?.type).toBe('urn:aip:error:idempotency.in_flight');
    expect(err.message).toBe('idempotency.in_flight: detail of idempotency.in_flight');
    expect(err.isClientSide).toBe(false);
  });

  it('reports an error status without a problem body as client.http_error', async () => {
    stub.setRoute(() => ({ status: 502, raw: '<html>bad gateway</html>', contentType: 'text/html', headers: { 'retry-after': '2' } }));
    const err = await caught(new AipClient({ baseUrl: stub.url }).getAction('a1'));
    expect(err).toMatchObject({ status: 502, code: CLIENT_ERROR_CODES.http, retryable: true, retryAfterMs: 2000 });
  });

  it('reports a non-JSON success body as client.bad_response', async () => {
    stub.setRoute(() => ({ status: 200, raw: 'not json', contentType: 'text/plain' }));
    expect((await caught(new AipClient({ baseUrl: stub.url }).capabilities())).code).toBe(CLIENT_ERROR_CODES.badResponse);
  });

  it('reports an unreachable server as client.network_error', async () => {
    const port = await freePort();
    const err = await caught(new AipClient({ baseUrl: `http://127.0.0.1:${port}` }).health());
    expect(err).toMatchObject({ status: 0, code: CLIENT_ERROR_CODES.network, retryable: true });
  });

  it('returns a degraded health body (200) as is', async () => {
    const body = { status: 'degraded', connectors: [{ connector_id: 'payments', ready: false }] };
    stub.setRoute(() => ({ status: 200, body }));
    expect(await new AipClient({ baseUrl: stub.url }).health()).toEqual(body);
  });
});

describe('AipClient.waitForAction', () => {
  it('long-polls until terminal, retrying retryable errors, and reports progress', async () => {
    const answers = [
      state('accepted'),
      problem(503, 'transaction.store_unavailable', { retryable: true, retry_after_ms: 100 }),
      state('running'),
      state('completed', { output: { id: 'ch_1' } }),
    ];
    stub.setRoute(() => {
      const next = answers.shift();
      if (!next) return { status: 500, body: {} };
      return 'action_result' in next ? { status: 200, body: next } : next;
    });
    const progress: string[] = [];
    const final = await new AipClient({ baseUrl: stub.url }).waitForAction('act-1', {
      timeoutMs: 60_000,
      pollSeconds: 20,
      onProgress: (s) => progress.push(s.action_result.status),
    });
    expect(final.action_result).toMatchObject({ status: 'completed', output: { id: 'ch_1' } });
    expect(progress).toEqual(['accepted', 'running', 'completed']);
    expect(stub.requests.every((r) => r.path === '/v1/actions/act-1' && Number(r.query.wait) <= 20)).toBe(true);
  });

  it('stops at requires_human unless told not to', async () => {
    stub.setRoute(() => ({ status: 200, body: state('requires_human') }));
    const client = new AipClient({ baseUrl: stub.url });
    expect((await client.waitForAction('act-1', { timeoutMs: 10_000 })).action_result.status).toBe('requires_human');
    expect(isSettled(state('requires_human'), false)).toBe(false);
  });

  it('gives up at the deadline with client.wait_timeout and the last status', async () => {
    stub.setRoute(() => ({ status: 200, body: state('running') }));
    const err = await caught(new AipClient({ baseUrl: stub.url }).waitForAction('act-1', { timeoutMs: 0 }));
    expect(err).toMatchObject({ code: CLIENT_ERROR_CODES.waitTimeout, details: { action_id: 'act-1', status: 'running' } });
    expect(stub.requests.map((r) => r.query.wait)).toEqual(['0']);
  });

  it('does not retry a non-retryable problem', async () => {
    stub.setRoute(() => problem(404, 'action.not_found'));
    expect((await caught(new AipClient({ baseUrl: stub.url }).waitForAction('nope', { timeoutMs: 60_000 }))).code).toBe('action.not_found');
    expect(stub.requests).toHaveLength(1);
  });
});

describe('AipClient.streamChunks', () => {
  const pages: Record<string, unknown> = {
    '': {
      items: [
        { seq: 0, data: 'a' },
        { seq: 1, data: 'b' },
      ],
    },
    '1': { items: [{ seq: 2, data: 'c' }] },
    '2': { items: [] },
  };

  it('pages through the persisted chunks in order', async () => {
    stub.setRoute((req) => ({ status: 200, body: pages[req.query.after ?? ''] }));
    const seen: number[] = [];
    for await (const chunk of new AipClient({ baseUrl: stub.url }).streamChunks('act-1')) seen.push(chunk.seq);
    expect(seen).toEqual([0, 1, 2]);
    expect(stub.requests.map((r) => r.query.after)).toEqual([undefined, '1', '2']);
  });

  it('with follow, reads until the action is terminal', async () => {
    stub.setRoute((req) => (req.path.endsWith('/stream') ? { status: 200, body: pages[req.query.after ?? ''] } : { status: 200, body: state('completed') }));
    const seen: number[] = [];
    for await (const chunk of new AipClient({ baseUrl: stub.url }).streamChunks('act-1', { follow: true })) seen.push(chunk.seq);
    expect(seen).toEqual([0, 1, 2]);
    expect(stub.requests.map((r) => `${r.method} ${r.path}`).slice(-2)).toEqual(['GET /v1/actions/act-1', 'GET /v1/actions/act-1/stream']);
  });
});
