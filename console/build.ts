/**
 * Builds the operator console (console/src, Preact) with Vite into a folder
 * of static files: index.html and hashed assets under assets/. Used by
 * `npm start` (dev/local/start.ts), the console tests (test/console) and the
 * CDK bundling of the console function (infra/console.ts), so there is one
 * build configuration.
 *
 *   node --import tsx console/build.ts <outDir>
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type InlineConfig } from 'vite';

/** This folder: the Vite root (index.html). */
export const CONSOLE_ROOT = dirname(fileURLToPath(import.meta.url));

/** The Vite configuration of the console (no config file: this is it). */
export function consoleViteConfig(outDir: string): InlineConfig {
  return {
    configFile: false,
    root: CONSOLE_ROOT,
    // Relative asset URLs: the console is served under /console/ locally and
    // under /<stage>/console/ by API Gateway.
    base: './',
    logLevel: 'warn',
    clearScreen: false,
    // JSX with Preact's automatic runtime: no plugin needed.
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    build: {
      outDir: resolve(outDir),
      emptyOutDir: true,
      target: 'es2022',
      sourcemap: false,
      // Everything is text (JS, CSS, HTML): API Gateway serves it without binary media types.
      assetsInlineLimit: 0,
      reportCompressedSize: false,
    },
  };
}

/** Builds the console into `outDir` (emptied first). */
export async function buildConsole(outDir: string): Promise<string> {
  await build(consoleViteConfig(outDir));
  return resolve(outDir);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const outDir = process.argv[2];
  if (outDir === undefined) {
    process.stderr.write('usage: node --import tsx console/build.ts <outDir>\n');
    process.exit(2);
  }
  await buildConsole(outDir);
}
