/**
 * Test tiers (vitest projects):
 * - `unit`: test/unit, pure code and request-shape checks. No Java, no
 *   emulator: `npm run test:unit` runs on a bare machine in about a minute.
 *   Its files share one module graph per worker (`isolate: false`), as
 *   `infra` does: the protocol's schemas, the runtime and the SDK load once
 *   per worker instead of once per file (import time of the unit files went
 *   from 74 s to 12 s, the project's wall time from 152 s to 65 s on the
 *   2-core machine). A unit file may therefore not leave state behind: it
 *   restores what it stubs (`vi.unstubAllEnvs`, a mocked client's
 *   `restore()`, real timers). A file that replaces a module (`vi.mock`)
 *   cannot share the graph: it is named `*.isolated.test.ts` and runs in
 *   `unit:isolated`, a fresh module graph per file.
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
 * - `load`: the 2,000-action load run alone (`npm run test:load`).
 *
 * `npm test` (what CI runs) runs `unit`, `unit:isolated`, `infra` and `integration`.
 *
 * Timeouts only bound a hang: a test waits for events (test/support/wait.ts),
 * never for a stretch of time, so a busy machine makes it slower, not red.
 * What the code under test writes to stdout/stderr (the functions'
 * Powertools logs, WARN and above unless POWERTOOLS_LOG_LEVEL says otherwise)
 * is held back and shown only for a failing test (test/support/capture-output.ts);
 * a test that reads the logs sets its own level (test/reliability/secret-leakage.test.ts).
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
const ISOLATED_UNIT = 'test/unit/**/*.isolated.test.ts';
/** @aip-runtime/connector-sdk resolves to its source (tsconfig.json "paths"), as under tsc, tsx and esbuild. */
const resolve = { tsconfigPaths: true };

export default defineConfig({
  test: {
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { resolve, test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'], exclude: [ISOLATED_UNIT], isolate: false } },
      { resolve, test: { ...shared, name: 'unit:isolated', include: [ISOLATED_UNIT] } },
      { resolve, test: { ...shared, name: 'infra', include: ['test/infra/**/*.test.ts'], isolate: false } },
      {
        resolve,
        test: {
          ...shared,
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', 'test/infra/**', '**/node_modules/**'],
          globalSetup: ['test/support/global-setup.ts'],
          env: { ...quiet, AIP_LOAD_ACTIONS: process.env.AIP_LOAD_ACTIONS ?? '400' },
        },
      },
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
