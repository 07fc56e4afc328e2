/**
 * A remote connector host at its concurrency limit refuses an attempt, signed
 * and certain (`connector.remote_capacity_exhausted`: the connector was not
 * called). The runtime does not settle that action `failed`: the attempt gives
 * its lease back at its fence (`action.release_lease`) and the invoke message
 * comes back after Retry-After plus a jittered backoff (the worker's partial
 * batch failure and a visibility change), until the bound
 * (`capacity_deferral.max_deferrals`, capped by the invoke queue's
 * maxReceiveCount − 1) settles it `failed` with the refusal.
 *
 * Real parts: the actions, routes and idempotency reservations on DynamoDB
 * Local, the invoke queue on fauxqs driven by the deployed worker handler
 * through the local poller (Lambda's SQS event source), the runtime's signed
 * proxy answered by an in-process RemoteConnectorHost whose slots are a
 * CapacityGate. Concurrent attempts are held inside the connector on deferred
 * promises; the redelivery is awaited as an event with a generous deadline.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSqsPoller, type SqsPoller } from '../../../lib/aws/sqs/poller.js';
import { createSqsClient } from '../../../lib/aws/clients.js';
import { receiveMessages } from '../../../lib/aws/sqs/queue.js';
import { inject } from 'vitest';
import { RemoteConnectorHost } from '../../../lib/runtime/remote/host.js';
import { generateRemoteKeyPair, localSigner, RemoteKeyring, remoteKeyOf, type RemoteKey, type RemoteSigner } from '../../../lib/runtime/remote/jws.js';
import { remoteHostedConnector } from '../../../lib/runtime/remote/proxy.js';
import { InMemoryCapacityGate, InMemoryNonceStore } from '../../../lib/runtime/remote/stores.js';
import { ConnectorFailure, type ActionExecutionContext } from '../../../packages/connector-sdk/src/index.js';
import type { Action, ActionResult } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { RuntimeSettingsInput } from '../../../lib/runtime/config.js';
import { createInvokeHandler } from '../../../functions/worker/invoke.js';
import { SILENT_LOGGER } from '../../../functions/shared/logger.js';
import { DemoConnector, Gates } from '../../support/remote-fixture.js';
import { uid } from '../../support/transaction-fixtures.js';
import { eventually } from '../../support/wait.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

const ENDPOINT = 'https://host.capacity.test';

/** The demo connector: each invocation waits inside the connector until the test releases its action. */
class HeldConnector extends DemoConnector {
  readonly entered: string[] = [];
  /** Actions whose invocation the connector itself fails with the capacity code (an answer, not the host's signed refusal). */
  readonly failing = new Set<string>();
  readonly #gates = new Gates();
  release(action_id: string): void {
    this.#gates.open(action_id);
  }
  override async invoke_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    this.entered.push(action.id);
    if (this.failing.has(action.id))
      throw new ConnectorFailure({ code: 'connector.remote_capacity_exhausted', operation: 'invocation', source: 'connector:demo' });
    await this.#gates.passed(action.id);
    // demo.pay answers without a checkpoint here (no checkpoint receiver in this test): its result is the commit.
    if (action.capability_id === 'demo.pay') return { action_id: action.id, status: 'completed', output: { paid: true } };
    return super.invoke_typed(action, ctx);
  }
}

let runtimeSigner: RemoteSigner;
let hostSigner: RemoteSigner;
let hostKey: RemoteKey;
const open: Harness[] = [];

beforeAll(async () => {
  runtimeSigner = await localSigner(generateRemoteKeyPair().private_jwk);
  hostSigner = await localSigner(generateRemoteKeyPair().private_jwk);
  hostKey = await remoteKeyOf(hostSigner.public_jwk);
});
afterEach(async () => {
  for (const h of open.splice(0)) await h.destroy();
});

/** A runtime whose `demo` connector is remote: a host running at most one attempt of it at once. */
async function setup(config: RuntimeSettingsInput, invokeMaxReceiveCount?: number) {
  const demo = new HeldConnector();
  const host = await RemoteConnectorHost.create({
    endpoint: ENDPOINT,
    instance_id: 'host-1',
    replica: 'host-1-a',
    connectors: [{ connector: demo, max_concurrent_attempts: 1 }],
    signer: hostSigner,
    runtime_keys: await RemoteKeyring.of([runtimeSigner.public_jwk]),
    nonces: new InMemoryNonceStore(),
    capacity: new InMemoryCapacityGate(),
  });
  const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const headers = Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    const answer = await host.handle({
      method: init?.method ?? 'GET',
      path: `${url.pathname}${url.search}`,
      headers,
      body: typeof init?.body === 'string' ? init.body : '',
    });
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  }) as typeof fetch;
  const remote = remoteHostedConnector({
    connector_id: 'demo',
    endpoint: ENDPOINT,
    instance_id: 'host-1',
    replica: 'host-1-a',
    host_key: hostKey,
    signer: runtimeSigner,
    fetch: fetchImpl,
  });
  const manifest = await remote.connector.discover({});
  const h = await createHarness({
    connectors: [remote],
    discovered: [{ manifest, support: remote.connector }],
    config,
    prefix: 'rt-capacity',
    ...(invokeMaxReceiveCount !== undefined ? { invokeMaxReceiveCount } : {}),
  });
  open.push(h);
  const sqs = createSqsClient({ endpoint: inject('sqsEndpoint') });
  const handler = createInvokeHandler({ runtime: async () => h.runtime, observability: { logger: SILENT_LOGGER } });
  const poller: SqsPoller = createSqsPoller({
    client: sqs,
    queueUrl: h.invokeQueueUrl,
    queueArn: 'arn:aws:sqs:local:000000000000:rt-invoke',
    handler,
    waitTimeSeconds: 0,
  });
  return { demo, h, poller, sqs };
}

/** Submits one demo.echo invocation with an idempotency key (its message goes to the invoke queue). */
async function submit(h: Harness, action_id: string, key: string) {
  return h.runtime.submit(caller(), { id: action_id, capability_id: 'demo.echo', input: { n: 1 }, idempotency_key: key });
}

const record = (h: Harness, action_id: string) => h.stores.actions.get({ tenant_id: TENANT, action_id });

type Setup = Awaited<ReturnType<typeof setup>>;

/** Submits `action_id` and holds its attempt inside the connector (the host's one slot taken); `first`: that poll, settled once released. */
async function holdSlot({ demo, h, poller }: Setup, action_id: string, key: string): Promise<{ first: Promise<unknown> }> {
  await submit(h, action_id, key);
  const first = poller.pollOnce();
  await eventually(() => (demo.entered.includes(action_id) ? true : undefined), { what: 'the first attempt inside the connector' });
  return { first };
}

/** Delivers the invoke queue's messages until `action_id` settles `failed` (each refused delivery defers until the bound). */
function settledFailed({ h, poller }: Setup, action_id: string, what: string) {
  return eventually(
    async () => {
      await poller.pollOnce();
      const r = await record(h, action_id);
      return r?.status === 'failed' ? r : undefined;
    },
    { what, intervalMs: 100 },
  );
}

describe('a remote host at capacity: the attempt is deferred and redelivered, not settled failed', () => {
  it('redelivers the refused attempt after Retry-After, and it completes once a slot frees, with one provider call', async () => {
    const { demo, h, poller } = await setup({ capacity_deferral: { base_delay_ms: 0 } });
    const [a, b] = [uid('a'), uid('a')];
    const [ka, kb] = [uid('key'), uid('key')];
    await submit(h, a, ka);
    await submit(h, b, kb);

    // One batch, both records at once: one attempt holds the only slot inside the connector, the other is refused.
    const first = poller.pollOnce();
    const refused = await eventually(
      async () => {
        for (const id of [a, b]) if (((await record(h, id))?.deferrals ?? 0) > 0) return id;
        return undefined;
      },
      { what: 'one attempt deferred for capacity' },
    );
    const held = refused === a ? b : a;
    await eventually(() => (demo.entered.includes(held) ? true : undefined), { what: 'the other attempt inside the connector' });

    // Deferred honestly: still running, its lease given back at its fence, the connector never called for it.
    const deferredRecord = await record(h, refused);
    expect(deferredRecord).toMatchObject({ status: 'running', fence: 1, released_fence: 1, deferrals: 1 });
    expect(deferredRecord?.lease_owner).toBeUndefined();
    expect(deferredRecord?.result).toBeUndefined();
    expect(demo.entered).toEqual([held]);
    // A replay of its key while deferred: still in flight, not a failure.
    const inFlight = await submit(h, refused, refused === a ? ka : kb).then(
      (o) => o.action_result.status,
      (err: { code?: string }) => err.code,
    );
    expect(inFlight).toBe('runtime.action_in_flight');

    // The slot frees; the first batch ends: the held record succeeded, the refused one failed (redelivered later).
    demo.release(held);
    demo.release(refused);
    const firstBatch = await first;
    expect(firstBatch.succeeded).toHaveLength(1);
    expect(firstBatch.failed).toHaveLength(1);

    // The redelivery (after the host's Retry-After, 1 s) runs a first attempt again: it reaches the connector once and completes.
    await eventually(
      async () => {
        await poller.pollOnce();
        const r = await record(h, refused);
        return r?.status === 'completed' ? r : undefined;
      },
      { what: 'the deferred action completed after its redelivery', intervalMs: 100 },
    );
    const done = await record(h, refused);
    expect(done).toMatchObject({ status: 'completed', fence: 2, attempt: 2, deferrals: 1 });
    expect(demo.entered.filter((id) => id === refused)).toHaveLength(1);
    expect(demo.entered.filter((id) => id === held)).toHaveLength(1);

    // A replay of each key answers the completed result.
    for (const [id, key] of [
      [a, ka],
      [b, kb],
    ] as const) {
      const replay = await submit(h, id, key);
      expect(replay.disposition).toBe('replayed');
      expect(replay.action_result.status).toBe('completed');
    }
  });

  it('settles failed with connector.remote_capacity_exhausted once the deferral bound is spent, without ever calling the connector', async () => {
    const s = await setup({ capacity_deferral: { base_delay_ms: 0, max_deferrals: 1 } });
    const { demo, h } = s;
    const [a, b] = [uid('a'), uid('a')];
    const [ka, kb] = [uid('key'), uid('key')];
    const { first } = await holdSlot(s, a, ka);

    // The slot stays held while b is refused, deferred once, redelivered and refused again: the bound settles it.
    await submit(h, b, kb);
    const settled = await settledFailed(s, b, 'the refused action settled at its bound');
    expect(settled).toMatchObject({ status: 'failed', deferrals: 1, fence: 2 });
    expect(settled?.result?.error).toMatchObject({ code: 'connector.remote_capacity_exhausted', retryable: true });
    expect(settled?.result?.error?.uncertain_outcome).not.toBe(true);
    expect(demo.entered).toEqual([a]);

    demo.release(a);
    await first;
    expect((await record(h, a))?.status).toBe('completed');

    // A replay of the refused action's key answers its failure; the other's, its completion.
    const replay = await submit(h, b, kb);
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result).toMatchObject({ status: 'failed', error: { code: 'connector.remote_capacity_exhausted' } });
    expect((await submit(h, a, ka)).action_result.status).toBe('completed');
  });

  it('an execute deferred for capacity leaves its transaction prepared with no receipt, then commits once, with a verified chain', async () => {
    const { demo, h, poller } = await setup({ capacity_deferral: { base_delay_ms: 0 } });
    const [a, b] = [uid('a'), uid('a')];
    const [ta, tb] = [uid('tx'), uid('tx')];
    const [ka, kb] = [uid('key'), uid('key')];
    const pay = (id: string, tx: string, key: string) =>
      h.runtime.submit(caller(), {
        id,
        capability_id: 'demo.pay',
        input: { amount: 5 },
        idempotency_key: key,
        transaction: { mode: 'execute', transaction_id: tx },
      });
    await pay(a, ta, ka);
    const first = poller.pollOnce();
    await eventually(() => (demo.entered.includes(a) ? true : undefined), { what: 'the first payment inside the connector' });
    expect((await pay(b, tb, kb)).disposition).toBe('accepted');
    const before = await h.table.store.get({ tenant_id: TENANT, transaction_id: tb });
    expect(before?.status).toBe('prepared');

    const second = poller.pollOnce();
    const deferredRecord = await eventually(
      async () => {
        const r = await record(h, b);
        return (r?.deferrals ?? 0) > 0 ? r : undefined;
      },
      { what: 'the second payment deferred for capacity' },
    );
    expect(deferredRecord).toMatchObject({ status: 'running', released_fence: 1 });
    // Nothing happened to the transaction: still prepared, same revision, not one receipt more.
    const during = await h.table.store.get({ tenant_id: TENANT, transaction_id: tb });
    expect(during).toMatchObject({ status: 'prepared', revision: before?.revision, receipt_count: before?.receipt_count });
    expect((await second).failed).toHaveLength(1);

    demo.release(a);
    demo.release(b);
    await first;
    await eventually(
      async () => {
        await poller.pollOnce();
        return (await record(h, b))?.status === 'completed' ? true : undefined;
      },
      { what: 'the deferred payment committed after its redelivery', intervalMs: 100 },
    );
    expect((await h.table.store.get({ tenant_id: TENANT, transaction_id: tb }))?.status).toBe('committed');
    expect((await h.verifyChain(tb)).valid).toBe(true);
    expect(demo.entered.filter((id) => id === b)).toHaveLength(1);
    const replay = await pay(b, tb, kb);
    expect(replay.disposition).toBe('replayed');
    expect(replay.action_result.status).toBe('completed');
  });

  it('does not defer a message already delivered more times than the bound allows: it settles failed, before the DLQ could take it', async () => {
    const s = await setup({ capacity_deferral: { base_delay_ms: 0, max_deferrals: 3 } });
    const { demo, h } = s;
    const [a, b] = [uid('a'), uid('a')];
    const kb = uid('key');
    const { first } = await holdSlot(s, a, uid('key'));
    await submit(h, b, kb);
    const [delivery] = await h.receiveInvokes();
    if (delivery === undefined) throw new Error('no invoke message for the second action');
    // Its fourth delivery (three earlier ones failed, e.g. crashed), although the action was never deferred.
    const outcome = await h.runtime.runAttempt(delivery.message, { receive_count: 4 });
    expect(outcome).toMatchObject({ disposition: 'settled', retry: false });
    const settled = await record(h, b);
    expect(settled).toMatchObject({ status: 'failed' });
    expect(settled?.deferrals).toBeUndefined();
    expect(settled?.result?.error).toMatchObject({ code: 'connector.remote_capacity_exhausted' });
    expect(demo.entered).toEqual([a]);
    demo.release(a);
    await first;
  });

  it("never spends the invoke queue's last delivery on a deferral: with maxReceiveCount 3 and max_deferrals 10, receives 1-2 defer and receive 3 settles, before the DLQ", async () => {
    const s = await setup({ capacity_deferral: { base_delay_ms: 0, max_deferrals: 10 } }, 3);
    const { demo, h, sqs } = s;
    const [a, b] = [uid('a'), uid('a')];
    const kb = uid('key');
    const { first } = await holdSlot(s, a, uid('key'));

    // The slot stays held: b is refused on every delivery the queue makes.
    await submit(h, b, kb);
    const settled = await settledFailed(s, b, "the refused action settled on the queue's last delivery");
    // Two deferrals (receives 1 and 2), the third delivery settled: fence 3, the connector never called for it.
    expect(settled).toMatchObject({ status: 'failed', deferrals: 2, fence: 3 });
    expect(settled?.result?.error).toMatchObject({ code: 'connector.remote_capacity_exhausted', retryable: true });
    expect(demo.entered).toEqual([a]);
    // The settled message was acknowledged, so nothing reached the DLQ.
    const dlq = await receiveMessages(sqs, h.invokeDeadLetterQueueUrl as string, { waitTimeSeconds: 0 });
    expect(dlq).toEqual([]);

    demo.release(a);
    await first;
    const replay = await submit(h, b, kb);
    expect(replay.action_result).toMatchObject({ status: 'failed', error: { code: 'connector.remote_capacity_exhausted' } });
  });

  it("keeps today's handling for the same code when the host did not refuse it: the connector ran, the action settles failed at once", async () => {
    const { demo, h, poller } = await setup({ capacity_deferral: { base_delay_ms: 0 } });
    const a = uid('a');
    const key = uid('key');
    demo.failing.add(a);
    await submit(h, a, key);
    const batch = await poller.pollOnce();
    expect(batch.succeeded).toHaveLength(1);
    const settled = await record(h, a);
    expect(settled).toMatchObject({ status: 'failed', fence: 1 });
    expect(settled?.deferrals).toBeUndefined();
    expect(settled?.released_fence).toBeUndefined();
    expect(settled?.result?.error).toMatchObject({ code: 'connector.remote_capacity_exhausted' });
    expect(demo.entered).toEqual([a]);
  });
});
