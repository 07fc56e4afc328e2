/**
 * The SDK and kit as a package (packages/connector-sdk): every `exports`
 * entry has its source, resolves by package name here (tsconfig "paths",
 * as under tsc, tsx and esbuild) to the very modules the repository uses;
 * what an entry imports stays inside the package (no AWS SDK, no emulator,
 * nothing of lib/, functions/, infra/ or dev/); and the repository's
 * `aip-conformance` bin (tsx, for modules importing `.js` specifiers of `.ts`
 * files) runs a module and exits 1 on a failed rule. The packed package on
 * plain Node: sdk-pack.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import * as connectors from '@aip-runtime/connector-sdk';
import * as conformance from '@aip-runtime/connector-sdk/conformance';
import { describeConformance } from '@aip-runtime/connector-sdk/conformance/vitest';
import * as local from '../../../../packages/connector-sdk/src/conformance/index.js';
import * as localSdk from '../../../../packages/connector-sdk/src/index.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const PKG = `${ROOT}packages/connector-sdk/`;
const pkg = JSON.parse(readFileSync(`${PKG}package.json`, 'utf8')) as {
  exports: Record<string, string | { types: string; default: string }>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The source of a dist entry: dist/x/y.js → src/x/y.ts. */
const sourceOf = (target: string) => target.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts');
const entries = Object.entries(pkg.exports).filter((e): e is [string, { types: string; default: string }] => typeof e[1] !== 'string');

describe('@aip-runtime/connector-sdk exports', () => {
  it('name compiled JavaScript with its declarations, each built from a source module', () => {
    // No './host': the execution-context factory is internal to the package (src/host.ts).
    expect(entries.map(([name]) => name)).toEqual(['.', './conformance', './conformance/vitest', './protocol', './errors', './common']);
    for (const [name, target] of entries) {
      expect(Object.keys(target), name).toEqual(['types', 'default']);
      expect(target.types.replace(/\.d\.ts$/, '.js'), name).toBe(target.default);
      expect(existsSync(`${PKG}${sourceOf(target.default)}`), name).toBe(true);
    }
    expect(existsSync(`${PKG}${sourceOf(pkg.bin['aip-conformance'] as string)}`)).toBe(true);
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['ajv', 'canonicalize']);
    // zod is bundled into dist by build.mjs (a devDependency), not a dependency or peer (README "Size").
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual(['vitest']);
    expect(pkg.devDependencies.zod).toBeDefined();
  });

  it('resolve by package name to the repository modules', () => {
    expect(conformance.runConformance).toBe(local.runConformance);
    expect(connectors.defineConnector).toBe(localSdk.defineConnector);
    expect(typeof describeConformance).toBe('function');
  });

  it('import nothing outside the package but its declared dependencies, zod (bundled into dist) and Node', async () => {
    const allowed = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies), 'zod']);
    for (const [name, target] of entries) {
      const result = await build({
        entryPoints: [`${PKG}${sourceOf(target.default)}`],
        bundle: true,
        write: false,
        metafile: true,
        platform: 'node',
        format: 'esm',
        packages: 'external',
        logLevel: 'silent',
      });
      const outside = Object.keys(result.metafile.inputs).filter((f) => !f.startsWith('packages/connector-sdk/src/'));
      expect(outside, name).toEqual([]);
      const external = Object.values(result.metafile.inputs).flatMap((f) => f.imports.filter((i) => i.external).map((i) => i.path));
      const packages = new Set(
        external.filter((p) => !p.startsWith('node:')).map((p) => (p.startsWith('@') ? p.split('/').slice(0, 2).join('/') : (p.split('/')[0] as string))),
      );
      expect(
        [...packages].filter((p) => !allowed.has(p)),
        name,
      ).toEqual([]);
    }
  });
});

describe("the repository's aip-conformance bin", () => {
  it('runs a module, prints each rule with its status, and exits 1 on a failed rule', () => {
    const run = spawnSync(process.execPath, ['bin/aip-conformance.mjs', 'test/fixtures/broken-connectors/secret-in-log.ts'], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/FAILED\s+secrets\s+secret material appears in a connector log line/);
    expect(run.stdout).toMatch(/passed\s+manifest/);
    expect(run.stdout).toContain(`${local.CONFORMANCE_RULE_IDS.length} rules: ${local.CONFORMANCE_RULE_IDS.length - 1} passed, 1 failed, 0 skipped`);
  });
});
