/**
 * The bundling of the functions (infra/bundling.ts): ESM with code splitting
 * from the one set of esbuild options, the capability registry precompiled
 * into the bundles that compose the Runtime (ajv's compiler only in a lazily
 * imported chunk), nothing of the Runtime in the authorizer, none of the
 * MCP SDK's server, no semver package under the X-Ray SDK, and the
 * tracing switch of the configuration. Structure only: sizes and timings are
 * `npm run bench` figures.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { EOL, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inspect } from 'node:util';
import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { defineAipApp } from '../../infra/aip-app.js';
import { parseInfraConfig } from '../../infra/config.js';
import type { FunctionDefinition } from '../../infra/functions.js';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLE_ROOT, bundleFunction, entryOutput, esbuildOptions, localBundlingCommand, staticallyLoaded, ZOD_JITLESS_BANNER } from '../../infra/bundling.js';
import { gte } from '../../infra/semver-gte.js';
import { toDeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import { validateRuntimeConfig } from '../../functions/shared/validated-config-source.js';
import { BASE_CONFIG, buildAip, newApp } from './support.js';
import { CRM_DOCUMENT } from '../fixtures/team-crm-connector.js';

const dirs: string[] = [];
const outdir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'aip-bundle-test-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function inputsOf(metafile: Awaited<ReturnType<typeof bundleFunction>>['metafile'], outputs: readonly string[]): string[] {
  return outputs.flatMap((o) => Object.keys(metafile.outputs[o]?.inputs ?? {}));
}

describe('bundling', () => {
  it('splits every function into an ESM entry chunk and chunks, minified, with source maps and the createRequire banner', () => {
    const options = esbuildOptions('functions/http/meta.ts', '/out');
    expect(options).toMatchObject({
      format: 'esm',
      splitting: true,
      bundle: true,
      minify: true,
      sourcemap: true,
      platform: 'node',
      target: 'node22',
      external: [],
    });
    expect(options.outExtension).toEqual({ '.js': '.mjs' });
    expect(options.banner?.js).toContain('createRequire');
    expect(options.banner?.js).toContain(ZOD_JITLESS_BANNER);
  });

  it("the jitless banner writes zod's own global configuration (the object z.config() returns)", async () => {
    const { config } = await import('zod/v4/core');
    const before = config().jitless;
    try {
      new Function(ZOD_JITLESS_BANNER)();
      expect((globalThis as { __zod_globalConfig?: unknown }).__zod_globalConfig).toBe(config());
      expect(config().jitless).toBe(true);
    } finally {
      config({ jitless: before });
    }
  });

  it('a route bundle carries the precompiled registry; ajv compiles only in a lazily imported chunk, the Runtime is composed in one', async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/http/meta.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const entry = entryOutput(metafile);
    const loaded = inputsOf(metafile, staticallyLoaded(metafile, entry));
    const all = inputsOf(metafile, Object.keys(metafile.outputs));
    expect(all).toContain('aip-precompiled:precompiled-registry.generated.js');
    expect(all.some((i) => i.startsWith('functions/shared/precompiled-registry'))).toBe(false);
    for (const lazy of [
      'node_modules/ajv/dist/core.js',
      'lib/runtime/runtime.ts',
      'functions/shared/compose-runtime.ts',
      'node_modules/aws-xray-sdk-core/dist/lib/index.js',
    ]) {
      expect(loaded, lazy).not.toContain(lazy);
    }
    expect(all).toContain('functions/shared/compose-runtime.ts');
  });

  it('a read route composes the Runtime, in one file, without the operations beyond the reads, the connectors and the Secrets Manager client', async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/http/transactions.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const composition = Object.keys(metafile.outputs).find((k) => /(^|\/)compose-runtime-[^/]*\.mjs$/.test(k)) as string;
    const firstInvocation = inputsOf(metafile, staticallyLoaded(metafile, composition));
    expect(firstInvocation).toContain('lib/runtime/reads.ts');
    for (const later of [
      'lib/runtime/operations.ts',
      'lib/runtime/pipeline/admit.ts',
      'lib/runtime/attempts/worker.ts',
      'functions/shared/compose-connectors.ts',
      'lib/connectors/reference/payments.ts',
      'aip-precompiled:precompiled-registry.generated.js',
      'node_modules/@aws-sdk/client-secrets-manager/dist-es/SecretsManagerClient.js',
      // The settings' optional parsers (functions/shared/settings.ts): only for a configuration the build did not
      // validate, AIP_LOCAL_CREDENTIALS or AIP_REMOTE_CONNECTORS.
      'functions/shared/settings.ts',
      'lib/config/deployment.ts',
      'lib/runtime/remote/config.ts',
      'packages/connector-sdk/src/credentials/env-provider.ts',
    ]) {
      expect(firstInvocation, later).not.toContain(later);
    }
    const all = inputsOf(metafile, Object.keys(metafile.outputs));
    expect(all).toContain('functions/shared/settings.ts');
    expect(all).toContain('lib/runtime/operations.ts');
    expect(all).toContain('functions/shared/compose-connectors.ts');
    // esbuild's chunks regrouped (infra/merge-chunks.ts): the entry loads no other file at import, and the
    // composition one file of its own (esbuild's split alone: 18 files at import and 22 more on the actions
    // function's first read).
    expect(staticallyLoaded(metafile, entryOutput(metafile))).toHaveLength(1);
    expect(staticallyLoaded(metafile, composition).filter((f) => f !== entryOutput(metafile))).toEqual([composition]);
  });

  it("an execute's or a commit's admission loads neither the compensate and reconcile modes nor the settlement's code", async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/http/actions.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const chunkOf = (input: string) => Object.keys(metafile.outputs).find((k) => Object.hasOwn(metafile.outputs[k]?.inputs ?? {}, input)) as string;
    const admission = inputsOf(metafile, staticallyLoaded(metafile, chunkOf('lib/runtime/pipeline/admit.ts')));
    for (const mode of ['lib/runtime/modes/execute.ts', 'lib/runtime/modes/commit.ts']) expect(admission, mode).toContain(mode);
    const all = inputsOf(metafile, Object.keys(metafile.outputs));
    for (const later of ['lib/runtime/modes/compensate.ts', 'lib/runtime/modes/reconcile.ts', 'lib/runtime/attempts/settlement.ts']) {
      expect(admission, later).not.toContain(later);
      expect(all, later).toContain(later);
    }
  });

  it('the connector half composes the registry without the connector code or the Secrets Manager client, each in a chunk of its own', async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/http/actions.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const chunkOf = (input: string) => Object.keys(metafile.outputs).find((k) => Object.hasOwn(metafile.outputs[k]?.inputs ?? {}, input)) as string;
    const connectorHalf = inputsOf(metafile, staticallyLoaded(metafile, chunkOf('functions/shared/compose-connectors.ts')));
    expect(connectorHalf).toContain('aip-precompiled:precompiled-registry.generated.js');
    expect(connectorHalf).toContain('lib/runtime/registry-core.ts');
    for (const later of [
      'functions/shared/connector-factories.ts',
      'lib/connectors/http/connector.ts',
      'lib/connectors/reference/payments.ts',
      'node_modules/@aws-sdk/client-secrets-manager/dist-es/SecretsManagerClient.js',
      'node_modules/@aws-lambda-powertools/parameters/lib/esm/secrets/SecretsProvider.js',
    ]) {
      expect(connectorHalf, later).not.toContain(later);
    }
    const all = inputsOf(metafile, Object.keys(metafile.outputs));
    expect(all).toContain('lib/connectors/reference/payments.ts');
  });

  it("the JSON Schema converter comes with a core of its own, in the HTTP connector's chunk: what a function loads before it composes connectors carries zod/mini's core alone", async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/http/actions.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const chunkOf = (input: string) => Object.keys(metafile.outputs).find((k) => Object.hasOwn(metafile.outputs[k]?.inputs ?? {}, input)) as string;
    const converter = 'aip-json-schema-converter:lib/connectors/http/json-schema-to-zod.ts';
    const before = [
      ...staticallyLoaded(metafile, entryOutput(metafile)),
      ...staticallyLoaded(metafile, chunkOf('functions/shared/compose-runtime.ts')),
      ...staticallyLoaded(metafile, chunkOf('functions/shared/compose-connectors.ts')),
    ];
    expect(inputsOf(metafile, before)).toContain('node_modules/zod/v4/core/schemas.js');
    expect(before).not.toContain(chunkOf(converter));
    // The schema kinds only the converter builds are not in the shared core (esbuild keeps a file in one chunk).
    const code = [...new Set(before)].map((k) => readFileSync(join(BUNDLE_ROOT, k), 'utf8')).join('\n');
    for (const kind of ['$ZodIntersection', '$ZodTuple', '$ZodXor', '$ZodLazy']) expect(code, kind).not.toContain(`"${kind}"`);
    expect(staticallyLoaded(metafile, chunkOf('lib/connectors/http/compile.ts'))).toContain(chunkOf(converter));
  });

  it('no runtime function bundles classic zod (the HTTP connector converts JSON Schemas with zod/mini, the MCP endpoint checks messages with its own protocol layer)', async () => {
    const classic = (i: string) => /^node_modules\/zod\/(index\.js|v3\/|v4\/index\.js|v4\/classic\/)/.test(i);
    // Also in the code: a module built apart (a plugin's own build) is one input, whatever it bundles. "ZodString" names classic's string schema (zod/mini's is "ZodMiniString").
    const classicCode = (metafile: Awaited<ReturnType<typeof bundleFunction>>['metafile']) =>
      Object.keys(metafile.outputs).some((k) => k.endsWith('.mjs') && readFileSync(join(BUNDLE_ROOT, k), 'utf8').includes('"ZodString"'));
    for (const entry of [
      'functions/http/actions.ts',
      'functions/http/mcp.ts',
      'functions/worker/invoke.ts',
      'functions/worker/reconcile.ts',
      'functions/scheduled/sweeper.ts',
    ]) {
      const { metafile } = await bundleFunction({ entry, outdir: outdir(), connectors: [{ id: 'payments' }] });
      const all = inputsOf(metafile, Object.keys(metafile.outputs));
      expect(all, entry).toContain('aip-json-schema-converter:lib/connectors/http/json-schema-to-zod.ts');
      expect(all.filter(classic), entry).toEqual([]);
      expect(classicCode(metafile), entry).toBe(false);
    }
  });

  it('a bundled HTTP connector validates with the two copies of the core as the sources do: results, issue paths and English messages', async () => {
    const dir = outdir();
    await bundleFunction({ entry: 'test/infra/fixtures/http-connector-compile-entry.ts', outdir: dir });
    const bundled = (await import(pathToFileURL(join(dir, 'index.mjs')).href)) as typeof import('./fixtures/http-connector-compile-entry.js');
    const sources = await import('./fixtures/http-connector-compile-entry.js');
    const document = {
      ...CRM_DOCUMENT,
      capabilities: [
        {
          ...CRM_DOCUMENT.capabilities[0],
          input_schema: {
            type: 'object',
            required: ['email', 'limit'],
            additionalProperties: false,
            properties: {
              email: { type: 'string', minLength: 3 },
              limit: { type: 'integer', minimum: 1, maximum: 50 },
              tags: { type: 'array', items: { enum: ['a', 'b'] } },
            },
          },
          output_schema: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
        },
      ],
    };
    const inputs = [
      { email: 'ada@example.com', limit: 3 },
      { email: 'ada@example.com', limit: 3, tags: ['a', 'b'] },
      { email: 'a', limit: 0 },
      { email: 'ada@example.com', limit: 2.5, tags: ['c'] },
      { email: 7, extra: true },
      'not an object',
    ];
    const run = (m: typeof sources) => {
      const cap = m.compileHttpConnector(document, { credentials_available: true }).capabilities.get('crm.contact_lookup');
      if (cap === undefined || cap.output === undefined) throw new Error('capability not compiled');
      const output = cap.output;
      return [...inputs.map((i) => m.safeParse(cap.input, i)), m.safeParse(output, { id: 'c-1' }), m.safeParse(output, { id: 1 })].map((r) =>
        r.success ? { ok: true, data: r.data } : { ok: false, issues: r.error.issues.map((i) => ({ code: i.code, path: i.path, message: i.message })) },
      );
    };
    const expected = run(sources);
    expect(run(bundled)).toEqual(expected);
    expect(expected.filter((r) => !r.ok).length).toBe(5);
    // zod's English messages (installed by the SDK through zod's global configuration) reach the other copy's checks.
    expect(JSON.stringify(run(bundled))).not.toContain('"Invalid input"');
  });

  it('carries the configuration the build validated for the AIP_RUNTIME_CONFIG it is given; without one, the stand-in (validated at cold start)', async () => {
    const runtimeConfig = JSON.stringify(toDeploymentRuntimeConfig(parseInfraConfig(BASE_CONFIG)));
    const load = async (dir: string) =>
      ((await import(pathToFileURL(join(dir, 'index.mjs')).href)) as typeof import('./fixtures/validated-config-entry.js')).VALIDATED_CONFIG;
    const built = outdir();
    await bundleFunction({ entry: 'test/infra/fixtures/validated-config-entry.ts', outdir: built, runtimeConfig });
    expect(await load(built)).toStrictEqual(validateRuntimeConfig(runtimeConfig));
    const plain = outdir();
    await bundleFunction({ entry: 'test/infra/fixtures/validated-config-entry.ts', outdir: plain });
    expect(await load(plain)).toBeUndefined();
    // An invalid configuration fails the build, naming the field, as it would fail every cold start.
    const invalid = JSON.stringify({ ...JSON.parse(runtimeConfig), approvalPolicies: [{ id: 'p' }] });
    await expect(bundleFunction({ entry: 'test/infra/fixtures/validated-config-entry.ts', outdir: outdir(), runtimeConfig: invalid })).rejects.toThrow(
      /approvalPolicies\[0\]\.connector/,
    );
  });

  it("makes one require per process, whichever of a bundle's chunks Node evaluates first (a require of its own per merged chunk cost every cold start)", async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/http/actions.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const files = Object.keys(metafile.outputs).filter((o) => o.endsWith('.mjs'));
    const banners = files.reduce((n, f) => n + (readFileSync(join(BUNDLE_ROOT, f), 'utf8').match(/createRequire\(import\.meta\.url\)/g)?.length ?? 0), 0);
    // Rollup keeps each merged esbuild chunk's banner: many per file.
    expect(banners).toBeGreaterThan(files.length);
    const urls = files.map((f) => pathToFileURL(join(BUNDLE_ROOT, f)).href);
    // A fresh process that counts createRequire's calls while it imports every file of the bundle.
    const script = [
      "import { createRequire, syncBuiltinESMExports } from 'node:module';",
      'const m = createRequire(import.meta.url)("node:module"); const real = m.createRequire; let calls = 0;',
      'm.createRequire = (...a) => { calls++; return real(...a); }; syncBuiltinESMExports();',
      `for (const u of ${JSON.stringify(urls)}) await import(u);`,
      "console.log(JSON.stringify({ calls, path: globalThis.__aipRequire('node:path') === real(import.meta.url)('node:path') }));",
    ].join('\n');
    expect(JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }))).toEqual({ calls: 1, path: true });
  });

  it('a function with provisioned concurrency builds its Runtime during INIT when Lambda initializes it for provisioned concurrency, and only then', async () => {
    const runtimeConfig = JSON.stringify(toDeploymentRuntimeConfig(parseInfraConfig(BASE_CONFIG)));
    const bundle = async (provisionedInit: boolean) => {
      const dir = outdir();
      const { metafile } = await bundleFunction({
        entry: 'functions/http/actions.ts',
        outdir: dir,
        connectors: [{ id: 'payments' }],
        runtimeConfig,
        provisionedInit,
      });
      return { file: join(BUNDLE_ROOT, entryOutput(metafile)), metafile };
    };
    const [provisioned, plain] = await Promise.all([bundle(true), bundle(false)]);
    // The modules Node loads while it imports the bundle (what Lambda's INIT runs), in a fresh process.
    const loadedAtImport = (file: string, env: Record<string, string>) => {
      const script = [
        "import { registerHooks } from 'node:module';",
        'const loaded = []; registerHooks({ load(url, ctx, next) { loaded.push(url); return next(url, ctx); } });',
        `const m = await import(${JSON.stringify(pathToFileURL(file).href)});`,
        "console.log(JSON.stringify({ handlers: typeof m.submitActionHandler === 'function' && typeof m.getActionHandler === 'function', loaded }));",
      ].join('\n');
      const functionEnv = {
        PATH: process.env.PATH ?? '',
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
        AIP_ENV: 'test',
        AIP_TABLE_NAME: 'aip-test',
        AIP_INVOKE_QUEUE_URL: 'http://127.0.0.1:9/000000000000/aip-test-invoke',
        AIP_RECONCILE_QUEUE_URL: 'http://127.0.0.1:9/000000000000/aip-test-reconcile',
        AIP_RECONCILE_QUEUE_ARN: 'arn:aws:sqs:us-east-1:000000000000:aip-test-reconcile',
        AIP_SCHEDULE_GROUP: 'aip-test',
        AIP_SCHEDULER_ROLE_ARN: 'arn:aws:iam::000000000000:role/aip-test',
        AIP_RUNTIME_CONFIG: runtimeConfig,
        POWERTOOLS_TRACE_ENABLED: 'false',
      };
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...functionEnv, ...env } });
      return JSON.parse(out) as { handlers: boolean; loaded: string[] };
    };
    const composes = (loaded: readonly string[]) => loaded.some((url) => /\/compose-runtime-[^/]*\.mjs$/.test(url));
    const atProvisionedInit = loadedAtImport(provisioned.file, { AWS_LAMBDA_INITIALIZATION_TYPE: 'provisioned-concurrency' });
    expect(atProvisionedInit.handlers).toBe(true);
    expect(composes(atProvisionedInit.loaded)).toBe(true);
    // The same bundle started on demand (beyond the provisioned count), and a function without provisioned
    // concurrency even where Lambda says so: the Runtime waits for the first request.
    const onDemand = loadedAtImport(provisioned.file, { AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand' });
    expect(onDemand.handlers).toBe(true);
    expect(composes(onDemand.loaded)).toBe(false);
    expect(composes(loadedAtImport(plain.file, { AWS_LAMBDA_INITIALIZATION_TYPE: 'provisioned-concurrency' }).loaded)).toBe(false);
    // A build that fails (no table configured) does not fail INIT: the handlers are there, the first request builds again.
    const failing = loadedAtImport(provisioned.file, { AWS_LAMBDA_INITIALIZATION_TYPE: 'provisioned-concurrency', AIP_TABLE_NAME: '' });
    expect(failing.handlers).toBe(true);
    // Only the provisioned bundle carries the top-level await; the on-demand one stays one file at import.
    expect(staticallyLoaded(plain.metafile, entryOutput(plain.metafile))).toHaveLength(1);
  });

  it("the stack's bundling command carries provisionedInit to the bundler: only a provisioned function's bundle holds the INIT build", () => {
    const bundleWith = (provisionedInit: boolean) => {
      const dir = outdir();
      const { file, args } = localBundlingCommand({ entry: 'functions/http/meta.ts', connectors: [], provisionedInit }, dir);
      expect(args.includes('--provisioned-init')).toBe(provisionedInit);
      execFileSync(file, args, { cwd: BUNDLE_ROOT, stdio: 'ignore' });
      // The entry's source map names its sources: the provisioned entry is a module of its own (bundling.ts `provisionedEntryPlugin`).
      return (JSON.parse(readFileSync(join(dir, 'index.mjs.map'), 'utf8')) as { sources: string[] }).sources.some((f) => f.includes('aip-provisioned'));
    };
    expect(bundleWith(true)).toBe(true);
    expect(bundleWith(false)).toBe(false);
  });

  it('reaches the builtins through require: no ES import of one but node:module (whose namespaces would run their lazy getters), the names read as the modules have them', async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/http/actions.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const builtin = new RegExp(`(?:from|import)\\s*\\(?\\s*["']((?:node:)?(?:${builtinModules.join('|')}|test|sqlite|sea))["']`, 'g');
    const imported = new Set<string>();
    for (const k of Object.keys(metafile.outputs).filter((o) => o.endsWith('.mjs'))) {
      for (const m of readFileSync(join(BUNDLE_ROOT, k), 'utf8').matchAll(builtin)) imported.add(m[1] as string);
    }
    expect([...imported]).toEqual(['node:module']);

    const dir = outdir();
    const fixture = await bundleFunction({ entry: 'test/infra/fixtures/builtin-imports.ts', outdir: dir });
    const url = pathToFileURL(join(BUNDLE_ROOT, entryOutput(fixture.metafile))).href;
    // A fresh process: what the imports make Node load is the point.
    const run = (call: string) =>
      JSON.parse(
        execFileSync(
          process.execPath,
          ['--input-type=module', '-e', `const m = await import(${JSON.stringify(url)}); console.log(JSON.stringify(await m.${call}()));`],
          { encoding: 'utf8' },
        ),
      );
    expect(run('staticImports')).toEqual({
      hash: createHash('sha256').update('aip').digest('hex'),
      readFileSync: 'function',
      notFound: 'Not Found',
      eol: EOL,
      join: join('a', 'b'),
      inspect: inspect({ a: [1] }),
      isPromise: true,
      loaded: [],
    });
    expect(run('dynamicImport')).toEqual({
      format: 'a-1',
      same: true,
      agent: 'function',
      webSocket: false,
      undiciBefore: false,
      fromDefault: 'function',
      undiciAfter: true,
    });
    // A module that imports a name behind a lazy getter gets it.
    const ws = await bundleFunction({ entry: 'test/infra/fixtures/http-websocket.ts', outdir: outdir() });
    const wsUrl = pathToFileURL(join(BUNDLE_ROOT, entryOutput(ws.metafile))).href;
    expect(
      execFileSync(process.execPath, ['--input-type=module', '-e', `console.log(await (await import(${JSON.stringify(wsUrl)})).handler())`], {
        encoding: 'utf8',
      }).trim(),
    ).toBe('function');
  });

  it("the MCP function carries none of the MCP SDK's run-time code but two small helpers (its server and protocol schemas stay out)", async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/http/mcp.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const all = inputsOf(metafile, Object.keys(metafile.outputs));
    expect(all).toContain('functions/mcp/protocol.ts');
    const helpers = [
      'node_modules/@modelcontextprotocol/sdk/dist/esm/server/requestBody.js',
      'node_modules/@modelcontextprotocol/sdk/dist/esm/shared/mediaType.js',
    ];
    expect(all.filter((i) => i.includes('node_modules/@modelcontextprotocol/sdk/') && !helpers.includes(i))).toEqual([]);
    expect(all).toContain(helpers[1]);
  });

  it("the tracer's X-Ray SDK and cls-hooked get semver's gte alone, not the semver package", async () => {
    const { metafile } = await bundleFunction({ entry: 'bench/fixtures/bare-powertools-handler.ts', outdir: outdir() });
    const all = inputsOf(metafile, Object.keys(metafile.outputs));
    expect(all.some((i) => i.includes('node_modules/aws-xray-sdk-core/'))).toBe(true);
    expect(all).toContain('infra/semver-gte.ts');
    expect(all.filter((i) => i.includes('node_modules/semver/'))).toEqual([]);
  });

  it("semver-gte orders versions as semver's gte does", () => {
    for (const [a, b, want] of [
      ['22.23.3', '8.0.0', true],
      ['v8.0.0', '8.0.0', true],
      ['7.10.1', '8.0.0', false],
      ['2.1040.0', '2.3.0', true],
      ['2.2.99', '2.3.0', false],
      ['1.0.0-alpha', '1.0.0', false],
      ['1.0.0', '1.0.0-rc.1', true],
      ['1.0.0-alpha.1', '1.0.0-alpha', true],
      ['1.0.0-alpha.beta', '1.0.0-alpha.1', true],
      ['1.0.0-beta.2', '1.0.0-beta.11', false],
      ['1.0.0+build.5', '1.0.0', true],
    ] as const)
      expect([a, b, gte(a, b)]).toEqual([a, b, want]);
    expect(() => gte('8', '8.0.0')).toThrow(TypeError);
    expect(() => gte(undefined, '8.0.0')).toThrow(TypeError);
  });

  it('the authorizer loads nothing of the Runtime and no AWS SDK', async () => {
    const { metafile } = await bundleFunction({ entry: 'functions/authorizer.ts', outdir: outdir(), connectors: [{ id: 'payments' }] });
    const all = inputsOf(metafile, Object.keys(metafile.outputs));
    expect(all.filter((i) => i.startsWith('lib/runtime/') || i.includes('node_modules/@aws-sdk/') || i.startsWith('aip-precompiled:'))).toEqual([]);
  });
});

describe('tracing switch', () => {
  const fnProps = (tracing: boolean) => {
    const template = Template.fromStack(buildAip({ ...BASE_CONFIG, tracing }).aip.stateless);
    return Object.values(template.findResources('AWS::Lambda::Function')).map((r) => (r as { Properties: Record<string, unknown> }).Properties);
  };

  it('on (the default): X-Ray active and the Powertools tracer enabled', () => {
    for (const p of fnProps(true)) {
      expect(p.TracingConfig).toEqual({ Mode: 'Active' });
      expect((p.Environment as { Variables: Record<string, unknown> }).Variables.POWERTOOLS_TRACE_ENABLED).toBe('true');
    }
  });

  it('off: no X-Ray on the REST stage either, and no sampling rule', () => {
    const template = Template.fromStack(buildAip({ ...BASE_CONFIG, tracing: false }).aip.stateless);
    template.hasResourceProperties('AWS::ApiGateway::Stage', { TracingEnabled: false });
    template.resourceCountIs('AWS::XRay::SamplingRule', 0);
  });

  it('off: no X-Ray, and the functions never import the tracer', () => {
    const props = fnProps(false);
    expect(props.length).toBeGreaterThan(0);
    for (const p of props) {
      expect(p.TracingConfig).toBeUndefined();
      expect((p.Environment as { Variables: Record<string, unknown> }).Variables.POWERTOOLS_TRACE_ENABLED).toBe('false');
    }
  });
});

describe('source maps switch', () => {
  const variablesOf = (sourceMaps: boolean | undefined) => {
    const template = Template.fromStack(buildAip({ ...BASE_CONFIG, ...(sourceMaps === undefined ? {} : { sourceMaps }) }).aip.stateless);
    return Object.values(template.findResources('AWS::Lambda::Function')).map(
      (r) => (r as { Properties: { Environment: { Variables: Record<string, unknown> } } }).Properties.Environment.Variables,
    );
  };

  it('off (the default): Node does not read the source maps', () => {
    const all = variablesOf(undefined);
    expect(all.length).toBeGreaterThan(0);
    for (const v of all) expect(v.NODE_OPTIONS).toBeUndefined();
  });

  it('on: every function runs with --enable-source-maps', () => {
    const all = variablesOf(true);
    expect(all.length).toBeGreaterThan(0);
    for (const v of all) expect(v.NODE_OPTIONS).toBe('--enable-source-maps');
  });
});

describe('synth with bundling on', () => {
  it("bundles each entry into its own asset (index.mjs, chunks), never one function's bundle for another", () => {
    const fixture = (id: string, entry: string): FunctionDefinition => ({
      id,
      entry,
      description: id,
      timeout: Duration.seconds(30),
      consumes: { queue: 'invoke', batchSize: 5 },
    });
    const app = newApp({ 'aws:cdk:bundling-stacks': ['**'] });
    const aip = defineAipApp(app, {
      config: parseInfraConfig(BASE_CONFIG),
      functions: [fixture('One', 'test/infra/fixtures/queue-consumer.ts'), fixture('Two', 'functions/worker/reconcile.ts')],
    });
    const functions = Object.values(Template.fromStack(aip.stateless).findResources('AWS::Lambda::Function')).map(
      (r) => (r as { Properties: { Code: { S3Key: string }; Handler: string } }).Properties,
    );
    expect(functions.map((f) => f.Handler)).toEqual(['index.handler', 'index.handler']);
    expect(new Set(functions.map((f) => f.Code.S3Key)).size).toBe(2);
    // Really bundled (a skipped bundling would also give two keys): each staged asset is its own bundle.
    const staged = functions.map((f) => join(app.outdir, `asset.${f.Code.S3Key.replace(/\.zip$/, '')}`));
    for (const dir of staged) expect(existsSync(join(dir, 'index.mjs')), dir).toBe(true);
    expect(readFileSync(join(staged[0] as string, 'index.mjs'), 'utf8')).not.toEqual(readFileSync(join(staged[1] as string, 'index.mjs'), 'utf8'));
    // The reconcile consumer's bundle carries the configuration the build validated (its approval policy's ID is in
    // no source file); the fixture, which reads no configuration, does not.
    const carries = (dir: string) =>
      [
        join(dir, 'index.mjs'),
        ...(existsSync(join(dir, 'chunks')) ? readdirSync(join(dir, 'chunks')) : []).filter((f) => f.endsWith('.mjs')).map((f) => join(dir, 'chunks', f)),
      ].some((f) => readFileSync(f, 'utf8').includes('payments-commit'));
    expect(carries(staged[1] as string)).toBe(true);
    expect(carries(staged[0] as string)).toBe(false);
  });
});
