/**
 * Section 4: bundle size and module initialisation ("cold start" minus the
 * Lambda sandbox) of every Lambda function.
 *
 * The function list is the stack's own (infra/aip-functions.ts
 * `aipFunctionDefinitions` for infra/config.local.json). Each distinct entry
 * module is bundled once with esbuild using the options infra/functions.ts
 * gives NodejsFunction (ESM, node22 target, platform node, mainFields
 * module/main, minified, the createRequire banner, external source map
 * without sources content, nothing external: the AWS SDK is bundled);
 * functions that share an entry module share its bundle, as they do in
 * `cdk synth` (NodejsFunction bundles the whole entry module).
 *
 * Initialisation time: a fresh `node --input-type=module` process imports
 * the bundle and prints performance.now() around the dynamic import, so
 * Node's own start-up is excluded. Median of N runs. The environment is the
 * function environment the stack sets (dummy values, loopback endpoints),
 * with NODE_OPTIONS=--enable-source-maps as the functions get it, and again
 * without it. Imports go round-robin over the bundles, so that background
 * load falls on every bundle alike. The handlers build the Runtime lazily on the first
 * invocation, so nothing here reaches the network.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { distribution } from '../lib/stats.js';

const run = promisify(execFile);

export interface BundleFigures {
  readonly entry: string;
  readonly functions: string[];
  readonly bytes: number;
  readonly gzip_bytes: number;
  readonly sourcemap_bytes: number;
  readonly build_ms: number;
  /** Median import time, ms, with NODE_OPTIONS=--enable-source-maps (as deployed). */
  readonly init_ms_p50: number;
  readonly init_ms_min: number;
  readonly init_ms_max: number;
  /** Median import time without source-map support (fewer runs). */
  readonly init_ms_p50_no_sourcemaps?: number;
  readonly error?: string;
}

export interface BundlesFigures {
  readonly runs: number;
  readonly esbuild_version: string;
  readonly node_version: string;
  readonly bundles: BundleFigures[];
}

/** The function environment infra/functions.ts sets, with dummy values. */
function functionEnv(FUNCTION_ENV: Record<string, string>, POWERTOOLS_ENV: Record<string, string>, runtimeConfig: string): Record<string, string> {
  return {
    [POWERTOOLS_ENV.serviceName as string]: 'aip-runtime',
    [POWERTOOLS_ENV.metricsNamespace as string]: 'AIP/bench',
    [POWERTOOLS_ENV.logLevel as string]: 'INFO',
    [POWERTOOLS_ENV.logLevelAlias as string]: 'INFO',
    POWERTOOLS_LOGGER_LOG_EVENT: 'false',
    POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
    [FUNCTION_ENV.envName as string]: 'bench',
    [FUNCTION_ENV.tableName as string]: 'aip-bench',
    [FUNCTION_ENV.invokeQueueUrl as string]: 'http://127.0.0.1:9/000000000000/aip-bench-invoke',
    [FUNCTION_ENV.reconcileQueueUrl as string]: 'http://127.0.0.1:9/000000000000/aip-bench-reconcile',
    [FUNCTION_ENV.reconcileQueueArn as string]: 'arn:aws:sqs:us-east-1:000000000000:aip-bench-reconcile',
    [FUNCTION_ENV.scheduleGroupName as string]: 'aip-bench',
    [FUNCTION_ENV.schedulerRoleArn as string]: 'arn:aws:iam::000000000000:role/aip-bench',
    [FUNCTION_ENV.runtimeConfig as string]: runtimeConfig,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
    AWS_LAMBDA_FUNCTION_NAME: 'aip-bench',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

const IMPORT_PROBE = 'const t=performance.now(); await import(process.env.AIP_BENCH_BUNDLE); process.stdout.write(String(performance.now()-t));';

async function importMs(file: string, env: Record<string, string>, sourceMaps: boolean): Promise<number> {
  const childEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, AIP_BENCH_BUNDLE: pathToFileURL(file).href };
  if (sourceMaps) childEnv.NODE_OPTIONS = '--enable-source-maps';
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', IMPORT_PROBE], { env: childEnv, timeout: 60_000 });
  const ms = Number(stdout.trim());
  if (!Number.isFinite(ms)) throw new Error(`unexpected output: ${stdout.slice(0, 200)}`);
  return ms;
}

export async function runBundlesSection(options: { runs: number; runsWithoutSourceMaps: number }, log: (line: string) => void): Promise<BundlesFigures> {
  const [{ aipFunctionDefinitions }, { loadInfraConfig, toRuntimeConfig }, { DEFAULT_CONFIG_FILE }, fns, fenv, esbuildPkg] = await Promise.all([
    import('../../infra/aip-functions.js'),
    import('../../infra/config.js'),
    import('../../infra/aip-app.js'),
    import('../../infra/functions.js'),
    import('../../infra/function-env.js'),
    import('esbuild'),
  ]);
  const config = loadInfraConfig(DEFAULT_CONFIG_FILE);
  const definitions = aipFunctionDefinitions(config);
  const byEntry = new Map<string, string[]>();
  for (const d of definitions) byEntry.set(d.entry, [...(byEntry.get(d.entry) ?? []), d.id]);
  const env = functionEnv(fenv.FUNCTION_ENV, fenv.POWERTOOLS_ENV, JSON.stringify(toRuntimeConfig(config)));

  const dir = mkdtempSync(join(tmpdir(), 'aip-bench-bundles-'));
  const bundles: BundleFigures[] = [];
  try {
    // Build every bundle first.
    const built: { outfile: string; figures: Omit<BundleFigures, 'init_ms_p50' | 'init_ms_min' | 'init_ms_max'>; withMaps: number[]; without: number[]; error?: string }[] = [];
    for (const [entry, functions] of byEntry) {
      const outfile = join(dir, entry.replace(/[/.]/g, '_'), 'index.mjs');
      const t0 = performance.now();
      // The options of infra/functions.ts (NodejsFunction `bundling`), passed to esbuild directly.
      await build({
        entryPoints: [join(fns.PROJECT_ROOT, entry)],
        bundle: true,
        outfile,
        platform: 'node',
        target: 'node22',
        format: 'esm',
        mainFields: ['module', 'main'],
        banner: { js: fns.ESM_REQUIRE_BANNER },
        minify: true,
        sourcemap: true,
        sourcesContent: false,
        external: [],
        logLevel: 'error',
      });
      const build_ms = Math.round(performance.now() - t0);
      const code = readFileSync(outfile);
      built.push({
        outfile,
        figures: { entry, functions, bytes: code.length, gzip_bytes: gzipSync(code, { level: 9 }).length, sourcemap_bytes: statSync(`${outfile}.map`).size, build_ms },
        withMaps: [],
        without: [],
      });
      log(`  built ${entry}: ${(code.length / 1024).toFixed(0)} KiB in ${build_ms} ms`);
    }
    // Then import them round-robin, so that background load falls on every bundle alike.
    for (let i = 0; i < Math.max(options.runs, options.runsWithoutSourceMaps); i++) {
      for (const b of built) {
        if (b.error !== undefined) continue;
        try {
          if (i < options.runs) b.withMaps.push(await importMs(b.outfile, env, true));
          if (i < options.runsWithoutSourceMaps) b.without.push(await importMs(b.outfile, env, false));
        } catch (err) {
          b.error = err instanceof Error ? err.message.split('\n').slice(0, 3).join(' ') : String(err);
          log(`  ${b.figures.entry}: import failed: ${b.error}`);
        }
      }
    }
    for (const b of built) {
      const d = distribution(b.withMaps);
      bundles.push({
        ...b.figures,
        init_ms_p50: d.p50,
        init_ms_min: d.min,
        init_ms_max: d.max,
        ...(b.without.length > 0 ? { init_ms_p50_no_sourcemaps: distribution(b.without).p50 } : {}),
        ...(b.error !== undefined ? { error: b.error } : {}),
      });
      log(`  ${b.figures.entry}: init p50 ${d.p50} ms`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { runs: options.runs, esbuild_version: esbuildPkg.version, node_version: process.version, bundles };
}
