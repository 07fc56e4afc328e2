/**
 * The configuration THIS deployment's build validated: the exact
 * AIP_RUNTIME_CONFIG the stack gives the functions, that value parsed with
 * its schema, and the Runtime's settings the composition derives from it
 * when AIP_RUNTIME_SETTINGS is unset (as the stack leaves it).
 *
 * This file is a stand-in: the bundling of the functions (infra/bundling.ts,
 * `validatedConfigPlugin`) replaces it by a generated module carrying the
 * values ./validated-config-source.ts computed at build time, with the same
 * schemas the functions carry. The settings reader (./settings.ts) takes them
 * only when the environment holds exactly the string that was validated, and
 * validates anything else as before: a cold start then builds no
 * configuration schema (docs/infra.md, "Runtime configuration").
 * Under `npm start` and in the tests it is undefined: everything is
 * validated at run time.
 */
import type { DeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import type { RuntimeSettings } from '../../lib/runtime/config.js';

export interface ValidatedConfig {
  /** AIP_RUNTIME_CONFIG exactly as the stack sets it. */
  readonly runtimeConfigJson: string;
  /** `runtimeConfigJson` parsed with `DeploymentRuntimeConfigSchema`. */
  readonly runtimeConfig: DeploymentRuntimeConfig;
  /** The Runtime's settings with AIP_RUNTIME_SETTINGS unset (compose-runtime.ts, `resolveRuntimeSettings` of `{}`). */
  readonly runtimeSettings: RuntimeSettings;
}

export const VALIDATED_CONFIG: ValidatedConfig | undefined = undefined;
