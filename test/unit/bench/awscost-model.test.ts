/**
 * The AWS cost model's arithmetic (bench/lib/awscost-model.ts) on a fixed
 * input, against figures worked out by hand below. The prices are written
 * out here (the values of bench/lib/prices.ts on 2026-12-02), so a new price
 * list changes the report, not this test.
 */
import { describe, expect, it } from 'vitest';
import {
  aipCost,
  costModel,
  expressCost,
  fixedWaitPoll,
  expressGbSeconds,
  gbSeconds,
  PREVIOUS_WAIT_POLL,
  powertoolsCost,
  standardCost,
  storedBytes,
  waitNotice,
  type AllInInputs,
  type ModelInputs,
} from '../../../bench/lib/awscost-model.js';
import { PRICES, type PriceList } from '../../../bench/lib/prices.js';

const prices: PriceList = {
  ...PRICES,
  apigwRestRequest: { ...PRICES.apigwRestRequest, usd: 3.5, per: 1e6 },
  lambdaRequest: { ...PRICES.lambdaRequest, usd: 0.2, per: 1e6 },
  lambdaArmGbSecond: { ...PRICES.lambdaArmGbSecond, usd: 0.0000133334, per: 1 },
  dynamoWriteRequestUnit: { ...PRICES.dynamoWriteRequestUnit, usd: 0.625, per: 1e6 },
  dynamoReadRequestUnit: { ...PRICES.dynamoReadRequestUnit, usd: 0.125, per: 1e6 },
  sqsStandardRequest: { ...PRICES.sqsStandardRequest, usd: 0.4, per: 1e6 },
  schedulerInvocation: { ...PRICES.schedulerInvocation, usd: 1, per: 1e6 },
  sfnStandardTransition: { ...PRICES.sfnStandardTransition, usd: 25, per: 1e6 },
  sfnExpressRequest: { ...PRICES.sfnExpressRequest, usd: 1, per: 1e6 },
  sfnExpressGbSecond: { ...PRICES.sfnExpressGbSecond, usd: 0.06 / 3600, per: 1 },
};

const input: ModelInputs = {
  prices,
  aip: {
    api_requests: 1,
    api_ms: 199.2,
    wait_rru: 4,
    attempt_ms: 39.1,
    committed: { wru: 40, rru: 2 },
    outcome_unknown: { wru: 44, rru: 2, attempt_ms: 49.5 },
    reconcile: { wru: 50, rru: 4, ms: 59.9 },
    message_bytes: 300,
    invoke_messages: 1,
  },
  powertools: { ms: 9.2, units: { wru: 2, rru: 0 } },
  provider_call_ms: 2.5,
  authorizer_ms: 4.1,
  init_ms: { api: 300, worker: 300, authorizer: 100, reconcile: 300, small: 150 },
  assumptions: {
    memory_mb: { api: 512, worker: 512, authorizer: 512, reconcile: 512, peer: 512 },
    authorizer_invocations_per_request: 0.1,
    esm_batch_size: 1,
    outcome_unknown_share: 0.03,
    cold_start_share: 0.01,
    extra_provider_ms: 0,
    standard_transitions: 1,
    standard_api_requests: 2,
    express_memory_mb: 64,
    express_overhead_ms: 20,
  },
};

const line = (o: ReturnType<typeof aipCost>, component: string) => o.lines.find((l) => l.component === component);

describe('AWS cost model arithmetic', () => {
  it('bills Lambda per invocation rounded up to the millisecond, and Express per 100 ms and 64 MB', () => {
    // 2 invocations × ceil(4.1) = 5 ms × 0.5 GB = 2 × 0.005 × 0.5 = 0.005 GB-s
    expect(gbSeconds(2, 4.1, 512)).toBeCloseTo(0.005, 12);
    // ceil(29.2 / 100) = 1 → 0.1 s; 50 MB → 64 MB = 0.0625 GB: 0.00625 GB-s
    expect(expressGbSeconds(29.2, 50)).toBeCloseTo(0.00625, 12);
    // 101 ms → 0.2 s; 65 MB → 128 MB: 0.2 × 0.125 = 0.025
    expect(expressGbSeconds(101, 65)).toBeCloseTo(0.025, 12);
  });

  it("finds when a Prefer: wait loop notices a settlement, running the handler's own wait on a virtual clock", async () => {
    // The schedule deployed before, 3 ms polls, settled 85 ms after the wait began: polls start at 0 (3 ms, then 200 ms sleep) and 203 ≥ 85 → noticed at 206, 2 polls.
    expect(await waitNotice(85, 3, PREVIOUS_WAIT_POLL)).toEqual({ notice_ms: 206, polls: 2 });
    // Settled at 210: the poll at 203 is too early; next at 203 + 3 + 300 = 506 → 509, 3 polls.
    expect(await waitNotice(210, 3, PREVIOUS_WAIT_POLL)).toEqual({ notice_ms: 509, polls: 3 });
    // Fixed 25 ms ×1.5: polls start at 0, 28, 69 (28 + 3 + 38), 129 (69 + 3 + 57) ≥ 85 → noticed at 132, 4 polls.
    expect(await waitNotice(85, 3, fixedWaitPoll(25, 1_000))).toEqual({ notice_ms: 132, polls: 4 });
    // Already settled: the first poll sees it.
    expect(await waitNotice(0, 3, PREVIOUS_WAIT_POLL)).toEqual({ notice_ms: 3, polls: 1 });
    // Deployed (adaptive), the settle time learnt: the first poll one interval (25 ms) before it, at 60 (a miss, 3 ms), then 25 ms later at 88 ≥ 85 → 91, 2 polls.
    expect(await waitNotice(85, 3)).toEqual({ notice_ms: 91, polls: 2 });
    // Nothing learnt yet (no warm-up wait): polls at 25, 53, 81 miss, 109 sees it → 112, 4 polls.
    expect(await waitNotice(85, 3, {}, 0)).toEqual({ notice_ms: 112, polls: 4 });
  });

  it('prices an execute of this runtime as worked out by hand', () => {
    const aip = aipCost(input);
    // $ per million executes, p = 0.03 outcome_unknown, b = 1, a = 0.1 authorizer invocations per request, c = 0.01 cold:
    //   API Gateway        1 × 3.50                                                        = 3.50
    //   Authorizer         0.1 × 0.20 = 0.02; 0.1 × 0.005 s × 0.5 GB = 0.00025 GB-s × 13.3334 = 0.00333335
    //   Submit Lambda      1 × 0.20 = 0.20; ceil(199.2) = 200 ms: 0.2 × 0.5 = 0.1 GB-s × 13.3334 = 1.33334
    //   Worker Lambda      1 × 0.20 = 0.20; 0.97 × 0.04 × 0.5 + 0.03 × 0.05 × 0.5 = 0.02015 GB-s → 0.26866801
    //   Reconcile Lambda   0.03 × 0.20 = 0.006; 0.03 × 0.06 × 0.5 = 0.0009 GB-s → 0.01200006
    //   Cold starts        0.01 × (0.1 × 0.1 × 0.5 + 1 × 0.3 × 0.5 + 1 × 0.3 × 0.5 + 0.03 × 0.3 × 0.5) = 0.003095 GB-s → 0.04126687
    //   DynamoDB writes    0.97 × 40 + 0.03 × (44 + 50) = 41.62 WRU × 0.625                  = 26.0125
    //   DynamoDB reads     0.97 × 2 + 0.03 × (2 + 4) = 2.12 RRU × 0.125 = 0.265; wait 4 × 0.125 = 0.5
    //   SQS                (1 chunk + 2 / 1) = 3 × 0.40 = 1.20; reconcile 0.03 × 3 × 0.40     = 0.036
    //   Scheduler          0.03 × 1.00                                                      = 0.03
    //   total                                                                               = 33.62810829
    expect(line(aip, 'API Gateway REST requests')?.usd_per_million).toBeCloseTo(3.5, 9);
    expect(line(aip, 'Authorizer Lambda: duration')?.usd_per_million).toBeCloseTo(0.00333335, 9);
    expect(line(aip, 'Submit Lambda (admission + Prefer: wait): duration')?.quantity).toBeCloseTo(0.1, 12);
    expect(line(aip, 'Worker Lambda: duration')?.quantity).toBeCloseTo(0.02015, 12);
    expect(line(aip, 'Reconcile Lambda (outcome_unknown share): invocations')?.quantity).toBeCloseTo(0.03, 12);
    expect(line(aip, 'Cold starts (INIT billed)')?.quantity).toBeCloseTo(0.003095, 12);
    expect(line(aip, 'DynamoDB writes')?.quantity).toBeCloseTo(41.62, 9);
    expect(line(aip, 'DynamoDB writes')?.usd_per_million).toBeCloseTo(26.0125, 9);
    expect(line(aip, 'DynamoDB reads (execute)')?.quantity).toBeCloseTo(2.12, 9);
    expect(line(aip, 'SQS invoke queue (send, receive, delete)')?.quantity).toBe(3);
    expect(line(aip, 'Scheduler invocations (outcome_unknown share)')?.usd_per_million).toBeCloseTo(0.03, 9);
    expect(aip.usd_per_million).toBeCloseTo(33.62810829, 6);
  });

  it('prices the three alternatives as worked out by hand', () => {
    // Powertools: 3.50 + 0.02 + 0.00333335 + 0.20 + (ceil(9.2) = 10 ms: 0.005 GB-s → 0.066667)
    //   + cold 0.01 × (0.005 + 0.075) = 0.0008 GB-s → 0.01066672 + 2 WRU × 0.625 = 1.25  → 5.05066707
    expect(powertoolsCost(input).usd_per_million).toBeCloseTo(5.05066707, 6);
    // Standard: 2 × 3.50 + 0.2 × 0.20 + (0.2 × 0.005 × 0.5 = 0.0005 GB-s → 0.0066667) + 1 × 25
    //   + 0.20 + (ceil(2.5) = 3 ms: 0.0015 GB-s → 0.0200001) + cold 0.01 × (0.01 + 0.075) → 0.01133339  → 32.27800019
    expect(standardCost(input).usd_per_million).toBeCloseTo(32.27800019, 6);
    // Express: 3.50 + 0.02 + 0.00333335 + 1.00 + (9.2 + 20 ms → 100 ms × 64 MB = 0.00625 GB-s × 16.6667 = 0.10416667)
    //   + 0.20 + 0.066667 + 0.01066672 + 1.25  → 6.15483374
    expect(expressCost(input).usd_per_million).toBeCloseTo(6.15483374, 6);
  });

  it('adds the tuned-wait variant of the runtime when given, and a batch of 5 divides receives, deletes and invocations', () => {
    const options = costModel(input, { api_ms: 79.5, wait_rru: 6 });
    expect(options.map((o) => o.id)).toEqual(['aip', 'aip_tuned_wait', 'powertools', 'sfn_standard', 'sfn_express']);
    const tuned = options[1]!;
    // ceil(79.5) = 80 ms: 0.08 × 0.5 = 0.04 GB-s → 0.533336 (was 1.33334); wait reads 6 × 0.125 = 0.75 (was 0.5)
    expect(tuned.usd_per_million).toBeCloseTo(33.62810829 - 1.33334 + 0.533336 - 0.5 + 0.75, 6);
    const batched = aipCost({ ...input, assumptions: { ...input.assumptions, esm_batch_size: 5 } });
    expect(line(batched, 'SQS invoke queue (send, receive, delete)')?.quantity).toBeCloseTo(1.4, 12);
    expect(line(batched, 'Worker Lambda: invocations')?.quantity).toBeCloseTo(0.2, 12);
  });

  it('prices the attempt inside the submit (attempt_inline): no worker, no invoke message, no wait reads; the submit busy for admission + attempt', () => {
    const inline = { ...input.aip, attempt_inline: true, api_ms: 60, wait_rru: 0 };
    const o = aipCost({ ...input, aip: inline });
    expect(o.lines.map((l) => l.component)).not.toEqual(expect.arrayContaining(['Worker Lambda: invocations']));
    expect(line(o, 'SQS invoke queue (send, receive, delete)')).toBeUndefined();
    expect(line(o, 'DynamoDB reads (Prefer: wait polls + final view)')).toBeUndefined();
    expect(line(o, 'Submit Lambda: invocations')?.quantity).toBe(1);
    // 0.97 × 60 ms + 0.03 × (60 − 39.1 + 49.5 = 70.4 → 71 ms), at 0.5 GB
    expect(line(o, 'Submit Lambda: duration (admission + attempt inline)')?.quantity).toBeCloseTo(0.97 * 0.03 + 0.03 * 0.0355, 12);
    // The queue path and a client that does not wait beside it, only for an inline model.
    const paths = { queue: { api_ms: 199.2, wait_rru: 4, invoke_messages: 1 }, no_wait: { api_ms: 20, wait_rru: 0, invoke_messages: 1 } };
    const options = costModel({ ...input, aip: inline }, undefined, paths);
    expect(options.map((o) => o.id)).toEqual(['aip', 'aip_queue', 'aip_no_wait', 'powertools', 'sfn_standard', 'sfn_express']);
    expect(options[1]!.usd_per_million).toBeCloseTo(aipCost(input).usd_per_million, 9);
    expect(line(options[2]!, 'DynamoDB reads (Prefer: wait polls + final view)')).toBeUndefined();
    expect(costModel(input, undefined, paths).map((o) => o.id)).toEqual(['aip', 'powertools', 'sfn_standard', 'sfn_express']);
  });

  it('bills every 64 KB chunk of a message as a send, and each invoke message sent once received and deleted', () => {
    // 2 messages of 70 KB: 2 × (2 chunks + 2 / 1) = 8 requests × 0.40 = 3.20
    const big = aipCost({ ...input, aip: { ...input.aip, message_bytes: 70 * 1024, invoke_messages: 2 } });
    expect(line(big, 'SQS invoke queue (send, receive, delete)')?.quantity).toBe(8);
    expect(line(big, 'SQS invoke queue (send, receive, delete)')?.usd_per_million).toBeCloseTo(3.2, 9);
    // The reconcile queue's message is sent by the schedule: 0.03 × (1 chunk + 2) whatever the invoke queue carries.
    expect(line(big, 'SQS reconcile queue (outcome_unknown share)')?.quantity).toBeCloseTo(0.09, 12);
  });

  it('leaves out the outcome_unknown lines when no execute goes outcome_unknown', () => {
    const none = aipCost({ ...input, assumptions: { ...input.assumptions, outcome_unknown_share: 0 } });
    for (const c of [
      'Scheduler invocations (outcome_unknown share)',
      'SQS reconcile queue (outcome_unknown share)',
      'Reconcile Lambda (outcome_unknown share): invocations',
    ])
      expect(line(none, c)).toBeUndefined();
    // Writes are then the committed execute's alone: 40 WRU × 0.625.
    expect(line(none, 'DynamoDB writes')?.usd_per_million).toBeCloseTo(25, 9);
  });

  describe('all in', () => {
    const x: AllInInputs = {
      code_log_bytes: 1588,
      platform_log_bytes_per_invocation: 600,
      access_log_bytes: { rest: 700, http: 650 },
      peer_code_log_bytes: 570,
      xray_sampled_share: 0.05,
      xray_rest_sampled_share: 0.01,
      xray_traces_per_execute: 2,
      xray_retrieved_share: 0.1,
      secret_max_age_s: 300,
      executes_per_s_per_environment: 1,
      stored_bytes_per_execute: 6728,
      retention_months: 1,
      pitr: true,
      queue_kms: false,
      kms_data_key_reuse_s: 300,
      temporal_actions: 2,
      temporal_client_ms: 30,
    };
    const allIn: ModelInputs = { ...input, all_in: x };
    const GB = 1024 ** 3;

    it('adds logs, traces, the cached credential, storage and PITR to the runtime, REST and HTTP API', () => {
      const rest = aipCost(allIn);
      // Invocations: API 1 + authorizer 0.1 + worker 1 + reconcile 0.03 = 2.13 → platform 1,278 B; code 1,588 B; one REST access line 700 B.
      expect(line(rest, 'CloudWatch Logs ingestion (code, platform records, access log)')?.usd_per_million).toBeCloseTo(
        ((1588 + 2.13 * 600 + 700) / GB) * 0.5 * 1e6,
        9,
      );
      // The API request's trace at the stage's 1 %, the worker's (1) and the reconcile consumer's (0.03) at Lambda's 5 %:
      // 0.01 + 1.03 × 0.05 = 0.0615 traces × $5; a tenth of them read at $0.50.
      expect(line(rest, 'X-Ray traces recorded (sampled)')?.quantity).toBeCloseTo(0.0615, 12);
      expect(line(rest, 'X-Ray traces recorded (sampled)')?.usd_per_million).toBeCloseTo(0.3075, 9);
      expect(line(rest, 'X-Ray traces retrieved or scanned')?.usd_per_million).toBeCloseTo(0.003075, 9);
      // One fetch per environment per 300 s at 1 execute/s, plus one per cold worker or reconcile invocation: 1/300 + 0.01 × 1.03.
      const fetches = 1 / 300 + 0.01 * 1.03;
      expect(line(rest, 'Secrets Manager GetSecretValue (cached per environment, bounded age)')?.usd_per_million).toBeCloseTo(fetches * 5, 9);
      expect(line(rest, 'KMS requests (Secrets Manager decrypt; SSE-KMS queue data keys)')?.usd_per_million).toBeCloseTo(fetches * 3, 9);
      expect(line(rest, 'DynamoDB storage (1 month retained)')?.usd_per_million).toBeCloseTo((6728 / GB) * 0.25 * 1e6, 9);
      expect(line(rest, 'DynamoDB point-in-time recovery (1 month retained)')?.usd_per_million).toBeCloseTo((6728 / GB) * 0.2 * 1e6, 9);

      const http = costModel(allIn).find((o) => o.id === 'aip_http')!;
      expect(http.front).toBe('http');
      expect(http.lines.some((l) => l.component.startsWith('Authorizer'))).toBe(false);
      expect(line(http, 'API Gateway HTTP API requests (JWT authorizer: no charge)')?.usd_per_million).toBeCloseTo(1, 9);
      // The HTTP API does not trace: the submit Lambda samples the request's trace at Lambda's 5 % too (0.05 + 1.03 × 0.05).
      expect(line(http, 'X-Ray traces recorded (sampled)')?.quantity).toBeCloseTo(0.1015, 12);
      // No authorizer: 2.03 invocations; the HTTP API's access line.
      expect(line(http, 'CloudWatch Logs ingestion (code, platform records, access log)')?.usd_per_million).toBeCloseTo(
        ((1588 + 2.03 * 600 + 650) / GB) * 0.5 * 1e6,
        9,
      );
    });

    it('prices every option behind both fronts, Temporal Cloud included', () => {
      const options = costModel(allIn);
      expect(options.map((o) => o.id)).toEqual([
        'aip',
        'powertools',
        'sfn_standard',
        'sfn_express',
        'temporal',
        'aip_http',
        'powertools_http',
        'sfn_standard_http',
        'sfn_express_http',
        'temporal_http',
      ]);
      // A peer records one trace per API request at the front's share: the Standard option's two requests at the REST stage's 1 %.
      expect(line(options.find((o) => o.id === 'sfn_standard')!, 'X-Ray traces recorded (sampled)')?.quantity).toBeCloseTo(0.02, 12);
      const temporal = options.find((o) => o.id === 'temporal_http')!;
      expect(line(temporal, 'Temporal Cloud actions (workflow started, activity started)')?.usd_per_million).toBeCloseTo(50, 9);
      // The client Lambda: ceil(2.5 + 30) = 33 ms at 0.5 GB.
      expect(line(temporal, 'Client Lambda (start the workflow, wait for its result): duration')?.quantity).toBeCloseTo(0.0165, 12);
    });

    it('reads the bytes an execute leaves from the billed trace: last size per item, every receipt, overhead, index entries held at the end', () => {
      const trace = [
        'admit (API):',
        '  TransactWriteItems [Put:ACTION, Put:IDEM, Put:TXN, Put:RCPT] 8 CU {billed: 8 WRU + 1 index WRU; ACTION 700 B, IDEM 500 B, TXN 400 B in 1 index, RCPT 600 B}  — x',
        '  BatchGetItem [ACTION, TXN] 2 CU {billed: 2 RRU; ACTION 700 B, TXN 400 B}  — y',
        '  TransactWriteItems [Update:ACTION, Update:TXN, Put:RCPT] 6 CU {billed: 6 WRU + 1 index WRU; ACTION 700→900 B, TXN 400→450 B, RCPT 650 B}  — z',
      ];
      // ACTION 900 + IDEM 500 + TXN 450 + RCPT 600 + 650 = 3,100; 5 items × 100; the record's index entry was removed by
      // the settlement (its last write holds none), so no index entry is left.
      expect(storedBytes(trace)).toEqual({ bytes: 3100 + 500, items: 5, index_entries: 0 });
    });

    it('counts an index entry an item still holds after its last write (an outcome_unknown record)', () => {
      const trace = [
        '  TransactWriteItems [Put:TXN, Put:RCPT] 4 CU {billed: 4 WRU + 1 index WRU; TXN 400 B in 1 index, RCPT 600 B}  — x',
        '  TransactWriteItems [Update:TXN, Put:RCPT] 4 CU {billed: 4 WRU + 2 index WRU; TXN 400→800 B in 1 index, RCPT 300 B}  — y',
      ];
      // TXN 800 + RCPT 600 + 300 = 1,700; 3 items × 100; one index entry × 200.
      expect(storedBytes(trace)).toEqual({ bytes: 1700 + 300 + 200, items: 3, index_entries: 1 });
    });

    it('counts the items a lone PutItem or UpdateItem writes (the route, the action at its attempt start)', () => {
      const trace = [
        '  TransactWriteItems [Put:ACTION, Put:RCPT] 4 CU {billed: 4 WRU; ACTION 700 B, RCPT 600 B}  — x',
        '  PutItem ROUTE 1 CU {billed: 1 WRU; ROUTE 217 B}  — y',
        '  UpdateItem ACTION 1 CU {billed: 1 WRU; ACTION 700→790 B}  — z',
      ];
      // ACTION 790 + RCPT 600 + ROUTE 217 = 1,607; 3 items × 100; no index entry.
      expect(storedBytes(trace)).toEqual({ bytes: 1607 + 300, items: 3, index_entries: 0 });
    });
  });
});
