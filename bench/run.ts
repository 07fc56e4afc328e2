/**
 * `npm run bench`: measures what users pay and wait for, prints a markdown
 * report and writes it, with the JSON figures, to docs/bench/latest.{md,json}.
 *
 * Sections (BENCH_SECTIONS=cost,peer,scaling,e2e,bundles selects some):
 * 1. cost     DynamoDB requests and capacity, SQS sends and Scheduler calls per action, per mode;
 * 2. peer     the same against Powertools idempotency (makeIdempotent + DynamoDB persistence);
 *    mcp      DynamoDB requests of an MCP call (POST /v1/mcp) beside the REST call it mirrors;
 * 5. scaling  cost as the table grows, and per receipt-chain length;
 * 3. e2e      HTTP submit → terminal result on the local stack at 1, 8 and 32 clients;
 * 4. bundles  bundle bytes loaded at cold start, composition by package, and cold start (import + first-invocation composition) per function, vs the authorizer and a bare Powertools-idempotency handler.
 *    credentials  Secrets Manager requests per 1,000 executes in one environment, with the credential cache and without;
 *    latency  where one execute's end-to-end time goes on the local stack, default vs tuned Prefer: wait polling;
 *    fairness a quiet tenant's latency behind another tenant's slow-provider backlog, oldest first vs a message group per tenant;
 *    awscost  USD per million executes on AWS (list prices) vs Powertools and Step Functions (run last).
 *
 * Sizes come from the environment (bench/lib/config.ts); BENCH_QUICK=1 is a
 * smoke run that writes to the temp folder instead of docs/bench.
 * Progress goes to stderr, the report to stdout.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
Error.stackTraceLimit = 60;

const { mkdirSync, readFileSync, writeFileSync } = await import('node:fs');
const { join, resolve } = await import('node:path');
const { readConfig } = await import('./lib/config.js');
const { currentLoad, machineInfo } = await import('./lib/machine.js');
const { renderMarkdown } = await import('./lib/report.js');
type Report = import('./lib/report.js').BenchReport;
type SectionId = import('./lib/config.js').SectionId;

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

async function main(): Promise<number> {
  const config = readConfig();
  const t0 = performance.now();
  const report: Report = {
    schema: 'aip-bench/1',
    started_at: new Date().toISOString(),
    config,
    machine: machineInfo(),
    section_seconds: {},
    errors: {},
  };
  const mutable = report as unknown as Record<string, unknown>;
  log(`sections: ${config.sections.join(', ')}${config.quick ? ' (quick)' : ''}; ${report.machine.cores} cores, load ${report.machine.load_average_start}`);

  const timed = async (id: SectionId, body: () => Promise<unknown>) => {
    const s = performance.now();
    log(`section ${id}…`);
    try {
      mutable[id] = await body();
    } catch (err) {
      report.errors[id] = err instanceof Error ? err.message : String(err);
      log(`section ${id} failed: ${report.errors[id]}`);
      if (err instanceof Error && err.stack) log(err.stack.split('\n').slice(1, 6).join('\n'));
    }
    report.section_seconds[id] = Math.round((performance.now() - s) / 100) / 10;
    log(`section ${id}: ${report.section_seconds[id]} s`);
  };

  const wants = (id: SectionId) => config.sections.includes(id);
  if (wants('cost') || wants('peer') || wants('mcp') || wants('scaling') || wants('credentials')) {
    const { createHarness, startEmulators } = await import('./lib/harness.js');
    const s = performance.now();
    const emulators = await startEmulators();
    log(`emulators up in ${Math.round(performance.now() - s)} ms`);
    try {
      const h = await createHarness(emulators);
      try {
        if (wants('cost')) {
          const { runCostSection } = await import('./sections/cost.js');
          await timed('cost', () => runCostSection(h, config.costRuns, log));
        }
        if (wants('peer')) {
          const { runPeerSection } = await import('./sections/peer.js');
          const version = (JSON.parse(readFileSync(resolve('node_modules/@aws-lambda-powertools/idempotency/package.json'), 'utf8')) as { version: string })
            .version;
          await timed('peer', () => runPeerSection(h, config.peerRuns, version));
        }
        if (wants('mcp')) {
          const { runMcpSection } = await import('./sections/mcp.js');
          await timed('mcp', () => runMcpSection(h, config.quick ? 1 : 3, log));
        }
      } finally {
        await h.destroy();
      }
      if (wants('scaling')) {
        const { runScalingSection } = await import('./sections/scaling.js');
        const scale = await createHarness(emulators);
        try {
          await timed('scaling', () =>
            runScalingSection(
              scale,
              { sizes: config.scaleSizes, chains: config.chainSizes, runs: config.scaleRuns, loadBudgetSeconds: config.loadBudgetSeconds },
              log,
            ),
          );
        } finally {
          await scale.destroy();
        }
      }
      if (wants('credentials')) {
        const { runCredentialsSection } = await import('./sections/credentials.js');
        await timed('credentials', () =>
          runCredentialsSection(emulators, { executes: config.credentialExecutes, uncachedExecutes: config.credentialUncachedExecutes }, log),
        );
      }
    } finally {
      await emulators.stop();
    }
  }
  if (wants('e2e')) {
    const { runE2eSection } = await import('./sections/e2e.js');
    await timed('e2e', () => runE2eSection({ concurrency: config.e2eConcurrency, perClient: config.e2eRequestsPerClient, min: config.e2eMinRequests }, log));
  }
  if (wants('latency')) {
    const { latencyOptions, runLatencySection } = await import('./sections/latency.js');
    await timed('latency', () => runLatencySection(latencyOptions(config.quick), log));
  }
  if (wants('fairness')) {
    const { fairnessOptions, runFairnessSection } = await import('./sections/fairness.js');
    await timed('fairness', () => runFairnessSection(fairnessOptions(config.quick), log));
  }
  if (wants('bundles')) {
    const { runBundlesSection } = await import('./sections/bundles.js');
    await timed('bundles', () => runBundlesSection({ runs: config.importRuns }, log));
  }

  if (wants('awscost')) {
    const { runAwsCostSection } = await import('./sections/awscost.js');
    await timed('awscost', () => runAwsCostSection(report, log));
  }

  report.finished_at = new Date().toISOString();
  report.duration_seconds = Math.round((performance.now() - t0) / 100) / 10;
  report.machine.load_average_end = currentLoad();
  const md = renderMarkdown(report);
  const dir = resolve(config.outDir);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${config.outName}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(dir, `${config.outName}.md`), md);
  process.stdout.write(`${md}\n`);
  log(`wrote ${join(dir, `${config.outName}.md`)} and .json in ${report.duration_seconds} s`);
  return Object.keys(report.errors).length > 0 ? 1 : 0;
}

process.exitCode = await main();
