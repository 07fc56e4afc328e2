/**
 * The remote connector host, deployed when the configuration has
 * `remoteConnectorHost`: the listed connectors run out of the runtime's
 * functions, in their own Lambda, reached through signed requests
 * (lib/connectors/remote, docs/infra.md "Remote connector host").
 *
 * - Two KMS asymmetric keys (ECC_NIST_P256, SIGN_VERIFY): the runtime's and
 *   the host's. The private halves never leave KMS. The host may Sign with its
 *   key and read the runtime key's public half; the runtime's functions the
 *   reverse. Retained: routes pin the host key's ID.
 * - `ConnectorHost`: functions/connector-host/handler.ts behind a Function URL
 *   (auth NONE: every request is authenticated by the runtime's signature
 *   before any work). It reads the placed connectors' credential secrets
 *   (credentials resolve inside the host) and owns a small nonce table
 *   (replay protection shared by its environments).
 * - `CheckpointReceiver`: functions/connector-host/receiver.ts behind a
 *   Function URL (auth NONE: a callback must be signed by the pinned host key
 *   and carry the runtime's own signed request). It writes checkpoint inbox
 *   items in the runtime table.
 * - Every runtime function that composes the runtime (those with table
 *   access) gets AIP_REMOTE_CONNECTORS and the KMS grants: `grantRuntime`.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import type { ConnectorHostConfig, RemotePlacement } from '../lib/runtime/remote/config.js';
import { REMOTE_ENV } from '../lib/runtime/remote/config.js';
import { createFunction, type FunctionBuildContext, type FunctionDefinition } from './functions.js';

export const CONNECTOR_HOST_FUNCTION_ID = 'ConnectorHost';
export const CHECKPOINT_RECEIVER_FUNCTION_ID = 'CheckpointReceiver';

export interface AipRemoteConnectorHostProps {
  readonly build: FunctionBuildContext;
}

export class AipRemoteConnectorHost extends Construct {
  public readonly runtimeKey: kms.Key;
  public readonly hostKey: kms.Key;
  public readonly nonceTable: dynamodb.Table;
  public readonly hostFunction: lambda.Function;
  public readonly receiverFunction: lambda.Function;
  public readonly hostUrl: lambda.FunctionUrl;
  public readonly receiverUrl: lambda.FunctionUrl;
  readonly #placement: string;

  constructor(scope: Construct, id: string, props: AipRemoteConnectorHostProps) {
    super(scope, id);
    const { build } = props;
    const config = build.config;
    const remote = config.remoteConnectorHost;
    if (remote === undefined) throw new Error('remoteConnectorHost is not configured');

    const signingKey = (name: string, who: string) =>
      new kms.Key(this, name, {
        keySpec: kms.KeySpec.ECC_NIST_P256,
        keyUsage: kms.KeyUsage.SIGN_VERIFY,
        description: `AIP ${config.envName}: ${who} signing key of the remote connector placement (ES256)`,
        removalPolicy: RemovalPolicy.RETAIN,
      });
    this.runtimeKey = signingKey('RuntimeSigningKey', 'runtime');
    this.hostKey = signingKey('HostSigningKey', 'connector host');

    this.nonceTable = new dynamodb.Table(this, 'HostNonces', {
      partitionKey: { name: 'PK', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'ttl',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // Nonces live for the freshness window only: nothing to keep.
      removalPolicy: RemovalPolicy.DESTROY,
    });

    const hostConfig: ConnectorHostConfig = {
      envName: config.envName,
      endpoint: 'function-url',
      instanceId: remote.instanceId,
      replica: remote.replica,
      signing: { source: 'kms', keyId: this.hostKey.keyArn },
      runtimeKeys: [{ source: 'kms', keyId: this.runtimeKey.keyArn }],
      connectors: remote.connectors.map((cid) => {
        const c = config.connectors.find((x) => x.id === cid);
        const baseUrl = config.connectorEndpoints[cid];
        const maxConcurrentAttempts = remote.maxConcurrentAttempts[cid];
        return {
          id: cid,
          ...(baseUrl !== undefined ? { baseUrl } : {}),
          ...(maxConcurrentAttempts !== undefined ? { maxConcurrentAttempts } : {}),
          credentialRevision: '0',
          credentials: (c?.credentials ?? []).map((row) => ({
            handle: row.handle,
            tenantId: row.tenantId,
            ...(row.externalAccountId !== undefined ? { externalAccountId: row.externalAccountId } : {}),
            secret: row.secret,
            ...(row.versionStage !== undefined ? { versionStage: row.versionStage } : {}),
            ...(row.jsonField !== undefined ? { jsonField: row.jsonField } : {}),
          })),
        };
      }),
      nonceTable: this.nonceTable.tableName,
    };
    const hostDefinition: FunctionDefinition = {
      id: CONNECTOR_HOST_FUNCTION_ID,
      entry: 'functions/connector-host/handler.ts',
      description: `Remote connector host (${remote.connectors.join(', ')}): verifies signed, route-pinned requests and runs the connectors`,
      timeout: Duration.seconds(remote.timeoutSeconds),
      memorySize: remote.memorySize,
      alarmOnErrors: false,
      // The credentials of the placed connectors resolve here, not in the runtime.
      access: { connectorSecrets: true },
      environment: { [REMOTE_ENV.hostConfig]: JSON.stringify(hostConfig) },
    };
    this.hostFunction = createFunction(this, hostDefinition, build);
    this.hostKey.grant(this.hostFunction, 'kms:Sign', 'kms:GetPublicKey');
    this.runtimeKey.grant(this.hostFunction, 'kms:GetPublicKey');
    // Nonces (put) and the connectors' concurrency slots (put, and a conditional delete on release).
    this.hostFunction.addToRolePolicy(new iam.PolicyStatement({ actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'], resources: [this.nonceTable.tableArn] }));
    this.hostUrl = this.hostFunction.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE, invokeMode: lambda.InvokeMode.BUFFERED });

    // The placement every runtime function gets; the receiver URL is its own Function URL.
    const receiverDefinition: FunctionDefinition = {
      id: CHECKPOINT_RECEIVER_FUNCTION_ID,
      entry: 'functions/connector-host/receiver.ts',
      description: "Checkpoint receiver of the remote placement: makes a host's provider-operation checkpoint durable and acknowledges it",
      timeout: Duration.seconds(10),
      memorySize: 256,
      access: { table: 'readWrite' },
    };
    this.receiverFunction = createFunction(this, receiverDefinition, build);
    this.receiverUrl = this.receiverFunction.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE, invokeMode: lambda.InvokeMode.BUFFERED });
    const placement: RemotePlacement = {
      signing: { source: 'kms', keyId: this.runtimeKey.keyArn },
      callbackUrl: this.receiverUrl.url,
      connectors: remote.connectors.map((cid) => ({
        id: cid,
        endpoint: this.hostUrl.url,
        instanceId: remote.instanceId,
        replica: remote.replica,
        hostKey: { source: 'kms', keyId: this.hostKey.keyArn },
        credentialRevision: '0',
      })),
    };
    this.#placement = Stack.of(this).toJsonString(placement);
    // The receiver verifies host callbacks (host public key) and the runtime's own requests, and signs acks.
    const { callbackUrl: _ownUrl, ...receiverPlacement } = placement;
    this.receiverFunction.addEnvironment(REMOTE_ENV.placement, Stack.of(this).toJsonString(receiverPlacement));
    this.runtimeKey.grant(this.receiverFunction, 'kms:Sign', 'kms:GetPublicKey');
    this.hostKey.grant(this.receiverFunction, 'kms:GetPublicKey');

    new CfnOutput(Stack.of(this), 'ConnectorHostUrl', {
      value: this.hostUrl.url,
      description: 'The remote connector host (Function URL; signed requests only)',
    });
    new CfnOutput(Stack.of(this), 'CheckpointReceiverUrl', {
      value: this.receiverUrl.url,
      description: "The runtime's checkpoint receiver (Function URL; signed callbacks only)",
    });
    new CfnOutput(Stack.of(this), 'ConnectorHostKeyArn', {
      value: this.hostKey.keyArn,
      description: "The host's KMS signing key (its key ID is the peer identity routes pin)",
    });
  }

  /** A runtime function: AIP_REMOTE_CONNECTORS, Sign with the runtime key, read both public keys. */
  grantRuntime(fn: lambda.Function): void {
    fn.addEnvironment(REMOTE_ENV.placement, this.#placement);
    this.runtimeKey.grant(fn, 'kms:Sign', 'kms:GetPublicKey');
    this.hostKey.grant(fn, 'kms:GetPublicKey');
  }
}
