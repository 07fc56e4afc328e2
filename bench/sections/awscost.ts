/**
 * Section `awscost`: dollars per million executes of `payments.charge` on
 * AWS (us-east-1 list prices, bench/lib/prices.ts), for this runtime and,
 * side by side, Powertools idempotency behind API Gateway, a Step Functions
 * Standard and an Express workflow making the same call.
 *
 * Runs no workload of its own. It gathers the model's inputs (the arithmetic
 * is bench/lib/awscost-model.ts) and says where each came from:
 * - this run's sections when they ran (cost: durations and DynamoDB units per
 *   action; peer: the Powertools handler; latency: the submit handler's busy
 *   time under `Prefer: wait`, polls, the authorizer, a bare provider call;
 *   bundles: module initialisation per function), otherwise the previous run
 *   in docs/bench/latest.json, otherwise a stated assumption;
 * - DynamoDB units as AWS bills them: the cost section's billed units when it
 *   reports them (fields named `billed_*`), else an estimate from its call
 *   traces: DynamoDB Local's reported capacity per request, with every
 *   TransactWriteItems raised to at least 2 WRU per item it carries (AWS
 *   rounds each item up to 1 KB and bills it twice; DynamoDB Local reports less
 *   for multi-item transactions), which is a lower bound;
 * - memory sizes, the authorizer cache TTL and the worker's batch size from
 *   infra/ (the deployed definitions, infra/config.local.json's settings);
 * - CloudWatch Logs bytes: the code's lines and EMF documents measured by
 *   bench/log-bytes.ts; Lambda's platform records (at the configuration's
 *   `lambdaSystemLogLevel`) and the stages' access lines counted by
 *   bench/lib/log-records.ts; X-Ray: the REST stage's sampling rule
 *   (`api.xraySampling`) for the API request's trace, Lambda's fixed default
 *   for the traces that start in Lambda.
 *
 * Assumptions (environment overrides BENCH_AWSCOST_*, listed in the report's inputs table): the share of
 * executes that go outcome_unknown, authorizer cache hits, event-source batch
 * size, cold-start share, provider latency beyond the simulator's.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  billedUnits,
  costModel,
  storedBytes,
  type AllInInputs,
  fixedWaitPoll,
  PREVIOUS_WAIT_POLL,
  waitNotice,
  type AipInputs,
  type Assumptions,
  type DynamoUnits,
  type ModelInputs,
  type OptionCost,
  type OptionId,
  type QueuePaths,
} from '../lib/awscost-model.js';
import { PRICES, PRICES_READ_ON, type Price, type PriceId } from '../lib/prices.js';
import { accessLogLineBytes, platformLogBytesPerInvocation, type SystemLogLevel } from '../lib/log-records.js';
import { accessLogFormatString, HTTP_ACCESS_LOG_FIELDS, REST_ACCESS_LOG_FIELDS } from '../../infra/access-log-formats.js';
import type { BundleFigures, BundlesFigures } from './bundles.js';
import type { E2eFigures } from './e2e.js';
import type { PeerFigures } from './peer.js';
import type { ScenarioFigures } from './cost.js';
import { latencyOptions, type LatencyFigures } from './latency.js';
import { DEFAULT_WAIT_POLL } from '../../functions/shared/wait.js';

const round1 = (x: number) => Math.round(x * 10) / 10;

export interface InputSource {
  readonly name: string;
  readonly value: number | string;
  readonly source: string;
}

export interface Sensitivity {
  readonly label: string;
  readonly totals: Partial<Record<OptionId, number>>;
}

export interface AwsCostFigures {
  readonly region: 'us-east-1';
  /** What bench/log-bytes.ts measured (this run, or the previous run's when it could not run). */
  readonly log_bytes?: LogBytes;
  readonly prices_read_on: string;
  readonly prices: Record<PriceId, Price>;
  readonly inputs: InputSource[];
  readonly model: Omit<ModelInputs, 'prices'>;
  readonly tuned_wait: Pick<AipInputs, 'api_ms' | 'wait_rru'>;
  readonly options: OptionCost[];
  readonly sensitivity: Sensitivity[];
  readonly notes: string[];
}

/** X-Ray's default sampling beyond its reservoir (the first request each second): what Lambda applies where a trace starts in it. */
const XRAY_DEFAULT_RATE = 0.05;

/** What this section reads of the run's report (the other sections' figures); structural, so the report module can import this one. */
type Partial2 = {
  readonly started_at: string;
  readonly cost?: ScenarioFigures[];
  readonly peer?: PeerFigures;
  readonly bundles?: BundlesFigures;
  readonly e2e?: E2eFigures;
  readonly latency?: LatencyFigures;
  readonly awscost?: { readonly model?: { readonly all_in?: AllInInputs }; readonly log_bytes?: LogBytes };
};

/** What bench/log-bytes.ts measured. */
interface LogBytes {
  readonly log_bytes_per_execute: number;
  readonly log_lines_per_execute: number;
  readonly emf_bytes_per_execute: number;
  readonly executes: number;
}

/** Runs bench/log-bytes.ts in a child process (the Lambda-like environment stays out of this one); undefined when it fails. */
async function measureLogBytes(log: (line: string) => void): Promise<LogBytes | undefined> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'bench/log-bytes.ts'], {
      maxBuffer: 16 * 1024 * 1024,
      timeout: 300_000,
    });
    const last = stdout.trim().split('\n').at(-1) ?? '';
    return JSON.parse(last) as LogBytes;
  } catch (err) {
    log(`  log bytes not measured: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    return undefined;
  }
}

/** The previous run's figures (docs/bench/latest.json), if readable. */
function previousRun(): Partial2 | undefined {
  const path = resolve('docs/bench/latest.json');
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Partial2;
  } catch {
    return undefined;
  }
}

/** Env overrides of the assumptions: a number in [min, max]. */
function num(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`${name} must be a number in [${min}, ${max}]`);
  return n;
}

const phaseP50 = (s: ScenarioFigures, name: string) => s.phases.find((p) => p.phase === name)?.latency_ms.p50;

export async function runAwsCostSection(report: Partial2, log: (line: string) => void): Promise<AwsCostFigures> {
  const prev = previousRun();
  const prevLabel = `previous run, docs/bench/latest.json (${prev?.started_at ?? 'unknown date'})`;
  const inputs: InputSource[] = [];
  const notes: string[] = [];
  const fellBack = { previous: new Set<string>(), assumed: new Set<string>() };
  const pick = <T>(fromRun: T | undefined, fromPrev: T | undefined, section: string): { value: T; source: string } | undefined => {
    if (fromRun !== undefined) return { value: fromRun, source: `this run, section ${section}` };
    if (fromPrev !== undefined) {
      fellBack.previous.add(section);
      return { value: fromPrev, source: prevLabel };
    }
    fellBack.assumed.add(section);
    return undefined;
  };
  const note = (name: string, value: number | string, source: string) =>
    inputs.push({ name, value: typeof value === 'number' ? Math.round(value * 1000) / 1000 : value, source });

  // --- infra: memory sizes, authorizer cache TTL, batch size
  const { loadInfraConfig } = await import('../../infra/config.js');
  const { aipFunctionDefinitions, INVOKE_BATCH_SIZE, AUTHORIZER_FUNCTION_ID, INVOKE_WORKER_FUNCTION_ID, RECONCILE_CONSUMER_FUNCTION_ID } = await import(
    '../../infra/aip-functions.js'
  );
  const infra = loadInfraConfig('infra/config.local.json');
  const defs = aipFunctionDefinitions(infra);
  const DEFAULT_MEMORY = 512; // infra/functions.ts: `memorySize: definition.memorySize ?? 512`
  const memoryOf = (id: string) => defs.find((d) => d.id === id)?.memorySize ?? DEFAULT_MEMORY;
  const memory = {
    api: memoryOf('HttpSubmitAction'),
    authorizer: memoryOf(AUTHORIZER_FUNCTION_ID),
    worker: memoryOf(INVOKE_WORKER_FUNCTION_ID),
    reconcile: memoryOf(RECONCILE_CONSUMER_FUNCTION_ID),
    peer: DEFAULT_MEMORY,
  };
  note(
    'memory MB (submit, authorizer, worker, reconcile; peers)',
    `${memory.api}, ${memory.authorizer}, ${memory.worker}, ${memory.reconcile}; ${memory.peer}`,
    'infra/aip-functions.ts definitions (infra/functions.ts default 512 MB), arm64',
  );
  const ttl = infra.api.authorizerCacheTtlSeconds;

  // --- section 1 figures
  const scenario = (id: string) => {
    const got = pick(
      report.cost?.find((s) => s.id === id),
      prev?.cost?.find((s) => s.id === id),
      'cost',
    );
    if (!got) throw new Error(`no cost figures for "${id}" in this run or in docs/bench/latest.json: run with BENCH_SECTIONS including cost`);
    return got;
  };
  const exec = scenario('execute');
  const unknown = scenario('execute_outcome_unknown');
  const recon = scenario('reconcile');
  const poll = scenario('poll_action');
  // The final view: the poll that sees the settlement builds it from its own read of the action (pollAction), so the
  // view adds that poll's reads beyond a plain poll (the transaction). A cost run without that scenario: getAction's.
  const settledPoll = pick(
    report.cost?.find((s) => s.id === 'poll_settled'),
    prev?.cost?.find((s) => s.id === 'poll_settled'),
    'cost',
  );
  const view = settledPoll ?? scenario('get_action');
  const admitMs = phaseP50(exec.value, 'admit (API)') ?? exec.value.latency_ms.p50;
  const attemptMs = phaseP50(exec.value, 'attempt (worker)') ?? exec.value.latency_ms.p50;
  const unknownAttemptMs = phaseP50(unknown.value, 'attempt (worker)') ?? unknown.value.latency_ms.p50;
  const committed = billedUnits(exec.value);
  const unknownUnits = billedUnits(unknown.value);
  const reconUnits = billedUnits(recon.value);
  note('execute: admission p50 ms (in-process)', admitMs, exec.source);
  note('execute: worker attempt p50 ms (in-process)', attemptMs, exec.source);
  note('execute → outcome_unknown: worker attempt p50 ms', unknownAttemptMs, unknown.source);
  note('reconcile consumer p50 ms', recon.value.latency_ms.p50, recon.source);
  note('execute: billed WRU / RRU', `${committed.wru} / ${committed.rru}`, `${exec.source}; ${committed.source}`);
  note('execute → outcome_unknown: billed WRU / RRU', `${unknownUnits.wru} / ${unknownUnits.rru}`, `${unknown.source}; ${unknownUnits.source}`);
  note('reconcile: billed WRU / RRU', `${reconUnits.wru} / ${reconUnits.rru}`, `${recon.source}; ${reconUnits.source}`);
  const pollRru = poll.value.billed?.total.rru ?? poll.value.total.read_capacity;
  const viewRru = (view.value.billed?.total.rru ?? view.value.total.read_capacity) - (settledPoll !== undefined ? pollRru : 0);
  note(
    'Prefer: wait: RRU per poll / final view (beyond the poll that sees the settlement)',
    `${pollRru} / ${viewRru}`,
    `${poll.source}; ${poll.value.billed ? 'billed from item sizes' : "DynamoDB Local's reported read capacity"}`,
  );

  // --- the wait. The submit Lambda is billed while `Prefer: wait` polls: admission, then polls on the
  // deployed schedule until the attempt has settled, then the final view. Modelled from the in-process
  // figures above and the schedule (bench/lib/awscost-model.ts waitNotice), with one assumption: the
  // SQS event source's delivery time on AWS. The local stack's measured busy time (latency section) is
  // shown for comparison, not billed: its DynamoDB Local and machine-load latencies are not AWS's.
  const queueMs = num('BENCH_AWSCOST_QUEUE_MS', 50, 0, 60_000);
  const pollMs = poll.value.latency_ms.p50;
  const viewMs = round1(Math.max(0, view.value.latency_ms.p50 - (settledPoll !== undefined ? pollMs : 0)));
  const settleMs = queueMs + attemptMs;
  const tunedSchedule = latencyOptions(false).tuned;
  // functions/shared/wait.ts waitForSettlement on a virtual clock: the deployed (adaptive) schedule in an environment
  // that has learnt the settle time, the fixed 25 ms one and the one deployed before.
  const deployedWait = await waitNotice(settleMs, pollMs);
  const tunedWaitModel = await waitNotice(settleMs, pollMs, fixedWaitPoll(tunedSchedule.initialIntervalMs, tunedSchedule.maxIntervalMs));
  const previousWait = await waitNotice(settleMs, pollMs, PREVIOUS_WAIT_POLL);
  const apiMs = admitMs + deployedWait.notice_ms + viewMs;
  const polls = deployedWait.polls;
  note('SQS event source delivery on AWS ms', queueMs, 'assumption: not measured (fauxqs + the local poller deliver in a few ms); BENCH_AWSCOST_QUEUE_MS');
  note('Prefer: wait poll / final view p50 ms (in-process)', `${pollMs} / ${viewMs}`, poll.source);
  note(
    'submit Lambda busy ms per execute (admission + wait + final view), deployed poll schedule',
    apiMs,
    `model: the attempt settles ${round1(settleMs)} ms after admission (delivery + attempt); the deployed schedule (functions/shared/wait.ts waitForSettlement on a virtual clock: first poll at the learnt settle time − ${DEFAULT_WAIT_POLL.intervalMs} ms, then every ${DEFAULT_WAIT_POLL.intervalMs} ms) notices it at ${round1(deployedWait.notice_ms)} ms after ${polls} polls, in an environment that has learnt the settle time`,
  );
  note(
    'for comparison: the schedule deployed before (at once, then 200 ms ×1.5): submit Lambda busy ms, polls',
    `${round1(admitMs + previousWait.notice_ms + viewMs)}, ${previousWait.polls}`,
    `model: noticed at ${round1(previousWait.notice_ms)} ms; not billed`,
  );
  const latency = pick(report.latency, prev?.latency, 'latency');
  const measuredDefault = latency?.value.variants.find((v) => v.id === 'default');
  const measuredTuned = latency?.value.variants.find((v) => v.id === 'tuned');
  if (measuredDefault) {
    note(
      'for comparison, measured on the local stack: submit handler busy p50 ms (deployed / tuned poll), polls',
      `${measuredDefault.api_handler_ms.p50} / ${measuredTuned?.api_handler_ms.p50 ?? '–'}, ${measuredDefault.polls_mean} / ${measuredTuned?.polls_mean ?? '–'}`,
      `${latency!.source}: not billed (emulator and machine-load latencies)`,
    );
  }
  const authorizerMs = latency?.value.authorizer_ms.p50 ?? 5;
  const providerMs = latency?.value.provider_call_ms.p50 ?? 2;
  const noLatency = 'assumption: the latency section ran neither in this run nor in the previous one';
  note('authorizer warm ms', authorizerMs, latency ? latency.source : noLatency);
  note('bare provider call ms (simulator)', providerMs, latency ? latency.source : noLatency);

  // --- section 2: Powertools
  const peer = pick(
    report.peer?.cases.find((c) => c.id === 'execute'),
    prev?.peer?.cases.find((c) => c.id === 'execute'),
    'peer',
  );
  if (!peer) throw new Error('no peer figures in this run or in docs/bench/latest.json: run with BENCH_SECTIONS including peer');
  const pt = peer.value.powertools;
  // Billed from item images when the peer section reports it; otherwise DynamoDB Local's units (Powertools writes
  // plain items of < 1 KB, where they agree with AWS's) plus 1 WRU per refused conditional write.
  const ptUnits: DynamoUnits = pt.billed
    ? { wru: pt.billed.wru + pt.billed.index_wru, rru: pt.billed.rru }
    : { wru: pt.cost.write_capacity + pt.cost.failed_conditional, rru: pt.cost.read_capacity };
  note(
    'Powertools handler p50 ms / WRU / RRU',
    `${pt.latency_ms.p50} / ${ptUnits.wru} / ${ptUnits.rru}`,
    `${peer.source}; ${pt.billed ? 'billed from item sizes' : "DynamoDB Local's reported capacity"}`,
  );

  // --- bundles section: cold start per function = import (Lambda's INIT phase) + composition on the first
  // invocation; both are billed (INIT since 2025-08-01). Older runs report the import alone: the composition
  // is then the issue's measured ~200 ms for the runtime's functions, an assumption stated as such.
  const bundles = pick(report.bundles, prev?.bundles, 'bundles');
  const COMPOSE_ASSUMED_MS = 200; // the composition measured on the single-bundle build: "about 200 ms to compose the runtime on the first invocation"
  const assumedInit = { runtime: 280, small: 110 }; // the single-bundle build: ~250 ms import of a runtime bundle; the authorizer ~80-110 ms
  const coldOf = (
    match: (b: BundleFigures) => boolean,
    runtime: boolean,
  ): { ms: number; how: 'measured' | 'import measured, composition assumed' | 'assumed' } => {
    const b = bundles?.value.bundles.find((x) => x.error === undefined && match(x));
    const importMs = b?.init_ms_p50 ?? b?.cold?.import_ms;
    const composeMs = b?.compose_ms_p50 ?? b?.cold?.compose_ms;
    if (importMs === undefined) return { ms: runtime ? assumedInit.runtime + COMPOSE_ASSUMED_MS : assumedInit.small, how: 'assumed' };
    if (composeMs === undefined)
      return { ms: importMs + (runtime ? COMPOSE_ASSUMED_MS : 0), how: runtime ? 'import measured, composition assumed' : 'measured' };
    return { ms: importMs + composeMs, how: 'measured' };
  };
  const byEntry = (entry: string) => (b: BundleFigures) => b.entry === entry && (b.kind === 'runtime' || b.kind === 'authorizer');
  const cold = {
    api: coldOf(byEntry('functions/http/actions.ts'), true),
    worker: coldOf(byEntry('functions/worker/invoke.ts'), true),
    reconcile: coldOf(byEntry('functions/worker/reconcile.ts'), true),
    authorizer: coldOf(byEntry('functions/authorizer.ts'), false),
    // The bare Powertools handler (the bundles section's yardstick); the authorizer's figure when absent (a small bundle).
    small: coldOf((b) => b.kind === 'yardstick' || /powertools/i.test(b.entry), false),
  };
  const smallIsAuthorizer = cold.small.how === 'assumed' && cold.authorizer.how !== 'assumed';
  if (smallIsAuthorizer) cold.small = cold.authorizer;
  const init = { api: cold.api.ms, worker: cold.worker.ms, reconcile: cold.reconcile.ms, authorizer: cold.authorizer.ms, small: cold.small.ms };
  const hows = [...new Set(Object.values(cold).map((c) => c.how))];
  note(
    'cold start ms billed per cold invocation: import + first-invocation composition (submit, worker, reconcile, authorizer, peer Lambdas)',
    `${Object.values(init)
      .map((x) => round1(x))
      .join(', ')}`,
    `${bundles ? bundles.source : 'assumption: the bundles section ran neither in this run nor in the previous one'}; ${hows.join(' / ')}` +
      `${hows.includes('import measured, composition assumed') ? ` (composition ${COMPOSE_ASSUMED_MS} ms, the single-bundle build's measurement)` : ''}` +
      '; medians of fresh Node processes on the bench machine (x86, not Lambda arm64)' +
      `${smallIsAuthorizer ? "; peer Lambdas: the authorizer's figure (a small bundle), an estimate" : ''}`,
  );

  // --- assumptions
  const unknownShare = num('BENCH_AWSCOST_OUTCOME_UNKNOWN', 0.03, 0, 1);
  const requestsPerToken = num('BENCH_AWSCOST_REQUESTS_PER_TOKEN', 10, 1, 1e6);
  const assumptions: Assumptions = {
    memory_mb: memory,
    authorizer_invocations_per_request: 1 / requestsPerToken,
    esm_batch_size: num('BENCH_AWSCOST_BATCH', 1, 1, INVOKE_BATCH_SIZE),
    outcome_unknown_share: unknownShare,
    cold_start_share: num('BENCH_AWSCOST_COLD_SHARE', 0.01, 0, 1),
    extra_provider_ms: num('BENCH_AWSCOST_PROVIDER_MS', 0, 0, 60_000),
    standard_transitions: 1,
    standard_api_requests: 2,
    express_memory_mb: 64,
    express_overhead_ms: 20,
  };
  note(
    'authorizer invocations per API request',
    assumptions.authorizer_invocations_per_request,
    `assumption: ${requestsPerToken} requests per token within the authorizer cache TTL (${ttl} s, infra api.authorizerCacheTtlSeconds); BENCH_AWSCOST_REQUESTS_PER_TOKEN`,
  );
  note(
    'messages per worker batch',
    assumptions.esm_batch_size,
    `assumption: low rate, one message per batch (the event source allows ${INVOKE_BATCH_SIZE}); BENCH_AWSCOST_BATCH`,
  );
  note(
    'share of executes that go outcome_unknown',
    assumptions.outcome_unknown_share,
    'assumption: ~3 %, as the load test measured (docs/reliability-report.md: 46 of 1,398 transactions reconciled, at 9.4 % injected provider faults: pessimistic for a healthy provider); BENCH_AWSCOST_OUTCOME_UNKNOWN',
  );
  note(
    'share of invocations that are cold starts',
    assumptions.cold_start_share,
    'assumption: 1 % (AWS: INITs "typically occur in under 1% of invocations"); BENCH_AWSCOST_COLD_SHARE',
  );
  note(
    'provider latency beyond the simulator ms',
    assumptions.extra_provider_ms,
    "assumption: 0 (durations include the local simulator's answer, a few ms; a real provider takes longer); BENCH_AWSCOST_PROVIDER_MS; the sensitivity table shows 300 ms",
  );
  note(
    'Standard workflow: transitions / API requests',
    `${assumptions.standard_transitions} / ${assumptions.standard_api_requests}`,
    'assumption: one Task state (one state entered); StartExecution + one DescribeExecution through API Gateway service integrations',
  );
  note(
    'Express workflow: billed memory MB / overhead ms',
    `${assumptions.express_memory_mb} / ${assumptions.express_overhead_ms}`,
    'assumption: 50 MB + a small definition and payload → one 64 MB chunk; duration = the Lambda task + 20 ms, rounded up to 100 ms',
  );

  // --- all in: logs, traces, the credential, storage, KMS
  const measuredLogs = process.env.BENCH_AWSCOST_LOG_BYTES === 'previous' ? undefined : await measureLogBytes(log);
  const logBytes = measuredLogs ?? prev?.awscost?.log_bytes;
  const logSource = measuredLogs
    ? `this run: bench/log-bytes.ts, ${measuredLogs.executes} executes on the local stack with the deployed Powertools settings (INFO, EMF on), stdout and stderr counted`
    : logBytes
      ? `${prevLabel} (bench/log-bytes.ts)`
      : 'assumption: not measured (two Powertools lines of ~570 B and two EMF documents of ~220 B)';
  const codeLogBytes = logBytes ? logBytes.log_bytes_per_execute + logBytes.emf_bytes_per_execute : 2 * 570 + 2 * 220;
  const lineBytes = logBytes && logBytes.log_lines_per_execute > 0 ? logBytes.log_bytes_per_execute / logBytes.log_lines_per_execute : 570;
  note(
    'CloudWatch Logs bytes the code writes per execute: Powertools lines + EMF metric documents (the submit route, which runs the attempt inline: bench/log-bytes.ts; BENCH_LOG_BYTES_ATTEMPT=queue measures the queue path, submit + worker)',
    logBytes ? `${round1(logBytes.log_bytes_per_execute)} (${logBytes.log_lines_per_execute} lines) + ${round1(logBytes.emf_bytes_per_execute)}` : codeLogBytes,
    logSource,
  );
  const storedExec = storedBytes(exec.value.trace);
  const storedUnknown = storedBytes(unknown.value.trace);
  const storedRecon = storedBytes(recon.value.trace);
  const stored = (1 - unknownShare) * storedExec.bytes + unknownShare * Math.max(storedUnknown.bytes, storedRecon.bytes);
  note(
    'bytes an execute leaves in the table (items + 100 B each + index entries)',
    Math.round(stored),
    `${exec.source}: the billed trace's item sizes (execute: ${storedExec.items} items, ${storedExec.index_entries} index entries, ${storedExec.bytes} B; outcome_unknown share: the larger of its execute and reconcile)`,
  );
  const tracingOn = infra.tracing;
  const systemLogLevel = infra.lambdaSystemLogLevel;
  const platformBytes = (level: SystemLogLevel) => platformLogBytesPerInvocation(level, tracingOn, assumptions.cold_start_share);
  const allIn: AllInInputs = {
    code_log_bytes: codeLogBytes,
    platform_log_bytes_per_invocation: platformBytes(systemLogLevel),
    access_log_bytes: {
      rest: accessLogLineBytes(accessLogFormatString(REST_ACCESS_LOG_FIELDS)),
      http: accessLogLineBytes(accessLogFormatString(HTTP_ACCESS_LOG_FIELDS)),
    },
    peer_code_log_bytes: Math.round(lineBytes),
    xray_sampled_share: tracingOn ? num('BENCH_AWSCOST_XRAY_SAMPLED', XRAY_DEFAULT_RATE, 0, 1) : 0,
    xray_rest_sampled_share: tracingOn ? num('BENCH_AWSCOST_XRAY_REST_SAMPLED', infra.api.xraySampling.rate, 0, 1) : 0,
    xray_traces_per_execute: 2,
    xray_retrieved_share: num('BENCH_AWSCOST_XRAY_RETRIEVED', 0.1, 0, 10),
    secret_max_age_s: num('BENCH_AWSCOST_SECRET_MAX_AGE_S', 300, 1, 86_400),
    executes_per_s_per_environment: num('BENCH_AWSCOST_EXECUTES_PER_S_PER_ENV', 1, 0.001, 1_000),
    stored_bytes_per_execute: stored,
    retention_months: num('BENCH_AWSCOST_RETENTION_MONTHS', 1, 0, 120),
    pitr: true,
    queue_kms: infra.queueEncryption === 'kms',
    kms_data_key_reuse_s: 300,
    temporal_actions: 2,
    temporal_client_ms: num('BENCH_AWSCOST_TEMPORAL_CLIENT_MS', 30, 0, 10_000),
  };
  note(
    `Lambda platform records per invocation at system log level ${systemLogLevel} (INFO: ${round1(platformBytes('INFO'))}) / access log line (REST, HTTP API), bytes`,
    `${round1(allIn.platform_log_bytes_per_invocation)} / ${allIn.access_log_bytes.rest}, ${allIn.access_log_bytes.http}`,
    `bench/lib/log-records.ts: the JSON records Lambda writes for a successful invocation (WARN: none; INFO: platform.start + platform.report${tracingOn ? ' with the trace context' : ''}, plus initStart/initReport on the cold-start share), and one line of the stages' formats (infra/access-log-formats.ts) with typical values, counted; infra config lambdaSystemLogLevel "${systemLogLevel}"`,
  );
  note(
    'X-Ray: share recorded of REST requests (stage rule) / of traces that start in Lambda / traces per execute / retrieved per recorded',
    `${allIn.xray_rest_sampled_share} / ${allIn.xray_sampled_share} / ${allIn.xray_traces_per_execute} / ${allIn.xray_retrieved_share}`,
    `infra config tracing: ${tracingOn ? 'on' : 'off'}, api.xraySampling ${JSON.stringify(infra.api.xraySampling)}: the REST stage's sampling rule decides the API request's trace (the authorizer and the route function join it); the SQS-triggered worker's trace is its own (X-Ray links it to the sender's) and, like every trace behind the HTTP API (which does not trace), is sampled by Lambda at X-Ray's default, which a function cannot configure (the first request each second, then 5 %: ${XRAY_DEFAULT_RATE} at a sustained rate); BENCH_AWSCOST_XRAY_REST_SAMPLED, BENCH_AWSCOST_XRAY_SAMPLED, BENCH_AWSCOST_XRAY_RETRIEVED`,
  );
  note(
    'credential cache: bounded age s / executes per second per worker environment',
    `${allIn.secret_max_age_s} / ${allIn.executes_per_s_per_environment}`,
    'one GetSecretValue per execution environment per age (Powertools Parameters maxAge, default 5 minutes), plus one per new environment (the cold-start share); BENCH_AWSCOST_SECRET_MAX_AGE_S, BENCH_AWSCOST_EXECUTES_PER_S_PER_ENV',
  );
  note(
    'storage: months retained / point-in-time recovery / SSE-KMS queues',
    `${allIn.retention_months} / ${allIn.pitr ? 'on' : 'off'} / ${allIn.queue_kms ? 'yes' : 'no'}`,
    `infra/stateful-stack.ts (PITR on); infra/config.local.json queueEncryption "${infra.queueEncryption}"; BENCH_AWSCOST_RETENTION_MONTHS`,
  );
  note(
    'Temporal Cloud: actions per execute / client Lambda overhead ms',
    `${allIn.temporal_actions} / ${allIn.temporal_client_ms}`,
    'assumption: workflow started + activity started (docs.temporal.io/cloud/actions); the client starts the workflow and waits for its result; BENCH_AWSCOST_TEMPORAL_CLIENT_MS',
  );

  // The deployed default (`attemptWhenWaited: "inline"`): a waited execute's first attempt runs in the submit, which is
  // busy for the admission and the attempt; no invoke message, no worker, no poll (lib/runtime/pipeline/inline-attempt.ts).
  const inlineApiMs = round1(admitMs + attemptMs);
  note(
    'submit Lambda busy ms per execute, attempt inline (admission + attempt)',
    inlineApiMs,
    `${exec.source}: the admission and the worker attempt phases, measured; attemptWhenWaited "inline" (the deployed default) runs the first attempt of a waited execute in the submit, through the worker's code, with no invoke message, no worker invocation and no wait poll`,
  );
  const aip: AipInputs = {
    api_requests: 1,
    api_ms: inlineApiMs,
    wait_rru: 0,
    attempt_inline: true,
    attempt_ms: attemptMs,
    committed: { wru: committed.wru, rru: committed.rru },
    outcome_unknown: { wru: unknownUnits.wru, rru: unknownUnits.rru, attempt_ms: unknownAttemptMs },
    reconcile: { wru: reconUnits.wru, rru: reconUnits.rru, ms: recon.value.latency_ms.p50 },
    // A fresh admission's invoke message with its images (docs/runtime.md, "The worker's first read"): an execute's is
    // 1.6 to 1.8 KB (test/integration/runtime/first-read.test.ts), at most QUEUE_MESSAGE_MAX_BYTES (16 KiB) by construction.
    message_bytes: 1_800,
    invoke_messages: exec.value.total.sqs_sends > 0 ? exec.value.total.sqs_sends : 1,
  };
  note(
    'queue message size bytes',
    aip.message_bytes,
    "InvokeMessage with the fresh admission's images (IDs only: a few hundred bytes); at most 16 KiB, so one 64 KB chunk",
  );
  note('invoke messages sent per execute', aip.invoke_messages, `${exec.source} (SendMessage calls of the execute scenario)`);
  note(
    'Scheduler API calls: CreateSchedule per outcome_unknown / DeleteSchedule per reconcile',
    `${unknown.value.total.scheduler_calls} / ${recon.value.total.scheduler_calls}`,
    `${unknown.source}: API calls, not billed; the schedule's one firing is (a Scheduler invocation, then one SendMessage to the reconcile queue)`,
  );
  const model: ModelInputs = {
    prices: PRICES,
    aip,
    powertools: { ms: pt.latency_ms.p50, units: ptUnits },
    provider_call_ms: providerMs,
    authorizer_ms: authorizerMs,
    init_ms: init,
    assumptions,
    all_in: allIn,
  };
  const tuned = { api_ms: admitMs + tunedWaitModel.notice_ms + viewMs, wait_rru: tunedWaitModel.polls * pollRru + viewRru };
  note(
    `submit Lambda busy ms per execute, a fixed poll: at once, then ${tunedSchedule.initialIntervalMs} ms ×1.5 ≤ ${tunedSchedule.maxIntervalMs} ms`,
    tuned.api_ms,
    `model: noticed at ${round1(tunedWaitModel.notice_ms)} ms after ${tunedWaitModel.polls} polls (BENCH_WAIT_POLL_MS, BENCH_WAIT_POLL_MAX_MS)`,
  );
  // The queue path beside it: the same waited execute through SQS and the worker (attemptWhenWaited "queue": the
  // model before), and a client that does not wait (admission only; the action is read later, not modelled).
  const queuePaths: QueuePaths = {
    queue: { api_ms: apiMs, wait_rru: polls * pollRru + viewRru, invoke_messages: aip.invoke_messages },
    no_wait: { api_ms: admitMs, wait_rru: 0, invoke_messages: aip.invoke_messages },
  };
  const options = costModel(model, tuned, queuePaths);

  const totals = (m: ModelInputs): Partial<Record<OptionId, number>> =>
    Object.fromEntries(costModel(m, tuned, queuePaths).map((o) => [o.id, o.usd_per_million]));
  const withA = (a: Partial<Assumptions>): ModelInputs => ({ ...model, assumptions: { ...assumptions, ...a } });
  const withX = (x: Partial<AllInInputs>): ModelInputs => ({ ...model, all_in: { ...allIn, ...x } });
  const sensitivity: Sensitivity[] = [
    { label: 'as modelled', totals: totals(model) },
    { label: 'provider answers in 300 ms (a card API), everything else as modelled', totals: totals(withA({ extra_provider_ms: 300 })) },
    { label: 'no authorizer cache hit (1 authorizer invocation per request)', totals: totals(withA({ authorizer_invocations_per_request: 1 })) },
    { label: `worker batches of ${INVOKE_BATCH_SIZE} (high rate)`, totals: totals(withA({ esm_batch_size: INVOKE_BATCH_SIZE })) },
    { label: 'no outcome_unknown', totals: totals(withA({ outcome_unknown_share: 0 })) },
    { label: 'every invocation cold', totals: totals(withA({ cold_start_share: 1 })) },
    { label: 'Standard: one Retry of its Task (2 transitions)', totals: totals(withA({ standard_transitions: 2 })) },
    {
      label: 'no credential cache: one GetSecretValue per execute (the code before the cache)',
      totals: totals(withX({ secret_max_age_s: 1, executes_per_s_per_environment: 1 })),
    },
    { label: 'items retained 12 months (storage and PITR)', totals: totals(withX({ retention_months: 12 })) },
    { label: 'tracing off (X-Ray)', totals: totals(withX({ xray_sampled_share: 0, xray_rest_sampled_share: 0 })) },
    { label: "X-Ray's default sampling on the REST stage (5 %, no sampling rule)", totals: totals(withX({ xray_rest_sampled_share: XRAY_DEFAULT_RATE })) },
    {
      label: "Lambda's platform records kept (lambdaSystemLogLevel INFO)",
      totals: totals(withX({ platform_log_bytes_per_invocation: platformBytes('INFO') })),
    },
    { label: 'SSE-KMS queues (queueEncryption "kms")', totals: totals(withX({ queue_kms: true })) },
  ];
  if (!committed.source.startsWith('cost section')) {
    notes.push(
      'DynamoDB units are a lower bound estimated from call traces (the cost figures used carry no billed units: an older run): AWS rounds each transactional item up to 1 KB and bills it twice, and bills an update on the larger of the item before and after.',
    );
  }
  if (fellBack.previous.size > 0 || fellBack.assumed.size > 0) {
    notes.push(
      `Sections that did not run here: ${[
        ...(fellBack.previous.size > 0 ? [`${[...fellBack.previous].join(', ')} taken from the ${prevLabel}`] : []),
        ...(fellBack.assumed.size > 0 ? [`${[...fellBack.assumed].join(', ')} replaced by the stated assumptions`] : []),
      ].join('; ')}.`,
    );
  }
  notes.push(
    'Durations are in-process medians measured against emulators on the bench machine (x86), applied to arm64 Lambda prices: an estimate of billed duration, not a measurement on AWS.',
    "Not per execute, left out: the sweeper (one invocation and 8 Queries a minute), the SQS event sources' idle long polls, the secrets' monthly fee ($0.40 each), log storage, alarms, data transfer out, Temporal's plan fee and its Worker's compute.",
    'The alternatives do less: Powertools stores one idempotency record; the Step Functions options keep their execution history (Standard) or a Powertools record (Express); none reconciles a lost provider answer, keeps a receipt chain, or enforces governance.',
  );
  log(`  ${options.map((o) => `${o.id} $${o.usd_per_million.toFixed(2)}/M`).join(', ')}`);
  const { prices: _prices, ...modelWithoutPrices } = model;
  return {
    region: 'us-east-1',
    prices_read_on: PRICES_READ_ON,
    prices: PRICES,
    inputs,
    model: modelWithoutPrices,
    ...(logBytes ? { log_bytes: logBytes } : {}),
    tuned_wait: tuned,
    options,
    sensitivity,
    notes,
  };
}

// --- rendering ------------------------------------------------------------------------------

const usd = (x: number) => (Number.isFinite(x) ? (x >= 1 ? x.toFixed(2) : x >= 0.01 ? x.toFixed(3) : x === 0 ? '0' : x.toPrecision(2)) : '–');
const qty = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 1 ? String(Math.round(x * 1000) / 1000) : x.toPrecision(3));

export function renderAwsCostMarkdown(a: AwsCostFigures, heading = '## AWS cost per million executes'): string[] {
  const lines: string[] = [heading, ''];
  const ids = a.options.map((o) => o.id);
  lines.push(
    `\`payments.charge\` executes on AWS ${a.region}, list prices read ${a.prices_read_on} (on-demand, first tier, free tiers left out), arm64 Lambda. ` +
      'The model is bench/lib/awscost-model.ts, its inputs bench/sections/awscost.ts; the reading in docs/bench/analysis.md, "AWS cost per million executes". ' +
      'Per component, USD per million executes; a blank cell is a component the option does not have.',
    '',
    `| component | ${a.options.map((o) => o.label).join(' | ')} |`,
    `|---|${ids.map(() => '---:').join('|')}|`,
  );
  const components: string[] = [];
  for (const o of a.options) for (const l of o.lines) if (!components.includes(l.component)) components.push(l.component);
  for (const c of components) {
    const cells = a.options.map((o) => {
      const l = o.lines.find((x) => x.component === c);
      return l ? usd(l.usd_per_million) : '';
    });
    lines.push(`| ${c} | ${cells.join(' | ')} |`);
  }
  lines.push(`| **total, USD per million executes** | ${a.options.map((o) => `**${usd(o.usd_per_million)}**`).join(' | ')} |`);
  const aip = a.options.find((o) => o.id === 'aip');
  if (aip) lines.push(`| ratio to this runtime (REST) | ${a.options.map((o) => `×${(o.usd_per_million / aip.usd_per_million).toFixed(2)}`).join(' | ')} |`);
  lines.push('');

  // The runtime's bill by kind of charge, REST and HTTP API side by side, so that the effect of each change reads apart.
  const runtimeOptions = a.options.filter((o) => o.id === 'aip' || o.id === 'aip_http' || o.id === 'aip_queue' || o.id === 'aip_queue_http');
  if (runtimeOptions.length > 1) {
    lines.push(
      'This runtime by kind of charge (USD per million executes):',
      '',
      `| kind | ${runtimeOptions.map((o) => o.label).join(' | ')} |`,
      `|---|${runtimeOptions.map(() => '---:').join('|')}|`,
    );
    for (const [kind, match] of CHARGE_KINDS) {
      lines.push(
        `| ${kind} | ${runtimeOptions.map((o) => usd(o.lines.filter((l) => match(l.component)).reduce((x, l) => x + l.usd_per_million, 0))).join(' | ')} |`,
      );
    }
    lines.push(`| **all in** | ${runtimeOptions.map((o) => `**${usd(o.usd_per_million)}**`).join(' | ')} |`, '');
  }

  if (aip) {
    lines.push(
      '<details><summary>This runtime, quantities per execute</summary>',
      '',
      '| component | quantity per execute | unit | USD per million |',
      '|---|---:|---|---:|',
    );
    for (const l of aip.lines) lines.push(`| ${l.component} | ${qty(l.quantity)} | ${l.unit} | ${usd(l.usd_per_million)} |`);
    lines.push('', '</details>', '');
  }

  lines.push(
    'Sensitivity (total USD per million executes):',
    '',
    `| case | ${a.options.map((o) => o.id).join(' | ')} |`,
    `|---|${ids.map(() => '---:').join('|')}|`,
  );
  for (const s of a.sensitivity) lines.push(`| ${s.label} | ${ids.map((id) => usd(s.totals[id] ?? Number.NaN)).join(' | ')} |`);
  lines.push('');

  lines.push('Inputs and where they come from:', '', '| input | value | source |', '|---|---|---|');
  for (const i of a.inputs) lines.push(`| ${i.name} | ${i.value} | ${i.source} |`);
  lines.push('');

  lines.push(`List prices (${a.region}, read ${a.prices_read_on}):`, '', '| service | item | USD | per | basis | source |', '|---|---|---:|---|---|---|');
  for (const p of Object.values(a.prices)) {
    const per = p.per === 1 ? p.unit : `${p.per.toLocaleString('en')} ${p.unit}s`;
    lines.push(
      `| ${p.service} | ${p.item} | ${p.usd < 0.001 ? p.usd.toPrecision(6) : p.usd} | ${per} | ${p.basis} | ${p.source}${p.note ? ` — ${p.note}` : ''} |`,
    );
  }
  lines.push('');
  for (const n of a.notes) lines.push(`- ${n}`);
  lines.push('');
  return lines;
}

/** Kinds of charge of the runtime's bill, by component name (every component falls in exactly one). */
const CHARGE_KINDS: readonly (readonly [string, (component: string) => boolean])[] = [
  ['API Gateway and authorizer', (c) => c.startsWith('API Gateway') || c.startsWith('Authorizer')],
  ['Lambda (API, worker, reconcile; cold starts)', (c) => /Lambda|Cold starts/.test(c) && !c.startsWith('Authorizer')],
  ['DynamoDB request units', (c) => c.startsWith('DynamoDB writes') || c.startsWith('DynamoDB reads')],
  ['DynamoDB storage and PITR', (c) => c.startsWith('DynamoDB storage') || c.startsWith('DynamoDB point-in-time')],
  ['SQS, Scheduler, KMS', (c) => c.startsWith('SQS') || c.startsWith('Scheduler') || c.startsWith('KMS')],
  ['Secrets Manager', (c) => c.startsWith('Secrets Manager')],
  ['CloudWatch Logs', (c) => c.startsWith('CloudWatch Logs')],
  ['X-Ray', (c) => c.startsWith('X-Ray')],
];

/** One line for the report's headline. */
export function awsCostHeadline(a: AwsCostFigures): string | undefined {
  const by = (id: OptionId) => a.options.find((o) => o.id === id);
  const aip = by('aip');
  if (!aip) return undefined;
  const http = by('aip_http');
  const others = (['aip_queue', 'aip_tuned_wait', 'powertools', 'sfn_standard', 'sfn_express', 'temporal'] as const)
    .map((id) => by(id))
    .filter((o): o is OptionCost => o !== undefined)
    .map((o) => `${o.label} $${usd(o.usd_per_million)}`);
  const top = [...aip.lines].sort((x, y) => y.usd_per_million - x.usd_per_million).slice(0, 2);
  return (
    `- **AWS cost, all in** (${a.region} list prices read ${a.prices_read_on}): **$${usd(aip.usd_per_million)} per million executes with the REST API**` +
    `${http ? `, **$${usd(http.usd_per_million)} with the HTTP API**` : ''} ` +
    `(largest: ${top.map((l) => `${l.component} $${usd(l.usd_per_million)}`).join(', ')}); ${others.join(', ')}.`
  );
}
