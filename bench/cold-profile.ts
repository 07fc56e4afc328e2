/**
 * Where a cold start's CPU time goes, by module: V8's CPU profile of fresh
 * processes running the bundles section's probe (import, first and second
 * invocation), each sample mapped through the bundle's source map to the
 * module it ran in. It is the attribution behind "Issue 22: the routes that
 * load the connectors" in docs/bench/analysis.md.
 *
 *   npm run bench:cold-profile                    # the default functions
 *   RUNS=5 npm run bench:cold-profile -- submit worker
 *   npm run bench:cold-profile -- read execute waited   # the submit's first execute on stores that answer
 *   npm run bench:cold-profile -- read overview sweeper # the two that send many Queries at once
 *
 * What is counted is what the bundles section's cold CPU counts: the samples
 * of the import and the first invocation, less those of the second (warm)
 * invocation, module by module, so work every invocation does (a provider
 * call, packing an item) cancels out and what is left is the first-time cost.
 * WINDOW=process counts every sample of the process instead.
 *
 * Two tables per function, in ms of samples (median over RUNS processes,
 * profiler overhead included, so compare rows, not totals, with the bundles
 * section):
 * - "self": where the CPU was, by package or project folder (`zod`,
 *   `lib/runtime`), with V8's own buckets (`(garbage collector)`, `(program)`);
 * - "by project module": each sample charged to the nearest project module on
 *   its stack (lib/, functions/, packages/), so zod's or ajv's time lands on
 *   the module that asked for it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TraceMap, originalPositionFor } from '@jridgewell/trace-mapping';
import { BUNDLE_ROOT, inputPackage } from '../infra/bundling.js';
import { buildColdBundles, COLD_TARGETS, coldTargetNames, type ColdTarget } from './lib/cold-targets.js';
import { distribution } from './lib/stats.js';
import { probe } from './sections/bundles.js';

const names = coldTargetNames(process.argv.slice(2), ['bare', 'read', 'submit', 'worker']);
const runs = Number(process.env.RUNS ?? 5);
const WHOLE_PROCESS = process.env.WINDOW === 'process';

interface ProfileNode {
  id: number;
  callFrame: { url: string; lineNumber: number; columnNumber: number; functionName: string };
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const maps = new Map<string, TraceMap | null>();
function traceMap(url: string): TraceMap | null {
  let m = maps.get(url);
  if (m === undefined) {
    try {
      const file = fileURLToPath(url);
      m = new TraceMap(readFileSync(`${file}.map`, 'utf8'), url);
    } catch {
      m = null;
    }
    maps.set(url, m);
  }
  return m;
}

/** The source module of a frame ('' when it is not a bundle's), relative to the project root. */
function sourceOf(frame: ProfileNode['callFrame']): string {
  if (!frame.url.startsWith('file:')) return '';
  const map = traceMap(frame.url);
  if (map === null) return '';
  const pos = originalPositionFor(map, { line: frame.lineNumber + 1, column: Math.max(0, frame.columnNumber) });
  if (pos.source === null) return '';
  // The map's sources resolve against its URL: absolute file URLs of the project's (and node_modules') files.
  return pos.source.startsWith('file:') ? relative(BUNDLE_ROOT, fileURLToPath(pos.source)) : pos.source;
}

const isProject = (source: string) => /^(lib|functions|packages|bench)\//.test(source) && !source.includes('node_modules/');
function bucket(frame: ProfileNode['callFrame'], source: string): string {
  if (source !== '') return inputPackage(source.replace(/^.*?(node_modules\/)/, '$1'));
  if (frame.url.startsWith('node:')) return '(node internals)';
  if (frame.url === '' && frame.functionName.startsWith('(')) return frame.functionName;
  return frame.url === '' ? '(native)' : '(other)';
}

interface Analysis {
  readonly self: Map<string, number>;
  readonly owner: Map<string, number>;
  /** Self time by leaf function (`name (module)`). */
  readonly leaf: Map<string, number>;
}

/** `firstEndUs`: samples stamped after it (the warm invocation) count negatively, unless WINDOW=process. */
function analyse(profile: Profile, firstEndUs: number): Analysis {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const sources = new Map<number, string>();
  const src = (id: number) => {
    let s = sources.get(id);
    if (s === undefined) {
      s = sourceOf((byId.get(id) as ProfileNode).callFrame);
      sources.set(id, s);
    }
    return s;
  };
  const self = new Map<string, number>();
  const owner = new Map<string, number>();
  const leafFn = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    const sign = WHOLE_PROCESS || at <= firstEndUs ? 1 : -1;
    const ms = (sign * (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0)) / 1000;
    const node = byId.get(id) as ProfileNode;
    if (node.callFrame.functionName === '(idle)') return;
    const leaf = bucket(node.callFrame, src(id));
    add(self, leaf, ms);
    add(leafFn, `${node.callFrame.functionName || '(anonymous)'} (${src(id) || node.callFrame.url || leaf})`, ms);
    let frame: number | undefined = id;
    while (frame !== undefined && !isProject(src(frame))) frame = parent.get(frame);
    add(owner, frame !== undefined ? src(frame) : `(no project frame: ${leaf})`, ms);
  });
  return { self, owner, leaf: leafFn };
}

const work = mkdtempSync(join(tmpdir(), 'aip-cold-profile-'));
// The stores of the submit rows start only when one of them runs; their bundles are built for their base URLs.
const bundles = await buildColdBundles(names, work);
try {
  const results = new Map<string, (Analysis & { cpu: number })[]>();
  for (let i = 0; i < runs; i++) {
    for (const n of names) {
      const t = COLD_TARGETS[n] as ColdTarget;
      const dir = join(work, `prof-${n}-${i}`);
      const events = t.fresh?.();
      const sample = await probe(bundles.file(n), t.handler, events?.first ?? t.event(), bundles.envFor(n), {
        execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=200'],
        ...(events !== undefined ? { warmEvent: events.warm } : {}),
      });
      const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile')) as string;
      const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
      const cpu = sample.import_cpu_ms + Math.max(0, sample.first_cpu_ms - sample.warm_cpu_ms);
      results.set(n, [...(results.get(n) ?? []), { ...analyse(profile, sample.first_end_us), cpu }]);
    }
  }
  const median = (xs: number[]) => distribution(xs).p50;
  const table = (title: string, pick: (r: Analysis) => Map<string, number>, top = Number.POSITIVE_INFINITY) => {
    const keys = new Set<string>();
    for (const n of names) for (const r of results.get(n) ?? []) for (const k of pick(r).keys()) keys.add(k);
    const rows = [...keys].map((k) => ({ k, v: names.map((n) => median((results.get(n) ?? []).map((r) => pick(r).get(k) ?? 0))) }));
    rows.sort((a, b) => Math.max(...b.v.map(Math.abs)) - Math.max(...a.v.map(Math.abs)));
    const lines = [`### ${title}`, '', `| module | ${names.join(' | ')} |`, `|---|${names.map(() => '---:').join('|')}|`];
    for (const r of rows.filter((x) => Math.max(...x.v.map(Math.abs)) >= 0.5).slice(0, top))
      lines.push(`| ${r.k} | ${r.v.map((v) => v.toFixed(1)).join(' | ')} |`);
    const total = names.map((n) => median((results.get(n) ?? []).map((r) => [...pick(r).values()].reduce((a, b) => a + b, 0))));
    lines.push(`| **samples, total** | ${total.map((v) => v.toFixed(1)).join(' | ')} |`);
    return lines.join('\n');
  };
  const cpu = names.map((n) => median((results.get(n) ?? []).map((r) => r.cpu)).toFixed(1));
  process.stdout.write(
    [
      `${runs} fresh processes per function (${process.version}), tracing off, profiled (--cpu-prof-interval=200 µs); medians in ms;`,
      WHOLE_PROCESS
        ? 'every sample of the process (WINDOW=process): import, first and second invocation.'
        : "samples of the import and first invocation less the second invocation's, as the cold CPU below counts.",
      '',
      `cold CPU ms under the profiler (import + first invocation − second): ${names.map((n, i) => `${n} ${cpu[i]}`).join(', ')}`,
      '',
      table('Self time by package or project folder', (r) => r.self),
      '',
      table('By project module (each sample charged to the nearest project frame on its stack)', (r) => r.owner),
      '',
      ...(process.env.TOP !== undefined ? [table(`Self time, the ${process.env.TOP} largest functions`, (r) => r.leaf, Number(process.env.TOP)), ''] : []),
    ].join('\n'),
  );
} finally {
  rmSync(work, { recursive: true, force: true });
  await bundles.stop();
}
