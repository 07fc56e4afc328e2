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
import { config, globalRegistry } from 'zod/mini';
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

/** The state of a {@link deferred} schema, held by its Proxy's target. */
interface DeferredTarget {
  /** What builds the schema; undefined once built. */
  build: (() => object) | undefined;
  /** The built schema. */
  built: object | undefined;
  /** The Proxy: its identity is the schema's. */
  self: object | undefined;
}

function builtOf(t: DeferredTarget): object {
  if (t.built !== undefined) return t.built;
  const build = t.build;
  if (build === undefined) throw new Error('a deferred schema was used while it was being built (a cycle between deferred schemas: use z.lazy for recursion)');
  t.build = undefined;
  let built: object;
  try {
    built = build();
  } catch (err) {
    t.build = build;
    throw err;
  }
  // z.meta() registers the instance it is attached to: the built schema. The Proxy is the schema's identity everywhere
  // else (in the shapes and unions that refer to it, in a registry an OpenAPI generator fills), so it carries the same
  // metadata, and toJSONSchema finds the description under either.
  const meta = globalRegistry._map.get(built as never);
  if (meta !== undefined) globalRegistry.add(t.self as never, meta);
  t.built = built;
  return built;
}

/**
 * Every operation on a deferred schema goes to the built one (built on the first). The target holds no property a
 * caller can see, so the Proxy invariants hold: a property the built schema has as non-configurable (zod's `_zod`)
 * is reported configurable, and the Proxy refuses to be made non-extensible (a frozen target could report nothing).
 */
const DEFERRED_HANDLER: ProxyHandler<DeferredTarget> = {
  // The receiver is the built schema: zod's members bind to it on first read (util.members), so `schema.parse` called
  // through the Proxy runs on the built schema with no further trap.
  get: (t, p) => Reflect.get(builtOf(t), p),
  set: (t, p, v) => Reflect.set(builtOf(t), p, v),
  has: (t, p) => Reflect.has(builtOf(t), p),
  deleteProperty: (t, p) => Reflect.deleteProperty(builtOf(t), p),
  ownKeys: (t) => Reflect.ownKeys(builtOf(t)),
  getOwnPropertyDescriptor: (t, p) => {
    const d = Reflect.getOwnPropertyDescriptor(builtOf(t), p);
    return d === undefined || d.configurable === true ? d : { ...d, configurable: true };
  },
  defineProperty: (t, p, d) => Reflect.defineProperty(builtOf(t), p, d),
  getPrototypeOf: (t) => Reflect.getPrototypeOf(builtOf(t)),
  setPrototypeOf: (t, proto) => Reflect.setPrototypeOf(builtOf(t), proto),
  preventExtensions: () => false,
};

/**
 * A schema built on its first use, under the name and the type of the built
 * schema: `export const XSchema = z.deferred(() => z.strictObject({...}))`.
 * For the schemas a cold start would otherwise build and never run (the
 * protocol's, the route table's; docs/bench/analysis.md, "Cold start and
 * bundles"). The value is a Proxy that builds the schema on the first
 * operation and forwards every operation to it, so it is used exactly as the
 * schema itself:
 * - its identity is the Proxy's, and stays so: shapes, unions and registries
 *   refer to it, `===` compares it, and `z.meta()` on the built schema is
 *   registered under it too (toJSONSchema's output is unchanged);
 * - `instanceof` works (zod's classes check the traits in `_zod`), and so do
 *   `.check()`, `.shape` and the functional API (`z.optional(X)` does not build
 *   X: zod reads its children when it parses or converts);
 * - the hot path: `X.parse` is the built schema's own method, bound to it on
 *   first read, and a parent's parse reaches X's `_zod` through one trap per
 *   field (measured: docs/bench/analysis.md).
 * A schema that refers to itself while being built throws: recursion is zod's
 * `z.lazy`. Unlike {@link lazySchema}, callers need not change.
 */
export function deferred<T extends object>(build: () => T): T {
  const target: DeferredTarget = { build, built: undefined, self: undefined };
  const self = new Proxy(target, DEFERRED_HANDLER);
  target.self = self;
  return self as unknown as T;
}
