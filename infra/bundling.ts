/**
 * THE bundling of the Lambda functions: one definition of the esbuild options,
 * used by the CDK functions (infra/functions.ts, through {@link localBundling}
 * and infra/bundle-cli.ts) and by the bench (bench/sections/bundles.ts), so
 * what is measured is what is deployed.
 *
 * Decisions (measured by `npm run bench`, section "bundles"; figures in
 * docs/bench/analysis.md, "Cold start and bundles"):
 *
 * - **ESM with code splitting.** Each function is bundled from its entry into
 *   `index.mjs` plus `chunks/*.mjs`. Every `import()` of the code becomes a
 *   chunk that is read, parsed and evaluated only when the code path runs: the
 *   composition of the Runtime (functions/shared/compose-runtime.ts, loaded on
 *   the first invocation that needs it), the run-time ajv fallback, the X-Ray
 *   tracer when tracing is off, the AWS SDK's credential providers it never
 *   uses on Lambda (SSO, INI, process, …; the SDK imports them lazily itself).
 *   NodejsFunction cannot split (it writes one `outfile`), so the stack uses
 *   `lambda.Function` with `Code.fromAsset` and a local bundling step (no
 *   Docker) that runs this module in a child process (infra/bundle-cli.ts):
 *   CDK's local bundling is synchronous, esbuild's plugins are not.
 * - **Regrouped into fewer files** (./merge-chunks.ts): esbuild splits by
 *   reachability alone, so a module shared by the entry and a lazily imported
 *   chunk got a file of its own even though the entry always loaded it
 *   first; a read's cold start read 40 files, an execute's 52. Rollup
 *   regroups esbuild's output (the code as esbuild wrote it, tree-shaking
 *   off, the source maps chained) so that such a module joins the chunk
 *   that loads it first: 4 files for a read, 11 for an execute, the same
 *   bytes, the same lazy boundaries. `splitting: false` (the bench's
 *   one-file variant) skips it.
 * - **Everything bundled, the AWS SDK included** (nothing external): the
 *   deployed code runs the versions the tests ran, and a prototype with the SDK
 *   external (Lambda's copy) started slower: the runtime's SDK is not
 *   minified, not tree-shaken and is resolved file by file from disk.
 * - **Validators compiled at bundle time.** The capability registry's JSON
 *   Schemas are compiled by ajv here, for the connectors the deployment
 *   enables, and shipped as standalone validator code
 *   (lib/runtime/schema-precompile.ts generates the module;
 *   lib/runtime/schema-precompiled.ts serves it). The plugin below resolves
 *   the stand-in functions/shared/precompiled-registry.ts to that generated
 *   module, so the deployed functions never load nor run ajv's compiler;
 *   `npm start` and the tests keep the stand-in (run-time ajv).
 * - **The deployment's own connectors compiled in.** The stand-in
 *   functions/shared/deployment-connectors.ts is resolved to a generated
 *   module ({@link deploymentConnectorsPlugin}) that imports each code
 *   connector module the configuration names and carries each declarative
 *   HTTP document as JSON: a function builds them at cold start with no file
 *   read (infra/deployment-connectors.ts, docs/deploying-your-connectors.md).
 *   A module's own imports resolve from its folder (the team's
 *   node_modules); the same files as the runtime's (this project installed
 *   as a dependency) are bundled once.
 * - **The configuration validated at build** ({@link validatedConfigPlugin}):
 *   with `runtimeConfig` (the AIP_RUNTIME_CONFIG the stack gives the
 *   functions), the stand-in functions/shared/validated-config.ts becomes a
 *   module carrying that string and its validated values, computed here with
 *   the functions' own schemas (functions/shared/validated-config-source.ts).
 *   A function whose environment holds exactly that string builds no
 *   configuration schema at cold start (docs/infra.md, "Runtime
 *   configuration").
 * - Minified, node22 target, `module` before `main` (ESM builds of the
 *   dependencies tree-shake), the `createRequire` banner that ESM bundles of
 *   CommonJS dependencies need, external source maps without the sources'
 *   content (Node uses them only with the configuration's `sourceMaps: true`,
 *   which sets NODE_OPTIONS=--enable-source-maps; otherwise they are there
 *   to map a logged stack offline).
 * - **zod without its JIT** ({@link ZOD_JITLESS_BANNER}): a cold start
 *   parses each schema a few times, not enough to repay compiling a parser
 *   for it; the first invocation's composition was about 55 ms (20 %) shorter.
 * - **Builtins through `require`** ({@link builtinsThroughRequirePlugin}):
 *   an ES import of a builtin would make Node read every export of it,
 *   lazy ones included (node:http's load undici, node:util's worker_threads).
 */
import { execFileSync, execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions, Metafile, Plugin } from 'esbuild';
import { mergeChunks } from './merge-chunks.js';

/** Repository root: entries resolve against it, whatever the working directory. */
export const BUNDLE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The `require` that esbuild's ESM output of CommonJS dependencies, and the
 * builtins' stand-ins, call. The banner starts every esbuild chunk, and the
 * regrouping keeps each one, so a file Rollup merged from 24 chunks ran
 * `createRequire` 24 times; one `require` serves every chunk of the process.
 * Everything is bundled: it loads builtins, and the optional package the AWS
 * SDK tries (`@aws-sdk/signature-v4-crt`, absent), which resolves alike from
 * every file of a bundle, whichever file made the `require`. Sharing it cut
 * about 15 million instructions (3 %) from the cold starts of the submit and
 * of the capabilities listing (docs/bench/analysis.md, "Issue 22: one require
 * per process").
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __aipCreateRequire } from 'node:module'; const require = (globalThis.__aipRequire ??= __aipCreateRequire(import.meta.url));";

/**
 * zod without its JIT (`z.config({ jitless: true })`), set before any schema
 * is built. zod v4 reads the flag when an object schema is constructed and,
 * with the JIT on, generates and compiles a parser (`new Function`) on that
 * schema's first parse: tens of milliseconds on a cold start's first
 * invocation, for schemas most functions parse once or a few times per
 * container. The flag is zod's global configuration object
 * (`globalThis.__zod_globalConfig`, which `z.config()` writes); the banner
 * starts every chunk, so whichever chunk Node evaluates first sets it before
 * zod's module runs. test/infra/bundling.test.ts checks that zod still reads
 * that object. Measured in docs/bench/analysis.md, "Cold start and bundles".
 */
export const ZOD_JITLESS_BANNER = 'Object.assign(globalThis.__zod_globalConfig ??= {}, { jitless: true });';

/** The entry file name of every bundle: the handler is `index.<export>`. */
export const BUNDLE_ENTRY_NAME = 'index';
/** Where the shared and lazily imported chunks go, inside the bundle folder. */
export const BUNDLE_CHUNK_NAMES = 'chunks/[name]-[hash]';

/** The stand-in module the plugin replaces (relative to the repository root, without extension). */
export const PRECOMPILED_REGISTRY_STAND_IN = 'functions/shared/precompiled-registry';

/** The stand-in the deployment connectors plugin replaces (relative to the repository root, without extension). */
export const DEPLOYMENT_CONNECTORS_STAND_IN = 'functions/shared/deployment-connectors';

/** The stand-in the validated configuration plugin replaces (relative to the repository root, without extension). */
export const VALIDATED_CONFIG_STAND_IN = 'functions/shared/validated-config';

/** A deployment connector as the bundles carry it (plain JSON: it crosses to the bundling child process). infra/deployment-connectors.ts. */
export type BundledDeploymentConnector = { readonly id: string; readonly http: unknown } | { readonly id: string; readonly module: string };

/** A connector the deployment enables: its registry is precompiled into the bundles that compose the Runtime. */
export interface BundledConnector {
  readonly id: string;
  readonly baseUrl?: string;
}

export interface BundleFunctionOptions {
  /** Entry module, relative to the repository root (or absolute). */
  readonly entry: string;
  /** Output folder: `index.mjs`, `chunks/`, their source maps. */
  readonly outdir: string;
  /**
   * Connectors whose registry is precompiled. Absent: the stand-in stays
   * (run-time ajv), as under `npm start`.
   */
  readonly connectors?: readonly BundledConnector[];
  /** The deployment's own connectors (HTTP documents, code modules), compiled into the bundle. @default none */
  readonly deploymentConnectors?: readonly BundledDeploymentConnector[];
  /**
   * The AIP_RUNTIME_CONFIG the functions will run with, validated here and
   * carried by the bundle ({@link validatedConfigPlugin}); an invalid one
   * fails the build. Absent: the stand-in stays (validated at cold start).
   */
  readonly runtimeConfig?: string;
  /** Write the metafile (esbuild's inputs and outputs) as `meta.json` beside the bundle. @default false */
  readonly writeMetafile?: boolean;
  /**
   * `false`: one `index.mjs`, no chunks (what NodejsFunction built before).
   * Only the bench's before/after comparison sets it. @default true
   */
  readonly splitting?: boolean;
  /**
   * `false`: the builtins imported as ES modules, as NodejsFunction's
   * bundling did ({@link builtinsThroughRequirePlugin}). Only the bench's
   * before/after comparison sets it. @default true
   */
  readonly builtinsThroughRequire?: boolean;
  /**
   * Defer the whole entry module to the first invocation: the bundle's entry
   * becomes a stub exporting these handlers, each importing the real module
   * on its first call. Only the bench sets it, to measure that option
   * (import bytes fall to almost nothing; the first invocation loads
   * everything): the deployed functions do not defer. @default undefined
   */
  readonly deferHandlers?: readonly string[];
  /**
   * A function with provisioned concurrency: the bundle's entry re-exports
   * the entry module and then awaits, at its top level, the Runtime's build
   * ({@link provisionedEntryPlugin}), so an environment Lambda initializes
   * for provisioned concurrency builds it during INIT. @default false
   */
  readonly provisionedInit?: boolean;
}

/**
 * The entry stub of {@link BundleFunctionOptions.deferHandlers}: each handler
 * imports the entry module on its first call (one import per container) and
 * calls the real handler.
 */
export function deferredEntryPlugin(entry: string, handlers: readonly string[]): Plugin {
  const target = isAbsolute(entry) ? entry : join(BUNDLE_ROOT, entry);
  for (const h of handlers) if (!/^[A-Za-z_$][\w$]*$/.test(h)) throw new Error(`not an export name: ${h}`);
  return virtualEntryPlugin('deferred', [
    `let loaded; const load = () => (loaded ??= import(${JSON.stringify(target)}).catch((err) => { loaded = undefined; throw err; }));`,
    ...handlers.map((h) => `export const ${h} = async (event, context) => (await load()).${h}(event, context);`),
  ]);
}

/** An entry module written in `lines` (imports resolved from the project root), that esbuild loads as `aip-<kind>-entry`. */
function virtualEntryPlugin(kind: 'deferred' | 'provisioned', lines: readonly string[]): Plugin {
  const specifier = `aip-${kind}-entry`;
  return {
    name: specifier,
    setup(build) {
      build.onResolve({ filter: new RegExp(`^${specifier}$`) }, () => ({ path: 'entry', namespace: `aip-${kind}` }));
      build.onLoad({ filter: /.*/, namespace: `aip-${kind}` }, () => ({ contents: lines.join('\n'), loader: 'js', resolveDir: BUNDLE_ROOT }));
    },
  };
}

/** Builtin modules by name, with or without `node:` (and the ones reachable only with it). */
const BUILTIN_IMPORT = new RegExp(`^(node:[a-z_/]+|${builtinModules.map((m) => m.replace(/[/]/g, '\\/')).join('|')})$`);

/**
 * The names a dynamic import's namespace leaves out: Node implements them
 * with undici (its fetch), which reading them loads. A module that needs one
 * reads it from the namespace's `default` (the module object).
 */
const LEFT_OUT_OF_DYNAMIC_IMPORTS: Readonly<Record<string, readonly string[]>> = { http: ['WebSocket', 'MessageEvent', 'CloseEvent'] };

/**
 * The source of the stand-in for one builtin: the module object through
 * CommonJS `require`, its default export, and each of its names as an export
 * read from it by a pure call, so that esbuild drops the names a static
 * import does not name and the getters behind them never run. A dynamic
 * import's namespace keeps every export it has, as Node's would, but
 * {@link LEFT_OUT_OF_DYNAMIC_IMPORTS} (the AWS SDK's request handler imports
 * `node:http` so, for `Agent` and `request`).
 */
function builtinStandIn(name: string, dynamic: boolean): string {
  const leftOut = dynamic ? (LEFT_OUT_OF_DYNAMIC_IMPORTS[name] ?? []) : [];
  const keys = Object.keys(createRequire(import.meta.url)(`node:${name}`) as object).filter((k) => k !== 'default' && !leftOut.includes(k));
  return [
    // The `require` the banner defines (ESM_REQUIRE_BANNER), one per process.
    `const m = require(${JSON.stringify(`node:${name}`)});`,
    'const get = (k) => m[k];',
    'export default m;',
    ...keys.map((k, i) => `const e${i} = /* @__PURE__ */ get(${JSON.stringify(k)}); export { e${i} as ${JSON.stringify(k)} };`),
  ].join('\n');
}

/**
 * Every builtin an ES module imports, through CommonJS `require`. An ES
 * import of a builtin makes Node build the module's ES namespace, which reads
 * every export, and the lazy getters among them load the modules behind
 * them: `node:http`'s load undici, Node's fetch (its `WebSocket`,
 * `MessageEvent` and `CloseEvent`: an ES import of `node:http` took about
 * 50 ms here, `require('http')` about 7 ms); `node:util`'s load
 * `worker_threads` and `parseArgs`; `node:process`'s and `node:fs`'s a few
 * more. Through `require` the module object comes as it is, and each name a
 * bundled module imports is read from it once, when that module runs: a
 * stand-in per importer and kind of import, so a dynamic import never makes
 * a static one read more, and no stand-in is shared between chunks.
 * `node:module` stays an ES import (the banner takes `createRequire` from
 * it, ESM_REQUIRE_BANNER, and the stand-ins use the `require` it defines).
 * Measured in docs/bench/analysis.md, "Issue 22: builtins through require".
 */
export function builtinsThroughRequirePlugin(): Plugin {
  return {
    name: 'aip-builtins-through-require',
    setup(build) {
      build.onResolve({ filter: BUILTIN_IMPORT }, (args) =>
        (args.kind === 'import-statement' || args.kind === 'dynamic-import') && !/^(node:)?module$/.test(args.path)
          ? { path: `${args.path.replace(/^node:/, '')}|${args.kind}|${args.importer}`, namespace: 'aip-builtin' }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'aip-builtin' }, (args) => ({
        contents: builtinStandIn(args.path.slice(0, args.path.indexOf('|')), args.path.includes('|dynamic-import|')),
        loader: 'js',
      }));
    },
  };
}

/** The HTTP connector's JSON Schema converter, as compile.ts imports it. */
const JSON_SCHEMA_CONVERTER = /^\.\/json-schema-to-zod\.js$/;
const JSON_SCHEMA_CONVERTER_IMPORTER = /[\\/]lib[\\/]connectors[\\/]http[\\/]compile\.[jt]s$/;

/**
 * The HTTP connector's JSON Schema → zod/mini converter
 * (lib/connectors/http/json-schema-to-zod.ts), bundled apart with a copy of
 * zod's core of its own. esbuild places a whole file in one chunk: zod's core
 * modules (zod/v4/core/schemas.js, regexes.js, …) are in the chunk every
 * function loads at import, and tree-shaking keeps in them what any importer
 * needs. The converter builds schema kinds nothing else at run time builds
 * (intersections, tuples, exclusive unions, lazy references, the string
 * formats), so bundled with the rest it would add about 10 KiB to every
 * function's import, reads included, for a converter that only runs where a
 * connector is built. Apart, its 46 KiB (the converter and the core it uses)
 * land in the HTTP connector's chunk, loaded with the connectors alone
 * (docs/bench/analysis.md, "Issue 22: no classic zod at run time").
 *
 * The import of `./json-schema-to-zod.js` by lib/connectors/http/compile.ts
 * resolves to the converter bundled on its own with the outer build's target
 * and minification, its source map inline so the outer map chains it. The two
 * copies of the core agree on what is global: zod keeps its configuration (the
 * English messages, `jitless`) and its registry on `globalThis`
 * (`__zod_globalConfig`, `__zod_globalRegistry`), and zod/mini's `safeParse`
 * (lib/connectors/http/connector.ts) runs a schema built by the other copy
 * through the schema's own `_zod.run`. test/infra/bundling.test.ts checks both:
 * the chunks, and a bundled HTTP connector validating as the sources do.
 */
export function jsonSchemaConverterApartPlugin(): Plugin {
  return {
    name: 'aip-json-schema-converter-apart',
    setup(build) {
      build.onResolve({ filter: JSON_SCHEMA_CONVERTER }, (args) =>
        JSON_SCHEMA_CONVERTER_IMPORTER.test(args.importer)
          ? { path: relative(BUNDLE_ROOT, join(dirname(args.importer), 'json-schema-to-zod.ts')), namespace: 'aip-json-schema-converter' }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'aip-json-schema-converter' }, async (args) => {
        const { initialOptions } = build;
        const result = await build.esbuild.build({
          entryPoints: [join(BUNDLE_ROOT, args.path)],
          bundle: true,
          write: false,
          format: 'esm',
          platform: 'node',
          ...(initialOptions.target !== undefined ? { target: initialOptions.target } : {}),
          ...(initialOptions.minify !== undefined ? { minify: initialOptions.minify } : {}),
          mainFields: ['module', 'main'],
          sourcemap: initialOptions.sourcemap !== undefined && initialOptions.sourcemap !== false ? 'inline' : false,
          sourcesContent: false,
          absWorkingDir: BUNDLE_ROOT,
          logLevel: 'error',
        });
        return { contents: result.outputFiles[0]?.text ?? '', loader: 'js', resolveDir: dirname(join(BUNDLE_ROOT, args.path)) };
      });
    },
  };
}

/**
 * The X-Ray SDK without the `semver` package. The tracer's bundle (loaded
 * only where tracing is on, on the first invocation) carries aws-xray-sdk-core,
 * which evaluates all of `semver` at import for one `gte` in its AWS SDK v2
 * patcher, and cls-hooked, which does the same for one check of Node's
 * version: about 10 ms of the tracer's 40 ms import here. For those two
 * importers `semver` resolves to ./semver-gte.ts, which exports `gte` alone;
 * any other importer gets the package.
 */
export function xrayWithoutSemverPlugin(): Plugin {
  return {
    name: 'aip-xray-without-semver',
    setup(build) {
      build.onResolve({ filter: /^semver$/ }, (args) =>
        /[\\/]node_modules[\\/](aws-xray-sdk-core|cls-hooked)[\\/]/.test(args.importer) ? { path: join(BUNDLE_ROOT, 'infra/semver-gte.ts') } : undefined,
      );
    },
  };
}

/** The esbuild options of every function (without the precompiled-registry plugin). */
export function esbuildOptions(entry: string, outdir: string): BuildOptions {
  return {
    entryPoints: { [BUNDLE_ENTRY_NAME]: isAbsolute(entry) ? entry : join(BUNDLE_ROOT, entry) },
    bundle: true,
    outdir,
    splitting: true,
    chunkNames: BUNDLE_CHUNK_NAMES,
    outExtension: { '.js': '.mjs' },
    platform: 'node',
    target: 'node22',
    format: 'esm',
    mainFields: ['module', 'main'],
    banner: { js: `${ESM_REQUIRE_BANNER} ${ZOD_JITLESS_BANNER}` },
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    // The AWS SDK is bundled too: see the header.
    external: [],
    metafile: true,
    logLevel: 'error',
    absWorkingDir: BUNDLE_ROOT,
  };
}

/**
 * Resolves a stand-in module (`standInModule`: relative to the repository
 * root, without extension) to the module `generate` returns, in the esbuild
 * namespace `namespace`. `generate` is called once per build, and only when
 * a bundle imports the stand-in. The generated code's imports resolve from
 * the repository root.
 */
function standInPlugin(name: string, namespace: string, standInModule: string, generate: () => string | Promise<string>): Plugin {
  let source: Promise<string> | undefined;
  const standIn = join(BUNDLE_ROOT, standInModule);
  const file = basename(standInModule);
  return {
    name,
    setup(build) {
      build.onResolve({ filter: new RegExp(`${file}(\\.[jt]s)?$`) }, (args) => {
        const target = resolve(args.resolveDir, args.path).replace(/\.[jt]s$/, '');
        return target === standIn ? { path: `${file}.generated.js`, namespace } : undefined;
      });
      build.onLoad({ filter: /.*/, namespace }, async () => {
        // Generated once per build, however many entries resolve the stand-in.
        source ??= Promise.resolve().then(generate);
        return { contents: await source, loader: 'js', resolveDir: BUNDLE_ROOT };
      });
    },
  };
}

/**
 * Resolves the stand-in functions/shared/precompiled-registry.ts to the
 * module `generate` returns. The generated code's `require()`s of ajv's
 * run-time helpers resolve from the repository root.
 */
export function precompiledRegistryPlugin(generate: () => Promise<string>): Plugin {
  return standInPlugin('aip-precompiled-registry', 'aip-precompiled', PRECOMPILED_REGISTRY_STAND_IN, generate);
}

/**
 * Resolves the stand-in functions/shared/deployment-connectors.ts to a
 * generated module: `import * as` of each code connector module (absolute
 * paths) and each HTTP document inline.
 */
export function deploymentConnectorsPlugin(connectors: readonly BundledDeploymentConnector[]): Plugin {
  const modules = connectors.flatMap((c) => ('module' in c ? [c] : []));
  const contents = [
    ...modules.map((c, i) => `import * as m${i} from ${JSON.stringify(c.module)};`),
    'export const DEPLOYMENT_CONNECTORS = [',
    ...connectors.map((c) =>
      'module' in c
        ? `  { id: ${JSON.stringify(c.id)}, module: m${modules.indexOf(c)}, path: ${JSON.stringify(basename(c.module))} },`
        : `  { id: ${JSON.stringify(c.id)}, http: ${JSON.stringify(c.http)} },`,
    ),
    '];',
  ].join('\n');
  return standInPlugin('aip-deployment-connectors', 'aip-deployment-connectors', DEPLOYMENT_CONNECTORS_STAND_IN, () => contents);
}

/** Resolves the stand-in functions/shared/validated-config.ts to the module `generate` returns. */
export function validatedConfigPlugin(generate: () => Promise<string>): Plugin {
  return standInPlugin('aip-validated-config', 'aip-validated-config', VALIDATED_CONFIG_STAND_IN, generate);
}

/** The source of the validated configuration module for this AIP_RUNTIME_CONFIG (build-time import of the functions' schemas). */
export async function generateValidatedConfig(runtimeConfig: string): Promise<string> {
  const { validatedConfigSource } = await import('../functions/shared/validated-config-source.js');
  return validatedConfigSource(runtimeConfig);
}

/** The source of the precompiled registry for these connectors (build-time imports only; code connector modules are imported here). */
export async function generatePrecompiledRegistry(
  connectors: readonly BundledConnector[],
  deploymentConnectors: readonly BundledDeploymentConnector[] = [],
): Promise<string> {
  const [{ connectorRegistrySource, CONNECTOR_FACTORIES, deploymentConnectorFactories }, { precompiledRegistrySource }] = await Promise.all([
    import('../functions/shared/connector-factories.js'),
    import('../lib/runtime/schema-precompile.js'),
  ]);
  const { pathToFileURL } = await import('node:url');
  const own = [];
  for (const c of deploymentConnectors) {
    own.push('module' in c ? { id: c.id, module: (await import(pathToFileURL(c.module).href)) as Record<string, unknown>, path: c.module } : c);
  }
  const factories = { ...CONNECTOR_FACTORIES, ...deploymentConnectorFactories(own) };
  const sources = [];
  for (const c of connectors) sources.push(await connectorRegistrySource(c.id, { factories, ...(c.baseUrl !== undefined ? { baseUrl: c.baseUrl } : {}) }));
  return precompiledRegistrySource(sources);
}

/**
 * The entry of {@link BundleFunctionOptions.provisionedInit}: the entry
 * module's exports, then a top-level await of
 * functions/shared/production-runtime.ts `composeAtProvisionedInit`, which
 * builds the Runtime only when AWS_LAMBDA_INITIALIZATION_TYPE says Lambda is
 * initializing the environment for provisioned concurrency (an on-demand
 * environment of the same version builds it on its first request).
 *
 * Only these bundles carry the await. A module with a top-level await that
 * also holds an `import()` keeps Rollup from joining the chunks that import
 * loads into the chunk already in memory (./merge-chunks.ts), so the bundle
 * reads more files at import (8 instead of 1 for the submit's function):
 * paid in INIT, before a provisioned environment takes a request. The
 * on-demand functions' bundles are left as they were.
 */
export function provisionedEntryPlugin(entry: string): Plugin {
  const target = isAbsolute(entry) ? entry : join(BUNDLE_ROOT, entry);
  const init = join(BUNDLE_ROOT, 'functions/shared/production-runtime.ts');
  return virtualEntryPlugin('provisioned', [
    `export * from ${JSON.stringify(target)};`,
    `import { composeAtProvisionedInit } from ${JSON.stringify(init)};`,
    'await composeAtProvisionedInit(process.env);',
  ]);
}

/** Bundles one function into `outdir`. */
export async function bundleFunction(options: BundleFunctionOptions): Promise<{ readonly metafile: Metafile }> {
  const { build } = await import('esbuild');
  mkdirSync(options.outdir, { recursive: true });
  const connectors = options.connectors;
  const own = options.deploymentConnectors ?? [];
  const split = options.splitting !== false;
  // Split output is written apart and regrouped into outdir (./merge-chunks.ts); one file goes there directly.
  const staging = split ? mkdtempSync(join(tmpdir(), 'aip-esbuild-')) : options.outdir;
  try {
    const base = esbuildOptions(options.entry, staging);
    const defer = options.deferHandlers;
    const provisioned = options.provisionedInit === true;
    if (defer !== undefined && provisioned) throw new Error('deferHandlers and provisionedInit exclude each other');
    const result = await build({
      ...base,
      ...(defer !== undefined ? { entryPoints: { [BUNDLE_ENTRY_NAME]: 'aip-deferred-entry' } } : {}),
      ...(provisioned ? { entryPoints: { [BUNDLE_ENTRY_NAME]: 'aip-provisioned-entry' } } : {}),
      ...(split ? {} : { splitting: false }),
      plugins: [
        ...(options.builtinsThroughRequire !== false ? [builtinsThroughRequirePlugin()] : []),
        jsonSchemaConverterApartPlugin(),
        xrayWithoutSemverPlugin(),
        ...(connectors !== undefined ? [precompiledRegistryPlugin(() => generatePrecompiledRegistry(connectors, own))] : []),
        ...(own.length > 0 ? [deploymentConnectorsPlugin(own)] : []),
        ...(options.runtimeConfig !== undefined ? [validatedConfigPlugin(() => generateValidatedConfig(options.runtimeConfig as string))] : []),
        ...(defer !== undefined ? [deferredEntryPlugin(options.entry, defer)] : []),
        ...(provisioned ? [provisionedEntryPlugin(options.entry)] : []),
      ],
    });
    const metafile = split
      ? await mergeChunks({ from: staging, to: options.outdir, metafile: result.metafile as Metafile, root: BUNDLE_ROOT, entryName: BUNDLE_ENTRY_NAME })
      : (result.metafile as Metafile);
    if (options.writeMetafile === true) {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(join(options.outdir, 'meta.json'), JSON.stringify(metafile));
    }
    return { metafile };
  } finally {
    if (split) rmSync(staging, { recursive: true, force: true });
  }
}

/** The output file of the entry (`index.mjs`) and every chunk it imports statically, transitively: what a cold start loads before the handler runs. */
export function staticallyLoaded(metafile: Metafile, entryOutput: string): string[] {
  const seen = new Set<string>();
  const stack = [entryOutput];
  while (stack.length > 0) {
    const file = stack.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const imported of metafile.outputs[file]?.imports ?? []) {
      if (imported.kind === 'import-statement' && imported.external !== true) stack.push(imported.path);
    }
  }
  return [...seen];
}

/** The output key of the entry chunk in a metafile. */
export function entryOutput(metafile: Metafile): string {
  const key = Object.keys(metafile.outputs).find((k) => new RegExp(`(^|/)${BUNDLE_ENTRY_NAME}\\.mjs$`).test(k));
  if (key === undefined) throw new Error('the bundle has no index.mjs');
  return key;
}

/** The package an esbuild input belongs to: `zod`, `@aws-sdk/core`, or the project folder (`lib/runtime`). */
export function inputPackage(input: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (m) return m[1] as string;
  if (input.startsWith('aip-precompiled:')) return '(precompiled registry)';
  const parts = input.split('/');
  return parts.length > 2 ? parts.slice(0, 2).join('/') : input;
}

/**
 * The CDK local bundling of a function: runs infra/bundle-cli.ts (this
 * module's {@link bundleFunction}) in a child process with tsx, then the
 * definition's after-bundling commands. Synchronous, as CDK requires.
 */
export function localBundlingCommand(
  options: {
    readonly entry: string;
    readonly connectors: readonly BundledConnector[];
    readonly deploymentConnectors?: readonly BundledDeploymentConnector[];
    readonly runtimeConfig?: string;
    readonly provisionedInit?: boolean;
  },
  outputDir: string,
): { file: string; args: string[] } {
  const own = options.deploymentConnectors ?? [];
  return {
    file: process.execPath,
    args: [
      '--import',
      'tsx',
      'infra/bundle-cli.ts',
      '--entry',
      options.entry,
      '--outdir',
      outputDir,
      '--connectors',
      JSON.stringify(options.connectors),
      ...(own.length > 0 ? ['--deployment-connectors', JSON.stringify(own)] : []),
      ...(options.runtimeConfig !== undefined ? ['--runtime-config', options.runtimeConfig] : []),
      ...(options.provisionedInit === true ? ['--provisioned-init'] : []),
    ],
  };
}

export function runLocalBundling(
  options: {
    readonly entry: string;
    readonly connectors: readonly BundledConnector[];
    readonly deploymentConnectors?: readonly BundledDeploymentConnector[];
    readonly runtimeConfig?: string;
    readonly provisionedInit?: boolean;
    readonly afterBundling?: (inputDir: string, outputDir: string) => string[];
  },
  outputDir: string,
): boolean {
  const { file, args } = localBundlingCommand(options, outputDir);
  execFileSync(file, args, { cwd: BUNDLE_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  for (const command of options.afterBundling?.(BUNDLE_ROOT, outputDir) ?? []) execSync(command, { cwd: BUNDLE_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  return true;
}
