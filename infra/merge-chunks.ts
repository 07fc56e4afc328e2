/**
 * The second step of a function's bundling: esbuild's split output regrouped
 * by Rollup into fewer files, the code unchanged.
 *
 * esbuild splits by reachability alone: a module goes into a chunk of its
 * own for each distinct set of entry points (the entry and every `import()`
 * target) that reach it, even when all of them are only ever loaded after a
 * module that already loaded it. A read route's cold start read 40 files and
 * an execute's 52, many of them under 1 KiB, and Node's ESM loader pays for
 * each file (resolution, stat, read, compile, link) whatever its size.
 * Rollup's chunking leaves out the entry points that can only run after a
 * module is in memory, so that module joins the chunk of the code that loads
 * it first: the same code, the same lazy boundaries, the same bytes loaded
 * by each route, in 4 files for a read and 11 for an execute.
 *
 * What Rollup gets is esbuild's output, each file a module: tree-shaking is
 * off (esbuild already shook; every statement stays, in order), nothing is
 * minified again, and no bare import is resolved (the bundle imports only
 * Node's built-ins). Source maps are chained: each file's esbuild map is
 * handed to Rollup with the file, so the final maps point at the project's
 * sources. Measured in docs/bench/analysis.md, "Issue 22: fewer files".
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { Metafile } from 'esbuild';
import type { OutputChunk, Plugin, RollupLog } from 'rollup';

/** Options of {@link mergeChunks}. */
export interface MergeChunksOptions {
  /** The folder esbuild wrote (`index.mjs`, `chunks/*.mjs` and their `.map` files). */
  readonly from: string;
  /** The bundle folder to write: `index.mjs`, `chunks/*.mjs` and their maps. */
  readonly to: string;
  /** esbuild's metafile of `from`, keys relative to `root`. */
  readonly metafile: Metafile;
  /** The folder the metafiles' keys are relative to (esbuild's `absWorkingDir`). */
  readonly root: string;
  /** The entry file name without extension (`index`). */
  readonly entryName: string;
}

/** A chunk's file name: its first module's name without esbuild's hash, then Rollup's. */
const chunkFileName = (chunk: { readonly name: string }) => `chunks/${chunk.name.replace(/-[A-Z0-9]{8}$/, '')}-[hash].mjs`;

/** Hands Rollup each esbuild output file with its source map, without the file's own map comment. */
function esbuildOutput(from: string): Plugin {
  return {
    name: 'aip-esbuild-output',
    load(id) {
      if (!id.startsWith(`${from}${sep}`)) return null;
      const code = readFileSync(id, 'utf8').replace(/\n\/\/# sourceMappingURL=[^\n]*\s*$/, '\n');
      const map = existsSync(`${id}.map`) ? readFileSync(`${id}.map`, 'utf8') : null;
      return { code, map };
    },
  };
}

/**
 * Regroups `from` into `to` and returns the metafile of what was written, in
 * esbuild's shape: each output's inputs are those of the esbuild files it
 * holds, its imports the files it imports (`import-statement`,
 * `dynamic-import`; Node's built-ins as `external`).
 */
export async function mergeChunks(options: MergeChunksOptions): Promise<Metafile> {
  const { rollup } = await import('rollup');
  const warnings: RollupLog[] = [];
  const bundle = await rollup({
    input: join(options.from, `${options.entryName}.mjs`),
    // esbuild bundled everything but Node's built-ins; anything else bare would be a bundling error.
    external: (id) => !id.startsWith('.') && !isAbsolute(id),
    treeshake: false,
    // The entry chunk may export more than the handlers (what other chunks import from it): no facade file in front of it.
    preserveEntrySignatures: 'allow-extension',
    plugins: [esbuildOutput(options.from)],
    onLog: (level, log) => {
      // esbuild keeps a named import of a built-in that its module no longer uses; Rollup says so, nothing more.
      if (level === 'warn' && log.code !== 'UNUSED_EXTERNAL_IMPORT') warnings.push(log);
    },
  });
  let output: Awaited<ReturnType<typeof bundle.write>>['output'];
  try {
    ({ output } = await bundle.write({
      dir: options.to,
      format: 'es',
      entryFileNames: `${options.entryName}.mjs`,
      chunkFileNames: chunkFileName,
      sourcemap: true,
      sourcemapExcludeSources: true,
      // A source that is not a file (esbuild's virtual modules, `aip-http:http`) resolved against the folder esbuild
      // wrote: named as esbuild's own map named it, not by a path into that folder, which is gone after the build.
      sourcemapPathTransform: (source, mapFile) => {
        const at = resolve(dirname(mapFile), source);
        return at.startsWith(`${options.from}${sep}`) ? relative(options.from, at).replace(/^chunks\//, '') : source;
      },
      hoistTransitiveImports: false,
      generatedCode: { preset: 'es2015', constBindings: true },
    }));
  } finally {
    await bundle.close();
  }
  if (warnings.length > 0) throw new Error(`merging the chunks warned: ${warnings.map((w) => `${w.code ?? ''} ${w.message}`).join('; ')}`);

  const key = (file: string) => relative(options.root, join(options.to, file));
  const written = new Set(output.map((o) => o.fileName));
  const importOf = (kind: 'import-statement' | 'dynamic-import') => (p: string) =>
    written.has(p) ? { path: key(p), kind } : { path: p, kind, external: true };
  const outputs: Metafile['outputs'] = {};
  for (const item of output) {
    const bytes = statSync(join(options.to, item.fileName)).size;
    if (item.type === 'asset') {
      outputs[key(item.fileName)] = { bytes, inputs: {}, imports: [], exports: [] };
      continue;
    }
    const chunk: OutputChunk = item;
    const inputs: Metafile['outputs'][string]['inputs'] = {};
    for (const id of Object.keys(chunk.modules)) {
      const held = options.metafile.outputs[relative(options.root, id)];
      if (held === undefined) throw new Error(`merging the chunks: ${id} is not in esbuild's metafile`);
      for (const [input, { bytesInOutput }] of Object.entries(held.inputs)) {
        inputs[input] = { bytesInOutput: (inputs[input]?.bytesInOutput ?? 0) + bytesInOutput };
      }
    }
    // The entry point esbuild named for the file the chunk stands for (the entry, or an import() target).
    const entryPoint = chunk.facadeModuleId !== null ? options.metafile.outputs[relative(options.root, chunk.facadeModuleId)]?.entryPoint : undefined;
    outputs[key(chunk.fileName)] = {
      bytes,
      inputs,
      imports: [...chunk.imports.map(importOf('import-statement')), ...chunk.dynamicImports.map(importOf('dynamic-import'))],
      exports: chunk.exports,
      ...(entryPoint !== undefined ? { entryPoint } : {}),
    };
  }
  return { inputs: options.metafile.inputs, outputs };
}
