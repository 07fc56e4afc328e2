/**
 * The deployment's own connectors (docs/deploying-your-connectors.md): the
 * configuration's `connectors[].http` documents (declarative HTTP connectors)
 * and `connectors[].module` paths (code connectors), or modules handed to
 * `defineAipApp` in code (`connectorModules`).
 *
 * At synth, {@link checkDeploymentConnectors} builds each of them the way a
 * function will at cold start (no credentials, no network) and runs its
 * manifest check: an HTTP document against its schema (an issue names the
 * field, `connectors[1].http.capabilities[0].operations.invoke.request.method`)
 * and the declarative connector's own admission; a module must exist, export
 * a factory and build a connector whose ID is the configured one, whose
 * synchronous manifest passes manifest admission against its own support
 * records. A module is loaded in a child process (infra/connector-manifest-cli.ts,
 * with tsx): the CDK app is synchronous and the module may be TypeScript.
 * The manifests it returns also feed the attempt-timeout check.
 *
 * At bundling (infra/bundling.ts), {@link deploymentConnectorSources} is
 * what the functions' bundles carry: each HTTP document as JSON, each module
 * imported by a generated module that replaces
 * functions/shared/deployment-connectors.ts. This module imports no
 * aws-cdk-lib: the child process uses it too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  BUILT_IN_CONNECTOR_FACTORIES,
  type ConnectorFactory,
  connectorManifest,
  deploymentConnectorFactories,
} from '../functions/shared/connector-factories.js';
import type { DeploymentConnectorSource } from '../functions/shared/deployment-connectors.js';
import type { CredentialProvider } from '../packages/connector-sdk/src/ports/credentials.js';
import { describeIssue, formatIssuePath } from '../packages/connector-sdk/src/common/issues.js';
import { isAipError } from '../packages/connector-sdk/src/errors/aip-error.js';
import { admitManifest, formatAdmissionIssue } from '../packages/connector-sdk/src/admission.js';
import { HttpConnectorConfigSchema } from '../lib/connectors/http/config.js';
import type { ConnectorManifest } from '../packages/connector-sdk/src/manifest.js';
import { BUNDLE_ROOT, type BundledDeploymentConnector } from './bundling.js';
import { InfraConfigError, type InfraConfig, type InfraConfigIssue } from './config.js';

/** The deployment's own connectors of a configuration, modules as absolute paths (relative ones against `cwd`). */
export function deploymentConnectorSources(config: Pick<InfraConfig, 'connectors'>, cwd: string = process.cwd()): BundledDeploymentConnector[] {
  return config.connectors.flatMap((c): BundledDeploymentConnector[] => {
    if (c.http !== undefined) return [{ id: c.id, http: c.http }];
    if (c.module !== undefined) return [{ id: c.id, module: isAbsolute(c.module) ? c.module : resolve(cwd, c.module) }];
    return [];
  });
}

/**
 * Imports code connector module `module` (an absolute path; TypeScript needs
 * a loader: tsx under `npm start` and in the manifest check's child process)
 * as the generated module of the bundles lists it.
 */
export async function importConnectorModule(id: string, module: string): Promise<DeploymentConnectorSource> {
  const namespace = (await import(pathToFileURL(module).href)) as Record<string, unknown>;
  return { id, module: namespace, path: module };
}

/**
 * The configuration with the code connectors handed to the CDK app in code
 * (ID → module path): a listed connector gets its module, an unlisted one is
 * enabled with no credential rows.
 */
export function withConnectorModules(config: InfraConfig, modules: Readonly<Record<string, string>> | undefined): InfraConfig {
  if (modules === undefined || Object.keys(modules).length === 0) return config;
  const listed = new Set(config.connectors.map((c) => c.id));
  return {
    ...config,
    connectors: [
      ...config.connectors.map((c) => (modules[c.id] !== undefined ? { ...c, module: modules[c.id] } : c)),
      ...Object.entries(modules)
        .filter(([id]) => !listed.has(id))
        .map(([id, module]) => ({ id, credentials: [], module })),
    ],
  };
}

const NO_CREDENTIALS: CredentialProvider = { resolve: () => Promise.reject(new Error('connector built at synth: no credentials are available')) };

/** What the manifest check of one built connector found. */
export interface ManifestCheck {
  readonly manifest?: ConnectorManifest;
  readonly problems: readonly string[];
}

/**
 * The manifest check of connector `id` built by `factories` (no credentials,
 * no network): its synchronous manifest, its ID, and manifest admission
 * against its own implementation-support records.
 */
export function checkConnectorManifest(id: string, factories: Readonly<Record<string, ConnectorFactory>>): ManifestCheck {
  let manifest: ConnectorManifest;
  try {
    manifest = connectorManifest(id, { factories });
  } catch (err) {
    const issues = isAipError(err) && Array.isArray(err.details.issues) ? `: ${(err.details.issues as unknown[]).join('; ')}` : '';
    return { problems: [`${(err as Error).message}${issues}`] };
  }
  if (manifest.connector_id !== id) return { problems: [`its manifest names connector "${manifest.connector_id}", not "${id}"`] };
  const built = factories[id]?.({ credentials: NO_CREDENTIALS }).connector;
  const report = admitManifest(manifest, built);
  return report.admitted && report.issues.length === 0 ? { manifest, problems: [] } : { manifest, problems: report.issues.map(formatAdmissionIssue) };
}

/** Runs the manifest check of code connector modules in a child process (tsx: the modules may be TypeScript). */
export function checkConnectorModules(modules: readonly { readonly id: string; readonly module: string }[]): Record<string, ManifestCheck> {
  if (modules.length === 0) return {};
  let out: string;
  try {
    out = execFileSync(process.execPath, ['--import', 'tsx', 'infra/connector-manifest-cli.ts', '--connectors', JSON.stringify(modules)], {
      cwd: BUNDLE_ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
    const problem = `the connector module(s) could not be loaded: ${stderr.split('\n').slice(0, 5).join(' ') || (err as Error).message}`;
    return Object.fromEntries(modules.map((m) => [m.id, { problems: [problem] }]));
  }
  return JSON.parse(out) as Record<string, ManifestCheck>;
}

/**
 * The synth-time check of the deployment's connectors. Returns the manifest
 * of each (for the attempt-timeout check); throws {@link InfraConfigError}
 * naming every bad field.
 */
export function checkDeploymentConnectors(config: InfraConfig, cwd: string = process.cwd()): Map<string, ConnectorManifest> {
  const issues: InfraConfigIssue[] = [];
  const manifests = new Map<string, ConnectorManifest>();
  const modules: { id: string; module: string; index: number }[] = [];
  config.connectors.forEach((c, index) => {
    const at = `connectors[${index}]`;
    if (c.http !== undefined) {
      const parsed = HttpConnectorConfigSchema.safeParse(c.http);
      if (!parsed.success) {
        for (const issue of parsed.error.issues)
          issues.push({ path: formatIssuePath(['connectors', index, 'http', ...issue.path]), message: describeIssue(issue) });
        return;
      }
      if (parsed.data.connector_id !== c.id) {
        issues.push({ path: `${at}.http.connector_id`, message: `must be the connector's ID "${c.id}" (routes, credentials and policies name it)` });
        return;
      }
      const check = checkConnectorManifest(c.id, deploymentConnectorFactories([{ id: c.id, http: c.http }]));
      if (check.problems.length > 0) for (const problem of check.problems) issues.push({ path: `${at}.http`, message: problem });
      else if (check.manifest !== undefined) manifests.set(c.id, check.manifest);
      return;
    }
    if (c.module !== undefined) {
      const path = isAbsolute(c.module) ? c.module : resolve(cwd, c.module);
      if (!existsSync(path)) issues.push({ path: `${at}.module`, message: `no such file: ${path}` });
      else modules.push({ id: c.id, module: path, index });
      return;
    }
    if (BUILT_IN_CONNECTOR_FACTORIES[c.id] === undefined) {
      issues.push({
        path: `${at}.id`,
        message: `"${c.id}" is not built into this project (built in: ${Object.keys(BUILT_IN_CONNECTOR_FACTORIES).join(', ')}): give it a declarative HTTP document (http) or a code connector module (module)`,
      });
    }
  });
  const checked = checkConnectorModules(modules.map(({ id, module }) => ({ id, module })));
  for (const { id, index } of modules) {
    const check = checked[id] ?? { problems: ['the manifest check returned nothing'] };
    if (check.problems.length > 0) for (const problem of check.problems) issues.push({ path: `connectors[${index}].module`, message: problem });
    else if (check.manifest !== undefined) manifests.set(id, check.manifest);
  }
  if (issues.length > 0) throw new InfraConfigError("the deployment's connectors", issues);
  return manifests;
}
