/**
 * Remote placement: signing, verification and pinning, in both
 * directions, without a network. The host's `handle` is called directly;
 * the proxy's fetch is a function that hands the request to the host (and
 * lets a test tamper with the answer).
 *
 * Host side: a tampered body, a wrong key, a replayed nonce, a stale `iat`,
 * a past deadline and every mis-pinned route field are refused with a typed,
 * signed answer and the connector is never called.
 * Runtime side: an unsigned, wrongly signed, unbound, stale or mis-pinned
 * answer is refused with a typed failure that is uncertain for a
 * side-effecting operation; an unreachable host is a certain failure.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  generateRemoteKeyPair,
  localSigner,
  messageDigest,
  RemoteKeyring,
  remoteKeyOf,
  signCompact,
  verifyCompact,
  type RemoteKey,
  type RemoteSigner,
} from '../../../lib/runtime/remote/jws.js';
import { RemoteConnectorHost, type HostResponse } from '../../../lib/runtime/remote/host.js';
import { RemoteConnector } from '../../../lib/runtime/remote/proxy.js';
import {
  DEADLINE_HEADER,
  FRESHNESS_WINDOW_MS,
  REMOTE_TYP,
  RemoteAnswerSchema,
  type RemoteAnswer,
  type RemoteRequest,
} from '../../../lib/runtime/remote/protocol.js';
import { InMemoryNonceStore } from '../../../lib/runtime/remote/stores.js';
import { derToRawEcdsa } from '../../../lib/aws/kms/remote-signer.js';
import { DemoConnector, demoAction, demoManifestHash, demoRoute, runThroughProxy, type DemoEvents } from '../../support/remote-fixture.js';
import { sign as nodeSign, createPrivateKey } from 'node:crypto';

const ENDPOINT = 'https://host.test';

let runtimeSigner: RemoteSigner;
let hostSigner: RemoteSigner;
let attacker: RemoteSigner;
let hostKey: RemoteKey;
let manifestHash: string;

beforeAll(async () => {
  runtimeSigner = await localSigner(generateRemoteKeyPair().private_jwk);
  hostSigner = await localSigner(generateRemoteKeyPair().private_jwk);
  attacker = await localSigner(generateRemoteKeyPair().private_jwk);
  hostKey = await remoteKeyOf(hostSigner.public_jwk);
  manifestHash = await demoManifestHash();
});

async function newHost(events: DemoEvents = { seen: [], cancelled: [] }, clock?: { now(): Date }): Promise<RemoteConnectorHost> {
  return RemoteConnectorHost.create({
    endpoint: ENDPOINT,
    instance_id: 'host-1',
    replica: 'host-1-a',
    connectors: [{ connector: new DemoConnector(events) }],
    signer: hostSigner,
    runtime_keys: await RemoteKeyring.of([runtimeSigner.public_jwk]),
    nonces: new InMemoryNonceStore(),
    ...(clock !== undefined ? { clock } : {}),
  });
}

type Tamper = (answer: HostResponse, request: RemoteRequest) => HostResponse | Promise<HostResponse>;

/** A fetch that hands every request to the host in-process; records requests; optionally tampers with answers. */
function hostFetch(host: RemoteConnectorHost, sent: { jws: string; payload: RemoteRequest; deadline: string | undefined }[], tamper?: Tamper): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const headers = Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    const body = typeof init?.body === 'string' ? init.body : '';
    let answer = await host.handle({ method: init?.method ?? 'GET', path: `${url.pathname}${url.search}`, headers, body });
    if (init?.method === 'POST') {
      const payload = JSON.parse(Buffer.from(body.split('.')[1] as string, 'base64url').toString('utf8')) as RemoteRequest;
      sent.push({ jws: body, payload, deadline: headers[DEADLINE_HEADER] });
      if (tamper !== undefined) answer = await tamper(answer, payload);
    }
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  }) as typeof fetch;
}

function proxyFor(fetchImpl: typeof fetch, over: Partial<ConstructorParameters<typeof RemoteConnector>[0]> = {}): RemoteConnector {
  return new RemoteConnector({
    connector_id: 'demo',
    endpoint: ENDPOINT,
    instance_id: 'host-1',
    replica: 'host-1-a',
    host_key: hostKey,
    signer: runtimeSigner,
    fetch: fetchImpl,
    ...over,
  });
}

const route = (action_id: string, capability_id = 'demo.echo', over: Record<string, unknown> = {}) => ({
  ...demoRoute({ endpoint: ENDPOINT, peer_identity: hostKey.kid, peer_did: hostKey.did, manifest_hash: manifestHash, action_id, capability_id }),
  ...over,
});

/** One valid signed request, as the proxy sends it (captured). */
async function capturedRequest(): Promise<{ host: RemoteConnectorHost; events: DemoEvents; jws: string; payload: RemoteRequest }> {
  const events: DemoEvents = { seen: [], cancelled: [] };
  const capture = await newHost();
  const sent: { jws: string; payload: RemoteRequest; deadline: string | undefined }[] = [];
  const action = demoAction('demo.echo', `act-${Math.random().toString(36).slice(2)}`);
  const out = await runThroughProxy(proxyFor(hostFetch(capture, sent)), action, { route: route(action.id), chunks: [] });
  expect(out.ok).toBe(true);
  const first = sent[0];
  if (first === undefined) throw new Error('nothing sent');
  // A fresh host (its own nonce store) that has not seen the request yet.
  return { host: await newHost(events), events, jws: first.jws, payload: first.payload };
}

async function post(host: RemoteConnectorHost, jws: string, deadline: string): Promise<{ status: number; answer: RemoteAnswer }> {
  const res = await host.handle({
    method: 'POST',
    path: '/v1/attempts',
    headers: { [DEADLINE_HEADER]: deadline, 'content-type': 'application/jose' },
    body: jws,
  });
  // Every answer, refusals included, is signed by the host and bound to the request.
  const verified = verifyCompact(res.body, REMOTE_TYP.answer, await RemoteKeyring.of([hostSigner.public_jwk]));
  const answer = RemoteAnswerSchema.parse(verified.payload);
  expect(answer.request_digest).toBe(messageDigest(jws));
  return { status: res.status, answer };
}

function refusal(a: { status: number; answer: RemoteAnswer }): { code: string; uncertain: boolean; details: Record<string, unknown> } {
  expect(a.answer.body.status).toBe('refused');
  const f = (a.answer.body as Extract<RemoteAnswer['body'], { status: 'refused' }>).failure;
  return { code: f.code, uncertain: f.uncertain_outcome, details: f.redacted_details };
}

const resign = (signer: RemoteSigner, payload: unknown) => signCompact(signer, REMOTE_TYP.request, payload);

describe('host: requests it refuses (the connector is never called)', () => {
  it('accepts the request as sent, exactly once', async () => {
    const { host, events, jws, payload } = await capturedRequest();
    const first = await post(host, jws, payload.deadline);
    expect(first.status).toBe(200);
    expect(first.answer.body.status).toBe('answered');
    expect(events.seen).toHaveLength(1);
    // The same message again: a replay.
    const again = await post(host, jws, payload.deadline);
    expect(again.status).toBe(401);
    expect(refusal(again).code).toBe('connector.remote_replay');
    expect(events.seen).toHaveLength(1);
  });

  it('a tampered body', async () => {
    const { host, events, jws, payload } = await capturedRequest();
    const [h, p, s] = jws.split('.') as [string, string, string];
    const changed = Buffer.from(JSON.stringify({ ...payload, action: { ...payload.action, input: { amount: 999_999 } } })).toString('base64url');
    const r = refusal(await post(host, `${h}.${changed}.${s}`, payload.deadline));
    expect(r).toMatchObject({ code: 'connector.remote_signature_invalid', uncertain: false, details: { reason: 'signature' } });
    // A flipped signature byte too.
    const flipped = `${h}.${p}.${s.startsWith('A') ? 'B' : 'A'}${s.slice(1)}`;
    expect(refusal(await post(host, flipped, payload.deadline)).code).toBe('connector.remote_signature_invalid');
    // Unsigned (alg none) and empty.
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: REMOTE_TYP.request })).toString('base64url')}.${p}.`;
    expect(refusal(await post(host, none, payload.deadline)).code).toBe('connector.remote_signature_invalid');
    expect(refusal(await post(host, '', payload.deadline)).details.reason).toBe('unsigned');
    expect(events.seen).toHaveLength(0);
  });

  it('a wrong key: unknown kid, or the runtime kid with another key’s signature', async () => {
    const { host, events, payload } = await capturedRequest();
    expect(refusal(await post(host, await resign(attacker, { ...payload, iss: attacker.kid }), payload.deadline))).toMatchObject({
      code: 'connector.remote_signature_invalid',
      details: { reason: 'unknown_key' },
    });
    const impostor: RemoteSigner = { kid: runtimeSigner.kid, public_jwk: runtimeSigner.public_jwk, sign: attacker.sign };
    expect(refusal(await post(host, await resign(impostor, payload), payload.deadline))).toMatchObject({
      code: 'connector.remote_signature_invalid',
      details: { reason: 'signature' },
    });
    // A message of another kind (an answer) never verifies as a request.
    const wrongTyp = await signCompact(runtimeSigner, REMOTE_TYP.answer, payload);
    expect(refusal(await post(host, wrongTyp, payload.deadline))).toMatchObject({ code: 'connector.remote_signature_invalid', details: { reason: 'type' } });
    expect(events.seen).toHaveLength(0);
  });

  it('a stale iat (either side of the window)', async () => {
    const { host, events, payload } = await capturedRequest();
    for (const iat of [Date.now() - FRESHNESS_WINDOW_MS - 60_000, Date.now() + FRESHNESS_WINDOW_MS + 60_000]) {
      expect(refusal(await post(host, await resign(runtimeSigner, { ...payload, iat, nonce: `${payload.nonce}x${iat}` }), payload.deadline)).code).toBe(
        'connector.remote_stale',
      );
    }
    expect(events.seen).toHaveLength(0);
  });

  it('a deadline already past, or a deadline header that differs from the signed one', async () => {
    const { host, events, payload } = await capturedRequest();
    const past = new Date(Date.now() - 1_000).toISOString();
    const late = await post(host, await resign(runtimeSigner, { ...payload, deadline: past }), past);
    expect(late.status).toBe(504);
    expect(refusal(late).code).toBe('connector.remote_deadline_exceeded');
    const jws = await resign(runtimeSigner, payload);
    expect(refusal(await post(host, jws, new Date(Date.now() + 3_600_000).toISOString()))).toMatchObject({
      code: 'connector.remote_signature_invalid',
      details: { reason: 'deadline_header' },
    });
    expect(events.seen).toHaveLength(0);
  });

  it.each([
    ['connector_id', { connector_id: 'other' }],
    ['version', { version: '9.9.9' }],
    ['manifest_hash', { manifest_hash: 'f'.repeat(64) }],
    ['endpoint', { endpoint: 'https://elsewhere.test' }],
    ['connector_instance', { connector_instance: 'host-2' }],
    ['replica', { replica: 'host-1-b' }],
    ['peer_identity', { peer_identity: 'someone-else' }],
    ['credential_revision', { credential_revision: '7' }],
    ['tenant', { verified_tenant: 'tenant-b' }],
    ['capability_id', { capability_id: 'demo.pay' }],
  ])('a route mis-pinned on %s', async (field, change) => {
    const { host, events, payload } = await capturedRequest();
    const r = refusal(await post(host, await resign(runtimeSigner, { ...payload, route: { ...payload.route, ...change } }), payload.deadline));
    expect(r.code).toBe('connector.remote_route_mismatch');
    expect(r.details.mismatched).toContain(field);
    expect(events.seen).toHaveLength(0);
  });

  it('a request addressed to another endpoint, or for another attempt’s lease', async () => {
    const { host, payload } = await capturedRequest();
    expect(
      refusal(await post(host, await resign(runtimeSigner, { ...payload, aud: 'https://elsewhere.test' }), payload.deadline)).details.mismatched,
    ).toContain('aud');
    expect(
      refusal(
        await post(
          host,
          await resign(runtimeSigner, { ...payload, nonce: `${payload.nonce}L`, lease: { ...payload.lease, attempt_id: 'att-other' } }),
          payload.deadline,
        ),
      ).details.mismatched,
    ).toContain('lease');
  });
});

describe('runtime: answers it refuses', () => {
  async function attempt(tamper: Tamper, capability: 'demo.echo' | 'demo.pay' = 'demo.echo') {
    const host = await newHost();
    const sent: { jws: string; payload: RemoteRequest; deadline: string | undefined }[] = [];
    const action = demoAction(capability, `act-${Math.random().toString(36).slice(2)}`);
    const out = await runThroughProxy(proxyFor(hostFetch(host, sent, tamper)), action, { route: route(action.id, capability), chunks: [] });
    expect(sent).toHaveLength(1);
    expect(out.ok).toBe(false);
    if (out.ok) throw new Error('unreachable');
    return out;
  }
  const answerOf = (res: HostResponse) => JSON.parse(Buffer.from(res.body.split('.')[1] as string, 'base64url').toString('utf8')) as RemoteAnswer;
  const respond = async (signer: RemoteSigner, answer: unknown): Promise<HostResponse> => ({
    status: 200,
    headers: { 'content-type': 'application/jose' },
    body: await signCompact(signer, REMOTE_TYP.answer, answer),
  });

  it('an unsigned answer', async () => {
    const out = await attempt((res) => ({ ...res, body: JSON.stringify(answerOf(res)) }));
    expect(out.failure).toMatchObject({ code: 'connector.remote_signature_invalid', uncertain_outcome: true, operation: 'invocation' });
    expect(out.error.retryable).toBe(false);
  });

  it('an answer signed by another key (a forged completion)', async () => {
    const out = await attempt(async (res) => respond(attacker, { ...answerOf(res), iss: attacker.kid }));
    expect(out.failure).toMatchObject({ code: 'connector.remote_signature_invalid', uncertain_outcome: true, redacted_details: { reason: 'unknown_key' } });
    const impostor: RemoteSigner = { kid: hostSigner.kid, public_jwk: hostSigner.public_jwk, sign: attacker.sign };
    const out2 = await attempt(async (res) => respond(impostor, answerOf(res)));
    expect(out2.failure).toMatchObject({ code: 'connector.remote_signature_invalid', uncertain_outcome: true, redacted_details: { reason: 'signature' } });
  });

  it('an answer bound to another request (a replayed answer)', async () => {
    let earlier: HostResponse | undefined;
    await attempt(async (res) => {
      earlier = res;
      return respond(attacker, {});
    });
    const out = await attempt(() => earlier as HostResponse);
    expect(out.failure).toMatchObject({ code: 'connector.remote_answer_invalid', uncertain_outcome: true, redacted_details: { reason: 'request_binding' } });
  });

  it('a stale answer', async () => {
    const out = await attempt(async (res) => respond(hostSigner, { ...answerOf(res), iat: Date.now() - FRESHNESS_WINDOW_MS - 60_000 }));
    expect(out.failure).toMatchObject({ code: 'connector.remote_stale', uncertain_outcome: true });
  });

  it('an answer for another route', async () => {
    const out = await attempt(async (res) => {
      const a = answerOf(res);
      return respond(hostSigner, { ...a, route: { ...a.route, manifest_hash: '0'.repeat(64) } });
    });
    expect(out.failure).toMatchObject({
      code: 'connector.remote_route_mismatch',
      uncertain_outcome: true,
      redacted_details: { mismatched: ['manifest_hash'] },
    });
  });

  it('a lost answer is uncertain; an unreachable host is not (nothing was sent)', async () => {
    const lost = await attempt(() => {
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    });
    expect(lost.failure).toMatchObject({ code: 'connector.remote_answer_lost', uncertain_outcome: true });

    const action = demoAction('demo.echo', 'act-unreachable');
    const host = await newHost();
    const discovered = hostFetch(host, []);
    let calls = 0;
    const refusedConnect = (async (input: string | URL | Request, init?: RequestInit) => {
      if (init?.method !== 'POST') return discovered(input, init);
      calls++;
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    }) as typeof fetch;
    const out = await runThroughProxy(proxyFor(refusedConnect), action, { route: route(action.id), chunks: [] });
    expect(calls).toBe(1);
    expect(out.ok).toBe(false);
    expect(!out.ok && out.failure).toMatchObject({ code: 'connector.remote_unavailable', uncertain_outcome: false });
  });

  it('sends nothing for an attempt pinned to another peer, endpoint or replica', async () => {
    for (const change of [{ peer_identity: attacker.kid }, { endpoint: 'https://elsewhere.test' }, { replica: 'host-1-b' }]) {
      const host = await newHost();
      const sent: { jws: string; payload: RemoteRequest; deadline: string | undefined }[] = [];
      const action = demoAction('demo.echo', `act-${Math.random().toString(36).slice(2)}`);
      const out = await runThroughProxy(proxyFor(hostFetch(host, sent)), action, { route: route(action.id, 'demo.echo', change), chunks: [] });
      expect(sent).toHaveLength(0);
      expect(!out.ok && out.failure).toMatchObject({ code: 'connector.remote_route_mismatch', uncertain_outcome: false });
    }
  });
});

describe('what a valid exchange carries', () => {
  it('the trusted facts, the pinned route and the deadline; the context itself never travels', async () => {
    const host = await newHost();
    const sent: { jws: string; payload: RemoteRequest; deadline: string | undefined }[] = [];
    const chunks: { chunk: unknown }[] = [];
    const action = demoAction('demo.echo', 'act-facts');
    const out = await runThroughProxy(proxyFor(hostFetch(host, sent)), action, { route: route(action.id), chunks: chunks as never });
    expect(out.ok && out.result.output).toEqual({ echo: { amount: 100 } });
    // The host's stream chunks are published through the runtime-owned publisher, in order.
    expect(chunks.map((c) => c.chunk)).toEqual([
      { type: 'text', text: 'one' },
      { type: 'text', text: 'two' },
    ]);
    const r = sent[0] as { payload: RemoteRequest; deadline: string };
    expect(r.deadline).toBe(r.payload.deadline);
    expect(r.payload).toMatchObject({
      op: 'invoke_typed',
      aud: ENDPOINT,
      iss: runtimeSigner.kid,
      route: { peer_identity: hostKey.kid, peer_did: hostKey.did, manifest_hash: manifestHash },
    });
    expect(Object.keys(r.payload.context).sort()).toEqual(['actor', 'attempt_id', 'redaction', 'streaming', 'tenant', 'trace']);
  });

  it('a KMS DER signature converts to the JWS r||s form that verifies', async () => {
    const { private_jwk } = generateRemoteKeyPair();
    const signer = await localSigner(private_jwk);
    const key = createPrivateKey({ key: private_jwk, format: 'jwk' });
    const kmsLike: RemoteSigner = { kid: signer.kid, public_jwk: signer.public_jwk, sign: async (data) => derToRawEcdsa(nodeSign('sha256', data, key)) };
    const jws = await signCompact(kmsLike, REMOTE_TYP.request, { hello: 'world' });
    expect(verifyCompact(jws, REMOTE_TYP.request, await RemoteKeyring.of([signer.public_jwk])).payload).toEqual({ hello: 'world' });
  });
});
