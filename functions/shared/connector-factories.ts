/**
 * The connector implementations this build can run, by connector ID, and
 * nothing else: no AWS SDK, no store, no network at import or construction.
 * They are the project's built-in connectors plus the deployment's own
 * (./deployment-connectors.ts, generated at bundling from the deployment
 * configuration: declarative HTTP documents and code connector modules;
 * docs/deploying-your-connectors.md).
 *
 * The composition root (./compose-connectors.ts) builds the enabled ones with
 * their deployment credential providers. The CDK app reads their manifests
 * at synth time (infra/attempt-timeouts.ts: attempt timeouts against the
 * worker Lambdas' timeouts) through {@link connectorManifest}, which is why
 * this list lives in a module of its own: the infra imports it without the
 * Lambda-only wiring, and the Lambda bundles never import aws-cdk-lib.
 */
import { HttpConnector } from '../../lib/connectors/http/connector.js';
import type { FrozenConnector } from '../../packages/connector-sdk/src/interfaces.js';
import { createPaymentsConnector, DEFAULT_PAYMENTS_CREDENTIAL_HANDLE } from '../../lib/connectors/reference/payments.js';
import type { ConnectorManifest } from '../../packages/connector-sdk/src/manifest.js';
import type { CredentialProvider } from '../../packages/connector-sdk/src/ports/credentials.js';
import type { HostedConnector } from '../../lib/runtime/deps.js';
import { DEPLOYMENT_CONNECTORS, type DeploymentConnectorSource } from './deployment-connectors.js';

/** What a connector factory gets. */
export interface ConnectorFactoryOptions {
  /** The deployment's credential provider for this connector (resolves handles at the provider edge). */
  readonly credentials: CredentialProvider;
  /** Base URL override (AIP_CONNECTOR_ENDPOINTS). */
  readonly baseUrl?: string;
}

/** Builds one enabled connector for the Runtime. */
export type ConnectorFactory = (options: ConnectorFactoryOptions) => HostedConnector;

/** The connectors built into this project. */
export const BUILT_IN_CONNECTOR_FACTORIES: Readonly<Record<string, ConnectorFactory>> = {
  payments: (options) => ({
    connector: createPaymentsConnector({ credentials: options.credentials, ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}) }),
    credential_handle: () => DEFAULT_PAYMENTS_CREDENTIAL_HANDLE,
  }),
};

/**
 * What a code connector module exports, as its default export or as
 * `createConnector`: a function building the connector from the deployment's
 * credential provider (and the configured base URL override, if any). It
 * returns the connector, or the connector with the credential handle its
 * attempts get (the handle the deployment's credential rows map to a secret).
 */
export type ConnectorModuleFactory = (
  options: ConnectorFactoryOptions,
) => FrozenConnector | { readonly connector: FrozenConnector; credential_handle?(capability_id: string): string | undefined };

/** The function a code connector module exports; throws naming the module when it exports none. */
export function connectorModuleFactory(id: string, namespace: Readonly<Record<string, unknown>>, path: string): ConnectorModuleFactory {
  const factory = namespace.default ?? namespace.createConnector;
  if (typeof factory !== 'function') {
    throw new Error(`connector "${id}": module ${path} exports no connector factory (a default export or "createConnector" function)`);
  }
  return factory as ConnectorModuleFactory;
}

function isHosted(value: unknown): value is { connector: FrozenConnector; credential_handle?(capability_id: string): string | undefined } {
  return typeof value === 'object' && value !== null && 'connector' in value && typeof (value as { connector: unknown }).connector === 'object';
}

/** The factories of the deployment's own connectors. */
export function deploymentConnectorFactories(sources: readonly DeploymentConnectorSource[]): Record<string, ConnectorFactory> {
  const out: Record<string, ConnectorFactory> = {};
  for (const source of sources) {
    if ('http' in source) {
      const document = source.http as { auth?: { credential_handle?: string } };
      const handle = document.auth?.credential_handle;
      out[source.id] = (options) => ({
        connector: new HttpConnector(options.baseUrl !== undefined ? { ...(source.http as object), base_url: options.baseUrl } : source.http, {
          credentials: options.credentials,
        }),
        ...(handle !== undefined ? { credential_handle: () => handle } : {}),
      });
    } else {
      const factory = connectorModuleFactory(source.id, source.module, source.path);
      out[source.id] = (options) => {
        const built = factory(options);
        if (isHosted(built)) {
          const handle = built.credential_handle;
          return {
            connector: built.connector,
            ...(handle !== undefined ? { credential_handle: (capability_id: string) => handle.call(built, capability_id) } : {}),
          };
        }
        return { connector: built as FrozenConnector };
      };
    }
    const connector_id = source.id;
    const factory = out[connector_id] as ConnectorFactory;
    // The connector must call itself what the configuration calls it: routes, credentials and policies name that ID.
    out[connector_id] = (options) => {
      const hosted = factory(options);
      if (hosted.connector.id !== connector_id) {
        throw new Error(`connector "${connector_id}" of the deployment configuration builds a connector whose id is "${hosted.connector.id}"`);
      }
      return hosted;
    };
  }
  return out;
}

/**
 * The connector implementations this build can run, by connector ID: the
 * built-in ones and the deployment's own. The deployment configuration
 * enables a subset (`connectors[].id`); enabling an ID that is not here
 * fails the composition with a message naming it. Each factory also names
 * the credential handle its attempts get (the handle the deployment's
 * credential references map to a secret).
 */
export const CONNECTOR_FACTORIES: Readonly<Record<string, ConnectorFactory>> = {
  ...BUILT_IN_CONNECTOR_FACTORIES,
  ...deploymentConnectorFactories(DEPLOYMENT_CONNECTORS),
};

/** Credentials for a connector built only to read its manifest: resolving one is a programming error. */
const NO_CREDENTIALS: CredentialProvider = {
  resolve: () => Promise.reject(new Error('connector built to read its manifest: no credentials are available')),
};

/**
 * The manifest of connector `id` of this build, read synchronously, with no
 * credentials and no network (the CDK app calls it at synth). Every connector
 * of this build publishes its manifest through a synchronous `manifest()`
 * (HttpConnector, defineConnector); a connector that only discovers
 * asynchronously cannot be checked at synth, which this refuses rather than
 * skipping the check.
 */
export function connectorManifest(
  id: string,
  options: { readonly baseUrl?: string; readonly factories?: Readonly<Record<string, ConnectorFactory>> } = {},
): ConnectorManifest {
  const factories = options.factories ?? CONNECTOR_FACTORIES;
  const factory = factories[id];
  if (factory === undefined) throw new Error(`this build has no connector "${id}" (available: ${Object.keys(factories).join(', ')})`);
  const { connector } = factory({ credentials: NO_CREDENTIALS, ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}) });
  const manifest = (connector as { manifest?: unknown }).manifest;
  if (typeof manifest !== 'function') throw new Error(`connector "${id}" publishes no synchronous manifest(): its capabilities cannot be read at synth`);
  return (manifest as () => ConnectorManifest).call(connector);
}

/**
 * What the bundle-time precompilation of the registry needs from connector
 * `id` of this build (lib/runtime/schema-precompile.ts): the manifest its
 * code publishes (`discover`, as the composition reads it) and its
 * implementation-support record for each capability. Built with no
 * credentials and no network, like {@link connectorManifest}.
 */
export async function connectorRegistrySource(
  id: string,
  options: { readonly baseUrl?: string; readonly factories?: Readonly<Record<string, ConnectorFactory>> } = {},
): Promise<{ connector_id: string; base_url?: string; manifest: ConnectorManifest; support: Record<string, unknown> }> {
  const factories = options.factories ?? CONNECTOR_FACTORIES;
  const factory = factories[id];
  if (factory === undefined) throw new Error(`this build has no connector "${id}" (available: ${Object.keys(factories).join(', ')})`);
  const { connector } = factory({ credentials: NO_CREDENTIALS, ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}) });
  const manifest = await connector.discover({});
  const support: Record<string, unknown> = {};
  for (const capability of manifest.capabilities ?? []) {
    const record = connector.implementation_support(capability.id);
    if (record !== undefined) support[capability.id] = record;
  }
  return { connector_id: id, ...(options.baseUrl !== undefined ? { base_url: options.baseUrl } : {}), manifest, support };
}
