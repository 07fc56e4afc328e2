import { build } from 'esbuild';
import { esbuildOptions } from '../infra/bundling.js';
const [entry, target = 'protocol/'] = process.argv.slice(2);
const opts = esbuildOptions(entry, '/tmp/cold-exp/graph');
const r = await build({ ...opts, write: false, metafile: true, plugins: [...(opts.plugins ?? [])] });
const inputs = r.metafile.inputs;
const parent = new Map<string, string>();
const queue = Object.keys(inputs).filter((k) => k.endsWith(entry));
const seen = new Set(queue);
while (queue.length) {
  const cur = queue.shift()!;
  for (const imp of inputs[cur]?.imports ?? []) {
    if (imp.kind !== 'import-statement' || imp.external) continue;
    if (seen.has(imp.path)) continue;
    seen.add(imp.path); parent.set(imp.path, cur); queue.push(imp.path);
  }
}
for (const k of seen) {
  if (!k.includes(target)) continue;
  const chain = [k]; let p = parent.get(k); while (p) { chain.push(p); p = parent.get(p); }
  console.log(chain.map((c) => c.replace(/^.*?(lib|functions|packages|node_modules)\//, '$1/')).join(' <- '));
}
console.log('--- all static importers of target modules (within the graph)');
for (const k of seen) {
  if (k.includes(target)) continue;
  const hits = (inputs[k]?.imports ?? []).filter((i) => i.kind === 'import-statement' && i.path.includes(target)).map((i) => i.path.replace(/^.*\//, ''));
  if (hits.length) console.log(k.replace(/^.*?(lib|functions|packages|node_modules)\//, '$1/'), '->', hits.join(', '));
}
