/**
 * The function environment's reader with every parser it may need: the
 * settings of ./settings-core.ts (re-exported here) and the parsers of the
 * three variables a deployed function does without (an AIP_RUNTIME_CONFIG the
 * build did not validate, AIP_LOCAL_CREDENTIALS, AIP_REMOTE_CONNECTORS).
 *
 * In-process hosts (dev/local/start.ts) and the tests read settings here.
 * The deployed functions' ./bootstrap.ts reads them with ./settings-core.ts and
 * imports this module only when `needsOptionalParsers` says the environment
 * needs it.
 */
import { DeploymentRuntimeConfigSchema } from '../../lib/config/deployment.js';
import { inlineKeysAllowed, keySources, remoteConfigSchemas } from '../../lib/runtime/remote/config.js';
import { localCredentialConfigSchema, type LocalCredentialReference } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import { type BootstrapSettings, type OptionalSettingsParsers, OPTIONAL_ENV, parseNested, type ReadSettingsOptions, readSettings } from './settings-core.js';
import { FUNCTION_ENV } from '../../lib/config/function-env.js';

export * from './settings-core.js';

export const OPTIONAL_SETTINGS_PARSERS: OptionalSettingsParsers = {
  runtimeConfig: (value, issues) => parseNested(FUNCTION_ENV.runtimeConfig, DeploymentRuntimeConfigSchema, value, issues),
  localCredentials: (value, issues) =>
    parseNested(OPTIONAL_ENV.localCredentials, localCredentialConfigSchema(), value, issues)?.references as LocalCredentialReference[] | undefined,
  remotePlacement: (value, issues) => parseNested(OPTIONAL_ENV.remoteConnectors, remoteConfigSchemas().RemotePlacementSchema, value, issues),
  inlineKeysAllowed,
  keySources,
};

/**
 * Validates the function environment (./settings-core.ts `readSettings`, with
 * every parser). Throws `BootstrapConfigError` listing every problem at once.
 */
export function readBootstrapSettings(env: NodeJS.ProcessEnv = process.env, options: ReadSettingsOptions = {}): BootstrapSettings {
  return readSettings(env, { ...options, parsers: OPTIONAL_SETTINGS_PARSERS });
}
