/**
 * The connector half of the composition (./compose-runtime.ts imports it on
 * the first Runtime method that needs connectors, never for a read): the
 * enabled connectors, each with its deployment credential provider or, when
 * placed remotely, the signed proxy to its connector host; and their
 * capability registry. A function that only reads never loads this module,
 * the connector implementations, their schemas or the precompiled
 * validators (docs/bench/analysis.md, "Cold start and bundles").
 *
 * Connectors on first use: when the bundle's precompiled registry
 * (./precompiled-registry.ts) was built for an enabled connector as this
 * composition builds it (same ID and base URL), the registry is built from the
 * manifest and support records it carries, and the connector itself is
 * imported and built on its first use (`loadConnector`, lib/runtime/deps.ts):
 * an attempt, a preview, a reconcile, a provider lookup or the readiness
 * check. Its code (./connector-factories.ts and the implementations, the
 * HTTP connector with its JSON Schema converter, lib/connectors/http/json-schema-to-zod.ts) is a chunk of its
 * own, which a submit of an `execute` and the capabilities listing never
 * load. The connector built then is checked against the precompiled
 * manifest and support records it stood for (docs/bench/analysis.md,
 * "Issue 22: the routes that load the connectors").
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SecretValueCache } from '../../lib/aws/secrets/secret-cache.js';
import { SecretsManagerCredentialProvider } from '../../lib/aws/secrets/secrets-manager-provider.js';
import { secretsManagerReferences } from '../../lib/config/secret-references.js';
import { FUNCTION_ENV } from '../../lib/config/function-env.js';
import { EnvCredentialProvider } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import type { CredentialProvider } from '../../packages/connector-sdk/src/ports/credentials.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { hashJson } from '../../packages/connector-sdk/src/protocol/canonical.js';
import { staticConnectorHost, type ConnectorHost, type HostedConnector } from '../../lib/runtime/deps.js';
import { CapabilityRegistry, type ManifestSource } from '../../lib/runtime/registry-core.js';
import { PrecompiledMismatchError, precompiledCompilers, type PrecompiledConnector, type PrecompiledRegistry } from '../../lib/runtime/schema-precompiled.js';
import type { ConnectorFactory } from './connector-factories.js';
import { PRECOMPILED_REGISTRY } from './precompiled-registry.js';
import { BootstrapConfigError, type BootstrapSettings } from './settings-core.js';

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
  /** The precompiled registry (default: the bundle's, ./precompiled-registry.ts; none under `npm start` and in the tests). */
  readonly precompiled?: PrecompiledRegistry | undefined;
}

function credentialProvider(
  settings: BootstrapSettings,
  connector_id: string,
  wiring: ConnectorWiring,
  secretCache: () => SecretValueCache,
): CredentialProvider {
  if (settings.credentials.source === 'local') {
    return new EnvCredentialProvider({
      connector_id,
      references: settings.credentials.references,
      ...(wiring.credentialEnv ? { env: wiring.credentialEnv } : {}),
    });
  }
  const cacheSeconds = settings.runtimeConfig.connectors.find((c) => c.id === connector_id)?.credentialCacheSeconds;
  return new SecretsManagerCredentialProvider({
    cache: secretCache(),
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
  // Its client (and Powertools Parameters) load on the first credential a connector resolves.
  let cache: SecretValueCache | undefined;
  const secretCache = () => (cache ??= new SecretValueCache({ client: wiring.secrets }));
  const precompiled = 'precompiled' in wiring ? wiring.precompiled : PRECOMPILED_REGISTRY;
  const connectors: HostedConnector[] = [];
  const onFirstUse = new Map<string, OnFirstUse>();
  // Read once every connector is built, as before: a connector that fails to build fails the composition before any discovery starts.
  const manifests: (() => ManifestSource | Promise<ManifestSource>)[] = [];
  for (const [index, { id }] of settings.runtimeConfig.connectors.entries()) {
    const proxy = remote?.get(id);
    if (proxy !== undefined) {
      connectors.push(proxy);
      manifests.push(() => discovered(proxy));
      continue;
    }
    const baseUrl = settings.connectorEndpoints[id];
    const options = (credentials: CredentialProvider) => ({ credentials, ...(baseUrl !== undefined ? { baseUrl } : {}) });
    const entry = precompiledEntry(precompiled, id, baseUrl);
    if (entry !== undefined) {
      // The bundling built this connector from this build's factories: its factory is there, imported on first use.
      const credentials = credentialProvider(settings, id, wiring, secretCache);
      onFirstUse.set(
        id,
        builtOnFirstUse(entry, async () => (await factoryOf(id, index, wiring))(options(credentials))),
      );
      // With the registration the bundling recorded (and checked) for them: composing neither admits nor hashes the manifest.
      manifests.push(() => ({ manifest: entry.manifest, support: entry.support, recorded: entry.recorded }));
      continue;
    }
    const factory = await factoryOf(id, index, wiring);
    const hosted = factory(options(credentialProvider(settings, id, wiring, secretCache)));
    connectors.push(hosted);
    manifests.push(() => discovered(hosted));
  }
  const registry = await buildRegistry(await Promise.all(manifests.map((read) => read())), precompiled);
  return { registry, connectors: withConnectorsOnFirstUse(staticConnectorHost(connectors), onFirstUse) };
}

/**
 * The factory of connector `id`: the in-process host's own, else this build's
 * (./connector-factories.ts, with the connector implementations: imported
 * only when a connector is built).
 */
async function factoryOf(id: string, index: number, wiring: ConnectorWiring): Promise<ConnectorFactory> {
  const own = wiring.connectorFactories?.[id];
  if (own !== undefined) return own;
  const { CONNECTOR_FACTORIES } = await import('./connector-factories.js');
  const factory = CONNECTOR_FACTORIES[id];
  if (!factory) {
    throw new BootstrapConfigError([
      {
        variable: `${FUNCTION_ENV.runtimeConfig}: connectors[${index}].id`,
        message: `enables connector "${id}", which this build does not contain (available: ${Object.keys(CONNECTOR_FACTORIES).join(', ')})`,
      },
    ]);
  }
  return factory;
}

/** What the registry admits of a connector that is built: the manifest it discovers, and its own support records. */
async function discovered({ connector }: HostedConnector): Promise<ManifestSource> {
  return { manifest: await connector.discover({}), support: connector };
}

/**
 * The precompiled entry of connector `id` when the bundling built it as this
 * composition would: the same connector ID, the same base URL
 * (AIP_CONNECTOR_ENDPOINTS), and a manifest of that ID. Its manifest and
 * support records are then what the connector's code publishes.
 */
export function precompiledEntry(precompiled: PrecompiledRegistry | undefined, id: string, baseUrl: string | undefined): PrecompiledConnector | undefined {
  return precompiled?.connectors.find((c) => c.connector_id === id && c.base_url === baseUrl && c.manifest.connector_id === id);
}

/** A connector built on first use: `load` builds it (once), `get` answers it once built. */
interface OnFirstUse {
  load(): Promise<void>;
  get(): HostedConnector;
}

/**
 * The hosted connector, built by `build` on the first `load` and kept (a
 * build that fails is tried again by the next). It must publish the
 * precompiled manifest and support records the registry was built from: a
 * connector whose code publishes something else at run time than at bundle
 * time (say, from the environment) fails loudly on every use instead of
 * running under a registry that does not describe it.
 */
function builtOnFirstUse(entry: PrecompiledConnector, build: () => Promise<HostedConnector>): OnFirstUse {
  let built: HostedConnector | undefined;
  let pending: Promise<void> | undefined;
  // The manifest as the composition reads a built connector's (`discover`), compared by the registry's own hash.
  const verified = async (hosted: HostedConnector): Promise<HostedConnector> => {
    const { connector } = hosted;
    const manifest = await connector.discover({});
    const sameSupport = Object.entries(entry.support).every(
      ([capability_id, record]) => JSON.stringify(connector.implementation_support(capability_id)) === JSON.stringify(record),
    );
    if (connector.id !== entry.connector_id || hashJson(manifest) !== entry.manifest_hash || !sameSupport) {
      throw new Error(
        `connector "${entry.connector_id}" publishes another manifest or support records than the bundle's precompiled registry: rebuild the bundle (infra/bundling.ts)`,
      );
    }
    return hosted;
  };
  return {
    load() {
      if (built !== undefined) return Promise.resolve();
      if (pending === undefined) {
        const run = build()
          .then(verified)
          .then((hosted) => {
            built = hosted;
          });
        pending = run;
        run.catch(() => {
          if (pending === run) pending = undefined;
        });
      }
      return pending;
    },
    get() {
      if (built === undefined) {
        throw new AipError('internal.unexpected', `connector "${entry.connector_id}" is built on first use: load it first (loadConnector)`);
      }
      return built;
    },
  };
}

/** The host of the built connectors, with the connectors built on first use answering for their IDs. */
function withConnectorsOnFirstUse(host: ConnectorHost, onFirstUse: ReadonlyMap<string, OnFirstUse>): ConnectorHost {
  if (onFirstUse.size === 0) return host;
  return {
    get: (connector_id) => onFirstUse.get(connector_id)?.get() ?? host.get(connector_id),
    ids: () => [...new Set([...host.ids(), ...onFirstUse.keys()])].sort(),
    load: async (connector_id) => onFirstUse.get(connector_id)?.load(),
  };
}
