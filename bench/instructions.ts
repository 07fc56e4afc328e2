/**
 * Cold start in instructions: what the bundles section's cold figure counts,
 * measured by valgrind (cachegrind, no cache simulation) instead of a clock,
 * so the machine's load does not move it. Issue 22's ratio (×1.3 of the bare
 * Powertools handler) is within the clock's run-to-run spread on a shared
 * machine; instruction counts repeat to a tenth of a percent, so a change of
 * a few percent shows.
 *
 *   npm run bench:instructions                          # bare, bare-stores, read, transactions, capabilities, mcp, execute, mcp-execute, write-floor, and the parts
 *   npm run bench:instructions -- bare read execute     # any of bench/lib/cold-targets.ts
 *   npm run bench:instructions -- bare-stores execute   # × bare-stores: the yardstick's read answered, as the execute's stores answer
 *   TRACING=1 npm run bench:instructions -- bare read   # tracing on, invocations unsampled (as the bundles section)
 *
 * Each function runs the bundles section's probe (bench/sections/bundles.ts)
 * under valgrind three times: import only, import + first + warm invocation,
 * and with a second warm invocation. Figures, in millions of instructions
 * (every thread), after subtracting the same runs of an empty bundle
 * (bench/fixtures/empty-handler.ts: Node's own start and the probe):
 * - import;
 * - warm: one warm invocation (third run less the second);
 * - cold: import + first invocation − warm, as the clock's cold figure;
 * - first − warm: what the first invocation adds (composition, code loaded
 *   on first use, first requests).
 * V8 picks its hash seed at start-up by testing random numbers for primality
 * (`HashSeed::InitializeRoots`, `detail::sprp`): that varies by several
 * million per process and is left out of every count.
 *
 * Two yardsticks: `bare`, the bare Powertools handler whose GetItem is
 * refused (as the store-refused rows' first store call is), and `bare-stores`,
 * the same handler reading an item DynamoDB Local returns (as the execute
 * rows' stores answer). Each row's ratio is printed to both; read a row
 * against the one whose store does what its own does. `write-floor` is that
 * handler doing the least an execute must (one conditional PutItem, one
 * SendMessage): the floor under the write routes.
 *
 * The parts (`empty`, `sdk`, `powertools`) split a function's count: `sdk` is
 * the DynamoDB client and document client with one GetItem, `powertools` the
 * Logger, Metrics and middy every function carries. What a runtime function
 * runs beyond both is the project's own code (with zod) and the builtins it
 * loads first. Needs valgrind (`apt-get install valgrind`).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { instructionsOf } from './lib/cachegrind.js';
import { buildColdBundles, COLD_TARGETS, coldTargetNames, type ColdTarget } from './lib/cold-targets.js';
import { probe } from './sections/bundles.js';

const DEFAULT = ['bare', 'bare-stores', 'read', 'transactions', 'capabilities', 'mcp', 'execute', 'mcp-execute', 'write-floor', 'sdk', 'powertools'];
const TRACED = {
  POWERTOOLS_TRACE_ENABLED: 'true',
  _X_AMZN_TRACE_ID: 'Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0',
  AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
};

try {
  await promisify(execFile)('valgrind', ['--version']);
} catch {
  process.stderr.write('bench:instructions needs valgrind on PATH (apt-get install valgrind)\n');
  process.exit(2);
}

const names = coldTargetNames(process.argv.slice(2), DEFAULT);
const all = [...new Set(['empty', ...names])];
const traced = process.env.TRACING === '1';

const work = mkdtempSync(join(tmpdir(), 'aip-instructions-'));
const bundles = await buildColdBundles(all, work);
try {
  const counts = new Map<string, { import: number; two: number; three: number; outcome: string }>();
  let k = 0;
  for (const n of all) {
    const t = COLD_TARGETS[n] as ColdTarget;
    const env = traced ? { ...bundles.envFor(n), ...TRACED } : bundles.envFor(n);
    const run = async (invocations: 0 | 2 | 3) => {
      const out = join(work, `cg-${k++}`);
      const first = t.fresh?.();
      const second = t.fresh?.();
      const sample = await probe(bundles.file(n), t.handler, first?.first ?? t.event(), env, {
        invocations,
        ...(first !== undefined ? { warmEvent: first.warm, warmEvent2: second?.first } : {}),
        wrapper: ['valgrind', '--tool=cachegrind', '--cache-sim=no', `--cachegrind-out-file=${out}`],
      });
      return { count: instructionsOf(readFileSync(out, 'utf8')) / 1e6, outcome: sample.outcome };
    };
    const two = await run(2);
    counts.set(n, { import: (await run(0)).count, two: two.count, three: (await run(3)).count, outcome: two.outcome });
    process.stderr.write(`  ${n}: done\n`);
  }
  const base = counts.get('empty') as { import: number; two: number; three: number };
  const rows = names.map((n) => {
    const c = counts.get(n) as { import: number; two: number; three: number; outcome: string };
    const warm = c.three - c.two - (base.three - base.two);
    const imp = c.import - base.import;
    const cold = c.two - base.two - warm;
    return { n, imp, warm, cold, first: cold - imp, outcome: c.outcome };
  });
  // The yardsticks measured in this run: the bare handler with its read refused, and with it answered.
  const yardsticks = ['bare', 'bare-stores'].flatMap((y) => {
    const cold = rows.find((r) => r.n === y)?.cold;
    return cold === undefined ? [] : [{ y, cold }];
  });
  const f = (x: number) => x.toFixed(1);
  process.stdout.write(
    [
      `Cold start in millions of instructions (valgrind cachegrind, ${process.version}, tracing ${traced ? 'on, invocations unsampled' : 'off'}), less an empty bundle's;`,
      'cold = import + first invocation − warm invocation, as the bundles section counts its clock.',
      '',
      `| function | import | first − warm | warm | cold |${yardsticks.map(({ y }) => ` × ${y} |`).join('')} first invocation |`,
      `|---|---:|---:|---:|---:|${yardsticks.map(() => '---:|').join('')}---|`,
      ...rows.map(
        (r) =>
          `| ${r.n} | ${f(r.imp)} | ${f(r.first)} | ${f(r.warm)} | **${f(r.cold)}** |${yardsticks.map(({ cold }) => ` ${(r.cold / cold).toFixed(3)} |`).join('')} ${r.outcome} |`,
      ),
      '',
      `empty bundle (subtracted): import ${f(base.import)}, import + two invocations ${f(base.two)}`,
      '',
    ].join('\n'),
  );
} finally {
  rmSync(work, { recursive: true, force: true });
  await bundles.stop();
}
