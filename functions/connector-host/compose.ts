/**
 * Compositions of the remote placement:
 * - `composeConnectorHost`: a connector host from AIP_CONNECTOR_HOST_CONFIG:
 *   the enabled connectors built by this build's factories
 *   (functions/shared/connector-factories.ts) with the HOST's own credential
 *   provider (Secrets Manager rows, or local references), its signing key,
 *   the runtime keys it trusts and its nonce store;
 * - `remoteConnectorsFor`: the runtime's proxies (HostedConnectors) from
 *   AIP_REMOTE_CONNECTORS;
 * - `composeCheckpointReceiver`: the runtime's checkpoint receiver.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { KMSClient } from '@aws-sdk/client-kms';
import { createDynamoDbClient, createSecretsManagerClient } from '../../lib/aws/clients.js';
import { DynamoCapacityGate } from '../../lib/aws/dynamo/remote-capacity-gate.js';
import { DynamoNonceStore } from '../../lib/aws/dynamo/remote-nonce-store.js';
import { DynamoRemoteCheckpointInbox } from '../../lib/aws/dynamo/remote-checkpoint-inbox.js';
import { SecretValueCache } from '../../lib/aws/secrets/secret-cache.js';
import { SecretsManagerCredentialProvider } from '../../lib/aws/secrets/secrets-manager-provider.js';
import { toSecretsManagerReferences } from '../../lib/config/secret-references.js';
import { EnvCredentialProvider, type LocalCredentialReference } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import { CheckpointReceiver } from '../../lib/runtime/remote/callback.js';
import { remoteConfigSchemas, type ConnectorHostConfig, type RemotePlacement } from '../../lib/runtime/remote/config.js';
import { RemoteConnectorHost, type LocallyHostedConnector } from '../../lib/runtime/remote/host.js';
import { RemoteKeyring } from '../../lib/runtime/remote/jws.js';
import { remoteHostedConnector, type RemoteConnector } from '../../lib/runtime/remote/proxy.js';
import { InMemoryCapacityGate, InMemoryNonceStore, type CapacityGate, type NonceStore, type RemoteCheckpointInbox } from '../../lib/runtime/remote/stores.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import type { CredentialProvider } from '../../packages/connector-sdk/src/ports/credentials.js';
import type { HostedConnector } from '../../lib/runtime/deps.js';
import { CONNECTOR_FACTORIES, type ConnectorFactory } from '../shared/connector-factories.js';
import { KeyResolver } from './keys.js';

/** Parses a JSON configuration with its schema; the error names the variable and the paths. */
export function parseJsonConfig<T>(
  variable: string,
  raw: string | undefined,
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } } },
): T {
  if (raw === undefined || raw.trim() === '') throw new Error(`${variable} is required`);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new Error(`${variable} is not JSON`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw new Error(`${variable}: ${parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

export const parseHostConfig = (raw: string | undefined): ConnectorHostConfig =>
  parseJsonConfig('AIP_CONNECTOR_HOST_CONFIG', raw, remoteConfigSchemas().ConnectorHostConfigSchema);
export const parsePlacement = (raw: string | undefined): RemotePlacement =>
  parseJsonConfig('AIP_REMOTE_CONNECTORS', raw, remoteConfigSchemas().RemotePlacementSchema);

export interface HostOverrides {
  /** Local credential references (instead of the config's Secrets Manager rows) and the environment they read. */
  readonly localCredentials?: { readonly references: readonly LocalCredentialReference[]; readonly env?: Readonly<Record<string, string | undefined>> };
  readonly connectorFactories?: Readonly<Record<string, ConnectorFactory>>;
  /** The endpoint when the config says `function-url`. */
  readonly endpoint?: string;
  readonly nonces?: NonceStore;
  readonly capacity?: CapacityGate;
  readonly fetch?: typeof fetch;
  readonly clock?: Clock;
  readonly kms?: () => KMSClient;
  readonly dynamoEndpoint?: string;
}

export async function composeConnectorHost(config: ConnectorHostConfig, overrides: HostOverrides = {}): Promise<RemoteConnectorHost> {
  const keys = new KeyResolver(config.envName, overrides.kms);
  const endpoint = config.endpoint === 'function-url' ? overrides.endpoint : config.endpoint;
  if (endpoint === undefined) throw new Error('AIP_CONNECTOR_HOST_CONFIG: endpoint "function-url" needs the Function URL of the request');
  // One secret cache per host instance (execution environment), shared by its connectors: default age (docs/runtime.md, "Credentials").
  let secretCache: SecretValueCache | undefined;
  const secrets = () => {
    if (secretCache === undefined) secretCache = new SecretValueCache({ client: createSecretsManagerClient() });
    return secretCache;
  };
  const connectors: LocallyHostedConnector[] = config.connectors.map((c) => {
    const factory = overrides.connectorFactories?.[c.id] ?? CONNECTOR_FACTORIES[c.id];
    if (factory === undefined)
      throw new Error(`AIP_CONNECTOR_HOST_CONFIG: connector "${c.id}" is not in this build (available: ${Object.keys(CONNECTOR_FACTORIES).join(', ')})`);
    const credentials: CredentialProvider =
      overrides.localCredentials !== undefined
        ? new EnvCredentialProvider({
            connector_id: c.id,
            references: overrides.localCredentials.references,
            ...(overrides.localCredentials.env !== undefined ? { env: overrides.localCredentials.env } : {}),
          })
        : new SecretsManagerCredentialProvider({
            cache: secrets(),
            connector_id: c.id,
            references: toSecretsManagerReferences(c.id, c.credentials),
          });
    const built: HostedConnector = factory({ credentials, ...(c.baseUrl !== undefined ? { baseUrl: c.baseUrl } : {}) });
    return {
      connector: built.connector,
      credential_revision: c.credentialRevision,
      ...(c.maxConcurrentAttempts !== undefined ? { max_concurrent_attempts: c.maxConcurrentAttempts } : {}),
      ...(built.credential_handle !== undefined ? { credential_handle: (cap: string) => built.credential_handle?.(cap) } : {}),
    };
  });
  // The host's table (nonces and concurrency slots), shared by every environment; absent: process memory (one long-lived process).
  const hostTable =
    config.nonceTable !== undefined
      ? {
          client: DynamoDBDocumentClient.from(createDynamoDbClient(overrides.dynamoEndpoint !== undefined ? { endpoint: overrides.dynamoEndpoint } : {})),
          tableName: config.nonceTable,
        }
      : undefined;
  const nonces = overrides.nonces ?? (hostTable !== undefined ? new DynamoNonceStore(hostTable) : new InMemoryNonceStore());
  const capacity = overrides.capacity ?? (hostTable !== undefined ? new DynamoCapacityGate(hostTable) : new InMemoryCapacityGate());
  return RemoteConnectorHost.create({
    endpoint,
    instance_id: config.instanceId,
    replica: config.replica,
    connectors,
    signer: await keys.signer(config.signing, 'signing'),
    runtime_keys: new RemoteKeyring(await Promise.all(config.runtimeKeys.map((k, i) => keys.publicKey(k, `runtimeKeys[${i}]`)))),
    nonces,
    capacity,
    ...(config.callbackUrls !== undefined ? { callback_urls: config.callbackUrls } : {}),
    ...(overrides.fetch !== undefined ? { fetch: overrides.fetch } : {}),
    ...(overrides.clock !== undefined ? { clock: overrides.clock } : {}),
  });
}

export interface PlacementDeps {
  readonly envName: string;
  /** The runtime table (the checkpoint inbox lives there). */
  readonly documents: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly clock?: Clock;
  readonly fetch?: typeof fetch;
  readonly kms?: () => KMSClient;
}

/** The runtime's proxies, by connector ID. */
export async function remoteConnectorsFor(
  placement: RemotePlacement,
  deps: PlacementDeps,
): Promise<Map<string, HostedConnector & { readonly connector: RemoteConnector }>> {
  const keys = new KeyResolver(deps.envName, deps.kms);
  const signer = await keys.signer(placement.signing, 'AIP_REMOTE_CONNECTORS.signing');
  const inbox: RemoteCheckpointInbox = new DynamoRemoteCheckpointInbox({
    client: deps.documents,
    tableName: deps.tableName,
    ...(deps.clock !== undefined ? { now: () => deps.clock?.now() as Date } : {}),
  });
  const out = new Map<string, HostedConnector & { readonly connector: RemoteConnector }>();
  for (const [i, c] of placement.connectors.entries()) {
    out.set(
      c.id,
      remoteHostedConnector({
        connector_id: c.id,
        endpoint: c.endpoint,
        instance_id: c.instanceId,
        replica: c.replica,
        host_key: await keys.publicKey(c.hostKey, `AIP_REMOTE_CONNECTORS.connectors[${i}].hostKey`),
        signer,
        inbox,
        credential_revision: c.credentialRevision,
        ...(placement.callbackUrl !== undefined ? { callback_url: placement.callbackUrl } : {}),
        ...(deps.clock !== undefined ? { clock: deps.clock } : {}),
        ...(deps.fetch !== undefined ? { fetch: deps.fetch } : {}),
      }),
    );
  }
  return out;
}

/** The runtime's checkpoint receiver (its URL from the placement, or the Function URL it is served on). */
export async function composeCheckpointReceiver(placement: RemotePlacement, deps: PlacementDeps & { readonly url?: string }): Promise<CheckpointReceiver> {
  const keys = new KeyResolver(deps.envName, deps.kms);
  const signer = await keys.signer(placement.signing, 'AIP_REMOTE_CONNECTORS.signing');
  const url = deps.url ?? placement.callbackUrl;
  if (url === undefined) throw new Error('AIP_REMOTE_CONNECTORS.callbackUrl is required by the checkpoint receiver');
  return new CheckpointReceiver({
    signer,
    runtime_keys: await RemoteKeyring.of([signer.public_jwk]),
    host_keys: new RemoteKeyring(
      await Promise.all(placement.connectors.map((c, i) => keys.publicKey(c.hostKey, `AIP_REMOTE_CONNECTORS.connectors[${i}].hostKey`))),
    ),
    inbox: new DynamoRemoteCheckpointInbox({ client: deps.documents, tableName: deps.tableName }),
    url,
    ...(deps.clock !== undefined ? { clock: deps.clock } : {}),
  });
}
