/**
 * The LocalStack profile (infra/config.localstack.json, `npm run deploy:localstack`)
 * deploys the same stacks as the main configuration (infra/config.local.json):
 * the same functions with the same handlers, triggers, batch settings and IAM
 * actions, the same API methods and the same stateful resources. Only values
 * differ (names, URLs, log level and retention, the gateway's CloudWatch role).
 */
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { defineAipApp } from '../../infra/aip-app.js';
import { loadInfraConfig } from '../../infra/config.js';
import { PROJECT_ROOT } from '../../infra/functions.js';
import { newApp } from './support.js';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

function shape(file: string) {
  const aip = defineAipApp(newApp(), { config: loadInfraConfig(join(PROJECT_ROOT, 'infra', file)) });
  const stateless = Template.fromStack(aip.stateless).toJSON().Resources as Resources;
  const stateful = Template.fromStack(aip.stateful).toJSON().Resources as Resources;
  const of = (resources: Resources, type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const roleActions = new Map<string, string[]>();
  for (const [, policy] of of(stateless, 'AWS::IAM::Policy')) {
    const p = policy.Properties as { Roles: { Ref: string }[]; PolicyDocument: { Statement: { Action: string | string[] }[] } };
    const actions = p.PolicyDocument.Statement.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
    for (const role of p.Roles) roleActions.set(role.Ref, [...(roleActions.get(role.Ref) ?? []), ...actions].sort());
  }
  return {
    functions: Object.fromEntries(
      of(stateless, 'AWS::Lambda::Function').map(([id, r]) => {
        const p = r.Properties as { Handler: string; Timeout: number; MemorySize: number; Role: { 'Fn::GetAtt': [string, string] } };
        return [id, { handler: p.Handler, timeout: p.Timeout, memory: p.MemorySize, actions: roleActions.get(p.Role['Fn::GetAtt'][0]) }];
      }),
    ),
    eventSources: of(stateless, 'AWS::Lambda::EventSourceMapping').map(([, r]) => [r.Properties?.FunctionName, r.Properties?.BatchSize]),
    rules: of(stateless, 'AWS::Events::Rule').map(([, r]) => r.Properties?.ScheduleExpression),
    methods: of(stateless, 'AWS::ApiGateway::Method')
      .map(([id, r]) => `${id} ${String(r.Properties?.HttpMethod)} ${String(r.Properties?.AuthorizationType)}`)
      .sort(),
    stateful: Object.entries(stateful)
      .map(([id, r]) => `${id} ${r.Type}`)
      .sort(),
  };
}

describe('the LocalStack profile', () => {
  it('deploys what the main configuration deploys: functions, grants, triggers, API methods, stateful resources', () => {
    const main = shape('config.local.json');
    const localstack = shape('config.localstack.json');
    expect(Object.keys(localstack.functions).sort()).toEqual(Object.keys(main.functions).sort());
    expect(localstack).toEqual(main);
  });
});
