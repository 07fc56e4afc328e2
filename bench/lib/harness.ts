/**
 * The measured Runtime: the real Runtime over the real adapters, on DynamoDB
 * Local, fauxqs, the EventBridge Scheduler emulator and the payments
 * simulator, wired like functions/shared/compose-runtime.ts (same store
 * classes, same SQS queue and Scheduler adapters, the `payments` connector
 * from the same factory), except that the SDK clients carry the metering
 * middleware of ./meter.ts and the clock can be moved forward (so a
 * reconciliation can be made due without waiting).
 *
 * The harness drives the worker exactly as Lambda's event source would:
 * it receives the InvokeMessage from the queue (with its own, unmetered SQS
 * client) and calls `runtime.runAttempt(message)`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { clientConfig, createSchedulerClient, createSqsClient } from '../../lib/aws/clients.js';
import { createTable } from '../../lib/aws/dynamo/create-table.js';
import { createDynamoStores, type DynamoStores } from '../../lib/aws/dynamo/stores.js';
import { EventBridgeReconcileScheduler } from '../../lib/aws/scheduler/scheduler.js';
import { SqsMessageQueue, deleteMessages, receiveMessages } from '../../lib/aws/sqs/queue.js';
import type { CallerIdentity } from '../../lib/auth/identity.js';
import { EnvCredentialProvider } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import type { CredentialProvider } from '../../packages/connector-sdk/src/ports/credentials.js';
import { createPaymentsConnector, DEFAULT_PAYMENTS_CREDENTIAL_HANDLE } from '../../lib/connectors/reference/payments.js';
import { decodeQueueMessage, type InvokeMessage } from '../../lib/ports/messages.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { DEPLOYED_DEFAULTS, parseRuntimeSettingsInput, type RuntimeSettingsInput } from '../../lib/runtime/config.js';
import { staticConnectorHost } from '../../lib/runtime/deps.js';
import { CapabilityRegistry } from '../../lib/runtime/registry.js';
import { Runtime } from '../../lib/runtime/runtime.js';
import type { AttemptOutcome } from '../../lib/runtime/types.js';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../dev/emulators/dynamodb-local.js';
import { startSqsEmulator, type FauxqsHandle } from '../../dev/emulators/fauxqs.js';
import { startPaymentsSimulator, type PaymentsSimulator } from '../../dev/payments-simulator/server.js';
import { startSchedulerEmulator, type SchedulerEmulator } from '../../dev/scheduler-emulator/emulator.js';
import { Meter, instrumentCalls, instrumentDynamo } from './meter.js';
import { Biller } from './billing.js';

export const TENANT = 'bench';
export const PAYMENTS_KEY_VARIABLE = 'AIP_BENCH_PAYMENTS_API_KEY';

export interface Emulators {
  readonly dynamo: DynamoDbLocal;
  readonly fauxqs: FauxqsHandle;
  readonly simulator: PaymentsSimulator;
  readonly scheduler: SchedulerEmulator;
  readonly paymentsKey: string;
  readonly clock: SteppedClock;
  stop(): Promise<void>;
}

/** DynamoDB Local (in memory), fauxqs, the payments simulator and the Scheduler emulator (not firing: the benchmark reconciles itself). */
export async function startEmulators(): Promise<Emulators> {
  const clock = new SteppedClock();
  const paymentsKey = `sk_bench_${randomBytes(12).toString('base64url')}`;
  const [dynamo, fauxqs, simulator] = await Promise.all([
    startDynamoDbLocal({}),
    startSqsEmulator(0),
    startPaymentsSimulator({ port: 0, host: '127.0.0.1', apiKeys: [paymentsKey], seed: 1, now: () => clock.now() }),
  ]);
  const scheduler = await startSchedulerEmulator({ port: 0, sqsEndpoint: fauxqs.endpoint, autoFire: false, now: () => clock.now() });
  return {
    dynamo,
    fauxqs,
    simulator,
    scheduler,
    paymentsKey,
    clock,
    async stop() {
      await scheduler.stop();
      await Promise.allSettled([simulator.stop(), fauxqs.stop()]);
      await dynamo.stop();
    },
  };
}

/** A keep-alive agent like Lambda's SDK clients use (Node 20's SDK default has keep-alive on too). */
function agent(): Agent {
  return new Agent({ keepAlive: true, maxSockets: 64 });
}

export function meteredDynamo(endpoint: string, meter: Meter): { raw: DynamoDBClient; doc: DynamoDBDocumentClient } {
  // The factory's configuration (region, dummy credentials for loopback) plus a keep-alive agent;
  // maxAttempts 1 so that no SDK retry hides or doubles a request.
  const raw = new DynamoDBClient({ ...clientConfig('dynamodb', { endpoint, maxAttempts: 1 }), requestHandler: { httpAgent: agent() } });
  instrumentDynamo(raw, meter);
  // The biller reads item images with its own client, never metered (bench/lib/billing.ts); it ends with `raw`.
  if (meter.biller === undefined) {
    const unmetered = new DynamoDBClient({ ...clientConfig('dynamodb', { endpoint }), requestHandler: { httpAgent: agent() } });
    meter.biller = new Biller(unmetered);
    const destroy = raw.destroy.bind(raw);
    raw.destroy = () => {
      unmetered.destroy();
      destroy();
    };
  }
  const doc = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  return { raw, doc };
}

export interface Harness {
  /** The API function's runtime (admission, reads, operator routes). */
  readonly runtime: Runtime;
  /** The worker function's runtime: its own stores, as a separate Lambda's (`runAttempt`). */
  readonly worker: Runtime;
  /** The reconcile consumer's runtime: its own stores (`reconcile`). */
  readonly consumer: Runtime;
  readonly meter: Meter;
  readonly tableName: string;
  readonly doc: DynamoDBDocumentClient;
  readonly raw: DynamoDBClient;
  readonly transactions: DynamoStores['transactions'];
  readonly actions: DynamoStores['actions'];
  readonly uow: DynamoStores['uow'];
  readonly clock: SteppedClock;
  readonly emulators: Emulators;
  readonly caller: CallerIdentity;
  readonly operator: CallerIdentity;
  /** Receives every visible invoke message (unmetered) and runs `runAttempt` on each; returns the outcomes. */
  drain(): Promise<AttemptOutcome[]>;
  /** Receives the visible invoke messages without running them (unmetered). */
  receiveInvokes(): Promise<InvokeMessage[]>;
  destroy(): Promise<void>;
}

export interface HarnessOptions {
  readonly tableName?: string;
  /** Merged into the runtime configuration. Default: no approval policies (so commit and compensate run without an approval). */
  readonly config?: RuntimeSettingsInput;
  /** Payments capabilities' execution timeout (default 10 000 ms, as shipped). */
  readonly paymentsTimeoutMs?: number;
  readonly pollIntervalMs?: number;
  /** The payments connector's credential provider. Default: the simulator's key from a variable (EnvCredentialProvider). */
  readonly credentials?: CredentialProvider;
}

/** Builds the metered Runtime on its own table and queues. */
export async function createHarness(emulators: Emulators, options: HarnessOptions = {}): Promise<Harness> {
  const meter = new Meter();
  const tableName = options.tableName ?? `bench-${randomUUID().slice(0, 8)}`;
  const { raw, doc } = meteredDynamo(emulators.dynamo.endpoint, meter);
  await meter.quiet(() => createTable(raw, tableName));

  const sqs = createSqsClient({ endpoint: emulators.fauxqs.endpoint, maxAttempts: 1 });
  instrumentCalls(sqs, 'sqs', meter);
  const control = createSqsClient({ endpoint: emulators.fauxqs.endpoint });
  const invokeUrl = await createQueue(control, `${tableName}-invoke`);
  const reconcileUrl = await createQueue(control, `${tableName}-reconcile`);
  const reconcileArn = (await control.send(new GetQueueAttributesCommand({ QueueUrl: reconcileUrl, AttributeNames: ['QueueArn'] }))).Attributes
    ?.QueueArn as string;

  const schedulerClient = createSchedulerClient({ endpoint: emulators.scheduler.endpoint, maxAttempts: 1 });
  instrumentCalls(schedulerClient, 'scheduler', meter);

  const clock = emulators.clock;
  const now = () => clock.now();
  const credentials =
    options.credentials ??
    new EnvCredentialProvider({
      connector_id: 'payments',
      references: [{ connector_id: 'payments', handle: DEFAULT_PAYMENTS_CREDENTIAL_HANDLE, tenant_id: TENANT, env: PAYMENTS_KEY_VARIABLE }],
      env: { [PAYMENTS_KEY_VARIABLE]: emulators.paymentsKey },
    });
  const connector = createPaymentsConnector({
    credentials,
    baseUrl: emulators.simulator.url,
    ...(options.paymentsTimeoutMs !== undefined ? { timeoutMs: options.paymentsTimeoutMs } : {}),
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
  });
  const registry = CapabilityRegistry.fromManifests([{ manifest: await connector.discover({}), support: connector }]);
  // A deployed configuration's retention (DEPLOYED_DEFAULTS: 400 days for terminal transactions, their receipts and
  // actions), so the bill counts the writes a deployment makes (a terminal settlement stamps the items it retains).
  const config = parseRuntimeSettingsInput(
    {
      operator_scope: 'aip:operator',
      transaction_retention_days: DEPLOYED_DEFAULTS.transaction_retention_days,
      action_retention_seconds: DEPLOYED_DEFAULTS.action_retention_seconds,
      ...(options.config ?? {}),
    },
    'local',
  );
  // BENCH_STORE_KNOWN_IMAGES=0 measures the store as it was before it kept known images (docs/bench/analysis.md 4.1).
  const knownImages = process.env.BENCH_STORE_KNOWN_IMAGES;
  // One set of stores per Lambda function: the API, the worker and the reconcile consumer run in separate execution
  // environments, so none of them holds an image another one wrote (the stores' known images are per process).
  const storesOfOneFunction = () =>
    createDynamoStores({
      client: doc,
      tableName,
      now,
      transactions: knownImages !== undefined && knownImages !== '' ? { knownImages: Number(knownImages) } : {},
      idempotency: { retentionSeconds: config.idempotency.retention_seconds },
    });
  const stores = storesOfOneFunction();
  const runtimeOn = (functionStores: DynamoStores) =>
    new Runtime({
      ...functionStores,
      invokeQueue: new SqsMessageQueue({ client: sqs, queueUrl: invokeUrl, accepts: ['invoke'] }),
      reconcileQueue: new SqsMessageQueue({ client: sqs, queueUrl: reconcileUrl, accepts: ['reconcile'] }),
      scheduler: new EventBridgeReconcileScheduler({
        client: schedulerClient,
        groupName: `${tableName}-rc`.replace(/[^0-9a-zA-Z_.-]/g, '-').slice(0, 64),
        targetQueueArn: reconcileArn,
        roleArn: 'arn:aws:iam::000000000000:role/aip-bench-scheduler',
        clock,
      }),
      registry,
      connectors: staticConnectorHost([{ connector, credential_handle: () => DEFAULT_PAYMENTS_CREDENTIAL_HANDLE }]),
      clock,
      config,
    });
  const runtime = runtimeOn(stores);
  const worker = runtimeOn(storesOfOneFunction());
  const consumer = runtimeOn(storesOfOneFunction());

  const receiveInvokes = async (): Promise<InvokeMessage[]> => {
    const out: InvokeMessage[] = [];
    for (;;) {
      const batch = await receiveMessages(control, invokeUrl, { waitTimeSeconds: 0, maxMessages: 10 });
      if (batch.length === 0) return out;
      await deleteMessages(
        control,
        invokeUrl,
        batch.map((m) => m.ReceiptHandle ?? ''),
      );
      for (const m of batch) out.push(decodeQueueMessage(m.Body ?? '') as InvokeMessage);
    }
  };

  return {
    runtime,
    worker,
    consumer,
    meter,
    tableName,
    doc,
    raw,
    transactions: stores.transactions,
    actions: stores.actions,
    uow: stores.uow,
    clock,
    emulators,
    caller: { principal: { id: 'bench-agent', kind: 'agent' }, tenants: [TENANT], scopes: ['aip:actions:read', 'aip:actions:write'] },
    operator: { principal: { id: 'bench-operator', kind: 'user' }, tenants: [TENANT], scopes: ['aip:actions:read', 'aip:operator'] },
    receiveInvokes,
    async drain() {
      const outcomes: AttemptOutcome[] = [];
      for (const m of await meter.quiet(receiveInvokes)) outcomes.push(await worker.runAttempt(m));
      return outcomes;
    },
    async destroy() {
      sqs.destroy();
      control.destroy();
      schedulerClient.destroy();
      raw.destroy();
    },
  };
}

async function createQueue(sqs: SQSClient, name: string): Promise<string> {
  const out = await sqs.send(new CreateQueueCommand({ QueueName: name.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 80), Attributes: { VisibilityTimeout: '60' } }));
  return out.QueueUrl as string;
}

/** A unique ID with a readable prefix. */
export function uid(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}
