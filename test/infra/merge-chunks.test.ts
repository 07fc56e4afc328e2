/**
 * The second step of the bundling (infra/merge-chunks.ts): esbuild's split
 * output regrouped by Rollup. On a fixture whose entry shares a module with
 * two lazily imported ones, and those two share another: the regrouped bundle
 * has fewer files, runs its modules in the same order with the same results,
 * keeps each lazy boundary, describes itself in esbuild's metafile shape, and
 * its source maps still lead to the fixture's sources.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { originalPositionFor, TraceMap } from '@jridgewell/trace-mapping';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_ENTRY_NAME, BUNDLE_ROOT, entryOutput, esbuildOptions, staticallyLoaded } from '../../infra/bundling.js';
import { mergeChunks } from '../../infra/merge-chunks.js';

const FIXTURE = 'test/infra/fixtures/merge';
const work = mkdtempSync(join(tmpdir(), 'aip-merge-test-'));
const split = join(work, 'split');
const merged = join(work, 'merged');
let before: Metafile;
let after: Metafile;

beforeAll(async () => {
  before = (await build(esbuildOptions(`${FIXTURE}/entry.ts`, split))).metafile as Metafile;
  after = await mergeChunks({ from: split, to: merged, metafile: before, root: BUNDLE_ROOT, entryName: BUNDLE_ENTRY_NAME });
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const code = (m: Metafile) => Object.keys(m.outputs).filter((k) => k.endsWith('.mjs'));
const inputsOf = (m: Metafile, outputs: readonly string[]) => new Set(outputs.flatMap((o) => Object.keys(m.outputs[o]?.inputs ?? {})));
const outputOf = (m: Metafile, input: string) => code(m).find((k) => Object.hasOwn(m.outputs[k]?.inputs ?? {}, input)) as string;

/** Imports a bundle's entry afresh and runs all of it: what each export answered and the order its modules ran in. */
async function run(folder: string): Promise<{ readonly answers: string[]; readonly order: string[] }> {
  const g = globalThis as { __mergeFixtureLog?: string[] };
  g.__mergeFixtureLog = [];
  const m = (await import(pathToFileURL(join(folder, `${BUNDLE_ENTRY_NAME}.mjs`)).href)) as Record<string, () => string | Promise<string>>;
  const answers = [await (m.hello as () => string)(), await (m.lazyLeft as () => Promise<string>)(), await (m.lazyRight as () => Promise<string>)()];
  return { answers, order: [...g.__mergeFixtureLog] };
}

describe('merging the chunks', () => {
  it('writes fewer files: the module the entry shares with the lazy ones joins the entry; the one only the two lazy modules share stays apart', () => {
    expect(code(before)).toHaveLength(5);
    expect(code(after)).toHaveLength(4);
    const entry = entryOutput(after);
    expect(outputOf(after, `${FIXTURE}/shared.ts`)).toBe(entry);
    expect(outputOf(after, `${FIXTURE}/log.ts`)).toBe(entry);
    const pair = outputOf(after, `${FIXTURE}/pair.ts`);
    expect(pair).not.toBe(entry);
    expect(pair).not.toBe(outputOf(after, `${FIXTURE}/left.ts`));
    expect(pair).not.toBe(outputOf(after, `${FIXTURE}/right.ts`));
  });

  it('runs the same modules in the same order, with the same answers', async () => {
    const a = await run(split);
    const b = await run(merged);
    expect(b).toEqual(a);
    expect(b.order).toEqual(['shared', 'entry', 'pair', 'left', 'right']);
    expect(b.answers[1]).toContain('pair of left and right');
  });

  it('keeps each lazy boundary: what the entry loads at import holds neither lazy module nor what only they use', () => {
    const atImport = inputsOf(after, staticallyLoaded(after, entryOutput(after)));
    for (const lazy of ['left.ts', 'right.ts', 'pair.ts']) expect(atImport.has(`${FIXTURE}/${lazy}`), lazy).toBe(false);
    const dynamic = after.outputs[entryOutput(after)]?.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path);
    expect(dynamic?.sort()).toEqual([outputOf(after, `${FIXTURE}/left.ts`), outputOf(after, `${FIXTURE}/right.ts`)].sort());
  });

  it("describes what it wrote in esbuild's metafile shape: every input once, imports between written files or of built-ins, the entry point named", () => {
    expect(inputsOf(after, code(after))).toEqual(inputsOf(before, code(before)));
    const written = new Set(readdirSync(merged, { recursive: true }).map((f) => String(f)));
    for (const [key, out] of Object.entries(after.outputs)) {
      expect(written.has(key.slice(key.indexOf('merged/') + 'merged/'.length)), key).toBe(true);
      for (const i of out.imports) {
        if (i.external === true) expect(i.path).toMatch(/^node:/);
        else expect(Object.keys(after.outputs)).toContain(i.path);
      }
    }
    expect(after.outputs[entryOutput(after)]?.entryPoint).toBe(before.outputs[entryOutput(before)]?.entryPoint);
    expect(after.outputs[entryOutput(after)]?.exports.sort()).toEqual(expect.arrayContaining(['hello', 'lazyLeft', 'lazyRight']));
  });

  it("chains the source maps: a line of the merged output maps to the fixture's source, and no map names the folder esbuild wrote", () => {
    const left = join(BUNDLE_ROOT, outputOf(after, `${FIXTURE}/left.ts`));
    const lines = readFileSync(left, 'utf8').split('\n');
    const line = lines.findIndex((l) => l.includes('the marker of left.ts'));
    const column = (lines[line] as string).indexOf('the marker of left.ts');
    const map = new TraceMap(readFileSync(`${left}.map`, 'utf8'), pathToFileURL(left).href);
    const pos = originalPositionFor(map, { line: line + 1, column });
    expect(pos.source).toBe(pathToFileURL(join(BUNDLE_ROOT, FIXTURE, 'left.ts')).href);
    for (const key of Object.keys(after.outputs).filter((k) => k.endsWith('.map'))) {
      const file = join(BUNDLE_ROOT, key);
      const { sources } = JSON.parse(readFileSync(file, 'utf8')) as { sources: string[] };
      for (const s of sources) expect(resolve(dirname(file), s).startsWith(split)).toBe(false);
    }
  });
});
