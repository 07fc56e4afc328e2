/**
 * The operator console, deployed through the API it uses: one small
 * function (functions/console/serve.ts) behind `GET /console` and
 * `GET /console/{proxy+}` of the REST API (or of the HTTP API), without the authorizer. The
 * console and the API share one origin (`<ApiUrl>console/` and `<ApiUrl>v1/`),
 * so there is no CORS, no second distribution and no bucket; why this and
 * not S3 + CloudFront: docs/infra.md ("Operator console").
 *
 * The function's bundle carries the Vite build of console/ (built by the
 * bundling's afterBundling hook with console/build.ts, beside index.mjs),
 * and its config.json comes from `auth.console` of the deployment
 * configuration (OIDC authorization code + PKCE, public client). Deployed
 * only when `auth.console` is set.
 */
import { CfnOutput, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { CONSOLE_ASSETS_FOLDER, CONSOLE_CONFIG_ENV, type ConsoleConfig } from '../functions/console/serve.js';
import type { AipApi } from './api.js';
import { AipHttpApi } from './http-api.js';
import type { InfraConfig } from './config.js';
import { createFunction, type FunctionBuildContext, type FunctionDefinition } from './functions.js';
import { NAG_REASONS } from './nag.js';

export const CONSOLE_FUNCTION_ID = 'Console';
/** The console's path below the API's base URL. */
export const CONSOLE_RESOURCE = 'console';

/** The deployed console's config.json, from `auth.console`. */
export function deployedConsoleConfig(config: InfraConfig): ConsoleConfig {
  const c = config.auth.console;
  if (c === undefined) throw new Error('auth.console is not set: the operator console is not deployed');
  return {
    mode: 'oidc',
    environment: config.envName,
    ...(c.defaultTenant !== undefined ? { tenant: c.defaultTenant } : {}),
    oidc: {
      issuer: c.discoveryIssuer ?? config.auth.issuer,
      client_id: c.clientId,
      scopes: [...c.scopes],
      ...(c.audience !== undefined ? { audience: c.audience } : {}),
    },
  };
}

/** The console function: static files and config.json, no data access. */
export function consoleFunctionDefinition(config: InfraConfig): FunctionDefinition {
  return {
    id: CONSOLE_FUNCTION_ID,
    entry: 'functions/console/serve.ts',
    handler: 'handler',
    description: 'Serves the operator console (its static build and config.json)',
    timeout: Duration.seconds(5),
    memorySize: 256,
    access: {},
    environment: { [CONSOLE_CONFIG_ENV]: JSON.stringify(deployedConsoleConfig(config)) },
    // The Vite build, beside the bundled handler (it reads ./console-assets at cold start).
    afterBundling: (inputDir, outputDir) => [`cd "${inputDir}" && node --import tsx console/build.ts "${outputDir}/${CONSOLE_ASSETS_FOLDER}"`],
  };
}

export interface AipConsoleProps {
  readonly api: AipApi | AipHttpApi;
  readonly build: FunctionBuildContext;
}

export class AipConsole extends Construct {
  public readonly function: lambda.Function;
  /** REST API: its methods (none with the HTTP API). */
  public readonly methods: readonly apigw.Method[];
  /** HTTP API: its routes (none with the REST API). */
  public readonly routes: readonly apigwv2.HttpRoute[];

  constructor(scope: Construct, id: string, props: AipConsoleProps) {
    super(scope, id);
    const { api, build } = props;
    this.function = createFunction(this, consoleFunctionDefinition(build.config), build);
    if (api instanceof AipHttpApi) {
      // functions/console/serve.ts takes the HTTP API's 2.0 events through the same adapter as the routes.
      this.methods = [];
      this.routes = [`/${CONSOLE_RESOURCE}`, `/${CONSOLE_RESOURCE}/{proxy+}`].map((path) =>
        api.addPublicGetRoute(path, this.function, NAG_REASONS.consoleStatic),
      );
      this.output(api.url);
      return;
    }
    this.routes = [];
    const integration = new apigw.LambdaIntegration(this.function, { proxy: true, allowTestInvoke: false });
    const root = api.api.root.addResource(CONSOLE_RESOURCE);
    const open = { authorizationType: apigw.AuthorizationType.NONE, requestValidator: api.requestValidator } as const;
    this.methods = [
      root.addMethod('GET', integration, { ...open, operationName: 'getConsole' }),
      root
        .addResource('{proxy+}')
        .addMethod('GET', integration, { ...open, operationName: 'getConsoleFile', requestParameters: { 'method.request.path.proxy': true } }),
    ];
    for (const method of this.methods) {
      Validations.of(method).acknowledge(
        { id: 'AwsSolutions-APIG4', reason: NAG_REASONS.consoleStatic },
        { id: 'AwsSolutions-COG4', reason: NAG_REASONS.consoleStatic },
      );
    }
    this.output(api.api.url);
  }

  private output(apiUrl: string): void {
    new CfnOutput(Stack.of(this), 'ConsoleUrl', {
      value: `${apiUrl}${CONSOLE_RESOURCE}/`,
      description: 'The operator console (also its OIDC redirect URI)',
    });
  }
}
