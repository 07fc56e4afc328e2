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
import { existsSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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

/** Why a module could not be loaded, as a stable code and a message that names the fix. */
export type ModuleLoadFailureCode =
  | 'conformance.module_not_found'
  | 'conformance.typescript_unsupported'
  | 'conformance.typescript_syntax'
  | 'conformance.typescript_import_extension'
  | 'conformance.module_commonjs'
  | 'conformance.module_load_failed';

export class ModuleLoadError extends Error {
  readonly code: ModuleLoadFailureCode;
  constructor(code: ModuleLoadFailureCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModuleLoadError';
    this.code = code;
  }
}

const TS_EXTENSION = /\.[cm]?ts$/;
const LOADER_HINT = 'or load it with a loader: `node --import tsx ./node_modules/.bin/aip-conformance <module>`';

/** Refuses before importing what plain Node cannot load (a missing file, TypeScript without type stripping). */
function assertCanLoad(file: string): void {
  if (!existsSync(file)) throw new ModuleLoadError('conformance.module_not_found', `${file} does not exist`);
  const features = process.features as { typescript?: string | false };
  if (TS_EXTENSION.test(file) && (features.typescript === undefined || features.typescript === false)) {
    throw new ModuleLoadError(
      'conformance.typescript_unsupported',
      `Node ${process.version} cannot run TypeScript by itself (its type stripping is absent or disabled). Use Node >= 22.18 without --no-experimental-strip-types, compile the module to JavaScript, ${LOADER_HINT}.`,
    );
  }
}

/**
 * Names the fix for the usual reasons a connector module does not load on
 * plain Node: TypeScript that type stripping cannot erase, a `.js` specifier
 * of a `.ts` file, a CommonJS module in an ES module package (or the
 * reverse). Anything else keeps the loader's message.
 */
export function describeLoadFailure(err: unknown, file: string): ModuleLoadError {
  if (err instanceof ModuleLoadError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  const ts = TS_EXTENSION.test(file);
  if (code === 'ERR_UNKNOWN_FILE_EXTENSION' && ts) {
    return new ModuleLoadError(
      'conformance.typescript_unsupported',
      `Node ${process.version} cannot run TypeScript by itself. Use Node >= 22.18 (built-in type stripping), compile the module to JavaScript, ${LOADER_HINT}.`,
      { cause: err },
    );
  }
  if (code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' || code === 'ERR_INVALID_TYPESCRIPT_SYNTAX') {
    return new ModuleLoadError(
      'conformance.typescript_syntax',
      `${message}. Node's type stripping only erases types: write the module without enum, namespace, parameter properties or import aliases (tsconfig "erasableSyntaxOnly": true finds them), ${LOADER_HINT}.`,
      { cause: err },
    );
  }
  if (code === 'ERR_MODULE_NOT_FOUND') {
    const missing = /Cannot find module '([^']+)'/.exec(message)?.[1];
    if (missing !== undefined && extname(missing) === '.js' && existsSync(missing.replace(/\.js$/, '.ts'))) {
      return new ModuleLoadError(
        'conformance.typescript_import_extension',
        `${missing} does not exist: plain Node does not map a .js specifier to the .ts file beside it. Import the .ts file itself (tsconfig "allowImportingTsExtensions" or "rewriteRelativeImportExtensions": true), ${LOADER_HINT}.`,
        { cause: err },
      );
    }
  }
  if (/\b(require|module|exports|__dirname|__filename) is not defined in ES module scope/.test(message)) {
    return new ModuleLoadError(
      'conformance.module_commonjs',
      `${message}: the module is CommonJS but Node loads it as an ES module (its package.json says "type": "module"). Write it with import/export, or name it .cjs/.cts.`,
      { cause: err },
    );
  }
  if (
    code === 'ERR_REQUIRE_ESM' ||
    code === 'ERR_REQUIRE_ASYNC_MODULE' ||
    /Cannot use import statement outside a module|Unexpected token 'export'/.test(message)
  ) {
    return new ModuleLoadError(
      'conformance.module_commonjs',
      `${message}: the module is loaded as CommonJS. The connector SDK is an ES module package: add "type": "module" to ${nearestPackageJson(file) ?? 'your package.json'}, or name the module .mjs/.mts.`,
      { cause: err },
    );
  }
  return new ModuleLoadError('conformance.module_load_failed', message, { cause: err });
}

function nearestPackageJson(file: string): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const candidate = resolve(dir, 'package.json');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}
