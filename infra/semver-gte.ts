/**
 * `semver.gte` alone: what the tracer's two users of the `semver` package
 * call (aws-xray-sdk-core's AWS SDK v2 patcher checks the SDK's version,
 * cls-hooked checks Node's), so the function bundles carry this instead of
 * the whole package, whose module evaluation (classes, ranges and some forty
 * regular expressions built at import) was about a third of the tracer's
 * import ({@link xrayWithoutSemverPlugin} in ./bundling.ts; docs/bench/analysis.md,
 * "Cold start and bundles"). Semantics of SemVer 2.0.0 precedence: numeric
 * major.minor.patch, a pre-release below its release, build metadata ignored,
 * an optional leading `v`; anything else throws a TypeError as semver does.
 */
const VERSION = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

interface Parsed {
  readonly release: readonly [number, number, number];
  readonly pre: readonly string[];
}

function parse(version: unknown): Parsed {
  const m = typeof version === 'string' ? VERSION.exec(version.trim()) : null;
  if (m === null) throw new TypeError(`Invalid Version: ${String(version)}`);
  return { release: [Number(m[1]), Number(m[2]), Number(m[3])], pre: m[4] === undefined ? [] : m[4].split('.') };
}

/** Precedence of two pre-release identifiers: numeric ones numerically and below alphanumeric ones, those in ASCII order. */
function compareIdentifier(a: string, b: string): number {
  const an = /^\d+$/.test(a);
  const bn = /^\d+$/.test(b);
  if (an && bn) return Math.sign(Number(a) - Number(b));
  if (an !== bn) return an ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compare(a: Parsed, b: Parsed): number {
  for (let i = 0; i < 3; i++) {
    const d = (a.release[i] as number) - (b.release[i] as number);
    if (d !== 0) return Math.sign(d);
  }
  if (a.pre.length === 0 || b.pre.length === 0) return Math.sign(b.pre.length - a.pre.length);
  for (let i = 0; i < Math.max(a.pre.length, b.pre.length); i++) {
    const x = a.pre[i];
    const y = b.pre[i];
    if (x === undefined || y === undefined) return x === undefined ? -1 : 1;
    const c = compareIdentifier(x, y);
    if (c !== 0) return c;
  }
  return 0;
}

/** Whether version `a` is greater than or equal to `b` (semver's `gte`). */
export function gte(a: unknown, b: unknown): boolean {
  return compare(parse(a), parse(b)) >= 0;
}
