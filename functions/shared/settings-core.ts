/**
 * The settings of the deployed functions and of the local stack: the function
 * environment, validated with zod, as {@link BootstrapSettings}.
 *
 * - {@link readSettings} fails with one message naming every bad variable
 *   (never its value);
 * - {@link settingsToEnv} is its inverse, for in-process hosts
 *   (dev/local/start.ts) that hand settings over as an environment.
 *
 * Three variables need schemas a deployed function does without: an
 * AIP_RUNTIME_CONFIG other than the one the build validated, AIP_LOCAL_CREDENTIALS
 * and AIP_REMOTE_CONNECTORS. Their parsers ({@link OptionalSettingsParsers}) are
 * in ./settings.ts, which in-process hosts and the tests import
 * (`readBootstrapSettings`); the deployed functions' ./bootstrap.ts imports
 * this module and loads ./settings.ts only when {@link needsOptionalParsers}
 * says the environment needs it, so a cold start does not load the deployment
 * configuration's schemas or the remote placement's (docs/bench/analysis.md,
 * "Issue 22: the settings' optional parsers").
 *
 * The Runtime built from these settings is in ./compose-runtime.ts; the one
 * Runtime per container that the handlers share, in ./bootstrap.ts.
 *
 * Environment (names from lib/config/function-env.ts, which the stack sets):
 *
 * | variable | required | meaning |
 * |---|---|---|
 * | AIP_TABLE_NAME | yes | the single DynamoDB table |
 * | AIP_INVOKE_QUEUE_URL | yes | connector invocations (SQS standard queue) |
 * | AIP_INVOKE_QUEUE_MAX_RECEIVE_COUNT | no (the stack sets it) | the invoke queue's redrive maxReceiveCount, 1-1000: caps the Runtime's capacity deferrals (`capacity_deferral.queue_max_receive_count`, which it overrides); absent: `max_deferrals` alone |
 * | AIP_RECONCILE_QUEUE_URL | yes | reconciliation jobs (SQS standard queue) |
 * | AIP_RECONCILE_QUEUE_ARN | yes | target of the one-time reconciliation schedules |
 * | AIP_SCHEDULE_GROUP | yes | EventBridge Scheduler group of those schedules |
 * | AIP_SCHEDULER_ROLE_ARN | yes | role the schedules run as |
 * | AIP_RUNTIME_CONFIG | yes | JSON, or a path to a JSON file: `DeploymentRuntimeConfig` of lib/config/deployment.ts (auth, enabled connectors with credential references, approval policies) |
 * | AIP_CURSOR_KEY_SECRET_ARN | outside `local`/`test` | ARN of the Secrets Manager secret whose string is the key material sealing pagination cursors (lib/runtime/cursor.ts); read once per container, on the first listing |
 * | AIP_CURSOR_KEY | no | the key material itself (at least 32 characters, or `{"current","previous"}` JSON), `local`/`test` only; with neither variable there, a random key per composition |
 * | AIP_RUNTIME_SETTINGS | no | JSON or path: the Runtime's own tuning (`RuntimeSettingsInput` of lib/runtime/config.ts: tenant approval policies, reconciliation backoff, stall threshold, scopes, retention); defaults otherwise. `test_mode` only when `envName` is `local` or `test` |
 * | AIP_SERVICE_PRINCIPAL | no | ID of the runtime's own service principal (reconciliation runs as it); wins over AIP_RUNTIME_SETTINGS; default `aip-runtime` |
 * | AIP_LOCAL_CREDENTIALS | no | JSON or path, `{"references":[...]}` of packages/connector-sdk/src/credentials/env-provider.ts: resolve credentials from environment variables or files instead of Secrets Manager (local runs) |
 * | AIP_CONNECTOR_ENDPOINTS | no | JSON object, connector ID → base URL override (the local stack points `payments` at the simulator) |
 * | AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE> | no | honoured by lib/aws/clients.ts (LocalStack, emulators) |
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { configuredEndpoint, type AwsService } from '../../lib/aws/client-config.js';
import { describeIssue, formatIssuePath } from '../../packages/connector-sdk/src/common/issues.js';
import type { DeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import { FUNCTION_ENV, OPTIONAL_FUNCTION_ENV } from '../../lib/config/function-env.js';
import type { LocalCredentialReference } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import type { RemotePlacement } from '../../lib/runtime/remote/config.js';
import type { Principal } from '../../packages/connector-sdk/src/protocol/identity.js';
import { IdSchema } from '../../packages/connector-sdk/src/protocol/primitives.js';
import type { RuntimeSettings } from '../../lib/runtime/config.js';
import type { ValidatedConfig } from './validated-config.js';

/** Optional variables, besides FUNCTION_ENV (AIP_CONNECTOR_ENDPOINTS is OPTIONAL_FUNCTION_ENV's, the name the stack sets it under). */
export const OPTIONAL_ENV = {
  runtimeSettings: 'AIP_RUNTIME_SETTINGS',
  servicePrincipal: 'AIP_SERVICE_PRINCIPAL',
  localCredentials: 'AIP_LOCAL_CREDENTIALS',
  connectorEndpoints: OPTIONAL_FUNCTION_ENV.connectorEndpoints,
  /** Cursor key material inline (local and test environments only; deployed functions use AIP_CURSOR_KEY_SECRET_ARN). */
  cursorKey: 'AIP_CURSOR_KEY',
  /** Remote connector placement (lib/runtime/remote/config.ts; docs/infra.md "Remote connector host"). */
  remoteConnectors: 'AIP_REMOTE_CONNECTORS',
} as const;

export const DEFAULT_SERVICE_PRINCIPAL_ID = 'aip-runtime';

/**
 * Where the key that seals pagination cursors comes from: a Secrets Manager
 * secret (deployed functions), the material itself (local runs, tests), or
 * nowhere (a random key per composition; refused outside `local`/`test` by
 * the composition, compose-runtime.ts).
 */
export type CursorKeySource =
  | { readonly source: 'secrets-manager'; readonly secretArn: string }
  | { readonly source: 'inline'; readonly material: string }
  | { readonly source: 'none' };

export type CredentialSource = { readonly source: 'secrets-manager' } | { readonly source: 'local'; readonly references: readonly LocalCredentialReference[] };

/** Everything the composition needs, validated. */
export interface BootstrapSettings {
  readonly tableName: string;
  readonly invokeQueueUrl: string;
  /** The invoke queue's redrive maxReceiveCount, when the environment gives it (the stack always does). */
  readonly invokeQueueMaxReceiveCount?: number;
  readonly reconcileQueueUrl: string;
  readonly reconcileQueueArn: string;
  readonly scheduleGroup: string;
  readonly schedulerRoleArn: string;
  readonly runtimeConfig: DeploymentRuntimeConfig;
  /**
   * The Runtime's tuning as given (AIP_RUNTIME_SETTINGS, a JSON object; `{}`
   * when unset). The composition validates it with the Runtime's own schema
   * (lib/runtime/config.ts) and adds the service principal and the
   * deployment's approval policies (compose-runtime.ts, `runtimeConfigFor`).
   */
  readonly runtimeSettings: Readonly<Record<string, unknown>>;
  /**
   * The Runtime's settings the build already validated for this very
   * configuration (./validated-config.ts): present only when
   * AIP_RUNTIME_CONFIG is exactly the string the build validated and
   * AIP_RUNTIME_SETTINGS is unset. The composition uses them instead of
   * validating `runtimeSettings` (compose-runtime.ts, `parseRuntimeSettings`).
   */
  readonly resolvedRuntimeSettings?: RuntimeSettings;
  /** The runtime's own service principal (kind `service`); default `aip-runtime`. */
  readonly servicePrincipal: Principal;
  readonly credentials: CredentialSource;
  /** The key that seals pagination cursors (AIP_CURSOR_KEY_SECRET_ARN or AIP_CURSOR_KEY). */
  readonly cursorKey: CursorKeySource;
  /** Connector ID → base URL override. */
  readonly connectorEndpoints: Readonly<Record<string, string>>;
  /** Connectors placed on a remote connector host (AIP_REMOTE_CONNECTORS); absent: every connector runs in-process. */
  readonly remotePlacement?: RemotePlacement;
  /** Endpoints the environment names (AWS_ENDPOINT_URL*); absent: the SDK's regional endpoint. */
  readonly endpoints: Readonly<Partial<Record<AwsService, string>>>;
}

export interface BootstrapIssue {
  /** The environment variable, with a path inside its JSON when relevant (`AIP_RUNTIME_CONFIG: connectors[0].id`). */
  readonly variable: string;
  readonly message: string;
}

/** Thrown for an environment the functions cannot run with. Names variables, never their values. */
export class BootstrapConfigError extends Error {
  readonly issues: readonly BootstrapIssue[];
  constructor(issues: readonly BootstrapIssue[]) {
    super(
      'Invalid AIP function environment (see functions/shared/settings.ts for every variable):\n' +
        issues.map((i) => `  - ${i.variable}: ${i.message}`).join('\n'),
    );
    this.name = 'BootstrapConfigError';
    this.issues = issues;
  }
}

/** A variable that must be set; missing, describeIssue reads "is required: it must hold <what>". */
const required = (what: string) => z.string({ error: `must hold ${what}` }).check(z.trim(), z.minLength(1, { message: `must not be empty: ${what}` }));

/**
 * A queue URL. Checked by shape, not with the WHATWG URL parser: emulators
 * answer URLs such as `http://sqs.us-east-1.127.0.0.1:9324/000000000000/q`
 * (fauxqs), whose host that parser rejects, while the SDK sends them fine.
 */
const url = (what: string) => required(what).check(z.regex(/^https?:\/\/[^/\s?#]+\/\S+$/, { message: `must be an http(s) URL (${what})` }));

const EnvSchema = z.object({
  [FUNCTION_ENV.tableName]: required('the DynamoDB table name').check(
    z.regex(/^[A-Za-z0-9_.-]{3,255}$/, {
      message: 'must be a DynamoDB table name: 3-255 of A-Z a-z 0-9 _ . -',
    }),
  ),
  [FUNCTION_ENV.invokeQueueUrl]: url('the invoke queue URL'),
  [FUNCTION_ENV.invokeQueueMaxReceiveCount]: z.optional(
    z.string().check(z.trim(), z.regex(/^(?:[1-9]\d{0,2}|1000)$/, { message: "must be the invoke queue's maxReceiveCount: an integer from 1 to 1000" })),
  ),
  [FUNCTION_ENV.reconcileQueueUrl]: url('the reconcile queue URL'),
  [FUNCTION_ENV.reconcileQueueArn]: required('the reconcile queue ARN').check(
    z.regex(/^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$/, {
      message: 'must be an SQS queue ARN (arn:aws:sqs:<region>:<account>:<name>)',
    }),
  ),
  [FUNCTION_ENV.scheduleGroupName]: required('the EventBridge Scheduler group').check(
    z.regex(/^[0-9a-zA-Z_.-]{1,64}$/, {
      message: 'must be a schedule group name: 1-64 of 0-9 a-z A-Z - _ .',
    }),
  ),
  [FUNCTION_ENV.schedulerRoleArn]: required('the role Scheduler assumes').check(
    z.regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/, {
      message: 'must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)',
    }),
  ),
  [FUNCTION_ENV.runtimeConfig]: required('JSON or a path to a JSON file with the runtime configuration'),
  [FUNCTION_ENV.cursorKeySecretArn]: z.optional(
    z.string().check(
      z.trim(),
      z.regex(/^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[\w/+=.@-]{1,512}$/, {
        message: 'must be a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>)',
      }),
    ),
  ),
  [OPTIONAL_ENV.cursorKey]: z.optional(z.string()),
  [OPTIONAL_ENV.runtimeSettings]: z.optional(z.string().check(z.trim())),
  [OPTIONAL_ENV.servicePrincipal]: z.optional(z.string().check(z.trim())),
  [OPTIONAL_ENV.localCredentials]: z.optional(z.string().check(z.trim())),
  [OPTIONAL_ENV.connectorEndpoints]: z.optional(z.string().check(z.trim())),
  [OPTIONAL_ENV.remoteConnectors]: z.optional(z.string().check(z.trim())),
});

/** A variable holding JSON, or a path to a JSON file (resolved against `cwd`). */
function readJsonValue(variable: string, raw: string, cwd: string, issues: BootstrapIssue[]): unknown {
  let text = raw;
  if (!raw.startsWith('{') && !raw.startsWith('[')) {
    const path = isAbsolute(raw) ? raw : resolve(cwd, raw);
    if (!existsSync(path)) {
      issues.push({ variable, message: 'is neither JSON nor the path of an existing file' });
      return undefined;
    }
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      issues.push({ variable, message: `cannot read the file it names (${(err as NodeJS.ErrnoException).code ?? 'error'})` });
      return undefined;
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    issues.push({ variable, message: 'is not valid JSON' });
    return undefined;
  }
}

/** Validates a nested JSON value; its issues are reported under `variable: path`. */
export function parseNested<T>(variable: string, schema: z.ZodMiniType<T>, value: unknown, issues: BootstrapIssue[]): T | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  for (const issue of result.error.issues) {
    const path = formatIssuePath(issue.path);
    issues.push({ variable: path ? `${variable}: ${path}` : variable, message: describeIssue(issue) });
  }
  return undefined;
}

const ConnectorEndpointsSchema = z.deferred(() =>
  z.record(IdSchema, z.string().check(z.refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), { message: 'must be an http(s) URL' }))),
);

export interface ReadSettingsOptions {
  /** Relative config paths resolve against this. Default process.cwd(). */
  readonly cwd?: string;
  /**
   * The configuration the build validated (./validated-config.ts; the
   * deployed functions pass the bundle's). Taken only when
   * AIP_RUNTIME_CONFIG is that exact string; any other value is validated.
   */
  readonly validated?: ValidatedConfig;
}

/**
 * The parsers of the variables a deployed function does without
 * (./settings.ts `OPTIONAL_SETTINGS_PARSERS`): each reports its issues under
 * the variable's name and returns undefined on any.
 */
export interface OptionalSettingsParsers {
  /** AIP_RUNTIME_CONFIG's value, when it is not the string the build validated. */
  runtimeConfig(value: unknown, issues: BootstrapIssue[]): DeploymentRuntimeConfig | undefined;
  /** AIP_LOCAL_CREDENTIALS' value: its references. */
  localCredentials(value: unknown, issues: BootstrapIssue[]): readonly LocalCredentialReference[] | undefined;
  /** AIP_REMOTE_CONNECTORS' value. */
  remotePlacement(value: unknown, issues: BootstrapIssue[]): RemotePlacement | undefined;
  /** Whether a remote placement may carry inline keys in this environment. */
  inlineKeysAllowed(envName: string): boolean;
  /** Every key source a placement names. */
  keySources(placement: RemotePlacement): readonly { readonly source: string }[];
}

/**
 * Whether reading `env` may need the {@link OptionalSettingsParsers}: an
 * AIP_RUNTIME_CONFIG other than the validated one (or none: the reader then
 * reports it), or either optional variable set. It may say yes where they end
 * up unused (the reader then only loaded them); never no where one is used.
 */
export function needsOptionalParsers(env: NodeJS.ProcessEnv, options: Pick<ReadSettingsOptions, 'validated'> = {}): boolean {
  return (
    options.validated === undefined ||
    env[FUNCTION_ENV.runtimeConfig]?.trim() !== options.validated.runtimeConfigJson ||
    Boolean(env[OPTIONAL_ENV.localCredentials]?.trim()) ||
    Boolean(env[OPTIONAL_ENV.remoteConnectors]?.trim())
  );
}

/** `parsers`, for reading `variable`; without them, the caller did not ask {@link needsOptionalParsers} (a bug, not bad input). */
function requireParsers(parsers: OptionalSettingsParsers | undefined, variable: string): OptionalSettingsParsers {
  if (parsers === undefined)
    throw new Error(`${variable} needs the optional settings parsers (functions/shared/settings.ts); needsOptionalParsers decides when to load them`);
  return parsers;
}

/**
 * Validates the function environment. Throws {@link BootstrapConfigError}
 * listing every problem at once. `parsers`: the {@link OptionalSettingsParsers},
 * needed when {@link needsOptionalParsers} says so.
 */
export function readSettings(
  env: NodeJS.ProcessEnv,
  options: ReadSettingsOptions & { readonly parsers?: OptionalSettingsParsers | undefined } = {},
): BootstrapSettings {
  const parsers = options.parsers;
  const cwd = options.cwd ?? process.cwd();
  const issues: BootstrapIssue[] = [];
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) issues.push({ variable: formatIssuePath(issue.path), message: describeIssue(issue) });
  }
  const vars = (parsed.success ? parsed.data : {}) as Partial<z.output<typeof EnvSchema>>;

  let runtimeConfig: DeploymentRuntimeConfig | undefined;
  const rawConfig = vars[FUNCTION_ENV.runtimeConfig];
  // Exactly the string the build validated: its result, with no schema built (./validated-config.ts).
  const validated = options.validated !== undefined && rawConfig === options.validated.runtimeConfigJson ? options.validated : undefined;
  if (validated !== undefined) {
    runtimeConfig = validated.runtimeConfig;
  } else if (rawConfig !== undefined) {
    const value = readJsonValue(FUNCTION_ENV.runtimeConfig, rawConfig, cwd, issues);
    if (value !== undefined) runtimeConfig = requireParsers(parsers, FUNCTION_ENV.runtimeConfig).runtimeConfig(value, issues);
  } else if (parsed.success) {
    issues.push({ variable: FUNCTION_ENV.runtimeConfig, message: 'is required' });
  }

  let runtimeSettings: Record<string, unknown> | undefined;
  const rawSettings = env[OPTIONAL_ENV.runtimeSettings]?.trim();
  const settingsValue = rawSettings ? readJsonValue(OPTIONAL_ENV.runtimeSettings, rawSettings, cwd, issues) : {};
  if (settingsValue !== undefined) {
    if (typeof settingsValue === 'object' && settingsValue !== null && !Array.isArray(settingsValue))
      runtimeSettings = settingsValue as Record<string, unknown>;
    else issues.push({ variable: OPTIONAL_ENV.runtimeSettings, message: 'must be a JSON object' });
  }

  let servicePrincipal: Principal = { id: DEFAULT_SERVICE_PRINCIPAL_ID, kind: 'service' };
  const rawPrincipal = env[OPTIONAL_ENV.servicePrincipal]?.trim();
  if (rawPrincipal) {
    if (IdSchema.safeParse(rawPrincipal).success) servicePrincipal = { id: rawPrincipal, kind: 'service' };
    else issues.push({ variable: OPTIONAL_ENV.servicePrincipal, message: 'must be a protocol ID: 1-256 of letters, digits and . _ : @ / -' });
  }

  let credentials: CredentialSource = { source: 'secrets-manager' };
  const rawLocal = env[OPTIONAL_ENV.localCredentials]?.trim();
  if (rawLocal) {
    const value = readJsonValue(OPTIONAL_ENV.localCredentials, rawLocal, cwd, issues);
    if (value !== undefined) {
      const references = requireParsers(parsers, OPTIONAL_ENV.localCredentials).localCredentials(value, issues);
      if (references) credentials = { source: 'local', references };
    }
  }

  let connectorEndpoints: Record<string, string> = {};
  const rawEndpoints = env[OPTIONAL_ENV.connectorEndpoints]?.trim();
  if (rawEndpoints) {
    const value = readJsonValue(OPTIONAL_ENV.connectorEndpoints, rawEndpoints, cwd, issues);
    if (value !== undefined) connectorEndpoints = parseNested(OPTIONAL_ENV.connectorEndpoints, ConnectorEndpointsSchema, value, issues) ?? {};
  }

  if (runtimeConfig) {
    const enabled = new Set(runtimeConfig.connectors.map((c) => c.id));
    for (const id of Object.keys(connectorEndpoints)) {
      if (!enabled.has(id))
        issues.push({
          variable: `${OPTIONAL_ENV.connectorEndpoints}: ${id}`,
          message: `is not an enabled connector (enabled: ${[...enabled].join(', ') || 'none'})`,
        });
    }
  }

  let remotePlacement: RemotePlacement | undefined;
  const rawRemote = env[OPTIONAL_ENV.remoteConnectors]?.trim();
  if (rawRemote) {
    const value = readJsonValue(OPTIONAL_ENV.remoteConnectors, rawRemote, cwd, issues);
    const remote = requireParsers(parsers, OPTIONAL_ENV.remoteConnectors);
    if (value !== undefined) remotePlacement = remote.remotePlacement(value, issues);
    if (remotePlacement !== undefined && runtimeConfig) {
      const enabled = new Set(runtimeConfig.connectors.map((c) => c.id));
      for (const c of remotePlacement.connectors) {
        if (!enabled.has(c.id))
          issues.push({
            variable: `${OPTIONAL_ENV.remoteConnectors}: ${c.id}`,
            message: `is not an enabled connector (enabled: ${[...enabled].join(', ') || 'none'})`,
          });
      }
      if (!remote.inlineKeysAllowed(runtimeConfig.envName) && remote.keySources(remotePlacement).some((k) => k.source === 'inline')) {
        issues.push({ variable: OPTIONAL_ENV.remoteConnectors, message: 'inline keys are for the local and test environments only; use KMS keys' });
      }
    }
  }

  let cursorKey: CursorKeySource = { source: 'none' };
  const cursorKeyArn = vars[FUNCTION_ENV.cursorKeySecretArn];
  const cursorKeyMaterial = env[OPTIONAL_ENV.cursorKey];
  if (cursorKeyArn !== undefined && cursorKeyMaterial !== undefined) {
    issues.push({ variable: OPTIONAL_ENV.cursorKey, message: `set either it or ${FUNCTION_ENV.cursorKeySecretArn}, not both` });
  } else if (cursorKeyArn !== undefined) {
    cursorKey = { source: 'secrets-manager', secretArn: cursorKeyArn };
  } else if (cursorKeyMaterial !== undefined) {
    if (runtimeConfig && !['local', 'test'].includes(runtimeConfig.envName)) {
      issues.push({
        variable: OPTIONAL_ENV.cursorKey,
        message: `is for the local and test environments only; deployed functions read the key from ${FUNCTION_ENV.cursorKeySecretArn}`,
      });
    } else cursorKey = { source: 'inline', material: cursorKeyMaterial };
  }

  if (issues.length > 0 || !runtimeConfig || !runtimeSettings) throw new BootstrapConfigError(issues);

  const endpoints: Partial<Record<AwsService, string>> = {};
  for (const service of ['dynamodb', 'sqs', 'scheduler', 'secretsManager'] as const) {
    const endpoint = configuredEndpoint(service, undefined, env);
    if (endpoint) endpoints[service] = endpoint;
  }

  const v = vars as z.output<typeof EnvSchema>;
  const maxReceiveCount = v[FUNCTION_ENV.invokeQueueMaxReceiveCount];
  return {
    tableName: v[FUNCTION_ENV.tableName],
    invokeQueueUrl: v[FUNCTION_ENV.invokeQueueUrl],
    ...(maxReceiveCount !== undefined ? { invokeQueueMaxReceiveCount: Number.parseInt(maxReceiveCount, 10) } : {}),
    reconcileQueueUrl: v[FUNCTION_ENV.reconcileQueueUrl],
    reconcileQueueArn: v[FUNCTION_ENV.reconcileQueueArn],
    scheduleGroup: v[FUNCTION_ENV.scheduleGroupName],
    schedulerRoleArn: v[FUNCTION_ENV.schedulerRoleArn],
    runtimeConfig,
    runtimeSettings,
    // The build's settings are those of AIP_RUNTIME_SETTINGS unset.
    ...(validated !== undefined && !rawSettings ? { resolvedRuntimeSettings: validated.runtimeSettings } : {}),
    servicePrincipal,
    credentials,
    cursorKey,
    connectorEndpoints,
    endpoints,
    ...(remotePlacement !== undefined ? { remotePlacement } : {}),
  };
}

/** The inverse of {@link readBootstrapSettings}, for in-process hosts that pass settings as an environment. */
export function settingsToEnv(settings: BootstrapSettings): Record<string, string> {
  const env: Record<string, string> = {
    [FUNCTION_ENV.tableName]: settings.tableName,
    [FUNCTION_ENV.invokeQueueUrl]: settings.invokeQueueUrl,
    [FUNCTION_ENV.reconcileQueueUrl]: settings.reconcileQueueUrl,
    [FUNCTION_ENV.reconcileQueueArn]: settings.reconcileQueueArn,
    [FUNCTION_ENV.scheduleGroupName]: settings.scheduleGroup,
    [FUNCTION_ENV.schedulerRoleArn]: settings.schedulerRoleArn,
    [FUNCTION_ENV.runtimeConfig]: JSON.stringify(settings.runtimeConfig),
    [OPTIONAL_ENV.runtimeSettings]: JSON.stringify(settings.runtimeSettings),
    [OPTIONAL_ENV.servicePrincipal]: settings.servicePrincipal.id,
  };
  if (settings.invokeQueueMaxReceiveCount !== undefined) env[FUNCTION_ENV.invokeQueueMaxReceiveCount] = String(settings.invokeQueueMaxReceiveCount);
  if (settings.cursorKey.source === 'secrets-manager') env[FUNCTION_ENV.cursorKeySecretArn] = settings.cursorKey.secretArn;
  if (settings.cursorKey.source === 'inline') env[OPTIONAL_ENV.cursorKey] = settings.cursorKey.material;
  if (settings.credentials.source === 'local') env[OPTIONAL_ENV.localCredentials] = JSON.stringify({ references: settings.credentials.references });
  if (Object.keys(settings.connectorEndpoints).length > 0) env[OPTIONAL_ENV.connectorEndpoints] = JSON.stringify(settings.connectorEndpoints);
  if (settings.remotePlacement !== undefined) env[OPTIONAL_ENV.remoteConnectors] = JSON.stringify(settings.remotePlacement);
  return env;
}
