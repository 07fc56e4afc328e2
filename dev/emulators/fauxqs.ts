/**
 * Starts fauxqs (an SQS emulator) in-process on a free loopback port.
 *
 * fauxqs imports `node:sqlite` (for a persistence mode not used here), and
 * Node 22 warns on stderr that SQLite is experimental the first time that
 * module loads. That one warning is dropped (every other warning is kept),
 * and fauxqs is loaded only after the filter is in place.
 */

export interface FauxqsHandle {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** Whether a warning is Node's "SQLite is an experimental feature" (and nothing else). */
export function isSqliteExperimentalWarning(warning: string | Error, typeOrOptions?: unknown): boolean {
  const type = typeof typeOrOptions === 'string' ? typeOrOptions : (typeOrOptions as { type?: string } | undefined)?.type;
  const name = typeof warning === 'string' ? type : warning.name;
  const message = typeof warning === 'string' ? warning : warning.message;
  return name === 'ExperimentalWarning' && message.startsWith('SQLite is an experimental feature');
}

let filtered = false;

function dropSqliteWarning(): void {
  if (filtered) return;
  filtered = true;
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (!isSqliteExperimentalWarning(warning, rest[0])) emit(warning, ...rest);
  }) as typeof process.emitWarning;
}

export async function startSqsEmulator(port = 0): Promise<FauxqsHandle> {
  dropSqliteWarning();
  const { startFauxqs } = await import('fauxqs');
  const server = await startFauxqs({ port, logger: false, host: '127.0.0.1' });
  const actual = (server as unknown as { port: number }).port;
  return {
    endpoint: `http://127.0.0.1:${actual}`,
    port: actual,
    stop: async () => {
      await server.stop();
    },
  };
}
