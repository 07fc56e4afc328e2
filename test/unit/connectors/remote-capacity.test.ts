/**
 * The connector host's capacity check (admission check 6,
 * lib/runtime/remote/host.ts): a connector's `max_concurrent_attempts`
 * bounds the attempts of THAT connector the host runs at once. Real
 * concurrent attempts, each the runtime's own (runAttempt through the signed
 * proxy, answered by the host in-process), held inside the connector on a
 * deferred promise until the test lets them go: no sleeps.
 *
 * Beyond the limit the host refuses, signed: `connector.remote_capacity_exhausted`,
 * HTTP 429 with Retry-After, an RFC 9457 problem, certain (the connector was
 * not called) and retryable. Another connector of the same host is not
 * affected, a freed slot admits the next attempt, and `cancel_typed` is never
 * refused for capacity.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ActionExecutionContext, ConnectorManifest } from '../../../packages/connector-sdk/src/index.js';
import type { Action, ActionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import { createExecutionContext } from '../../../packages/connector-sdk/src/host.js';
import { RemoteConnectorHost } from '../../../lib/runtime/remote/host.js';
import { bindAttemptPlacement } from '../../../lib/runtime/attempts/placement.js';
import {
  generateRemoteKeyPair,
  localSigner,
  RemoteKeyring,
  remoteKeyOf,
  verifyCompact,
  type RemoteKey,
  type RemoteSigner,
} from '../../../lib/runtime/remote/jws.js';
import { REMOTE_TYP, RemoteAnswerSchema, type RemoteAnswer } from '../../../lib/runtime/remote/protocol.js';
import { RemoteConnector } from '../../../lib/runtime/remote/proxy.js';
import { InMemoryCapacityGate, InMemoryNonceStore } from '../../../lib/runtime/remote/stores.js';
import { hashJson } from '../../../packages/connector-sdk/src/protocol/index.js';
import { DemoConnector, Gates, deferred, demoAction, demoRoute, runThroughProxy } from '../../support/remote-fixture.js';

const ENDPOINT = 'https://host.test';

/** The demo connector whose `demo.echo` invocations wait inside the connector until released, one by one. */
class HeldConnector extends DemoConnector {
  readonly entered: string[] = [];
  readonly #gates = new Gates();
  readonly #arrivals: (() => void)[] = [];
  /** Resolves once `n` invocations are inside the connector. */
  inside(n: number): Promise<void> {
    if (this.entered.length >= n) return Promise.resolve();
    const d = deferred();
    const check = () => {
      if (this.entered.length >= n) d.resolve();
      else this.#arrivals.push(check);
    };
    this.#arrivals.push(check);
    return d.promise;
  }
  release(action_id: string): void {
    this.#gates.open(action_id);
  }
  override async invoke_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    this.entered.push(action.id);
    for (const waiting of this.#arrivals.splice(0)) waiting();
    await this.#gates.passed(action.id);
    return super.invoke_typed(action, ctx);
  }
}

/** The same connector under another ID: its own limit, its own slots. */
class OtherConnector extends HeldConnector {
  override readonly id: string = 'other';
  override async discover(): Promise<ConnectorManifest> {
    return { ...(await super.discover()), connector_id: 'other' };
  }
}

let runtimeSigner: RemoteSigner;
let hostSigner: RemoteSigner;
let hostKey: RemoteKey;

beforeAll(async () => {
  runtimeSigner = await localSigner(generateRemoteKeyPair().private_jwk);
  hostSigner = await localSigner(generateRemoteKeyPair().private_jwk);
  hostKey = await remoteKeyOf(hostSigner.public_jwk);
});

interface Posted {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly answer: RemoteAnswer;
}

async function setup(limits: { demo?: number; other?: number }) {
  const demo = new HeldConnector();
  const other = new OtherConnector();
  const host = await RemoteConnectorHost.create({
    endpoint: ENDPOINT,
    instance_id: 'host-1',
    replica: 'host-1-a',
    connectors: [
      { connector: demo, ...(limits.demo !== undefined ? { max_concurrent_attempts: limits.demo } : {}) },
      { connector: other, ...(limits.other !== undefined ? { max_concurrent_attempts: limits.other } : {}) },
    ],
    signer: hostSigner,
    runtime_keys: await RemoteKeyring.of([runtimeSigner.public_jwk]),
    nonces: new InMemoryNonceStore(),
    capacity: new InMemoryCapacityGate(),
  });
  const hostKeys = await RemoteKeyring.of([hostSigner.public_jwk]);
  const posted: Posted[] = [];
  const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const headers = Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    const answer = await host.handle({
      method: init?.method ?? 'GET',
      path: `${url.pathname}${url.search}`,
      headers,
      body: typeof init?.body === 'string' ? init.body : '',
    });
    if (init?.method === 'POST') {
      const verified = verifyCompact(answer.body, REMOTE_TYP.answer, hostKeys);
      posted.push({ status: answer.status, retryAfter: answer.headers['retry-after'] ?? null, answer: RemoteAnswerSchema.parse(verified.payload) });
    }
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  }) as typeof fetch;
  const proxy = (connector_id: string) =>
    new RemoteConnector({
      connector_id,
      endpoint: ENDPOINT,
      instance_id: 'host-1',
      replica: 'host-1-a',
      host_key: hostKey,
      signer: runtimeSigner,
      fetch: fetchImpl,
    });
  const hashes = {
    demo: hashJson(JSON.parse(JSON.stringify(await demo.discover()))),
    other: hashJson(JSON.parse(JSON.stringify(await other.discover()))),
  };
  /** One attempt of `connector_id`, exactly as the runtime runs it. */
  const run = (connector_id: 'demo' | 'other', action_id: string, capability_id: 'demo.echo' | 'demo.pay' = 'demo.echo') => {
    const action = demoAction(capability_id, action_id);
    const route = {
      ...demoRoute({ endpoint: ENDPOINT, peer_identity: hostKey.kid, peer_did: hostKey.did, manifest_hash: hashes[connector_id], action_id, capability_id }),
      connector_id,
    };
    return runThroughProxy(proxy(connector_id), action, { route, chunks: [] });
  };
  return { demo, other, host, posted, run, proxy: proxy('demo'), hashes };
}

const refusedFailure = (p: Posted) => {
  if (p.answer.body.status !== 'refused') throw new Error(`expected a refusal, got ${p.answer.body.status}`);
  return p.answer.body;
};

describe('remote host: per-connector concurrency limit', () => {
  it('runs the limit at once, refuses the next attempt with a typed, signed, retryable refusal, and admits again once a slot frees', async () => {
    const { demo, posted, run } = await setup({ demo: 2 });
    const first = run('demo', 'act-1');
    const second = run('demo', 'act-2');
    await demo.inside(2);

    // Both slots are held by attempts running inside the connector: the third is refused before the connector.
    const third = await run('demo', 'act-3');
    expect(third.ok).toBe(false);
    expect(demo.entered).toEqual(expect.arrayContaining(['act-1', 'act-2']));
    expect(demo.entered).not.toContain('act-3');
    const refusedPost = posted.find((p) => p.answer.body.status === 'refused');
    if (refusedPost === undefined) throw new Error('no refusal was answered');
    expect(refusedPost.status).toBe(429);
    expect(refusedPost.retryAfter).toBe('1');
    const body = refusedFailure(refusedPost);
    expect(body.failure).toMatchObject({
      code: 'connector.remote_capacity_exhausted',
      category: 'rate_limited',
      retryable: true,
      retry_after_ms: 1_000,
      uncertain_outcome: false,
      redacted_details: { refused_by: 'connector_host', connector_id: 'demo', max_concurrent_attempts: 2 },
    });
    expect(body.problem).toMatchObject({
      type: 'urn:aip:error:connector.remote_capacity_exhausted',
      status: 429,
      code: 'connector.remote_capacity_exhausted',
      retryable: true,
      retry_after_ms: 1_000,
    });
    // What the runtime's attempt sees: the host's own failure, certain and retryable.
    if (third.ok) throw new Error('unreachable');
    expect(third.error).toMatchObject({ code: 'connector.remote_capacity_exhausted', retryable: true, retry_after_ms: 1_000 });
    expect(third.error.uncertain_outcome).not.toBe(true);

    // One attempt ends: its slot frees, and the next attempt is admitted.
    demo.release('act-1');
    expect((await first).ok).toBe(true);
    const fourth = run('demo', 'act-4');
    await demo.inside(3);
    expect(demo.entered).toContain('act-4');
    demo.release('act-2');
    demo.release('act-4');
    expect((await second).ok).toBe(true);
    expect((await fourth).ok).toBe(true);
  });

  it('counts each connector against its own limit: a full connector does not block another one', async () => {
    const { demo, other, run } = await setup({ demo: 1, other: 1 });
    const held = run('demo', 'act-a');
    await demo.inside(1);
    const refused = await run('demo', 'act-b');
    expect(refused.ok || refused.error.code).toBe('connector.remote_capacity_exhausted');

    const otherRun = run('other', 'act-c');
    await other.inside(1);
    expect(other.entered).toEqual(['act-c']);
    other.release('act-c');
    demo.release('act-a');
    expect((await otherRun).ok).toBe(true);
    expect((await held).ok).toBe(true);
  });

  it('has no limit for a connector that sets none', async () => {
    const { demo, run } = await setup({ other: 1 });
    const runs = ['act-1', 'act-2', 'act-3', 'act-4', 'act-5'].map((id) => run('demo', id));
    await demo.inside(5);
    for (const id of demo.entered) demo.release(id);
    for (const out of await Promise.all(runs)) expect(out.ok).toBe(true);
  });

  it('never refuses cancel_typed for capacity: the runtime must be able to stop work at the limit', async () => {
    const { demo, run, proxy, hashes, posted } = await setup({ demo: 1 });
    const held = run('demo', 'act-held');
    await demo.inside(1);
    // A cancel of a transactional payment, sent while the only slot is held.
    const payId = 'act-pay';
    const route = {
      ...demoRoute({
        endpoint: ENDPOINT,
        peer_identity: hostKey.kid,
        peer_did: hostKey.did,
        manifest_hash: hashes.demo,
        action_id: payId,
        capability_id: 'demo.pay',
      }),
    };
    const cancelled = await cancelThroughProxy(proxy, demoAction('demo.pay', payId, 'execute'), route);
    expect(cancelled).toEqual({ accepted: true });
    expect(demo.events.cancelled).toEqual([payId]);
    expect(posted.filter((p) => p.answer.body.status === 'refused')).toEqual([]);
    demo.release('act-held');
    expect((await held).ok).toBe(true);
  });
});

/** Sends one cancel_typed through the proxy with the pinned route bound, as the runtime's timeout path does. */
async function cancelThroughProxy(proxy: RemoteConnector, action: Action, route: ReturnType<typeof demoRoute>) {
  await proxy.discover({});
  const now = new Date();
  const attempt = createExecutionContext(
    {
      attempt_id: `att-${action.id}`,
      action_id: action.id,
      capability_id: action.capability_id,
      deadline_at: new Date(now.getTime() + 60_000),
      streaming: false,
      actor: {
        principal: { id: 'alice', kind: 'user' },
        issuer: 'https://issuer.test',
        scheme: 'bearer_jwt',
        scopes: ['demo:write'],
        lifetime: { issued_at: now, expires_at: new Date(now.getTime() + 600_000) },
      },
      tenant: { tenant_id: 'tenant-a' },
      transaction: { transaction_id: `txn-${action.id}`, mode: 'execute' },
      trace: { trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) },
      redaction: { redaction_required: false, input_pointers: [], output_pointers: [] },
    },
    { transaction_checkpoints: { checkpoint: async () => undefined } },
  );
  bindAttemptPlacement(attempt.context, { route, lease: { attempt_id: `att-${action.id}`, fence: 1, expires_at: new Date(now.getTime() + 600_000) } });
  try {
    return await proxy.cancel_typed(action, attempt.context);
  } finally {
    await attempt.end({ drain: false });
  }
}
