/** Small statistics helpers (nearest-rank percentiles). */

export interface Distribution {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

/** Nearest-rank percentile of an ascending list (q in 0..100). */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((q / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

export function distribution(values: readonly number[], digits = 1): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const f = 10 ** digits;
  const r = (x: number) => (Number.isFinite(x) ? Math.round(x * f) / f : x);
  const sum = sorted.reduce((s, x) => s + x, 0);
  return {
    n: sorted.length,
    p50: r(percentile(sorted, 50)),
    p95: r(percentile(sorted, 95)),
    p99: r(percentile(sorted, 99)),
    mean: r(sorted.length > 0 ? sum / sorted.length : Number.NaN),
    min: r(sorted[0] ?? Number.NaN),
    max: r(sorted[sorted.length - 1] ?? Number.NaN),
  };
}

/** Ratio rounded to 2 decimals (NaN when the denominator is 0). */
export function ratio(a: number, b: number): number {
  return b === 0 ? Number.NaN : Math.round((a / b) * 100) / 100;
}
