/**
 * Section "bundles": what a Lambda cold start of each function loads and how
 * long it takes, bundled exactly as deployed.
 *
 * Bundles. Every distinct entry module of the stack's functions
 * (infra/aip-functions.ts `aipFunctionDefinitions` for
 * infra/config.local.json) is bundled by infra/bundling.ts `bundleFunction`,
 * the code `cdk synth` runs: ESM with code splitting, the capability
 * registry precompiled for the enabled connectors. Functions that share an
 * entry module share its bundle. Beside them, three yardsticks bundled the
 * same way: the authorizer (a function of the stack), a bare handler made
 * idempotent with Powertools (bench/fixtures/powertools-idempotency-handler.ts)
 * and the bare Powertools handler of issue 22 (Logger, Metrics and Tracer,
 * their middy middlewares, one DynamoDB client built at init:
 * bench/fixtures/bare-powertools-handler.ts), the one every function's
 * ratio is printed against, tracing off and on.
 *
 * - `static_bytes`: the entry chunk plus every chunk it imports statically,
 *   transitively (esbuild's metafile): what Node reads, parses and evaluates
 *   before the handler can run. `total_bytes`: every chunk, the lazily
 *   imported ones included (what the first invocations may load).
 *   `first_invocation_bytes`: what the function's first invocation (the
 *   representative event below) adds to the static set, as Node reports it:
 *   the chunks a load hook sees in a separate, untimed run (a read route
 *   loads the Runtime's composition without its connector half; a worker or
 *   GET /v1/capabilities loads both).
 * - Variants of the API route bundle, measured the same way in the same run:
 *   `before` (one file, run-time ajv, node:http as an ES module: what
 *   NodejsFunction deployed),
 *   `deferred` (the deployed bundle behind an entry stub that imports the
 *   handler module on the first invocation: an option, not deployed) and
 *   `source-maps` (the deployed bundle run with --enable-source-maps, what
 *   the stack sets with `sourceMaps: true`) and
 *   `compile-cache` (the deployed bundle run with Node's compile cache,
 *   NODE_COMPILE_CACHE, filled by one untimed run beforehand: what shipping
 *   a cache written by the same Node binary would give; not deployed).
 * - Composition by package: esbuild's `bytesInOutput` of every input, grouped
 *   by npm package (project files by folder), for the statically loaded
 *   chunks and for the whole bundle.
 *
 * Cold start, in a fresh `node` process per run (Node's own start-up
 * excluded), with the function environment the stack sets (dummy values,
 * every AWS endpoint on the discard port of loopback, AWS_MAX_ATTEMPTS=1,
 * NODE_OPTIONS empty, as deployed by default):
 * - `import`: `await import(index.mjs)` (Lambda's INIT phase);
 * - `first`: the first invocation of the deployed handler with a
 *   representative event (the function's own route for an API function, an
 *   SQS record for a worker, a malformed bearer token for the authorizer):
 *   the handler builds its middleware chain and, for the runtime's functions,
 *   composes the Runtime (configuration, connectors, capability registry,
 *   stores, clients), then makes its first store call, which fails at once
 *   (connection refused, one attempt). The GET /v1/capabilities function
 *   answers 200 without any network.
 * - `warm`: the same invocation again in the same process; `first − warm` is
 *   the first-invocation composition, reported as `compose`.
 * - cold start = import + compose. Median over the runs; the runs go
 *   round-robin over the functions, so background load falls on all alike.
 * - The submit function's first invocation being an execute (issue 22,
 *   kind `first-submit`), waited (`Prefer: wait=20`: its attempt runs in the
 *   submit, attemptWhenWaited "inline") and not: the stores answer there
 *   (DynamoDB Local, fauxqs, a loopback Secrets Manager endpoint; see
 *   `Target.store`), and the warm invocation submits a second fresh execute.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import type { Metafile } from 'esbuild';
import { authorizerEvent, mcpToolCallEvent, routeEvent, sqsEvent, submitEvent } from '../lib/lambda-events.js';
import { distribution, percentile, ratio } from '../lib/stats.js';

const run = promisify(execFile);

export interface PackageBytes {
  readonly package: string;
  readonly bytes: number;
}

export interface ColdStartFigures {
  /** Median import ms. */
  readonly import_ms: number;
  /** Median first-invocation ms (composition + a failed store call). */
  readonly first_ms: number;
  /** Median second-invocation ms. */
  readonly warm_ms: number;
  /** Median of (first − warm) per process: the composition on the first invocation. */
  readonly compose_ms: number;
  /** Median of (import + first − warm) per process. */
  readonly cold_ms: number;
  readonly cold_ms_min: number;
  /** 90th percentile (nearest rank) of (import + first − warm). */
  readonly cold_ms_p90: number;
  readonly cold_ms_max: number;
  /**
   * Median of (import + first − warm) in CPU time of the process (user + system, every thread):
   * the work itself, which a loaded machine does not inflate as it does the wall clock.
   */
  readonly cold_cpu_ms: number;
  /** What the first invocation answered (status code, or the error's name). */
  readonly outcome: string;
}

export interface BundleFigures {
  readonly entry: string;
  /** The stack's functions that deploy this bundle (or the yardstick's name). */
  readonly functions: string[];
  /**
   * `runtime` (a function of the stack), `authorizer`, `yardstick` (the Powertools idempotency handler) or `bare` (the
   * bare Powertools handler); a variant of the API route bundle; `first-submit`: the submit function's first
   * invocation being an execute, waited or not, on a store that answers ({@link Target.store}).
   */
  readonly kind: 'runtime' | 'authorizer' | 'yardstick' | 'bare' | 'before' | 'deferred' | 'source-maps' | 'compile-cache' | 'first-submit';
  readonly handler: string;
  /** What the first invocation is (method + path, or event kind). */
  readonly invocation: string;
  readonly static_bytes: number;
  readonly static_gzip_bytes: number;
  /**
   * What the first invocation loads on top of `static_bytes`: the chunks the
   * handler imports on its first call, transitively (the Runtime's
   * composition; for a `deferred` bundle, the whole handler module too).
   * Lazy chunks that only some paths load (run-time ajv, the tracer, remote
   * connectors, the queues' and Scheduler's adapters) are not counted.
   */
  readonly first_invocation_bytes: number;
  /** `first_invocation_bytes` by package, largest first. */
  readonly first_invocation_packages: PackageBytes[];
  readonly total_bytes: number;
  readonly chunks: number;
  readonly build_ms: number;
  /** Statically loaded bytes by package, largest first. */
  readonly static_packages: PackageBytes[];
  /** Whole bundle by package, largest first. */
  readonly total_packages: PackageBytes[];
  /** Whether the bundle carries the precompiled registry (so never loads ajv's compiler). */
  readonly precompiled_registry: boolean;
  /** Median import ms (= cold.import_ms): Lambda's INIT phase. */
  readonly init_ms_p50?: number;
  /** Median first-invocation composition ms (= cold.compose_ms), billed in the first invocation. */
  readonly compose_ms_p50?: number;
  readonly cold?: ColdStartFigures;
  /**
   * The same with tracing on (POWERTOOLS_TRACE_ENABLED=true), the invocations unsampled (`Sampled=0`): the runtime's
   * functions then never import the tracer (they do on the first sampled invocation); the bare handler imports it at import.
   */
  readonly cold_traced?: ColdStartFigures;
  readonly error?: string;
}

export interface BundlesFigures {
  readonly runs: number;
  readonly esbuild_version: string;
  /** Rollup, which regroups esbuild's chunks (infra/merge-chunks.ts). */
  readonly rollup_version: string;
  readonly node_version: string;
  readonly bundles: BundleFigures[];
  /**
   * Ratios of the API route functions' median cold start to the yardsticks': the authorizer, the Powertools
   * idempotency handler, and the bare Powertools handler (tracing off; `to_bare_traced`: both traced).
   */
  readonly ratios: {
    readonly entry: string;
    readonly to_authorizer: number;
    readonly to_powertools: number;
    readonly to_bare?: number;
    readonly to_bare_traced?: number;
    /** The same two in CPU time. */
    readonly to_bare_cpu?: number;
    readonly to_bare_traced_cpu?: number;
  }[];
  /** Every function bundle's median cold start over the bare Powertools handler's, tracing off and on. */
  readonly per_function?: {
    readonly entry: string;
    readonly functions: string[];
    readonly to_bare: number;
    readonly to_bare_traced: number;
    readonly to_bare_cpu: number;
    readonly to_bare_traced_cpu: number;
  }[];
  readonly note: string;
}

/** The function environment infra/functions.ts sets, with dummy values and loopback endpoints. */
export function functionEnv(FUNCTION_ENV: Record<string, string>, POWERTOOLS_ENV: Record<string, string>, runtimeConfig: string): Record<string, string> {
  return {
    [POWERTOOLS_ENV.serviceName as string]: 'aip-runtime',
    [POWERTOOLS_ENV.metricsNamespace as string]: 'AIP/bench',
    [POWERTOOLS_ENV.logLevel as string]: 'ERROR',
    [POWERTOOLS_ENV.logLevelAlias as string]: 'ERROR',
    POWERTOOLS_LOGGER_LOG_EVENT: 'false',
    POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
    POWERTOOLS_TRACE_ENABLED: 'false',
    [FUNCTION_ENV.envName as string]: 'test',
    [FUNCTION_ENV.tableName as string]: 'aip-bench',
    [FUNCTION_ENV.invokeQueueUrl as string]: 'http://127.0.0.1:9/000000000000/aip-bench-invoke',
    [FUNCTION_ENV.reconcileQueueUrl as string]: 'http://127.0.0.1:9/000000000000/aip-bench-reconcile',
    [FUNCTION_ENV.reconcileQueueArn as string]: 'arn:aws:sqs:us-east-1:000000000000:aip-bench-reconcile',
    [FUNCTION_ENV.scheduleGroupName as string]: 'aip-bench',
    [FUNCTION_ENV.schedulerRoleArn as string]: 'arn:aws:iam::000000000000:role/aip-bench',
    [FUNCTION_ENV.runtimeConfig as string]: runtimeConfig,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
    AWS_MAX_ATTEMPTS: '1',
    AWS_LAMBDA_FUNCTION_NAME: 'aip-bench',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    IDEMPOTENCY_TABLE_NAME: 'aip-bench-idempotency',
  };
}

/**
 * The probe a fresh process runs: import, first invocation, second invocation.
 * Prints one JSON line; exits at once (open sockets of a failed call must not hold it).
 */
const PROBE = [
  // An answer that carries an action result (a submit) names its status and error code: what the first invocation did.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the probe's source text, whose template literals run in the child process
  'const actionOf = (body) => { try { const a = JSON.parse(body).action_result; return a && a.status ? ` ${a.status}${a.error && a.error.code ? ` (${a.error.code})` : ""}` : ""; } catch { return ""; } };',
  'const context = { functionName: "aip-bench", functionVersion: "$LATEST", invokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:aip-bench", memoryLimitInMB: "512", awsRequestId: "bench", logGroupName: "bench", logStreamName: "bench", callbackWaitsForEmptyEventLoop: true, getRemainingTimeInMillis: () => 29000, done() {}, fail() {}, succeed() {} };',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the probe's source text, whose template literals run in the child process
  'const outcome = (r) => (r && typeof r === "object" && "statusCode" in r ? String(r.statusCode) + actionOf(r.body) : r && typeof r === "object" && "batchItemFailures" in r ? `${r.batchItemFailures.length} failed` : "ok");',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the probe's source text, whose template literals run in the child process
  'const invoke = async (h, e) => { try { return outcome(await h(e, context)); } catch (err) { return `threw ${err && err.name}`; } };',
  // AIP_BENCH_TRACE_LOADS: a separate, untimed run that records the modules Node loads at import and in the first invocation.
  'const loaded = []; if (process.env.AIP_BENCH_TRACE_LOADS) (await import("node:module")).registerHooks({ load(url, ctx, next) { loaded.push(url); return next(url, ctx); } });',
  // CPU time of the process (every thread) beside wall time: on a loaded machine the wall clock also counts the wait for a core.
  'const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };',
  'const c0 = cpu(); const t0 = performance.now(); const m = await import(process.env.AIP_BENCH_BUNDLE); const t1 = performance.now(); const c1 = cpu(); const atImport = loaded.length;',
  'const h = m[process.env.AIP_BENCH_HANDLER]; if (typeof h !== "function") throw new Error("no handler " + process.env.AIP_BENCH_HANDLER);',
  // AIP_BENCH_INVOCATIONS (bench/instructions.ts): 0 stops after the import; 3 adds a second warm invocation (default 2).
  'const invocations = Number(process.env.AIP_BENCH_INVOCATIONS ?? 2);',
  'if (invocations === 0) { process.stdout.write(JSON.stringify({ import_ms: t1 - t0, import_cpu_ms: c1 - c0 })); process.exit(0); }',
  // first_end_us: when the first invocation ended, on the clock of a V8 CPU profile's timestamps (bench/cold-profile.ts splits samples by it).
  'const o1 = await invoke(h, JSON.parse(process.env.AIP_BENCH_EVENT)); const t2 = performance.now(); const c2 = cpu(); const firstEndUs = Number(process.hrtime.bigint() / 1000n);',
  // AIP_BENCH_EVENT_WARM: the second invocation's event when it must differ from the first (a fresh action: the same work, warm).
  'await invoke(h, JSON.parse(process.env.AIP_BENCH_EVENT_WARM ?? process.env.AIP_BENCH_EVENT)); const t3 = performance.now(); const c3 = cpu();',
  'if (invocations > 2) await invoke(h, JSON.parse(process.env.AIP_BENCH_EVENT_WARM2 ?? process.env.AIP_BENCH_EVENT_WARM ?? process.env.AIP_BENCH_EVENT));',
  'process.stdout.write(JSON.stringify({ import_ms: t1 - t0, first_ms: t2 - t1, warm_ms: t3 - t2, import_cpu_ms: c1 - c0, first_cpu_ms: c2 - c1, warm_cpu_ms: c3 - c2, first_end_us: firstEndUs, outcome: o1, loaded_at_import: loaded.slice(0, atImport), loaded_first: loaded.slice(atImport) })); process.exit(0);',
].join('\n');

interface Sample {
  import_ms: number;
  first_ms: number;
  warm_ms: number;
  /** The same spans in CPU time of the process (user + system, every thread). */
  import_cpu_ms: number;
  first_cpu_ms: number;
  warm_cpu_ms: number;
  /** When the first invocation ended, in µs of the monotonic clock that V8's CPU profiles stamp their samples with. */
  first_end_us: number;
  outcome: string;
  /** With `trace`: the module URLs Node loaded at import, and in the first invocation. */
  loaded_at_import: string[];
  loaded_first: string[];
}

/** The NODE_OPTIONS the stack sets by default (infra/functions.ts: `--enable-source-maps` only with `sourceMaps: true`). */
export const DEPLOYED_NODE_OPTIONS = '';

export async function probe(
  file: string,
  handler: string,
  event: unknown,
  env: Record<string, string>,
  options: {
    readonly nodeOptions?: string;
    readonly trace?: boolean;
    readonly execArgv?: readonly string[];
    readonly warmEvent?: unknown;
    /** A second warm invocation's event (`invocations: 3`); default the warm one. */
    readonly warmEvent2?: unknown;
    /** 0: import only; 3: a second warm invocation after the first two (default 2). */
    readonly invocations?: 0 | 2 | 3;
    /** A command that runs node (`['valgrind', ...]`), with a longer timeout. */
    readonly wrapper?: readonly string[];
  } = {},
): Promise<Sample> {
  const childEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    ...env,
    NODE_OPTIONS: options.nodeOptions ?? DEPLOYED_NODE_OPTIONS,
    ...(options.trace === true ? { AIP_BENCH_TRACE_LOADS: '1' } : {}),
    AIP_BENCH_BUNDLE: pathToFileURL(file).href,
    AIP_BENCH_HANDLER: handler,
    AIP_BENCH_EVENT: JSON.stringify(event),
    ...(options.warmEvent !== undefined ? { AIP_BENCH_EVENT_WARM: JSON.stringify(options.warmEvent) } : {}),
    ...(options.warmEvent2 !== undefined ? { AIP_BENCH_EVENT_WARM2: JSON.stringify(options.warmEvent2) } : {}),
    ...(options.invocations !== undefined ? { AIP_BENCH_INVOCATIONS: String(options.invocations) } : {}),
  };
  const [command, ...wrapperArgs] = options.wrapper ?? [];
  const nodeArgs = [...(options.execArgv ?? []), '--input-type=module', '-e', PROBE];
  const { stdout } = await run(command ?? process.execPath, command === undefined ? nodeArgs : [...wrapperArgs, process.execPath, ...nodeArgs], {
    env: childEnv,
    timeout: command === undefined ? 60_000 : 600_000,
  });
  const line = stdout.trim().split('\n').pop() ?? '';
  const sample = JSON.parse(line) as Sample;
  if (!Number.isFinite(sample.import_ms)) throw new Error(`unexpected output: ${stdout.slice(0, 200)}`);
  return sample;
}

function summarizeSamples(samples: readonly Sample[]): ColdStartFigures {
  const cold = distribution(samples.map((s) => s.import_ms + Math.max(0, s.first_ms - s.warm_ms)));
  const outcomes = [...new Set(samples.map((s) => s.outcome))];
  return {
    import_ms: distribution(samples.map((s) => s.import_ms)).p50,
    first_ms: distribution(samples.map((s) => s.first_ms)).p50,
    warm_ms: distribution(samples.map((s) => s.warm_ms)).p50,
    compose_ms: distribution(samples.map((s) => Math.max(0, s.first_ms - s.warm_ms))).p50,
    cold_ms: cold.p50,
    cold_ms_min: cold.min,
    cold_ms_p90: percentile(
      samples.map((s) => s.import_ms + Math.max(0, s.first_ms - s.warm_ms)).sort((a, b) => a - b),
      90,
    ),
    cold_ms_max: cold.max,
    cold_cpu_ms: distribution(samples.map((s) => s.import_cpu_ms + Math.max(0, s.first_cpu_ms - s.warm_cpu_ms))).p50,
    outcome: outcomes.join(' / '),
  };
}

/** Bytes by package of the given outputs, largest first. */
export function packageBytes(metafile: Metafile, outputs: readonly string[], inputPackage: (input: string) => string): PackageBytes[] {
  const by = new Map<string, number>();
  for (const out of outputs) {
    for (const [input, { bytesInOutput }] of Object.entries(metafile.outputs[out]?.inputs ?? {})) {
      const pkg = inputPackage(input);
      by.set(pkg, (by.get(pkg) ?? 0) + bytesInOutput);
    }
  }
  return [...by.entries()].map(([pkg, bytes]) => ({ package: pkg, bytes })).sort((a, b) => b.bytes - a.bytes);
}

type Variant = NonNullable<Target['variant']>;

/** How the ratio table names each variant of the API route bundle (one entry per variant, enforced by the type). */
const VARIANT_RATIO_LABELS: Record<Variant, string> = {
  before: 'before: one file, run-time ajv',
  deferred: 'handler module deferred, not deployed',
  'source-maps': 'with sourceMaps: true',
  'compile-cache': 'warm compile cache, not deployed',
};

const isVariant = (kind: BundleFigures['kind']): kind is Variant => Object.hasOwn(VARIANT_RATIO_LABELS, kind);

interface Target {
  /**
   * `before`: the same code as one file with run-time ajv (no splitting, no precompiled registry).
   * `deferred`: the deployed bundle, but its entry a stub that imports the handler module on the first invocation.
   * `source-maps`: the deployed bundle, run with NODE_OPTIONS=--enable-source-maps (the stack's `sourceMaps: true`).
   * `compile-cache`: the deployed bundle, run with NODE_COMPILE_CACHE pointing at a cache an untimed run filled.
   */
  readonly variant?: 'before' | 'deferred' | 'source-maps' | 'compile-cache';
  readonly entry: string;
  readonly functions: string[];
  readonly kind: BundleFigures['kind'];
  readonly handler: string;
  readonly invocation: string;
  readonly event: unknown;
  /**
   * The submit rows (`first-submit`): the stores answer (DynamoDB Local and fauxqs on loopback, the provider
   * credential from a loopback Secrets Manager endpoint), so an execute gets past its admission; each process submits two fresh
   * actions, the first invocation's and the warm one's ({@link fresh}), so `first − warm` is what the first one
   * loads and builds, not the requests both send.
   */
  readonly store?: true;
  /** Fresh events per process: the first invocation's and the warm one's. */
  readonly fresh?: () => { readonly first: unknown; readonly warm: unknown };
}

/** The bench's provider key: the loopback Secrets Manager endpoint's answer, which the loopback payments simulator accepts. */
const BENCH_SECRET_STRING = 'sk_bench_not_a_key';

/** A loopback Secrets Manager endpoint answering GetSecretValue with a fixed bench key, and counting its requests. */
async function startSecretEndpoint(): Promise<{ readonly endpoint: string; readonly requests: () => number; stop(): Promise<void> }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => {
      const name = 'aip/bench/payments/api-key';
      res.setHeader('content-type', 'application/x-amz-json-1.1');
      res.end(
        JSON.stringify({
          ARN: `arn:aws:secretsmanager:us-east-1:000000000000:secret:${name}-AbCdEf`,
          Name: name,
          SecretString: BENCH_SECRET_STRING,
          VersionId: '00000000-0000-0000-0000-000000000001',
          VersionStages: ['AWSCURRENT'],
          CreatedDate: 1_767_225_600,
        }),
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    stop: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** The submit rows' stores, running: the environment their probes add, and the connectors their bundles are built for. */
export interface SubmitStores {
  readonly env: Record<string, string>;
  /**
   * The connectors as the submit rows' bundles are built (`bundleFunction`'s `connectors`): with the base URLs their
   * environment sets (AIP_CONNECTOR_ENDPOINTS), as a deployment builds its bundles and sets its functions' environment
   * from the same configuration (infra/functions.ts). A bundle built for other base URLs than its function runs with
   * carries no precompiled entry for those connectors, so its composition builds them at once (compose-connectors.ts).
   */
  readonly connectors: readonly { readonly id: string; readonly baseUrl?: string }[];
  readonly secretRequests: () => number;
  stop(): Promise<void>;
}

/**
 * The submit rows' stores: DynamoDB Local (in memory) with the stack's table, fauxqs with the invoke queue, the
 * credential from a loopback Secrets Manager endpoint, and the provider: the payments simulator on loopback, which
 * accepts that credential, so a waited execute's attempt charges and settles succeeded (the whole path a first
 * execute runs). Every other endpoint stays the discard port (the Scheduler, the reconcile queue: refused at once).
 * `env` is the functions' environment (its table name).
 */
export async function startSubmitStores(config: import('../../lib/config/deployment.js').InfraConfig, env: Record<string, string>): Promise<SubmitStores> {
  const [{ toDeploymentRuntimeConfig }, fenv] = await Promise.all([import('../../lib/config/deployment.js'), import('../../lib/config/function-env.js')]);
  // What started, stopped again if a later step fails.
  const started: (() => Promise<void>)[] = [];
  try {
    const [
      { startDynamoDbLocal },
      { startSqsEmulator },
      { createTable },
      { createDynamoDbClient, createSqsClient },
      { CreateQueueCommand },
      { startPaymentsSimulator },
      { CreateTableCommand, PutItemCommand },
    ] = await Promise.all([
      import('../../dev/emulators/dynamodb-local.js'),
      import('../../dev/emulators/fauxqs.js'),
      import('../../lib/aws/dynamo/create-table.js'),
      import('../../lib/aws/clients.js'),
      import('@aws-sdk/client-sqs'),
      import('../../dev/payments-simulator/server.js'),
      import('@aws-sdk/client-dynamodb'),
    ]);
    const handles = await Promise.allSettled([
      startDynamoDbLocal({}),
      startSqsEmulator(0),
      startSecretEndpoint(),
      startPaymentsSimulator({ apiKeys: [BENCH_SECRET_STRING], controlRoutes: false }),
    ] as const);
    for (const h of handles) if (h.status === 'fulfilled') started.push(() => h.value.stop());
    const failed = handles.find((h) => h.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const [dynamo, sqs, secrets, provider] = handles.map((h) => (h as PromiseFulfilledResult<unknown>).value) as [
      Awaited<ReturnType<typeof startDynamoDbLocal>>,
      Awaited<ReturnType<typeof startSqsEmulator>>,
      Awaited<ReturnType<typeof startSecretEndpoint>>,
      Awaited<ReturnType<typeof startPaymentsSimulator>>,
    ];
    const ddb = createDynamoDbClient({ endpoint: dynamo.endpoint });
    const sqsClient = createSqsClient({ endpoint: sqs.endpoint });
    let invokeQueueUrl: string;
    try {
      await createTable(ddb, env[fenv.FUNCTION_ENV.tableName] as string);
      // The yardsticks' table (bench/fixtures: the bare handler reads item `bench-1`; Powertools Idempotency keys on `id`).
      const yardstick = env.IDEMPOTENCY_TABLE_NAME as string;
      await ddb.send(
        new CreateTableCommand({
          TableName: yardstick,
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      await ddb.send(new PutItemCommand({ TableName: yardstick, Item: { id: { S: 'bench-1' }, note: { S: 'the bare handler reads this item' } } }));
      invokeQueueUrl = (await sqsClient.send(new CreateQueueCommand({ QueueName: 'aip-bench-invoke' }))).QueueUrl as string;
    } finally {
      ddb.destroy();
      sqsClient.destroy();
    }
    // The bench configuration gates executes of payments behind an approval and holds no credential row for the
    // events' tenant: here an execute runs at once, with the tenant's credential row (one secret on the endpoint above).
    const deployment = toDeploymentRuntimeConfig(config);
    const runtimeConfig = {
      ...deployment,
      approvalPolicies: [],
      connectors: deployment.connectors.map((c) =>
        c.id === 'payments' ? { ...c, credentials: [{ handle: 'payments/api_key', tenantId: 'acme', secret: 'aip/bench/payments/api-key' }] } : c,
      ),
    };
    const endpoints: Record<string, string> = { ...config.connectorEndpoints, payments: provider.url };
    return {
      env: {
        [fenv.FUNCTION_ENV.runtimeConfig]: JSON.stringify(runtimeConfig),
        [fenv.FUNCTION_ENV.invokeQueueUrl]: invokeQueueUrl,
        AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
        AWS_ENDPOINT_URL_SQS: sqs.endpoint,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint,
        [fenv.OPTIONAL_FUNCTION_ENV.connectorEndpoints]: JSON.stringify(endpoints),
      },
      connectors: config.connectors.map(({ id }) => ({ id, ...(endpoints[id] !== undefined ? { baseUrl: endpoints[id] } : {}) })),
      secretRequests: secrets.requests,
      async stop() {
        await Promise.allSettled([secrets.stop(), sqs.stop(), provider.stop()]);
        await dynamo.stop();
      },
    };
  } catch (err) {
    await Promise.allSettled(started.map((stop) => stop()));
    throw err;
  }
}

export async function runBundlesSection(options: { runs: number }, log: (line: string) => void): Promise<BundlesFigures> {
  const [
    { aipFunctionDefinitions },
    { loadInfraConfig, toDeploymentRuntimeConfig },
    { DEFAULT_CONFIG_FILE },
    bundling,
    fenv,
    { ROUTES },
    esbuildPkg,
    rollupPkg,
  ] = await Promise.all([
    import('../../infra/aip-functions.js'),
    import('../../lib/config/deployment.js'),
    import('../../infra/aip-app.js'),
    import('../../infra/bundling.js'),
    import('../../lib/config/function-env.js'),
    import('../../lib/http/routes.js'),
    import('esbuild'),
    import('rollup'),
  ]);
  const config = loadInfraConfig(DEFAULT_CONFIG_FILE);
  const definitions = aipFunctionDefinitions(config);
  const connectors = config.connectors.map(({ id }) => ({
    id,
    ...(config.connectorEndpoints[id] !== undefined ? { baseUrl: config.connectorEndpoints[id] } : {}),
  }));
  const env = functionEnv(fenv.FUNCTION_ENV, fenv.POWERTOOLS_ENV, JSON.stringify(toDeploymentRuntimeConfig(config)));

  // One target per distinct entry module: for an API module, a GET route it serves if it has one (reads first).
  const targets: Target[] = [];
  const byEntry = new Map<string, typeof definitions>();
  for (const d of definitions) byEntry.set(d.entry, [...(byEntry.get(d.entry) ?? []), d]);
  for (const [entry, defs] of byEntry) {
    const functions = defs.map((d) => d.id);
    const api = defs.filter((d) => d.trigger?.kind === 'api');
    if (api.length > 0) {
      const withRoutes = api.map((d) => ({ d, route: (d.trigger as { routes: readonly string[] }).routes[0] as string }));
      // The MCP function is measured on a tools/call (its GET only answers 405); other API functions on a GET route they serve, if any.
      const pick =
        withRoutes.find(({ route }) => route === 'mcp') ??
        withRoutes.find(({ route }) => (ROUTES as Record<string, { method: string }>)[route]?.method === 'GET') ??
        withRoutes[0];
      const route = (ROUTES as Record<string, { method: string; path: string }>)[pick?.route as string];
      targets.push({
        entry,
        functions,
        kind: 'runtime',
        handler: pick?.d.handler ?? 'handler',
        invocation: pick?.route === 'mcp' ? 'POST /v1/mcp tools/call payments.charge.execute' : `${route?.method} ${route?.path}`,
        event: pick?.route === 'mcp' ? mcpToolCallEvent() : routeEvent(pick?.route as string),
      });
    } else if (defs.some((d) => d.trigger?.kind === 'authorizer')) {
      targets.push({
        entry,
        functions,
        kind: 'authorizer',
        handler: 'handler',
        invocation: 'REQUEST authorizer, malformed bearer token',
        event: authorizerEvent(),
      });
    } else if (defs.some((d) => d.consumes?.queue === 'invoke')) {
      targets.push({ entry, functions, kind: 'runtime', handler: 'handler', invocation: 'SQS invoke record', event: sqsEvent('invoke') });
    } else if (defs.some((d) => d.consumes?.queue === 'reconcile')) {
      targets.push({ entry, functions, kind: 'runtime', handler: 'handler', invocation: 'SQS reconcile record', event: sqsEvent('reconcile') });
    } else {
      targets.push({
        entry,
        functions,
        kind: 'runtime',
        handler: defs[0]?.handler ?? 'handler',
        invocation: 'scheduled event',
        event: { source: 'aws.events', 'detail-type': 'Scheduled Event', time: '2026-01-01T00:00:00Z', detail: {} },
      });
    }
  }
  // The submit function's first invocation being an execute (issue 22): with `Prefer: wait` its attempt runs in the
  // submit (attemptWhenWaited "inline", the deployed default), which loads the attempt code and the connector there;
  // without it, the admission and the invoke message. Both on a store that answers (Target.store), each process
  // submitting fresh actions.
  const submitDef = definitions.find((d) => d.trigger?.kind === 'api' && (d.trigger as { routes: readonly string[] }).routes.includes('submitAction'));
  if (submitDef !== undefined) {
    for (const waitSeconds of [20, undefined]) {
      const events = () => {
        const id = `bench-${randomUUID()}`;
        return { first: submitEvent({ id: `${id}-1`, waitSeconds }), warm: submitEvent({ id: `${id}-2`, waitSeconds }) };
      };
      targets.push({
        entry: submitDef.entry,
        functions: [`${submitDef.id}, first invocation ${waitSeconds !== undefined ? 'a waited execute' : 'an execute nobody waits on'}`],
        kind: 'first-submit',
        handler: submitDef.handler ?? 'handler',
        invocation:
          waitSeconds !== undefined
            ? `POST /v1/actions, Prefer: wait=${waitSeconds}, payments.charge execute: admission, the attempt inline, the charge on the loopback payments simulator`
            : 'POST /v1/actions, payments.charge execute: admission and the invoke message',
        event: events().first,
        store: true,
        fresh: events,
      });
    }
  }
  // Variants of the API route bundle, measured the same way in the same run (Target.variant says what each is).
  const apiTarget = targets.find((t) => t.entry === 'functions/http/actions.ts') ?? targets.find((t) => t.entry.startsWith('functions/http/'));
  const variants: readonly { readonly variant: Variant; readonly label: string }[] = [
    // Before/after: the bundle as NodejsFunction built it.
    { variant: 'before', label: 'as before (one file, run-time ajv)' },
    // The option of deferring the whole handler module to the first invocation.
    { variant: 'deferred', label: 'with the handler module deferred (not deployed)' },
    // The price of Node's source-map support (deployed only with `sourceMaps: true`).
    { variant: 'source-maps', label: 'with sourceMaps: true' },
    // What shipping Node's compile cache, written by the same binary, would give (docs/bench/analysis.md says why it is not).
    { variant: 'compile-cache', label: 'with a warm compile cache (not deployed)' },
  ];
  if (apiTarget !== undefined)
    for (const { variant, label } of variants) targets.push({ ...apiTarget, variant, kind: variant, functions: [`${apiTarget.functions[0]} ${label}`] });
  targets.push({
    entry: 'bench/fixtures/powertools-idempotency-handler.ts',
    functions: ['Powertools idempotency (bare handler)'],
    kind: 'yardstick',
    handler: 'handler',
    invocation: 'idempotent call (its DynamoDB write fails at once)',
    event: { idempotency_key: 'bench-1', amount: 1 },
  });
  targets.push({
    entry: 'bench/fixtures/bare-powertools-handler.ts',
    functions: ['bare Powertools handler (Logger, Metrics, Tracer, middy, a DynamoDB client)'],
    kind: 'bare',
    handler: 'handler',
    invocation: 'GetItem (fails at once)',
    event: { id: 'bench-1' },
  });

  // BENCH_BUNDLES_ONLY (comma-separated substrings of entries): measure only those, for a quick iteration (the yardsticks stay).
  const only = (process.env.BENCH_BUNDLES_ONLY ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (only.length > 0)
    targets.splice(
      0,
      targets.length,
      ...targets.filter(
        (t) =>
          t.kind === 'authorizer' ||
          t.kind === 'yardstick' ||
          t.kind === 'bare' ||
          only.some((o) => t.entry.includes(o) && (t.variant === undefined || only.includes(t.kind))),
      ),
    );
  // The submit rows' stores (startSubmitStores); without Java (DynamoDB Local) the other rows still run.
  let store: SubmitStores | undefined;
  if (targets.some((t) => t.store === true)) {
    try {
      store = await startSubmitStores(config, env);
    } catch (err) {
      log(`  submit rows left out: their stores did not start (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
      targets.splice(0, targets.length, ...targets.filter((t) => t.store !== true));
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'aip-bench-bundles-'));
  const built: {
    target: Target;
    file: string;
    nodeOptions: string;
    /** The environment of its probes (the compile-cache variant adds NODE_COMPILE_CACHE). */
    env: Record<string, string>;
    figures: Omit<BundleFigures, 'cold' | 'cold_traced'>;
    plain: Sample[];
    traced: Sample[];
    error?: string;
  }[] = [];
  try {
    for (const target of targets) {
      const outdir = join(dir, `${target.entry.replace(/[/.]/g, '_')}${target.variant ? `_${target.variant}` : ''}`);
      const t0 = performance.now();
      const { metafile } = await bundling.bundleFunction(
        target.variant === 'before'
          ? { entry: target.entry, outdir, splitting: false, builtinsThroughRequire: false }
          : {
              entry: target.entry,
              outdir,
              // The submit rows' bundles are built for the base URLs their functions run with, as a deployment's are.
              connectors: target.store === true && store !== undefined ? store.connectors : connectors,
              // Built for the AIP_RUNTIME_CONFIG it runs with, as a deployment's bundle is (functions/shared/validated-config.ts).
              runtimeConfig: (target.store === true && store !== undefined ? store.env : env)[fenv.FUNCTION_ENV.runtimeConfig],
              ...(target.variant === 'deferred' ? { deferHandlers: [target.handler] } : {}),
            },
      );
      const build_ms = Math.round(performance.now() - t0);
      const entryOut = bundling.entryOutput(metafile);
      const statics = bundling.staticallyLoaded(metafile, entryOut);
      const code = Object.keys(metafile.outputs).filter((k) => k.endsWith('.mjs'));
      const staticBytes = statics.reduce((n, k) => n + (metafile.outputs[k]?.bytes ?? 0), 0);
      const gzip = statics.reduce((n, k) => n + gzipSync(readFileSync(join(bundling.BUNDLE_ROOT, k)), { level: 9 }).length, 0);
      const file = join(bundling.BUNDLE_ROOT, entryOut);
      // What the first invocation loads beyond the static set, as Node reports it (an untimed run with a load hook).
      const nodeOptions = target.variant === 'source-maps' ? '--enable-source-maps' : DEPLOYED_NODE_OPTIONS;
      const probeEnv =
        target.variant === 'compile-cache'
          ? { ...env, NODE_COMPILE_CACHE: join(outdir, 'node-compile-cache') }
          : target.store === true && store !== undefined
            ? { ...env, ...store.env }
            : env;
      // Also fills the compile cache of the compile-cache variant (Node writes it as the process exits).
      const traceEvents = target.fresh?.();
      const loads = await probe(file, target.handler, traceEvents?.first ?? target.event, probeEnv, {
        nodeOptions,
        trace: true,
        ...(traceEvents !== undefined ? { warmEvent: traceEvents.warm } : {}),
      });
      const firstLoaded = new Set(loads.loaded_first.filter((url) => url.startsWith('file:')).map((url) => relative(bundling.BUNDLE_ROOT, fileURLToPath(url))));
      built.push({
        target,
        file,
        nodeOptions,
        env: probeEnv,
        plain: [],
        traced: [],
        figures: {
          entry: target.entry,
          functions: target.functions,
          kind: target.kind,
          handler: target.handler,
          invocation: target.invocation,
          static_bytes: staticBytes,
          static_gzip_bytes: gzip,
          first_invocation_bytes: [...firstLoaded].reduce((n, k) => n + (metafile.outputs[k]?.bytes ?? 0), 0),
          first_invocation_packages: packageBytes(metafile, [...firstLoaded], bundling.inputPackage),
          total_bytes: code.reduce((n, k) => n + (metafile.outputs[k]?.bytes ?? 0), 0),
          chunks: code.length,
          build_ms,
          static_packages: packageBytes(metafile, statics, bundling.inputPackage),
          total_packages: packageBytes(metafile, code, bundling.inputPackage),
          precompiled_registry: Object.keys(metafile.inputs).some((k) => k.startsWith('aip-precompiled:')),
        },
      });
      log(`  built ${target.entry}: ${(staticBytes / 1024).toFixed(0)} KiB loaded at import, ${code.length} chunks, in ${build_ms} ms`);
    }
    const tracedVariables = {
      POWERTOOLS_TRACE_ENABLED: 'true',
      _X_AMZN_TRACE_ID: 'Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0',
      AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
    };
    const tracedEnv = { ...env, ...tracedVariables };
    for (let i = 0; i < options.runs; i++) {
      for (const b of built) {
        if (b.error !== undefined) continue;
        try {
          const run = (probeEnv: Record<string, string>) => {
            const events = b.target.fresh?.();
            return probe(b.file, b.target.handler, events?.first ?? b.target.event, probeEnv, {
              nodeOptions: b.nodeOptions,
              ...(events !== undefined ? { warmEvent: events.warm } : {}),
            });
          };
          b.plain.push(await run(b.env));
          if (b.target.kind === 'runtime' || b.target.kind === 'authorizer' || b.target.kind === 'bare') b.traced.push(await run(tracedEnv));
          // The submit rows keep their store's environment when traced.
          else if (b.target.kind === 'first-submit') b.traced.push(await run({ ...b.env, ...tracedVariables }));
        } catch (err) {
          b.error = err instanceof Error ? err.message.split('\n').slice(0, 3).join(' ') : String(err);
          log(`  ${b.target.entry}: probe failed: ${b.error}`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    // One credential fetch per waited-submit process (the cache holds it for the warm invocation).
    if (store !== undefined) log(`  submit rows: the Secrets Manager endpoint served ${store.secretRequests()} GetSecretValue request(s)`);
    await store?.stop();
  }
  const bundles: BundleFigures[] = built.map((b) => ({
    ...b.figures,
    ...(b.plain.length > 0
      ? { cold: summarizeSamples(b.plain), init_ms_p50: summarizeSamples(b.plain).import_ms, compose_ms_p50: summarizeSamples(b.plain).compose_ms }
      : {}),
    ...(b.traced.length > 0 ? { cold_traced: summarizeSamples(b.traced) } : {}),
    ...(b.error !== undefined ? { error: b.error } : {}),
  }));
  for (const b of bundles)
    log(
      `  ${b.entry}: cold ${b.cold?.cold_ms ?? '–'} ms (import ${b.cold?.import_ms ?? '–'} + compose ${b.cold?.compose_ms ?? '–'}), first answered ${b.cold?.outcome ?? '–'}`,
    );
  const authorizer = bundles.find((b) => b.kind === 'authorizer')?.cold?.cold_ms;
  const powertools = bundles.find((b) => b.kind === 'yardstick')?.cold?.cold_ms;
  const bare = bundles.find((b) => b.kind === 'bare');
  const over = (x: number | undefined, y: number | undefined) => (x !== undefined && y !== undefined ? ratio(x, y) : Number.NaN);
  const ratios = bundles
    .filter((b) => b.kind !== 'authorizer' && b.kind !== 'yardstick' && b.kind !== 'bare' && b.entry.startsWith('functions/http/') && b.cold !== undefined)
    .map((b) => ({
      entry: isVariant(b.kind)
        ? `${b.entry} (${VARIANT_RATIO_LABELS[b.kind]})`
        : b.kind === 'first-submit'
          ? `${b.entry} (${b.functions.join(', ')})`
          : b.entry,
      to_authorizer: over(b.cold?.cold_ms, authorizer),
      to_powertools: over(b.cold?.cold_ms, powertools),
      to_bare: over(b.cold?.cold_ms, bare?.cold?.cold_ms),
      to_bare_traced: over(b.cold_traced?.cold_ms, bare?.cold_traced?.cold_ms),
      to_bare_cpu: over(b.cold?.cold_cpu_ms, bare?.cold?.cold_cpu_ms),
      to_bare_traced_cpu: over(b.cold_traced?.cold_cpu_ms, bare?.cold_traced?.cold_cpu_ms),
    }));
  const per_function = bundles
    .filter((b) => (b.kind === 'runtime' || b.kind === 'authorizer') && b.cold !== undefined)
    .map((b) => ({
      entry: b.entry,
      functions: b.functions,
      to_bare: over(b.cold?.cold_ms, bare?.cold?.cold_ms),
      to_bare_traced: over(b.cold_traced?.cold_ms, bare?.cold_traced?.cold_ms),
      to_bare_cpu: over(b.cold?.cold_cpu_ms, bare?.cold?.cold_cpu_ms),
      to_bare_traced_cpu: over(b.cold_traced?.cold_cpu_ms, bare?.cold_traced?.cold_cpu_ms),
    }));
  for (const r of per_function)
    log(`  ${r.entry}: ×${r.to_bare} the bare Powertools handler (traced ×${r.to_bare_traced}); CPU time ×${r.to_bare_cpu} (traced ×${r.to_bare_traced_cpu})`);
  return {
    runs: options.runs,
    esbuild_version: esbuildPkg.version,
    rollup_version: rollupPkg.VERSION,
    node_version: process.version,
    bundles,
    ratios,
    per_function,
    note:
      'cold = import + (first − warm invocation), per fresh process, median. Tracing off (POWERTOOLS_TRACE_ENABLED=false) unless in the "traced" columns, ' +
      "whose invocations are unsampled (Sampled=0 in the trace header): the runtime's functions load the tracer on the first sampled invocation only, so not there; the bare Powertools handler loads it at import. " +
      'Every store call fails at once against loopback (AWS_MAX_ATTEMPTS=1), so the first invocation is composition plus one refused connection, and warm is the refused connection alone. ' +
      'Except the submit rows ("first invocation a waited execute" / "an execute nobody waits on"): their stores answer (DynamoDB Local and fauxqs on loopback, the credential from a loopback Secrets Manager endpoint; ' +
      "the bench configuration without its approval policy on payments executes, with a credential row for the events' tenant), each process submits two fresh executes, and warm is the second: " +
      'first − warm is what the first one loads and builds (the Runtime, the admission, and for the waited one the attempt code, the connector, the credential client and the first fetch), ' +
      "not the requests both send; the waited one's attempt charges the payments simulator on loopback (with the credential from the Secrets Manager endpoint) and settles succeeded.",
  };
}

const kib = (b: number) => (b / 1024).toFixed(0);
const ms = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : (Math.round(x * 10) / 10).toString());

/** The summary line of the report. */
export function bundlesHeadline(b: BundlesFigures): string | undefined {
  const api = b.bundles.filter((x) => x.kind === 'runtime' && x.entry.startsWith('functions/http/') && x.cold !== undefined);
  const auth = b.bundles.find((x) => x.kind === 'authorizer');
  const pt = b.bundles.find((x) => x.kind === 'yardstick');
  const bare = b.bundles.find((x) => x.kind === 'bare');
  if (api.length === 0) return undefined;
  const sizes = api.map((x) => x.static_bytes);
  const colds = api.map((x) => (x.cold as ColdStartFigures).cold_ms);
  const deployed = new Set(api.map((x) => x.entry));
  const ratios = b.ratios
    .filter((r) => deployed.has(r.entry))
    .map((r) => r.to_powertools)
    .filter(Number.isFinite);
  const deployedRatios = b.ratios.filter((r) => deployed.has(r.entry));
  const toBare = deployedRatios.map((r) => r.to_bare ?? Number.NaN).filter(Number.isFinite);
  const toBareTraced = deployedRatios.map((r) => r.to_bare_traced ?? Number.NaN).filter(Number.isFinite);
  const bareText =
    bare?.cold !== undefined && toBare.length > 0
      ? `; bare Powertools handler ${ms(bare.cold.cold_ms)} ms (traced ${ms(bare.cold_traced?.cold_ms)}): API routes ×${ms(Math.min(...toBare))}–×${ms(Math.max(...toBare))}` +
        `${toBareTraced.length > 0 ? `, traced ×${ms(Math.min(...toBareTraced))}–×${ms(Math.max(...toBareTraced))}` : ''}`
      : '';
  return (
    `- **cold start**: API route functions load ${kib(Math.min(...sizes))}–${kib(Math.max(...sizes))} KiB at import (authorizer ${auth ? kib(auth.static_bytes) : '–'} KiB); ` +
    `import + first-invocation composition ${ms(Math.min(...colds))}–${ms(Math.max(...colds))} ms median (authorizer ${ms(auth?.cold?.cold_ms)} ms, bare Powertools idempotency handler ${ms(pt?.cold?.cold_ms)} ms` +
    `${ratios.length > 0 ? `; ×${ms(Math.min(...ratios))}–×${ms(Math.max(...ratios))} the latter` : ''})${bareText}; fresh Node processes, tracing off unless said.`
  );
}

/** The section's markdown. */
export function renderBundlesMarkdown(b: BundlesFigures): string[] {
  const lines: string[] = ['## 4. Cold start and bundles', ''];
  lines.push(
    `Every distinct entry module bundled by infra/bundling.ts (what \`cdk synth\` deploys: esbuild ${b.esbuild_version}, ESM with code splitting, minified, the chunks regrouped by Rollup ${b.rollup_version}, the registry's validators precompiled). ` +
      `"At import" = the entry chunk and every chunk it imports statically (what Node loads before the handler runs); "total" includes the lazily imported chunks. ` +
      `Cold start in a fresh \`node\` process (${b.node_version}; Node's own start-up excluded), median of ${b.runs}: ${b.note}`,
    '',
    '| functions | entry | first invocation | KiB at import | gzip KiB | KiB + first invocation | KiB total | chunks | import ms | compose ms | cold ms (min–max) | cold p90 ms | cold CPU ms | answered | traced: compose ms | traced: cold ms (p90) | traced: cold CPU ms |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|',
  );
  for (const x of b.bundles) {
    const c = x.cold;
    const t = x.cold_traced;
    lines.push(
      `| ${x.functions.join(', ')} | \`${x.entry}\` | ${x.invocation} | ${kib(x.static_bytes)} | ${kib(x.static_gzip_bytes)} | ${kib(x.first_invocation_bytes ?? 0)} | ${kib(x.total_bytes)} | ${x.chunks} | ${ms(c?.import_ms)} | ${ms(c?.compose_ms)} | ` +
        `${x.error ? `failed: ${x.error}` : `${ms(c?.cold_ms)} (${ms(c?.cold_ms_min)}–${ms(c?.cold_ms_max)})`} | ${ms(c?.cold_ms_p90)} | ${ms(c?.cold_cpu_ms)} | ${c?.outcome ?? '–'} | ${ms(t?.compose_ms)} | ` +
        `${t === undefined ? '–' : `${ms(t.cold_ms)} (${ms(t.cold_ms_p90)})`} | ${ms(t?.cold_cpu_ms)} |`,
    );
  }
  if (b.ratios.length > 0) {
    lines.push(
      '',
      'API route cold start (import + composition) relative to the yardsticks of the same run:',
      '',
      '| entry | × authorizer | × bare Powertools idempotency | × bare Powertools handler | × bare Powertools handler, both traced | CPU time: × bare | CPU time: × bare, both traced |',
      '|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of b.ratios)
      lines.push(
        `| \`${r.entry}\` | ${ms(r.to_authorizer)} | ${ms(r.to_powertools)} | ${ms(r.to_bare)} | ${ms(r.to_bare_traced)} | ${ms(r.to_bare_cpu)} | ${ms(r.to_bare_traced_cpu)} |`,
      );
  }
  if ((b.per_function ?? []).length > 0) {
    lines.push(
      '',
      'Every function relative to the bare Powertools handler (Logger, Metrics, Tracer, middy, one DynamoDB client built at init; issue 22 asks ≤ ×1.3), median cold start of the same run:',
      '',
      '| functions | entry | × bare, tracing off | × bare, both traced | CPU time: × bare, tracing off | CPU time: × bare, both traced |',
      '|---|---|---:|---:|---:|---:|',
    );
    for (const r of b.per_function ?? [])
      lines.push(
        `| ${r.functions.join(', ')} | \`${r.entry}\` | ${ms(r.to_bare)} | ${ms(r.to_bare_traced)} | ${ms(r.to_bare_cpu)} | ${ms(r.to_bare_traced_cpu)} |`,
      );
  }
  lines.push(
    '',
    'Bytes by package (esbuild `bytesInOutput`; project files by folder), at import, added by the first invocation and in total, largest ten:',
    '',
  );
  for (const x of b.bundles) {
    const top = (list: readonly PackageBytes[]) =>
      list
        .slice(0, 10)
        .map((p) => `${p.package} ${kib(p.bytes)}`)
        .join(', ');
    lines.push(
      `- \`${x.entry}\`${isVariant(x.kind) ? ` (${x.functions.join(', ')})` : ''}${x.precompiled_registry ? ' (precompiled registry)' : ''}: ` +
        `at import: ${top(x.static_packages)}; first invocation: ${top(x.first_invocation_packages ?? []) || 'nothing'}; total: ${top(x.total_packages)}.`,
    );
  }
  lines.push('');
  return lines;
}
