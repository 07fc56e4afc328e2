/**
 * The key that seals pagination cursors: a retained
 * Secrets Manager secret with a generated string in the stateful stack, its
 * ARN in every function's environment, and read access only for the
 * functions whose routes page (listOperator, listApprovals).
 */
import { Template } from 'aws-cdk-lib/assertions';
import type { CfnElement, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { routeFunctionDefinitions } from '../../infra/aip-functions.js';
import { FUNCTION_ENV } from '../../infra/function-env.js';
import { NAG_REASONS } from '../../infra/nag.js';
import { CURSOR_KEY_LENGTH } from '../../infra/stateful-stack.js';
import { buildAip } from './support.js';

type Json = Record<string, any>;

const logicalId = (stack: Stack, construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnElement);
const asList = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

let built: ReturnType<typeof buildAip>;
let stateful: Template;
let stateless: Template;
let secretId: string;

/** Resolves an Fn::ImportValue of the stateless stack to what the stateful stack exports. */
function resolveImport(value: unknown): unknown {
  if (value && typeof value === 'object' && 'Fn::ImportValue' in value) {
    const outputs = (stateful.toJSON().Outputs ?? {}) as Record<string, Json>;
    const output = Object.values(outputs).find((o) => o.Export?.Name === (value as Json)['Fn::ImportValue']);
    if (!output) throw new Error(`no export ${String((value as Json)['Fn::ImportValue'])}`);
    return output.Value;
  }
  return value;
}

/** Every statement attached to a function's role. */
function statements(definitionId: string): Json[] {
  const stack = built.aip.stateless;
  const role = logicalId(stack, stack.functions[definitionId]!.role!);
  return Object.values(stateless.findResources('AWS::IAM::Policy'))
    .filter((p) => JSON.stringify((p as Json).Properties.Roles).includes(`"${role}"`))
    .flatMap((p) => (p as Json).Properties.PolicyDocument.Statement as Json[]);
}

beforeAll(() => {
  built = buildAip();
  stateful = Template.fromStack(built.aip.stateful);
  stateless = Template.fromStack(built.aip.stateless);
  secretId = logicalId(built.aip.stateful, built.aip.stateful.cursorKeySecret);
});

describe('the cursor key secret', () => {
  it('is one retained secret in the stateful stack with a generated 64-character string of letters and digits', () => {
    stateful.resourceCountIs('AWS::SecretsManager::Secret', 1);
    const secret = stateful.toJSON().Resources[secretId] as Json;
    expect(secret.Type).toBe('AWS::SecretsManager::Secret');
    expect(secret.DeletionPolicy).toBe('Retain');
    expect(secret.UpdateReplacePolicy).toBe('Retain');
    expect(secret.Properties.GenerateSecretString).toEqual({ PasswordLength: CURSOR_KEY_LENGTH, ExcludePunctuation: true, IncludeSpace: false });
    expect(secret.Properties.SecretString).toBeUndefined();
    expect(CURSOR_KEY_LENGTH).toBeGreaterThanOrEqual(32);
    stateless.resourceCountIs('AWS::SecretsManager::Secret', 0);
  });

  it('acknowledges only the missing rotation (AwsSolutions-SMG4), with the documented reason', () => {
    const acknowledged = JSON.stringify(built.aip.stateful.cursorKeySecret.node.metadata);
    expect(acknowledged).toContain('AwsSolutions-SMG4');
    expect(NAG_REASONS.cursorKeyRotation).toMatch(/previous/);
    expect(built.aip.nag.validateScope(built.app).violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('the stateless stack', () => {
  it('passes the secret ARN to every function as AIP_CURSOR_KEY_SECRET_ARN', () => {
    const functions = Object.keys(built.aip.stateless.functions);
    expect(functions.length).toBeGreaterThan(10);
    for (const id of functions) {
      const fn = stateless.toJSON().Resources[logicalId(built.aip.stateless, built.aip.stateless.functions[id]!)] as Json;
      expect(resolveImport(fn.Properties.Environment.Variables[FUNCTION_ENV.cursorKeySecretArn]), id).toEqual({ Ref: secretId });
    }
  });

  it('lets only the listing functions read it: GetSecretValue on that one ARN, nothing else', () => {
    // The MCP function lists approvals too (its aip.list_pending_approvals tool pages with sealed cursors).
    const listing = routeFunctionDefinitions()
      .filter((d) => d.trigger?.kind === 'api' && d.trigger.routes.some((r) => r === 'listOperator' || r === 'listApprovals' || r === 'mcp'))
      .map((d) => d.id)
      .sort();
    expect(listing).toEqual(['HttpListApprovals', 'HttpListOperator', 'HttpMcp']);
    const readers: string[] = [];
    for (const id of Object.keys(built.aip.stateless.functions)) {
      const onSecret = statements(id).filter((s) => asList(s.Resource).some((r) => JSON.stringify(resolveImport(r)) === JSON.stringify({ Ref: secretId })));
      if (onSecret.length === 0) continue;
      readers.push(id);
      expect(
        onSecret.map((s) => ({ Effect: s.Effect, Action: s.Action, Resources: asList(s.Resource).length })),
        id,
      ).toEqual([{ Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resources: 1 }]);
    }
    expect(readers.sort()).toEqual(listing);
  });
});
