/**
 * Section 2: side by side with the nearest peer, Powertools for AWS Lambda
 * (TypeScript) Idempotency: `makeIdempotent` with the DynamoDB persistence
 * layer, around a handler that makes the same provider call (POST
 * /v1/charges on the same payments simulator, with an Idempotency-Key).
 * Same DynamoDB Local, same process, runs interleaved (ours, theirs, ours,
 * ...) so that background load hits both alike.
 *
 * What is compared:
 * - execute: our submit + worker attempt (queue wait excluded: the message
 *   is received between the two, outside the clock) vs. one idempotent
 *   handler call;
 * - replay: the same idempotency key again (ours: a new action ID with the
 *   same key), vs. the same event again.
 *
 * The two do not do the same work: Powertools stores one idempotency record;
 * the runtime stores the action record, the idempotency reservation, the
 * transaction record with a hash-chained receipt per transition, the route
 * assignment, the fenced leases and the provider-operation checkpoint. The
 * ratio is the price of those guarantees, measured.
 */
import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';
import { localLambdaContext } from '../../lib/aws/sqs/poller.js';
import { meteredDynamo, uid, type Harness } from '../lib/harness.js';
import { sumBilled, type BilledSummary } from '../lib/billing.js';
import { Meter, meanSummary, summarize, traceLine, type CallRecord, type CostSummary } from '../lib/meter.js';
import { distribution, ratio, type Distribution } from '../lib/stats.js';
import { chargeAction, warmUp } from './cost.js';

export interface SideFigures {
  readonly cost: CostSummary;
  readonly latency_ms: Distribution;
  readonly trace: string[];
  /** Capacity as AWS bills it (bench/lib/billing.ts), from the warm run's item images. */
  readonly billed?: BilledSummary;
}

export interface PeerCase {
  readonly id: 'execute' | 'replay';
  readonly ours: SideFigures;
  readonly powertools: SideFigures;
  /** ours / powertools. `billed`: capacity as AWS bills it (write + index write + read units). */
  readonly ratio: {
    readonly requests: number;
    readonly writes: number;
    readonly reads: number;
    readonly capacity: number;
    readonly latency_p50: number;
    readonly billed?: number;
  };
}

export interface PeerFigures {
  readonly runs: number;
  readonly powertools_version: string;
  readonly cases: PeerCase[];
}

interface ChargeEvent {
  readonly idempotency_key: string;
  readonly amount: number;
  readonly currency: string;
}

async function createPowertoolsTable(client: DynamoDBClient, tableName: string): Promise<void> {
  // The persistence layer's documented key schema: partition key `id` (string), no sort key.
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    }),
  );
  for (;;) {
    const t = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (t.Table?.TableStatus === 'ACTIVE') return;
  }
}

export async function runPeerSection(h: Harness, runs: number, version: string): Promise<PeerFigures> {
  await warmUp(h, 10);
  const meter = new Meter();
  const { raw } = meteredDynamo(h.emulators.dynamo.endpoint, meter);
  const tableName = `${h.tableName}-powertools`;
  await meter.quiet(() => createPowertoolsTable(raw, tableName));

  const sim = h.emulators.simulator;
  const apiKey = h.emulators.paymentsKey;
  const charge = async (event: ChargeEvent, _context: Context) => {
    const res = await fetch(`${sim.url}/v1/charges`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': event.idempotency_key },
      body: JSON.stringify({ amount: event.amount, currency: event.currency }),
    });
    if (res.status !== 201) throw new Error(`charge failed: ${res.status}`);
    return (await res.json()) as Record<string, unknown>;
  };
  const idempotentCharge = makeIdempotent(charge, {
    persistenceStore: new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: raw }),
    config: new IdempotencyConfig({ eventKeyJmesPath: 'idempotency_key', payloadValidationJmesPath: '[amount, currency]' }),
  });
  const context = () => localLambdaContext('powertools-bench', 60_000, 'us-east-1');

  // One side's samples (ours: the AIP runtime; theirs: Powertools idempotency).
  const newSide = () => ({
    execute: [] as CostSummary[],
    replay: [] as CostSummary[],
    executeMs: [] as number[],
    replayMs: [] as number[],
    traces: { execute: [] as string[], replay: [] as string[] },
    billed: {} as Partial<Record<'execute' | 'replay', BilledSummary>>,
  });
  const ours = newSide();
  const theirs = newSide();
  const billedOf = (calls: readonly CallRecord[]) => sumBilled(calls.map((c) => c.billed));

  for (let i = 0; i <= runs; i++) {
    const warm = i === 0;
    // The warm run is billed from its item images (extra reads on another client; its latency is not measured).
    h.meter.billing = warm;
    meter.billing = warm;
    // --- ours: execute, then a replay of the same key under a new action ID
    const action = chargeAction('execute');
    let mark = h.meter.mark();
    let t0 = performance.now();
    const admitted = await h.runtime.submit(h.caller, action);
    let ms = performance.now() - t0;
    const messages = await h.meter.quiet(() => h.receiveInvokes());
    t0 = performance.now();
    const settled = await h.worker.runAttempt(messages[0]!);
    ms += performance.now() - t0;
    if (admitted.disposition !== 'accepted' || settled.transaction_status !== 'committed') throw new Error('section 2: our execute did not commit');
    let calls = h.meter.since(mark);
    if (warm) {
      ours.traces.execute = calls.map(traceLine);
      ours.billed.execute = billedOf(calls);
    } else {
      ours.execute.push(summarize(calls));
      ours.executeMs.push(ms);
    }
    mark = h.meter.mark();
    t0 = performance.now();
    const replay = await h.runtime.submit(h.caller, { ...action, id: uid('rep') });
    ms = performance.now() - t0;
    if (replay.disposition !== 'replayed') throw new Error('section 2: our replay did not replay');
    calls = h.meter.since(mark);
    if (warm) {
      ours.traces.replay = calls.map(traceLine);
      ours.billed.replay = billedOf(calls);
    } else {
      ours.replay.push(summarize(calls));
      ours.replayMs.push(ms);
    }
    h.meter.clear();

    // --- theirs: the same provider call behind makeIdempotent, then the same event again
    const event: ChargeEvent = { idempotency_key: uid('pt'), amount: 1250, currency: 'eur' };
    mark = meter.mark();
    t0 = performance.now();
    const first = await idempotentCharge(event, context());
    ms = performance.now() - t0;
    calls = meter.since(mark);
    if (warm) {
      theirs.traces.execute = calls.map(traceLine);
      theirs.billed.execute = billedOf(calls);
    } else {
      theirs.execute.push(summarize(calls));
      theirs.executeMs.push(ms);
    }
    mark = meter.mark();
    t0 = performance.now();
    const again = await idempotentCharge(event, context());
    ms = performance.now() - t0;
    if ((again as { id?: string }).id !== (first as { id?: string }).id) throw new Error('section 2: the Powertools replay returned another charge');
    calls = meter.since(mark);
    if (warm) {
      theirs.traces.replay = calls.map(traceLine);
      theirs.billed.replay = billedOf(calls);
    } else {
      theirs.replay.push(summarize(calls));
      theirs.replayMs.push(ms);
    }
    meter.clear();
  }
  h.meter.billing = false;
  meter.billing = false;
  raw.destroy();

  const side = (costs: CostSummary[], ms: number[], trace: string[], billed: BilledSummary | undefined): SideFigures => ({
    cost: meanSummary(costs),
    latency_ms: distribution(ms),
    trace,
    ...(billed !== undefined ? { billed } : {}),
  });
  const cases: PeerCase[] = (['execute', 'replay'] as const).map((id) => {
    const o = side(ours[id], id === 'execute' ? ours.executeMs : ours.replayMs, ours.traces[id], ours.billed[id]);
    const p = side(theirs[id], id === 'execute' ? theirs.executeMs : theirs.replayMs, theirs.traces[id], theirs.billed[id]);
    const req = (c: CostSummary) => c.reads + c.writes;
    const cap = (c: CostSummary) => c.capacity_total_est;
    return {
      id,
      ours: o,
      powertools: p,
      ratio: {
        requests: ratio(req(o.cost), req(p.cost)),
        writes: ratio(o.cost.writes, p.cost.writes),
        reads: ratio(o.cost.reads, p.cost.reads),
        capacity: ratio(cap(o.cost), cap(p.cost)),
        latency_p50: ratio(o.latency_ms.p50, p.latency_ms.p50),
        ...(o.billed !== undefined && p.billed !== undefined ? { billed: ratio(o.billed.total, p.billed.total) } : {}),
      },
    };
  });
  return { runs, powertools_version: version, cases };
}
