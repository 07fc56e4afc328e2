/**
 * The stateless stack as deployed: the REST API against THE route table, the
 * authorizer, the workers and their event sources, the sweeper's rule,
 * least-privilege grants per function, the alarms, and the agreement between
 * the environment the stack sets and the one the composition root reads.
 * Bundling and CloudFormation validation are skipped (test/infra/support.ts).
 */
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnElement, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { AUTHORIZATION_HEADER_PATTERN, verifierFromEnv } from '../../functions/authorizer.js';
import { ROUTE_LIST, ROUTES, type RouteId } from '../../lib/http/routes.js';
import { OPTIONAL_ENV, readBootstrapSettings } from '../../functions/shared/settings.js';
import { parseRuntimeSettings } from '../../functions/shared/compose-runtime.js';
import {
  INVOKE_WORKER_FUNCTION_ID,
  RECONCILE_CONSUMER_FUNCTION_ID,
  ROUTE_ACCESS,
  routeFunctionDefinitions,
  SWEEPER_FUNCTION_ID,
  AUTHORIZER_FUNCTION_ID,
} from '../../infra/aip-functions.js';
import { TOKEN_VALIDATION_REGEX } from '../../infra/api.js';
import { AIP_METRICS, FUNCTION_ENV, metricsNamespace, OPTIONAL_FUNCTION_ENV } from '../../infra/function-env.js';
import { TABLE_WRITE_ACTIONS } from '../../infra/functions.js';
import { GATEWAY_RESPONSES, gatewayResponseTemplate } from '../../lib/http/gateway-responses.js';
import { ResponseType } from 'aws-cdk-lib/aws-apigateway';
import { ERROR_CATALOGUE, isErrorCode } from '../../packages/connector-sdk/src/errors/catalogue.js';
import { ProblemSchema } from '../../packages/connector-sdk/src/protocol/problem.js';
import { join } from 'node:path';
import { loadInfraConfig } from '../../infra/config.js';
import { PROJECT_ROOT } from '../../infra/functions.js';
import { BASE_CONFIG, buildAip } from './support.js';

type Json = Record<string, any>;

function logicalId(stack: Stack, construct: IConstruct): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

function asList<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** The stack's view of one deployment, with helpers over its template. */
function inspect(built: ReturnType<typeof buildAip>) {
  const stack = built.aip.stateless;
  const template = Template.fromStack(stack);
  const statefulTemplate = Template.fromStack(built.aip.stateful);
  const resources = template.toJSON().Resources as Record<string, Json>;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

  const fnId = (definitionId: string) => logicalId(stack, stack.functions[definitionId]!);
  const roleId = (definitionId: string) => logicalId(stack, stack.functions[definitionId]!.role!);
  /** Every statement of every policy attached to the function's role. */
  const statements = (definitionId: string): Json[] => {
    const role = roleId(definitionId);
    return ofType('AWS::IAM::Policy')
      .filter(([, p]) => JSON.stringify(p.Properties.Roles).includes(`"${role}"`))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Json[]);
  };
  const actions = (definitionId: string): string[] => statements(definitionId).flatMap((s) => asList<string>(s.Action));

  /** Resolves an Fn::ImportValue against the stateful stack's exports. */
  const resolveImport = (value: unknown): unknown => {
    if (value && typeof value === 'object' && 'Fn::ImportValue' in value) {
      const outputs = (statefulTemplate.toJSON().Outputs ?? {}) as Record<string, Json>;
      const output = Object.values(outputs).find((o) => o.Export?.Name === (value as Json)['Fn::ImportValue']);
      if (!output) throw new Error(`no export ${(value as Json)['Fn::ImportValue']}`);
      return output.Value;
    }
    return value;
  };

  /** API Gateway resource logical ID → full path. */
  const resourcePaths = (): Map<string, string> => {
    const apiResources = new Map(ofType('AWS::ApiGateway::Resource'));
    const paths = new Map<string, string>();
    const pathOf = (id: string): string => {
      const known = paths.get(id);
      if (known !== undefined) return known;
      const r = apiResources.get(id)!;
      const parent = r.Properties.ParentId as Json;
      const prefix = 'Ref' in parent ? pathOf(parent.Ref as string) : '';
      const path = `${prefix}/${r.Properties.PathPart as string}`;
      paths.set(id, path);
      return path;
    };
    for (const id of apiResources.keys()) pathOf(id);
    return paths;
  };

  return { stack, template, statefulTemplate, resources, ofType, fnId, roleId, statements, actions, resolveImport, resourcePaths };
}

const READ_ONLY_ROUTES: RouteId[] = ['getAction', 'streamAction', 'getTransaction', 'listOperator', 'listCapabilities', 'getHealth', 'getOpenApi'];
const WRITE_ACTIONS = new Set<string>(TABLE_WRITE_ACTIONS);

describe('the deployed runtime (default functions)', () => {
  let built: ReturnType<typeof buildAip>;
  let t: ReturnType<typeof inspect>;
  beforeAll(() => {
    built = buildAip();
    t = inspect(built);
  });

  describe('REST API', () => {
    it('is a REST API (v1), regional, with one method per route of lib/http/routes.ts', () => {
      t.template.resourceCountIs('AWS::ApiGateway::RestApi', 1);
      t.template.resourceCountIs('AWS::ApiGatewayV2::Api', 0);
      t.template.hasResourceProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
      t.template.resourceCountIs('AWS::ApiGateway::Method', ROUTE_LIST.length);
    });

    it('gives every route its method, behind the JWT authorizer unless the route is public, proxying to the function that exports its handler', () => {
      const paths = t.resourcePaths();
      const [[authorizerId]] = t.ofType('AWS::ApiGateway::Authorizer') as [[string, Json]];
      const methods = t.ofType('AWS::ApiGateway::Method').map(([, m]) => m.Properties as Json);
      const definitions = routeFunctionDefinitions();
      for (const route of ROUTE_LIST) {
        const matching = methods.filter((m) => m.HttpMethod === route.method && paths.get((m.ResourceId as Json).Ref as string) === route.path);
        expect(matching, `${route.method} ${route.path}`).toHaveLength(1);
        const method = matching[0]!;
        if (route.auth === 'none') {
          expect(method.AuthorizationType, route.id).toBe('NONE');
          expect(method.AuthorizerId, route.id).toBeUndefined();
        } else {
          expect(method.AuthorizationType, route.id).toBe('CUSTOM');
          expect(method.AuthorizerId, route.id).toEqual({ Ref: authorizerId });
        }
        expect(method.OperationName).toBe(route.id);
        expect(method.Integration.Type).toBe('AWS_PROXY');

        const definition = definitions.find((d) => d.trigger?.kind === 'api' && d.trigger.routes.includes(route.id as RouteId))!;
        expect(definition.entry).toBe(route.handler.module);
        const fnLogicalId = t.fnId(definition.id);
        expect(JSON.stringify(method.Integration.Uri)).toContain(`"${fnLogicalId}"`);
        expect(t.resources[fnLogicalId]!.Properties.Handler).toBe(`index.${route.handler.export}`);
        expect(t.resources[fnLogicalId]!.Properties.Timeout).toBe(route.timeoutSeconds);
      }
    });

    it('exists only for routes: the public OpenAPI route is the only method without authorization', () => {
      const open = t.ofType('AWS::ApiGateway::Method').filter(([, m]) => m.Properties.AuthorizationType !== 'CUSTOM');
      expect(open).toHaveLength(ROUTE_LIST.filter((r) => r.auth === 'none').length);
      expect(ROUTE_LIST.filter((r) => r.auth === 'none').map((r) => r.id)).toEqual(['getOpenApi']);
    });

    it('uses a TOKEN authorizer on the Authorization header with the handler’s own validation pattern and a small results cache', () => {
      expect(TOKEN_VALIDATION_REGEX).toBe(AUTHORIZATION_HEADER_PATTERN);
      t.template.resourceCountIs('AWS::ApiGateway::Authorizer', 1);
      t.template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
        Type: 'TOKEN',
        IdentitySource: 'method.request.header.Authorization',
        IdentityValidationExpression: AUTHORIZATION_HEADER_PATTERN,
        AuthorizerResultTtlInSeconds: 60,
        AuthorizerUri: { 'Fn::Join': ['', Match.arrayWith([{ 'Fn::GetAtt': [t.fnId(AUTHORIZER_FUNCTION_ID), 'Arn'] }])] },
      });
    });

    it('validates required parameters at the gateway, derived from the route schemas', () => {
      t.template.hasResourceProperties('AWS::ApiGateway::RequestValidator', { ValidateRequestBody: true, ValidateRequestParameters: true });
      const [[validatorId]] = t.ofType('AWS::ApiGateway::RequestValidator') as [[string, Json]];
      const paths = t.resourcePaths();
      for (const [, m] of t.ofType('AWS::ApiGateway::Method')) {
        expect(m.Properties.RequestValidatorId).toEqual({ Ref: validatorId });
        const path = paths.get(m.Properties.ResourceId.Ref as string)!;
        const route = ROUTE_LIST.find((r) => r.path === path && r.method === m.Properties.HttpMethod)!;
        const expected: Record<string, boolean> = {};
        if (path.includes('{id}')) expected['method.request.path.id'] = true;
        if (route.id === 'listOperator') expected['method.request.querystring.view'] = true;
        expect(m.Properties.RequestParameters ?? {}, route.id).toEqual(expected);
      }
    });

    it('answers for itself with RFC 9457 problems (lib/http/gateway-responses.ts) instead of {"message": ...}', () => {
      const responses = new Map(t.ofType('AWS::ApiGateway::GatewayResponse').map(([, r]) => [r.Properties.ResponseType as string, r.Properties as Json]));
      for (const spec of GATEWAY_RESPONSES) {
        const response = responses.get(spec.type);
        expect(response, spec.type).toBeDefined();
        expect(response!.StatusCode).toBe(String(spec.status));
        expect(response!.ResponseParameters['gatewayresponse.header.Content-Type']).toBe("'application/problem+json'");
        expect(response!.ResponseTemplates['application/json']).toBe(gatewayResponseTemplate(spec));
      }
      expect(responses.size).toBe(GATEWAY_RESPONSES.length);
    });

    it("has a problem+json gateway response for every response type of aws-cdk-lib's ResponseType (DEFAULT_4XX/5XX included), so a new type fails here", () => {
      // The expected list comes from the CDK's static members, not from lib/http/gateway-responses.ts.
      const cdkTypes = Object.getOwnPropertyNames(ResponseType)
        .map((name) => (ResponseType as unknown as Record<string, unknown>)[name])
        .filter((value): value is ResponseType => value instanceof ResponseType)
        .map((value) => value.responseType)
        .sort();
      expect(cdkTypes).toEqual(
        expect.arrayContaining(['DEFAULT_4XX', 'DEFAULT_5XX', 'UNAUTHORIZED', 'ACCESS_DENIED', 'WAF_FILTERED', 'UNSUPPORTED_MEDIA_TYPE']),
      );
      const responses = new Map(t.ofType('AWS::ApiGateway::GatewayResponse').map(([, r]) => [r.Properties.ResponseType as string, r.Properties as Json]));
      expect([...responses.keys()].sort()).toEqual(cdkTypes);
      for (const type of cdkTypes) {
        const response = responses.get(type)!;
        expect(response.ResponseParameters['gatewayresponse.header.Content-Type'], type).toBe("'application/problem+json'");
        const status = Number(response.StatusCode);
        expect(status >= 400 && status <= 599, `${type}: ${response.StatusCode}`).toBe(true);
        // The body is a problem document with a stable, catalogued code whose status is the response's.
        const problem = ProblemSchema.parse(JSON.parse(response.ResponseTemplates['application/json'] as string));
        expect(isErrorCode(problem.code), type).toBe(true);
        expect(problem.status, type).toBe(status);
        expect(ERROR_CATALOGUE[problem.code as keyof typeof ERROR_CATALOGUE].http, type).toBe(status);
        expect(problem.type).toBe(`urn:aip:error:${problem.code}`);
      }
    });

    it('traces the stage, logs access as JSON and errors without request data, and throttles', () => {
      t.template.hasResourceProperties('AWS::ApiGateway::Stage', {
        StageName: 'api',
        TracingEnabled: true,
        AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"') },
        MethodSettings: [
          Match.objectLike({
            HttpMethod: '*',
            ResourcePath: '/*',
            LoggingLevel: 'ERROR',
            DataTraceEnabled: false,
            ThrottlingRateLimit: 50,
            ThrottlingBurstLimit: 100,
          }),
        ],
      });
      const stage = t.ofType('AWS::ApiGateway::Stage')[0]![1];
      const format = JSON.parse(stage.Properties.AccessLogSetting.Format as string) as Record<string, string>;
      expect(Object.values(format).join(' ')).not.toMatch(/header|querystring|requestOverride|body/i);
      // What an operator needs to find a request and diagnose it, nothing that repeats another field (infra/access-log-formats.ts).
      expect(Object.keys(format)).toEqual([
        'requestId',
        'requestTimeEpoch',
        'sourceIp',
        'httpMethod',
        'resourcePath',
        'status',
        'responseLatency',
        'integrationStatus',
        'integrationLatency',
        'principalId',
        'errorResponseType',
        'xrayTraceId',
      ]);
      // The access and execution log groups keep the configured retention.
      t.template.hasResourceProperties('AWS::Logs::LogGroup', {
        LogGroupName: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith(['API-Gateway-Execution-Logs_'])]) }),
        RetentionInDays: 30,
      });
    });

    it("samples the stage's requests for X-Ray with its own rule: the first each second, then 1 %", () => {
      const rules = t.ofType('AWS::XRay::SamplingRule');
      expect(rules).toHaveLength(1);
      expect(rules[0]![1].Properties.SamplingRule).toEqual({
        RuleName: `aip-${BASE_CONFIG.envName}-api`,
        Priority: 100,
        ReservoirSize: 1,
        FixedRate: 0.01,
        ServiceName: `aip-${BASE_CONFIG.envName}/api`,
        ServiceType: 'AWS::ApiGateway::Stage',
        Host: '*',
        HTTPMethod: '*',
        URLPath: '*',
        ResourceARN: '*',
        Version: 1,
      });
    });

    it('outputs the invoke URL once, as ApiUrl', () => {
      const outputs = t.template.toJSON().Outputs as Record<string, Json>;
      expect(Object.keys(outputs).sort()).toEqual(['ApiUrl', 'ScheduleGroupName', 'SchedulerRoleArn']);
      const [[apiId]] = t.ofType('AWS::ApiGateway::RestApi') as [[string, Json]];
      expect(JSON.stringify(outputs.ApiUrl!.Value)).toContain(`"Ref":"${apiId}"`);
      expect(JSON.stringify(outputs.ApiUrl!.Value)).toContain('.execute-api.');
    });

    it('allows API Gateway to invoke each route function only for its own method (no test-invoke permission)', () => {
      const permissions = t.ofType('AWS::Lambda::Permission').filter(([, p]) => p.Properties.Principal === 'apigateway.amazonaws.com');
      // One per method, plus the authorizer's.
      expect(permissions).toHaveLength(ROUTE_LIST.length + 1);
      for (const [, p] of permissions) expect(JSON.stringify(p.Properties.SourceArn)).not.toContain('test-invoke-stage');
    });
  });

  describe('functions', () => {
    it('runs every function on Node.js 22, arm64, with X-Ray and JSON logs in its own log group', () => {
      const functions = t.ofType('AWS::Lambda::Function');
      // One per distinct route handler (both methods of /v1/mcp share one), plus the authorizer, the two consumers and the sweeper.
      expect(functions.length).toBe(routeFunctionDefinitions().length + 4);
      const logGroups = new Set<string>();
      for (const [id, fn] of functions) {
        expect(fn.Properties.Runtime, id).toBe('nodejs22.x');
        expect(fn.Properties.Architectures, id).toEqual(['arm64']);
        expect(fn.Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
        // System log level WARN: Lambda writes a failed invocation's platform records only (docs/infra.md, "Logs").
        expect(fn.Properties.LoggingConfig, id).toMatchObject({
          LogFormat: 'JSON',
          ApplicationLogLevel: 'INFO',
          SystemLogLevel: 'WARN',
          LogGroup: { Ref: expect.any(String) },
        });
        const logGroup = fn.Properties.LoggingConfig.LogGroup.Ref as string;
        expect(t.resources[logGroup]!.Properties.RetentionInDays, id).toBe(30);
        logGroups.add(logGroup);
      }
      expect(logGroups.size).toBe(functions.length);
    });

    it('sets the Powertools service, per-environment metrics namespace and log level on every function', () => {
      for (const [id, fn] of t.ofType('AWS::Lambda::Function')) {
        expect(fn.Properties.Environment.Variables, id).toMatchObject({
          POWERTOOLS_SERVICE_NAME: AIP_METRICS.serviceName,
          POWERTOOLS_METRICS_NAMESPACE: metricsNamespace('test'),
          POWERTOOLS_LOG_LEVEL: 'INFO',
          LOG_LEVEL: 'INFO',
          POWERTOOLS_LOGGER_LOG_EVENT: 'false',
          POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
        });
      }
    });

    it('consumes the invoke and reconcile queues with partial batch responses, a small batch and bounded concurrency', () => {
      t.template.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
      const mappings = t.ofType('AWS::Lambda::EventSourceMapping').map(([, m]) => m.Properties as Json);
      const byFunction = new Map(mappings.map((m) => [(m.FunctionName as Json).Ref as string, m]));
      const invoke = byFunction.get(t.fnId(INVOKE_WORKER_FUNCTION_ID))!;
      const reconcile = byFunction.get(t.fnId(RECONCILE_CONSUMER_FUNCTION_ID))!;
      for (const m of [invoke, reconcile]) {
        expect(m.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
        expect(m.BatchSize).toBe(5);
      }
      expect(invoke.ScalingConfig).toEqual({ MaximumConcurrency: 10 });
      expect(reconcile.ScalingConfig).toEqual({ MaximumConcurrency: 5 });
      const stateful = built.aip.stateful;
      expect(t.resolveImport(invoke.EventSourceArn)).toEqual({ 'Fn::GetAtt': [logicalId(stateful, stateful.invokeQueue), 'Arn'] });
      expect(t.resolveImport(reconcile.EventSourceArn)).toEqual({ 'Fn::GetAtt': [logicalId(stateful, stateful.reconcileQueue), 'Arn'] });
    });

    it('keeps each consumed queue’s visibility timeout above its consumer’s timeout', () => {
      const queues = t.statefulTemplate.toJSON().Resources as Record<string, Json>;
      for (const [, m] of t.ofType('AWS::Lambda::EventSourceMapping')) {
        const fn = t.resources[(m.Properties.FunctionName as Json).Ref as string]!;
        const queueArn = t.resolveImport(m.Properties.EventSourceArn) as Json;
        const queue = queues[(queueArn['Fn::GetAtt'] as string[])[0]!]!;
        expect(queue.Properties.VisibilityTimeout).toBeGreaterThan(fn.Properties.Timeout as number);
      }
    });

    it('runs the sweeper every minute from an EventBridge rule, without retries (the next minute retries)', () => {
      t.template.resourceCountIs('AWS::Events::Rule', 1);
      t.template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(1 minute)',
        State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [t.fnId(SWEEPER_FUNCTION_ID), 'Arn'] }, RetryPolicy: { MaximumRetryAttempts: 0 } })],
      });
      t.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: t.fnId(SWEEPER_FUNCTION_ID) },
        MaximumRetryAttempts: 0,
      });
    });
  });

  describe('least privilege', () => {
    const allIds = () => Object.keys(built.aip.stateless.functions);

    it('gives read-only routes no table writes, sends, schedules or secrets', () => {
      for (const route of READ_ONLY_ROUTES) {
        const id = routeFunctionDefinitions().find((d) => d.trigger?.kind === 'api' && d.trigger.routes.includes(route))!.id;
        const actions = t.actions(id);
        expect(
          actions.filter((a) => WRITE_ACTIONS.has(a)),
          route,
        ).toEqual([]);
        // A listing reads the cursor key secret (its own test below), and no other secret.
        const secrets = route === 'listOperator' ? ['secretsmanager:GetSecretValue'] : [];
        expect(
          actions.filter((a) => /^(sqs:SendMessage|scheduler:|iam:PassRole|secretsmanager:)/.test(a)),
          route,
        ).toEqual(secrets);
        expect(
          actions.filter((a) => /^kms:(Encrypt|ReEncrypt|GenerateDataKey)/.test(a)),
          route,
        ).toEqual([]);
      }
      // The table itself is only read where the route table says so.
      expect(t.actions('HttpGetAction')).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:Query']));
      expect(t.actions('HttpGetOpenApi').filter((a) => a.startsWith('dynamodb:'))).toEqual([]);
    });

    it('serves the MCP endpoint from one function: POST and GET /v1/mcp behind the authorizer, 29 s, the grants of a tool call', () => {
      const paths = t.resourcePaths();
      const methods = t
        .ofType('AWS::ApiGateway::Method')
        .map(([, m]) => m.Properties as Json)
        .filter((m) => paths.get((m.ResourceId as Json).Ref as string) === '/v1/mcp');
      expect(methods.map((m) => m.HttpMethod).sort()).toEqual(['GET', 'POST']);
      const fn = t.fnId('HttpMcp');
      for (const m of methods) {
        expect(m.AuthorizationType).toBe('CUSTOM');
        expect(JSON.stringify(m.Integration.Uri)).toContain(`"${fn}"`);
      }
      expect(t.resources[fn]!.Properties).toMatchObject({ Handler: 'index.mcpHandler', Timeout: 29 });
      expect(t.actions('HttpMcp')).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:PutItem', 'sqs:SendMessage']));
      expect(t.actions('HttpMcp')).not.toContain('scheduler:CreateSchedule');
    });

    it('follows ROUTE_ACCESS for every route', () => {
      for (const route of ROUTE_LIST) {
        const access = ROUTE_ACCESS[route.id as RouteId] as { table?: string; sendTo?: readonly string[]; connectorSecrets?: boolean; cursorKey?: boolean };
        const id = routeFunctionDefinitions().find((d) => d.trigger?.kind === 'api' && d.trigger.routes.includes(route.id as RouteId))!.id;
        const actions = t.actions(id);
        expect(
          actions.some((a) => WRITE_ACTIONS.has(a)),
          route.id,
        ).toBe(access.table === 'readWrite');
        expect(actions.includes('dynamodb:GetItem'), route.id).toBe(access.table !== undefined);
        expect(actions.includes('sqs:SendMessage'), route.id).toBe((access.sendTo ?? []).length > 0);
        expect(actions.includes('secretsmanager:GetSecretValue'), route.id).toBe(access.connectorSecrets === true || access.cursorKey === true);
      }
    });

    it('lets only the invoke worker, the reconcile consumer and (attempt inline) the submit function create and delete schedules, in the reconcile group only; a resolution may only delete', () => {
      const schedulers = allIds().filter((id) => t.actions(id).includes('scheduler:CreateSchedule'));
      // attemptWhenWaited "inline" (the default): the submit runs a waited execute's first attempt, which may settle outcome_unknown.
      expect(schedulers.sort()).toEqual([INVOKE_WORKER_FUNCTION_ID, RECONCILE_CONSUMER_FUNCTION_ID, 'HttpSubmitAction'].sort());
      // An operator's resolution (applied at once, or by the second operator's approval) cancels the record's schedule.
      const cancellers = allIds().filter((id) => t.actions(id).includes('scheduler:DeleteSchedule') && !t.actions(id).includes('scheduler:CreateSchedule'));
      expect(cancellers.sort()).toEqual(['HttpDecideApproval', 'HttpOperatorResolve']);
      for (const id of cancellers) {
        const statement = t.statements(id).find((s) => asList<string>(s.Action).includes('scheduler:DeleteSchedule'))!;
        expect(asList(statement.Action)).toEqual(['scheduler:DeleteSchedule']);
        expect(JSON.stringify(statement.Resource)).toContain(':schedule/aip-test-reconcile/*');
      }
      for (const id of schedulers) {
        const statement = t.statements(id).find((s) => asList<string>(s.Action).includes('scheduler:CreateSchedule'))!;
        expect(asList(statement.Action).sort()).toEqual(['scheduler:CreateSchedule', 'scheduler:DeleteSchedule']);
        expect(JSON.stringify(statement.Resource)).toContain(':schedule/aip-test-reconcile/*');
      }
    });

    it('allows iam:PassRole only on the scheduler role, only to EventBridge Scheduler, only for the schedule managers', () => {
      const schedulerRoleArn = { 'Fn::GetAtt': [logicalId(t.stack, t.stack.schedulerRole), 'Arn'] };
      const passers = allIds().filter((id) => t.actions(id).includes('iam:PassRole'));
      expect(passers.sort()).toEqual([INVOKE_WORKER_FUNCTION_ID, RECONCILE_CONSUMER_FUNCTION_ID, 'HttpSubmitAction'].sort());
      for (const [, policy] of t.ofType('AWS::IAM::Policy')) {
        for (const s of policy.Properties.PolicyDocument.Statement as Json[]) {
          if (!asList<string>(s.Action).some((a) => a.startsWith('iam:'))) continue;
          expect(s.Action).toBe('iam:PassRole');
          expect(s.Resource).toEqual(schedulerRoleArn);
          expect(s.Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } });
        }
      }
    });

    it('sends to queues only where the runtime enqueues: submit, MCP tool calls and decide to invoke, an operator request to reconcile, the sweeper to both', () => {
      const stateful = built.aip.stateful;
      const queueOf = (arn: unknown) => {
        const ref = t.resolveImport(arn) as Json;
        const id = (ref['Fn::GetAtt'] as string[])[0];
        return id === logicalId(stateful, stateful.invokeQueue) ? 'invoke' : id === logicalId(stateful, stateful.reconcileQueue) ? 'reconcile' : `other:${id}`;
      };
      const sends: Record<string, string[]> = {};
      for (const id of allIds()) {
        const targets = t
          .statements(id)
          .filter((s) => asList<string>(s.Action).includes('sqs:SendMessage'))
          .flatMap((s) => asList(s.Resource).map(queueOf));
        if (targets.length > 0) sends[id] = targets.sort();
      }
      expect(sends).toEqual({
        HttpSubmitAction: ['invoke'],
        HttpMcp: ['invoke'],
        HttpDecideApproval: ['invoke'],
        HttpOperatorReconcile: ['reconcile'],
        [SWEEPER_FUNCTION_ID]: ['invoke', 'reconcile'],
      });
    });

    it('reads connector secrets only where connectors run: submit and MCP tool calls (inline previews), resolutions and their approval (the provider lookup), the worker and the reconcile consumer', () => {
      const connectorSecret = (s: Json) => s.Action === 'secretsmanager:GetSecretValue' && JSON.stringify(s.Resource).includes(':secret:aip/test/payments/');
      const readers = allIds().filter((id) => t.statements(id).some(connectorSecret));
      expect(readers.sort()).toEqual(
        ['HttpSubmitAction', 'HttpMcp', 'HttpOperatorResolve', 'HttpDecideApproval', INVOKE_WORKER_FUNCTION_ID, RECONCILE_CONSUMER_FUNCTION_ID].sort(),
      );
      for (const id of readers) {
        const statement = t.statements(id).find(connectorSecret)!;
        expect(JSON.stringify(statement.Resource)).toContain(':secret:aip/test/payments/api-key-??????');
        expect(JSON.stringify(statement.Resource)).not.toContain('*');
      }
    });

    it('gives the authorizer no data access at all', () => {
      expect(t.actions(AUTHORIZER_FUNCTION_ID).filter((a) => !/^(logs|xray):/.test(a))).toEqual([]);
    });

    it('has no wildcard action anywhere, and no managed policy except API Gateway’s logging role', () => {
      for (const [, policy] of t.ofType('AWS::IAM::Policy')) {
        for (const s of policy.Properties.PolicyDocument.Statement as Json[]) {
          for (const action of asList<string>(s.Action)) expect(action === '*' || action.endsWith(':*'), action).toBe(false);
        }
      }
      const withManaged = t.ofType('AWS::IAM::Role').filter(([, r]) => r.Properties.ManagedPolicyArns !== undefined);
      expect(withManaged).toHaveLength(1);
      expect(JSON.stringify(withManaged[0]![1].Properties.ManagedPolicyArns)).toContain('AmazonAPIGatewayPushToCloudWatchLogs');
    });
  });

  describe('alarms', () => {
    it('alarms when either DLQ holds a message', () => {
      const stateful = built.aip.stateful;
      const alarms = t
        .ofType('AWS::CloudWatch::Alarm')
        .map(([, a]) => a.Properties as Json)
        .filter((a) => a.MetricName === 'ApproximateNumberOfMessagesVisible');
      expect(alarms).toHaveLength(2);
      const queues = alarms.map((a) => t.resolveImport((a.Dimensions as Json[])[0]!.Value));
      expect(queues).toEqual(
        expect.arrayContaining([
          { 'Fn::GetAtt': [logicalId(stateful, stateful.invokeDeadLetterQueue), 'QueueName'] },
          { 'Fn::GetAtt': [logicalId(stateful, stateful.reconcileDeadLetterQueue), 'QueueName'] },
        ]),
      );
      for (const a of alarms)
        expect(a).toMatchObject({ Namespace: 'AWS/SQS', ComparisonOperator: 'GreaterThanThreshold', Threshold: 0, TreatMissingData: 'notBreaching' });
    });

    it('alarms on invocation errors of the worker, the reconcile consumer and the sweeper', () => {
      const alarms = t
        .ofType('AWS::CloudWatch::Alarm')
        .map(([, a]) => a.Properties as Json)
        .filter((a) => a.MetricName === 'Errors');
      const functions = alarms.map((a) => ((a.Dimensions as Json[]).find((d) => d.Name === 'FunctionName')!.Value as Json).Ref);
      expect(functions.sort()).toEqual([INVOKE_WORKER_FUNCTION_ID, RECONCILE_CONSUMER_FUNCTION_ID, SWEEPER_FUNCTION_ID].map((id) => t.fnId(id)).sort());
      for (const a of alarms)
        expect(a).toMatchObject({ Namespace: 'AWS/Lambda', Statistic: 'Sum', ComparisonOperator: 'GreaterThanOrEqualToThreshold', Threshold: 1 });
    });

    it('alarms on the age of the oldest outcome_unknown record, the metric the sweeper publishes', () => {
      t.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: 'aip-test-oldest-outcome-unknown-age',
        Namespace: metricsNamespace('test'),
        MetricName: AIP_METRICS.oldestOutcomeUnknownAge,
        Dimensions: [{ Name: 'service', Value: AIP_METRICS.serviceName }],
        Statistic: 'Maximum',
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 1800,
      });
    });

    it('alarms when a quiet tenant’s invocation waits in the invoke queue (fair-queue metric), not on the noisy tenant’s backlog', () => {
      const stateful = built.aip.stateful;
      const alarms = t
        .ofType('AWS::CloudWatch::Alarm')
        .map(([, a]) => a.Properties as Json)
        .filter((a) => a.MetricName === 'ApproximateAgeOfOldestMessageInQuietGroups');
      expect(alarms).toHaveLength(1);
      expect(alarms[0]).toMatchObject({
        AlarmName: 'aip-test-invoke-quiet-tenant-queue-age',
        Namespace: 'AWS/SQS',
        Statistic: 'Maximum',
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 300,
        TreatMissingData: 'notBreaching',
      });
      expect(t.resolveImport((alarms[0]!.Dimensions as Json[])[0]!.Value)).toEqual({ 'Fn::GetAtt': [logicalId(stateful, stateful.invokeQueue), 'QueueName'] });
      // No alarm on the queue's overall age: a noisy tenant's backlog alone must not page anyone.
      expect(t.ofType('AWS::CloudWatch::Alarm').filter(([, a]) => a.Properties.MetricName === 'ApproximateAgeOfOldestMessage')).toEqual([]);
    });

    it('reserves no concurrency for the workers by default (the account’s unreserved pool)', () => {
      for (const id of [INVOKE_WORKER_FUNCTION_ID, RECONCILE_CONSUMER_FUNCTION_ID]) {
        expect(t.resources[t.fnId(id)]!.Properties.ReservedConcurrentExecutions).toBeUndefined();
      }
    });

    it('creates no topic and no alarm actions without an alarm email', () => {
      t.template.resourceCountIs('AWS::SNS::Topic', 0);
      for (const [, a] of t.ofType('AWS::CloudWatch::Alarm')) expect(a.Properties.AlarmActions).toBeUndefined();
    });
  });

  it('reports no cdk-nag findings and no CDK errors or warnings', () => {
    expect(built.aip.nag.validateScope(built.app).violations.map((v) => v.ruleName)).toEqual([]);
    const annotations = Annotations.fromStack(t.stack);
    expect(annotations.findError('*', Match.anyValue())).toEqual([]);
    expect(annotations.findWarning('*', Match.anyValue())).toEqual([]);
  });

  describe('environment agreement with the composition root', () => {
    /** A function's variables with deploy-time tokens replaced by values of the right shape. */
    const deployedEnv = (definitionId: string): NodeJS.ProcessEnv => {
      const variables = t.resources[t.fnId(definitionId)]!.Properties.Environment.Variables as Record<string, unknown>;
      const sample: Record<string, string> = {
        [FUNCTION_ENV.tableName]: 'Aip-test-Stateful-Table-1ABC',
        [FUNCTION_ENV.invokeQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/invoke',
        [FUNCTION_ENV.reconcileQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/reconcile',
        [FUNCTION_ENV.reconcileQueueArn]: 'arn:aws:sqs:eu-west-1:123456789012:reconcile',
        [FUNCTION_ENV.schedulerRoleArn]: 'arn:aws:iam::123456789012:role/Aip-test-Stateless-SchedulerRole',
        [FUNCTION_ENV.cursorKeySecretArn]: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:CursorKey1A2B3C4D-AbCdEf',
      };
      const env: NodeJS.ProcessEnv = {};
      for (const [name, value] of Object.entries(variables)) {
        if (typeof value === 'string') env[name] = value;
        else {
          expect(sample[name], `token-valued variable ${name}`).toBeDefined();
          env[name] = sample[name];
        }
      }
      return env;
    };

    it('sets every variable functions/shared/bootstrap.ts requires, in the shape it validates', () => {
      for (const id of Object.keys(built.aip.stateless.functions)) {
        const settings = readBootstrapSettings(deployedEnv(id));
        expect(settings.scheduleGroup).toBe('aip-test-reconcile');
        expect(settings.runtimeConfig.envName).toBe('test');
        expect(settings.credentials).toEqual({ source: 'secrets-manager' });
        expect(settings.cursorKey).toEqual({
          source: 'secrets-manager',
          secretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:CursorKey1A2B3C4D-AbCdEf',
        });
        expect(settings.connectorEndpoints).toEqual({});
      }
    });

    it("tells every function the invoke queue's maxReceiveCount, from the queue itself, and the Runtime bounds its capacity deferrals by it", () => {
      const fromQueue = built.aip.stateful.queues.invoke.maxReceiveCount;
      const [redrive] = Object.values(t.statefulTemplate.findResources('AWS::SQS::Queue'))
        .map((q) => (q as Json).Properties.RedrivePolicy as Json | undefined)
        .filter((r) => r !== undefined && JSON.stringify(r.deadLetterTargetArn).includes('InvokeDeadLetterQueue'));
      expect(redrive?.maxReceiveCount).toBe(fromQueue);
      for (const id of Object.keys(built.aip.stateless.functions)) {
        expect(deployedEnv(id)[FUNCTION_ENV.invokeQueueMaxReceiveCount]).toBe(String(fromQueue));
        const settings = readBootstrapSettings(deployedEnv(id));
        expect(settings.invokeQueueMaxReceiveCount).toBe(fromQueue);
      }
      expect(parseRuntimeSettings(readBootstrapSettings(deployedEnv(INVOKE_WORKER_FUNCTION_ID))).capacity_deferral.queue_max_receive_count).toBe(fromQueue);
    });

    it('gives the authorizer a configuration it can build its verifier from', () => {
      expect(() => verifierFromEnv(deployedEnv(AUTHORIZER_FUNCTION_ID))).not.toThrow();
    });

    it('uses the composition root’s name for the connector endpoints variable', () => {
      expect(OPTIONAL_FUNCTION_ENV.connectorEndpoints).toBe(OPTIONAL_ENV.connectorEndpoints);
      for (const id of Object.keys(built.aip.stateless.functions)) expect(deployedEnv(id)[OPTIONAL_FUNCTION_ENV.connectorEndpoints]).toBeUndefined();
    });
  });
});

describe('the deployed runtime with alarm email, KMS queues, connector endpoints and an IdP preset', () => {
  let built: ReturnType<typeof buildAip>;
  let t: ReturnType<typeof inspect>;
  beforeAll(() => {
    built = buildAip({
      ...BASE_CONFIG,
      auth: { ...BASE_CONFIG.auth, claims: { preset: 'cognito' }, clockToleranceSeconds: 5 },
      alarmEmail: 'ops@example.com',
      queueEncryption: 'kms',
      workerReservedConcurrency: 20,
      reconcilerReservedConcurrency: 5,
      quietTenantQueueAgeAlarmSeconds: 120,
      connectorEndpoints: { payments: 'https://api.payments.example.com' },
      api: { authorizerCacheTtlSeconds: 0, throttlingRateLimit: 20, throttlingBurstLimit: 40, stageName: 'prod', xraySampling: { reservoir: 0, rate: 0.1 } },
      logLevel: 'DEBUG',
      lambdaSystemLogLevel: 'INFO',
    });
    t = inspect(built);
  });

  it('reserves the configured concurrency for the invoke worker and the reconcile consumer, at least their event sources’ maximum', () => {
    expect(t.resources[t.fnId(INVOKE_WORKER_FUNCTION_ID)]!.Properties.ReservedConcurrentExecutions).toBe(20);
    expect(t.resources[t.fnId(RECONCILE_CONSUMER_FUNCTION_ID)]!.Properties.ReservedConcurrentExecutions).toBe(5);
    const maxima = t.ofType('AWS::Lambda::EventSourceMapping').map(([, m]) => (m.Properties.ScalingConfig as Json).MaximumConcurrency as number);
    expect(maxima.sort((a, b) => a - b)).toEqual([5, 10]);
    t.template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateAgeOfOldestMessageInQuietGroups', Threshold: 120 });
  });

  it('notifies an encrypted, TLS-only topic that CloudWatch alarms of this deployment may publish to', () => {
    t.template.resourceCountIs('AWS::SNS::Topic', 1);
    const [[topicId, topic]] = t.ofType('AWS::SNS::Topic') as [[string, Json]];
    expect(topic.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [expect.any(String), 'Arn'] });
    t.template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: { Ref: topicId } });
    const statements = t.ofType('AWS::SNS::TopicPolicy')[0]![1].Properties.PolicyDocument.Statement as Json[];
    expect(statements).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        expect.objectContaining({ Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: 'sns:Publish' }),
      ]),
    );
    const key = t.resources[(topic.Properties.KmsMasterKeyId as Json)['Fn::GetAtt'][0] as string]!;
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(JSON.stringify(key.Properties.KeyPolicy)).toContain('cloudwatch.amazonaws.com');
    for (const [, a] of t.ofType('AWS::CloudWatch::Alarm')) {
      expect(a.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(a.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
  });

  it('applies the API settings: stage name, throttling, authorizer cache off', () => {
    t.template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'prod',
      MethodSettings: [Match.objectLike({ ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 })],
    });
    t.template.hasResourceProperties('AWS::ApiGateway::Authorizer', { AuthorizerResultTtlInSeconds: 0 });
  });

  it('passes connector endpoints, the claims preset and the log level to the functions', () => {
    for (const [id, fn] of t.ofType('AWS::Lambda::Function')) {
      const variables = fn.Properties.Environment.Variables as Record<string, string>;
      expect(JSON.parse(variables[OPTIONAL_FUNCTION_ENV.connectorEndpoints]!), id).toEqual({ payments: 'https://api.payments.example.com' });
      expect(JSON.parse(variables[FUNCTION_ENV.runtimeConfig]!).auth, id).toMatchObject({ claims: { preset: 'cognito' }, clockToleranceSeconds: 5 });
      expect(variables.POWERTOOLS_LOG_LEVEL).toBe('DEBUG');
      expect(fn.Properties.LoggingConfig.ApplicationLogLevel).toBe('DEBUG');
      expect(fn.Properties.LoggingConfig.SystemLogLevel, id).toBe('INFO');
    }
  });

  it("samples the stage with the configured reservoir and rate, under the stage's own service name", () => {
    t.template.hasResourceProperties('AWS::XRay::SamplingRule', {
      SamplingRule: Match.objectLike({
        ReservoirSize: 0,
        FixedRate: 0.1,
        ServiceName: `aip-${BASE_CONFIG.envName}/prod`,
        ServiceType: 'AWS::ApiGateway::Stage',
      }),
    });
  });

  it('lets functions that send use the queue key', () => {
    for (const id of ['HttpSubmitAction', SWEEPER_FUNCTION_ID]) {
      expect(t.actions(id)).toEqual(expect.arrayContaining(['kms:GenerateDataKey', 'kms:Decrypt']));
    }
  });

  it('reports no cdk-nag findings', () => {
    expect(built.aip.nag.validateScope(built.app).violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe("attemptWhenWaited: where a waited execute's first attempt runs, and what the submit function may do for it", () => {
  it.each([
    ['rest', 'inline'],
    ['http', 'inline'],
    ['rest', 'queue'],
    ['http', 'queue'],
  ] as const)('%s API, %s: the submit function manages reconciliation schedules only when the attempt runs in it; cdk-nag clean', (api, where) => {
    const built = buildAip({ ...BASE_CONFIG, api: { type: api }, attemptWhenWaited: where });
    const t = inspect(built);
    const submit = t.actions('HttpSubmitAction');
    expect(submit.includes('scheduler:CreateSchedule')).toBe(where === 'inline');
    expect(submit.includes('iam:PassRole')).toBe(where === 'inline');
    // Either way it reads the connector secrets (previews) and sends to the invoke queue (everything not attempted inline).
    expect(submit).toContain('secretsmanager:GetSecretValue');
    expect(submit).toContain('sqs:SendMessage');
    // The MCP function's tool calls never attempt inline.
    expect(t.actions('HttpMcp')).not.toContain('scheduler:CreateSchedule');
    expect(built.aip.nag.validateScope(built.app).violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('shipped configuration files', () => {
  it.each(['config.local.json', 'config.localstack.json'])('infra/%s builds the whole runtime with no cdk-nag findings', (file) => {
    const config = loadInfraConfig(join(PROJECT_ROOT, 'infra', file));
    const built = buildAip(config);
    expect(built.aip.nag.validateScope(built.app).violations.map((v) => v.ruleName)).toEqual([]);
    expect(built.aip.stateless.api).toBeDefined();
    if (file === 'config.localstack.json') {
      // LocalStack needs no account-level API Gateway logging role.
      Template.fromStack(built.aip.stateless).resourceCountIs('AWS::ApiGateway::Account', 0);
    }
  });
});

describe('route table coverage', () => {
  it('derives one function per distinct handler, and the typed access map names every route', () => {
    const definitions = routeFunctionDefinitions();
    const served = definitions.flatMap((d) => (d.trigger?.kind === 'api' ? d.trigger.routes : []));
    expect([...served].sort()).toEqual(Object.keys(ROUTES).sort());
    expect(Object.keys(ROUTE_ACCESS).sort()).toEqual(Object.keys(ROUTES).sort());
    expect(new Set(definitions.map((d) => `${d.entry}#${d.handler}`)).size).toBe(definitions.length);
  });

  it('refuses a route whose suggested timeout exceeds API Gateway’s 29 s integration limit', () => {
    const route = { ...ROUTE_LIST[0]!, timeoutSeconds: 60 };
    expect(() => routeFunctionDefinitions([route])).toThrow(/Route submitAction suggests a 60 s timeout; API Gateway stops waiting .* after 29 s/);
  });

  it('groups routes that name the same module and export into one function', () => {
    const [first, second] = ROUTE_LIST as [(typeof ROUTE_LIST)[number], (typeof ROUTE_LIST)[number]];
    const shared = { ...second, handler: first.handler, timeoutSeconds: 29 };
    const definitions = routeFunctionDefinitions([first, shared]);
    expect(definitions).toHaveLength(1);
    expect(definitions[0]!.trigger).toEqual({ kind: 'api', routes: [first.id, second.id] });
    expect(definitions[0]!.timeout.toSeconds()).toBe(29);
  });
});
