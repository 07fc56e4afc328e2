/**
 * `aip-conformance`: runs the conformance kit against the subject(s) a
 * module exports (see module.ts for the module contract) and prints one line
 * per rule. Exit code 0 when no rule failed (skipped rules are listed, not
 * failed), 1 when a rule failed, 2 on a usage error or a module that cannot
 * be loaded (with the fix named: see describeLoadFailure). The package's
 * bin (./bin.ts) calls `main` on plain Node, which loads a `.ts` module with
 * its built-in type stripping (Node >= 22.18); the repository's
 * bin/aip-conformance.mjs registers tsx first (its modules import `.js`
 * specifiers of `.ts` files).
 */
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { assertCanLoad, describeLoadFailure } from './load-errors.js';
import { subjectsFromModule } from './module.js';
import { formatReport } from './report.js';
import { runConformance } from './run.js';
import type { ConformanceReport } from './subject.js';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Resolves module paths (default: process.cwd()). */
  readonly cwd?: string;
  /** Imports a module (default: dynamic import). */
  readonly importModule?: (url: string) => Promise<Record<string, unknown>>;
}

export const USAGE = `Usage: aip-conformance [--json] [--verbose] [--call-timeout-ms <ms>] <module> [<module> ...]

Runs the AIP connector conformance kit against the subject each module exports
and prints every rule with its status (passed, FAILED, skipped) and reason.

A module (.ts or .js) exports either
  export default <ConformanceSubject>             (or a function returning one, or an array)
  export const subject = <ConformanceSubject>
or, for a connector plus the provider fake you supply,
  export const name = 'my connector';             (optional)
  export const credential_handle = 'my/api_key';  (optional)
  export async function setup(env) { return { connector, provider, scenarios, sampleInput } }

Exit code: 0 no rule failed, 1 a rule failed, 2 usage or load error.
Options:
  --json                 print the reports as JSON (one array) instead of text
  --verbose              also print what each passed rule exercised
  --call-timeout-ms <ms> safety bound on every connector call (default 15000)
  -h, --help             this text
`;

interface Args {
  readonly modules: string[];
  readonly json: boolean;
  readonly verbose: boolean;
  readonly call_timeout_ms?: number;
}

function parse(argv: readonly string[]): Args | { help: true } | { error: string } {
  const modules: string[] = [];
  let json = false;
  let verbose = false;
  let call_timeout_ms: number | undefined;
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i] as string;
    if (a === '-h' || a === '--help') return { help: true };
    if (a === '--json') json = true;
    else if (a === '--verbose') verbose = true;
    else if (a === '--call-timeout-ms' || a.startsWith('--call-timeout-ms=')) {
      const raw = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      const n = Number(raw);
      if (!Number.isInteger(n) || n <= 0) return { error: '--call-timeout-ms needs a positive integer' };
      call_timeout_ms = n;
    } else if (a.startsWith('-')) return { error: `unknown option ${a}` };
    else modules.push(a);
  }
  if (modules.length === 0) return { error: 'name at least one module' };
  return { modules, json, verbose, ...(call_timeout_ms !== undefined ? { call_timeout_ms } : {}) };
}

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const args = parse(argv);
  if ('help' in args) {
    io.stdout(USAGE);
    return 0;
  }
  if ('error' in args) {
    io.stderr(`aip-conformance: ${args.error}\n\n${USAGE}`);
    return 2;
  }
  const importModule = io.importModule ?? ((url: string) => import(url) as Promise<Record<string, unknown>>);
  const reports: ConformanceReport[] = [];
  for (const path of args.modules) {
    const file = resolve(io.cwd ?? process.cwd(), path);
    let subjects;
    try {
      if (io.importModule === undefined) assertCanLoad(file);
      const mod = await importModule(pathToFileURL(file).href);
      subjects = await subjectsFromModule(mod, basename(file).replace(/\.[cm]?[jt]s$/, ''));
    } catch (err) {
      const failure = describeLoadFailure(err, file);
      io.stderr(`aip-conformance: cannot load ${path} (${failure.code}): ${failure.message}\n`);
      return 2;
    }
    for (const subject of subjects) {
      const report = await runConformance(subject, args.call_timeout_ms !== undefined ? { call_timeout_ms: args.call_timeout_ms } : {});
      reports.push(report);
      if (!args.json) io.stdout(formatReport(report, { verbose: args.verbose }));
    }
  }
  if (args.json) io.stdout(`${JSON.stringify(reports, null, 2)}\n`);
  return reports.every((r) => r.passed) ? 0 : 1;
}
