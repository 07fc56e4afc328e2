/**
 * The connectors of THIS deployment that are not built into the project
 * (docs/deploying-your-connectors.md): declarative HTTP connector documents
 * and code connector modules named by the deployment configuration.
 *
 * This file is a stand-in: the bundling of the functions (infra/bundling.ts,
 * `deploymentConnectorsPlugin`) replaces it by a generated module that
 * imports each code connector module and carries each HTTP document, so a
 * deployed function builds them at cold start
 * (./connector-factories.ts) with no file or network read. Under `npm
 * start` and in the tests it is empty: only the built-in connectors exist.
 */
/** A connector of the deployment, as the generated module lists it. */
export type DeploymentConnectorSource =
  /** A declarative HTTP connector document (HttpConnectorConfig). */
  | { readonly id: string; readonly http: unknown }
  /** The namespace of a code connector module (and its file name, for messages). */
  | { readonly id: string; readonly module: Readonly<Record<string, unknown>>; readonly path: string };

export const DEPLOYMENT_CONNECTORS: readonly DeploymentConnectorSource[] = [];
