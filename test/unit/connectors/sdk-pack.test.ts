/**
 * What a connector author does, on the packed package (issue 23): `npm pack`
 * packages/connector-sdk (its prepack builds dist/), install the tarball in
 * an empty folder outside the repository, write the authoring guide's first
 * connector there (the code blocks of docs/connector-authoring.md, "Install
 * and first run"), run `aip-conformance` on plain Node to a green result,
 * break one rule and see it fail by name, and typecheck the example under
 * strict, exactOptionalPropertyTypes and verbatimModuleSyntax with the
 * package's declarations (node16 and bundler resolution).
 *
 * No network: the install is `npm ci --offline` (npm's only-if-cached mode:
 * no request is made) of a lockfile written from this repository's
 * package-lock.json (the tarball plus its dependencies' versions and
 * integrities), so every dependency comes from the npm cache that the
 * repository's `npm ci` filled.
 *
 * Printed (not asserted): tarball files and bytes, installed packages and
 * bytes (the package README's "Size" records them). Asserted as packaging
 * rules: at most 150 files, nothing but dist/*.js, dist/*.d.ts, zod's licence,
 * README.md and package.json; no import of a package it does not install
 * (zod is bundled into dist, its types inlined in the declarations), while
 * the author's own zod schemas are read, metadata included; no entry
 * exports the execution-context factory.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PKG_DIR = join(ROOT, 'packages/connector-sdk');
const PKG_NAME = '@aip-runtime/connector-sdk';
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

interface PackResult {
  readonly filename: string;
  readonly integrity: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly entryCount: number;
  readonly files: readonly { readonly path: string }[];
}
interface LockEntry {
  readonly version: string;
  readonly dependencies?: Record<string, string>;
  readonly [key: string]: unknown;
}

/** The environment of a child npm/node: no npm_* variables of the npm running this test (they name the repository as prefix). */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return env;
}

/** npm, run by this Node: the npm running the tests (npm_execpath) or the one on PATH. */
function npm(args: readonly string[], cwd: string, extra: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const execpath = process.env.npm_execpath;
  const [cmd, argv] = execpath !== undefined && /npm-cli\.js$/.test(execpath) ? [process.execPath, [execpath, ...args]] : ['npm', [...args]];
  return spawnSync(cmd, argv, { cwd, encoding: 'utf8', env: { ...childEnv(), ...extra } });
}

function node(args: readonly string[], cwd: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [...args], { cwd, encoding: 'utf8', env: childEnv() });
}

/** The fenced code blocks of the guide's "Install and first run" section whose first line is `// <file name>`. */
function guideFiles(): Map<string, string> {
  const guide = readFileSync(join(ROOT, 'docs/connector-authoring.md'), 'utf8');
  const section = guide.slice(guide.indexOf('## Install and first run'), guide.indexOf('\n## ', guide.indexOf('## Install and first run') + 1));
  const files = new Map<string, string>();
  for (const m of section.matchAll(/```ts\n\/\/ ([\w.-]+\.ts)\n([\s\S]*?)```/g)) files.set(m[1] as string, m[2] as string);
  const tsconfig = /```json\n\s*(\{ "compilerOptions"[\s\S]*?)```/.exec(section)?.[1];
  if (tsconfig !== undefined) files.set('tsconfig.json', tsconfig);
  return files;
}

/** The locked entries of `names` and everything they depend on, at the repository's locked versions. */
function closure(repoLock: { packages: Record<string, LockEntry> }, names: readonly string[]): Map<string, unknown> {
  const entries = new Map<string, unknown>();
  const todo = [...names];
  while (todo.length > 0) {
    const name = todo.pop() as string;
    if (entries.has(name)) continue;
    const entry = repoLock.packages[`node_modules/${name}`];
    if (entry === undefined) throw new Error(`${name} is not hoisted in package-lock.json`);
    const { dev: _dev, peer: _peer, devOptional: _devOptional, ...kept } = entry;
    entries.set(name, kept);
    todo.push(...Object.keys(entry.dependencies ?? {}));
  }
  return entries;
}

/**
 * A lockfile installing the tarball and, at the repository's locked versions, its dependencies and the author's
 * own (zod, in which the guide's schemas are written). `sdk` lists what the tarball installs by itself.
 */
function lockfileFor(tarball: string, integrity: string, wanted: Record<string, string>): { lock: unknown; sdk: string[] } {
  const repoLock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const pkg = JSON.parse(readFileSync(join(PKG_DIR, 'package.json'), 'utf8')) as Record<string, unknown> & { dependencies: Record<string, string> };
  const sdk = closure(repoLock, Object.keys(pkg.dependencies));
  const author = closure(
    repoLock,
    Object.keys(wanted).filter((n) => n !== PKG_NAME),
  );
  const packages: Record<string, unknown> = {
    '': { name: 'notes-connector', dependencies: wanted },
    [`node_modules/${PKG_NAME}`]: {
      version: pkg.version,
      resolved: `file:${tarball}`,
      integrity,
      ...Object.fromEntries(['license', 'dependencies', 'peerDependencies', 'peerDependenciesMeta', 'bin', 'engines'].map((k) => [k, pkg[k]])),
    },
  };
  for (const [name, entry] of [...sdk, ...author]) packages[`node_modules/${name}`] = entry;
  return { lock: { name: 'notes-connector', lockfileVersion: 3, requires: true, packages }, sdk: [...sdk.keys()] };
}

function bytesUnder(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += bytesUnder(p);
    else if (e.isFile()) total += statSync(p).size;
  }
  return total;
}

const CLI = ['node_modules/@aip-runtime/connector-sdk/dist/conformance/bin.js'];

describe('the packed connector SDK, installed outside the repository', () => {
  let work: string;
  let packed: PackResult;
  let installed: string[];

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'aip-connector-sdk-'));
    const pack = npm(['pack', '--json', '--pack-destination', work], PKG_DIR);
    expect(pack.status, pack.stderr).toBe(0);
    packed = (JSON.parse(pack.stdout) as PackResult[])[0] as PackResult;

    const files = guideFiles();
    expect([...files.keys()].sort()).toEqual(['notes.conformance.ts', 'notes.ts', 'tsconfig.json']);
    for (const [name, text] of files) if (name !== 'tsconfig.json') writeFileSync(join(work, name), text);

    const zod = JSON.parse(readFileSync(join(ROOT, 'node_modules/zod/package.json'), 'utf8')) as { version: string };
    const wanted = { [PKG_NAME]: `file:${packed.filename}`, zod: zod.version };
    writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'notes-connector', private: true, type: 'module', dependencies: wanted }, null, 2));
    const { lock, sdk } = lockfileFor(packed.filename, packed.integrity, wanted);
    writeFileSync(join(work, 'package-lock.json'), JSON.stringify(lock, null, 2));
    installed = [PKG_NAME, ...sdk];
    // --offline: npm's cache mode is only-if-cached, it makes no request at all (ENOTCACHED otherwise).
    const install = npm(['ci', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], work, { npm_config_update_notifier: 'false' });
    expect(install.status, install.stderr).toBe(0);

    // What `npm install <tarball>` installs: the package and its dependencies (the author's zod is theirs, not the SDK's).
    const sizes = installed.map((name) => ({ name, bytes: bytesUnder(join(work, 'node_modules', name)) }));
    const total = sizes.reduce((sum, s) => sum + s.bytes, 0);
    console.log(
      [
        `${PKG_NAME} tarball: ${packed.entryCount} files, ${packed.size} bytes (${packed.unpackedSize} unpacked)`,
        `installed by the tarball: ${installed.length} packages, ${total} bytes`,
        ...sizes.map((s) => `  ${s.name}: ${s.bytes} bytes`),
      ].join('\n'),
    );
  });

  afterAll(() => {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it('ships compiled JavaScript and declarations only (no sources, no tests), at most 150 files', () => {
    const paths = packed.files.map((f) => f.path);
    expect(paths.filter((p) => !/^(dist\/.+\.(js|d\.ts)|dist\/THIRD-PARTY-LICENSES\.txt|README\.md|package\.json)$/.test(p))).toEqual([]);
    expect(paths).toContain('dist/index.js');
    expect(paths).toContain('dist/index.d.ts');
    expect(paths).toContain('README.md');
    expect(packed.entryCount).toBeLessThanOrEqual(150);
  });

  it("installs its declared dependencies only: no AWS SDK, no tsx or esbuild, and zod only as the author's own", () => {
    const top = readdirSync(join(work, 'node_modules')).filter((n) => !n.startsWith('.'));
    expect(top.filter((n) => /^@aws-|^tsx$|^esbuild$|^@esbuild$|^vitest$|^rollup/.test(n))).toEqual([]);
    // zod is bundled into dist (tree-shaken) and its types are inlined in the declarations: not a dependency or peer.
    expect(installed).not.toContain('zod');
    const shipped = JSON.parse(readFileSync(join(work, 'node_modules', PKG_NAME, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    expect({ ...shipped.dependencies, ...shipped.peerDependencies }).not.toHaveProperty('zod');
  });

  it('imports nothing it does not install: node: modules, its dependencies and the optional peer vitest (zod is bundled)', () => {
    const dist = join(work, 'node_modules', PKG_NAME, 'dist');
    const shipped = JSON.parse(readFileSync(join(work, 'node_modules', PKG_NAME, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const allowed = [...Object.keys(shipped.dependencies), 'vitest'];
    const bare = new Set<string>();
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.(js|d\.ts)$/.test(e.name))
          for (const m of readFileSync(p, 'utf8').matchAll(/(?:from|import)\s*\(?\s*["']([^"'.][^"']*)["']/g)) bare.add(m[1] as string);
      }
    };
    walk(dist);
    const outside = [...bare].filter((s) => !s.startsWith('node:') && !allowed.some((name) => s === name || s.startsWith(`${name}/`)));
    expect(outside).toEqual([]);
  });

  it("reads the author's own zod schemas, the metadata attached to them included", () => {
    const probe = [
      "import * as z from 'zod';",
      "import { defineCapability } from '@aip-runtime/connector-sdk';",
      "const spec = { id: 'probe.create', input: z.strictObject({ title: z.string().describe('The title') }), output: z.strictObject({ id: z.string() }) };",
      'console.log(JSON.stringify(defineCapability(spec).capability.input_schema));',
    ].join('\n');
    const run = node(['--input-type=module', '-e', probe], work);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ type: 'object', properties: { title: { type: 'string', description: 'The title' } }, required: ['title'] });
  });

  it('takes a schema of any Standard Schema library, described by its Standard JSON Schema, and refuses one without', () => {
    // A hand-written Standard Schema (what valibot or arktype schemas are): a non-empty string title.
    const probe = [
      "import { defineCapability, defineConnector } from '@aip-runtime/connector-sdk';",
      'const json = { type: "object", properties: { title: { type: "string", minLength: 1 } }, required: ["title"], additionalProperties: false };',
      'const validate = (v) => typeof v?.title === "string" && v.title.length > 0 ? { value: { title: v.title } } : { issues: [{ message: "title", path: [{ key: "title" }] }] };',
      "const Title = { '~standard': { version: 1, vendor: 'hand', validate, jsonSchema: { input: () => json, output: () => json } } };",
      "const NoJson = { '~standard': { version: 1, vendor: 'hand', validate } };",
      "const cap = defineCapability({ id: 'probe.title', input: Title, output: Title }).implement({ invoke: (input) => ({ title: input.title.toUpperCase() }) });",
      "let refused = 'accepted';",
      "try { defineCapability({ id: 'probe.nojson', input: NoJson, output: Title }); } catch (err) { refused = err.code + ': ' + err.message; }",
      "console.log(JSON.stringify({ input_schema: cap.capability.input_schema, refused, connector: defineConnector({ id: 'probe', version: '1.0.0', capabilities: [cap] }).id }));",
    ].join('\n');
    const run = node(['--input-type=module', '-e', probe], work);
    expect(run.stderr).toBe('');
    const out = JSON.parse(run.stdout) as { input_schema: unknown; refused: string; connector: string };
    expect(out.input_schema).toMatchObject({ type: 'object', required: ['title'] });
    expect(out.refused).toMatch(/^connector\.definition_invalid: .*Standard JSON Schema/);
    expect(out.connector).toBe('probe');
  });

  it('builds no execution context for a third party: no entry exports createExecutionContext', () => {
    const probe = [
      "const sdk = await import('@aip-runtime/connector-sdk');",
      "const kit = await import('@aip-runtime/connector-sdk/conformance');",
      "let host = 'exported';",
      "try { await import('@aip-runtime/connector-sdk/host'); } catch (err) { host = err.code; }",
      "console.log(JSON.stringify({ sdk: 'createExecutionContext' in sdk, kit: 'createExecutionContext' in kit, host }));",
    ].join('\n');
    const run = node(['--input-type=module', '-e', probe], work);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ sdk: false, kit: false, host: 'ERR_PACKAGE_PATH_NOT_EXPORTED' });
  });

  it("runs the guide's connector to a green result with plain Node (type stripping, no loader)", () => {
    const run = node([...CLI, './notes.conformance.ts'], work);
    expect(run.stderr).not.toMatch(/Error/);
    expect(run.stdout).toMatch(/passed\s+effect_checkpoint/);
    expect(run.stdout).toMatch(/0 failed, \d+ skipped — CONFORMS/);
    expect(run.status).toBe(0);
  });

  it('fails the broken rule by name when the connector stops publishing its effect', () => {
    const source = readFileSync(join(work, 'notes.ts'), 'utf8');
    const broken = source.replace('ctx.execution_checkpoints.provider_effect_committed();', '');
    expect(broken).not.toBe(source);
    writeFileSync(join(work, 'broken-notes.ts'), broken);
    writeFileSync(join(work, 'broken.conformance.ts'), readFileSync(join(work, 'notes.conformance.ts'), 'utf8').replace("'./notes.ts'", "'./broken-notes.ts'"));
    const run = node([...CLI, './broken.conformance.ts'], work);
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/FAILED\s+effect_checkpoint/);
    expect(run.stdout).toContain('DOES NOT CONFORM');
  });

  it('names the fix when a CommonJS module sits in an ES module package, and loads one that requires the SDK from a .cjs file', () => {
    const subject =
      "const { defineConformanceSubject } = require('@aip-runtime/connector-sdk/conformance');\nmodule.exports = defineConformanceSubject({ name: 'cjs', async setup() { throw new Error('no provider'); } });\n";
    writeFileSync(join(work, 'commonjs.js'), subject);
    const wrong = node([...CLI, './commonjs.js'], work);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain('(conformance.module_commonjs)');
    expect(wrong.stderr).toMatch(/\.cjs/);
    writeFileSync(join(work, 'commonjs.cjs'), subject);
    const loaded = node([...CLI, './commonjs.cjs'], work);
    expect(loaded.stderr).not.toContain('cannot load');
    expect(loaded.stdout).toContain('conformance: cjs');
  });

  it('names the fix when a TypeScript module needs more than type stripping', () => {
    writeFileSync(
      join(work, 'enum.conformance.ts'),
      "enum Mode { A }\nexport default { name: String(Mode.A), async setup() { throw new Error('unused'); } };\n",
    );
    const syntax = node([...CLI, './enum.conformance.ts'], work);
    expect(syntax.status).toBe(2);
    expect(syntax.stderr).toContain('(conformance.typescript_syntax)');
    expect(syntax.stderr).toContain('erasableSyntaxOnly');
    writeFileSync(join(work, 'js-specifier.conformance.ts'), readFileSync(join(work, 'notes.conformance.ts'), 'utf8').replace("'./notes.ts'", "'./notes.js'"));
    const specifier = node([...CLI, './js-specifier.conformance.ts'], work);
    expect(specifier.status).toBe(2);
    expect(specifier.stderr).toContain('(conformance.typescript_import_extension)');
    expect(specifier.stderr).toContain('Import the .ts file itself');
  });

  it('runs the same modules in a package without "type": "module"', () => {
    const typeless = join(work, 'typeless');
    mkdirSync(typeless);
    writeFileSync(join(typeless, 'package.json'), JSON.stringify({ name: 'typeless', private: true }));
    for (const f of ['notes.ts', 'notes.conformance.ts']) writeFileSync(join(typeless, f), readFileSync(join(work, f), 'utf8'));
    const run = node([join('..', ...CLI), './notes.conformance.ts'], typeless);
    expect(run.stdout).toMatch(/0 failed, \d+ skipped — CONFORMS/);
    expect(run.status).toBe(0);
  });

  it('typechecks the example under strict, exactOptionalPropertyTypes and verbatimModuleSyntax (node16 and bundler resolution)', () => {
    const documented = JSON.parse(guideFiles().get('tsconfig.json') as string) as { compilerOptions: Record<string, unknown> };
    expect(documented.compilerOptions).toMatchObject({ strict: true, exactOptionalPropertyTypes: true, verbatimModuleSyntax: true });
    const types = { types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] };
    const include = ['notes.ts', 'notes.conformance.ts'];
    // node16 family: the documented tsconfig, declarations of every package checked too.
    writeFileSync(join(work, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...documented.compilerOptions, ...types, skipLibCheck: false }, include }));
    const nodenext = node([TSC, '-p', 'tsconfig.json'], work);
    expect(nodenext.stdout + nodenext.stderr).toBe('');
    expect(nodenext.status).toBe(0);
    // bundler resolution reads the same `types` conditions.
    const bundler = { ...documented.compilerOptions, module: 'preserve', moduleResolution: 'bundler', ...types, skipLibCheck: true };
    writeFileSync(join(work, 'tsconfig.bundler.json'), JSON.stringify({ compilerOptions: bundler, include }));
    const run = node([TSC, '-p', 'tsconfig.bundler.json'], work);
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
