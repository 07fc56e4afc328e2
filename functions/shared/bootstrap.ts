/**
 * The Runtime of this container, shared by every Lambda handler.
 *
 * - {@link getRuntime} is what the handlers call: one Runtime per container,
 *   built lazily at the first invocation from `process.env` (read by
 *   ./settings.ts). A failed build is not cached, so the next invocation tries
 *   again (and the failure shows on every invocation's logs, not only the
 *   first).
 * - {@link createRuntime} builds a Runtime from validated settings. The
 *   wiring lives in ./compose-runtime.ts, imported on first use, so importing
 *   a handler module stays cheap and free of the Runtime's module graph (the
 *   handlers' unit tests import them with a stub).
 * - {@link installRuntime} lets an in-process host (dev/local/start.ts, the
 *   end-to-end tests) hand the same handlers a runtime it built itself.
 *
 * Business rules do not live here: this module only reads configuration and
 * connects adapters to ports.
 */
import type { Runtime } from '../../lib/runtime/runtime.js';
import type { RuntimeHandle, RuntimeOverrides } from './compose-runtime.js';
import { once } from './lazy.js';
import { needsOptionalParsers, readSettings, type BootstrapSettings } from './settings-core.js';
import { VALIDATED_CONFIG, type ValidatedConfig } from './validated-config.js';

/** Builds a Runtime from validated settings (./compose-runtime.ts, imported on the first call). */
export async function createRuntime(settings: BootstrapSettings, overrides: RuntimeOverrides = {}): Promise<RuntimeHandle> {
  const { composeRuntime } = await import('./compose-runtime.js');
  return composeRuntime(settings, overrides);
}

/**
 * The Runtime built from process.env (settings read at each attempt), with the configuration the bundle's build
 * validated (./validated-config.ts); see ./lazy.ts for what a failed build does.
 */
const fromEnvironment = () => once(async () => (await createRuntime(await settingsOf(process.env))).runtime);

/**
 * The function environment's settings, as ./settings.ts `readBootstrapSettings`
 * reads them, with the bundle's validated configuration (`validated`, default
 * ./validated-config.ts). The parsers of the variables a deployed function
 * does without are imported only when the environment may need them
 * (./settings-core.ts `needsOptionalParsers`).
 */
export async function settingsOf(env: NodeJS.ProcessEnv, validated: ValidatedConfig | undefined = VALIDATED_CONFIG): Promise<BootstrapSettings> {
  const options = validated !== undefined ? { validated } : {};
  const parsers = needsOptionalParsers(env, options) ? (await import('./settings.js')).OPTIONAL_SETTINGS_PARSERS : undefined;
  return readSettings(env, { ...options, parsers });
}

let installed: Promise<Runtime> | undefined;
let building = fromEnvironment();

/**
 * The container's Runtime: built from process.env on first use, or the one an
 * in-process host installed. Concurrent first calls share one build.
 */
export function getRuntime(): Promise<Runtime> {
  return installed ?? building();
}

/**
 * In-process hosting (dev/local/start.ts, end-to-end tests): every handler's
 * `getRuntime()` resolves to this runtime until {@link uninstallRuntime}.
 * Never used in Lambda.
 */
export function installRuntime(runtime: Runtime): void {
  installed = Promise.resolve(runtime);
}

export function uninstallRuntime(): void {
  installed = undefined;
  building = fromEnvironment();
}
