/**
 * Cold start of another tree's bundles against this tree's, in one run with
 * the processes interleaved, so background load falls on both alike. The
 * other tree is usually an earlier commit:
 *
 *   git archive <commit> | tar -x -C /tmp/before && ln -s "$PWD/node_modules" /tmp/before/node_modules
 *   npm run bench:compare-bundles -- /tmp/before --before-node-options=--enable-source-maps
 *
 * Each tree is bundled by its own infra/bundling.ts (`bundleFunction`, with
 * the local configuration's connectors) and run by this tree's probe
 * (bench/sections/bundles.ts: a fresh process; import, first and second
 * invocation). `--before-node-options` is the NODE_OPTIONS the other tree
 * deployed (it is also measured without them); this tree runs with the
 * NODE_OPTIONS the stack sets by default. The two "first invocation an
 * execute" rows are the bundles section's submit rows (`first-submit`): the
 * stores answer (DynamoDB Local, fauxqs, a loopback Secrets Manager endpoint:
 * `startSubmitStores`), each process submits two fresh executes, and both
 * sides' bundles are built for the base URLs those rows run with. RUNS (default 20) processes per
 * function and side; FUNCTIONS=<name>,<name> only the functions whose name
 * contains one of these (and the two bare handlers, the ratios' yardsticks); TRACING=1 runs every process with tracing on (as the
 * bundles section's "traced" columns), its invocations unsampled
 * (`Sampled=0` in the trace header, as the bundles section runs them: the
 * runtime's functions then never load the tracer, the bare handler loads it
 * at import); with SAMPLED=1 as well, sampled (`Sampled=1`: the tracer is
 * imported on the first invocation); STORE=1 runs every process against
 * DynamoDB Local with the stack's (empty) table (the bare handlers, the
 * yardsticks, excepted: they run as without it), so a read's invocations run
 * to their answer instead of failing at their first request: first and warm
 * then both make all of the read's requests (the operator overview's many
 * Queries), where against the refused endpoint a read stops at its first
 * failed request (or, for requests sent at once, after all of them). Prints a
 * markdown table of medians.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_CONFIG_FILE } from '../infra/aip-app.js';
import { loadInfraConfig, toDeploymentRuntimeConfig } from '../lib/config/deployment.js';
import { FUNCTION_ENV, POWERTOOLS_ENV } from '../lib/config/function-env.js';
import { authorizerEvent, mcpToolCallEvent, routeEvent, sqsEvent, submitEvent } from './lib/lambda-events.js';
import { distribution } from './lib/stats.js';
import { randomUUID } from 'node:crypto';
import { DEPLOYED_NODE_OPTIONS, functionEnv, probe, startSubmitStores, type SubmitStores } from './sections/bundles.js';

const args = process.argv.slice(2);
const beforeRoot = args.find((a) => !a.startsWith('--'));
if (beforeRoot === undefined) {
  process.stderr.write('usage: node --import tsx bench/compare-bundles.ts <other tree> [--before-node-options=<NODE_OPTIONS>]\n');
  process.exit(2);
}
const beforeNodeOptions = args.find((a) => a.startsWith('--before-node-options='))?.slice('--before-node-options='.length) ?? '';
const runs = Number(process.env.RUNS ?? 20);

const config = loadInfraConfig(DEFAULT_CONFIG_FILE);
const connectors = config.connectors.map(({ id }) => ({
  id,
  ...(config.connectorEndpoints[id] !== undefined ? { baseUrl: config.connectorEndpoints[id] } : {}),
}));
const tracing = process.env.TRACING === '1';
const sampled = tracing && process.env.SAMPLED === '1';
const env = {
  ...functionEnv(FUNCTION_ENV, POWERTOOLS_ENV, JSON.stringify(toDeploymentRuntimeConfig(config))),
  ...(tracing
    ? {
        POWERTOOLS_TRACE_ENABLED: 'true',
        _X_AMZN_TRACE_ID: `Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=${sampled ? 1 : 0}`,
        AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
      }
    : {}),
};

/** A submit row's events: a fresh execute for the first invocation and another for the warm one (`waitSeconds`: `Prefer: wait`). */
const freshSubmits = (waitSeconds?: number) => () => {
  const id = `bench-${randomUUID()}`;
  return { first: submitEvent({ id: `${id}-1`, waitSeconds }), warm: submitEvent({ id: `${id}-2`, waitSeconds }) };
};

interface CompareTarget {
  readonly name: string;
  readonly entry: string;
  readonly handler: string;
  readonly event: unknown;
  /** A submit row: on the stores that answer, with fresh events per process. */
  readonly fresh?: () => { readonly first: unknown; readonly warm: unknown };
}

const allTargets: CompareTarget[] = [
  { name: 'GET /v1/transactions', entry: 'functions/http/transactions.ts', handler: 'getTransactionHandler', event: routeEvent('getTransaction') },
  { name: 'GET /v1/actions/{id}', entry: 'functions/http/actions.ts', handler: 'getActionHandler', event: routeEvent('getAction') },
  { name: 'POST /v1/actions', entry: 'functions/http/actions.ts', handler: 'submitActionHandler', event: submitEvent() },
  {
    name: 'POST /v1/actions, first invocation an execute nobody waits on',
    entry: 'functions/http/actions.ts',
    handler: 'submitActionHandler',
    event: submitEvent(),
    fresh: freshSubmits(),
  },
  {
    name: 'POST /v1/actions, first invocation a waited execute',
    entry: 'functions/http/actions.ts',
    handler: 'submitActionHandler',
    event: submitEvent({ waitSeconds: 20 }),
    fresh: freshSubmits(20),
  },
  { name: 'GET /v1/capabilities', entry: 'functions/http/meta.ts', handler: 'listCapabilitiesHandler', event: routeEvent('listCapabilities') },
  { name: 'GET /v1/approvals', entry: 'functions/http/approvals.ts', handler: 'listApprovalsHandler', event: routeEvent('listApprovals') },
  { name: 'GET /v1/operator/overview', entry: 'functions/http/operator.ts', handler: 'operatorOverviewHandler', event: routeEvent('operatorOverview') },
  {
    name: 'authorizer',
    entry: 'functions/authorizer.ts',
    handler: 'handler',
    event: authorizerEvent(),
  },
  { name: 'invoke worker', entry: 'functions/worker/invoke.ts', handler: 'handler', event: sqsEvent('invoke') },
  { name: 'POST /v1/mcp tools/call', entry: 'functions/http/mcp.ts', handler: 'mcpHandler', event: mcpToolCallEvent() },
  { name: 'bare Powertools handler', entry: 'bench/fixtures/bare-powertools-handler.ts', handler: 'handler', event: { id: 'bench-1' } },
  {
    name: 'bare Powertools idempotency',
    entry: 'bench/fixtures/powertools-idempotency-handler.ts',
    handler: 'handler',
    event: { idempotency_key: 'bench-1', amount: 1 },
  },
];
// FUNCTIONS=<name>,<name>: only the functions whose name contains one of these (the two bare handlers always run, for the ratios).
const only = process.env.FUNCTIONS?.split(',').filter((f) => f !== '');
const targets = allTargets.filter((t) => only === undefined || t.name.startsWith('bare ') || only.some((f) => t.name.includes(f)));
// STORE=1: DynamoDB Local answers (in memory, the stack's table created empty); every other endpoint stays refused.
const store =
  process.env.STORE === '1'
    ? await (async () => {
        const [{ startDynamoDbLocal }, { createTable }, { createDynamoDbClient }] = await Promise.all([
          import('../dev/emulators/dynamodb-local.js'),
          import('../lib/aws/dynamo/create-table.js'),
          import('../lib/aws/clients.js'),
        ]);
        const dynamo = await startDynamoDbLocal({});
        const ddb = createDynamoDbClient({ endpoint: dynamo.endpoint });
        try {
          await createTable(ddb, (env as Record<string, string>)[FUNCTION_ENV.tableName] as string);
        } finally {
          ddb.destroy();
        }
        return { env: { ...env, AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint }, stop: () => dynamo.stop() };
      })()
    : undefined;
const here = resolve(import.meta.dirname, '..');
const sides = [
  ...(beforeNodeOptions !== '' ? [{ side: `before (NODE_OPTIONS=${beforeNodeOptions})`, root: resolve(beforeRoot), nodeOptions: beforeNodeOptions }] : []),
  { side: 'before', root: resolve(beforeRoot), nodeOptions: '' },
  { side: 'now', root: here, nodeOptions: DEPLOYED_NODE_OPTIONS },
];

interface Built {
  readonly side: string;
  readonly name: string;
  readonly file: string;
  readonly kib: number;
  readonly handler: string;
  readonly event: unknown;
  readonly fresh?: CompareTarget['fresh'];
  readonly nodeOptions: string;
  readonly samples: Awaited<ReturnType<typeof probe>>[];
}
// A directory of its own: two runs at once (other worktrees) must not build into, or delete, each other's bundles.
const work = mkdtempSync(join(tmpdir(), 'aip-compare-bundles-'));
const built: Built[] = [];
const bundles = new Map<string, { file: string; kib: number }>();
const envOf = (b: Built) => (store !== undefined && !b.name.startsWith('bare ') ? store.env : env);
// The submit rows' stores, started only when one of them runs.
const stores: SubmitStores | undefined = targets.some((t) => t.fresh !== undefined) ? await startSubmitStores(config, env) : undefined;
try {
  for (const s of sides) {
    const bundling = (await import(join(s.root, 'infra/bundling.ts'))) as typeof import('../infra/bundling.js');
    for (const t of targets) {
      const onStores = t.fresh !== undefined && stores !== undefined;
      const key = `${s.root}:${t.entry}${onStores ? ':stores' : ''}`;
      let bundle = bundles.get(key);
      if (bundle === undefined) {
        const outdir = join(work, String(bundles.size));
        // Built for the AIP_RUNTIME_CONFIG it runs with, as a deployment's bundle is (a tree without the option ignores it).
        const runtimeConfig = ((onStores ? stores.env : env) as Record<string, string>)[FUNCTION_ENV.runtimeConfig];
        const { metafile } = await bundling.bundleFunction({
          entry: t.entry,
          outdir,
          connectors: onStores ? [...stores.connectors] : connectors,
          runtimeConfig,
        });
        const entry = bundling.entryOutput(metafile);
        const bytes = bundling.staticallyLoaded(metafile, entry).reduce((n, k) => n + (metafile.outputs[k]?.bytes ?? 0), 0);
        bundle = { file: join(bundling.BUNDLE_ROOT, entry), kib: Math.round(bytes / 1024) };
        bundles.set(key, bundle);
      }
      built.push({
        side: s.side,
        name: t.name,
        ...bundle,
        handler: t.handler,
        event: t.event,
        ...(t.fresh !== undefined ? { fresh: t.fresh } : {}),
        nodeOptions: s.nodeOptions,
        samples: [],
      });
    }
  }
  for (let i = 0; i < runs; i++) {
    for (const b of built) {
      const events = b.fresh?.();
      const probeEnv = events !== undefined && stores !== undefined ? { ...env, ...stores.env } : envOf(b);
      b.samples.push(
        await probe(b.file, b.handler, events?.first ?? b.event, probeEnv, {
          nodeOptions: b.nodeOptions,
          ...(events !== undefined ? { warmEvent: events.warm } : {}),
        }),
      );
    }
  }
} finally {
  await stores?.stop();
}

const median = (xs: number[]) => Math.round(distribution(xs).p50 * 10) / 10;
const lines = [
  `Interleaved, ${runs} fresh processes per function and side (${process.version}), tracing ${tracing ? `on, ${sampled ? 'sampled' : 'unsampled'}` : 'off'}${store !== undefined ? ', DynamoDB Local answering' : ''}; medians.`,
  '',
  '| function (first invocation) | side | KiB at import | import ms | compose ms | cold ms | cold CPU ms | × bare (CPU) | × bare idempotency (CPU) | warm CPU ms | import + first CPU ms | first answer |',
  '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
];
const coldCpu = (b: Built) => b.samples.map((s) => s.import_cpu_ms + Math.max(0, s.first_cpu_ms - s.warm_cpu_ms));
/** The median cold CPU of a bare handler on the same side: the ratios' yardsticks. */
const yardstick = (side: string, name: string) => {
  const b = built.find((x) => x.side === side && x.name === name);
  return b === undefined ? Number.NaN : distribution(coldCpu(b)).p50;
};
for (const t of targets) {
  for (const b of built.filter((x) => x.name === t.name)) {
    const compose = b.samples.map((s) => Math.max(0, s.first_ms - s.warm_ms));
    const cpu = coldCpu(b);
    const ratio = (name: string) => (distribution(cpu).p50 / yardstick(b.side, name)).toFixed(2);
    lines.push(
      `| ${t.name} | ${b.side} | ${b.kib} | ${median(b.samples.map((s) => s.import_ms))} | ${median(compose)} | ${median(b.samples.map((s, i) => s.import_ms + (compose[i] as number)))} | ${median(cpu)} | ${ratio('bare Powertools handler')} | ${ratio('bare Powertools idempotency')} | ${median(b.samples.map((s) => s.warm_cpu_ms))} | ${median(b.samples.map((s) => s.import_cpu_ms + s.first_cpu_ms))} | ${[...new Set(b.samples.map((s) => s.outcome))].join(' / ')} |`,
    );
  }
}
process.stdout.write(`${lines.join('\n')}\n`);
rmSync(work, { recursive: true, force: true });
await store?.stop();
