/**
 * The wiring behind functions/shared/bootstrap.ts: adapters connected to the
 * Runtime's ports, from the settings of ./settings.ts. Only bootstrap.ts
 * imports this module (on first use); this module never imports bootstrap.ts.
 *
 * This is the ONE module that imports the Runtime and the DynamoDB store
 * adapters other than the transaction store. Its connector half (the
 * connectors, their credential providers and the capability registry) is
 * ./compose-connectors.ts, imported on the first Runtime method that needs
 * connectors: a function that only reads never loads it (per-route
 * composition, lib/runtime/runtime.ts). The connector implementations are
 * listed in ./connector-factories.ts (pure, so the CDK app reads their
 * manifests at synth).
 *
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { createDynamoDbClient } from '../../lib/aws/clients/dynamodb.js';
import type { AwsClientOptions } from '../../lib/aws/client-config.js';
import { createDynamoStores } from '../../lib/aws/dynamo/stores.js';
import { FUNCTION_ENV } from '../../lib/config/function-env.js';
import { systemClock, type Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import type { MessageQueue } from '../../lib/ports/queue.js';
import type { ReconcileScheduler } from '../../lib/ports/scheduler.js';
import type { CrashPoints } from '../../lib/runtime/crash-points.js';
import {
  ProductionRuntimeSettingsSchema,
  RuntimeSettingsSchema,
  isDeployedEnvironment,
  withDeployedDefaults,
  type GlobalApprovalPolicy,
  type RuntimeSettings,
  type TenantSettings,
} from '../../lib/runtime/config.js';
import { AesGcmCursorSealer, ephemeralCursorSealer, parseCursorKeyMaterial, type CursorSealer } from '../../lib/runtime/cursor.js';
import type { RuntimeLogger } from '../../lib/runtime/deps.js';
import type { CapabilityRegistry } from '../../lib/runtime/registry-core.js';
import type { ConnectorFactory } from './connector-factories.js';
import { Runtime } from '../../lib/runtime/runtime.js';
import { BootstrapConfigError, OPTIONAL_ENV, parseNested, type BootstrapIssue, type BootstrapSettings } from './settings-core.js';
import type { RuntimeApi } from './runtime-api.js';
import type { WorkerRuntime } from './runtime-contract.js';
import { once } from './lazy.js';

/** What an in-process host may put in place of the composition's defaults. */
export interface RuntimeOverrides {
  /** Default: the system clock. */
  readonly clock?: Clock;
  /** Where the Runtime logs (a Powertools Logger fits). Default: the Runtime's own default. */
  readonly logger?: RuntimeLogger;
  /**
   * Environment the local credential provider reads (AIP_LOCAL_CREDENTIALS
   * `env` references). Default: process.env at resolve time.
   */
  readonly credentialEnv?: Readonly<Record<string, string | undefined>>;
  /** SDK attempts per AWS call (default: the SDK's 3). */
  readonly maxAttempts?: number;
  /**
   * Factories that replace the build's own (CONNECTOR_FACTORIES of
   * ./connector-factories.ts) for the connector IDs they name: in-process hosts
   * only (the local stack's connector tunables, tests). Which connectors are
   * enabled is still the deployment configuration's decision.
   */
  readonly connectorFactories?: Readonly<Record<string, ConnectorFactory>>;
  /**
   * Test-only crash hook (lib/runtime/crash-points.ts), handed to the
   * Runtime, which refuses it unless the runtime settings say `test_mode`;
   * AIP_RUNTIME_SETTINGS may say so only when `envName` is `local` or `test`.
   * In-process hosts only (the local stack's reliability tests).
   */
  readonly crashPoints?: CrashPoints;
}

export interface RuntimeHandle {
  readonly runtime: Runtime;
  readonly settings: BootstrapSettings;
  /** Destroys the SDK clients (the local stack calls it on stop). */
  close(): void;
}

/**
 * The tenants the deployment configuration names: tenants with their own
 * runtime settings, and tenants with credential rows. They get an entry in
 * the Runtime's `tenants` (so the sweeper visits their pending approvals);
 * approval policies do NOT depend on this list: a deployment policy applies
 * to the tenants its selector names, every tenant by default
 * ({@link runtimeConfigFor}).
 */
export function configuredTenants(settings: BootstrapSettings, runtimeSettings: RuntimeSettings): string[] {
  const tenants = new Set(Object.keys(runtimeSettings.tenants));
  for (const connector of settings.runtimeConfig.connectors) for (const row of connector.credentials) tenants.add(row.tenantId);
  if (settings.credentials.source === 'local') for (const row of settings.credentials.references) tenants.add(row.tenant_id);
  return [...tenants].sort();
}

/**
 * AIP_RUNTIME_SETTINGS (`raw`, `{}` when unset) validated with the Runtime's
 * schema. `test_mode` (the crash-point hook) is accepted only when the
 * deployment's envName is `local` or `test`; any other envName gets
 * DEPLOYED_DEFAULTS (lib/runtime/config.ts) where the settings say nothing.
 * The build runs it too, for the settings of a bundle's own configuration
 * (./validated-config-source.ts).
 */
export function resolveRuntimeSettings(raw: Readonly<Record<string, unknown>>, envName: string): RuntimeSettings {
  const schema = isDeployedEnvironment(envName) ? ProductionRuntimeSettingsSchema : RuntimeSettingsSchema;
  const issues: BootstrapIssue[] = [];
  // A deployed environment gets four eyes on resolutions and a retention unless its settings say otherwise.
  const parsed = parseNested<RuntimeSettings>(OPTIONAL_ENV.runtimeSettings, schema, withDeployedDefaults(raw, envName), issues);
  if (!parsed) throw new BootstrapConfigError(issues);
  return parsed;
}

/**
 * The Runtime's settings of these bootstrap settings: the ones the build
 * validated when the settings reader took them (`resolvedRuntimeSettings`),
 * else {@link resolveRuntimeSettings}. The invoke queue's maxReceiveCount
 * (AIP_INVOKE_QUEUE_MAX_RECEIVE_COUNT, set by the stack from the queue
 * itself) becomes `capacity_deferral.queue_max_receive_count`.
 */
export function parseRuntimeSettings(settings: BootstrapSettings): RuntimeSettings {
  const parsed = settings.resolvedRuntimeSettings ?? resolveRuntimeSettings(settings.runtimeSettings, settings.runtimeConfig.envName);
  if (settings.invokeQueueMaxReceiveCount === undefined) return parsed;
  return { ...parsed, capacity_deferral: { ...parsed.capacity_deferral, queue_max_receive_count: settings.invokeQueueMaxReceiveCount } };
}

/**
 * The configuration of the reads (lib/runtime/runtime.ts): AIP_RUNTIME_SETTINGS
 * with the service principal and an entry for every configured tenant, and
 * without the deployment's approval policies, which only the methods with
 * connectors consult ({@link runtimeConfigFor}).
 */
export function readsConfigFor(settings: BootstrapSettings): RuntimeSettings {
  const runtimeSettings = parseRuntimeSettings(settings);
  const tenants: Record<string, TenantSettings> = { ...runtimeSettings.tenants };
  for (const tenant of configuredTenants(settings, runtimeSettings)) tenants[tenant] ??= {};
  // The deployment's `attemptWhenWaited` (AIP_RUNTIME_CONFIG) decides where it says anything, as the stack granted for it.
  const waited = settings.runtimeConfig.attemptWhenWaited;
  return { ...runtimeSettings, service_principal: settings.servicePrincipal, tenants, ...(waited !== undefined ? { attempt_when_waited: waited } : {}) };
}

/**
 * The Runtime's configuration: {@link readsConfigFor}, plus the deployment's
 * approval policies translated to runtime-wide policies (`approval_policies`)
 * with their tenant selector (`tenants`, default every tenant, configured or
 * not), approvers needed and lifetime. A policy without `capabilities`
 * selects every registered capability of its connector. A tenant's own
 * policies (`tenants[t].approvals`) are considered first, so they win;
 * AIP_RUNTIME_SETTINGS' own runtime-wide policies come before the
 * deployment's.
 */
export function runtimeConfigFor(
  settings: BootstrapSettings,
  registry: CapabilityRegistry,
  reads: RuntimeSettings = readsConfigFor(settings),
): RuntimeSettings {
  const translated: GlobalApprovalPolicy[] = [];
  for (const policy of settings.runtimeConfig.approvalPolicies) {
    const registered = registry.report.connectors.find((c) => c.connector_id === policy.connector)?.registered ?? [];
    const capabilities = policy.capabilities ?? [...registered];
    if (capabilities.length === 0) continue;
    translated.push({
      policy_id: policy.id,
      tenants: [...(policy.tenants ?? ['*'])],
      capabilities,
      ...(policy.modes ? { modes: [...policy.modes] } : {}),
      approver_scopes: [...policy.approverScopes],
      allow_self_approval: false,
      min_approvals: policy.minApprovals,
      ttl_ms: policy.expiresAfterSeconds * 1000,
    });
  }
  return { ...reads, approval_policies: [...reads.approval_policies, ...translated] };
}

/**
 * The sealer of the listings' pagination cursors (lib/runtime/cursor.ts).
 * Deployed functions read the key material from the Secrets Manager secret
 * AIP_CURSOR_KEY_SECRET_ARN names, through the composition's Secrets Manager
 * client, once per container: on the first listing, so the functions that
 * never list need no grant on the secret and never load the client. Local
 * runs and tests may give the material (AIP_CURSOR_KEY) or nothing (a random
 * key per composition); anywhere else a missing key fails the composition.
 */
export function cursorSealerFor(settings: BootstrapSettings, secrets: () => SecretsManagerClient | Promise<SecretsManagerClient>): CursorSealer {
  const key = settings.cursorKey;
  if (key.source === 'secrets-manager') {
    return new AesGcmCursorSealer(async () => {
      const [client, { GetSecretValueCommand }] = await Promise.all([secrets(), import('@aws-sdk/client-secrets-manager')]);
      const out = await client.send(new GetSecretValueCommand({ SecretId: key.secretArn }));
      if (typeof out.SecretString !== 'string') throw new Error(`${FUNCTION_ENV.cursorKeySecretArn}: the secret has no string value`);
      return parseCursorKeyMaterial(out.SecretString);
    });
  }
  if (key.source === 'inline') {
    try {
      return new AesGcmCursorSealer(parseCursorKeyMaterial(key.material));
    } catch (err) {
      throw new BootstrapConfigError([{ variable: OPTIONAL_ENV.cursorKey, message: (err as Error).message.replace(/^cursor key material: /, '') }]);
    }
  }
  if (!['local', 'test'].includes(settings.runtimeConfig.envName)) {
    throw new BootstrapConfigError([
      { variable: FUNCTION_ENV.cursorKeySecretArn, message: 'is required outside the local and test environments (the key that seals pagination cursors)' },
    ]);
  }
  return ephemeralCursorSealer();
}

/**
 * The SQS queues and the EventBridge Scheduler adapter of the Runtime, each
 * imported (with its SDK client) and built on its first call. They are the
 * adapters of lib/aws unchanged, reached through the ports' asynchronous
 * methods only, so the Runtime sees no difference; a route that only reads
 * never loads them. One SQS client serves both queues, as before. The
 * queues' adapter and client come in one module (./queue-adapters.ts), the
 * Scheduler's in another (./scheduler-adapters.ts), so a submit, which sends
 * and never schedules, does not load the Scheduler's client
 * (docs/bench/analysis.md, "Issue 22: the submit's first execute"; one
 * module per adapter AND client split the bundles into many more chunks,
 * which cost what the bytes saved: "Cold start and bundles").
 */
export function lazyAdapters(sqsOptions: AwsClientOptions, schedulerOptions: AwsClientOptions) {
  let sqsClient: { destroy(): void } | undefined;
  let schedulerClient: { destroy(): void } | undefined;
  const sqs = once(async () => {
    const { createSqsClient, SqsMessageQueue } = await import('./queue-adapters.js');
    const client = createSqsClient(sqsOptions);
    sqsClient = client;
    return { client, SqsMessageQueue };
  });
  return {
    queue(options: { readonly queueUrl: string; readonly accepts: readonly ('invoke' | 'reconcile')[] }): MessageQueue {
      const adapter = once(async () => {
        const { client, SqsMessageQueue } = await sqs();
        return new SqsMessageQueue({ client, queueUrl: options.queueUrl, accepts: [...options.accepts] });
      });
      return {
        send: async (message, sendOptions) => (await adapter()).send(message, sendOptions),
        sendBatch: async (entries) => (await adapter()).sendBatch(entries),
        redeliverAfter: async (receiptHandle, delaySeconds) => (await adapter()).redeliverAfter(receiptHandle, delaySeconds),
      };
    },
    scheduler(options: { readonly groupName: string; readonly targetQueueArn: string; readonly roleArn: string; readonly clock: Clock }): ReconcileScheduler {
      const adapter = once(async () => {
        const { createSchedulerClient, EventBridgeReconcileScheduler } = await import('./scheduler-adapters.js');
        const client = createSchedulerClient(schedulerOptions);
        schedulerClient = client;
        return new EventBridgeReconcileScheduler({ client, ...options });
      });
      return {
        scheduleReconcile: async (request) => (await adapter()).scheduleReconcile(request),
        cancelReconcile: async (ref) => (await adapter()).cancelReconcile(ref),
      };
    },
    close(): void {
      sqsClient?.destroy();
      schedulerClient?.destroy();
    },
  };
}

export async function composeRuntime(settings: BootstrapSettings, overrides: RuntimeOverrides = {}): Promise<RuntimeHandle> {
  const clock = overrides.clock ?? systemClock;
  const now = () => clock.now();
  const common = overrides.maxAttempts !== undefined ? { maxAttempts: overrides.maxAttempts } : {};
  const endpoint = (service: keyof BootstrapSettings['endpoints']) => {
    const value = settings.endpoints[service];
    return value !== undefined ? { endpoint: value } : {};
  };

  const dynamo = createDynamoDbClient({ ...common, ...endpoint('dynamodb') });
  const documents = DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } });
  // The SQS and Scheduler adapters (and their SDK clients) are imported and built on their first call:
  // a route that only reads never loads them (lazyQueues, lazyScheduler).
  const lazy = lazyAdapters({ ...common, ...endpoint('sqs') }, { ...common, ...endpoint('scheduler') });
  // The Secrets Manager client is imported and built on first use (a cursor key or a connector credential): reads never load it.
  let secretsClient: SecretsManagerClient | undefined;
  const secrets = once(async () => {
    const { createSecretsManagerClient } = await import('../../lib/aws/clients/secrets-manager.js');
    secretsClient ??= createSecretsManagerClient({ ...common, ...endpoint('secretsManager') });
    return secretsClient;
  });
  const close = () => {
    documents.destroy();
    lazy.close();
    secretsClient?.destroy();
  };

  try {
    const cursors = cursorSealerFor(settings, secrets);
    const config = readsConfigFor(settings);
    const stores = createDynamoStores({
      client: documents,
      tableName: settings.tableName,
      now,
      idempotency: { retentionSeconds: config.idempotency.retention_seconds },
    });
    // The connector half, on the first method that needs it (never for a read): ./compose-connectors.ts.
    const connectorParts = async () => {
      const { composeConnectors } = await import('./compose-connectors.js');
      const { registry, connectors } = await composeConnectors(settings, {
        documents,
        secrets,
        clock,
        ...(overrides.credentialEnv ? { credentialEnv: overrides.credentialEnv } : {}),
        ...(overrides.connectorFactories ? { connectorFactories: overrides.connectorFactories } : {}),
      });
      return { registry, connectors, config: runtimeConfigFor(settings, registry, config) };
    };
    const runtime = new Runtime(
      {
        ...stores,
        invokeQueue: lazy.queue({ queueUrl: settings.invokeQueueUrl, accepts: ['invoke'] }),
        reconcileQueue: lazy.queue({ queueUrl: settings.reconcileQueueUrl, accepts: ['reconcile'] }),
        scheduler: lazy.scheduler({
          groupName: settings.scheduleGroup,
          targetQueueArn: settings.reconcileQueueArn,
          roleArn: settings.schedulerRoleArn,
          clock,
        }),
        clock,
        config,
        cursors,
        ...(overrides.logger ? { logger: overrides.logger } : {}),
        ...(overrides.crashPoints ? { crashPoints: overrides.crashPoints } : {}),
      },
      connectorParts,
    );
    // Compile-time check: the handlers' structural views still match the Runtime.
    const workerView: WorkerRuntime = runtime;
    const httpView: RuntimeApi = runtime;
    void workerView;
    void httpView;
    return { runtime, settings, close };
  } catch (err) {
    close();
    throw err;
  }
}
