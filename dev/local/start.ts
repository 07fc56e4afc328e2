/**
 * `npm start`: the whole AIP runtime on one machine, with no Docker and no
 * AWS account, running the same handlers as the Lambda functions.
 *
 * What runs (all on 127.0.0.1):
 * - DynamoDB Local (Java), persisted under `.local/dynamodb` (git-ignored);
 * - fauxqs (SQS, in-process, IN MEMORY: queued messages do not survive a
 *   restart, while DynamoDB records do; the sweeper re-enqueues overdue
 *   `outcome_unknown` records after a restart);
 * - the EventBridge Scheduler emulator (dev/scheduler-emulator), firing on time;
 * - the payments provider simulator (dev/payments-simulator) and the
 *   `payments` connector configured against it;
 * - with a deployment configuration (`npm start -- --config <file>` or
 *   AIP_DEPLOYMENT_CONFIG), its own connectors, declarative HTTP documents
 *   and code connector modules, checked as the synth checks them and hosted
 *   in-process beside payments (./deployment-connectors.ts);
 * - the Runtime, built by the composition root (functions/shared/bootstrap.ts)
 *   from the same environment variables the Lambdas get, and installed for
 *   every handler in this process;
 * - the local API Gateway (dev/local/http-server.ts) with the HTTP handlers
 *   and the Lambda authorizer, verifying tokens signed with the development key;
 * - event sources feeding the invoke and reconcile queues to the worker and
 *   reconcile handlers (lib/aws/sqs/local-event-source.ts: Lambda's SQS
 *   event source, with `workerInstances` batches at once, and the delivery
 *   order of an SQS fair queue, which fauxqs does not implement);
 * - the sweeper handler on a 60 s timer.
 *
 * `startLocalStack(options)` starts the same stack in-process (the end-to-end
 * tests use it); running this file starts it with ports from the environment
 * and prints the base URL, a token and a curl example. Ctrl-C stops everything.
 * See docs/local-stack.md.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ScheduledEvent, SQSEvent } from 'aws-lambda';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createDynamoDbClient, createSqsClient } from '../../lib/aws/clients.js';
import { createTable } from '../../lib/aws/dynamo/create-table.js';
import { localLambdaContext } from '../../lib/aws/sqs/poller.js';
import { messageGroupOf, startLocalEventSource } from '../../lib/aws/sqs/local-event-source.js';
import type { QueueFairness } from '../../lib/ports/queue.js';
import { createTokenVerifier } from '../../lib/auth/verifier.js';
import type { CrashPoints } from '../../lib/runtime/crash-points.js';
import type { Runtime } from '../../lib/runtime/runtime.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import { decodeQueueMessage, type QueueMessage } from '../../lib/ports/messages.js';
import { createPaymentsConnector, DEFAULT_PAYMENTS_CREDENTIAL_HANDLE, type PaymentsConnectorOptions } from '../../lib/connectors/reference/payments.js';
import type { ApprovalPolicy, DeploymentRuntimeConfig } from '../../lib/config/deployment.js';
import type { LocalCredentialReference } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import type { RemotePlacement } from '../../lib/runtime/remote/config.js';
import { findJava, JavaMissingError, startDynamoDbLocal, type DynamoDbLocal } from '../emulators/dynamodb-local.js';
import { startSqsEmulator, type FauxqsHandle } from '../emulators/fauxqs.js';
import { startPaymentsSimulator, type PaymentsSimulator } from '../payments-simulator/server.js';
import { startSchedulerEmulator, type SchedulerEmulator } from '../scheduler-emulator/emulator.js';
import { DEV_AUDIENCE, DEV_ISSUER, devVerifierConfig, generateDevKeys, loadDevKeys, type DevKeys } from '../auth/keys.js';
import { mintToken, type MintTokenOptions } from '../auth/mint.js';
import { createRuntime, installRuntime, uninstallRuntime } from '../../functions/shared/bootstrap.js';
import type { RuntimeHandle } from '../../functions/shared/compose-runtime.js';
import { DEFAULT_SERVICE_PRINCIPAL_ID, OPTIONAL_ENV, readBootstrapSettings, settingsToEnv } from '../../functions/shared/settings.js';
import { productionRuntime } from '../../functions/shared/production-runtime.js';
import { handler as invokeHandler } from '../../functions/worker/invoke.js';
import { handler as reconcileHandler } from '../../functions/worker/reconcile.js';
import { handler as sweeperHandler } from '../../functions/scheduled/sweeper.js';
import { startLocalHttpServer, type LocalHttpServer } from './http-server.js';
import type { HttpDeps } from '../../functions/shared/route-handler.js';
import type { ConnectorFactoryOptions } from '../../functions/shared/connector-factories.js';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { localRemoteKeys, startLocalRemote, type LocalRemoteHost } from './remote-host.js';
import { localConsoleRoutes } from './console.js';
import { CONSOLE_PATH, type ConsoleConfig } from '../../functions/console/serve.js';
import { LOCAL_APPROVER, LOCAL_PORTS, LOCAL_TENANT, LOCAL_TOKEN_DEFAULTS, type LocalService } from './defaults.js';
import { deploymentConfigFrom, describeHostedConnectors, loadLocalDeploymentConnectors, type LocalDeploymentConnectors } from './deployment-connectors.js';

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DEFAULT_DATA_DIR = join(PROJECT_ROOT, '.local');

/** Names of the local resources. */
export const LOCAL_NAMES = {
  table: 'aip-local',
  invokeQueue: 'aip-local-invoke',
  reconcileQueue: 'aip-local-reconcile',
  scheduleGroup: 'aip-local-reconcile',
  schedulerRole: 'arn:aws:iam::000000000000:role/aip-local-scheduler',
} as const;

/** A name prefix fits every resource name it starts (queue `-reconcile-dlq`, schedule group `-reconcile`). */
const NAME_PREFIX_PATTERN = /^[A-Za-z0-9_-]{3,48}$/;

/** The resource names for a prefix; `aip-local` gives {@link LOCAL_NAMES}. */
export function localNames(prefix: string = LOCAL_NAMES.table): {
  table: string;
  invokeQueue: string;
  reconcileQueue: string;
  scheduleGroup: string;
  schedulerRole: string;
} {
  if (!NAME_PREFIX_PATTERN.test(prefix)) throw new Error('namePrefix must be 3-48 of A-Z a-z 0-9 _ -');
  return {
    table: prefix,
    invokeQueue: `${prefix}-invoke`,
    reconcileQueue: `${prefix}-reconcile`,
    scheduleGroup: `${prefix}-reconcile`,
    schedulerRole: LOCAL_NAMES.schedulerRole,
  };
}

/** Queue settings: like the stack's, scaled to a laptop. */
export const QUEUE_VISIBILITY_SECONDS = 90;
const QUEUE_MAX_RECEIVE_COUNT = 5;
const WORKER_TIMEOUT_MS = 60_000;
/** Environment variable the local credential reference reads the simulator's API key from. */
const PAYMENTS_KEY_VARIABLE = 'AIP_LOCAL_PAYMENTS_API_KEY';
const PAYMENTS_CREDENTIAL_HANDLE = 'payments/api_key';

/** Local approval policy: commits and compensations of payments need one approval; execute does not. */
export const DEFAULT_LOCAL_APPROVAL_POLICIES: ApprovalPolicy[] = [
  {
    id: 'local-payments-commit',
    description: 'Planned payments need one approval before the commit; compensations too.',
    connector: 'payments',
    modes: ['commit', 'compensate'],
    approverScopes: ['aip:approve'],
    minApprovals: 1,
    expiresAfterSeconds: 3600,
  },
];

/** Runtime settings of the local stack (AIP_RUNTIME_SETTINGS), before the caller's overrides. */
export const DEFAULT_LOCAL_RUNTIME_SETTINGS: Record<string, unknown> = {
  // The edge grants the operator views with this scope (lib/http/routes.ts SCOPES.operator).
  operator_scope: 'aip:operator',
};

export interface LocalStackOptions {
  /** Root of the local state: DynamoDB files under `dynamodb/`, the dev key under `dev-keys/`. Default `<repo>/.local`. */
  readonly dataDir?: string;
  /** DynamoDB in memory and a fresh dev key: nothing is written to disk (tests). */
  readonly inMemory?: boolean;
  /** Ports on 127.0.0.1; 0 or absent picks a free one. */
  readonly ports?: Partial<Record<LocalService, number>>;
  /** Tenants the payments connector has (local) credentials for. Default ['demo']. */
  readonly tenants?: readonly string[];
  /** Deployment approval policies (lib/config/deployment.ts shape). Default {@link DEFAULT_LOCAL_APPROVAL_POLICIES}. */
  readonly approvalPolicies?: readonly ApprovalPolicy[];
  /** Merged over {@link DEFAULT_LOCAL_RUNTIME_SETTINGS} (lib/runtime/config.ts input). */
  readonly runtimeSettings?: Record<string, unknown>;
  /** Sweeper period. Default 60 000 ms; 0 turns the timer off (call `sweep()`). */
  readonly sweepIntervalMs?: number;
  /** Long-poll wait of the queue pollers, 0..20 s. Default 20. */
  readonly pollWaitSeconds?: number;
  /**
   * How the invoke and reconcile queues serve their tenants. `tenant`
   * (default): as an SQS fair queue does when messages carry a message group
   * per tenant, which is what the deployed producers send (emulated here:
   * fauxqs serves standard queues oldest first). `none`: oldest first, the
   * behaviour before fair queues. docs/queue-and-scheduler.md.
   */
  readonly fairness?: QueueFairness;
  /** Batches each consumer (invoke worker, reconcile consumer) runs at once, as Lambda's concurrency. Default 1. */
  readonly workerInstances?: number;
  /** Messages per batch, 1..10. Default 10 (the deployed event sources use 5). */
  readonly workerBatchSize?: number;
  /**
   * Poll schedule of `Prefer: wait` / `?wait=` in the HTTP handlers (first
   * interval and cap in ms, each ≥ 1). Default: the deployed handlers' own
   * (200 ms, ×1.5 per poll, up to 1 s). The benchmark tunes it (bench/sections/latency.ts).
   */
  readonly waitPoll?: HttpDeps['waitPoll'];
  /** Seed of the payments simulator's fault RNG. Default 1. */
  readonly simulatorSeed?: number;
  /** Stack-level messages (start, stop, background errors). Default: none. */
  readonly log?: (line: string) => void;
  /**
   * Use this DynamoDB endpoint (e.g. the test run's DynamoDB Local) instead of
   * starting one. The stack does not stop it; `dataDir` and `inMemory` then
   * only concern the dev key. Give each stack sharing it its own `namePrefix`.
   */
  readonly dynamoEndpoint?: string;
  /** Use this SQS endpoint (e.g. the test run's fauxqs) instead of starting one; not stopped either. */
  readonly sqsEndpoint?: string;
  /** Prefix of the table, queue and schedule-group names (3-48 of A-Z a-z 0-9 _ -). Default `aip-local`. */
  readonly namePrefix?: string;
  /** The Runtime's clock. Default: the system clock. Tests move it (reconciliation due times, compensation windows). */
  readonly clock?: Clock;
  /** Fire due schedules on time. Default true; false: only `scheduler.fireDue(at)` fires them (tests). */
  readonly schedulerAutoFire?: boolean;
  /** Tunables of the payments connector (e.g. a compensation window); default: its own defaults. */
  readonly payments?: Pick<PaymentsConnectorOptions, 'compensationWindowMs' | 'timeoutMs' | 'pollIntervalMs'>;
  /** The simulator's API key (the payments credential). Default: a fresh random key. Tests plant a known secret to scan for leaks. */
  readonly paymentsApiKey?: string;
  /**
   * Account-specific payments credentials: one credential row per entry for
   * (tenant, external account), backed by its own API key, next to the
   * tenant-wide rows (which use `paymentsApiKey`). The simulator accepts every
   * key; its `response` events name the key a request used by
   * `api_key_index`: 0 is `paymentsApiKey`, i + 1 is this list's entry i.
   */
  readonly paymentsAccountKeys?: readonly { readonly tenant_id: string; readonly external_account_id: string; readonly apiKey: string }[];
  /**
   * Test only: the Runtime's crash-point hook (lib/runtime/crash-points.ts).
   * The Runtime refuses it unless `runtimeSettings` has `test_mode: true`,
   * which the local and test environments allow and production refuses.
   */
  readonly crashPoints?: CrashPoints;
  /**
   * A message the worker or reconcile consumer failed (threw, or asked for a
   * redelivery) becomes visible again after this many seconds
   * (ChangeMessageVisibility) instead of the queue's visibility timeout
   * ({@link QUEUE_VISIBILITY_SECONDS}). Default: the visibility timeout, as in
   * AWS. Tests that move the Runtime clock past the lease use 0.
   */
  readonly redeliveryDelaySeconds?: number;
  /**
   * Where the payments connector runs: `in-process` (default: a trusted
   * local module in the runtime's process) or `remote` (a connector host on
   * its own loopback server, reached through signed requests; the runtime
   * holds no payments credential). `npm start` reads AIP_CONNECTOR_PLACEMENT.
   * See docs/local-stack.md, "Remote connector host".
   */
  readonly connectorPlacement?: 'in-process' | 'remote';
  /** Ports of the remote host and the runtime's checkpoint receiver (remote placement). Default: free ports. */
  readonly remotePorts?: { readonly host?: number; readonly receiver?: number };
  /**
   * Serve the operator console from this build (console/build.ts) at
   * `/console/`, with the development sign-in `POST /_local/token`
   * (dev/local/console.ts). Default: no console.
   */
  readonly console?: { readonly assetsDir: string; readonly config?: ConsoleConfig };
  /**
   * A deployment configuration file (what `cdk deploy -c config=<file>`
   * reads): its own connectors (`connectors[].http`, `connectors[].module`)
   * are checked as the synth checks them, refused with the same
   * InfraConfigError naming the field, and hosted in-process beside
   * payments with their credential rows, `connectorEndpoints` and approval
   * policies. Relative paths resolve against the current directory.
   * docs/deploying-your-connectors.md, "Try it locally".
   */
  readonly deploymentConfig?: string;
  /**
   * Where the configuration's credential variables (`AIP_LOCAL_SECRET_…`,
   * dev/local/deployment-connectors.ts) are read. Default: process.env.
   */
  readonly deploymentEnv?: Readonly<Record<string, string | undefined>>;
}

export interface LocalStack {
  /** API base URL, e.g. `http://127.0.0.1:3000`. */
  readonly url: string;
  /** The operator console, e.g. `http://127.0.0.1:3000/console/`, when the `console` option is set. */
  readonly consoleUrl?: string;
  /** The tenant the default token belongs to. */
  readonly tenant: string;
  readonly endpoints: { readonly dynamodb: string; readonly sqs: string; readonly scheduler: string; readonly payments: string };
  /** A development token the stack accepts; defaults: principal `dev-user`, tenant `demo`, read/write/operator scopes. */
  mintToken(options?: Partial<MintTokenOptions>): Promise<string>;
  /** A token of the demo approver (scope aip:approve). */
  mintApproverToken(options?: Partial<MintTokenOptions>): Promise<string>;
  readonly simulator: PaymentsSimulator;
  readonly scheduler: SchedulerEmulator;
  readonly runtime: Runtime;
  /** The remote connector host and its fault hooks (remote placement only). */
  readonly remote?: LocalRemoteHost;
  /** The deployment configuration's connectors the stack hosts (with `deploymentConfig`). */
  readonly deploymentConnectors?: Pick<LocalDeploymentConnectors, 'file' | 'hosted'>;
  /** Runs the sweeper handler once, now. */
  sweep(): Promise<{ enqueued: number }>;
  /**
   * Resolves with the message once the worker (`invoke`) or the reconcile
   * consumer (`reconcile`) has finished a batch holding a message that
   * matches `predicate`, side records and schedules included. Subscribe
   * before causing the message (tests synchronise on it instead of sleeping).
   */
  handled(queue: LocalQueue, predicate?: (message: QueueMessage) => boolean): Promise<QueueMessage>;
  /** Stops every server, poller, timer and child process. Idempotent. */
  stop(): Promise<void>;
}

export type LocalQueue = 'invoke' | 'reconcile';

/** Fails early, naming the variable to change, when a fixed port is taken. */
async function assertPortFree(service: LocalService, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `port ${port} (${service}) is in use: stop what holds it (an earlier npm start?) or set ${LOCAL_PORTS[service].env}=<port> (0 picks a free one)`
            : `cannot listen on port ${port} (${service}): ${err.message}`,
        ),
      );
    });
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolvePort()));
  });
}

/** What the stack needs of DynamoDB Local and fauxqs ({@link DynamoDbLocal}, {@link FauxqsHandle}). */
type Emulator = Pick<DynamoDbLocal & FauxqsHandle, 'endpoint' | 'stop'>;

async function createQueueWithDlq(sqs: SQSClient, name: string): Promise<{ url: string; arn: string }> {
  const arnOf = async (url: string) =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn as string;
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq`, Attributes: { MessageRetentionPeriod: '1209600' } }));
  const dlqArn = await arnOf(dlq.QueueUrl as string);
  const main = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(QUEUE_VISIBILITY_SECONDS),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: QUEUE_MAX_RECEIVE_COUNT }),
      },
    }),
  );
  return { url: main.QueueUrl as string, arn: await arnOf(main.QueueUrl as string) };
}

function scheduledEvent(now: Date): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: 'us-east-1',
    resources: ['arn:aws:events:us-east-1:000000000000:rule/aip-local-sweeper'],
    detail: {},
  };
}

/** Starts the local stack. Everything started is stopped again if a later step fails. */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const log = options.log ?? (() => undefined);
  const dataDir = resolve(options.dataDir ?? DEFAULT_DATA_DIR);
  const port = (service: LocalService) => options.ports?.[service] ?? 0;
  const tenants = [...(options.tenants ?? [LOCAL_TENANT])];
  const names = localNames(options.namePrefix);
  const external = { dynamodb: options.dynamoEndpoint, sqs: options.sqsEndpoint } as const;
  const stops: Array<() => Promise<void> | void> = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        log(`stop: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  };

  try {
    // The deployment's own connectors first: a refused configuration starts nothing.
    const deployment =
      options.deploymentConfig !== undefined
        ? await loadLocalDeploymentConnectors(options.deploymentConfig, options.deploymentEnv !== undefined ? { env: options.deploymentEnv } : {})
        : undefined;
    for (const service of Object.keys(LOCAL_PORTS) as LocalService[]) {
      if (service === 'dynamodb' || service === 'sqs' ? external[service] === undefined : true) await assertPortFree(service, port(service));
    }

    // Emulators (unless given) and the provider.
    const paymentsKey = options.paymentsApiKey ?? `sk_local_${randomBytes(18).toString('base64url')}`;
    const accountKeys = (options.paymentsAccountKeys ?? []).map((row, i) => ({ ...row, env: `${PAYMENTS_KEY_VARIABLE}_ACCOUNT_${i}` }));
    // An emulator the caller runs: used as is, never stopped here.
    const attached = async (endpoint: string): Promise<Emulator> => ({ endpoint, stop: async () => undefined });
    const started = await Promise.allSettled([
      external.dynamodb !== undefined
        ? attached(external.dynamodb)
        : startDynamoDbLocal({
            ...(port('dynamodb') !== 0 ? { port: port('dynamodb') } : {}),
            ...(options.inMemory ? {} : { dbPath: join(dataDir, 'dynamodb') }),
          }),
      external.sqs !== undefined ? attached(external.sqs) : startSqsEmulator(port('sqs')),
      startPaymentsSimulator({
        port: port('payments'),
        host: '127.0.0.1',
        apiKeys: [paymentsKey, ...accountKeys.map((a) => a.apiKey)],
        seed: options.simulatorSeed ?? 1,
      }),
    ] as const);
    for (const s of started) if (s.status === 'fulfilled') stops.push(() => s.value.stop());
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const dynamo = (started[0] as PromiseFulfilledResult<Emulator>).value;
    const fauxqs = (started[1] as PromiseFulfilledResult<Emulator>).value;
    const simulator = (started[2] as PromiseFulfilledResult<PaymentsSimulator>).value;

    // Table and queues (idempotent: a second start finds the table).
    const ddbClient = createDynamoDbClient({ endpoint: dynamo.endpoint });
    try {
      await createTable(ddbClient, names.table, { ifNotExists: true });
    } finally {
      ddbClient.destroy();
    }
    const sqs = createSqsClient({ endpoint: fauxqs.endpoint });
    stops.push(() => sqs.destroy());
    const invokeQueue = await createQueueWithDlq(sqs, names.invokeQueue);
    const reconcileQueue = await createQueueWithDlq(sqs, names.reconcileQueue);

    const scheduler = await startSchedulerEmulator({
      port: port('scheduler'),
      sqsEndpoint: fauxqs.endpoint,
      autoFire: options.schedulerAutoFire ?? true,
      onError: (err, schedule) => log(`scheduler emulator: ${schedule ? `${schedule.name}: ` : ''}${err instanceof Error ? err.message : String(err)}`),
    });
    stops.push(() => scheduler.stop());

    const runtimeConfig: DeploymentRuntimeConfig = {
      envName: 'local',
      auth: { issuer: DEV_ISSUER, audience: DEV_AUDIENCE, jwksUrl: `${DEV_ISSUER}/.well-known/jwks.json`, algorithms: ['ES256'] },
      connectors: [{ id: 'payments', credentials: [] }, ...(deployment?.hosted ?? []).map(({ id }) => ({ id, credentials: [] }))],
      approvalPolicies: [...(options.approvalPolicies ?? DEFAULT_LOCAL_APPROVAL_POLICIES), ...(deployment?.approvalPolicies ?? [])],
      // A configuration's `attemptWhenWaited` (explicit or its default) decides over the runtime setting, as in a deployment
      // (functions/shared/compose-runtime.ts readsConfigFor); without one, the runtime setting `attempt_when_waited` does.
      ...(deployment?.attemptWhenWaited !== undefined ? { attemptWhenWaited: deployment.attemptWhenWaited } : {}),
    };
    const credentialReferences: LocalCredentialReference[] = [
      ...tenants.map((tenant_id) => ({ connector_id: 'payments', handle: PAYMENTS_CREDENTIAL_HANDLE, tenant_id, env: PAYMENTS_KEY_VARIABLE })),
      ...accountKeys.map((a) => ({
        connector_id: 'payments',
        handle: PAYMENTS_CREDENTIAL_HANDLE,
        tenant_id: a.tenant_id,
        external_account_id: a.external_account_id,
        env: a.env,
      })),
      ...(deployment?.credentialReferences ?? []),
    ];
    const tunables = options.payments;
    const credentialEnv = { [PAYMENTS_KEY_VARIABLE]: paymentsKey, ...Object.fromEntries(accountKeys.map((a) => [a.env, a.apiKey])) };
    // Remote placement: the connector host (with the payments credentials) and the checkpoint receiver start first:
    // the runtime's composition discovers the host's signed manifest.
    let remote: LocalRemoteHost | undefined;
    let remotePlacement: RemotePlacement | undefined;
    if (options.connectorPlacement === 'remote') {
      const documents = DynamoDBDocumentClient.from(createDynamoDbClient({ endpoint: dynamo.endpoint }), { marshallOptions: { removeUndefinedValues: true } });
      stops.push(() => documents.destroy());
      const started = await startLocalRemote({
        keys: localRemoteKeys(options.inMemory ? undefined : join(dataDir, 'remote-keys')),
        ...(options.remotePorts?.host !== undefined ? { hostPort: options.remotePorts.host } : {}),
        ...(options.remotePorts?.receiver !== undefined ? { receiverPort: options.remotePorts.receiver } : {}),
        payments: (f) => ({
          connector: createPaymentsConnector({ ...tunables, credentials: f.credentials, baseUrl: simulator.url }),
          credential_handle: () => DEFAULT_PAYMENTS_CREDENTIAL_HANDLE,
        }),
        credentials: { references: credentialReferences, env: credentialEnv },
        documents,
        tableName: names.table,
        ...(options.clock !== undefined ? { clock: options.clock } : {}),
        onError: (err) => log(`remote host: ${err instanceof Error ? err.message : String(err)}`),
      });
      stops.push(() => started.stop());
      remote = started.hooks;
      remotePlacement = started.placement;
    }
    // The function environment, as the stack would set it (settingsToEnv), validated by the composition root.
    const env: NodeJS.ProcessEnv = {
      ...settingsToEnv({
        tableName: names.table,
        invokeQueueUrl: invokeQueue.url,
        invokeQueueMaxReceiveCount: QUEUE_MAX_RECEIVE_COUNT,
        reconcileQueueUrl: reconcileQueue.url,
        reconcileQueueArn: reconcileQueue.arn,
        scheduleGroup: names.scheduleGroup,
        schedulerRoleArn: names.schedulerRole,
        runtimeConfig,
        runtimeSettings: { ...DEFAULT_LOCAL_RUNTIME_SETTINGS, ...options.runtimeSettings },
        servicePrincipal: { id: DEFAULT_SERVICE_PRINCIPAL_ID, kind: 'service' },
        credentials: { source: 'local', references: credentialReferences },
        // Cursor key: AIP_CURSOR_KEY from the environment, else a random key per start (cursors do not survive a restart).
        cursorKey: { source: 'inline', material: process.env[OPTIONAL_ENV.cursorKey] || randomBytes(32).toString('base64url') },
        connectorEndpoints: { ...deployment?.connectorEndpoints, payments: simulator.url },
        ...(remotePlacement !== undefined ? { remotePlacement } : {}),
        // settingsToEnv leaves endpoints to the SDK's own variables, set below.
        endpoints: {},
      }),
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: fauxqs.endpoint,
      AWS_ENDPOINT_URL_SCHEDULER: scheduler.endpoint,
    };
    const handle: RuntimeHandle = await createRuntime(readBootstrapSettings(env), {
      // Remote placement: the runtime holds no provider credential (it resolves inside the connector host).
      credentialEnv: { ...(remote === undefined ? credentialEnv : {}), ...deployment?.credentialEnv },
      ...(options.clock !== undefined ? { clock: options.clock } : {}),
      ...(options.crashPoints !== undefined ? { crashPoints: options.crashPoints } : {}),
      ...(tunables !== undefined || deployment !== undefined
        ? {
            connectorFactories: {
              ...deployment?.factories,
              ...(tunables !== undefined
                ? {
                    payments: (f: ConnectorFactoryOptions) => ({
                      connector: createPaymentsConnector({
                        ...tunables,
                        credentials: f.credentials,
                        ...(f.baseUrl !== undefined ? { baseUrl: f.baseUrl } : {}),
                      }),
                      credential_handle: () => DEFAULT_PAYMENTS_CREDENTIAL_HANDLE,
                    }),
                  }
                : {}),
            },
          }
        : {}),
    });
    stops.push(() => handle.close());
    installRuntime(handle.runtime);
    stops.push(() => uninstallRuntime());

    // Workers: the deployed handlers, fed by pollers as Lambda's event source would.
    const pollerError = (name: string) => (err: unknown) => log(`${name} poller: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    const wait = Math.min(20, Math.max(0, options.pollWaitSeconds ?? 20));
    const watchers = new Set<{ queue: LocalQueue; predicate: (m: QueueMessage) => boolean; resolve: (m: QueueMessage) => void }>();
    const notify = (queue: LocalQueue, event: SQSEvent) => {
      if (watchers.size === 0) return;
      for (const record of event.Records) {
        let message: QueueMessage;
        try {
          message = decodeQueueMessage(record.body);
        } catch {
          continue;
        }
        for (const w of [...watchers]) {
          if (w.queue === queue && w.predicate(message)) {
            watchers.delete(w);
            w.resolve(message);
          }
        }
      }
    };
    const handled = (queue: LocalQueue, predicate: (m: QueueMessage) => boolean = () => true) =>
      new Promise<QueueMessage>((resolveHandled) => {
        watchers.add({ queue, predicate, resolve: resolveHandled });
      });
    for (const [name, queue, fn] of [
      ['invoke', invokeQueue, invokeHandler],
      ['reconcile', reconcileQueue, reconcileHandler],
    ] as const) {
      const source = startLocalEventSource({
        client: sqs,
        queueUrl: queue.url,
        queueArn: queue.arn,
        handler: async (event, context) => {
          try {
            return await fn(event, context);
          } finally {
            notify(name, event);
          }
        },
        waitTimeSeconds: wait,
        visibilityTimeoutSeconds: QUEUE_VISIBILITY_SECONDS,
        fairness: options.fairness ?? 'tenant',
        // fauxqs keeps no MessageGroupId on standard queues: the producer's group is derived again from the body.
        groupOf: messageGroupOf,
        instances: options.workerInstances ?? 1,
        batchSize: options.workerBatchSize ?? 10,
        ...(options.redeliveryDelaySeconds !== undefined ? { retryDelaySeconds: Math.max(0, Math.floor(options.redeliveryDelaySeconds)) } : {}),
        functionName: `aip-local-${name}`,
        functionTimeoutMs: WORKER_TIMEOUT_MS,
        onError: pollerError(name),
      });
      stops.push(() => source.stop());
    }

    // The sweeper, on a timer (EventBridge rule every minute in AWS). Runs never overlap.
    let sweeping: Promise<{ enqueued: number }> | undefined;
    const sweep = (): Promise<{ enqueued: number }> => {
      sweeping ??= sweeperHandler(scheduledEvent(new Date()), localLambdaContext('aip-local-sweeper', WORKER_TIMEOUT_MS, 'us-east-1')).finally(() => {
        sweeping = undefined;
      });
      return sweeping;
    };
    const interval = options.sweepIntervalMs ?? 60_000;
    if (interval > 0) {
      const timer = setInterval(() => {
        sweep().then(
          (r) => {
            if (r.enqueued > 0) log(`sweeper: enqueued reconciliation for ${r.enqueued} overdue record(s)`);
          },
          (err: unknown) => log(`sweeper: ${err instanceof Error ? err.message : String(err)}`),
        );
      }, interval);
      timer.unref();
      stops.push(async () => {
        clearInterval(timer);
        await sweeping?.catch(() => undefined);
      });
    }

    // The API: local API Gateway, the HTTP handlers and the authorizer, verifying dev tokens.
    const keys: DevKeys = options.inMemory ? await generateDevKeys() : await loadDevKeys(join(dataDir, 'dev-keys'));
    const http: LocalHttpServer = await startLocalHttpServer({
      port: port('api'),
      host: '127.0.0.1',
      http: { runtime: productionRuntime, ...(options.waitPoll !== undefined ? { waitPoll: options.waitPoll } : {}) },
      auth: { verifier: createTokenVerifier(devVerifierConfig(keys)) },
      jwks: keys.jwks,
      ...(options.console !== undefined
        ? {
            localRoutes: localConsoleRoutes({
              assetsDir: options.console.assetsDir,
              tenant: tenants[0] ?? LOCAL_TENANT,
              mint: (o) => mintToken(o, keys),
              ...(options.console.config !== undefined ? { config: options.console.config } : {}),
            }),
          }
        : {}),
    });
    stops.push(() => http.stop());

    let stopped: Promise<void> | undefined;
    log(`local stack up at ${http.url}`);
    return {
      url: http.url,
      ...(options.console !== undefined ? { consoleUrl: `${http.url}${CONSOLE_PATH}/` } : {}),
      tenant: tenants[0] ?? LOCAL_TENANT,
      endpoints: { dynamodb: dynamo.endpoint, sqs: fauxqs.endpoint, scheduler: scheduler.endpoint, payments: simulator.url },
      mintToken: (o = {}) =>
        mintToken({ sub: LOCAL_TOKEN_DEFAULTS.sub, tenants: [...LOCAL_TOKEN_DEFAULTS.tenants], scopes: [...LOCAL_TOKEN_DEFAULTS.scopes], ...o }, keys),
      mintApproverToken: (o = {}) =>
        mintToken({ sub: LOCAL_APPROVER.sub, tenants: [...LOCAL_APPROVER.tenants], scopes: [...LOCAL_APPROVER.scopes], ...o }, keys),
      simulator,
      scheduler,
      runtime: handle.runtime,
      ...(remote !== undefined ? { remote } : {}),
      ...(deployment !== undefined ? { deploymentConnectors: { file: deployment.file, hosted: deployment.hosted } } : {}),
      sweep,
      handled,
      stop: () => {
        stopped ??= stopAll().then(() => log('local stack stopped'));
        return stopped;
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

// ---------------------------------------------------------------------------
// `npm start`
// ---------------------------------------------------------------------------

function portsFromEnv(env: NodeJS.ProcessEnv): Record<LocalService, number> {
  const out = {} as Record<LocalService, number>;
  for (const [service, spec] of Object.entries(LOCAL_PORTS) as [LocalService, (typeof LOCAL_PORTS)[LocalService]][]) {
    const raw = env[spec.env]?.trim();
    if (raw === undefined || raw === '') {
      out[service] = spec.default;
      continue;
    }
    if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65_535) throw new Error(`${spec.env} must be a port number (0 picks a free one)`);
    out[service] = Number(raw);
  }
  return out;
}

/**
 * AIP_CONNECTOR_PLACEMENT (`in-process`, the default, or `remote`), and for
 * `remote` the ports AIP_CONNECTOR_HOST_PORT (4020) and
 * AIP_CHECKPOINT_RECEIVER_PORT (4021).
 */
export function placementFromEnv(env: NodeJS.ProcessEnv): Pick<LocalStackOptions, 'connectorPlacement' | 'remotePorts'> {
  const raw = (env.AIP_CONNECTOR_PLACEMENT ?? '').trim();
  if (raw === '' || raw === 'in-process') return { connectorPlacement: 'in-process' };
  if (raw !== 'remote') throw new Error('AIP_CONNECTOR_PLACEMENT must be in-process or remote');
  const port = (name: string, fallback: number) => {
    const v = (env[name] ?? '').trim();
    if (v === '') return fallback;
    if (!/^\d{1,5}$/.test(v) || Number(v) > 65_535) throw new Error(`${name} must be a port number (0 picks a free one)`);
    return Number(v);
  };
  return { connectorPlacement: 'remote', remotePorts: { host: port('AIP_CONNECTOR_HOST_PORT', 4020), receiver: port('AIP_CHECKPOINT_RECEIVER_PORT', 4021) } };
}

/** The banner: URL, token, a curl example that works when pasted, and the CLI. */
export function banner(
  stack: Pick<LocalStack, 'url' | 'tenant' | 'endpoints' | 'consoleUrl' | 'remote' | 'deploymentConnectors'>,
  token: string,
  persistedAt: string | undefined,
): string {
  const id = randomUUID().slice(0, 8);
  const action = {
    id: `act-demo-${id}`,
    capability_id: 'payments.charge',
    input: { amount: 1250, currency: 'eur', customer: 'cus_demo', description: 'npm start demo' },
    idempotency_key: `demo-${id}`,
    transaction: { mode: 'execute' },
  };
  return [
    '',
    'AIP runtime: local stack is up',
    '',
    `  API            ${stack.url}   (tenant ${stack.tenant})`,
    `  MCP            ${stack.url}/v1/mcp   (Streamable HTTP, same token; client setup: docs/mcp.md)`,
    ...(stack.consoleUrl !== undefined ? [`  Console        ${stack.consoleUrl}   (development sign-in)`] : []),
    `  DynamoDB       ${stack.endpoints.dynamodb}${persistedAt ? `   (data in ${persistedAt})` : '   (in memory)'}`,
    `  SQS (fauxqs)   ${stack.endpoints.sqs}   (in memory: queued messages do not survive a restart)`,
    `  Scheduler      ${stack.endpoints.scheduler}`,
    `  Payments sim   ${stack.endpoints.payments}   (ledger: GET /_sim/ledger)`,
    ...(stack.remote !== undefined
      ? [
          `  Payments host  ${stack.remote.hostUrl}   (remote connector host, key ${stack.remote.kid.slice(0, 12)}…; checkpoint receiver ${stack.remote.receiverUrl})`,
        ]
      : ['  Payments       in-process connector (AIP_CONNECTOR_PLACEMENT=remote runs it on a remote connector host)']),
    '',
    ...(stack.deploymentConnectors !== undefined ? describeHostedConnectors(stack.deploymentConnectors, stack.tenant) : []),
    'Token (12 h; principal dev-user, scopes aip:actions:read aip:actions:write aip:operator):',
    '',
    `  export AIP_URL=${stack.url}`,
    `  export AIP_TOKEN=${token}`,
    '',
    'Charge 12.50 EUR and wait up to 5 s for the result:',
    '',
    `  curl -sS -X POST "${stack.url}/v1/actions" \\`,
    `    -H "Authorization: Bearer ${token}" \\`,
    '    -H "Content-Type: application/json" \\',
    '    -H "Prefer: wait=5" \\',
    `    -d '${JSON.stringify(action)}'`,
    '',
    'The CLI, with AIP_URL and AIP_TOKEN exported as above:',
    '',
    `  npx aip get ${action.id}`,
    '  npx aip submit payments.charge --mode plan --input \'{"amount":900,"currency":"eur"}\'',
    '  npx aip operator outcome-unknown',
    '  npx aip approve <approval-id> --token "$(npx aip token --sub dev-approver --scope \'aip:approve aip:actions:read\')"',
    '',
    'Ctrl-C stops everything.',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const say = (line: string) => process.stderr.write(`[aip-local] ${line}\n`);
  let stack: LocalStack;
  try {
    // Settings first: a bad option or variable stops at once.
    const placement = placementFromEnv(process.env);
    const deploymentConfig = deploymentConfigFrom(process.argv.slice(2), process.env);
    // Java next: a machine without it is told so (and how to install it) before the console build.
    if (findJava() === undefined) throw new JavaMissingError();
    say('building the operator console…');
    // Vite is loaded only here, so in-process users of the stack (tests) do not pay for it.
    const { buildConsole } = await import('../../console/build.js');
    const consoleDir = await buildConsole(join(DEFAULT_DATA_DIR, 'console'));
    if (deploymentConfig !== undefined) say(`checking the connectors of ${deploymentConfig} as the synth does…`);
    say('starting DynamoDB Local, fauxqs, the Scheduler emulator and the payments simulator…');
    stack = await startLocalStack({
      ports: portsFromEnv(process.env),
      log: say,
      console: { assetsDir: consoleDir },
      ...placement,
      ...(deploymentConfig !== undefined ? { deploymentConfig } : {}),
    });
  } catch (err) {
    say(`could not start: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
    return;
  }
  const token = await stack.mintToken({ ttl: '12h' });
  process.stdout.write(banner(stack, token, join(DEFAULT_DATA_DIR, 'dynamodb')));

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      say(`${signal} again: exiting now`);
      process.exit(130);
    }
    stopping = true;
    say(`${signal}: stopping…`);
    stack.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        say(`stop failed: ${err instanceof Error ? err.message : String(err)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  await main();
}
