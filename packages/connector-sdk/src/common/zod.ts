/**
 * The one zod of the project: `zod/mini`, with zod's English messages.
 *
 * Why mini (docs/bench/analysis.md, "Cold start and bundles"): the classic
 * API attaches some fifty methods to every schema instance as it is built and
 * cannot be tree-shaken, so every Lambda paid ~140 KiB and tens of
 * milliseconds at import for it; `zod/mini` is the same parser (zod's core)
 * behind a functional, tree-shakable API. Every module imports zod from here
 * (`import * as z from './zod.js'`), never from `zod` itself, so the
 * messages below are installed before any schema parses and no bundle
 * carries both APIs (.dependency-cruiser.cjs enforces it).
 *
 * Without a locale, zod/mini's messages are all "Invalid input"; the
 * English locale keeps the messages that errors and problem details quote.
 */
import { config } from 'zod/mini';
import { en } from 'zod/locales';

config(en());

export * from 'zod/mini';

/**
 * A schema built on its first use instead of at import: for the schemas a
 * function's cold start would otherwise build and almost never runs (the
 * deployment file's infrastructure half, the remote placement), which
 * docs/bench/analysis.md "Cold start and bundles" counts. Memoised: one
 * instance per process.
 */
export function lazySchema<T>(build: () => T): () => T {
  let built: T | undefined;
  return () => {
    built ??= build();
    return built;
  };
}
