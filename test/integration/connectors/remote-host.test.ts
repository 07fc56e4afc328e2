/**
 * The remote proxy against a connector host over loopback HTTP
 * (functions/connector-host/server.ts), with the runtime's checkpoint
 * receiver on a second loopback server and its inbox on DynamoDB Local.
 *
 * - discovery and health: the signed manifest the host publishes is what the
 *   proxy serves (implementation support, reconcile lookup, credential handle);
 * - a streaming invocation: the host's chunks arrive through the runtime's
 *   publisher in order, before the terminal result;
 * - a transactional execute: the checkpoint is durable in the inbox BEFORE
 *   the connector goes on (the connector reads the inbox right after its
 *   checkpoint resolved), and the runtime's own writer receives it;
 * - a lost answer: an uncertain failure, and the checkpoint is still folded
 *   from the inbox; a reconciliation without a known operation finds it there;
 * - the receiver refuses a checkpoint signed by a key that is not pinned, and
 *   a conflicting operation for the same transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTable, type TestTable } from '../../support/dynamo.js';
import {
  generateRemoteKeyPair,
  localSigner,
  RemoteKeyring,
  remoteKeyOf,
  signCompact,
  verifyCompact,
  type RemoteKey,
  type RemoteSigner,
} from '../../../lib/runtime/remote/jws.js';
import { RemoteConnectorHost } from '../../../lib/runtime/remote/host.js';
import { CheckpointReceiver } from '../../../lib/runtime/remote/callback.js';
import { RemoteConnector } from '../../../lib/runtime/remote/proxy.js';
import { InMemoryNonceStore } from '../../../lib/runtime/remote/stores.js';
import { REMOTE_TYP, RemoteCheckpointAckSchema } from '../../../lib/runtime/remote/protocol.js';
import { DynamoRemoteCheckpointInbox } from '../../../lib/aws/dynamo/remote-checkpoint-inbox.js';
import { startRemoteServer, type AnswerDisposition, type RemoteServer } from '../../../functions/connector-host/server.js';
import type { ProviderOperationRef } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { TransactionCheckpointWriter } from '../../../packages/connector-sdk/src/index.js';
import { DemoConnector, demoAction, demoRoute, runThroughProxy, type DemoEvents } from '../../support/remote-fixture.js';

let table: TestTable;
let inbox: DynamoRemoteCheckpointInbox;
let runtimeSigner: RemoteSigner;
let hostSigner: RemoteSigner;
let hostKey: RemoteKey;
let hostServer: RemoteServer;
let receiverServer: RemoteServer;
let proxy: RemoteConnector;
let next: AnswerDisposition = 'send';
const events: DemoEvents = { seen: [], cancelled: [] };

beforeAll(async () => {
  table = await createTestTable({ prefix: 'remote' });
  inbox = new DynamoRemoteCheckpointInbox({ client: table.client, tableName: table.tableName });
  runtimeSigner = await localSigner(generateRemoteKeyPair().private_jwk);
  hostSigner = await localSigner(generateRemoteKeyPair().private_jwk);
  hostKey = await remoteKeyOf(hostSigner.public_jwk);
  let host: RemoteConnectorHost | undefined;
  let receiver: CheckpointReceiver | undefined;
  hostServer = await startRemoteServer({
    handle: (req) => (host as RemoteConnectorHost).handle(req),
    intercept: (req) => {
      if (req.method !== 'POST') return 'send';
      const d = next;
      next = 'send';
      return d;
    },
  });
  receiverServer = await startRemoteServer({ handle: (req) => (receiver as CheckpointReceiver).handle(req) });
  host = await RemoteConnectorHost.create({
    endpoint: hostServer.url,
    instance_id: 'host-1',
    replica: 'host-1-a',
    connectors: [{ connector: new DemoConnector(events), credential_handle: () => 'demo/api_key' }],
    signer: hostSigner,
    runtime_keys: await RemoteKeyring.of([runtimeSigner.public_jwk]),
    nonces: new InMemoryNonceStore(),
    callback_urls: [receiverServer.url],
  });
  receiver = new CheckpointReceiver({
    signer: runtimeSigner,
    runtime_keys: await RemoteKeyring.of([runtimeSigner.public_jwk]),
    host_keys: await RemoteKeyring.of([hostSigner.public_jwk]),
    inbox,
    url: receiverServer.url,
  });
  proxy = new RemoteConnector({
    connector_id: 'demo',
    endpoint: hostServer.url,
    instance_id: 'host-1',
    replica: 'host-1-a',
    host_key: hostKey,
    signer: runtimeSigner,
    inbox,
    callback_url: receiverServer.url,
  });
});

afterAll(async () => {
  await hostServer?.stop();
  await receiverServer?.stop();
  await table?.destroy();
});

const route = (action_id: string, capability_id: string, manifest_hash: string) =>
  demoRoute({ endpoint: hostServer.url, peer_identity: hostKey.kid, peer_did: hostKey.did, manifest_hash, action_id, capability_id });

function recordingWriter(): TransactionCheckpointWriter & { readonly written: ProviderOperationRef[] } {
  const written: ProviderOperationRef[] = [];
  return { written, checkpoint: async ({ provider_operation }) => void written.push(provider_operation) };
}

describe('remote proxy ↔ connector host over loopback HTTP', () => {
  it('discovery and health come from the signed manifest the host publishes', async () => {
    const manifest = await proxy.discover({});
    expect(manifest.connector_id).toBe('demo');
    expect(proxy.implementation_support('demo.pay')).toMatchObject({ transaction: true, reconciliation: true });
    expect(proxy.reconcile_lookup('demo.pay')).toEqual(['provider_operation', 'idempotency_key']);
    expect(proxy.credential_handle('demo.pay')).toBe('demo/api_key');
    expect(await proxy.health({})).toEqual({ ready: true });
  });

  it('a streaming invocation: chunks through the runtime publisher, in order, then the result', async () => {
    const chunks: { sequence: number; chunk: unknown }[] = [];
    const action = demoAction('demo.echo', 'act-stream');
    const out = await runThroughProxy(proxy, action, {
      route: route(action.id, 'demo.echo', proxy.published?.manifest_hash as string),
      chunks: chunks as never,
    });
    expect(out.ok && out.result).toMatchObject({ status: 'completed', output: { echo: { amount: 100 } } });
    expect(chunks.map((c) => [c.sequence, c.chunk])).toEqual([
      [0, { type: 'text', text: 'one' }],
      [1, { type: 'text', text: 'two' }],
    ]);
    // The host resolved the credential handle the host published, for the tenant the runtime verified.
    expect(events.seen.at(-1)).toMatchObject({ op: 'invoke', tenant: 'tenant-a' });
  });

  it('a transactional execute: the checkpoint is durable before the connector goes on', async () => {
    const action = demoAction('demo.pay', 'act-pay');
    const durableFirst: boolean[] = [];
    events.afterCheckpoint = async (ref) => {
      const found = await inbox.get({ tenant_id: 'tenant-a', transaction_id: `txn-${action.id}` });
      durableFirst.push(found?.provider_operation.operation_id === ref.operation_id);
    };
    const writer = recordingWriter();
    const out = await runThroughProxy(proxy, action, {
      route: route(action.id, 'demo.pay', proxy.published?.manifest_hash as string),
      transaction: { transaction_id: `txn-${action.id}`, mode: 'execute' },
      checkpoints: writer,
    });
    events.afterCheckpoint = undefined;
    expect(durableFirst).toEqual([true]);
    expect(out.ok && out.result.output).toEqual({ paid: true, operation_id: `op-${action.id}` });
    expect(writer.written).toEqual([{ provider: 'demo-provider', operation_id: `op-${action.id}` }]);
    expect(out.provider_operation).toEqual({ provider: 'demo-provider', operation_id: `op-${action.id}` });
    expect(out.provider_effect_committed).toBe(true);
  });

  it('a lost answer: uncertain, the checkpoint folded from the inbox; a reconciliation finds it there', async () => {
    const action = demoAction('demo.pay', 'act-lost');
    const writer = recordingWriter();
    next = 'drop';
    const out = await runThroughProxy(proxy, action, {
      route: route(action.id, 'demo.pay', proxy.published?.manifest_hash as string),
      transaction: { transaction_id: `txn-${action.id}`, mode: 'execute' },
      checkpoints: writer,
    });
    expect(out.ok).toBe(false);
    expect(!out.ok && out.failure).toMatchObject({ code: 'connector.remote_answer_lost', uncertain_outcome: true });
    expect(writer.written).toEqual([{ provider: 'demo-provider', operation_id: `op-${action.id}` }]);
    expect(out.provider_operation?.operation_id).toBe(`op-${action.id}`);

    // A reconcile attempt whose record lacks the operation (e.g. the worker died before it folded it).
    const rcn = { ...demoAction('demo.pay', 'rcn-lost', 'reconcile'), transaction: { mode: 'reconcile' as const, transaction_id: `txn-${action.id}` } };
    const rcnWriter = recordingWriter();
    const rec = await runThroughProxy(proxy, rcn, {
      route: route(rcn.id, 'demo.pay', proxy.published?.manifest_hash as string),
      transaction: {
        transaction_id: `txn-${action.id}`,
        mode: 'reconcile',
        original_request: { action_id: action.id, capability_id: 'demo.pay', transaction_id: `txn-${action.id}` },
      },
      checkpoints: rcnWriter,
    });
    // The proxy found the operation in the inbox, checkpointed it on the record, and the host reconciled it by ID.
    expect(rcnWriter.written).toEqual([{ provider: 'demo-provider', operation_id: `op-${action.id}` }]);
    expect(rec.ok && rec.reconciliation).toMatchObject({ terminal: true, original_commit_completed: true });
    expect(rec.ok && rec.result.output).toEqual({ paid: true, operation_id: `op-${action.id}` });
  });

  it('the receiver refuses a checkpoint from a key that is not pinned, and a conflicting operation', async () => {
    const action = demoAction('demo.pay', 'act-conflict');
    const writer = recordingWriter();
    await runThroughProxy(proxy, action, {
      route: route(action.id, 'demo.pay', proxy.published?.manifest_hash as string),
      transaction: { transaction_id: `txn-${action.id}`, mode: 'execute' },
      checkpoints: writer,
    });
    const stored = await inbox.get({ tenant_id: 'tenant-a', transaction_id: `txn-${action.id}` });
    expect(stored?.provider_operation.operation_id).toBe(`op-${action.id}`);

    // Capture a real request (the runtime-signed one) from the host side to build callbacks.
    let requestJws = '';
    const probe = await RemoteConnectorHost.create({
      endpoint: hostServer.url,
      instance_id: 'host-1',
      replica: 'host-1-a',
      connectors: [{ connector: new DemoConnector() }],
      signer: hostSigner,
      runtime_keys: await RemoteKeyring.of([runtimeSigner.public_jwk]),
      nonces: new InMemoryNonceStore(),
    });
    const capturing = new RemoteConnector({
      connector_id: 'demo',
      endpoint: hostServer.url,
      instance_id: 'host-1',
      replica: 'host-1-a',
      host_key: hostKey,
      signer: runtimeSigner,
      fetch: (async (input: string | URL | Request, init?: RequestInit) => {
        const url = new URL(String(input));
        if (init?.method === 'POST') requestJws = String(init.body);
        const res = await probe.handle({
          method: init?.method ?? 'GET',
          path: `${url.pathname}${url.search}`,
          headers: { 'aip-deadline': (init?.headers as Record<string, string> | undefined)?.['aip-deadline'] },
          body: String(init?.body ?? ''),
        });
        return new Response(res.body, { status: res.status, headers: res.headers });
      }) as typeof fetch,
    });
    await runThroughProxy(capturing, action, {
      route: route(action.id, 'demo.pay', proxy.published?.manifest_hash as string),
      transaction: { transaction_id: `txn-${action.id}`, mode: 'execute' },
      checkpoints: recordingWriter(),
    });
    expect(requestJws).not.toBe('');

    const callback = (signer: RemoteSigner, operation_id: string) =>
      signCompact(signer, REMOTE_TYP.checkpoint, {
        v: 1,
        kind: 'checkpoint',
        iss: signer.kid,
        aud: receiverServer.url,
        iat: Date.now(),
        nonce: 'n'.repeat(24),
        request: requestJws,
        seq: 0,
        provider_operation: { provider: 'demo-provider', operation_id },
      });
    const post = async (body: string) => {
      const res = await fetch(receiverServer.url, { method: 'POST', headers: { 'content-type': 'application/jose' }, body });
      const ack = RemoteCheckpointAckSchema.parse(
        verifyCompact(await res.text(), REMOTE_TYP.checkpoint_ack, await RemoteKeyring.of([runtimeSigner.public_jwk])).payload,
      );
      return { status: res.status, ack };
    };
    const stranger = await localSigner(generateRemoteKeyPair().private_jwk);
    const refused = await post(await callback(stranger, 'op-evil'));
    expect(refused).toMatchObject({ status: 401, ack: { status: 'refused', failure: { code: 'connector.remote_signature_invalid' } } });
    const conflict = await post(await callback(hostSigner, 'op-other'));
    expect(conflict).toMatchObject({ status: 409, ack: { status: 'refused', failure: { code: 'transaction.provider_operation_conflict' } } });
    const same = await post(await callback(hostSigner, `op-${action.id}`));
    expect(same).toMatchObject({ status: 200, ack: { status: 'durable', seq: 0 } });
    expect((await inbox.get({ tenant_id: 'tenant-a', transaction_id: `txn-${action.id}` }))?.provider_operation.operation_id).toBe(`op-${action.id}`);
  });
});
