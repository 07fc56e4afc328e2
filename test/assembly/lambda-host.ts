/**
 * A Lambda function of the assembly, run from its staged bundle as Lambda
 * would: one Node process (test/assembly/lambda-child.mjs) per execution
 * environment, started on the first invocation (the cold start), with the
 * function's environment as the template gives it (resolved) plus what the
 * Lambda service sets (`AWS_REGION`, `AWS_LAMBDA_FUNCTION_NAME`,
 * `_HANDLER`, `LAMBDA_TASK_ROOT`, credentials, ...), nothing of the test
 * process's own environment. One invocation at a time per environment; an
 * invocation that outlives the function's timeout ends its environment
 * ("Task timed out"), and the next one starts a new one.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REGION } from './template.js';

const CHILD = join(fileURLToPath(new URL('.', import.meta.url)), 'lambda-child.mjs');

export interface LambdaFunctionSpec {
  /** Logical ID in its stack. */
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  /** `index.handler`. */
  readonly handler: string;
  /** The staged bundle (the asset folder). */
  readonly codeDir: string;
  readonly timeoutSeconds: number;
  readonly memorySize: number;
  /** The template's variables, resolved. */
  readonly environment: Readonly<Record<string, string>>;
  readonly logFormat?: string;
  readonly applicationLogLevel?: string;
}

export class LambdaInvokeError extends Error {
  constructor(
    readonly functionId: string,
    readonly errorType: string,
    message: string,
  ) {
    super(`${functionId}: ${errorType}: ${message}`);
    this.name = 'LambdaInvokeError';
  }
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
}

export class LambdaFunction {
  /** Invocations started, and cold starts (new environments). */
  invocations = 0;
  coldStarts = 0;
  #child: ChildProcess | undefined;
  #ready: Promise<void> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #pending = new Map<number, Pending>();
  #next = 0;

  constructor(
    readonly spec: LambdaFunctionSpec,
    private readonly options: {
      /** AWS_ENDPOINT_URL of this function (its recording listener). */
      readonly awsEndpoint: string;
      /** Variables of the machine, not of the function (NODE_EXTRA_CA_CERTS for the loopback TLS). */
      readonly hostEnv?: Readonly<Record<string, string>>;
      readonly output: (text: string) => void;
    },
  ) {}

  /** Runs one invocation (queued behind the one in progress) and resolves with the handler's result. */
  invoke(event: unknown): Promise<unknown> {
    const run = this.#queue.then(
      () => this.#invokeNow(event),
      () => this.#invokeNow(event),
    );
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    this.#ready = undefined;
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  }

  #environment(): Record<string, string> {
    const s = this.spec;
    return {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      LANG: 'en_US.UTF-8',
      TZ: ':UTC',
      ...this.options.hostEnv,
      ...s.environment,
      AWS_REGION: REGION,
      AWS_DEFAULT_REGION: REGION,
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      AWS_LAMBDA_FUNCTION_NAME: s.name,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(s.memorySize),
      AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${s.name}`,
      AWS_LAMBDA_LOG_STREAM_NAME: `assembly/${this.coldStarts}`,
      ...(s.logFormat !== undefined ? { AWS_LAMBDA_LOG_FORMAT: s.logFormat } : {}),
      ...(s.applicationLogLevel !== undefined ? { AWS_LAMBDA_LOG_LEVEL: s.applicationLogLevel } : {}),
      AWS_ACCESS_KEY_ID: `ASIA${s.logicalId
        .toUpperCase()
        .replace(/[^A-Z0-9]/g, '')
        .slice(0, 16)}`,
      AWS_SECRET_ACCESS_KEY: 'assembly-secret',
      AWS_SESSION_TOKEN: 'assembly-session',
      AWS_XRAY_DAEMON_ADDRESS: '127.0.0.1:2000',
      AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR',
      AWS_ENDPOINT_URL: this.options.awsEndpoint,
      LAMBDA_TASK_ROOT: s.codeDir,
      _HANDLER: s.handler,
    };
  }

  #start(): Promise<void> {
    this.coldStarts++;
    const child = fork(CHILD, [], {
      cwd: this.spec.codeDir,
      env: this.#environment(),
      execArgv: (this.spec.environment.NODE_OPTIONS ?? '').split(' ').filter((a) => a !== ''),
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.#child = child;
    for (const stream of [child.stdout, child.stderr]) stream?.on('data', (chunk: Buffer) => this.options.output(chunk.toString('utf8')));
    const ready = new Promise<void>((resolve, reject) => {
      child.on('message', (message: { type: string; id?: number; ok?: boolean; value?: unknown; error?: { errorType: string; errorMessage: string } }) => {
        if (message.type === 'ready') resolve();
        else if (message.type === 'init_error') reject(new LambdaInvokeError(this.spec.logicalId, 'Runtime.InitError', message.error?.errorMessage ?? ''));
        else if (message.type === 'result' && message.id !== undefined) {
          const pending = this.#pending.get(message.id);
          this.#pending.delete(message.id);
          if (message.ok) pending?.resolve(message.value);
          else pending?.reject(new LambdaInvokeError(this.spec.logicalId, message.error?.errorType ?? 'Error', message.error?.errorMessage ?? ''));
        }
      });
      child.once('exit', (code, signal) => {
        const err = new LambdaInvokeError(this.spec.logicalId, 'Runtime.ExitError', `the environment exited (${signal ?? code})`);
        reject(err);
        for (const p of this.#pending.values()) p.reject(err);
        this.#pending.clear();
        if (this.#child === child) {
          this.#child = undefined;
          this.#ready = undefined;
        }
      });
    });
    return ready;
  }

  async #invokeNow(event: unknown): Promise<unknown> {
    this.invocations++;
    this.#ready ??= this.#start();
    try {
      await this.#ready;
    } catch (err) {
      this.#ready = undefined;
      throw err;
    }
    const child = this.#child as ChildProcess;
    const id = this.#next++;
    const timeoutMs = this.spec.timeoutSeconds * 1000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new LambdaInvokeError(this.spec.logicalId, 'Sandbox.Timedout', `Task timed out after ${this.spec.timeoutSeconds} seconds`));
        void this.stop();
      }, timeoutMs);
      this.#pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      child.send({ type: 'invoke', id, event, timeoutMs, functionArn: this.spec.arn });
    });
  }
}
