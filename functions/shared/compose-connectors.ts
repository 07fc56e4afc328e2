/**
 * The connector half of the composition (./compose-runtime.ts imports it on
 * the first Runtime method that needs connectors, never for a read): the
 * enabled connectors, each with its deployment credential provider or, when
 * placed remotely, the signed proxy to its connector host; and their
 * capability registry. A function that only reads never loads this module,
 * the connector implementations, their schemas or the precompiled
 * validators (docs/bench/analysis.md, "Cold start and bundles").
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SecretValueCache } from '../../lib/aws/secrets/secret-cache.js';
import { SecretsManagerCredentialProvider } from '../../lib/aws/secrets/secrets-manager-provider.js';
import { secretsManagerReferences } from '../../lib/config/deployment.js';
import { FUNCTION_ENV } from '../../lib/config/function-env.js';
import { EnvCredentialProvider } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import type { CredentialProvider } from '../../packages/connector-sdk/src/ports/credentials.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import { staticConnectorHost, type ConnectorHost, type HostedConnector } from '../../lib/runtime/deps.js';
import { CapabilityRegistry, type ManifestSource } from '../../lib/runtime/registry-core.js';
import { PrecompiledMismatchError, precompiledCompilers, type PrecompiledRegistry } from '../../lib/runtime/schema-precompiled.js';
import { CONNECTOR_FACTORIES, type ConnectorFactory } from './connector-factories.js';
import { PRECOMPILED_REGISTRY } from './precompiled-registry.js';
import { BootstrapConfigError, type BootstrapSettings } from './settings.js';

/** What the connector half takes from the rest of the composition. */
export interface ConnectorWiring {
  readonly documents: DynamoDBDocumentClient;
  /** The composition's Secrets Manager client, built on first use. */
  readonly secrets: () => Promise<SecretsManagerClient>;
  readonly clock: Clock;
  /** Environment the local credential provider reads (default: process.env at resolve time). */
  readonly credentialEnv?: Readonly<Record<string, string | undefined>>;
  /** Factories that replace the build's own for the IDs they name (in-process hosts only). */
  readonly connectorFactories?: Readonly<Record<string, ConnectorFactory>>;
}

async function credentialProvider(
  settings: BootstrapSettings,
  connector_id: string,
  wiring: ConnectorWiring,
  secretCache: () => Promise<SecretValueCache>,
): Promise<CredentialProvider> {
  if (settings.credentials.source === 'local') {
    return new EnvCredentialProvider({
      connector_id,
      references: settings.credentials.references,
      ...(wiring.credentialEnv ? { env: wiring.credentialEnv } : {}),
    });
  }
  const cacheSeconds = settings.runtimeConfig.connectors.find((c) => c.id === connector_id)?.credentialCacheSeconds;
  return new SecretsManagerCredentialProvider({
    cache: await secretCache(),
    connector_id,
    references: secretsManagerReferences(settings.runtimeConfig, connector_id),
    ...(cacheSeconds !== undefined ? { max_age_seconds: cacheSeconds } : {}),
  });
}

/**
 * The capability registry of the enabled connectors. With a precompiled
 * registry in the bundle (infra/bundling.ts) its validators serve every
 * connector they were built for and ajv is never loaded; a connector they do
 * not cover (or no precompiled registry: `npm start`, the tests) is compiled
 * by run-time ajv, imported only then.
 */
export async function buildRegistry(
  manifests: readonly ManifestSource[],
  precompiled: PrecompiledRegistry | undefined = PRECOMPILED_REGISTRY,
): Promise<CapabilityRegistry> {
  if (precompiled !== undefined) {
    try {
      return CapabilityRegistry.fromManifests(manifests, { compilers: precompiledCompilers(precompiled) });
    } catch (err) {
      if (!(err instanceof PrecompiledMismatchError)) throw err;
    }
  }
  const { AJV_SCHEMA_COMPILERS } = await import('../../lib/runtime/schema-ajv.js');
  return CapabilityRegistry.fromManifests(manifests, {
    compilers: precompiled !== undefined ? precompiledCompilers(precompiled, AJV_SCHEMA_COMPILERS) : AJV_SCHEMA_COMPILERS,
  });
}

/** The enabled connectors, hosted, and their capability registry. */
export async function composeConnectors(
  settings: BootstrapSettings,
  wiring: ConnectorWiring,
): Promise<{ readonly registry: CapabilityRegistry; readonly connectors: ConnectorHost }> {
  // Imported only when connectors are placed remotely: the signed proxies, their keyring and the KMS client stay out of the other deployments' cold start.
  const remote =
    settings.remotePlacement !== undefined
      ? await (await import('../connector-host/compose.js')).remoteConnectorsFor(settings.remotePlacement, {
          envName: settings.runtimeConfig.envName,
          documents: wiring.documents,
          tableName: settings.tableName,
          clock: wiring.clock,
        })
      : undefined;
  // One secret cache for the composition, i.e. the execution environment, shared by its connectors.
  let cache: Promise<SecretValueCache> | undefined;
  const secretCache = () => (cache ??= wiring.secrets().then((client) => new SecretValueCache({ client })));
  const connectors: HostedConnector[] = [];
  for (const [index, { id }] of settings.runtimeConfig.connectors.entries()) {
    const proxy = remote?.get(id);
    if (proxy !== undefined) {
      connectors.push(proxy);
      continue;
    }
    const factory = wiring.connectorFactories?.[id] ?? CONNECTOR_FACTORIES[id];
    if (!factory) {
      throw new BootstrapConfigError([
        {
          variable: `${FUNCTION_ENV.runtimeConfig}: connectors[${index}].id`,
          message: `enables connector "${id}", which this build does not contain (available: ${Object.keys(CONNECTOR_FACTORIES).join(', ')})`,
        },
      ]);
    }
    const baseUrl = settings.connectorEndpoints[id];
    connectors.push(factory({ credentials: await credentialProvider(settings, id, wiring, secretCache), ...(baseUrl !== undefined ? { baseUrl } : {}) }));
  }
  const manifests = await Promise.all(connectors.map(async ({ connector }) => ({ manifest: await connector.discover({}), support: connector })));
  return { registry: await buildRegistry(manifests), connectors: staticConnectorHost(connectors) };
}
