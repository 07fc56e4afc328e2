/**
 * Why an author's module did not load, with the fix named (the CLI's exit 2):
 * plain Node loads a `.ts` module with its built-in type stripping, which
 * has limits an author meets on the first run (a transform-only syntax, a
 * `.js` specifier of a `.ts` file, Node too old), and an ES module package
 * meets CommonJS. See packages/connector-sdk/README.md, "Why type stripping".
 */
import { existsSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';

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
export function assertCanLoad(file: string): void {
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
