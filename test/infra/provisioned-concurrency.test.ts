/**
 * `api.provisionedConcurrency` (infra/aip-functions.ts, infra/functions.ts `apiTarget`): the function serving a
 * named route gets a `live` alias on its current version with that many provisioned environments, and the API (REST
 * and HTTP) invokes the alias, with its invoke permission on the alias. Functions not named are left as they were.
 */
import type { CfnElement, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { aipFunctionDefinitions, routeFunctionDefinitions } from '../../infra/aip-functions.js';
import { InfraConfigError, parseInfraConfig, type InfraConfigInput } from '../../infra/config.js';
import { LIVE_ALIAS_ID } from '../../infra/functions.js';
import { BASE_CONFIG, buildAip, nagViolations } from './support.js';

type Json = Record<string, any>;

const routesOf = (d: ReturnType<typeof routeFunctionDefinitions>[number]) => (d.trigger?.kind === 'api' ? d.trigger.routes : []);
const submit = routeFunctionDefinitions().find((d) => routesOf(d).includes('submitAction'))!;
// A function serving two routes (MCP's POST and GET /v1/mcp), given two counts: it takes the larger.
const shared = routeFunctionDefinitions().find((d) => routesOf(d).length > 1)!;
const [firstShared, secondShared] = routesOf(shared) as [string, string];

const PROVISIONED = { submitAction: 2, [firstShared]: 1, [secondShared]: 3 };

function provisioned(api: InfraConfigInput['api']): InfraConfigInput {
  return { ...BASE_CONFIG, api: { ...api, provisionedConcurrency: PROVISIONED } };
}

function logicalId(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

describe.each([['rest'], ['http']] as const)('api.provisionedConcurrency with the %s API', (type) => {
  let built: ReturnType<typeof buildAip>;
  let template: Template;
  let resources: Record<string, Json>;
  const ofType = (t: string) => Object.entries(resources).filter(([, r]) => r.Type === t);
  const fnId = (definitionId: string) => logicalId(built.aip.stateless, built.aip.stateless.functions[definitionId]!);
  const aliasOf = (definitionId: string) => {
    const alias = built.aip.stateless.functions[definitionId]!.node.tryFindChild(LIVE_ALIAS_ID);
    return alias === undefined ? undefined : built.aip.stateless.getLogicalId(alias.node.defaultChild as CfnElement);
  };

  beforeAll(() => {
    built = buildAip(provisioned({ type }));
    template = Template.fromStack(built.aip.stateless);
    resources = template.toJSON().Resources as Record<string, Json>;
  });

  it("keeps the named routes' functions initialized on a `live` alias of their current version, the larger count for a shared function", () => {
    const aliases = ofType('AWS::Lambda::Alias');
    expect(aliases).toHaveLength(2);
    for (const [definitionId, count] of [
      [submit.id, 2],
      [shared.id, 3],
    ] as const) {
      const id = aliasOf(definitionId)!;
      expect(resources[id]!.Properties).toMatchObject({
        Name: 'live',
        FunctionName: { Ref: fnId(definitionId) },
        ProvisionedConcurrencyConfig: { ProvisionedConcurrentExecutions: count },
      });
      const version = resources[id]!.Properties.FunctionVersion['Fn::GetAtt'][0] as string;
      expect(resources[version]).toMatchObject({ Type: 'AWS::Lambda::Version', Properties: { FunctionName: { Ref: fnId(definitionId) } } });
    }
    // The definitions carry the count the bundling and the alias read.
    const definitions = aipFunctionDefinitions(parseInfraConfig(provisioned({ type })));
    expect(definitions.find((d) => d.id === submit.id)?.provisionedConcurrency).toBe(2);
    expect(definitions.find((d) => d.id === shared.id)?.provisionedConcurrency).toBe(3);
    expect(definitions.filter((d) => d.provisionedConcurrency !== undefined)).toHaveLength(2);
  });

  it('has the API invoke the alias of a provisioned function and the function itself otherwise, with the permission on what it invokes', () => {
    const uris =
      type === 'rest'
        ? ofType('AWS::ApiGateway::Method').map(([, m]) => JSON.stringify(m.Properties.Integration.Uri))
        : ofType('AWS::ApiGatewayV2::Integration').map(([, i]) => JSON.stringify(i.Properties.IntegrationUri));
    const aliasIds = [aliasOf(submit.id)!, aliasOf(shared.id)!];
    for (const aliasId of aliasIds)
      expect(
        uris.some((u) => u.includes(`"${aliasId}"`)),
        aliasId,
      ).toBe(true);
    // No integration reaches a provisioned function other than through its alias.
    for (const definitionId of [submit.id, shared.id]) {
      expect(
        uris.some((u) => u.includes(`"${fnId(definitionId)}"`)),
        definitionId,
      ).toBe(false);
    }
    const permissions = ofType('AWS::Lambda::Permission').filter(([, p]) => p.Properties.Principal === 'apigateway.amazonaws.com');
    const targets = permissions.map(([, p]) => JSON.stringify(p.Properties.FunctionName));
    for (const aliasId of aliasIds)
      expect(
        targets.some((t) => t.includes(`"${aliasId}"`)),
        aliasId,
      ).toBe(true);
    for (const definitionId of [submit.id, shared.id])
      expect(
        targets.some((t) => t.includes(`"${fnId(definitionId)}"`)),
        definitionId,
      ).toBe(false);
  });

  it('reports no cdk-nag findings and no CDK errors or warnings', () => {
    expect(nagViolations(built.aip, built.app)).toEqual([]);
    const annotations = Annotations.fromStack(built.aip.stateless);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
    expect(annotations.findWarning('*', Match.anyValue())).toEqual([]);
  });
});

describe('api.provisionedConcurrency in the configuration', () => {
  it('is empty by default: no alias, every function on demand', () => {
    expect(parseInfraConfig(BASE_CONFIG).api.provisionedConcurrency).toEqual({});
    const template = Template.fromStack(buildAip(BASE_CONFIG).aip.stateless);
    template.resourceCountIs('AWS::Lambda::Alias', 0);
    template.resourceCountIs('AWS::Lambda::Version', 0);
    expect(aipFunctionDefinitions(parseInfraConfig(BASE_CONFIG)).some((d) => d.provisionedConcurrency !== undefined)).toBe(false);
  });

  it.each([
    ['zero', 0, /must be at least 1/],
    ['a fraction', 1.5, /must be an integer/],
    ['too many', 1001, /must be at most 1000/],
  ])('refuses %s, naming the route', (_label, count, message) => {
    const input = { ...BASE_CONFIG, api: { provisionedConcurrency: { submitAction: count } } };
    expect(() => parseInfraConfig(input)).toThrow(InfraConfigError);
    expect(() => parseInfraConfig(input)).toThrow(/api\.provisionedConcurrency\.submitAction/);
    expect(() => parseInfraConfig(input)).toThrow(message);
  });

  it('refuses at synth a route ID the route table does not have', () => {
    const config = parseInfraConfig({ ...BASE_CONFIG, api: { provisionedConcurrency: { submitActions: 2 } } });
    expect(() => aipFunctionDefinitions(config)).toThrow(/api\.provisionedConcurrency names no route of the route table: submitActions/);
  });
});
