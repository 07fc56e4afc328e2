/**
 * Builds dist/ for the published package (`npm run build`, run by `prepack`).
 *
 * 1. tsc checks src/ (the package's strict options) and emits declarations
 *    into .build/types.
 * 2. esbuild bundles each public entry (and the CLI) into ES modules, with
 *    shared code split into dist/_chunks. zod is bundled (tree-shaken:
 *    zod/mini, the English messages, JSON Schema generation), so it is not a
 *    runtime dependency; the package's dependencies stay external.
 * 3. rollup-plugin-dts rolls the declarations up per entry, zod's and
 *    Standard Schema's types inlined, so the declarations import nothing that
 *    is not installed.
 *
 * Why (README.md, "Size"): zod is 6.2 MB installed, of which the SDK runs
 * about 0.1 MB; as a peer npm installs it whole for every author.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

const here = fileURLToPath(new URL('.', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('package.json', import.meta.url), 'utf8'));
/** What stays an import in dist/: node: modules, the dependencies and the peers (and their subpaths). */
const installed = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})];
const isExternal = (id) => id.startsWith('node:') || installed.some((name) => id === name || id.startsWith(`${name}/`));

/** Public entries: dist name -> source (package.json `exports` points at dist/<name>.js and .d.ts). */
const ENTRIES = {
  index: 'src/index.ts',
  'conformance/index': 'src/conformance/index.ts',
  'conformance/vitest': 'src/conformance/vitest.ts',
  'protocol/index': 'src/protocol/index.ts',
  'errors/index': 'src/errors/index.ts',
  'common/index': 'src/common/index.ts',
};

rmSync(new URL('dist', import.meta.url), { recursive: true, force: true });
rmSync(new URL('.build', import.meta.url), { recursive: true, force: true });

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
const checked = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--emitDeclarationOnly', '--outDir', '.build/types'], { cwd: here, stdio: 'inherit' });
if (checked.status !== 0) process.exit(checked.status ?? 1);

await build({
  absWorkingDir: here,
  entryPoints: { ...ENTRIES, 'conformance/bin': 'src/conformance/bin.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  chunkNames: '_chunks/[name]-[hash]',
  external: installed.flatMap((name) => [name, `${name}/*`]),
  legalComments: 'eof',
  logLevel: 'warning',
});

const types = await rollup({
  input: Object.fromEntries(Object.keys(ENTRIES).map((name) => [name, `${here}.build/types/${name}.d.ts`])),
  external: isExternal,
  plugins: [dts({ respectExternal: true })],
  onwarn: (warning, warn) => {
    // Entries that share zod's types through a chunk without re-exporting them: fine for authors, who never name those types.
    if (/private shared type exports/.test(warning.message)) return;
    warn(warning);
  },
});
await types.write({ dir: `${here}dist`, format: 'es', entryFileNames: '[name].d.ts', chunkFileNames: '_chunks/[name]-[hash].d.ts' });
await types.close();

// zod's code and declarations, and the Standard Schema types, ship inside dist/: their licences ship with them.
/** A package's folder: up from its resolved entry to the package.json that names it (not every package exports ./package.json). */
function packageDir(name) {
  let dir = dirname(require.resolve(name));
  while (!existsSync(join(dir, 'package.json')) || JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name !== name) {
    if (dirname(dir) === dir) throw new Error(`no package.json of ${name}`);
    dir = dirname(dir);
  }
  return dir;
}
const notices = ['zod', '@standard-schema/spec'].map((name) => {
  const dir = packageDir(name);
  const { version, homepage } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return `dist/ bundles ${name} ${version} (${homepage}):\n\n${readFileSync(join(dir, 'LICENSE'), 'utf8')}`;
});
writeFileSync(join(here, 'dist/THIRD-PARTY-LICENSES.txt'), notices.join('\n\n'));
