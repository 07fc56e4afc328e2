/**
 * How the stateless stack turns a {@link FunctionDefinition} into a Lambda
 * function. A definition says what the function is (entry, timeout, trigger)
 * and what it may touch; the builder applies the project's conventions:
 *
 * - Node.js 22 on arm64, an ESM bundle with code splitting built by the
 *   locally installed esbuild (no Docker) with the options of
 *   infra/bundling.ts (shared with the bench; the header there says why a
 *   `lambda.Function` with a local bundling step, not NodejsFunction), the
 *   capability registry's validators precompiled for the enabled connectors;
 * - its own log group with the configured retention, JSON log format,
 *   Lambda's system log level, X-Ray tracing, and Powertools settings that never log events or capture responses;
 * - its own role with exactly the grants the definition asks for (no AWS
 *   managed policies);
 * - for a queue consumer: an SQS event source with partial batch responses,
 *   after checking the queue's visibility timeout exceeds the function timeout;
 * - for a scheduled function: an EventBridge rule with that schedule.
 *
 * API methods and the authorizer are wired by infra/api.ts from the
 * definitions' `trigger`. The definitions themselves live in
 * infra/aip-functions.ts (`aipFunctionDefinitions`).
 */
import { ArnFormat, AssetHashType, DockerImage, type Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { RouteId } from '../lib/http/routes.js';
import { GSIS } from '../lib/aws/dynamo/table-design.js';
import { BUNDLE_ENTRY_NAME, BUNDLE_ROOT, localBundlingCommand, runLocalBundling } from './bundling.js';
import { type InfraConfig, toDeploymentRuntimeConfig } from './config.js';
import { deploymentConnectorSources } from './deployment-connectors.js';
import { AIP_METRICS, FUNCTION_ENV, metricsNamespace, OPTIONAL_FUNCTION_ENV, POWERTOOLS_ENV } from './function-env.js';
import { NAG_REASONS } from './nag.js';
import { assertVisibilityExceedsTimeout, type QueueName, type StatefulResources } from './stateful-stack.js';

/** Repository root: entries resolve against it, whatever the working directory. */
export const PROJECT_ROOT = BUNDLE_ROOT;

export const LAMBDA_RUNTIME = lambda.Runtime.NODEJS_22_X;
export const LAMBDA_ARCHITECTURE = lambda.Architecture.ARM_64;
/** Lambda's limit on all environment variables of a function together. */
const LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4096;
/** Budget for the runtime configuration, leaving room for the other variables (whose values are deploy-time tokens). */
export const RUNTIME_CONFIG_LIMIT_BYTES = 2560;

export interface QueueConsumer {
  readonly queue: QueueName;
  /** @default 10 */
  readonly batchSize?: number;
  /** @default none */
  readonly maxBatchingWindow?: Duration;
  /** Upper bound of concurrent function instances the event source scales to (2-1000). @default none */
  readonly maxConcurrency?: number;
}

export interface FunctionAccess {
  /** Data access to the transactions table and its indexes (and the table key). */
  readonly table?: 'read' | 'readWrite';
  /** Queues this function may send to. */
  readonly sendTo?: readonly QueueName[];
  /** Create and delete one-time schedules in the reconcile schedule group (what lib/aws/scheduler does), and pass the scheduler role to them. */
  readonly reconcileSchedules?: boolean;
  /** Only delete schedules in the reconcile group (an operator's resolution settles a record: its schedule goes); no PassRole. */
  readonly cancelSchedules?: boolean;
  /** Read every credential secret the configuration references (the connector worker). */
  readonly connectorSecrets?: boolean;
  /** Read the cursor key secret (the functions whose routes page: they seal and open cursors). */
  readonly cursorKey?: boolean;
}

/**
 * What invokes a function, besides an SQS event source (`consumes`):
 * - `api`: API Gateway methods, one per route ID of lib/http/routes.ts (infra/api.ts);
 * - `authorizer`: the API's Lambda authorizer (exactly one definition);
 * - `schedule`: an EventBridge rule, e.g. every minute (the sweeper).
 */
export type FunctionTrigger =
  | { readonly kind: 'api'; readonly routes: readonly RouteId[] }
  | { readonly kind: 'authorizer' }
  | { readonly kind: 'schedule'; readonly every: Duration };

export interface FunctionDefinition {
  /** Construct ID, PascalCase and unique in the stack, e.g. `Worker`. */
  readonly id: string;
  /** Entry file relative to the repository root, e.g. `functions/worker.ts`. */
  readonly entry: string;
  /** Exported handler name. @default 'handler' */
  readonly handler?: string;
  readonly description: string;
  readonly timeout: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /**
   * Reserved concurrent executions: instances kept for this function alone
   * (and its ceiling). With `consumes.maxConcurrency`, at least that much.
   * @default none (the account's unreserved pool)
   */
  readonly reservedConcurrency?: number;
  /**
   * Provisioned concurrent executions, on a `live` alias of the function's
   * current version ({@link apiTarget}): that many environments are kept
   * initialized, their INIT run before any request reaches them.
   * @default none (every environment on demand)
   */
  readonly provisionedConcurrency?: number;
  readonly consumes?: QueueConsumer;
  readonly trigger?: FunctionTrigger;
  /**
   * Retries Lambda makes of a failed asynchronous invocation (EventBridge
   * rules invoke asynchronously). @default Lambda's (2)
   */
  readonly asyncRetryAttempts?: number;
  /** Add an alarm on this function's Errors metric (infra/alarms.ts). @default false */
  readonly alarmOnErrors?: boolean;
  readonly access?: FunctionAccess;
  /** Extra variables; they may not reuse a name from FUNCTION_ENV. */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Shell commands run after esbuild bundled the entry (local bundling), given
   * the project root and the bundle's folder: files to ship beside the code
   * (the operator console's build, infra/console.ts).
   */
  readonly afterBundling?: (inputDir: string, outputDir: string) => string[];
}

export interface FunctionBuildContext {
  readonly config: InfraConfig;
  readonly stateful: StatefulResources;
  readonly scheduleGroupName: string;
  readonly schedulerRole: iam.IRole;
}

export const TABLE_READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'] as const;
/** TransactWriteItems is authorised per item through these actions; there is no separate IAM action for it. */
export const TABLE_WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:ConditionCheckItem',
] as const;

function secretArn(stack: Stack, reference: string): string {
  if (reference.startsWith('arn:')) return reference;
  // `-??????` matches the random suffix Secrets Manager appends to the name, without a `*`.
  return stack.formatArn({ service: 'secretsmanager', resource: 'secret', resourceName: `${reference}-??????`, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
}

/** Checks a definition before anything is created; throws naming the definition and the problem. */
export function validateFunctionDefinition(definition: FunctionDefinition, stateful: StatefulResources): void {
  const where = `function definition "${definition.id}"`;
  if (!/^[A-Z][A-Za-z0-9]{0,63}$/.test(definition.id)) throw new Error(`${where}: id must be PascalCase letters and digits`);
  const seconds = definition.timeout.toSeconds();
  if (seconds < 1 || seconds > 900) throw new Error(`${where}: timeout must be 1-900 s, got ${seconds} s`);
  if (definition.consumes) {
    const workQueue = stateful.queues[definition.consumes.queue];
    assertVisibilityExceedsTimeout(definition.consumes.queue, workQueue.visibilityTimeout, definition.timeout);
  }
  if (definition.reservedConcurrency !== undefined) {
    const reserved = definition.reservedConcurrency;
    if (!Number.isInteger(reserved) || reserved < 1) throw new Error(`${where}: reservedConcurrency must be a positive integer, got ${reserved}`);
    const max = definition.consumes?.maxConcurrency;
    if (max !== undefined && reserved < max) {
      throw new Error(
        `${where}: reservedConcurrency (${reserved}) is below the event source's maxConcurrency (${max}); Lambda would throttle the queue's messages`,
      );
    }
  }
  if (definition.consumes && definition.trigger && definition.trigger.kind !== 'schedule') {
    throw new Error(`${where}: a queue consumer cannot also serve the API or be the authorizer`);
  }
  if (definition.trigger?.kind === 'api' && definition.trigger.routes.length === 0) throw new Error(`${where}: an api trigger needs at least one route`);
  if (definition.trigger?.kind === 'schedule') {
    const minutes = definition.trigger.every.toMinutes({ integral: false });
    if (!Number.isInteger(minutes) || minutes < 1)
      throw new Error(`${where}: a schedule runs every whole number of minutes (EventBridge rate), got ${minutes}`);
  }
  const reserved = new Set<string>([...Object.values(FUNCTION_ENV), ...Object.values(OPTIONAL_FUNCTION_ENV), ...Object.values(POWERTOOLS_ENV)]);
  for (const name of Object.keys(definition.environment ?? {})) {
    if (reserved.has(name)) throw new Error(`${where}: environment variable ${name} is set by the stack and cannot be overridden`);
  }
}

/** Builds one function as the module comment describes. */
export function createFunction(scope: Construct, definition: FunctionDefinition, context: FunctionBuildContext): lambda.Function {
  validateFunctionDefinition(definition, context.stateful);
  const stack = Stack.of(scope);
  const { stateful, config } = context;
  const access = definition.access ?? {};

  const runtimeConfig = JSON.stringify(toDeploymentRuntimeConfig(config));
  const connectorEndpoints = Object.keys(config.connectorEndpoints).length > 0 ? JSON.stringify(config.connectorEndpoints) : undefined;
  // AIP_CONNECTOR_ENDPOINTS shares the budget: both are configuration-sized JSON.
  const configBytes = Buffer.byteLength(runtimeConfig) + (connectorEndpoints ? Buffer.byteLength(connectorEndpoints) : 0);
  if (configBytes > RUNTIME_CONFIG_LIMIT_BYTES) {
    throw new Error(
      `The runtime configuration is ${configBytes} bytes as JSON; Lambda allows ${LAMBDA_ENVIRONMENT_LIMIT_BYTES} bytes ` +
        `of environment in total and this stack budgets ${RUNTIME_CONFIG_LIMIT_BYTES} for it (connectors, credential rows, ` +
        'approval policies and connector endpoints). Shorten descriptions or IDs, or deliver the runtime configuration as a file in the bundle ' +
        '(see docs/infra.md, "Runtime configuration").',
    );
  }

  const logGroup = new logs.LogGroup(scope, `${definition.id}Logs`, {
    retention: config.logRetentionDays as logs.RetentionDays,
    removalPolicy: RemovalPolicy.DESTROY,
  });

  const role = new iam.Role(scope, `${definition.id}Role`, {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: `AIP ${config.envName}: ${definition.description}`.slice(0, 1000),
  });
  logGroup.grantWrite(role);

  // Set when a CDK key grant adds kms:ReEncrypt* / kms:GenerateDataKey*; only then are those findings acknowledged.
  let kmsWildcardGrant = false;
  const grantKeyReadWrite = (key: kms.IKey) => {
    key.grantEncryptDecrypt(role);
    kmsWildcardGrant = true;
  };

  if (access.table) {
    const tableArn = stateful.table.tableArn;
    const indexArns = Object.values(GSIS).map((gsi) => `${tableArn}/index/${gsi.name}`);
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: access.table === 'readWrite' ? [...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS] : [...TABLE_READ_ACTIONS],
        resources: [tableArn, ...indexArns],
      }),
    );
    if (access.table === 'readWrite') grantKeyReadWrite(stateful.tableKey);
    else stateful.tableKey.grantDecrypt(role);
  }

  for (const name of new Set(access.sendTo ?? [])) {
    const queue = stateful.queues[name].queue;
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [queue.queueArn] }));
    if (stateful.queueKey) {
      role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['kms:GenerateDataKey', 'kms:Decrypt'], resources: [stateful.queueKey.keyArn] }));
    }
  }

  if (access.reconcileSchedules) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['scheduler:CreateSchedule', 'scheduler:DeleteSchedule'],
        resources: [stack.formatArn({ service: 'scheduler', resource: 'schedule', resourceName: `${context.scheduleGroupName}/*` })],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['iam:PassRole'],
        resources: [context.schedulerRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${context.scheduleGroupName}/*]`,
      reason: NAG_REASONS.reconcileSchedules,
    });
  }

  if (access.cancelSchedules && !access.reconcileSchedules) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['scheduler:DeleteSchedule'],
        resources: [stack.formatArn({ service: 'scheduler', resource: 'schedule', resourceName: `${context.scheduleGroupName}/*` })],
      }),
    );
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${context.scheduleGroupName}/*]`,
      reason: NAG_REASONS.reconcileSchedules,
    });
  }

  if (access.connectorSecrets) {
    const credentials = config.connectors.flatMap((connector) => connector.credentials);
    if (credentials.length > 0) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['secretsmanager:GetSecretValue'],
          resources: [...new Set(credentials.map((credential) => secretArn(stack, credential.secret)))],
        }),
      );
    }
    const keyArns = [...new Set(credentials.flatMap((credential) => (credential.kmsKeyArn ? [credential.kmsKeyArn] : [])))];
    if (keyArns.length > 0) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: keyArns,
          conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${stack.region}.amazonaws.com` } },
        }),
      );
    }
  }

  if (access.cursorKey) {
    // The exact secret ARN (its own reference), no wildcard; it is encrypted with the AWS managed key, so no KMS grant.
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [stateful.cursorKeySecret.secretArn] }));
  }

  const bundled = {
    entry: definition.entry,
    connectors: config.connectors.map(({ id }) => ({ id, ...(config.connectorEndpoints[id] !== undefined ? { baseUrl: config.connectorEndpoints[id] } : {}) })),
    deploymentConnectors: deploymentConnectorSources(config),
    // Validated at build with the functions' own schemas and carried by the bundle, so a cold start builds none.
    runtimeConfig,
    // With provisioned concurrency the Runtime is built in INIT (./bundling.ts `provisionedEntryPlugin`).
    ...(definition.provisionedConcurrency !== undefined ? { provisionedInit: true } : {}),
  };
  const fn = new lambda.Function(scope, definition.id, {
    // index.mjs + chunks/ (infra/bundling.ts), built locally: no Docker image is ever pulled.
    code: lambda.Code.fromAsset(PROJECT_ROOT, {
      assetHashType: AssetHashType.OUTPUT,
      bundling: {
        image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22-local-bundling-only'),
        // What is bundled, spelled out: CDK caches a staged asset by these options (the function below does not count).
        command: localBundlingCommand(bundled, '/asset-output').args,
        ...(definition.afterBundling !== undefined
          ? { environment: { AIP_AFTER_BUNDLING: definition.afterBundling('<input>', '<output>').join(' && ') } }
          : {}),
        local: {
          tryBundle: (outputDir) =>
            runLocalBundling({ ...bundled, ...(definition.afterBundling !== undefined ? { afterBundling: definition.afterBundling } : {}) }, outputDir),
        },
      },
    }),
    handler: `${BUNDLE_ENTRY_NAME}.${definition.handler ?? 'handler'}`,
    description: definition.description,
    runtime: LAMBDA_RUNTIME,
    architecture: LAMBDA_ARCHITECTURE,
    timeout: definition.timeout,
    memorySize: definition.memorySize ?? 512,
    ...(definition.reservedConcurrency !== undefined ? { reservedConcurrentExecutions: definition.reservedConcurrency } : {}),
    role,
    logGroup,
    loggingFormat: lambda.LoggingFormat.JSON,
    tracing: config.tracing ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
    // Lambda's own filter (JSON format) agrees with Powertools' level, so neither hides the other's records.
    applicationLogLevelV2: lambda.ApplicationLogLevel[config.logLevel],
    // Lambda's platform records: at WARN only a failed invocation's (docs/infra.md, "Logs").
    systemLogLevelV2: lambda.SystemLogLevel[config.lambdaSystemLogLevel],
    ...(definition.asyncRetryAttempts !== undefined ? { retryAttempts: definition.asyncRetryAttempts } : {}),
    environment: {
      // Node's source-map support only when asked for (`sourceMaps`: it costs cold start; the .map files ship either way).
      ...(config.sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
      [POWERTOOLS_ENV.serviceName]: AIP_METRICS.serviceName,
      [POWERTOOLS_ENV.metricsNamespace]: metricsNamespace(config.envName),
      [POWERTOOLS_ENV.logLevel]: config.logLevel,
      [POWERTOOLS_ENV.logLevelAlias]: config.logLevel,
      POWERTOOLS_LOGGER_LOG_EVENT: 'false',
      POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
      // functions/shared/observability.ts imports the tracer only when this is not `false`.
      POWERTOOLS_TRACE_ENABLED: String(config.tracing),
      [FUNCTION_ENV.envName]: config.envName,
      [FUNCTION_ENV.tableName]: stateful.table.tableName,
      [FUNCTION_ENV.invokeQueueUrl]: stateful.queues.invoke.queue.queueUrl,
      // The Runtime caps its capacity deferrals by it, so the queue's last delivery always settles the action.
      [FUNCTION_ENV.invokeQueueMaxReceiveCount]: String(stateful.queues.invoke.maxReceiveCount),
      [FUNCTION_ENV.reconcileQueueUrl]: stateful.queues.reconcile.queue.queueUrl,
      [FUNCTION_ENV.reconcileQueueArn]: stateful.queues.reconcile.queue.queueArn,
      [FUNCTION_ENV.scheduleGroupName]: context.scheduleGroupName,
      [FUNCTION_ENV.schedulerRoleArn]: context.schedulerRole.roleArn,
      [FUNCTION_ENV.runtimeConfig]: runtimeConfig,
      [FUNCTION_ENV.cursorKeySecretArn]: stateful.cursorKeySecret.secretArn,
      ...(connectorEndpoints ? { [OPTIONAL_FUNCTION_ENV.connectorEndpoints]: connectorEndpoints } : {}),
      ...definition.environment,
    },
  });

  if (definition.consumes) {
    const { queue, batchSize, maxBatchingWindow, maxConcurrency } = definition.consumes;
    fn.addEventSource(
      new SqsEventSource(stateful.queues[queue].queue, {
        batchSize: batchSize ?? 10,
        reportBatchItemFailures: true,
        ...(maxBatchingWindow ? { maxBatchingWindow } : {}),
        ...(maxConcurrency ? { maxConcurrency } : {}),
      }),
    );
  }

  if (definition.trigger?.kind === 'schedule') {
    const minutes = definition.trigger.every.toMinutes();
    new events.Rule(scope, `${definition.id}Schedule`, {
      description: `AIP ${config.envName}: runs ${definition.id} every ${minutes === 1 ? 'minute' : `${minutes} minutes`}`,
      schedule: events.Schedule.rate(definition.trigger.every),
      // A missed run is not retried by EventBridge: the next one comes within the period anyway.
      targets: [new targets.LambdaFunction(fn, { retryAttempts: 0 })],
    });
  }

  // X-Ray's PutTraceSegments/PutTelemetryRecords accept no resource ARN.
  Validations.of(role).acknowledge({ id: 'AwsSolutions-IAM5[Resource::*]', reason: NAG_REASONS.xrayWrite });
  if (kmsWildcardGrant) {
    Validations.of(role).acknowledge(
      { id: 'AwsSolutions-IAM5[Action::kms:ReEncrypt*]', reason: NAG_REASONS.kmsGrantWildcards },
      { id: 'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]', reason: NAG_REASONS.kmsGrantWildcards },
    );
  }
  // Node.js 22 is the runtime the issue and the design card name; see docs/infra.md.
  Validations.of(fn).acknowledge({ id: 'AwsSolutions-L1', reason: NAG_REASONS.nodeRuntime });

  return fn;
}

/** The construct ID of a route function's `live` alias, under the function. */
export const LIVE_ALIAS_ID = 'Live';

/**
 * What the API invokes for a route function: the function itself, or, with
 * `provisionedConcurrency`, its `live` alias on the current version, which
 * keeps that many environments initialized. Lambda's provisioned concurrency
 * applies to a version or an alias, never to $LATEST, so the integration and
 * its invoke permission name the alias. Each deployment that changes the code
 * or the configuration publishes a new version and moves the alias to it;
 * Lambda then provisions that version's environments. docs/infra.md
 * ("Provisioned concurrency").
 */
export function apiTarget(fn: lambda.Function, definition: Pick<FunctionDefinition, 'provisionedConcurrency'>): lambda.IFunction {
  if (definition.provisionedConcurrency === undefined) return fn;
  return new lambda.Alias(fn, LIVE_ALIAS_ID, {
    aliasName: 'live',
    version: fn.currentVersion,
    provisionedConcurrentExecutions: definition.provisionedConcurrency,
    description: `The API's target: ${definition.provisionedConcurrency} environments kept initialized`,
  });
}
