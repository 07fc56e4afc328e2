/**
 * The connector implementations this build can run, by connector ID, and
 * nothing else: no AWS SDK, no store, no network at import or construction.
 *
 * The composition root (./compose-connectors.ts) builds the enabled ones with
 * their deployment credential providers. The CDK app reads their manifests
 * at synth time (infra/attempt-timeouts.ts: attempt timeouts against the
 * worker Lambdas' timeouts) through {@link connectorManifest}, which is why
 * this list lives in a module of its own: the infra imports it without the
 * Lambda-only wiring, and the Lambda bundles never import aws-cdk-lib.
 */
import { createPaymentsConnector, DEFAULT_PAYMENTS_CREDENTIAL_HANDLE } from '../../lib/connectors/reference/payments.js';
import type { ConnectorManifest } from '../../packages/connector-sdk/src/manifest.js';
import type { CredentialProvider } from '../../packages/connector-sdk/src/ports/credentials.js';
import type { HostedConnector } from '../../lib/runtime/deps.js';

/** What a connector factory gets. */
export interface ConnectorFactoryOptions {
  /** The deployment's credential provider for this connector (resolves handles at the provider edge). */
  readonly credentials: CredentialProvider;
  /** Base URL override (AIP_CONNECTOR_ENDPOINTS). */
  readonly baseUrl?: string;
}

/** Builds one enabled connector for the Runtime. */
export type ConnectorFactory = (options: ConnectorFactoryOptions) => HostedConnector;

/**
 * The connector implementations this build can run, by connector ID. The
 * deployment configuration enables a subset (`connectors[].id`); enabling an
 * ID that is not here fails the composition with a message naming it. Each
 * factory also names the credential handle its attempts get (the handle the
 * deployment's credential references map to a secret).
 */
export const CONNECTOR_FACTORIES: Readonly<Record<string, ConnectorFactory>> = {
  payments: (options) => ({
    connector: createPaymentsConnector({ credentials: options.credentials, ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}) }),
    credential_handle: () => DEFAULT_PAYMENTS_CREDENTIAL_HANDLE,
  }),
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
export function connectorManifest(id: string, options: { readonly baseUrl?: string } = {}): ConnectorManifest {
  const factory = CONNECTOR_FACTORIES[id];
  if (factory === undefined) throw new Error(`this build has no connector "${id}" (available: ${Object.keys(CONNECTOR_FACTORIES).join(', ')})`);
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
  options: { readonly baseUrl?: string } = {},
): Promise<{ connector_id: string; manifest: ConnectorManifest; support: Record<string, unknown> }> {
  const factory = CONNECTOR_FACTORIES[id];
  if (factory === undefined) throw new Error(`this build has no connector "${id}" (available: ${Object.keys(CONNECTOR_FACTORIES).join(', ')})`);
  const { connector } = factory({ credentials: NO_CREDENTIALS, ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}) });
  const manifest = await connector.discover({});
  const support: Record<string, unknown> = {};
  for (const capability of manifest.capabilities ?? []) {
    const record = connector.implementation_support(capability.id);
    if (record !== undefined) support[capability.id] = record;
  }
  return { connector_id: id, manifest, support };
}
