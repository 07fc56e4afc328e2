/**
 * Stack assertion tests for the CDK app: what the synthesized templates contain,
 * that cdk-nag (AwsSolutions) reports nothing, and that bad configuration fails
 * synth with a message naming the field.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { GSI_PROJECTION, GSIS, KEY_ATTRIBUTES, TABLE_KEYS, TTL_ATTRIBUTE } from '../../lib/aws/dynamo/table-design.js';
import { CONFIG_CONTEXT_KEY, defineAipApp, stackNames } from '../../infra/aip-app.js';
import { aipFunctionDefinitions } from '../../infra/aip-functions.js';
import { InfraConfigError, parseInfraConfig } from '../../infra/config.js';
import { applyNagChecks } from '../../infra/nag.js';
import { FUNCTION_ENV } from '../../infra/function-env.js';
import { type FunctionDefinition, TABLE_READ_ACTIONS, TABLE_WRITE_ACTIONS } from '../../infra/functions.js';
import { StatefulStack } from '../../infra/stateful-stack.js';
import { StatelessStack } from '../../infra/stateless-stack.js';
import { BASE_CONFIG, buildAip, nagViolations, newApp } from './support.js';

type Json = Record<string, any>;

/** For checks that do not involve the functions: skips building them (the full set is in runtime-stack.test.ts). */
const NO_FUNCTIONS = { functions: [] } as const;

function logicalId(stack: Stack, construct: IConstruct): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

/** The value a producer stack exports under `importName` (what an Fn::ImportValue in a consumer resolves to). */
function exportedValue(producer: Template, importName: string): unknown {
  const outputs = (producer.toJSON().Outputs ?? {}) as Record<string, Json>;
  const output = Object.values(outputs).find((o) => o.Export?.Name === importName);
  if (!output) throw new Error(`no export named ${importName}`);
  return output.Value;
}

/** Resolves Fn::ImportValue references of the stateless stack against the stateful template. */
function resolveImport(statefulTemplate: Template, value: unknown): unknown {
  if (value && typeof value === 'object' && 'Fn::ImportValue' in value) {
    return exportedValue(statefulTemplate, (value as Json)['Fn::ImportValue'] as string);
  }
  return value;
}

describe('stateful stack (default configuration: SSE-SQS queues)', () => {
  let built: ReturnType<typeof buildAip>;
  let template: Template;
  beforeAll(() => {
    built = buildAip(BASE_CONFIG, NO_FUNCTIONS);
    template = Template.fromStack(built.aip.stateful);
  });

  it('is environment-agnostic and needs no context lookups', () => {
    expect(built.aip.stateful.environment).toBe('aws://unknown-account/unknown-region');
    expect(built.aip.stateless.environment).toBe('aws://unknown-account/unknown-region');
    expect(built.app.synth().manifest.missing ?? []).toEqual([]);
    expect(built.aip.stateful.stackName).toBe(stackNames('test').stateful);
  });

  it('creates one table whose keys, GSIs and TTL match lib/aws/dynamo/table-design.ts', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table')) as Json[];
    const props = table!.Properties as Json;
    expect(props.KeySchema).toEqual([
      { AttributeName: TABLE_KEYS.partitionKey, KeyType: 'HASH' },
      { AttributeName: TABLE_KEYS.sortKey, KeyType: 'RANGE' },
    ]);
    expect(props.BillingMode).toBe('PAY_PER_REQUEST');
    expect(props.TimeToLiveSpecification).toEqual({ AttributeName: TTL_ATTRIBUTE, Enabled: true });

    const expectedGsis = Object.values(GSIS).map((gsi) => ({
      IndexName: gsi.name,
      KeySchema: [
        { AttributeName: gsi.partitionKey, KeyType: 'HASH' },
        { AttributeName: gsi.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: GSI_PROJECTION },
    }));
    const byName = (a: Json, b: Json) => String(a.IndexName).localeCompare(String(b.IndexName));
    expect([...(props.GlobalSecondaryIndexes as Json[])].sort(byName)).toEqual(expectedGsis.sort(byName));

    expect([...(props.AttributeDefinitions as Json[])].sort((a, b) => String(a.AttributeName).localeCompare(String(b.AttributeName)))).toEqual(
      [...KEY_ATTRIBUTES].sort().map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    );
  });

  it('protects the table: PITR, deletion protection, customer managed KMS encryption, retained on delete', () => {
    const stack = built.aip.stateful;
    const keyId = logicalId(stack, stack.tableKey);
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
        SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } },
      }),
    });
    template.hasResource('AWS::KMS::Key', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({ EnableKeyRotation: true }),
    });
    // SSE-SQS by default: the table key is the only key.
    template.resourceCountIs('AWS::KMS::Key', 1);
    expect(stack.queueKey).toBeUndefined();
  });

  it('encrypts every queue, gives each work queue a DLQ with redrive, and keeps DLQ messages 14 days', () => {
    const stack = built.aip.stateful;
    template.resourceCountIs('AWS::SQS::Queue', 4);
    for (const queue of Object.values(template.findResources('AWS::SQS::Queue')) as Json[]) {
      expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
    }
    for (const [name, work] of Object.entries(stack.queues)) {
      const queueId = logicalId(stack, work.queue);
      const dlqId = logicalId(stack, work.deadLetterQueue);
      const resources = template.toJSON().Resources as Record<string, Json>;
      expect(resources[queueId]!.Properties, name).toMatchObject({
        VisibilityTimeout: 360,
        MessageRetentionPeriod: 4 * 24 * 3600,
        RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] }, maxReceiveCount: 5 },
      });
      expect(resources[dlqId]!.Properties.MessageRetentionPeriod, name).toBe(14 * 24 * 3600);
      expect(resources[dlqId]!.Properties.RedrivePolicy, name).toBeUndefined();
      expect(work.visibilityTimeout.toSeconds()).toBe(360);
      expect(work.consumerTimeout.toSeconds()).toBe(60);
    }
  });

  it('denies non-TLS access on every queue (enforceSSL)', () => {
    const stack = built.aip.stateful;
    const queueIds = Object.values(stack.queues).flatMap((w) => [w.queue, w.deadLetterQueue].map((q) => logicalId(stack, q)));
    const policies = Object.values(template.findResources('AWS::SQS::QueuePolicy')) as Json[];
    const protectedQueues = policies
      .filter((p) =>
        (p.Properties.PolicyDocument.Statement as Json[]).some((s) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false'),
      )
      .flatMap((p) => (p.Properties.Queues as Json[]).map((q) => q.Ref as string));
    expect(protectedQueues.sort()).toEqual(queueIds.sort());
  });

  it('reports no cdk-nag findings and no CDK errors', () => {
    expect(nagViolations(built.aip, built.app)).toEqual([]);
    const annotations = Annotations.fromStack(built.aip.stateful);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
    expect(annotations.findWarning('*', Match.anyValue())).toEqual([]);
  });
});

describe('stateless stack', () => {
  let built: ReturnType<typeof buildAip>;
  let template: Template;
  let statefulTemplate: Template;
  beforeAll(() => {
    built = buildAip();
    template = Template.fromStack(built.aip.stateless);
    statefulTemplate = Template.fromStack(built.aip.stateful);
  });

  it('creates the reconcile schedule group with a deterministic name', () => {
    template.resourceCountIs('AWS::Scheduler::ScheduleGroup', 1);
    template.hasResourceProperties('AWS::Scheduler::ScheduleGroup', { Name: 'aip-test-reconcile' });
    expect(built.aip.stateless.scheduleGroupName).toBe('aip-test-reconcile');
  });

  it('lets only EventBridge Scheduler, from this account and this schedule group, assume the scheduler role', () => {
    const stack = built.aip.stateless;
    const roleId = logicalId(stack, stack.schedulerRole);
    const role = (template.toJSON().Resources as Record<string, Json>)[roleId]!;
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Effect: 'Allow',
        Action: 'sts:AssumeRole',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: {
          StringEquals: {
            'aws:SourceAccount': { Ref: 'AWS::AccountId' },
            'aws:SourceArn': { 'Fn::GetAtt': [stack.getLogicalId(stack.scheduleGroup), 'Arn'] },
          },
        },
      },
    ]);
  });

  it('grants the scheduler role sqs:SendMessage on the reconcile queue and nothing else', () => {
    const stack = built.aip.stateless;
    const roleId = logicalId(stack, stack.schedulerRole);
    const role = (template.toJSON().Resources as Record<string, Json>)[roleId]!;
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    const statements = (role.Properties.Policies as Json[]).flatMap((p) => p.PolicyDocument.Statement as Json[]);
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatchObject({ Effect: 'Allow', Action: 'sqs:SendMessage' });

    const reconcileQueueId = logicalId(built.aip.stateful, built.aip.stateful.reconcileQueue);
    expect(resolveImport(statefulTemplate, statements[0]!.Resource)).toEqual({ 'Fn::GetAtt': [reconcileQueueId, 'Arn'] });

    // No other policy document in the stack mentions the role.
    for (const policy of Object.values(template.findResources('AWS::IAM::Policy')) as Json[]) {
      expect(JSON.stringify(policy.Properties.Roles)).not.toContain(roleId);
    }
  });

  it('deploys every function of infra/aip-functions.ts by default, and none when the definition list is empty', () => {
    expect(Object.keys(built.aip.stateless.functions).sort()).toEqual(
      aipFunctionDefinitions(built.aip.config)
        .map((d) => d.id)
        .sort(),
    );
    const empty = buildAip(BASE_CONFIG, { functions: [] });
    Template.fromStack(empty.aip.stateless).resourceCountIs('AWS::Lambda::Function', 0);
    expect(empty.aip.stateless.functions).toEqual({});
    expect(empty.aip.stateless.api).toBeUndefined();
  });

  it('reports no cdk-nag findings and no CDK errors', () => {
    expect(nagViolations(built.aip, built.app)).toEqual([]);
    const annotations = Annotations.fromStack(built.aip.stateless);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
    expect(annotations.findWarning('*', Match.anyValue())).toEqual([]);
  });
});

describe('KMS-encrypted queues (queueEncryption: "kms")', () => {
  let built: ReturnType<typeof buildAip>;
  beforeAll(() => {
    built = buildAip({ ...BASE_CONFIG, queueEncryption: 'kms' }, NO_FUNCTIONS);
  });

  it('encrypts all four queues with the queue key, a rotated and retained CMK', () => {
    const stack = built.aip.stateful;
    const template = Template.fromStack(stack);
    const keyId = logicalId(stack, stack.queueKey!);
    for (const queue of Object.values(template.findResources('AWS::SQS::Queue')) as Json[]) {
      expect(queue.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
    }
    template.resourceCountIs('AWS::KMS::Key', 2);
    expect((template.toJSON().Resources as Record<string, Json>)[keyId]).toMatchObject({
      DeletionPolicy: 'Retain',
      Properties: { EnableKeyRotation: true },
    });
  });

  it('adds only kms:GenerateDataKey and kms:Decrypt on the queue key to the scheduler role', () => {
    const stateless = built.aip.stateless;
    const template = Template.fromStack(stateless);
    const statefulTemplate = Template.fromStack(built.aip.stateful);
    const role = (template.toJSON().Resources as Record<string, Json>)[logicalId(stateless, stateless.schedulerRole)]!;
    const statements = (role.Properties.Policies as Json[]).flatMap((p) => p.PolicyDocument.Statement as Json[]);
    expect(statements).toHaveLength(2);
    const kmsStatement = statements.find((s) => JSON.stringify(s.Action).includes('kms:'))!;
    expect(kmsStatement.Action).toEqual(['kms:GenerateDataKey', 'kms:Decrypt']);
    const queueKeyId = logicalId(built.aip.stateful, built.aip.stateful.queueKey!);
    expect(resolveImport(statefulTemplate, kmsStatement.Resource)).toEqual({ 'Fn::GetAtt': [queueKeyId, 'Arn'] });
  });

  it('reports no cdk-nag findings', () => {
    Template.fromStack(built.aip.stateless);
    expect(nagViolations(built.aip, built.app)).toEqual([]);
  });
});

describe('cdk-nag wiring', () => {
  it('fails synth on a non-compliant resource, so the "no findings" checks above are not vacuous', () => {
    const app = newApp();
    const nag = applyNagChecks(app);
    const stack = new Stack(app, 'NonCompliant');
    new sqs.Queue(stack, 'Plain', { encryption: sqs.QueueEncryption.UNENCRYPTED });
    expect(nag.validateScope(app).violations.map((v) => v.ruleName)).toEqual(
      expect.arrayContaining(['AwsSolutions-SQS2', 'AwsSolutions-SQS3', 'AwsSolutions-SQS4']),
    );
    expect(() => Template.fromStack(stack)).toThrow(/AwsSolutions-SQS2/);
  });
});

describe('visibility timeout', () => {
  it('defaults to six times the configured consumer timeouts', () => {
    const { aip } = buildAip({ ...BASE_CONFIG, workerTimeoutSeconds: 100, reconcilerTimeoutSeconds: 30 }, NO_FUNCTIONS);
    expect(aip.stateful.queues.invoke.visibilityTimeout.toSeconds()).toBe(600);
    expect(aip.stateful.queues.reconcile.visibilityTimeout.toSeconds()).toBe(180);
    Template.fromStack(aip.stateful).hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: 600 });
  });

  it('refuses a visibility timeout that does not exceed the consumer timeout', () => {
    const app = newApp();
    expect(
      () =>
        new StatefulStack(app, 'Bad', {
          envName: 'test',
          workerTimeout: Duration.seconds(120),
          invokeVisibilityTimeout: Duration.seconds(120),
        }),
    ).toThrow(/invoke queue's visibility timeout \(120 s\) must exceed its consumer's timeout \(120 s\)/);
  });
});

describe('function definitions', () => {
  const worker: FunctionDefinition = {
    id: 'Worker',
    entry: 'test/infra/fixtures/queue-consumer.ts',
    description: 'Test fixture consuming the invoke queue',
    timeout: Duration.seconds(60),
    consumes: { queue: 'invoke', batchSize: 5 },
    access: { table: 'readWrite', sendTo: ['reconcile'], reconcileSchedules: true, connectorSecrets: true },
  };

  let built: ReturnType<typeof buildAip>;
  let template: Template;
  beforeAll(() => {
    built = buildAip(BASE_CONFIG, { functions: [worker] });
    template = Template.fromStack(built.aip.stateless);
  });

  it('builds a Node.js 22 arm64 function with tracing, JSON logs in its own log group, and the stack environment', () => {
    template.resourceCountIs('AWS::Lambda::Function', 1);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      // infra/bundling.ts: index.mjs + chunks/, the handler named after the entry chunk.
      Handler: 'index.handler',
      Timeout: 60,
      MemorySize: 512,
      TracingConfig: { Mode: 'Active' },
      LoggingConfig: Match.objectLike({ LogFormat: 'JSON' }),
      Environment: {
        Variables: Match.objectLike({
          [FUNCTION_ENV.envName]: 'test',
          [FUNCTION_ENV.scheduleGroupName]: 'aip-test-reconcile',
          [FUNCTION_ENV.runtimeConfig]: Match.stringLikeRegexp('"issuer":"https://issuer.example.com/"'),
          POWERTOOLS_LOGGER_LOG_EVENT: 'false',
          POWERTOOLS_TRACE_ENABLED: 'true',
        }),
      },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it("sets the invoke queue's maxReceiveCount from the queue the stateful stack built, whatever it is", () => {
    const app = newApp();
    const config = parseInfraConfig(BASE_CONFIG);
    const stateful = new StatefulStack(app, 'Queues', { envName: 'test', maxReceiveCount: 3 });
    const stateless = new StatelessStack(app, 'Functions', { config, stateful, functions: [worker] });
    Template.fromStack(stateful).hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: Match.objectLike({ maxReceiveCount: 3 }) });
    Template.fromStack(stateless).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [FUNCTION_ENV.invokeQueueMaxReceiveCount]: '3' }) },
    });
  });

  it('consumes its queue with partial batch responses', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('grants exactly what the definition asks for, with no managed policy', () => {
    const stack = built.aip.stateless;
    const fn = stack.functions.Worker!;
    const roleId = logicalId(stack, fn.role!);
    const resources = template.toJSON().Resources as Record<string, Json>;
    expect(resources[roleId]!.Properties.ManagedPolicyArns).toBeUndefined();
    const statements = (Object.values(template.findResources('AWS::IAM::Policy')) as Json[])
      .filter((p) => JSON.stringify(p.Properties.Roles).includes(roleId))
      .flatMap((p) => p.Properties.PolicyDocument.Statement as Json[]);
    const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]) as string[]);

    expect(actions).toEqual(expect.arrayContaining([...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS]));
    expect(actions).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']));
    expect(actions).toEqual(expect.arrayContaining(['sqs:SendMessage', 'scheduler:CreateSchedule', 'scheduler:DeleteSchedule', 'iam:PassRole']));
    expect(actions).toContain('secretsmanager:GetSecretValue');
    expect(actions).not.toContain('dynamodb:Scan');
    expect(actions.filter((a) => a.endsWith(':*') || a === '*')).toEqual([]);

    // The only statement on Resource "*" is X-Ray's.
    const onStar = statements.filter((s) => s.Resource === '*');
    expect(onStar.flatMap((s) => s.Action)).toEqual(['xray:PutTraceSegments', 'xray:PutTelemetryRecords']);

    // The scheduler role can only be passed to EventBridge Scheduler.
    const passRole = statements.find((s) => s.Action === 'iam:PassRole')!;
    expect(passRole.Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } });
    expect(passRole.Resource).toEqual({ 'Fn::GetAtt': [logicalId(stack, stack.schedulerRole), 'Arn'] });

    // A secret given by name is granted by its name plus the 6-character suffix, without "*".
    const secret = statements.find((s) => s.Action === 'secretsmanager:GetSecretValue')!;
    expect(JSON.stringify(secret.Resource)).toContain(':secret:aip/test/payments/api-key-??????');
  });

  it('reports no cdk-nag findings beyond the documented acknowledgments', () => {
    expect(nagViolations(built.aip, built.app)).toEqual([]);
  });

  it('refuses a runtime configuration too large for the Lambda environment, saying why', () => {
    const credentials = Array.from({ length: 60 }, (_, i) => ({ handle: 'api_key', tenantId: `tenant-${i}`, secret: `aip/test/tenant-${i}/payments` }));
    expect(() => buildAip({ ...BASE_CONFIG, connectors: [{ id: 'payments', credentials }] }, { functions: [worker] })).toThrow(
      /The runtime configuration is \d+ bytes as JSON; Lambda allows 4096 bytes of environment in total/,
    );
  });

  it('refuses a queue consumer whose timeout is not below the queue visibility timeout', () => {
    expect(() => buildAip(BASE_CONFIG, { functions: [{ ...worker, timeout: Duration.seconds(360) }] })).toThrow(
      /invoke queue's visibility timeout \(360 s\) must exceed its consumer's timeout \(360 s\)/,
    );
  });
});

describe('configuration at synth time', () => {
  it('reads the file named by the `config` context', () => {
    const file = join(newApp().outdir, 'config.json');
    writeFileSync(file, JSON.stringify({ ...BASE_CONFIG, envName: 'fromfile' }));
    const app = newApp({ [CONFIG_CONTEXT_KEY]: file });
    const aip = defineAipApp(app, NO_FUNCTIONS);
    expect(aip.config.envName).toBe('fromfile');
    expect(aip.stateful.stackName).toBe('Aip-fromfile-Stateful');
  });

  it('falls back to infra/config.local.json, which is valid', () => {
    const aip = defineAipApp(newApp(), NO_FUNCTIONS);
    expect(aip.config.envName).toBe('local');
  });

  it('fails with a message naming each invalid field', () => {
    const app = newApp({
      [CONFIG_CONTEXT_KEY]: {
        ...BASE_CONFIG,
        auth: { ...BASE_CONFIG.auth, issuer: 'http://issuer.example.com/' },
        approvalPolicies: [{ id: 'p', connector: 'unknown', approverScopes: ['aip:approve'] }],
      },
    });
    let error: unknown;
    try {
      defineAipApp(app);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InfraConfigError);
    expect((error as InfraConfigError).issues.map((issue) => issue.path)).toEqual(['auth.issuer', 'approvalPolicies[0].connector']);
    expect((error as Error).message).toContain('auth.issuer: must be an absolute https:// URL (the JWT issuer)');
    expect((error as Error).message).toContain('approvalPolicies[0].connector: "unknown" is not an enabled connector (enabled: payments)');
  });

  it('fails on a missing configuration file, naming the path', () => {
    const app = newApp({ [CONFIG_CONTEXT_KEY]: '/nonexistent/aip-config.json' });
    expect(() => defineAipApp(app)).toThrow(/\/nonexistent\/aip-config\.json[\s\S]*file not found/);
  });
});
