import { describe, expect, it } from 'vitest';
import { instructionsOf } from '../../../bench/lib/cachegrind.js';

const file = (sprp: number[]) =>
  [
    'desc: I1 cache: 32768 B, 64 B, 8-way associative',
    'cmd: node --input-type=module -e probe',
    'events: Ir',
    'fl=???',
    'fn=v8::internal::Scanner::Next()',
    '0 1000',
    'fn=detail::sprp(unsigned long long, unsigned long long)',
    ...sprp.map((n) => `0 ${n}`),
    'fn=v8::internal::HashSeed::InitializeRoots(v8::internal::Isolate*)',
    '0 50',
    'fl=./malloc/malloc.c',
    'fn=malloc',
    '12 300',
    `summary: ${1350 + sprp.reduce((a, b) => a + b, 0)}`,
    '',
  ].join('\n');

describe('instructionsOf (bench/lib/cachegrind.ts)', () => {
  it('is the summary less the hash-seed primality tests, however many the process ran', () => {
    expect(instructionsOf(file([4_000_000]))).toBe(1350);
    expect(instructionsOf(file([7_000_000, 3_000_000]))).toBe(1350);
    expect(instructionsOf(file([]))).toBe(1350);
  });

  it('keeps the counts of every other function, the seed initialisation that calls the tests included', () => {
    expect(instructionsOf(file([10]).replace('0 50', '0 60').replace('summary: 1360', 'summary: 1370'))).toBe(1360);
  });

  it('refuses a file without a summary (a run that did not finish)', () => {
    expect(() => instructionsOf('events: Ir\nfn=main\n0 10\n')).toThrow(/no summary/);
  });
});
