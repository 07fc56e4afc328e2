/**
 * The stateful stack: everything that holds data and must survive a redeploy or
 * a teardown of the code. The single DynamoDB table (its keys, GSIs and TTL come
 * from lib/aws/dynamo/table-design.ts, the same module the store adapter uses),
 * its KMS key, the two work queues with their dead-letter queues, and the
 * secret whose generated key material seals pagination cursors.
 *
 * Why it is apart from the stateless stack, and every choice below: docs/infra.md.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { GSI_PROJECTION, GSIS, TABLE_KEYS, TTL_ATTRIBUTE } from '../lib/aws/dynamo/table-design.js';
import { NAG_REASONS } from './nag.js';

export const QUEUE_NAMES = ['invoke', 'reconcile'] as const;
/** `invoke` carries connector invocations; `reconcile` carries reconciliation triggers (from Scheduler and the sweeper). */
export type QueueName = (typeof QUEUE_NAMES)[number];

/**
 * Index projection, from the table design (KEYS_ONLY): a lookup through an
 * index returns the base-table key and the adapter then reads the record with a
 * strongly consistent GetItem, so a compare-and-set revision never comes from an
 * eventually consistent index copy; and a transition that changes no index key
 * costs no index write. See docs/infra.md ("Table").
 */
export const GSI_PROJECTION_TYPE: dynamodb.ProjectionType = dynamodb.ProjectionType[GSI_PROJECTION];

export const DEFAULT_CONSUMER_TIMEOUT = Duration.seconds(60);
/** AWS's guidance for SQS event sources: visibility timeout at least six times the function timeout. */
export const VISIBILITY_TIMEOUT_FACTOR = 6;
export const DEFAULT_MAX_RECEIVE_COUNT = 5;
export const WORK_QUEUE_RETENTION = Duration.days(4);
/** The maximum. For standard queues a message's age counts from its first enqueue, so a DLQ must keep longer than its source. */
export const DEAD_LETTER_RETENTION = Duration.days(14);

export interface WorkQueue {
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  /** Visibility timeout of `queue`: the stateless stack checks it exceeds the consumer's timeout. */
  readonly visibilityTimeout: Duration;
  /** The consumer function timeout this queue was sized for. */
  readonly consumerTimeout: Duration;
  readonly maxReceiveCount: number;
}

/** What the stateless stack needs from the stateful one; the StatefulStack implements it. */
export interface StatefulResources {
  readonly table: dynamodb.ITable;
  /** Customer managed key of the table. */
  readonly tableKey: kms.IKey;
  /** Customer managed key of the queues, when `queueEncryption` is `kms`; otherwise SSE-SQS and undefined. */
  readonly queueKey: kms.IKey | undefined;
  readonly queues: Readonly<Record<QueueName, WorkQueue>>;
  /** Key material that seals pagination cursors (a generated string; read by the listing functions). */
  readonly cursorKeySecret: secretsmanager.ISecret;
}

/** The cursor key's generated string: 64 letters and digits (HKDF input, lib/runtime/cursor.ts). */
export const CURSOR_KEY_LENGTH = 64;

export interface StatefulStackProps extends StackProps {
  /** Environment name from the configuration; used in KMS aliases only (physical names are left to CloudFormation). */
  readonly envName: string;
  /** @default 'sqs-managed' */
  readonly queueEncryption?: 'sqs-managed' | 'kms';
  /** Timeout of the connector worker that consumes `invoke`. @default 60 s */
  readonly workerTimeout?: Duration;
  /** Timeout of the reconcile consumer. @default 60 s */
  readonly reconcilerTimeout?: Duration;
  /** @default 6 x workerTimeout */
  readonly invokeVisibilityTimeout?: Duration;
  /** @default 6 x reconcilerTimeout */
  readonly reconcileVisibilityTimeout?: Duration;
  /** Receives before a message moves to its DLQ. @default 5 */
  readonly maxReceiveCount?: number;
}

/** Throws when a queue's visibility timeout does not exceed its consumer's timeout. */
export function assertVisibilityExceedsTimeout(queue: string, visibility: Duration, consumerTimeout: Duration): void {
  if (visibility.toSeconds() <= consumerTimeout.toSeconds()) {
    throw new Error(
      `The ${queue} queue's visibility timeout (${visibility.toSeconds()} s) must exceed its consumer's timeout ` +
        `(${consumerTimeout.toSeconds()} s); otherwise a message in flight is redelivered to a second attempt while ` +
        `the first still runs. Use at least ${VISIBILITY_TIMEOUT_FACTOR} x the timeout.`,
    );
  }
  if (visibility.toSeconds() > 12 * 3600) {
    throw new Error(`The ${queue} queue's visibility timeout (${visibility.toSeconds()} s) exceeds the SQS maximum of 43200 s.`);
  }
}

export class StatefulStack extends Stack implements StatefulResources {
  public readonly table: dynamodb.Table;
  public readonly tableKey: kms.Key;
  public readonly queueKey: kms.Key | undefined;
  public readonly invokeQueue: sqs.Queue;
  public readonly invokeDeadLetterQueue: sqs.Queue;
  public readonly reconcileQueue: sqs.Queue;
  public readonly reconcileDeadLetterQueue: sqs.Queue;
  public readonly queues: Readonly<Record<QueueName, WorkQueue>>;
  public readonly cursorKeySecret: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, props);

    this.tableKey = new kms.Key(this, 'TableKey', {
      description: `AIP runtime (${props.envName}): encrypts the transactions table`,
      alias: `alias/aip/${props.envName}/table`,
      enableKeyRotation: true,
      // A retained table is unreadable without its key: keep the key too.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: TABLE_KEYS.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: TTL_ATTRIBUTE,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.tableKey,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const gsi of Object.values(GSIS)) {
      this.table.addGlobalSecondaryIndex({
        indexName: gsi.name,
        partitionKey: { name: gsi.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: gsi.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: GSI_PROJECTION_TYPE,
      });
    }

    const encryption = props.queueEncryption ?? 'sqs-managed';
    this.queueKey =
      encryption === 'kms'
        ? new kms.Key(this, 'QueueKey', {
            description: `AIP runtime (${props.envName}): encrypts the work queues and their DLQs`,
            alias: `alias/aip/${props.envName}/queues`,
            enableKeyRotation: true,
            removalPolicy: RemovalPolicy.RETAIN,
          })
        : undefined;
    const queueEncryptionProps: Pick<sqs.QueueProps, 'encryption' | 'encryptionMasterKey' | 'enforceSSL'> = this.queueKey
      ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: this.queueKey, enforceSSL: true }
      : { encryption: sqs.QueueEncryption.SQS_MANAGED, enforceSSL: true };

    const maxReceiveCount = props.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT;
    if (!Number.isInteger(maxReceiveCount) || maxReceiveCount < 1 || maxReceiveCount > 1000) {
      throw new Error(`maxReceiveCount must be an integer from 1 to 1000, got ${maxReceiveCount}`);
    }

    const workQueue = (name: 'Invoke' | 'Reconcile', consumerTimeout: Duration, visibility: Duration | undefined) => {
      const visibilityTimeout = visibility ?? Duration.seconds(consumerTimeout.toSeconds() * VISIBILITY_TIMEOUT_FACTOR);
      assertVisibilityExceedsTimeout(name.toLowerCase(), visibilityTimeout, consumerTimeout);
      const deadLetterQueue = new sqs.Queue(this, `${name}DeadLetterQueue`, {
        ...queueEncryptionProps,
        retentionPeriod: DEAD_LETTER_RETENTION,
        removalPolicy: RemovalPolicy.RETAIN,
      });
      // A standard queue, not FIFO: the producers put MessageGroupId = tenant on every message, which makes
      // it an SQS fair queue (no queue attribute turns that on); docs/queue-and-scheduler.md, "Fairness between tenants".
      const queue = new sqs.Queue(this, `${name}Queue`, {
        ...queueEncryptionProps,
        visibilityTimeout,
        retentionPeriod: WORK_QUEUE_RETENTION,
        deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount },
        removalPolicy: RemovalPolicy.RETAIN,
      });
      return { queue, deadLetterQueue, visibilityTimeout, consumerTimeout, maxReceiveCount };
    };

    const invoke = workQueue('Invoke', props.workerTimeout ?? DEFAULT_CONSUMER_TIMEOUT, props.invokeVisibilityTimeout);
    const reconcile = workQueue('Reconcile', props.reconcilerTimeout ?? DEFAULT_CONSUMER_TIMEOUT, props.reconcileVisibilityTimeout);
    this.invokeQueue = invoke.queue;
    this.invokeDeadLetterQueue = invoke.deadLetterQueue;
    this.reconcileQueue = reconcile.queue;
    this.reconcileDeadLetterQueue = reconcile.deadLetterQueue;
    this.queues = { invoke, reconcile };

    // Seals the cursors of the listings. Retained: a replaced key only invalidates outstanding cursors,
    // but a deleted one would break the functions until the next deploy.
    this.cursorKeySecret = new secretsmanager.Secret(this, 'CursorKey', {
      description: `AIP runtime (${props.envName}): key material that seals pagination cursors`,
      generateSecretString: { passwordLength: CURSOR_KEY_LENGTH, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.cursorKeySecret).acknowledge({ id: 'AwsSolutions-SMG4', reason: NAG_REASONS.cursorKeyRotation });

    new CfnOutput(this, 'TableName', { value: this.table.tableName, description: 'The AIP transactions table' });
    new CfnOutput(this, 'InvokeDeadLetterQueueUrl', { value: invoke.deadLetterQueue.queueUrl, description: 'Failed connector invocations' });
    new CfnOutput(this, 'ReconcileDeadLetterQueueUrl', { value: reconcile.deadLetterQueue.queueUrl, description: 'Failed reconciliation triggers' });
  }
}
