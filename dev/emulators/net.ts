import { createServer } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

/** Asks the OS for a free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Polls `probe` until it resolves truthy. This is readiness polling of an
 * external process (not a sleep standing in for synchronisation).
 */
export async function waitUntil(probe: () => Promise<boolean>, opts: { timeoutMs: number; intervalMs?: number; what: string }): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await probe()) return;
    } catch (err) {
      last = err;
      if (err instanceof Error && err.message.includes('exited during start')) throw err;
    }
    if (Date.now() > deadline) {
      throw new Error(`${opts.what} not ready after ${opts.timeoutMs} ms: ${String(last)}`);
    }
    await delay(opts.intervalMs ?? 100);
  }
}
