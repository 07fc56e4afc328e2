/**
 * Reads a cachegrind output file (`valgrind --tool=cachegrind --cache-sim=no`,
 * event `Ir`) for bench/instructions.ts.
 */

/**
 * The instructions a process executed, less V8's hash-seed search: at start-up
 * V8 tests random numbers for primality (`HashSeed::InitializeRoots` calling
 * `detail::sprp`) until one passes, which costs a different number of
 * instructions in every process (several million).
 */
export function instructionsOf(text: string): number {
  let total: number | undefined;
  let seed = 0;
  let inSeed = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) inSeed = /\bsprp\b/.test(line);
    else if (line.startsWith('summary:')) total = Number(line.slice('summary:'.length).trim().split(/\s+/)[0]);
    else if (inSeed && /^\d/.test(line)) seed += Number(line.split(' ')[1] ?? 0);
  }
  if (total === undefined || !Number.isFinite(total)) throw new Error('no summary line in the cachegrind output');
  return total - seed;
}
