/**
 * Benchmark sizes. Every figure is configurable by environment variable;
 * BENCH_QUICK=1 picks small sizes for a smoke run (about a minute).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type SectionId = 'cost' | 'peer' | 'mcp' | 'e2e' | 'bundles' | 'scaling' | 'credentials' | 'latency' | 'fairness' | 'awscost';
/** In run order: `awscost` last, it prices the other sections' figures. */
export const ALL_SECTIONS: readonly SectionId[] = ['cost', 'peer', 'mcp', 'scaling', 'credentials', 'e2e', 'latency', 'fairness', 'bundles', 'awscost'];

export interface BenchConfig {
  readonly quick: boolean;
  readonly sections: readonly SectionId[];
  /** Section 1: measured runs per scenario (after one traced warm-up run). */
  readonly costRuns: number;
  /** Section 2: runs per side. */
  readonly peerRuns: number;
  /** Section 3: concurrency levels and requests per level. */
  readonly e2eConcurrency: readonly number[];
  /** Requests at a level = max(e2eMinRequests, concurrency * e2eRequestsPerClient). */
  readonly e2eRequestsPerClient: number;
  readonly e2eMinRequests: number;
  /** Section 4: fresh-process imports per bundle. */
  readonly importRuns: number;
  /** Section 5: stored transactions (cumulative) and receipt chain lengths. */
  readonly scaleSizes: readonly number[];
  readonly chainSizes: readonly number[];
  /** Section 5: measured executes per size. */
  readonly scaleRuns: number;
  /** Section 5: give up bulk loading past this many seconds (reports what was reached). */
  readonly loadBudgetSeconds: number;
  /** Section `credentials`: executes in one environment with the cache, and without it. */
  readonly credentialExecutes: number;
  readonly credentialUncachedExecutes: number;
  /** Output folder and file stem (docs/bench/latest.{json,md}). */
  readonly outDir: string;
  readonly outName: string;
  /** BENCH_STORE_KNOWN_IMAGES, when set (0 = the transaction store reads every record back, as before 4.1). */
  readonly storeKnownImages?: string;
}

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer`);
  return n;
}

function list(name: string, fallback: readonly number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return [...fallback];
  const out = raw.split(',').map((s) => Number(s.trim()));
  if (out.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`${name} must be a comma-separated list of positive integers`);
  return out;
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): BenchConfig {
  const quick = env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true';
  const sections = (env.BENCH_SECTIONS ?? '').trim();
  const chosen = sections === '' ? [...ALL_SECTIONS] : sections.split(',').map((s) => s.trim());
  for (const s of chosen)
    if (!ALL_SECTIONS.includes(s as SectionId)) throw new Error(`BENCH_SECTIONS: unknown section "${s}" (known: ${ALL_SECTIONS.join(', ')})`);
  return {
    quick,
    sections: ALL_SECTIONS.filter((s) => chosen.includes(s)),
    costRuns: int('BENCH_COST_RUNS', quick ? 3 : 10),
    peerRuns: int('BENCH_PEER_RUNS', quick ? 5 : 30),
    e2eConcurrency: list('BENCH_E2E_CONCURRENCY', [1, 8, 32]),
    e2eRequestsPerClient: int('BENCH_E2E_REQUESTS_PER_CLIENT', quick ? 1 : 2),
    e2eMinRequests: int('BENCH_E2E_MIN_REQUESTS', quick ? 4 : 20),
    importRuns: int('BENCH_IMPORT_RUNS', quick ? 3 : 20),
    scaleSizes: list('BENCH_SCALE_SIZES', quick ? [1_000, 3_000] : [1_000, 10_000, 100_000]),
    chainSizes: list('BENCH_CHAIN_SIZES', [1, 10, 100]),
    scaleRuns: int('BENCH_SCALE_RUNS', quick ? 3 : 10),
    loadBudgetSeconds: int('BENCH_LOAD_BUDGET_S', quick ? 60 : 240),
    credentialExecutes: int('BENCH_CREDENTIAL_EXECUTES', quick ? 100 : 1_000),
    credentialUncachedExecutes: int('BENCH_CREDENTIAL_UNCACHED_EXECUTES', quick ? 20 : 100),
    // A quick run writes to the temp folder, so that it never replaces the committed full run.
    outDir: env.BENCH_OUT_DIR ?? (quick ? join(tmpdir(), 'aip-bench') : 'docs/bench'),
    outName: env.BENCH_OUT_NAME ?? 'latest',
    ...(env.BENCH_STORE_KNOWN_IMAGES !== undefined && env.BENCH_STORE_KNOWN_IMAGES !== '' ? { storeKnownImages: env.BENCH_STORE_KNOWN_IMAGES } : {}),
  };
}
