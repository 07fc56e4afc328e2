/**
 * Setup file of every vitest project: what the code under test writes
 * straight to stdout or stderr (the functions' Powertools logs: the Logger
 * writes through its own Console on the process streams) is held back, and
 * printed only when a test fails, under that test's name. A passing run shows
 * the test results and nothing else. Test code's own console calls are
 * vitest's business and are untouched.
 *
 * What is written between two tests (hooks, pollers in the background) goes
 * with the next test to end. A test that reads the output itself
 * (test/reliability/secret-leakage.isolated.test.ts) wraps the streams on top of this.
 */
import { beforeEach } from 'vitest';

type Write = typeof process.stdout.write;

interface Capture {
  readonly held: { readonly stream: 'stdout' | 'stderr'; readonly text: string }[];
  readonly stderr: (text: string) => void;
}

const KEY = Symbol.for('aip.test.capture-output');
const slot = globalThis as unknown as Record<typeof KEY, Capture | undefined>;

/** Installs the capture once per process (a project whose files share a process runs this file per file). */
function install(): Capture {
  const existing = slot[KEY];
  if (existing !== undefined) return existing;
  const originalStderr = process.stderr.write.bind(process.stderr) as (text: string) => boolean;
  const capture: Capture = { held: [], stderr: (text) => void originalStderr(text) };
  for (const name of ['stdout', 'stderr'] as const) {
    const stream = process[name];
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      capture.held.push({ stream: name, text: typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8') });
      const done = rest.find((r) => typeof r === 'function') as ((err?: Error | null) => void) | undefined;
      done?.();
      return true;
    }) as Write;
  }
  slot[KEY] = capture;
  return capture;
}

const capture = install();

beforeEach(({ task, onTestFinished }) => {
  // onTestFinished runs once the test's state is known (before any onTestFailed).
  onTestFinished(() => {
    const text = capture.held
      .splice(0)
      .map((h) => h.text)
      .join('');
    if (task.result?.state !== 'fail' || text.length === 0) return;
    capture.stderr(
      `\n--- output written during "${task.name}" (held back, shown because it failed) ---\n${text}${text.endsWith('\n') ? '' : '\n'}--- end ---\n`,
    );
  });
});
