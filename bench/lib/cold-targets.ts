/**
 * The functions the cold-start tools run one by one (bench/cold-profile.ts,
 * bench/instructions.ts): each a bundle entry, the handler export, the first
 * invocation's event, and for the submit rows a fresh pair of executes per
 * process on stores that answer (bench/sections/bundles.ts
 * `startSubmitStores`). The bundles are built as a deployment builds them
 * (infra/bundling.ts `bundleFunction`), for the configuration they run with.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { DEFAULT_CONFIG_FILE } from '../../infra/aip-app.js';
import { BUNDLE_ROOT, bundleFunction, entryOutput } from '../../infra/bundling.js';
import { loadInfraConfig, toDeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import { FUNCTION_ENV, POWERTOOLS_ENV } from '../../lib/config/function-env.js';
import { functionEnv, startSubmitStores, type SubmitStores } from '../sections/bundles.js';
import { mcpToolCallEvent, routeEvent, sqsEvent, submitEvent } from './lambda-events.js';

export interface ColdTarget {
  readonly entry: string;
  readonly handler: string;
  readonly event: () => unknown;
  /** A fresh first and warm event per process (the submit rows: each execute a new action). Runs on the stores. */
  readonly fresh?: () => { readonly first: unknown; readonly warm: unknown };
  /** Runs on the stores that answer ({@link startSubmitStores}), as every target with `fresh` does. */
  readonly stores?: true;
  /** Variables Lambda would set besides the function environment (`execute-provisioned`: its initialization type). */
  readonly env?: Readonly<Record<string, string>>;
  /** Bundled as a function with provisioned concurrency is (infra/bundling.ts `provisionedInit`). */
  readonly provisionedInit?: true;
}

/** Whether a target runs on the stores that answer rather than on a refused endpoint. */
const onStores = (t: ColdTarget | undefined): boolean => t !== undefined && (t.fresh !== undefined || t.stores === true);

/** A fresh execute for each of a process's two invocations (`waitSeconds`: `Prefer: wait`). */
const freshSubmits = (waitSeconds?: number) => () => {
  const id = `bench-${randomUUID()}`;
  return { first: submitEvent({ id: `${id}-1`, waitSeconds }), warm: submitEvent({ id: `${id}-2`, waitSeconds }) };
};

/** A fresh MCP tools/call of an execute for each of a process's two invocations (nobody waiting: `Prefer: wait=0`). */
const freshToolCalls = () => {
  const key = `bench-${randomUUID()}`;
  return { first: mcpToolCallEvent({ idempotencyKey: `${key}-1` }), warm: mcpToolCallEvent({ idempotencyKey: `${key}-2` }) };
};

/** A fresh record for each of a process's two invocations of the write floor. */
const freshWrites = () => {
  const id = `bench-${randomUUID()}`;
  const input = { payment_id: 'pay_bench', amount: 100, currency: 'EUR' };
  return { first: { id: `${id}-1`, input }, warm: { id: `${id}-2`, input } };
};

/** A fresh Powertools idempotency key for each of a process's two invocations. */
const freshCharges = () => {
  const key = `bench-${randomUUID()}`;
  return { first: { idempotency_key: `${key}-1`, amount: 100 }, warm: { idempotency_key: `${key}-2`, amount: 100 } };
};

const scheduled = () => ({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: '2026-01-01T00:00:00Z', detail: {} });

/**
 * `submit` is the submit bundle with its stores refused (its first store call fails); `execute` and `waited` are the
 * bundles section's submit rows (`first-submit`): the stores answer, each process submits two fresh executes, nobody
 * waiting or `Prefer: wait=20` (the attempt inside the submit). `mcp` is a tools/call whose first store call fails;
 * `mcp-execute` the same tool on those stores, two fresh executes per process (a new idempotency key each), nobody
 * waiting. `bare` is issue 22's yardstick, its GetItem refused as the store-refused rows' first store call is;
 * `bare-stores` the same handler reading an item that DynamoDB Local returns, the yardstick for the rows whose stores
 * answer. `idempotency-stores` is the handler the issue first measured against (bench/fixtures/powertools-idempotency-handler.ts:
 * Powertools Idempotency alone), making a fresh key idempotent on DynamoDB Local (a conditional put, then the result).
 * `execute-provisioned` is `execute` in an environment Lambda initializes for provisioned concurrency: its import
 * builds the Runtime (functions/shared/production-runtime.ts), and its first − warm is what the first request pays.
 * `execute-spillover` is the same bundle in an environment Lambda starts on demand beyond the provisioned count.
 * `write-floor` is the bare handler doing the least an execute must (bench/fixtures/write-floor-handler.ts: one
 * conditional PutItem and one SendMessage, on stores that answer): the floor under the write routes' rows.
 */
export const COLD_TARGETS: Readonly<Record<string, ColdTarget>> = {
  read: { entry: 'functions/http/actions.ts', handler: 'getActionHandler', event: () => routeEvent('getAction') },
  transactions: { entry: 'functions/http/transactions.ts', handler: 'getTransactionHandler', event: () => routeEvent('getTransaction') },
  submit: { entry: 'functions/http/actions.ts', handler: 'submitActionHandler', event: submitEvent },
  execute: { entry: 'functions/http/actions.ts', handler: 'submitActionHandler', event: submitEvent, fresh: freshSubmits() },
  'execute-provisioned': {
    entry: 'functions/http/actions.ts',
    handler: 'submitActionHandler',
    event: submitEvent,
    fresh: freshSubmits(),
    env: { AWS_LAMBDA_INITIALIZATION_TYPE: 'provisioned-concurrency' },
    provisionedInit: true,
  },
  'execute-spillover': {
    entry: 'functions/http/actions.ts',
    handler: 'submitActionHandler',
    event: submitEvent,
    fresh: freshSubmits(),
    env: { AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand' },
    provisionedInit: true,
  },
  waited: { entry: 'functions/http/actions.ts', handler: 'submitActionHandler', event: submitEvent, fresh: freshSubmits(20) },
  capabilities: { entry: 'functions/http/meta.ts', handler: 'listCapabilitiesHandler', event: () => routeEvent('listCapabilities') },
  overview: { entry: 'functions/http/operator.ts', handler: 'operatorOverviewHandler', event: () => routeEvent('operatorOverview') },
  sweeper: { entry: 'functions/scheduled/sweeper.ts', handler: 'handler', event: scheduled },
  worker: { entry: 'functions/worker/invoke.ts', handler: 'handler', event: () => sqsEvent('invoke') },
  mcp: { entry: 'functions/http/mcp.ts', handler: 'mcpHandler', event: mcpToolCallEvent },
  'mcp-execute': { entry: 'functions/http/mcp.ts', handler: 'mcpHandler', event: mcpToolCallEvent, fresh: freshToolCalls },
  bare: { entry: 'bench/fixtures/bare-powertools-handler.ts', handler: 'handler', event: () => ({ id: 'bench-1' }) },
  'bare-stores': { entry: 'bench/fixtures/bare-powertools-handler.ts', handler: 'handler', event: () => ({ id: 'bench-1' }), stores: true },
  'write-floor': { entry: 'bench/fixtures/write-floor-handler.ts', handler: 'handler', event: () => freshWrites().first, fresh: freshWrites },
  'idempotency-stores': {
    entry: 'bench/fixtures/powertools-idempotency-handler.ts',
    handler: 'handler',
    event: () => freshCharges().first,
    fresh: freshCharges,
  },
  // The parts, for bench/instructions.ts: nothing, the SDK of a read alone, the Powertools every function carries alone.
  empty: { entry: 'bench/fixtures/empty-handler.ts', handler: 'handler', event: () => ({}) },
  sdk: { entry: 'bench/fixtures/sdk-read-handler.ts', handler: 'handler', event: () => ({ id: 'bench-1' }) },
  powertools: { entry: 'bench/fixtures/powertools-base-handler.ts', handler: 'handler', event: () => ({}) },
};

/** The names given on the command line (or `defaults`), each checked against {@link COLD_TARGETS}. */
export function coldTargetNames(argv: readonly string[], defaults: readonly string[]): string[] {
  const names = argv.length > 0 ? [...argv] : [...defaults];
  for (const n of names) if (!(n in COLD_TARGETS)) throw new Error(`unknown function ${n} (one of ${Object.keys(COLD_TARGETS).join(', ')})`);
  return names;
}

export interface ColdBundles {
  /** The function environment a function's probes run with (with the stores' endpoints for the submit rows). */
  envFor(name: string): Record<string, string>;
  /** The bundle's entry file of a function. */
  file(name: string): string;
  /** Stops the submit rows' stores, if any were started. */
  stop(): Promise<void>;
}

/**
 * Builds one bundle per distinct entry of `names` under `work` (the submit rows' bundles apart, built for their
 * stores' base URLs), starting the stores when a submit row is among them.
 */
export async function buildColdBundles(names: readonly string[], work: string): Promise<ColdBundles> {
  const config = loadInfraConfig(DEFAULT_CONFIG_FILE);
  const connectors = config.connectors.map(({ id }) => ({
    id,
    ...(config.connectorEndpoints[id] !== undefined ? { baseUrl: config.connectorEndpoints[id] } : {}),
  }));
  const env = functionEnv(FUNCTION_ENV, POWERTOOLS_ENV, JSON.stringify(toDeploymentRuntimeConfig(config)));
  const stores: SubmitStores | undefined = names.some((n) => onStores(COLD_TARGETS[n])) ? await startSubmitStores(config, env) : undefined;
  const key = (n: string) => `${COLD_TARGETS[n]?.entry}${onStores(COLD_TARGETS[n]) ? ':stores' : ''}${COLD_TARGETS[n]?.provisionedInit ? ':provisioned' : ''}`;
  const files = new Map<string, string>();
  try {
    for (const n of names) {
      const t = COLD_TARGETS[n] as ColdTarget;
      if (files.has(key(n))) continue;
      const withStores = onStores(t) && stores !== undefined;
      const { metafile } = await bundleFunction({
        entry: t.entry,
        outdir: join(work, String(files.size)),
        connectors: withStores ? [...stores.connectors] : connectors,
        // Built for the AIP_RUNTIME_CONFIG it runs with, as a deployment's bundle is.
        runtimeConfig: (withStores ? stores.env : env)[FUNCTION_ENV.runtimeConfig],
        ...(t.provisionedInit ? { provisionedInit: true } : {}),
      });
      files.set(key(n), join(BUNDLE_ROOT, entryOutput(metafile)));
    }
  } catch (err) {
    await stores?.stop();
    throw err;
  }
  return {
    envFor: (n) => ({ ...env, ...(onStores(COLD_TARGETS[n]) && stores !== undefined ? stores.env : {}), ...COLD_TARGETS[n]?.env }),
    file: (n) => files.get(key(n)) as string,
    stop: async () => {
      await stores?.stop();
    },
  };
}
