/**
 * Build time only (infra/bundling.ts, `validatedConfigPlugin`): the module
 * that replaces the stand-in ./validated-config.ts in a deployment's bundles.
 *
 * It validates the deployment's AIP_RUNTIME_CONFIG with the functions' own
 * code, as a cold start would: `DeploymentRuntimeConfigSchema`, then the
 * Runtime's settings with AIP_RUNTIME_SETTINGS unset
 * (compose-runtime.ts, `resolveRuntimeSettings`). An invalid configuration
 * fails the build, naming the field, as it would fail the function.
 */
import { isDeepStrictEqual } from 'node:util';
import { parseDeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import { resolveRuntimeSettings } from './compose-runtime.js';
import type { ValidatedConfig } from './validated-config.js';

/** `runtimeConfigJson` validated as a cold start would validate it. Throws what that validation throws. */
export function validateRuntimeConfig(runtimeConfigJson: string): ValidatedConfig {
  const runtimeConfig = parseDeploymentRuntimeConfig(runtimeConfigJson);
  const runtimeSettings = resolveRuntimeSettings({}, runtimeConfig.envName);
  // The generated module carries JSON. A value that JSON would change (an undefined member, a Date, a Map) must not
  // reach the functions as something other than what run-time validation returns.
  for (const [name, value] of [
    ['the runtime configuration', runtimeConfig],
    ["the Runtime's settings", runtimeSettings],
  ] as const) {
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(value)), value)) throw new Error(`${name}, validated, does not survive JSON unchanged`);
  }
  return { runtimeConfigJson, runtimeConfig, runtimeSettings };
}

/** The source of the generated module: the stand-in's export, with {@link validateRuntimeConfig}'s values. */
export function validatedConfigSource(runtimeConfigJson: string): string {
  const validated = validateRuntimeConfig(runtimeConfigJson);
  return `export const VALIDATED_CONFIG = JSON.parse(${JSON.stringify(JSON.stringify(validated))});\n`;
}
