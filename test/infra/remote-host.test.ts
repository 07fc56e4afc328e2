/**
 * The remote connector placement in the CDK app (infra/remote-host.ts): with `remoteConnectorHost`
 * the stateless stack deploys the connector host and the checkpoint receiver
 * behind Function URLs, two KMS ES256 keys and the host's nonce table; the
 * runtime functions get the placement and only the grants they need; the
 * host, not the runtime, reads the placed connectors' secrets; cdk-nag clean.
 * Without it nothing of this exists.
 */
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnElement } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AipApp } from '../../infra/aip-app.js';
import { InfraConfigError, parseInfraConfig, type InfraConfigInput } from '../../infra/config.js';
import { BASE_CONFIG, buildAip, nagViolations } from './support.js';

type Json = Record<string, any>;

const REMOTE: InfraConfigInput = { ...BASE_CONFIG, remoteConnectorHost: { connectors: ['payments'] } };

/** The IAM statements of the policies attached to a function's role. */
function statementsOf(template: Template, stack: AipApp['stateless'], fn: { role?: unknown; node: { defaultChild?: unknown } } | undefined): Json[] {
  const roleId = stack.getLogicalId((fn as { role: { node: { defaultChild: CfnElement } } }).role.node.defaultChild);
  const policies = template.findResources('AWS::IAM::Policy');
  return Object.values(policies)
    .filter((p) => (p.Properties.Roles as Json[]).some((r) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Json[]);
}

const actionsOf = (s: Json): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('remote connector host (remoteConnectorHost set)', () => {
  let built: ReturnType<typeof buildAip>;
  let template: Template;
  beforeAll(() => {
    built = buildAip(REMOTE);
    template = Template.fromStack(built.aip.stateless);
  });

  it('creates two retained ECC_NIST_P256 SIGN_VERIFY keys and the nonce table', () => {
    const keys = template.findResources('AWS::KMS::Key', { Properties: { KeySpec: 'ECC_NIST_P256', KeyUsage: 'SIGN_VERIFY' } });
    expect(Object.keys(keys)).toHaveLength(2);
    for (const k of Object.values(keys)) expect(k.DeletionPolicy).toBe('Retain');
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'PK', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      BillingMode: 'PAY_PER_REQUEST',
    });
  });

  it('serves the host and the receiver on Function URLs (signatures, not IAM, authenticate)', () => {
    const urls = template.findResources('AWS::Lambda::Url');
    expect(Object.keys(urls)).toHaveLength(2);
    for (const u of Object.values(urls)) expect(u.Properties).toMatchObject({ AuthType: 'NONE', InvokeMode: 'BUFFERED' });
    const host = built.aip.stateless.remoteHost?.hostFunction;
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: Match.absent(),
      Handler: 'index.handler',
      Environment: { Variables: Match.objectLike({ AIP_CONNECTOR_HOST_CONFIG: Match.anyValue() }) },
    });
    expect(host).toBeDefined();
  });

  it('the host signs with its key, reads the runtime key’s public half, the nonce table and the payments secret', () => {
    const remote = built.aip.stateless.remoteHost;
    const s = statementsOf(template, built.aip.stateless, remote?.hostFunction);
    const kmsActions = s
      .filter((x) => actionsOf(x).some((a) => a.startsWith('kms:')))
      .flatMap(actionsOf)
      .sort();
    expect(kmsActions).toEqual(['kms:GetPublicKey', 'kms:GetPublicKey', 'kms:Sign']);
    expect(s.some((x) => actionsOf(x).includes('dynamodb:PutItem'))).toBe(true);
    expect(s.some((x) => actionsOf(x).includes('secretsmanager:GetSecretValue'))).toBe(true);
  });

  it('every runtime function with table access gets the placement and may sign only with the runtime key', () => {
    const stack = built.aip.stateless;
    const worker = stack.functions.InvokeWorker;
    expect(worker).toBeDefined();
    const id = stack.getLogicalId(worker?.node.defaultChild as CfnElement);
    const fn = template.findResources('AWS::Lambda::Function')[id] as Json;
    expect(Object.keys(fn.Properties.Environment.Variables)).toContain('AIP_REMOTE_CONNECTORS');
    const s = statementsOf(template, stack, worker);
    const sign = s.filter((x) => actionsOf(x).includes('kms:Sign'));
    expect(sign).toHaveLength(1);
    const runtimeKeyId = stack.getLogicalId(stack.remoteHost?.runtimeKey.node.defaultChild as CfnElement);
    expect(JSON.stringify(sign[0]?.Resource)).toContain(runtimeKeyId);
    // The authorizer composes no runtime: nothing of the placement.
    const authorizer = Object.values(template.findResources('AWS::Lambda::Function')).find((f) =>
      String(f.Properties.Description ?? '')
        .toLowerCase()
        .includes('authorizer'),
    ) as Json | undefined;
    if (authorizer !== undefined) expect(Object.keys(authorizer.Properties.Environment?.Variables ?? {})).not.toContain('AIP_REMOTE_CONNECTORS');
  });

  it('is cdk-nag clean', () => {
    expect(nagViolations(built.aip, built.app)).toEqual([]);
  });
});

describe('without remoteConnectorHost', () => {
  it('deploys no host, no receiver, no signing key', () => {
    const { aip } = buildAip(BASE_CONFIG);
    const template = Template.fromStack(aip.stateless);
    expect(aip.stateless.remoteHost).toBeUndefined();
    expect(Object.keys(template.findResources('AWS::Lambda::Url'))).toHaveLength(0);
    expect(Object.keys(template.findResources('AWS::KMS::Key', { Properties: { KeyUsage: 'SIGN_VERIFY' } }))).toHaveLength(0);
  });

  it('refuses a placed connector that is not enabled', () => {
    expect(() => parseInfraConfig({ ...BASE_CONFIG, remoteConnectorHost: { connectors: ['tickets'] } })).toThrow(InfraConfigError);
  });
});

describe('per-connector concurrency limits of the host (remoteConnectorHost.maxConcurrentAttempts)', () => {
  it('reach the host configuration, and the host may free its slots (conditional delete on its table)', () => {
    const { aip } = buildAip({ ...BASE_CONFIG, remoteConnectorHost: { connectors: ['payments'], maxConcurrentAttempts: { payments: 4 } } });
    const template = Template.fromStack(aip.stateless);
    const host = aip.stateless.remoteHost?.hostFunction;
    const id = aip.stateless.getLogicalId(host?.node.defaultChild as CfnElement);
    const variables = (template.findResources('AWS::Lambda::Function')[id] as Json).Properties.Environment.Variables as Json;
    // The variable is a CloudFormation join (the key ARN is a token); the limit is in its literal part.
    expect(JSON.stringify(variables.AIP_CONNECTOR_HOST_CONFIG)).toContain('\\"maxConcurrentAttempts\\":4');
    const s = statementsOf(template, aip.stateless, host);
    expect(s.some((x) => actionsOf(x).includes('dynamodb:DeleteItem'))).toBe(true);
  });

  it('refuse a limit for a connector that is not placed, and a limit out of range, naming the field', () => {
    const bad = (remoteConnectorHost: Json) => {
      try {
        parseInfraConfig({ ...BASE_CONFIG, remoteConnectorHost } as InfraConfigInput);
      } catch (err) {
        return (err as InfraConfigError).issues.map((i) => i.path);
      }
      throw new Error('accepted');
    };
    expect(bad({ connectors: ['payments'], maxConcurrentAttempts: { tickets: 2 } })).toEqual(['remoteConnectorHost.maxConcurrentAttempts.tickets']);
    expect(bad({ connectors: ['payments'], maxConcurrentAttempts: { payments: 0 } })).toEqual(['remoteConnectorHost.maxConcurrentAttempts.payments']);
  });
});
