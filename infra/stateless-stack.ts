/**
 * The stateless stack: code and wiring that can be destroyed and redeployed
 * without losing data. It receives the stateful resources as props.
 *
 * - the EventBridge Scheduler group for one-time reconciliation schedules, and
 *   the role those schedules run as (it may only send to the reconcile queue);
 * - the functions (infra/aip-functions.ts, built by infra/functions.ts): one
 *   per route of the route table, the authorizer, the invoke worker, the
 *   reconcile consumer and the sweeper with its every-minute rule;
 * - the REST API with its authorizer (infra/api.ts), or, with `api.type:
 *   "http"`, the HTTP API with API Gateway's JWT authorizer (infra/http-api.ts),
 *   invoking a route function's `live` alias when `api.provisionedConcurrency`
 *   names one of its routes;
 * - the alarms and their optional SNS topic (infra/alarms.ts).
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type { Construct } from 'constructs';
import { AipAlarms } from './alarms.js';
import { AipApi } from './api.js';
import { AipConsole } from './console.js';
import { AipHttpApi } from './http-api.js';
import type { InfraConfig } from './config.js';
import { apiTarget, createFunction, type FunctionDefinition } from './functions.js';
import { AipRemoteConnectorHost } from './remote-host.js';
import type { StatefulResources } from './stateful-stack.js';

export interface StatelessStackProps extends StackProps {
  readonly config: InfraConfig;
  readonly stateful: StatefulResources;
  /** The Lambda functions to deploy. @default none */
  readonly functions?: readonly FunctionDefinition[];
}

/** Deterministic, so function code can name the group without a lookup. */
export function scheduleGroupName(envName: string): string {
  return `aip-${envName}-reconcile`;
}

export class StatelessStack extends Stack {
  public readonly scheduleGroup: scheduler.CfnScheduleGroup;
  public readonly scheduleGroupName: string;
  /** Role EventBridge Scheduler assumes to deliver reconciliation triggers. */
  public readonly schedulerRole: iam.Role;
  /** The deployed functions by definition ID. */
  public readonly functions: Readonly<Record<string, lambda.Function>>;
  /** The REST API; present when some definition serves routes and `api.type` is `rest` (the default). */
  public readonly api: AipApi | undefined;
  /** The HTTP API; present instead of the REST API when `api.type` is `http`. */
  public readonly httpApi: AipHttpApi | undefined;
  public readonly alarms: AipAlarms;
  /** The operator console; present when `auth.console` is configured. */
  public readonly console: AipConsole | undefined;
  /** The remote connector host, its keys and the checkpoint receiver; present when `remoteConnectorHost` is configured. */
  public readonly remoteHost: AipRemoteConnectorHost | undefined;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);
    const { config, stateful } = props;
    const reconcileQueue = stateful.queues.reconcile.queue;

    this.scheduleGroupName = scheduleGroupName(config.envName);
    this.scheduleGroup = new scheduler.CfnScheduleGroup(this, 'ReconcileScheduleGroup', { name: this.scheduleGroupName });

    const sendToReconcile = [new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [reconcileQueue.queueArn] })];
    if (stateful.queueKey) {
      // Sending to an SSE-KMS queue needs a data key from the queue's key.
      sendToReconcile.push(new iam.PolicyStatement({ actions: ['kms:GenerateDataKey', 'kms:Decrypt'], resources: [stateful.queueKey.keyArn] }));
    }
    this.schedulerRole = new iam.Role(this, 'SchedulerRole', {
      description: `AIP ${config.envName}: EventBridge Scheduler delivers reconciliation triggers to the reconcile queue`,
      // Confused-deputy guard: only schedules of this account, in this group, may assume the role.
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: {
            'aws:SourceAccount': this.account,
            'aws:SourceArn': this.scheduleGroup.attrArn,
          },
        },
      }),
      inlinePolicies: { SendToReconcileQueue: new iam.PolicyDocument({ statements: sendToReconcile }) },
    });

    const definitions = props.functions ?? [];
    const built: Record<string, lambda.Function> = {};
    for (const definition of definitions) {
      if (built[definition.id]) throw new Error(`Duplicate function definition ID "${definition.id}"`);
      built[definition.id] = createFunction(this, definition, {
        config,
        stateful,
        scheduleGroupName: this.scheduleGroupName,
        schedulerRole: this.schedulerRole,
      });
    }
    this.functions = built;

    // Remote placement: the host, its keys and the checkpoint receiver; every function that composes the runtime
    // (those with table access) gets the placement and may sign with the runtime key.
    if (config.remoteConnectorHost !== undefined) {
      this.remoteHost = new AipRemoteConnectorHost(this, 'RemoteConnectorHost', {
        build: { config, stateful, scheduleGroupName: this.scheduleGroupName, schedulerRole: this.schedulerRole },
      });
      for (const definition of definitions) if (definition.access?.table !== undefined) this.remoteHost.grantRuntime(built[definition.id]!);
    } else {
      this.remoteHost = undefined;
    }

    const routeFunctions: Record<string, lambda.IFunction> = {};
    const servedBy: Record<string, string> = {};
    for (const definition of definitions) {
      if (definition.trigger?.kind !== 'api') continue;
      // With provisioned concurrency the API invokes the function's `live` alias (infra/functions.ts `apiTarget`).
      const target = apiTarget(built[definition.id]!, definition);
      for (const routeId of definition.trigger.routes) {
        if (servedBy[routeId]) throw new Error(`Route ${routeId} is served by two functions: ${servedBy[routeId]} and ${definition.id}`);
        servedBy[routeId] = definition.id;
        routeFunctions[routeId] = target;
      }
    }
    const authorizers = definitions.filter((definition) => definition.trigger?.kind === 'authorizer');
    this.api = undefined;
    this.httpApi = undefined;
    if (Object.keys(routeFunctions).length > 0) {
      let api: AipApi | AipHttpApi;
      if (config.api.type === 'http') {
        // API Gateway's built-in JWT authorizer verifies tokens: no authorizer Lambda (infra/http-api.ts).
        if (authorizers.length > 0) throw new Error('The HTTP API (api.type "http") uses the built-in JWT authorizer: define no authorizer function');
        api = this.httpApi = new AipHttpApi(this, 'HttpApi', { config, routeFunctions });
      } else {
        if (authorizers.length !== 1) throw new Error(`The API needs exactly one authorizer function definition, got ${authorizers.length}`);
        api = this.api = new AipApi(this, 'Api', { config, routeFunctions, authorizerFunction: built[authorizers[0]!.id]! });
      }
      // The operator console, same origin as the API (infra/console.ts), when the configuration names its OIDC client.
      if (config.auth.console !== undefined) {
        this.console = new AipConsole(this, 'OperatorConsole', {
          api,
          build: { config, stateful, scheduleGroupName: this.scheduleGroupName, schedulerRole: this.schedulerRole },
        });
      }
    } else if (authorizers.length > 0) {
      throw new Error('An authorizer function is defined but no function serves a route');
    }

    this.alarms = new AipAlarms(this, 'Alarms', {
      config,
      stateful,
      watchedFunctions: Object.fromEntries(definitions.filter((d) => d.alarmOnErrors).map((d) => [d.id, built[d.id]!])),
    });

    new CfnOutput(this, 'ScheduleGroupName', { value: this.scheduleGroupName });
    new CfnOutput(this, 'SchedulerRoleArn', { value: this.schedulerRole.roleArn });
  }
}
