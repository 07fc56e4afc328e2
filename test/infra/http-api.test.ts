/**
 * The stateless stack with `api.type: "http"`: an HTTP API with API Gateway's
 * built-in JWT authorizer in place of the REST API and its authorizer Lambda
 * (infra/http-api.ts), the same routes, cdk-nag clean; and the configuration
 * checks that come with it. The REST shape (the default) is asserted in
 * runtime-stack.test.ts.
 */
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnElement, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { AUTHORIZER_FUNCTION_ID, aipFunctionDefinitions, routeFunctionDefinitions } from '../../infra/aip-functions.js';
import { InfraConfigError, parseInfraConfig, type InfraConfigInput } from '../../infra/config.js';
import { CONSOLE_FUNCTION_ID } from '../../infra/console.js';
import { ROUTE_LIST } from '../../lib/http/routes.js';
import { BASE_CONFIG, buildAip, nagViolations } from './support.js';

type Json = Record<string, any>;

const HTTP_CONFIG: InfraConfigInput = {
  ...BASE_CONFIG,
  api: { type: 'http', stageName: 'prod', throttlingRateLimit: 40, throttlingBurstLimit: 80 },
  auth: { ...BASE_CONFIG.auth, audience: ['aip-runtime', 'aip-console'], console: { clientId: 'aip-console' } },
};

function logicalId(stack: Stack, construct: IConstruct): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

describe('the deployed runtime with api.type "http"', () => {
  let built: ReturnType<typeof buildAip>;
  let template: Template;
  let resources: Record<string, Json>;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const fnId = (definitionId: string) => logicalId(built.aip.stateless, built.aip.stateless.functions[definitionId]!);

  beforeAll(() => {
    built = buildAip(HTTP_CONFIG);
    template = Template.fromStack(built.aip.stateless);
    resources = template.toJSON().Resources as Record<string, Json>;
  });

  it('is an HTTP API with no REST API and no authorizer Lambda', () => {
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP', Name: 'aip-test' });
    template.resourceCountIs('AWS::ApiGateway::RestApi', 0);
    template.resourceCountIs('AWS::ApiGateway::Authorizer', 0);
    expect(built.aip.stateless.api).toBeUndefined();
    expect(built.aip.stateless.httpApi).toBeDefined();
    expect(built.aip.stateless.functions[AUTHORIZER_FUNCTION_ID]).toBeUndefined();
    expect(aipFunctionDefinitions(parseInfraConfig(HTTP_CONFIG)).some((d) => d.trigger?.kind === 'authorizer')).toBe(false);
  });

  it('verifies tokens with the built-in JWT authorizer: the configured issuer and audiences, from the Authorization header', () => {
    const authorizers = ofType('AWS::ApiGatewayV2::Authorizer');
    expect(authorizers).toHaveLength(1);
    expect(authorizers[0]![1].Properties).toMatchObject({
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: { Issuer: 'https://issuer.example.com/', Audience: ['aip-runtime', 'aip-console'] },
    });
  });

  it('has one route per route of lib/http/routes.ts, behind the JWT authorizer unless public, proxying (payload 2.0) to the function that serves it', () => {
    const [[authorizerId]] = ofType('AWS::ApiGatewayV2::Authorizer') as [[string, Json]];
    const routes = new Map(ofType('AWS::ApiGatewayV2::Route').map(([, r]) => [r.Properties.RouteKey as string, r.Properties as Json]));
    const integrations = new Map(ofType('AWS::ApiGatewayV2::Integration'));
    const serving = new Map<string, string>(
      routeFunctionDefinitions().flatMap((d) => (d.trigger?.kind === 'api' ? d.trigger.routes.map((id) => [id, d.id] as const) : [])),
    );
    for (const route of ROUTE_LIST) {
      const props = routes.get(`${route.method} ${route.path}`);
      expect(props, route.id).toBeDefined();
      if (route.auth === 'none') {
        expect(props!.AuthorizationType).toBe('NONE');
        expect(props!.AuthorizerId).toBeUndefined();
      } else {
        expect(props!.AuthorizationType).toBe('JWT');
        expect(props!.AuthorizerId).toEqual({ Ref: authorizerId });
      }
      // Scopes are checked by the route function (auth.insufficient_scope as a problem), as with the REST API.
      expect(props!.AuthorizationScopes).toBeUndefined();
      const target = JSON.stringify(props!.Target);
      const integrationId = [...integrations.keys()].find((id) => target.includes(`"Ref":"${id}"`));
      const integration = integrations.get(integrationId!)!.Properties;
      expect(integration).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0', TimeoutInMillis: 29_000 });
      expect(integration.IntegrationUri).toEqual({ 'Fn::GetAtt': [fnId(serving.get(route.id)!), 'Arn'] });
    }
    // The route table's routes and the operator console's two, nothing else.
    expect(routes.size).toBe(ROUTE_LIST.length + 2);
    expect(routes.get('GET /console')?.AuthorizationType).toBe('NONE');
    expect(routes.get('GET /console/{proxy+}')?.AuthorizationType).toBe('NONE');
  });

  it('lets API Gateway invoke each function only for its own route', () => {
    const permissions = ofType('AWS::Lambda::Permission').filter(([, p]) => p.Properties.Principal === 'apigateway.amazonaws.com');
    expect(permissions).toHaveLength(ROUTE_LIST.length + 2);
    for (const route of ROUTE_LIST) {
      expect(
        permissions.some(([, p]) => JSON.stringify(p.Properties.SourceArn).endsWith(`/*/*${route.path}"]]}`)),
        route.id,
      ).toBe(true);
    }
    for (const [, p] of permissions) expect(JSON.stringify(p.Properties.SourceArn)).toContain('"Ref":"HttpApi');
  });

  it('deploys a named stage that throttles and writes JSON access logs without request data', () => {
    const stages = ofType('AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    // An HTTP API does not trace, so no sampling rule (Lambda samples the functions' traces itself).
    expect(ofType('AWS::XRay::SamplingRule')).toHaveLength(0);
    const stage = stages[0]![1].Properties;
    expect(stage).toMatchObject({ StageName: 'prod', AutoDeploy: true, DefaultRouteSettings: { ThrottlingRateLimit: 40, ThrottlingBurstLimit: 80 } });
    const format = JSON.parse(stage.AccessLogSettings.Format as string) as Record<string, string>;
    expect(format.requestId).toBe('$context.requestId');
    expect(format.status).toBe('$context.status');
    // The route key names the method; the JWT authorizer sets no principal ID (infra/access-log-formats.ts).
    expect(Object.keys(format)).toEqual([
      'requestId',
      'requestTimeEpoch',
      'sourceIp',
      'routeKey',
      'status',
      'responseLatency',
      'integrationStatus',
      'integrationLatency',
      'integrationError',
      'authorizerError',
      'errorResponseType',
    ]);
    expect(Object.values(format).some((v) => /header|querystring|body|claims/i.test(v))).toBe(false);
    const [[logGroupId, logGroup]] = ofType('AWS::Logs::LogGroup').filter(([id]) => JSON.stringify(stage.AccessLogSettings.DestinationArn).includes(id)) as [
      [string, Json],
    ];
    expect(logGroupId).toBeDefined();
    expect(logGroup.Properties.RetentionInDays).toBe(30);
  });

  it('outputs the stage URL as ApiUrl, and the console below it', () => {
    const outputs = template.toJSON().Outputs as Record<string, Json>;
    expect(Object.keys(outputs).sort()).toEqual(['ApiUrl', 'ConsoleUrl', 'ScheduleGroupName', 'SchedulerRoleArn']);
    expect(JSON.stringify(outputs.ApiUrl!.Value)).toMatch(/\.execute-api\..*\/prod\/"/);
    expect(JSON.stringify(outputs.ConsoleUrl!.Value)).toMatch(/\/prod\/console\/"/);
    expect(built.aip.stateless.functions[CONSOLE_FUNCTION_ID] ?? built.aip.stateless.console?.function).toBeDefined();
  });

  it('keeps the workers, the sweeper and their grants as with the REST API', () => {
    const rest = Template.fromStack(buildAip(BASE_CONFIG, { functions: aipFunctionDefinitions(parseInfraConfig(BASE_CONFIG)) }).aip.stateless);
    const sources = (t: Template) => Object.keys(t.findResources('AWS::Lambda::EventSourceMapping')).length;
    expect(sources(template)).toBe(sources(rest));
    template.resourceCountIs('AWS::Events::Rule', Object.keys(rest.findResources('AWS::Events::Rule')).length);
  });

  it('reports no cdk-nag findings and no CDK errors or warnings', () => {
    expect(nagViolations(built.aip, built.app)).toEqual([]);
    const annotations = Annotations.fromStack(built.aip.stateless);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
    expect(annotations.findWarning('*', Match.anyValue())).toEqual([]);
  });
});

describe('api.type in the configuration', () => {
  it('defaults to the REST API', () => {
    expect(parseInfraConfig(BASE_CONFIG).api.type).toBe('rest');
  });

  it.each([
    [
      'a non-RSA algorithm',
      { auth: { ...BASE_CONFIG.auth, algorithms: ['RS256', 'ES256'] } },
      'auth.algorithms[1]',
      /not accepted by the HTTP API's JWT authorizer/,
    ],
    [
      'an http issuer (even where http is allowed)',
      { envName: 'local', auth: { ...BASE_CONFIG.auth, issuer: 'http://127.0.0.1:9000/' } },
      'auth.issuer',
      /https:\/\/ URL when api\.type is "http"/,
    ],
  ])('refuses %s with the HTTP API, naming the field', (_what, patch, path, message) => {
    const input = { ...BASE_CONFIG, ...patch, api: { type: 'http' } } as InfraConfigInput;
    let error: unknown;
    try {
      parseInfraConfig(input);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InfraConfigError);
    const issue = (error as InfraConfigError).issues.find((i) => i.path === path);
    expect(issue?.message).toMatch(message);
    // The same configuration is fine for the REST API, whose Lambda authorizer verifies any configured algorithm.
    expect(() => parseInfraConfig({ ...input, api: { type: 'rest' } })).not.toThrow();
  });

  it('refuses an unknown API type', () => {
    expect(() => parseInfraConfig({ ...BASE_CONFIG, api: { type: 'websocket' } } as unknown as InfraConfigInput)).toThrow(
      /api\.type: must be one of rest, http/,
    );
  });
});
