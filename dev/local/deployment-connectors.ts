/**
 * The deployment's own connectors under `npm start` (docs/deploying-your-connectors.md,
 * "Try it locally"): the connectors a deployment configuration file adds
 * (`connectors[].http` documents and `connectors[].module` paths), hosted
 * in-process beside the built-in payments connector.
 *
 * Nothing here validates on its own: the file is read by the CDK app's
 * reader (`loadInfraConfig`: schema, module paths relative to the file) and
 * the connectors pass the synth's check (`checkDeploymentConnectors` of
 * infra/deployment-connectors.ts: each document against its schema and
 * built, each module loaded in a child process and built, every manifest
 * admitted), so a refusal is the same InfraConfigError, naming the same
 * field, as `cdk synth` gives. They are then built by the factories a
 * deployed function builds them with (`deploymentConnectorFactories`), each
 * module imported in this process (tsx under `npm start`).
 *
 * Credentials: the configuration's rows name Secrets Manager secrets, which
 * a local run does not read. Each row becomes a local credential reference
 * (packages/connector-sdk/src/credentials/env-provider.ts) to the environment
 * variable {@link localSecretVariable} derives from its secret, for the same
 * handle, tenant and external account.
 */
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type ApprovalPolicy, type DeploymentRuntimeConfig, type InfraConfig, toDeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import type { ConnectorFactory } from '../../functions/shared/connector-factories.js';
import type { DeploymentConnectorSource } from '../../functions/shared/deployment-connectors.js';
import { deploymentConnectorFactories, BUILT_IN_CONNECTOR_FACTORIES } from '../../functions/shared/connector-factories.js';
import type { LocalCredentialReference } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import { InfraConfigError, loadInfraConfig } from '../../infra/config.js';
import { checkDeploymentConnectors, deploymentConnectorSources, importConnectorModule } from '../../infra/deployment-connectors.js';

type CredentialRow = InfraConfig['connectors'][number]['credentials'][number];
/** A local credential reference to an environment variable. */
type EnvReference = Extract<LocalCredentialReference, { readonly env: string }>;

/**
 * The deployment configuration `npm start` hosts the connectors of:
 * `--config <file>` (as `cdk deploy -c config=<file>`), else
 * AIP_DEPLOYMENT_CONFIG. A relative path is relative to where npm was run
 * (INIT_CWD), not to this package.
 */
export function deploymentConfigFrom(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  const { values } = parseArgs({ args: [...argv], options: { config: { type: 'string', short: 'c' } }, strict: true, allowPositionals: false });
  const file = values.config ?? (env.AIP_DEPLOYMENT_CONFIG?.trim() || undefined);
  if (file === undefined) return undefined;
  return resolve(env.INIT_CWD ?? process.cwd(), file);
}

/** Prefix of the environment variables that stand for the configuration's secrets in a local run. */
export const LOCAL_SECRET_PREFIX = 'AIP_LOCAL_SECRET_';

/**
 * The environment variable holding, in a local run, the material of a
 * credential row's secret: `AIP_LOCAL_SECRET_` and the secret's name (of an
 * ARN, the name without Secrets Manager's 6-character suffix), then the row's
 * `jsonField` if any, upper-cased, every run of other characters than A-Z and
 * 0-9 an underscore. `team/crm/token` → `AIP_LOCAL_SECRET_TEAM_CRM_TOKEN`.
 * The variable holds the material itself (the JSON field's value, not the JSON).
 */
export function localSecretVariable(row: Pick<CredentialRow, 'secret' | 'jsonField'>): string {
  const marker = ':secret:';
  const name = row.secret.startsWith('arn:') ? row.secret.slice(row.secret.indexOf(marker) + marker.length).replace(/-[A-Za-z0-9]{6}$/, '') : row.secret;
  const words = [name, ...(row.jsonField !== undefined ? [row.jsonField] : [])].join('_');
  return `${LOCAL_SECRET_PREFIX}${words
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')}`;
}

/** One hosted connector of the configuration, as the start banner lists it. */
export interface HostedDeploymentConnector {
  readonly id: string;
  /** `http`: a declarative HTTP document; `module`: a code connector module. */
  readonly kind: 'http' | 'module';
  /** The module's path (relative to the configuration's folder when inside it). */
  readonly module?: string;
  readonly capabilities: readonly string[];
  /** Its credential rows: which variable backs which handle, and whether it is set. */
  readonly credentials: readonly {
    readonly handle: string;
    readonly tenant_id: string;
    readonly external_account_id?: string;
    readonly env: string;
    readonly set: boolean;
  }[];
}

/** What the local stack adds to its composition for the configuration's connectors. */
export interface LocalDeploymentConnectors {
  /** The configuration file, absolute. */
  readonly file: string;
  readonly hosted: readonly HostedDeploymentConnector[];
  /** Their factories (the composition's `connectorFactories`). */
  readonly factories: Readonly<Record<string, ConnectorFactory>>;
  readonly credentialReferences: readonly EnvReference[];
  /** The values of the variables that are set (the composition's credential environment). */
  readonly credentialEnv: Readonly<Record<string, string>>;
  /** The configuration's `connectorEndpoints` of these connectors. */
  readonly connectorEndpoints: Readonly<Record<string, string>>;
  /** The configuration's approval policies on these connectors. */
  readonly approvalPolicies: readonly ApprovalPolicy[];
  /**
   * Where a waited execute's first attempt runs: the configuration's `attemptWhenWaited` as a deployment's
   * functions get it (`toDeploymentRuntimeConfig`, the `AIP_RUNTIME_CONFIG` variable): explicit or the default.
   */
  readonly attemptWhenWaited: DeploymentRuntimeConfig['attemptWhenWaited'];
}

/**
 * Reads deployment configuration `file` (relative paths against `cwd`),
 * checks its connectors as the synth does and builds the factories of those
 * that are not built in. Throws {@link InfraConfigError} naming every bad
 * field. `env` supplies the credential variables (default: process.env).
 */
export async function loadLocalDeploymentConnectors(
  file: string,
  options: { readonly cwd?: string; readonly env?: Readonly<Record<string, string | undefined>> } = {},
): Promise<LocalDeploymentConnectors> {
  const config: InfraConfig = loadInfraConfig(file, options.cwd);
  // loadInfraConfig's own resolution, for messages and the banner.
  const path = isAbsolute(file) ? file : resolve(options.cwd ?? process.cwd(), file);
  // The local stack's payments connector runs against its simulator: a configuration cannot replace it here.
  const issues = config.connectors.flatMap((c, index) =>
    BUILT_IN_CONNECTOR_FACTORIES[c.id] !== undefined && (c.http !== undefined || c.module !== undefined)
      ? [
          {
            path: `connectors[${index}].id`,
            message: `"${c.id}" is the local stack's built-in connector (against its simulator): give yours another ID to try it locally`,
          },
        ]
      : [],
  );
  if (issues.length > 0) throw new InfraConfigError(path, issues);
  const manifests = checkDeploymentConnectors(config);
  const sources = deploymentConnectorSources(config);
  const loaded: DeploymentConnectorSource[] = [];
  for (const source of sources) loaded.push('http' in source ? source : await importConnectorModule(source.id, source.module));
  const factories = deploymentConnectorFactories(loaded);

  const env = options.env ?? process.env;
  const ids = new Set(sources.map((s) => s.id));
  const own = config.connectors.filter((c) => ids.has(c.id));
  const credentialReferences: EnvReference[] = own.flatMap((c) =>
    c.credentials.map((row) => ({
      connector_id: c.id,
      handle: row.handle,
      tenant_id: row.tenantId,
      ...(row.externalAccountId !== undefined ? { external_account_id: row.externalAccountId } : {}),
      env: localSecretVariable(row),
    })),
  );
  const credentialEnv: Record<string, string> = {};
  for (const ref of credentialReferences) {
    const value = env[ref.env];
    if (value !== undefined && value !== '') credentialEnv[ref.env] = value;
  }
  const folder = dirname(path);
  return {
    file: path,
    hosted: own.map((c) => ({
      id: c.id,
      kind: c.http !== undefined ? 'http' : 'module',
      ...(c.module !== undefined ? { module: displayPath(folder, c.module) } : {}),
      capabilities: (manifests.get(c.id)?.capabilities ?? []).map((capability) => capability.id),
      credentials: credentialReferences
        .filter((ref) => ref.connector_id === c.id)
        .map((ref) => ({
          handle: ref.handle,
          tenant_id: ref.tenant_id,
          ...(ref.external_account_id !== undefined ? { external_account_id: ref.external_account_id } : {}),
          env: ref.env,
          set: credentialEnv[ref.env] !== undefined,
        })),
    })),
    factories,
    credentialReferences,
    credentialEnv,
    connectorEndpoints: Object.fromEntries(Object.entries(config.connectorEndpoints).filter(([id]) => ids.has(id))),
    approvalPolicies: config.approvalPolicies.filter((policy) => ids.has(policy.connector)),
    attemptWhenWaited: toDeploymentRuntimeConfig(config).attemptWhenWaited,
  };
}

function displayPath(folder: string, module: string): string {
  const rel = relative(folder, module);
  return rel.startsWith('..') ? module : `./${rel}`;
}

/** The banner's lines for the configuration's connectors; `tenant` is the printed token's. */
export function describeHostedConnectors(deployment: Pick<LocalDeploymentConnectors, 'file' | 'hosted'>, tenant: string): string[] {
  const lines = [`Connectors of ${deployment.file} (in-process):`, ''];
  for (const c of deployment.hosted) {
    lines.push(`  ${c.id.padEnd(14)} ${c.kind === 'http' ? 'declarative HTTP' : `module ${c.module}`}: ${c.capabilities.join(', ') || '(no capabilities)'}`);
    for (const row of c.credentials) {
      const scope = `tenant ${row.tenant_id}${row.external_account_id !== undefined ? `, account ${row.external_account_id}` : ''}`;
      lines.push(`  ${''.padEnd(14)} credential ${row.handle} (${scope}) from $${row.env}${row.set ? '' : '   (NOT SET)'}`);
    }
  }
  lines.push('');
  const others = [...new Set(deployment.hosted.flatMap((c) => c.credentials.map((row) => row.tenant_id)))].filter((t) => t !== tenant);
  if (others.length > 0) {
    lines.push(`Their credential rows name tenant(s) ${others.join(', ')}; the token below is tenant ${tenant}'s. Another tenant's:`, '');
    lines.push(`  npx aip token --tenant ${others[0]}`, '');
  }
  return lines;
}
