/**
 * The AWS cost model: dollars per million executes of `payments.charge`, for
 * this runtime as deployed by infra/ (API Gateway REST API + Lambda TOKEN
 * authorizer, the submit Lambda, the invoke worker on an SQS event source,
 * DynamoDB on demand, EventBridge Scheduler for `outcome_unknown`) and, side
 * by side, three ways of making the same provider call:
 *
 * - `powertools`: API Gateway → one Lambda with Powertools idempotency
 *   (`makeIdempotent` + DynamoDB persistence: PutItem, then UpdateItem) around
 *   the provider call, answering synchronously;
 * - `sfn_standard`: API Gateway → StartExecution (service integration, no
 *   Lambda; the execution name is the idempotency key, which Standard
 *   workflows deduplicate, and the execution history is the durable record),
 *   a single Task state invoking a Lambda that calls the provider; the client
 *   reads the result with one DescribeExecution (a second API request);
 * - `sfn_express`: API Gateway → StartSyncExecution, a single Task state
 *   invoking a Lambda that wraps the call in Powertools idempotency (Express
 *   runs at least once and keeps no execution history, so it needs the record).
 *
 * Pure: inputs in, figures out; no I/O, no clock. bench/sections/awscost.ts
 * gathers the inputs from the other sections' measurements (or the previous
 * run) and states where each came from; test/unit/bench/awscost-model.test.ts
 * checks the arithmetic on a fixed input.
 *
 * Conventions:
 * - every quantity is per execute, in the unit of its price; `usd_per_million`
 *   = quantity × price per unit × 1,000,000;
 * - Lambda duration is billed per invocation, rounded up to the millisecond,
 *   at the configured memory (GB = MB / 1024); a cold start adds its INIT
 *   duration (billed since 2025-08-01) on a `cold_start_share` of invocations;
 * - an SQS event source receives and deletes once per batch: `esm_batch_size`
 *   messages share one ReceiveMessage, one DeleteMessageBatch and one
 *   invocation (records run concurrently, so the invocation lasts about as
 *   long as one attempt); idle long polls of the event source are a fixed
 *   monthly cost, not per execute, and left out (as are the sweeper's runs);
 * - an `outcome_unknown_share` of executes lose the provider's answer: their
 *   attempt settles `outcome_unknown` (its own measured cost), creates a
 *   one-time schedule (API call: not billed), the schedule fires once
 *   (a Scheduler invocation) into the reconcile queue (a SendMessage), and the
 *   reconcile consumer runs once (measured cost) and settles it;
 * - free tiers are left out.
 */
import { SettleTimes, type SettleProbe, type WaitClock, type WaitPollOptions, waitForSettlement } from '../../functions/shared/wait.js';
import { costOf, type PriceId, type PriceList } from './prices.js';

export interface DynamoUnits {
  /** Write request units as AWS bills them (transactional items twice). */
  readonly wru: number;
  /** Read request units (strongly consistent: 1 per 4 KB). */
  readonly rru: number;
}

export interface AipInputs {
  /** API Gateway requests per execute (1: POST /v1/actions with `Prefer: wait`). */
  readonly api_requests: number;
  /** Billed duration of the submit Lambda per execute: admission plus the `Prefer: wait` until it answers, ms. */
  readonly api_ms: number;
  /** Reads of the wait (its polls and the final view), RRU. */
  readonly wait_rru: number;
  /** Worker attempt of an execute that commits, ms (in-process). */
  readonly attempt_ms: number;
  /** Admission + attempt of an execute that commits (the wait's reads apart). */
  readonly committed: DynamoUnits;
  /** The same execute when the provider's answer is lost (settles outcome_unknown). */
  readonly outcome_unknown: DynamoUnits & { readonly attempt_ms: number };
  /** One run of the reconcile consumer on such a record (outcome_unknown → reconciled). */
  readonly reconcile: DynamoUnits & { readonly ms: number };
  /** Size of one queue message (the InvokeMessage: IDs and a fence), bytes. */
  readonly message_bytes: number;
  /** Invoke-queue messages sent per execute (measured: SendMessage calls of the execute scenario); each is received and deleted once. */
  readonly invoke_messages: number;
  /**
   * The first attempt runs inside the submit function (`attemptWhenWaited: "inline"`, a client that waits;
   * lib/runtime/pipeline/inline-attempt.ts): `api_ms` is then admission + attempt (the outcome_unknown share's attempt
   * in its place), and there is no worker invocation, no invoke message and no wait poll. Absent or false: the queue
   * path (SQS, the worker, and the wait's polls in `api_ms` and `wait_rru`).
   */
  readonly attempt_inline?: boolean;
}

/** The queue path's figures beside an inline model: the waited execute through SQS (today's), and a client that does not wait. */
export interface QueuePaths {
  readonly queue: Pick<AipInputs, 'api_ms' | 'wait_rru' | 'invoke_messages'>;
  readonly no_wait: Pick<AipInputs, 'api_ms' | 'wait_rru' | 'invoke_messages'>;
}

export interface ModelInputs {
  readonly prices: PriceList;
  readonly aip: AipInputs;
  /** Powertools idempotency around the provider call: handler duration and its DynamoDB units. */
  readonly powertools: { readonly ms: number; readonly units: DynamoUnits };
  /** A bare provider call from a Lambda (the Standard workflow's task), ms. */
  readonly provider_call_ms: number;
  /** The JWT authorizer's warm invocation, ms. */
  readonly authorizer_ms: number;
  /** INIT (cold start) duration billed per cold invocation, ms; `small` = a bundle without the runtime (peer Lambdas). */
  readonly init_ms: { readonly api: number; readonly worker: number; readonly authorizer: number; readonly reconcile: number; readonly small: number };
  readonly assumptions: Assumptions;
  /**
   * The charges beside requests and duration (logs, traces, the credential,
   * storage, KMS) and the Temporal Cloud option. Absent: the model prices
   * requests, duration, DynamoDB units, SQS and Scheduler only, and the REST
   * front only (the shape of the earlier reports).
   */
  readonly all_in?: AllInInputs;
}

/** Inputs of the all-in charges (see {@link allInLines}). */
export interface AllInInputs {
  /** Bytes the functions' own code writes to CloudWatch Logs per execute: Powertools log lines and EMF metric documents (measured). */
  readonly code_log_bytes: number;
  /** Lambda's own records per successful invocation at the stack's system log level (JSON log format; none at WARN), bytes (bench/lib/log-records.ts). */
  readonly platform_log_bytes_per_invocation: number;
  /** One API Gateway access log line, bytes, per front (bench/lib/log-records.ts, the stage's format with typical values). */
  readonly access_log_bytes: { readonly rest: number; readonly http: number };
  /** A peer Lambda's own log output per invocation (one Powertools line), bytes. */
  readonly peer_code_log_bytes: number;
  /**
   * Share of invocations Lambda's own X-Ray sampling records, where a trace
   * starts in Lambda (an SQS-triggered invocation; every function behind the
   * HTTP API, which does not trace): X-Ray's default, the first request each
   * second then 5 %, which Lambda does not let a function configure.
   */
  readonly xray_sampled_share: number;
  /** Share of REST API requests the stage's sampling rule records (`api.xraySampling.rate` at a sustained rate); the authorizer and the route function join that trace. */
  readonly xray_rest_sampled_share: number;
  /**
   * X-Ray traces an execute starts: the API request's, and the worker
   * invocation's (an SQS-triggered invocation records its own trace, linked
   * to the sender's, not a continuation of it: X-Ray's SQS trace linking).
   */
  readonly xray_traces_per_execute: number;
  /** Recorded traces later retrieved or scanned (console, Insights), per recorded trace. */
  readonly xray_retrieved_share: number;
  /** The credential cache's bounded age (Powertools Parameters `maxAge`), s: one GetSecretValue per execution environment per age. */
  readonly secret_max_age_s: number;
  /** Executes one warm worker environment handles per second (how many executes share one fetch). */
  readonly executes_per_s_per_environment: number;
  /** Bytes an execute leaves in the table (items with their 100-byte overhead, index entries). */
  readonly stored_bytes_per_execute: number;
  /** Months an execute's items stay in the table (until their TTL). */
  readonly retention_months: number;
  /** Point-in-time recovery on the table (infra/stateful-stack.ts: on). */
  readonly pitr: boolean;
  /** SSE-KMS queues (`queueEncryption: "kms"`): SQS asks KMS for a data key once per reuse period per principal. */
  readonly queue_kms: boolean;
  /** SQS's KMS data key reuse period, s (the default 300). */
  readonly kms_data_key_reuse_s: number;
  /** Temporal Cloud actions of one execute as a workflow with one activity (workflow started, activity started). */
  readonly temporal_actions: number;
  /** The Lambda that starts the workflow and waits for its result, beyond the activity's own time, ms. */
  readonly temporal_client_ms: number;
}

/** The API Gateway front: REST API with the Lambda TOKEN authorizer, or HTTP API with the built-in JWT authorizer. */
export type ApiFront = 'rest' | 'http';

export interface Assumptions {
  /** Configured memory, MB (infra/functions.ts: 512 unless a definition says otherwise). */
  readonly memory_mb: { readonly api: number; readonly worker: number; readonly authorizer: number; readonly reconcile: number; readonly peer: number };
  /** Authorizer invocations per API request: 1 without a cache hit; the TOKEN authorizer caches per token for the configured TTL. */
  readonly authorizer_invocations_per_request: number;
  /** Messages per event-source batch (the worker's `batchSize` is 5; at low rates batches hold 1). */
  readonly esm_batch_size: number;
  /** Share of executes whose provider answer is lost (→ outcome_unknown → one reconciliation). */
  readonly outcome_unknown_share: number;
  /** Share of invocations that are cold starts (INIT billed). */
  readonly cold_start_share: number;
  /** Provider latency beyond what was measured (the simulator answers in about a millisecond), ms; added wherever a function waits on the provider. */
  readonly extra_provider_ms: number;
  /** State transitions of the minimal Standard workflow (one Task state). */
  readonly standard_transitions: number;
  /** API Gateway requests of the Standard option (StartExecution, then one DescribeExecution). */
  readonly standard_api_requests: number;
  /** Express billed memory, MB (64 MB chunks; a one-state workflow with a small payload uses about 50 MB). */
  readonly express_memory_mb: number;
  /** Express workflow time on top of its Task's Lambda (state entry, invoke), ms, before rounding up to 100 ms. */
  readonly express_overhead_ms: number;
}

type BaseOptionId = 'aip' | 'powertools' | 'sfn_standard' | 'sfn_express' | 'temporal';
export type OptionId = BaseOptionId | `${BaseOptionId}_http` | 'aip_tuned_wait' | 'aip_queue' | 'aip_queue_http' | 'aip_no_wait';

export interface CostLine {
  readonly component: string;
  readonly price: PriceId;
  /** Per execute, in the price's unit. */
  readonly quantity: number;
  readonly unit: string;
  readonly usd_per_million: number;
}

export interface OptionCost {
  readonly id: OptionId;
  readonly label: string;
  readonly front: ApiFront;
  readonly lines: CostLine[];
  readonly usd_per_million: number;
}

const MS_PER_S = 1000;
const MB_PER_GB = 1024;
const SQS_CHUNK_BYTES = 64 * 1024;

/**
 * A fixed `Prefer: wait` schedule, in the handler's options: the first poll
 * at once, then `intervalMs` growing ×1.5 to `maxIntervalMs`, nothing learnt
 * (the latency section's "tuned" and "previous" variants).
 */
export function fixedWaitPoll(intervalMs: number, maxIntervalMs: number): WaitPollOptions {
  return { intervalMs, fastWindowMs: 0, maxIntervalMs, adaptive: false, firstMs: 0 };
}

/** The schedule deployed before the adaptive one: at once, then 200 ms ×1.5 ≤ 1 s. */
export const PREVIOUS_WAIT_POLL: WaitPollOptions = fixedWaitPoll(200, 1_000);

/** Where virtual time starts (any instant: the settle times are differences). */
const VIRTUAL_EPOCH_MS = Date.UTC(2026, 0, 1);

/**
 * When a `Prefer: wait` on POST notices an action that settles `settleMs`
 * after the wait began, each poll taking `pollMs`, and how many polls it made
 * by then: functions/shared/wait.ts `waitForSettlement` itself (what the
 * submit handler runs), on a virtual clock, with `poll` the handler's
 * schedule options (default: the deployed, adaptive one). A poll sees the
 * settlement when it starts at or after it. An adaptive schedule first runs
 * `warmups` waits of the same settle time in the same execution environment,
 * so the figure is the steady state of an environment that has learnt the
 * capability's settle time (a fresh environment's first wait polls after one
 * interval, then every interval).
 */
export async function waitNotice(
  settleMs: number,
  pollMs: number,
  poll: WaitPollOptions = {},
  warmups = 5,
): Promise<{ readonly notice_ms: number; readonly polls: number }> {
  let now = VIRTUAL_EPOCH_MS;
  const clock: WaitClock = {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
    },
  };
  const times = new SettleTimes();
  const once = async () => {
    const began = now;
    const fetch = async (): Promise<SettleProbe> => {
      const start = now - began;
      now += pollMs;
      return start >= settleMs ? { status: 'completed', completed_at: new Date(began + settleMs).toISOString() } : { status: 'running' };
    };
    const outcome = await waitForSettlement(fetch, { options: poll, times, deadline: began + 60_000, clock, learn: 'payments.charge execute' });
    return { notice_ms: now - began, polls: outcome.polls };
  };
  for (let i = 0; i < (poll.adaptive === false ? 0 : warmups); i++) await once();
  return once();
}

/** GB-seconds of `invocations` invocations of `ms` each (billed per 1 ms, rounded up) at `memoryMb`. */
export function gbSeconds(invocations: number, ms: number, memoryMb: number): number {
  return invocations * (Math.ceil(Math.max(0, ms)) / MS_PER_S) * (memoryMb / MB_PER_GB);
}

/** Express duration: rounded up to 100 ms, memory in 64 MB chunks. */
export function expressGbSeconds(ms: number, memoryMb: number): number {
  const billedS = (Math.ceil(Math.max(1, ms) / 100) * 100) / MS_PER_S;
  const billedMb = Math.ceil(Math.max(1, memoryMb) / 64) * 64;
  return billedS * (billedMb / MB_PER_GB);
}

class Lines {
  readonly lines: CostLine[] = [];
  constructor(private readonly prices: PriceList) {}

  add(component: string, price: PriceId, quantity: number): this {
    if (!(quantity > 0)) return this;
    const p = this.prices[price];
    this.lines.push({ component, price, quantity, unit: p.unit, usd_per_million: costOf(p, quantity) * 1e6 });
    return this;
  }

  /** Requests and duration of a Lambda function. */
  lambda(name: string, invocations: number, ms: number, memoryMb: number): this {
    return this.add(`${name}: invocations`, 'lambdaRequest', invocations).add(`${name}: duration`, 'lambdaArmGbSecond', gbSeconds(invocations, ms, memoryMb));
  }

  option(id: OptionId, label: string, front: ApiFront = 'rest'): OptionCost {
    return { id, label, front, lines: this.lines, usd_per_million: this.lines.reduce((s, l) => s + l.usd_per_million, 0) };
  }
}

/** Cold-start GB-seconds: `share` of each function's invocations pay its INIT. */
function initGbSeconds(share: number, fns: readonly { invocations: number; init_ms: number; memory_mb: number }[]): number {
  return fns.reduce((s, f) => s + gbSeconds(f.invocations * share, f.init_ms, f.memory_mb), 0);
}

/** The API Gateway requests and, with the REST API, its authorizer Lambda; returns the authorizer's invocations (0 with the HTTP API's JWT authorizer). */
function authorizer(l: Lines, m: ModelInputs, apiRequests: number, front: ApiFront = 'rest'): number {
  if (front === 'http') {
    l.add('API Gateway HTTP API requests (JWT authorizer: no charge)', 'apigwHttpRequest', apiRequests);
    return 0;
  }
  const invocations = apiRequests * m.assumptions.authorizer_invocations_per_request;
  l.add('API Gateway REST requests', 'apigwRestRequest', apiRequests);
  l.lambda('Authorizer Lambda', invocations, m.authorizer_ms, m.assumptions.memory_mb.authorizer);
  return invocations;
}

const BYTES_PER_GB = 1024 ** 3;

/**
 * CloudWatch Logs ingestion and X-Ray traces of one execute: `invocations`
 * Lambda invocations, `apiRequests` access log lines and traces; each API
 * request's trace is sampled by the front (the REST stage's rule, or Lambda's
 * own sampling behind the HTTP API), each of the `lambdaTraces` that start in
 * Lambda (SQS-triggered) by Lambda's.
 */
function observabilityLines(
  l: Lines,
  x: AllInInputs,
  front: ApiFront,
  o: { invocations: number; apiRequests: number; codeBytes: number; lambdaTraces: number },
): void {
  const bytes = o.codeBytes + o.invocations * x.platform_log_bytes_per_invocation + o.apiRequests * x.access_log_bytes[front];
  l.add('CloudWatch Logs ingestion (code, platform records, access log)', 'logsIngestGb', bytes / BYTES_PER_GB);
  const recorded = o.apiRequests * (front === 'rest' ? x.xray_rest_sampled_share : x.xray_sampled_share) + o.lambdaTraces * x.xray_sampled_share;
  l.add('X-Ray traces recorded (sampled)', 'xrayTraceRecorded', recorded);
  l.add('X-Ray traces retrieved or scanned', 'xrayTraceRetrieved', recorded * x.xray_retrieved_share);
}

/**
 * This runtime's charges beside requests, duration, DynamoDB units, SQS and
 * Scheduler:
 * - CloudWatch Logs: the code's measured bytes, Lambda's platform records
 *   per invocation and the API's access log line, at the ingestion price;
 * - X-Ray: the API request's trace at the front's sampling share (the REST
 *   stage's rule; Lambda's own behind the HTTP API), the worker's and the
 *   reconcile consumer's at Lambda's, and those later read;
 * - Secrets Manager: the worker's credential cache fetches once per
 *   execution environment per bounded age, so one GetSecretValue serves
 *   `age × executes per second per environment` executes; each new
 *   environment (a cold start) fetches once more; each fetch decrypts with
 *   KMS (a KMS request);
 * - DynamoDB storage and point-in-time recovery: the bytes an execute
 *   leaves, per month retained (PITR bills the table size per GB-month);
 * - KMS for SSE-KMS queues: one data key request per reuse period per
 *   principal and queue, shared by the messages of that period.
 */
function allInLines(
  l: Lines,
  m: ModelInputs,
  x: AllInInputs,
  front: ApiFront,
  invocations: { api: number; authorizer: number; worker: number; reconcile: number },
): void {
  const a = m.assumptions;
  const total = invocations.api + invocations.authorizer + invocations.worker + invocations.reconcile;
  // The API request's trace, then the traces that start in Lambda: the worker's (per invoke message; none when the
  // attempt runs in the submit, inside the API request's trace) and the reconcile consumer's.
  observabilityLines(l, x, front, {
    invocations: total,
    apiRequests: invocations.api,
    codeBytes: x.code_log_bytes,
    lambdaTraces: (invocations.worker > 0 ? Math.max(0, x.xray_traces_per_execute - 1) : 0) + invocations.reconcile,
  });
  // The function that runs the attempt caches the credential per environment: the worker, or the submit (inline).
  const attempts = invocations.worker > 0 ? invocations.worker : invocations.api;
  const fetches = 1 / (x.secret_max_age_s * x.executes_per_s_per_environment) + a.cold_start_share * (attempts + invocations.reconcile);
  l.add('Secrets Manager GetSecretValue (cached per environment, bounded age)', 'secretsManagerApiCall', fetches);
  l.add(
    'KMS requests (Secrets Manager decrypt; SSE-KMS queue data keys)',
    'kmsRequest',
    fetches + (x.queue_kms ? (2 + a.outcome_unknown_share * 2) / (x.kms_data_key_reuse_s * x.executes_per_s_per_environment) : 0),
  );
  const gbMonths = (x.stored_bytes_per_execute / BYTES_PER_GB) * x.retention_months;
  l.add(`DynamoDB storage (${x.retention_months} month${x.retention_months === 1 ? '' : 's'} retained)`, 'dynamoStorageGbMonth', gbMonths);
  if (x.pitr)
    l.add(`DynamoDB point-in-time recovery (${x.retention_months} month${x.retention_months === 1 ? '' : 's'} retained)`, 'dynamoPitrGbMonth', gbMonths);
}

/** A peer option's logs and traces: its Lambda invocations, one access log line and one trace per API request. */
function peerAllIn(l: Lines, m: ModelInputs, front: ApiFront, invocations: number, apiRequests: number): void {
  const x = m.all_in;
  if (x === undefined) return;
  observabilityLines(l, x, front, { invocations, apiRequests, codeBytes: invocations * x.peer_code_log_bytes, lambdaTraces: 0 });
}

/** This runtime: submit (with its wait), worker attempt, and the outcome_unknown share's reconciliation. */
export function aipCost(m: ModelInputs, aip: AipInputs = m.aip, id: OptionId = 'aip', label = 'AIP runtime (this repo)', front: ApiFront = 'rest'): OptionCost {
  const a = m.assumptions;
  const p = a.outcome_unknown_share;
  const b = Math.max(1, a.esm_batch_size);
  const extra = a.extra_provider_ms;
  const l = new Lines(m.prices);
  const authInvocations = authorizer(l, m, aip.api_requests, front);
  const inline = aip.attempt_inline === true;
  let workerInvocations = 0;
  if (inline) {
    // The attempt runs in the submit: its duration is the admission and the attempt (the outcome_unknown share's own).
    l.add('Submit Lambda: invocations', 'lambdaRequest', aip.api_requests);
    l.add(
      'Submit Lambda: duration (admission + attempt inline)',
      'lambdaArmGbSecond',
      (1 - p) * gbSeconds(aip.api_requests, aip.api_ms + extra, a.memory_mb.api) +
        p * gbSeconds(aip.api_requests, Math.max(0, aip.api_ms - aip.attempt_ms) + aip.outcome_unknown.attempt_ms + extra, a.memory_mb.api),
    );
  } else {
    // The submit Lambda waits for the provider too when the client asked to wait.
    l.lambda('Submit Lambda (admission + Prefer: wait)', aip.api_requests, aip.api_ms + (aip.wait_rru > 0 ? extra : 0), a.memory_mb.api);
    workerInvocations = 1 / b;
    l.add('Worker Lambda: invocations', 'lambdaRequest', workerInvocations);
    l.add(
      'Worker Lambda: duration',
      'lambdaArmGbSecond',
      (1 - p) * gbSeconds(workerInvocations, aip.attempt_ms + extra, a.memory_mb.worker) +
        p * gbSeconds(workerInvocations, aip.outcome_unknown.attempt_ms + extra, a.memory_mb.worker),
    );
  }
  const reconcileInvocations = p / b;
  l.lambda('Reconcile Lambda (outcome_unknown share)', reconcileInvocations, aip.reconcile.ms + extra, a.memory_mb.reconcile);
  l.add(
    'Cold starts (INIT billed)',
    'lambdaArmGbSecond',
    initGbSeconds(a.cold_start_share, [
      { invocations: authInvocations, init_ms: m.init_ms.authorizer, memory_mb: a.memory_mb.authorizer },
      { invocations: aip.api_requests, init_ms: m.init_ms.api, memory_mb: a.memory_mb.api },
      { invocations: workerInvocations, init_ms: m.init_ms.worker, memory_mb: a.memory_mb.worker },
      { invocations: reconcileInvocations, init_ms: m.init_ms.reconcile, memory_mb: a.memory_mb.reconcile },
    ]),
  );
  l.add('DynamoDB writes', 'dynamoWriteRequestUnit', (1 - p) * aip.committed.wru + p * (aip.outcome_unknown.wru + aip.reconcile.wru));
  l.add('DynamoDB reads (execute)', 'dynamoReadRequestUnit', (1 - p) * aip.committed.rru + p * (aip.outcome_unknown.rru + aip.reconcile.rru));
  if (aip.wait_rru > 0) l.add('DynamoDB reads (Prefer: wait polls + final view)', 'dynamoReadRequestUnit', aip.wait_rru);
  const chunks = Math.max(1, Math.ceil(aip.message_bytes / SQS_CHUNK_BYTES));
  // Send (per 64 KB chunk), then one ReceiveMessage and one DeleteMessageBatch per batch.
  if (!inline) l.add('SQS invoke queue (send, receive, delete)', 'sqsStandardRequest', aip.invoke_messages * (chunks + 2 / b));
  // The schedule sends one ReconcileMessage (IDs only: one chunk); the reconcile consumer receives and deletes it.
  l.add('SQS reconcile queue (outcome_unknown share)', 'sqsStandardRequest', p * (1 + 2 / b));
  l.add('Scheduler invocations (outcome_unknown share)', 'schedulerInvocation', p);
  if (m.all_in !== undefined) {
    allInLines(l, m, m.all_in, front, { api: aip.api_requests, authorizer: authInvocations, worker: workerInvocations, reconcile: reconcileInvocations });
  }
  return l.option(id, label, front);
}

/** INIT billed for a peer option's cold starts: its authorizer invocations and its one small Lambda. */
function peerColdStarts(l: Lines, m: ModelInputs, authInvocations: number): void {
  const a = m.assumptions;
  l.add(
    'Cold starts (INIT billed)',
    'lambdaArmGbSecond',
    initGbSeconds(a.cold_start_share, [
      { invocations: authInvocations, init_ms: m.init_ms.authorizer, memory_mb: a.memory_mb.authorizer },
      { invocations: 1, init_ms: m.init_ms.small, memory_mb: a.memory_mb.peer },
    ]),
  );
}

export function powertoolsCost(m: ModelInputs, front: ApiFront = 'rest'): OptionCost {
  const a = m.assumptions;
  const l = new Lines(m.prices);
  const authInvocations = authorizer(l, m, 1, front);
  l.lambda('Lambda with Powertools idempotency', 1, m.powertools.ms + a.extra_provider_ms, a.memory_mb.peer);
  peerColdStarts(l, m, authInvocations);
  l.add('DynamoDB writes', 'dynamoWriteRequestUnit', m.powertools.units.wru);
  l.add('DynamoDB reads (execute)', 'dynamoReadRequestUnit', m.powertools.units.rru);
  peerAllIn(l, m, front, 1 + authInvocations, 1);
  return front === 'http'
    ? l.option('powertools_http', 'Powertools idempotency (HTTP API + Lambda)', 'http')
    : l.option('powertools', 'Powertools idempotency (API Gateway + Lambda)');
}

export function standardCost(m: ModelInputs, front: ApiFront = 'rest'): OptionCost {
  const a = m.assumptions;
  const l = new Lines(m.prices);
  const authInvocations = authorizer(l, m, a.standard_api_requests, front);
  l.add('Step Functions Standard transitions', 'sfnStandardTransition', a.standard_transitions);
  l.lambda('Task Lambda (provider call)', 1, m.provider_call_ms + a.extra_provider_ms, a.memory_mb.peer);
  peerColdStarts(l, m, authInvocations);
  peerAllIn(l, m, front, 1 + authInvocations, a.standard_api_requests);
  return front === 'http'
    ? l.option('sfn_standard_http', 'Step Functions Standard (1 Task state), HTTP API', 'http')
    : l.option('sfn_standard', 'Step Functions Standard (1 Task state)');
}

export function expressCost(m: ModelInputs, front: ApiFront = 'rest'): OptionCost {
  const a = m.assumptions;
  const l = new Lines(m.prices);
  const authInvocations = authorizer(l, m, 1, front);
  const taskMs = m.powertools.ms + a.extra_provider_ms;
  l.add('Step Functions Express requests', 'sfnExpressRequest', 1);
  l.add('Step Functions Express duration', 'sfnExpressGbSecond', expressGbSeconds(taskMs + a.express_overhead_ms, a.express_memory_mb));
  l.lambda('Task Lambda (Powertools idempotency + provider call)', 1, taskMs, a.memory_mb.peer);
  peerColdStarts(l, m, authInvocations);
  l.add('DynamoDB writes', 'dynamoWriteRequestUnit', m.powertools.units.wru);
  l.add('DynamoDB reads (execute)', 'dynamoReadRequestUnit', m.powertools.units.rru);
  peerAllIn(l, m, front, 1 + authInvocations, 1);
  return front === 'http'
    ? l.option('sfn_express_http', 'Step Functions Express (1 Task state, sync), HTTP API', 'http')
    : l.option('sfn_express', 'Step Functions Express (1 Task state, sync)');
}

/**
 * Temporal Cloud: API Gateway → a Lambda that starts the workflow (the
 * idempotency key as workflow ID: Temporal de-duplicates the start) and waits
 * for its result; the workflow runs one activity that calls the provider, on
 * a Temporal Worker. Billed: the Temporal actions (workflow started, activity
 * started), the client Lambda for the activity's time plus its own. Not per
 * execute, left out: the Worker's always-on compute and Temporal's plan fee
 * and history storage.
 */
export function temporalCost(m: ModelInputs, x: AllInInputs, front: ApiFront = 'rest'): OptionCost {
  const a = m.assumptions;
  const l = new Lines(m.prices);
  const authInvocations = authorizer(l, m, 1, front);
  l.add('Temporal Cloud actions (workflow started, activity started)', 'temporalAction', x.temporal_actions);
  l.lambda('Client Lambda (start the workflow, wait for its result)', 1, m.provider_call_ms + a.extra_provider_ms + x.temporal_client_ms, a.memory_mb.peer);
  peerColdStarts(l, m, authInvocations);
  peerAllIn(l, m, front, 1 + authInvocations, 1);
  return front === 'http' ? l.option('temporal_http', 'Temporal Cloud (1 activity), HTTP API', 'http') : l.option('temporal', 'Temporal Cloud (1 activity)');
}

/**
 * Every option; `tunedWait` adds the runtime with a fixed `Prefer: wait` poll, at once then every 25 ms (the latency
 * section's "tuned" variant, a queue path), beside the deployed adaptive one. `queuePaths`, with an inline model
 * (`aip.attempt_inline`): the same waited execute through the queue (`attemptWhenWaited: "queue"`, REST and HTTP API),
 * and an execute whose client does not wait (the queue path, no polls).
 */
export function costModel(m: ModelInputs, tunedWait?: Pick<AipInputs, 'api_ms' | 'wait_rru'>, queuePaths?: QueuePaths): OptionCost[] {
  const tuned =
    tunedWait !== undefined
      ? [aipCost(m, { ...m.aip, attempt_inline: false, ...tunedWait }, 'aip_tuned_wait', 'AIP runtime, Prefer: wait fixed 25 ms poll')]
      : [];
  const queued = m.aip.attempt_inline === true && queuePaths !== undefined ? queuePaths : undefined;
  const queue = (front: ApiFront): OptionCost[] =>
    queued === undefined
      ? []
      : [
          aipCost(
            m,
            { ...m.aip, attempt_inline: false, ...queued.queue },
            front === 'rest' ? 'aip_queue' : 'aip_queue_http',
            `AIP runtime, attempt through SQS (attemptWhenWaited queue)${front === 'http' ? ', HTTP API' : ''}`,
            front,
          ),
        ];
  const noWait =
    queued === undefined ? [] : [aipCost(m, { ...m.aip, attempt_inline: false, ...queued.no_wait }, 'aip_no_wait', 'AIP runtime, client does not wait (SQS)')];
  const x = m.all_in;
  if (x === undefined) return [aipCost(m), ...queue('rest'), ...noWait, ...tuned, powertoolsCost(m), standardCost(m), expressCost(m)];
  // All in: every option behind each front, REST first.
  return [
    aipCost(m),
    ...queue('rest'),
    ...noWait,
    ...tuned,
    powertoolsCost(m),
    standardCost(m),
    expressCost(m),
    temporalCost(m, x),
    aipCost(m, m.aip, 'aip_http', 'AIP runtime, HTTP API', 'http'),
    ...queue('http'),
    powertoolsCost(m, 'http'),
    standardCost(m, 'http'),
    expressCost(m, 'http'),
    temporalCost(m, x, 'http'),
  ];
}

// --- DynamoDB units of a measured scenario ------------------------------------------------------

/** What billedUnits reads of a cost-section scenario (bench/sections/cost.ts ScenarioFigures). */
export interface MeasuredScenario {
  /** The warm-up run's call trace, one line per request (bench/lib/meter.ts traceLine). */
  readonly trace: readonly string[];
  /** Units billed from item images by AWS's rules (bench/lib/billing.ts), when the run billed them. */
  readonly billed?: { readonly total: { readonly wru: number; readonly rru: number; readonly index_wru: number; readonly estimated_requests: number } };
}

const TRACE_LINE = /^\s*([A-Za-z]+)\s+(\[[^\]]*\]|[^\s(]+)?\s*(?:\(([A-Za-z]+)\))?\s*(?:([\d.]+) CU)?/;
const READ_OPS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']);
const WRITE_OPS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);

/**
 * DynamoDB units of one scenario as AWS bills them: the billed figures when
 * the run has them (index writes included), else an estimate from the call
 * trace: DynamoDB Local's reported capacity per request (1 unit when it
 * reports none), every TransactWriteItems raised to at least 2 WRU per item
 * it carries (AWS bills each item twice, at least 1 KB each; DynamoDB Local
 * reports less for multi-item transactions) — a lower bound.
 */
export function billedUnits(s: MeasuredScenario): DynamoUnits & { readonly source: string } {
  const b = s.billed?.total;
  if (b !== undefined) {
    const refused = b.estimated_requests > 0 ? `; ${b.estimated_requests} refused write(s) at 1 WRU each` : '';
    return {
      wru: b.wru + b.index_wru,
      rru: b.rru,
      source: `cost section, billed from item sizes by AWS's rules (billed.total${b.index_wru > 0 ? `, ${b.index_wru} index WRU included` : ''}${refused})`,
    };
  }
  let wru = 0;
  let rru = 0;
  for (const line of s.trace) {
    if (/^\S.*:$/.test(line)) continue; // a phase heading
    const m = TRACE_LINE.exec(line);
    if (!m) continue;
    const [, op, target, , cu] = m;
    const capacity = cu !== undefined ? Number(cu) : undefined;
    if (READ_OPS.has(op!)) rru += capacity ?? 1;
    else if (op === 'TransactWriteItems') {
      const items = target?.startsWith('[')
        ? target
            .slice(1, -1)
            .split(',')
            .filter((x) => x.trim() !== '').length
        : 1;
      wru += Math.max(2 * items, capacity ?? 0);
    } else if (WRITE_OPS.has(op!)) wru += capacity ?? 1;
  }
  return {
    wru,
    rru,
    source:
      "estimated from the cost section's call trace (DynamoDB Local capacity per request; each TransactWriteItems at least 2 WRU per item): a lower bound",
  };
}

// --- bytes an execute leaves in the table ------------------------------------------------------

const ITEM_OVERHEAD_BYTES = 100;
const INDEX_ENTRY_BYTES = 100 + 100; // key attributes (table and index keys, KEYS_ONLY projection) + the 100-byte overhead

/**
 * Bytes an execute leaves in the table, from the cost section's billed call
 * trace (`{billed: …; KIND 755 B, TXN 776→917 B in 1 index, …}`): every item
 * kind's last size (an update replaces the item), every receipt put (each a new
 * item), 100 bytes of overhead per item, and the index entries the items hold
 * after their last write (keys + overhead each). An entry that a later write
 * removed (a record's `byStatus` entry, deleted when it settles) is not stored.
 */
export function storedBytes(trace: readonly string[]): { readonly bytes: number; readonly items: number; readonly index_entries: number } {
  const last = new Map<string, { size: number; entries: number }>();
  let receipts = 0;
  let receiptBytes = 0;
  let receiptEntries = 0;
  for (const line of trace) {
    const billed = /\{billed: ([^}]*)\}/.exec(line)?.[1];
    if (billed === undefined) continue;
    // A lone write names its item as `PutItem ROUTE` / `UpdateItem ACTION`, a TransactWriteItems as `Put:RCPT`.
    const lone = /^\s*(PutItem|UpdateItem) ([A-Z]+) /.exec(line);
    const puts = new Set([...line.matchAll(/Put:([A-Z]+)/g)].map((m) => m[1]!));
    if (lone?.[1] === 'PutItem') puts.add(lone[2]!);
    const writes = (kind: string) => puts.has(kind) || line.includes(`Update:${kind}`) || lone?.[2] === kind;
    for (const m of billed.matchAll(/([A-Z]+) (?:\d+→)?(\d+) B(?: in (\d+) index)?/g)) {
      const [, kind, size, inIndexes] = m;
      const entries = Number(inIndexes ?? 0);
      if (kind === 'RCPT' && puts.has('RCPT')) {
        receipts++;
        receiptBytes += Number(size);
        receiptEntries += entries;
      } else if (writes(kind!)) {
        last.set(kind!, { size: Number(size), entries });
      }
    }
  }
  const items = last.size + receipts;
  const indexEntries = [...last.values()].reduce((x, y) => x + y.entries, 0) + receiptEntries;
  const bytes = [...last.values()].reduce((x, y) => x + y.size, 0) + receiptBytes + items * ITEM_OVERHEAD_BYTES + indexEntries * INDEX_ENTRY_BYTES;
  return { bytes, items, index_entries: indexEntries };
}
