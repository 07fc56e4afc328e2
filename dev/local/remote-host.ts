/**
 * The local stack's remote placement (`AIP_CONNECTOR_PLACEMENT=remote npm
 * start`, `startLocalStack({ connectorPlacement: 'remote' })`): the payments
 * connector runs in a connector host on its own loopback server
 * (functions/connector-host/server.ts around lib/runtime/remote/host.ts),
 * with ITS credential provider holding the simulator's API key; the runtime
 * holds only the signed proxy. The runtime's checkpoint receiver runs on a
 * second loopback server. Keys are P-256 JWKs: under `<dataDir>/remote-keys`
 * (kept across restarts, so routes pinned to the host's key stay valid), or
 * fresh in memory with `inMemory`.
 *
 * Fault hooks for tests (`stack.remote`): `dropAnswers(n)` destroys the
 * connection after the host ran the connector (the answer is lost),
 * `forgeAnswers(n)` replaces the answer with a "completed" one signed by
 * another key claiming the host's key ID.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { JWK } from 'jose';
import { generateRemoteKeyPair, localSigner, publicJwkOf, signCompact, type PublicJwk } from '../../lib/runtime/remote/jws.js';
import { REMOTE_TYP, type RemoteAnswer } from '../../lib/runtime/remote/protocol.js';
import type { RemotePlacement } from '../../lib/runtime/remote/config.js';
import type { LocalCredentialReference } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import type { RemoteConnectorHost } from '../../lib/runtime/remote/host.js';
import type { CheckpointReceiver } from '../../lib/runtime/remote/callback.js';
import type { ConnectorFactory } from '../../functions/shared/connector-factories.js';
import { composeCheckpointReceiver, composeConnectorHost } from '../../functions/connector-host/compose.js';
import { startRemoteServer, type AnswerDisposition, type RemoteServer } from '../../functions/connector-host/server.js';

export const LOCAL_HOST_INSTANCE = 'local-host';
export const LOCAL_HOST_REPLICA = 'local-host-0';

export interface LocalRemoteKeys {
  readonly runtime: JWK;
  readonly host: JWK;
}

/** The runtime's and the host's private JWKs: from `dir` (created on first use) or fresh. */
export function localRemoteKeys(dir: string | undefined): LocalRemoteKeys {
  const fresh = (): LocalRemoteKeys => ({ runtime: generateRemoteKeyPair().private_jwk, host: generateRemoteKeyPair().private_jwk });
  if (dir === undefined) return fresh();
  const path = join(dir, 'keys.json');
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as LocalRemoteKeys;
  } catch {
    const keys = fresh();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(path, JSON.stringify(keys), { mode: 0o600 });
    return keys;
  }
}

/** Test hooks of the local remote host. */
export interface LocalRemoteHost {
  readonly hostUrl: string;
  readonly receiverUrl: string;
  /** The host key's ID (the `peer_identity` routes pin) and DID. */
  readonly kid: string;
  readonly did: string;
  /** The next `n` typed-operation answers are lost after the connector ran. */
  dropAnswers(n: number): void;
  /** The next `n` typed-operation answers are replaced by a forged "completed" answer (another key, the host's kid). */
  forgeAnswers(n: number): void;
}

export interface StartLocalRemoteOptions {
  readonly keys: LocalRemoteKeys;
  readonly hostPort?: number;
  readonly receiverPort?: number;
  /** The payments connector factory the host uses (base URL = the simulator, tunables). */
  readonly payments: ConnectorFactory;
  /** Credential references of the host (the runtime gets none of the material). */
  readonly credentials: { readonly references: readonly LocalCredentialReference[]; readonly env: Readonly<Record<string, string>> };
  /** The runtime table (the checkpoint inbox). */
  readonly documents: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly clock?: { now(): Date };
  readonly onError?: (err: unknown) => void;
}

export interface StartedLocalRemote {
  readonly placement: RemotePlacement;
  readonly hooks: LocalRemoteHost;
  stop(): Promise<void>;
}

export async function startLocalRemote(o: StartLocalRemoteOptions): Promise<StartedLocalRemote> {
  let host: RemoteConnectorHost | undefined;
  let receiver: CheckpointReceiver | undefined;
  let drop = 0;
  let forge = 0;
  const forger = await localSigner(generateRemoteKeyPair().private_jwk);
  const hostSigner = await localSigner(o.keys.host);
  const intercept = async (
    req: { method: string },
    answer: { status: number; headers: Readonly<Record<string, string>>; body: string },
  ): Promise<AnswerDisposition> => {
    if (req.method !== 'POST') return 'send';
    if (drop > 0) {
      drop--;
      return 'drop';
    }
    if (forge > 0) {
      forge--;
      const real = JSON.parse(Buffer.from(answer.body.split('.')[1] as string, 'base64url').toString('utf8')) as RemoteAnswer;
      const forged: RemoteAnswer = {
        ...real,
        body: {
          status: 'answered',
          outcome: { type: 'result', result: { action_id: 'forged', status: 'completed', output: { forged: true } } },
          checkpoints: [],
          chunks: [],
          provider_effect_committed: false,
          timed_out: false,
        },
      };
      const impostor = { ...forger, kid: hostSigner.kid };
      return { replace: { status: 200, headers: answer.headers, body: await signCompact(impostor, REMOTE_TYP.answer, forged) } };
    }
    return 'send';
  };
  const servers: RemoteServer[] = [];
  const stop = async () => {
    for (const s of servers.splice(0).reverse()) await s.stop();
  };
  try {
    const hostServer = await startRemoteServer({
      port: o.hostPort ?? 0,
      handle: (req) => (host as RemoteConnectorHost).handle(req),
      intercept,
      ...(o.onError !== undefined ? { onError: o.onError } : {}),
    });
    servers.push(hostServer);
    const receiverServer = await startRemoteServer({
      port: o.receiverPort ?? 0,
      handle: (req) => (receiver as CheckpointReceiver).handle(req),
      ...(o.onError !== undefined ? { onError: o.onError } : {}),
    });
    servers.push(receiverServer);

    const runtimePublic: PublicJwk = publicJwkOf(o.keys.runtime);
    const hostPublic: PublicJwk = publicJwkOf(o.keys.host);
    const placement: RemotePlacement = {
      signing: { source: 'inline', jwk: o.keys.runtime as never },
      callbackUrl: receiverServer.url,
      connectors: [
        {
          id: 'payments',
          endpoint: hostServer.url,
          instanceId: LOCAL_HOST_INSTANCE,
          replica: LOCAL_HOST_REPLICA,
          hostKey: { source: 'inline', jwk: { ...hostPublic } },
          credentialRevision: '0',
        },
      ],
    };
    host = await composeConnectorHost(
      {
        envName: 'local',
        endpoint: hostServer.url,
        instanceId: LOCAL_HOST_INSTANCE,
        replica: LOCAL_HOST_REPLICA,
        signing: { source: 'inline', jwk: o.keys.host as never },
        runtimeKeys: [{ source: 'inline', jwk: { ...runtimePublic } }],
        connectors: [{ id: 'payments', credentialRevision: '0', credentials: [] }],
        callbackUrls: [receiverServer.url],
      },
      {
        localCredentials: { references: o.credentials.references, env: o.credentials.env },
        connectorFactories: { payments: o.payments },
        ...(o.clock !== undefined ? { clock: o.clock } : {}),
      },
    );
    receiver = await composeCheckpointReceiver(placement, {
      envName: 'local',
      documents: o.documents,
      tableName: o.tableName,
      ...(o.clock !== undefined ? { clock: o.clock } : {}),
    });
    const h = host;
    return {
      placement,
      hooks: {
        hostUrl: hostServer.url,
        receiverUrl: receiverServer.url,
        kid: h.kid,
        did: h.did,
        dropAnswers: (n) => {
          drop = n;
        },
        forgeAnswers: (n) => {
          forge = n;
        },
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
