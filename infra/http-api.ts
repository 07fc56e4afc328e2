/**
 * The HTTPS API as an API Gateway HTTP API (`api.type: "http"`): the same
 * routes as the REST API (infra/api.ts), from THE route table
 * (lib/http/routes.ts), each a Lambda proxy integration with payload format
 * 2.0 to the function that serves it, behind API Gateway's built-in JWT
 * authorizer unless the route is public. No authorizer Lambda runs.
 *
 * - The JWT authorizer checks the signature (RSA only; keys found by OIDC
 *   discovery from the issuer), `iss`, `aud` (or `client_id`), `exp`, `nbf`
 *   and `iat`. What the Lambda authorizer also checked (the algorithm
 *   allow-list, the claim mapping: principal kind, tenant and account claim
 *   shapes, `token_use`) the route functions check from the verified claims
 *   (functions/shared/caller-identity.ts, lib/auth/gateway-jwt.ts), with the
 *   same problem+json errors.
 * - Routes set no `authorizationScopes`: the REST API's authorizer checks no
 *   scope either; the route functions check each route's scopes from the
 *   claim mapping's scope claims (Auth0's `permissions` included, which the
 *   gateway would not read) and answer `auth.insufficient_scope` as a
 *   problem, where the gateway would answer `403 {"message":"Forbidden"}`.
 * - The stage (named as the REST stage, so URLs keep their shape) throttles
 *   and writes JSON access logs. An HTTP API has no gateway responses, no
 *   request validator, no X-Ray tracing of its own and no WAF association;
 *   what the client sees instead: docs/infra.md ("HTTP API option").
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ROUTE_LIST, type RouteDefinition } from '../lib/http/routes.js';
import { accessLogFormatString, HTTP_ACCESS_LOG_FIELDS } from './access-log-formats.js';
import type { InfraConfig } from './config.js';
import { LIVE_ALIAS_ID } from './functions.js';
import { NAG_REASONS } from './nag.js';

/** JSON access log line of the HTTP API stage: the fields of ./access-log-formats.ts (no headers, query strings, bodies, tokens or claims). */
export function httpAccessLogFormat(): AccessLogFormat {
  return AccessLogFormat.custom(accessLogFormatString(HTTP_ACCESS_LOG_FIELDS));
}

export interface AipHttpApiProps {
  readonly config: InfraConfig;
  /** The function behind each route ID. Every route of the table needs one. */
  readonly routeFunctions: Readonly<Record<string, lambda.IFunction>>;
  /** @default ROUTE_LIST */
  readonly routes?: readonly RouteDefinition[];
}

export class AipHttpApi extends Construct {
  public readonly api: apigwv2.HttpApi;
  public readonly stage: apigwv2.HttpStage;
  public readonly authorizer: HttpJwtAuthorizer;
  public readonly accessLogs: logs.LogGroup;
  /** The invoke URL of the stage, ending in `/` (`https://<api>.execute-api.<region>.amazonaws.com/<stage>/`). */
  public readonly url: string;
  /** The route of each route ID. */
  public readonly routes: Readonly<Record<string, apigwv2.HttpRoute>>;
  private readonly integrations = new Map<lambda.IFunction, HttpLambdaIntegration>();

  constructor(scope: Construct, id: string, props: AipHttpApiProps) {
    super(scope, id);
    const { config } = props;
    const routes = props.routes ?? ROUTE_LIST;
    const missing = routes.filter((route) => !props.routeFunctions[route.id]).map((route) => route.id);
    if (missing.length > 0) throw new Error(`No function serves route(s) ${missing.join(', ')} of lib/http/routes.ts`);

    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: config.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.api = new apigwv2.HttpApi(this, 'HttpApi', {
      apiName: `aip-${config.envName}`,
      description: `AIP runtime (${config.envName}) HTTPS API (HTTP API, JWT authorizer)`,
      createDefaultStage: false,
    });
    this.stage = new apigwv2.HttpStage(this, 'Stage', {
      httpApi: this.api,
      stageName: config.api.stageName,
      description: `AIP runtime (${config.envName})`,
      autoDeploy: true,
      throttle: { rateLimit: config.api.throttlingRateLimit, burstLimit: config.api.throttlingBurstLimit },
      accessLogSettings: { destination: new apigwv2.LogGroupLogDestination(this.accessLogs), format: httpAccessLogFormat() },
    });
    this.url = `${this.stage.url.replace(/\/$/, '')}/`;

    const audience = config.auth.audience;
    this.authorizer = new HttpJwtAuthorizer('JwtAuthorizer', config.auth.issuer, {
      authorizerName: `aip-${config.envName}-jwt`,
      identitySource: ['$request.header.Authorization'],
      jwtAudience: typeof audience === 'string' ? [audience] : [...audience],
    });

    const out: Record<string, apigwv2.HttpRoute> = {};
    for (const route of routes) {
      const isPublic = route.auth === 'none';
      const [created] = this.api.addRoutes({
        // The route table's paths use API Gateway's `{name}` syntax, which HTTP API route keys share.
        path: route.path,
        methods: [apigwv2.HttpMethod[route.method]],
        integration: this.integrationFor(props.routeFunctions[route.id]!),
        authorizer: isPublic ? new apigwv2.HttpNoneAuthorizer() : this.authorizer,
      });
      if (isPublic) Validations.of(created!).acknowledge({ id: 'AwsSolutions-APIG4', reason: NAG_REASONS.publicRoute });
      out[route.id] = created!;
    }
    this.routes = out;

    // No AwsSolutions-APIG3 here: cdk-nag checks WAF association on REST stages only (an HTTP API cannot have a web ACL).

    new CfnOutput(Stack.of(this), 'ApiUrl', {
      value: this.url,
      description: 'Base URL of the AIP HTTPS API (append v1/..., e.g. v1/health)',
    });
  }

  /** One proxy integration (payload format 2.0) per function; the invoke permission is scoped to each route. */
  integrationFor(fn: lambda.IFunction): HttpLambdaIntegration {
    let integration = this.integrations.get(fn);
    if (!integration) {
      // A route function's `live` alias (./functions.ts `apiTarget`) is named after its function.
      const name = fn.node.id === LIVE_ALIAS_ID && fn.node.scope !== undefined ? `${fn.node.scope.node.id}${LIVE_ALIAS_ID}` : fn.node.id;
      integration = new HttpLambdaIntegration(`${name}Integration`, fn, {
        payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
        timeout: Duration.seconds(29),
      });
      this.integrations.set(fn, integration);
    }
    return integration;
  }

  /** Public GET routes (the operator console's): no authorizer. */
  addPublicGetRoute(path: string, fn: lambda.IFunction, reason: string): apigwv2.HttpRoute {
    const [route] = this.api.addRoutes({
      path,
      methods: [apigwv2.HttpMethod.GET],
      integration: this.integrationFor(fn),
      authorizer: new apigwv2.HttpNoneAuthorizer(),
    });
    Validations.of(route!).acknowledge({ id: 'AwsSolutions-APIG4', reason });
    return route!;
  }
}
