/**
 * The cloud assembly the assembly test runs: test/assembly/synth-app.ts,
 * synthesized with bundling in a child process (as the CDK CLI runs an app),
 * once per source state. The output is kept in `.vitest-tmp/assembly/<fingerprint>`,
 * where the fingerprint is a hash of every file that can change a bundle or
 * the template (infra/, functions/, lib/, console/, the lock file, this
 * folder's config and app); a run on an unchanged tree reuses it.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { BUNDLE_ROOT } from '../../infra/bundling.js';

const run = promisify(execFile);

/** What the assembly depends on (folders walked, files read). */
const INPUTS = [
  'infra',
  'functions',
  'lib',
  'packages/connector-sdk/src',
  'console',
  'package-lock.json',
  'tsconfig.json',
  'cdk.json',
  'test/assembly/config.json',
  'test/assembly/synth-app.ts',
];
const SKIP = new Set(['node_modules', 'dist', '.vite']);

export const ASSEMBLY_CACHE_ROOT = join(BUNDLE_ROOT, '.vitest-tmp', 'assembly');

function walk(path: string, out: string[]): void {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return;
  if (stat.isFile()) {
    out.push(path);
    return;
  }
  for (const name of readdirSync(path).sort()) if (!SKIP.has(name)) walk(join(path, name), out);
}

/** Hash of the inputs' paths and contents. */
export function assemblyFingerprint(): string {
  const files: string[] = [];
  for (const input of INPUTS) walk(join(BUNDLE_ROOT, input), files);
  const hash = createHash('sha256');
  for (const file of files) hash.update(relative(BUNDLE_ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex').slice(0, 20);
}

/**
 * The synthesized assembly's folder (manifest.json, the templates, the
 * staged bundles). Synthesizes when the tree changed since the last run
 * (about a minute: every function is bundled); older outputs are removed.
 */
export async function synthesizedAssembly(): Promise<{ readonly dir: string; readonly cached: boolean }> {
  const fingerprint = assemblyFingerprint();
  const dir = join(ASSEMBLY_CACHE_ROOT, fingerprint);
  if (existsSync(join(dir, 'manifest.json'))) return { dir, cached: true };
  mkdirSync(ASSEMBLY_CACHE_ROOT, { recursive: true });
  for (const old of readdirSync(ASSEMBLY_CACHE_ROOT))
    if (/^[0-9a-f]{20}(\.tmp-\d+)?$/.test(old)) rmSync(join(ASSEMBLY_CACHE_ROOT, old), { recursive: true, force: true });
  const staging = `${dir}.tmp-${process.pid}`;
  await run(process.execPath, ['--import', 'tsx', 'test/assembly/synth-app.ts', staging], {
    cwd: BUNDLE_ROOT,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, CDK_DISABLE_VERSION_CHECK: 'true' },
  });
  renameSync(staging, dir);
  return { dir, cached: false };
}
