/**
 * CloudWatch alarms of the runtime, and the SNS topic they notify when the
 * configuration names an `alarmEmail`:
 *
 * - each DLQ holds a message (a connector invocation or a reconciliation
 *   trigger failed `maxReceiveCount` times);
 * - a worker (invoke worker, reconcile consumer, sweeper) had invocation
 *   errors (a whole batch or a sweep failed: a bad configuration, a crash, a
 *   timeout; single failed records are redelivered and end in the DLQ);
 * - the oldest `outcome_unknown` transaction is older than
 *   `outcomeUnknownAlarmAgeSeconds` (the sweeper's
 *   `OldestOutcomeUnknownAgeSeconds` metric): reconciliation is not keeping up,
 *   or a transaction was escalated and waits for a human;
 * - the invoke queue's oldest message of a quiet tenant is older than
 *   `quietTenantQueueAgeAlarmSeconds` (`ApproximateAgeOfOldestMessageInQuietGroups`,
 *   which SQS publishes for a fair queue: the producers send a message group
 *   per tenant). One tenant's backlog behind a slow provider does not page
 *   anyone; tenants waiting behind it, or workers too few for everyone, do.
 *
 * Thresholds and reasons: docs/infra.md ("Alarms").
 */
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import type { InfraConfig } from './config.js';
import { AIP_METRICS, metricsNamespace } from './function-env.js';
import { QUEUE_NAMES, type StatefulResources } from './stateful-stack.js';

/** Period of every alarm's metric. SQS publishes queue metrics every minute (every five for idle queues). */
export const ALARM_PERIOD = Duration.minutes(5);

/** The CloudWatch metric the sweeper publishes and the age alarm watches. */
export function oldestOutcomeUnknownAgeMetric(envName: string): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: metricsNamespace(envName),
    metricName: AIP_METRICS.oldestOutcomeUnknownAge,
    dimensionsMap: { service: AIP_METRICS.serviceName },
    statistic: cloudwatch.Stats.MAXIMUM,
    period: ALARM_PERIOD,
    // No unit filter: an alarm with a unit sees only datapoints published with exactly that unit.
  });
}

export interface AipAlarmsProps {
  readonly config: InfraConfig;
  readonly stateful: StatefulResources;
  /** Functions whose Errors metric gets an alarm, by definition ID. */
  readonly watchedFunctions: Readonly<Record<string, lambda.IFunction>>;
}

export class AipAlarms extends Construct {
  /** Set when `alarmEmail` is configured. */
  public readonly topic: sns.Topic | undefined;
  public readonly deadLetterAlarms: Readonly<Record<string, cloudwatch.Alarm>>;
  public readonly errorAlarms: Readonly<Record<string, cloudwatch.Alarm>>;
  public readonly outcomeUnknownAgeAlarm: cloudwatch.Alarm;
  public readonly quietTenantQueueAgeAlarm: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, props: AipAlarmsProps) {
    super(scope, id);
    const { config, stateful } = props;
    const env = config.envName;
    const stack = Stack.of(this);

    const deadLetterAlarms: Record<string, cloudwatch.Alarm> = {};
    for (const name of QUEUE_NAMES) {
      deadLetterAlarms[name] = new cloudwatch.Alarm(this, `${name === 'invoke' ? 'Invoke' : 'Reconcile'}DeadLetterDepth`, {
        alarmName: `aip-${env}-${name}-dlq-depth`,
        alarmDescription: `AIP ${env}: the ${name} DLQ holds messages that failed ${stateful.queues[name].maxReceiveCount} receives. Inspect them, fix the cause, then redrive.`,
        metric: stateful.queues[name].deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          statistic: cloudwatch.Stats.MAXIMUM,
          period: ALARM_PERIOD,
        }),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        threshold: 0,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    this.deadLetterAlarms = deadLetterAlarms;

    const errorAlarms: Record<string, cloudwatch.Alarm> = {};
    for (const [functionId, fn] of Object.entries(props.watchedFunctions)) {
      errorAlarms[functionId] = new cloudwatch.Alarm(this, `${functionId}Errors`, {
        alarmName: `aip-${env}-${functionId.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}-errors`,
        alarmDescription: `AIP ${env}: ${functionId} invocations failed (the whole batch or run). See its log group.`,
        metric: fn.metricErrors({ statistic: cloudwatch.Stats.SUM, period: ALARM_PERIOD }),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold: 1,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    this.errorAlarms = errorAlarms;

    this.outcomeUnknownAgeAlarm = new cloudwatch.Alarm(this, 'OldestOutcomeUnknownAge', {
      alarmName: `aip-${env}-oldest-outcome-unknown-age`,
      alarmDescription:
        `AIP ${env}: a transaction has been outcome_unknown for more than ${config.outcomeUnknownAlarmAgeSeconds} s. ` +
        'List them with GET /v1/operator/transactions?view=outcome_unknown; escalated ones need a human.',
      metric: oldestOutcomeUnknownAgeMetric(env),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: config.outcomeUnknownAlarmAgeSeconds,
      evaluationPeriods: 1,
      // No data: no sweep ran (the sweeper's error alarm covers that) or nothing is outcome_unknown.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    // A fair queue (a standard queue whose messages carry MessageGroupId = tenant) publishes its quiet
    // tenants' metrics: the age of their oldest message stays low while one noisy tenant has a backlog.
    this.quietTenantQueueAgeAlarm = new cloudwatch.Alarm(this, 'InvokeQuietTenantQueueAge', {
      alarmName: `aip-${env}-invoke-quiet-tenant-queue-age`,
      alarmDescription:
        `AIP ${env}: an invocation of a tenant that is not the noisy one has waited in the invoke queue for more than ${config.quietTenantQueueAgeAlarmSeconds} s. ` +
        'The workers do not keep up with the tenants that are not flooding the queue: check the worker errors, its concurrency (workerMaxConcurrency) and ApproximateNumberOfNoisyGroups.',
      metric: stateful.queues.invoke.queue.metric('ApproximateAgeOfOldestMessageInQuietGroups', {
        statistic: cloudwatch.Stats.MAXIMUM,
        period: ALARM_PERIOD,
      }),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: config.quietTenantQueueAgeAlarmSeconds,
      evaluationPeriods: 1,
      // SQS publishes nothing for an idle queue.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    const all = [...Object.values(deadLetterAlarms), ...Object.values(errorAlarms), this.outcomeUnknownAgeAlarm, this.quietTenantQueueAgeAlarm];

    if (config.alarmEmail !== undefined) {
      // SSE with a customer managed key: CloudWatch cannot use the AWS managed aws/sns key to publish.
      const key = new kms.Key(this, 'AlarmTopicKey', {
        description: `AIP runtime (${env}): encrypts the alarm notification topic`,
        enableKeyRotation: true,
        // Notifications are transient; the key goes with the stack (after KMS's waiting period).
        removalPolicy: RemovalPolicy.DESTROY,
        pendingWindow: Duration.days(7),
      });
      key.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'AllowCloudWatchAlarmsToPublish',
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          resources: ['*'],
        }),
      );
      const topic = new sns.Topic(this, 'AlarmTopic', {
        displayName: `AIP ${env} alarms`,
        masterKey: key,
        enforceSSL: true,
      });
      topic.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'AllowCloudWatchAlarmsOfThisAccount',
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['sns:Publish'],
          resources: [topic.topicArn],
          conditions: {
            StringEquals: { 'aws:SourceAccount': stack.account },
            ArnLike: {
              'aws:SourceArn': stack.formatArn({
                service: 'cloudwatch',
                resource: 'alarm',
                resourceName: `aip-${env}-*`,
                arnFormat: ArnFormat.COLON_RESOURCE_NAME,
              }),
            },
          },
        }),
      );
      topic.addSubscription(new subscriptions.EmailSubscription(config.alarmEmail));
      const action = new actions.SnsAction(topic);
      for (const alarm of all) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
      this.topic = topic;
    } else {
      this.topic = undefined;
    }
  }
}
