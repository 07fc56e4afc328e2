/**
 * The HTTPS API: an API Gateway REST API (v1; LocalStack's free tier has no
 * HTTP APIs) whose methods come from THE route table
 * (lib/http/routes.ts), each a Lambda proxy integration to the function
 * that serves the route, behind the JWT TOKEN authorizer unless the route is
 * public.
 *
 * The stage traces with X-Ray (its own sampling rule), writes JSON access logs and ERROR-level
 * execution logs (never request or response data), and throttles. Answers the
 * gateway gives itself (rejected token, unknown route, throttling, timeout,
 * ...) are RFC 9457 problems from lib/http/gateway-responses.ts, the same ones
 * the local HTTP server sends. Choices and their reasons: docs/infra.md ("API").
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as xray from 'aws-cdk-lib/aws-xray';
import { Construct } from 'constructs';
import type * as z from '../packages/connector-sdk/src/common/zod.js';
import { ROUTE_LIST, type RouteDefinition } from '../lib/http/routes.js';
import { GATEWAY_RESPONSES, gatewayResponseHeaders, gatewayResponseTemplate } from '../lib/http/gateway-responses.js';
import { accessLogFormatString, REST_ACCESS_LOG_FIELDS } from './access-log-formats.js';
import type { InfraConfig } from './config.js';
import { NAG_REASONS } from './nag.js';

/**
 * Identity validation expression of the TOKEN authorizer: API Gateway answers
 * 401 without invoking the authorizer when the Authorization header does not
 * match. Must equal `AUTHORIZATION_HEADER_PATTERN` of functions/authorizer.ts
 * (a stack test compares them; the stack does not import handler code).
 */
export const TOKEN_VALIDATION_REGEX = '^[Bb]earer [-0-9A-Za-z._~+/]+=*$';

/** Gateway response bodies are VTL templates: a `$` or `#` would be interpreted, not sent. */
function staticTemplate(template: string): string {
  if (/[$#]/.test(template)) throw new Error(`gateway response template must be static JSON (no $ or #): ${template}`);
  return template;
}

/** `/v1/actions/{id}` → `['id']`. */
export function pathParameterNames(path: string): string[] {
  return [...path.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!);
}

/** Query parameters the route's zod schema requires (a key whose schema rejects `undefined`). */
export function requiredQueryParameters(route: Pick<RouteDefinition, 'query'>): string[] {
  const shape = (route.query as unknown as { shape?: Record<string, z.ZodMiniType> }).shape;
  if (!shape) return [];
  return Object.entries(shape)
    .filter(([, schema]) => !schema.safeParse(undefined).success)
    .map(([name]) => name);
}

/** The method request parameters API Gateway validates: every path parameter and every required query parameter. */
export function methodRequestParameters(route: RouteDefinition): Record<string, boolean> {
  const parameters: Record<string, boolean> = {};
  for (const name of pathParameterNames(route.path)) parameters[`method.request.path.${name}`] = true;
  for (const name of requiredQueryParameters(route)) parameters[`method.request.querystring.${name}`] = true;
  return parameters;
}

/** JSON access log line of the stage: the fields of ./access-log-formats.ts (no headers, query strings or bodies). */
export function accessLogFormat(): apigw.AccessLogFormat {
  return apigw.AccessLogFormat.custom(accessLogFormatString(REST_ACCESS_LOG_FIELDS));
}

export interface AipApiProps {
  readonly config: InfraConfig;
  /** The function behind each route ID. Every route of the table needs one. */
  readonly routeFunctions: Readonly<Record<string, lambda.IFunction>>;
  readonly authorizerFunction: lambda.IFunction;
  /** @default ROUTE_LIST */
  readonly routes?: readonly RouteDefinition[];
}

export class AipApi extends Construct {
  public readonly api: apigw.RestApi;
  public readonly authorizer: apigw.TokenAuthorizer;
  public readonly requestValidator: apigw.RequestValidator;
  public readonly accessLogs: logs.LogGroup;
  /** The stage's X-Ray sampling rule (absent when the configuration does not trace). */
  public readonly samplingRule?: xray.CfnSamplingRule;
  /** The method of each route ID. */
  public readonly methods: Readonly<Record<string, apigw.Method>>;

  constructor(scope: Construct, id: string, props: AipApiProps) {
    super(scope, id);
    const { config } = props;
    const routes = props.routes ?? ROUTE_LIST;
    const missing = routes.filter((route) => !props.routeFunctions[route.id]).map((route) => route.id);
    if (missing.length > 0) throw new Error(`No function serves route(s) ${missing.join(', ')} of lib/http/routes.ts`);

    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: config.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.api = new apigw.RestApi(this, 'RestApi', {
      restApiName: `aip-${config.envName}`,
      description: `AIP runtime (${config.envName}) HTTPS API`,
      endpointTypes: [apigw.EndpointType.REGIONAL],
      cloudWatchRole: config.api.cloudWatchRole,
      // Account-level setting shared with every other REST API of the account: keep it when this stack goes.
      ...(config.api.cloudWatchRole ? { cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN } : {}),
      deployOptions: {
        stageName: config.api.stageName,
        description: `AIP runtime (${config.envName})`,
        // X-Ray on the stage only when the configuration traces (`tracing: false` means no X-Ray anywhere).
        tracingEnabled: config.tracing,
        accessLogDestination: new apigw.LogGroupLogDestination(this.accessLogs),
        accessLogFormat: accessLogFormat(),
        // Execution logs for errors only, and never the request or response data (tokens, bodies).
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: false,
        throttlingRateLimit: config.api.throttlingRateLimit,
        throttlingBurstLimit: config.api.throttlingBurstLimit,
      },
    });

    if (config.tracing) {
      // The stage's sampling (X-Ray's default would be the first request each second, then 5 %); docs/infra.md ("Stage").
      this.samplingRule = new xray.CfnSamplingRule(this, 'XRaySamplingRule', {
        samplingRule: {
          ruleName: `aip-${config.envName}-api`,
          priority: 100,
          reservoirSize: config.api.xraySampling.reservoir,
          fixedRate: config.api.xraySampling.rate,
          serviceName: `${this.api.restApiName}/${config.api.stageName}`,
          serviceType: 'AWS::ApiGateway::Stage',
          host: '*',
          httpMethod: '*',
          urlPath: '*',
          resourceArn: '*',
          version: 1,
        },
      });
    }

    // API Gateway creates its execution log group on first use, without retention; create it first, with ours.
    const executionLogs = new logs.LogGroup(this, 'ExecutionLogs', {
      logGroupName: `API-Gateway-Execution-Logs_${this.api.restApiId}/${config.api.stageName}`,
      retention: config.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.api.deploymentStage.node.addDependency(executionLogs);

    this.authorizer = new apigw.TokenAuthorizer(this, 'JwtAuthorizer', {
      authorizerName: `aip-${config.envName}-jwt`,
      handler: props.authorizerFunction,
      identitySource: apigw.IdentitySource.header('Authorization'),
      validationRegex: TOKEN_VALIDATION_REGEX,
      resultsCacheTtl: Duration.seconds(config.api.authorizerCacheTtlSeconds),
    });

    // Validates required path and query parameters. Bodies are validated by the handlers (zod and the
    // protocol envelope validator), which answer with the catalogued problem codes.
    this.requestValidator = this.api.addRequestValidator('RequestValidator', {
      requestValidatorName: 'parameters-and-body',
      validateRequestParameters: true,
      validateRequestBody: true,
    });

    // Every response type API Gateway has (DEFAULT_4XX/5XX and each specific one) answers a problem document.
    for (const spec of GATEWAY_RESPONSES) this.addProblemResponse(spec.type, spec.status, gatewayResponseHeaders(spec), gatewayResponseTemplate(spec));

    const methods: Record<string, apigw.Method> = {};
    const integrations = new Map<lambda.IFunction, apigw.LambdaIntegration>();
    for (const route of routes) {
      const fn = props.routeFunctions[route.id]!;
      let integration = integrations.get(fn);
      if (!integration) {
        // Proxy integration; the permission is scoped to the method ARN, and no console test-invoke permission.
        integration = new apigw.LambdaIntegration(fn, { proxy: true, allowTestInvoke: false });
        integrations.set(fn, integration);
      }
      const isPublic = route.auth === 'none';
      const method = this.api.root.resourceForPath(route.path).addMethod(route.method, integration, {
        operationName: route.id,
        requestValidator: this.requestValidator,
        requestParameters: methodRequestParameters(route),
        ...(isPublic
          ? { authorizationType: apigw.AuthorizationType.NONE }
          : { authorizer: this.authorizer, authorizationType: apigw.AuthorizationType.CUSTOM }),
      });
      Validations.of(method).acknowledge({ id: 'AwsSolutions-COG4', reason: NAG_REASONS.lambdaAuthorizer });
      if (isPublic) Validations.of(method).acknowledge({ id: 'AwsSolutions-APIG4', reason: NAG_REASONS.publicRoute });
      methods[route.id] = method;
    }
    this.methods = methods;

    Validations.of(this.api.deploymentStage).acknowledge({ id: 'AwsSolutions-APIG3', reason: NAG_REASONS.noWaf });
    if (config.api.cloudWatchRole) {
      const role = this.api.node.tryFindChild('CloudWatchRole');
      if (role) {
        Validations.of(role).acknowledge({
          id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
          reason: NAG_REASONS.apiGatewayCloudWatchRole,
        });
      }
    }

    // One output under a stable name (the README's describe-stacks query uses it) instead of CDK's hashed `Endpoint`.
    this.api.node.tryRemoveChild('Endpoint');
    new CfnOutput(Stack.of(this), 'ApiUrl', {
      value: this.api.url,
      description: 'Base URL of the AIP HTTPS API (append v1/..., e.g. v1/health)',
    });
  }

  private addProblemResponse(type: string, status: number, headers: Record<string, string>, template: string): void {
    this.api.addGatewayResponse(`Problem${type}`, {
      type: apigw.ResponseType.of(type),
      statusCode: String(status),
      responseHeaders: headers,
      templates: { 'application/json': staticTemplate(template) },
    });
  }
}
