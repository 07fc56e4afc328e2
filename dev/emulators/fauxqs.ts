/** Starts fauxqs (an SQS emulator) in-process on a free loopback port. */
import { startFauxqs } from 'fauxqs';

export interface FauxqsHandle {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

export async function startSqsEmulator(port = 0): Promise<FauxqsHandle> {
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
