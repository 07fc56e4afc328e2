/**
 * The rules that let test files share one module graph per worker
 * (vitest.config.ts, `isolate: false` in `unit`, `infra` and `integration`):
 * a file that replaces a module runs isolated, and a file restores what it
 * stubs, so no later file in the same worker runs against its stubs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');

function testFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) testFiles(path, out);
    else if (entry.name.endsWith('.test.ts')) out.push(relative(ROOT, path));
  }
  return out;
}

const shared = testFiles(join(ROOT, 'test'))
  .filter((file) => !file.endsWith('.isolated.test.ts'))
  .map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));

/** Call sites, spelled as the code spells them (this file names them through a join, so it does not match itself). */
const call = (...parts: string[]) => parts.join('');

describe('test files that share a module graph', () => {
  it('finds the test files', () => {
    expect(shared.length).toBeGreaterThan(100);
  });

  it('replace no module: a file with vi.mock or vi.doMock is named *.isolated.test.ts', () => {
    const mocking = shared.filter(({ text }) => text.includes(call('vi.', 'mock(')) || text.includes(call('vi.', 'doMock(')));
    expect(mocking.map(({ file }) => file)).toEqual([]);
  });

  it('restore every mocked AWS client', () => {
    const unrestored = shared.filter(({ text }) => text.includes(call('mock', 'Client(')) && !text.includes('.restore()'));
    expect(unrestored.map(({ file }) => file)).toEqual([]);
  });

  it('unstub the environment they stub', () => {
    const unrestored = shared.filter(({ text }) => text.includes(call('vi.', 'stubEnv(')) && !text.includes(call('vi.', 'unstubAllEnvs(')));
    expect(unrestored.map(({ file }) => file)).toEqual([]);
  });

  it('return to real timers after fake ones', () => {
    const unrestored = shared.filter(({ text }) => text.includes(call('vi.', 'useFakeTimers(')) && !text.includes(call('vi.', 'useRealTimers(')));
    expect(unrestored.map(({ file }) => file)).toEqual([]);
  });
});
