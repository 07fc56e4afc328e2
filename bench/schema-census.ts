/**
 * How many zod schemas a cold start builds, where, and how many of them any
 * parse ever runs: the census behind "Where the time goes now" in
 * docs/bench/analysis.md.
 *
 *   npm run bench:schema-census -- [entry] [handler] [route]
 *   (default: functions/http/actions.ts getActionHandler getAction; the
 *   events are the bundles section's: a route ID of lib/http/routes.ts, with
 *   a charge as the body of `submitAction` and a tools/call as that of `mcp`,
 *   or `sqs:invoke` / `sqs:reconcile` for the queue consumers; `execute`: the
 *   submit's first execute on stores that answer, as the bundles section's
 *   submit rows run it, a fresh action for each invocation)
 *
 * The entry is bundled as deployed (infra/bundling.ts `esbuildOptions`, the
 * precompiled registry) but not minified, so that every stack frame names a
 * line of a module esbuild marks with a `// path` comment. A fresh process
 * installs zod's global post-processor hook (`__zod_globalConfig.postProcessor`,
 * which zod calls once per schema it constructs, checks included), imports
 * the bundle, and invokes the handler twice with the bench's event (every
 * store call fails at once against loopback, as in the bundles section).
 * For each schema it records the phase (import, first or second invocation),
 * the first frame outside zod (the module that built it) and whether its
 * parser ever ran. Checks never "run" (zod calls them through their schema)
 * and intermediate clones (`.check()` returns a copy) are built and dropped,
 * so "ran" is a lower bound of what the path needs.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { DEFAULT_CONFIG_FILE } from '../infra/aip-app.js';
import {
  esbuildOptions,
  generatePrecompiledRegistry,
  builtinsThroughRequirePlugin,
  precompiledRegistryPlugin,
  generateValidatedConfig,
  validatedConfigPlugin,
} from '../infra/bundling.js';
import { loadInfraConfig, toDeploymentRuntimeConfig } from '../lib/config/deployment.js';
import { FUNCTION_ENV, POWERTOOLS_ENV } from '../lib/config/function-env.js';
import { mcpToolCallEvent, routeEvent, sqsEvent, submitEvent } from './lib/lambda-events.js';
import { functionEnv, startSubmitStores, type SubmitStores } from './sections/bundles.js';

const [entry = 'functions/http/actions.ts', handler = 'getActionHandler', route = 'getAction'] = process.argv.slice(2);
// `execute`: the submit's first execute on stores that answer (the bundles section's stores), a fresh action per invocation.
const executeId = `census-${randomUUID()}`;
const event =
  route === 'execute'
    ? submitEvent({ id: `${executeId}-1` })
    : route === 'submitAction'
      ? submitEvent()
      : route === 'mcp'
        ? mcpToolCallEvent()
        : route === 'sqs:invoke' || route === 'sqs:reconcile'
          ? sqsEvent(route === 'sqs:invoke' ? 'invoke' : 'reconcile')
          : routeEvent(route);

/** The child's probe: counts constructions through zod's post-processor hook, writes them to AIP_CENSUS_OUT. */
const PROBE = `
Error.stackTraceLimit = 50;
const built = []; let phase = 'import';
Object.assign((globalThis.__zod_globalConfig ??= {}), { postProcessor(inst) {
  const rec = { phase, stack: new Error().stack, ran: false }; built.push(rec);
  const run = inst._zod.run;
  if (typeof run === 'function') inst._zod.run = function (...args) { rec.ran = true; return run.apply(this, args); };
} });
const context = { functionName: 'aip-census', awsRequestId: 'census', getRemainingTimeInMillis: () => 29000 };
const m = await import(process.env.AIP_CENSUS_BUNDLE);
const event = JSON.parse(process.env.AIP_CENSUS_EVENT);
const events = [event, JSON.parse(process.env.AIP_CENSUS_EVENT_WARM ?? process.env.AIP_CENSUS_EVENT)];
for (const p of ['first', 'second']) { phase = p; await m[process.env.AIP_CENSUS_HANDLER](events.shift(), context).catch(() => {}); }
(await import('node:fs')).writeFileSync(process.env.AIP_CENSUS_OUT, JSON.stringify(built));
process.exit(0);`;

interface Built {
  readonly phase: string;
  readonly stack: string;
  readonly ran: boolean;
}

const dir = mkdtempSync(join(tmpdir(), 'aip-schema-census-'));
let stores: SubmitStores | undefined;
try {
  const config = loadInfraConfig(DEFAULT_CONFIG_FILE);
  const baseEnv = functionEnv(FUNCTION_ENV, POWERTOOLS_ENV, JSON.stringify(toDeploymentRuntimeConfig(config)));
  stores = route === 'execute' ? await startSubmitStores(config, baseEnv) : undefined;
  const env = stores !== undefined ? { ...baseEnv, ...stores.env } : baseEnv;
  const connectors = stores?.connectors ?? config.connectors.map(({ id }) => ({ id }));
  const outdir = join(dir, 'bundle');
  const runtimeConfig = env[FUNCTION_ENV.runtimeConfig] as string;
  await build({
    ...esbuildOptions(entry, outdir),
    minify: false,
    sourcemap: false,
    plugins: [
      builtinsThroughRequirePlugin(),
      precompiledRegistryPlugin(() => generatePrecompiledRegistry(connectors)),
      // Built for the AIP_RUNTIME_CONFIG it runs with, as a deployment's bundle is.
      validatedConfigPlugin(() => generateValidatedConfig(runtimeConfig)),
    ],
  });
  // Module boundaries: esbuild writes `// <input path>` before each module of an unminified bundle.
  const modules = new Map<string, { line: number; module: string }[]>();
  for (const file of ['index.mjs', ...readdirSync(join(outdir, 'chunks')).map((f) => `chunks/${f}`)]) {
    if (!file.endsWith('.mjs')) continue;
    const marks: { line: number; module: string }[] = [];
    readFileSync(join(outdir, file), 'utf8')
      .split('\n')
      .forEach((text, i) => {
        const m = /^\/\/ (\S+\.[cm]?[jt]sx?)$/.exec(text);
        if (m) marks.push({ line: i + 1, module: (m[1] as string).replace(/^.*node_modules\//, '') });
      });
    modules.set(file, marks);
  }
  const moduleAt = (file: string, line: number): string => {
    let found = file;
    for (const mark of modules.get(file) ?? []) {
      if (mark.line > line) break;
      found = mark.module;
    }
    return found;
  };
  const out = join(dir, 'census.json');
  execFileSync(process.execPath, ['--input-type=module', '-e', PROBE], {
    env: {
      PATH: process.env.PATH ?? '',
      ...env,
      AIP_CENSUS_BUNDLE: pathToFileURL(join(outdir, 'index.mjs')).href,
      AIP_CENSUS_HANDLER: handler,
      AIP_CENSUS_EVENT: JSON.stringify(event),
      ...(route === 'execute' ? { AIP_CENSUS_EVENT_WARM: JSON.stringify(submitEvent({ id: `${executeId}-2` })) } : {}),
      AIP_CENSUS_OUT: out,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const built = JSON.parse(readFileSync(out, 'utf8')) as Built[];
  if (built.length === 0) throw new Error('zod never called the post-processor hook: this zod version does not have it, and the census cannot count');
  const frame = new RegExp(`${outdir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/(\\S+?\\.mjs):(\\d+):\\d+`);
  const rows = new Map<string, { built: number; ran: number }>();
  for (const b of built) {
    let module = '(zod itself)';
    for (const line of b.stack.split('\n').slice(1)) {
      const m = frame.exec(line);
      if (m === null) continue;
      const at = moduleAt(m[1] as string, Number(m[2]));
      if (at.startsWith('zod/')) continue;
      module = at;
      break;
    }
    const key = `${b.phase}\t${module}`;
    const row = rows.get(key) ?? { built: 0, ran: 0 };
    row.built++;
    if (b.ran) row.ran++;
    rows.set(key, row);
  }
  process.stdout.write(`Schemas zod builds for ${entry} ${handler} (${route}), by phase and building module:\n\n`);
  process.stdout.write('| phase | module | built | parser ran |\n|---|---|---:|---:|\n');
  for (const [key, row] of [...rows].sort((a, b) => b[1].built - a[1].built)) {
    const [phase, module] = key.split('\t');
    process.stdout.write(`| ${phase} | ${module} | ${row.built} | ${row.ran} |\n`);
  }
  for (const phase of ['import', 'first', 'second']) {
    const of = built.filter((b) => b.phase === phase);
    process.stdout.write(`\n${phase}: ${of.length} built, ${of.filter((b) => b.ran).length} of them ran`);
  }
  process.stdout.write(`\ntotal: ${built.length} built, ${built.filter((b) => b.ran).length} ran\n`);
} finally {
  await stores?.stop();
  rmSync(dir, { recursive: true, force: true });
}
