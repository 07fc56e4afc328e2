/**
 * The policy evaluator of the assembly test (test/assembly/iam.ts): IAM's
 * wildcards, explicit Deny, conditions on the call's context keys, the
 * statements of a role gathered from a template, and what it refuses to
 * evaluate.
 */
import { describe, expect, it } from 'vitest';
import { type AwsCall, dynamoCalls } from '../assembly/aws-gateway.js';
import { evaluate, grantUse, roleGrants, type Grant } from '../assembly/iam.js';
import { Resolver, type StackArtifact } from '../assembly/template.js';

const call = (action: string, resource: string, context?: Record<string, string>): AwsCall => ({
  principal: 'Fn',
  action,
  resource,
  ...(context ? { context } : {}),
});
const allow = (actions: string[], resources: string[], conditions?: Grant['conditions']): Grant => ({
  role: 'R',
  policy: 'P',
  effect: 'Allow',
  actions,
  resources,
  ...(conditions ? { conditions } : {}),
});

describe('evaluate', () => {
  it('matches actions case-insensitively with *, resources case-sensitively with * and ?', () => {
    const grants = [
      allow(['kms:GenerateDataKey*'], ['arn:aws:kms:us-east-1:1:key/k']),
      allow(['secretsmanager:GetSecretValue'], ['arn:aws:secretsmanager:r:1:secret:a/b-??????']),
    ];
    expect(evaluate(grants, call('KMS:generatedatakeywithoutplaintext', 'arn:aws:kms:us-east-1:1:key/k')).allowed).toBe(true);
    expect(evaluate(grants, call('secretsmanager:GetSecretValue', 'arn:aws:secretsmanager:r:1:secret:a/b-Ab12Cd')).allowed).toBe(true);
    expect(evaluate(grants, call('secretsmanager:GetSecretValue', 'arn:aws:secretsmanager:r:1:secret:a/b-Ab12C')).allowed).toBe(false);
    expect(evaluate(grants, call('secretsmanager:GetSecretValue', 'arn:aws:secretsmanager:r:1:secret:A/b-Ab12Cd')).allowed).toBe(false);
    expect(evaluate(grants, call('kms:Decrypt', 'arn:aws:kms:us-east-1:1:key/k')).allowed).toBe(false);
  });

  it('an explicit Deny wins over an Allow', () => {
    const grants: Grant[] = [allow(['sqs:*'], ['*']), { ...allow(['sqs:DeleteQueue'], ['*']), effect: 'Deny' }];
    expect(evaluate(grants, call('sqs:SendMessage', 'arn:q')).allowed).toBe(true);
    expect(evaluate(grants, call('sqs:DeleteQueue', 'arn:q'))).toMatchObject({ allowed: false, deniedBy: { effect: 'Deny' } });
  });

  it('a condition holds only on a context key the call carries with a matching value', () => {
    const grants = [allow(['iam:PassRole'], ['arn:aws:iam::1:role/r'], { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } })];
    expect(evaluate(grants, call('iam:PassRole', 'arn:aws:iam::1:role/r', { 'iam:PassedToService': 'scheduler.amazonaws.com' })).allowed).toBe(true);
    expect(evaluate(grants, call('iam:PassRole', 'arn:aws:iam::1:role/r', { 'iam:PassedToService': 'lambda.amazonaws.com' })).allowed).toBe(false);
    expect(evaluate(grants, call('iam:PassRole', 'arn:aws:iam::1:role/r')).allowed).toBe(false);
    const other = [allow(['kms:Decrypt'], ['*'], { NumericLessThan: { 'kms:x': '1' } })];
    expect(() => evaluate(other, call('kms:Decrypt', 'k', { 'kms:x': '0' }))).toThrow(/NumericLessThan/);
  });
});

describe('roleGrants and grantUse', () => {
  const stack: StackArtifact = {
    name: 'S',
    template: {
      Resources: {
        Role: {
          Type: 'AWS::IAM::Role',
          Properties: {
            Policies: [
              {
                PolicyName: 'Inline',
                PolicyDocument: { Statement: [{ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': ['Q', 'Arn'] } }] },
              },
            ],
          },
        },
        Policy: {
          Type: 'AWS::IAM::Policy',
          Properties: {
            Roles: [{ Ref: 'Role' }],
            PolicyDocument: {
              Statement: [
                {
                  Effect: 'Allow',
                  Action: ['dynamodb:GetItem', 'dynamodb:Query'],
                  Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':dynamodb:t']] },
                },
              ],
            },
          },
        },
        Odd: {
          Type: 'AWS::IAM::Policy',
          Properties: { Roles: [{ Ref: 'Other' }], PolicyDocument: { Statement: [{ Effect: 'Allow', NotAction: 's3:*', Resource: '*' }] } },
        },
      },
    },
  };
  const physical = new Map([['S', new Map([['Q', { ref: 'url', attributes: { Arn: 'arn:aws:sqs:q' } }]])]]);

  it('gathers inline and attached statements with intrinsics resolved, and marks the grants a call used', () => {
    const clean: StackArtifact = { ...stack, template: { Resources: { Role: stack.template.Resources.Role!, Policy: stack.template.Resources.Policy! } } };
    const { grants } = roleGrants([clean], new Resolver([clean], physical));
    expect(grants.get('Role')?.map((g) => [g.actions, g.resources])).toEqual([
      [['sqs:SendMessage'], ['arn:aws:sqs:q']],
      [['dynamodb:GetItem', 'dynamodb:Query'], ['arn:aws:dynamodb:t']],
    ]);
    const uses = grantUse(grants, new Map([['Role', [call('dynamodb:GetItem', 'arn:aws:dynamodb:t')]]]));
    expect(uses.filter((u) => u.used).map((u) => u.action)).toEqual(['dynamodb:GetItem']);
    expect(uses.filter((u) => !u.used).map((u) => u.action)).toEqual(['sqs:SendMessage', 'dynamodb:Query']);
  });

  it('refuses a statement it would evaluate loosely (NotAction)', () => {
    expect(() => roleGrants([stack], new Resolver([stack], physical))).toThrow(/NotAction/);
  });
});

describe('the gateway: DynamoDB requests as the IAM actions and resources they need', () => {
  const table = (name: string) => `arn:aws:dynamodb:us-east-1:000000000000:table/${name}`;

  it('a transaction per item action, a batch per table, a query on its index', () => {
    expect(
      dynamoCalls('TransactWriteItems', {
        TransactItems: [{ Put: { TableName: 't' } }, { Update: { TableName: 't' } }, { ConditionCheck: { TableName: 'u' } }, { Delete: { TableName: 't' } }],
      }),
    ).toEqual([
      ['dynamodb:PutItem', table('t')],
      ['dynamodb:UpdateItem', table('t')],
      ['dynamodb:ConditionCheckItem', table('u')],
      ['dynamodb:DeleteItem', table('t')],
    ]);
    expect(dynamoCalls('BatchGetItem', { RequestItems: { t: {}, u: {} } })).toEqual([
      ['dynamodb:BatchGetItem', table('t')],
      ['dynamodb:BatchGetItem', table('u')],
    ]);
    expect(dynamoCalls('Query', { TableName: 't', IndexName: 'byStatus' })).toEqual([['dynamodb:Query', `${table('t')}/index/byStatus`]]);
    expect(dynamoCalls('GetItem', { TableName: 't' })).toEqual([['dynamodb:GetItem', table('t')]]);
  });
});
