/**
 * Test tiers (vitest projects):
 * - `unit`: test/unit, pure code and request-shape checks. No Java, no
 *   emulator: `npm run test:unit` runs on a bare machine in under a minute.
 * - `infra`: test/infra, the CDK app synthesized in memory (stack assertions,
 *   bundling, cdk-nag). No emulator. Its files share one module graph per
 *   worker (`isolate: false`): aws-cdk-lib and cdk-nag (about 1,000 modules)
 *   load once per worker instead of once per file, which was most of these
 *   files' time. They hold no module state of their own (each test builds a
 *   new App); a test that needs the emulators or stubs modules or the
 *   environment belongs to `integration`.
 * - `integration`: everything else (emulators, local stack, browser,
 *   reliability and security), with DynamoDB Local and fauxqs started once by
 *   the global setup. Its load run is the small one (AIP_LOAD_ACTIONS defaults
 *   to 400 here).
 * - **One module graph per worker** in `unit` and `integration` as in `infra`
 *   (`isolate: false`): the protocol's schemas, the runtime, the SDK and the
 *   AWS SDK load once per worker instead of once per file. On the 2-core
 *   machine under load, `unit` went from 152 to 30-43 s (import 74 -> 8-11 s)
 *   and test/integration/runtime from 146 to 81 s (import 66 -> 7 s). A file
 *   therefore leaves no state behind: it restores what it stubs
 *   (`vi.unstubAllEnvs`, a mocked client's `restore()`, real timers,
 *   `uninstallRuntime`). A file that needs a fresh module graph (it replaces
 *   a module with `vi.mock`, or sets the level of the process-wide logger
 *   before anything else makes it) is named `*.isolated.test.ts` and runs in
 *   `unit:isolated` or `integration:isolated`, one graph per file.
 * - `load`: the 2,000-action load run alone (`npm run test:load`).
 *
 * `npm test` (what CI runs) runs `unit`, `unit:isolated`, `infra`, `integration` and
 * `integration:isolated`.
 *
 * Timeouts only bound a hang: a test waits for events (test/support/wait.ts),
 * never for a stretch of time, so a busy machine makes it slower, not red.
 * What the code under test writes to stdout/stderr (the functions'
 * Powertools logs, WARN and above unless POWERTOOLS_LOG_LEVEL says otherwise)
 * is held back and shown only for a failing test (test/support/capture-output.ts);
 * a test that reads the logs sets its own level (test/reliability/secret-leakage.isolated.test.ts).
 */
import { defineConfig } from 'vitest/config';

const quiet = { POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'WARN' };
const shared = {
  testTimeout: 300_000,
  hookTimeout: 300_000,
  pool: 'forks' as const,
  allowOnly: false,
  passWithNoTests: false,
  env: quiet,
  setupFiles: ['test/support/capture-output.ts'],
};
const LOAD = 'test/reliability/load.test.ts';
const notIntegration = ['test/unit/**', 'test/infra/**', '**/node_modules/**'];
const integration = {
  ...shared,
  globalSetup: ['test/support/global-setup.ts'],
  env: { ...quiet, AIP_LOAD_ACTIONS: process.env.AIP_LOAD_ACTIONS ?? '400' },
};
const ISOLATED = '**/*.isolated.test.ts';
/** @aip-runtime/connector-sdk resolves to its source (tsconfig.json "paths"), as under tsc, tsx and esbuild. */
const resolve = { tsconfigPaths: true };

export default defineConfig({
  test: {
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { resolve, test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'], exclude: [ISOLATED], isolate: false } },
      { resolve, test: { ...shared, name: 'unit:isolated', include: ['test/unit/**/*.isolated.test.ts'] } },
      { resolve, test: { ...shared, name: 'infra', include: ['test/infra/**/*.test.ts'], isolate: false } },
      {
        resolve,
        test: { ...integration, name: 'integration', include: ['test/**/*.test.ts'], exclude: [...notIntegration, ISOLATED], isolate: false },
      },
      { resolve, test: { ...integration, name: 'integration:isolated', include: ['test/**/*.isolated.test.ts'], exclude: notIntegration } },
      {
        resolve,
        test: {
          ...shared,
          name: 'load',
          include: [LOAD],
          globalSetup: ['test/support/global-setup.ts'],
          env: { ...quiet, AIP_LOAD_ACTIONS: process.env.AIP_LOAD_ACTIONS ?? '2000' },
        },
      },
    ],
  },
});
