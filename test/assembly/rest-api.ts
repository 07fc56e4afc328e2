/**
 * The REST API of the assembly, as API Gateway would run it from the
 * template: the resource tree (`AWS::ApiGateway::Resource`), the methods
 * (`AWS::ApiGateway::Method`: HTTP method, authorization type, authorizer,
 * required request parameters, the Lambda proxy integration's function), the
 * TOKEN authorizer (`AWS::ApiGateway::Authorizer`: identity validation
 * expression, its function), the gateway responses
 * (`AWS::ApiGateway::GatewayResponse`) and the stage name. It reads nothing
 * from the route table in lib/http: a method the template lacks is a 404.
 *
 * Per request: match → required parameters (400) → for CUSTOM methods the
 * Authorization header against the expression (401), the authorizer function
 * with a TOKEN event, its policy against the method ARN (403) → the proxy
 * event with the authorizer's context → the function. Every Lambda invocation
 * is checked against the function's resource policy
 * (`AWS::Lambda::Permission`, principal apigateway.amazonaws.com) through
 * `authorizeInvoke`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayAuthorizerResult } from 'aws-lambda';
import { policyAllows } from '../../lib/auth/policy.js';
import type { LambdaFunction } from './lambda-host.js';
import { ACCOUNT_ID, REGION, type Resolver, resourcesOfType, type StackArtifact } from './template.js';

interface ApiMethod {
  readonly logicalId: string;
  readonly httpMethod: string;
  /** `/v1/actions/{id}` */
  readonly resourcePath: string;
  readonly authorizationType: string;
  readonly authorizerId?: string;
  readonly requiredParameters: readonly string[];
  /** Logical ID of the integration's function. */
  readonly functionId: string;
}

interface ApiAuthorizer {
  readonly id: string;
  readonly functionId: string;
  readonly validation?: RegExp;
  readonly identityHeader: string;
}

interface GatewayResponseSpec {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The function a Lambda integration URI names (`...functions/<Fn::GetAtt [X, Arn]>/invocations`). */
function functionOfUri(uri: unknown): string {
  const found = JSON.stringify(uri).match(/"Fn::GetAtt":\["([^"]+)","Arn"\]/);
  if (found === null) throw new Error(`not a Lambda integration URI: ${JSON.stringify(uri)}`);
  return found[1] as string;
}

export interface RestApiOptions {
  readonly stack: StackArtifact;
  readonly resolver: Resolver;
  readonly functions: ReadonlyMap<string, LambdaFunction>;
  /** Lambda's resource-policy check of one invocation by a service principal; throws when not allowed. */
  readonly authorizeInvoke: (functionId: string, principal: string, sourceArn: string) => void;
}

export class RestApi {
  readonly stage: string;
  readonly apiId: string;
  readonly methods: readonly ApiMethod[];
  /** Requests answered, by method logical ID. */
  readonly served = new Map<string, number>();
  #authorizers = new Map<string, ApiAuthorizer>();
  #responses = new Map<string, GatewayResponseSpec>();
  #server: Server | undefined;
  url = '';

  constructor(private readonly options: RestApiOptions) {
    const { stack, resolver } = options;
    const R = stack.template.Resources;
    const [api] = resourcesOfType([stack], 'AWS::ApiGateway::RestApi');
    const [stage] = resourcesOfType([stack], 'AWS::ApiGateway::Stage');
    if (api === undefined || stage === undefined) throw new Error(`${stack.name} has no REST API with a stage`);
    this.apiId = resolver.string(stack.name, { Ref: api[1] });
    this.stage = String(stage[2].Properties?.StageName);

    const pathOf = (resourceRef: unknown): string => {
      const ref = resourceRef as { Ref?: string };
      if (ref.Ref === undefined) return '';
      const r = R[ref.Ref]?.Properties as { ParentId: unknown; PathPart: string };
      return `${pathOf(r.ParentId)}/${r.PathPart}`;
    };
    this.methods = resourcesOfType([stack], 'AWS::ApiGateway::Method').map(([, logicalId, r]) => {
      const p = r.Properties as Record<string, unknown>;
      const integration = p.Integration as { Type: string; Uri: unknown };
      if (integration.Type !== 'AWS_PROXY') throw new Error(`${logicalId}: integration ${integration.Type} is not run by the assembly test`);
      const params = Object.entries((p.RequestParameters as Record<string, boolean> | undefined) ?? {}).filter(([, required]) => required);
      return {
        logicalId,
        httpMethod: p.HttpMethod as string,
        resourcePath: pathOf(p.ResourceId) || '/',
        authorizationType: p.AuthorizationType as string,
        ...(p.AuthorizerId !== undefined ? { authorizerId: (p.AuthorizerId as { Ref: string }).Ref } : {}),
        requiredParameters: params.map(([name]) => name),
        functionId: functionOfUri(integration.Uri),
      };
    });
    for (const [, id, r] of resourcesOfType([stack], 'AWS::ApiGateway::Authorizer')) {
      const p = r.Properties as Record<string, unknown>;
      if (p.Type !== 'TOKEN') throw new Error(`${id}: authorizer type ${String(p.Type)} is not run by the assembly test`);
      this.#authorizers.set(id, {
        id,
        functionId: functionOfUri(p.AuthorizerUri),
        ...(typeof p.IdentityValidationExpression === 'string' ? { validation: new RegExp(p.IdentityValidationExpression) } : {}),
        identityHeader: String(p.IdentitySource)
          .replace(/^method\.request\.header\./, '')
          .toLowerCase(),
      });
    }
    for (const [, , r] of resourcesOfType([stack], 'AWS::ApiGateway::GatewayResponse')) {
      const p = r.Properties as {
        ResponseType: string;
        StatusCode?: string;
        ResponseParameters?: Record<string, string>;
        ResponseTemplates?: Record<string, string>;
      };
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(p.ResponseParameters ?? {})) headers[k.replace(/^gatewayresponse\.header\./, '')] = v.replace(/^'|'$/g, '');
      this.#responses.set(p.ResponseType, {
        status: Number(p.StatusCode ?? 500),
        headers,
        body: p.ResponseTemplates?.['application/json'] ?? '{"message":null}',
      });
    }
  }

  async start(): Promise<string> {
    const server = createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        process.stderr.write(`assembly REST API: ${String(err)}\n`);
        if (!res.headersSent) this.#gateway(res, 'DEFAULT_5XX');
        else res.destroy();
      });
    });
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/${this.stage}`;
    return this.url;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #gateway(res: ServerResponse, type: string): void {
    const spec = this.#responses.get(type) ?? this.#responses.get(type.startsWith('DEFAULT') ? type : 'DEFAULT_5XX');
    if (spec === undefined) throw new Error(`the template has no gateway response ${type}`);
    res.writeHead(spec.status, { 'content-type': 'application/json', ...spec.headers, 'x-amzn-ErrorType': type });
    res.end(spec.body);
  }

  #match(method: string, path: string): { method: ApiMethod; pathParameters: Record<string, string> } | undefined {
    const segments = path.split('/').filter((s) => s !== '');
    for (const m of this.methods) {
      if (m.httpMethod !== method && m.httpMethod !== 'ANY') continue;
      const pattern = m.resourcePath.split('/').filter((s) => s !== '');
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < pattern.length && ok; i++) {
        const p = pattern[i] as string;
        const greedy = /^\{(.+)\+\}$/.exec(p);
        if (greedy) {
          if (i >= segments.length) ok = false;
          else params[greedy[1] as string] = segments.slice(i).map(decodeURIComponent).join('/');
          if (ok) return { method: m, pathParameters: params };
        }
        const name = /^\{(.+)\}$/.exec(p);
        if (i >= segments.length) ok = false;
        else if (name) params[name[1] as string] = decodeURIComponent(segments[i] as string);
        else if (p !== segments[i]) ok = false;
      }
      if (ok && pattern.length === segments.length) return { method: m, pathParameters: params };
    }
    return undefined;
  }

  #fn(id: string): LambdaFunction {
    const fn = this.options.functions.get(id);
    if (fn === undefined) throw new Error(`the API names function ${id}, which the template does not define`);
    return fn;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const bodyBytes = Buffer.concat(chunks);
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://api');
    const prefix = `/${this.stage}`;
    if (!url.pathname.startsWith(`${prefix}/`) && url.pathname !== prefix) return this.#gateway(res, 'MISSING_AUTHENTICATION_TOKEN');
    const path = url.pathname.slice(prefix.length) || '/';
    const method = (req.method ?? 'GET').toUpperCase();
    const match = this.#match(method, path);
    if (match === undefined) return this.#gateway(res, 'MISSING_AUTHENTICATION_TOKEN');
    const m = match.method;
    this.served.set(m.logicalId, (this.served.get(m.logicalId) ?? 0) + 1);

    const headers: Record<string, string> = {};
    const multiValueHeaders: Record<string, string[]> = {};
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      headers[name] = req.rawHeaders[i + 1] as string;
      (multiValueHeaders[name] ??= []).push(req.rawHeaders[i + 1] as string);
    }
    const query: Record<string, string> = {};
    const multiQuery: Record<string, string[]> = {};
    for (const [k, v] of url.searchParams) {
      query[k] = v;
      (multiQuery[k] ??= []).push(v);
    }
    for (const parameter of m.requiredParameters) {
      const [, , where, name] = parameter.split('.') as [string, string, string, string];
      const present =
        where === 'path'
          ? match.pathParameters[name] !== undefined
          : where === 'querystring'
            ? query[name] !== undefined
            : req.headers[name.toLowerCase()] !== undefined;
      if (!present) return this.#gateway(res, 'BAD_REQUEST_PARAMETERS');
    }
    const methodArn = `arn:aws:execute-api:${REGION}:${ACCOUNT_ID}:${this.apiId}/${this.stage}/${method}${path}`;
    const resourceArn = `arn:aws:execute-api:${REGION}:${ACCOUNT_ID}:${this.apiId}/${this.stage}/${method}${m.resourcePath}`;

    let authorizer: Record<string, string> | null = null;
    if (m.authorizationType === 'CUSTOM') {
      const spec = this.#authorizers.get(m.authorizerId ?? '');
      if (spec === undefined) throw new Error(`${m.logicalId}: no authorizer ${m.authorizerId}`);
      const token = req.headers[spec.identityHeader];
      if (typeof token !== 'string' || token === '' || (spec.validation !== undefined && !spec.validation.test(token)))
        return this.#gateway(res, 'UNAUTHORIZED');
      this.options.authorizeInvoke(
        spec.functionId,
        'apigateway.amazonaws.com',
        `arn:aws:execute-api:${REGION}:${ACCOUNT_ID}:${this.apiId}/authorizers/${this.options.resolver.string(this.options.stack.name, { Ref: spec.id })}`,
      );
      let result: APIGatewayAuthorizerResult;
      try {
        result = (await this.#fn(spec.functionId).invoke({ type: 'TOKEN', authorizationToken: token, methodArn })) as APIGatewayAuthorizerResult;
      } catch (err) {
        return this.#gateway(res, err instanceof Error && /Unauthorized/.test(err.message) ? 'UNAUTHORIZED' : 'AUTHORIZER_FAILURE');
      }
      if (typeof result?.principalId !== 'string') return this.#gateway(res, 'AUTHORIZER_CONFIGURATION_ERROR');
      if (!policyAllows(result.policyDocument, methodArn)) return this.#gateway(res, 'ACCESS_DENIED');
      authorizer = { principalId: result.principalId };
      for (const [k, v] of Object.entries(result.context ?? {})) if (v !== null && v !== undefined) authorizer[k] = String(v);
    } else if (m.authorizationType !== 'NONE') {
      throw new Error(`${m.logicalId}: authorization type ${m.authorizationType} is not run by the assembly test`);
    }

    let body: string | null = null;
    let isBase64Encoded = false;
    if (bodyBytes.length > 0) {
      try {
        body = new TextDecoder('utf-8', { fatal: true }).decode(bodyBytes);
      } catch {
        body = bodyBytes.toString('base64');
        isBase64Encoded = true;
      }
    }
    const now = new Date();
    const event = {
      resource: m.resourcePath,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters: url.searchParams.size > 0 ? query : null,
      multiValueQueryStringParameters: url.searchParams.size > 0 ? multiQuery : null,
      pathParameters: Object.keys(match.pathParameters).length > 0 ? match.pathParameters : null,
      stageVariables: null,
      requestContext: {
        accountId: ACCOUNT_ID,
        apiId: this.apiId,
        authorizer,
        domainName: req.headers.host ?? '127.0.0.1',
        domainPrefix: this.apiId,
        extendedRequestId: requestId,
        httpMethod: method,
        identity: { sourceIp: req.socket.remoteAddress ?? '127.0.0.1', userAgent: req.headers['user-agent'] ?? null },
        path: `${prefix}${path}`,
        protocol: `HTTP/${req.httpVersion}`,
        requestId,
        requestTimeEpoch: now.getTime(),
        resourceId: m.logicalId,
        resourcePath: m.resourcePath,
        stage: this.stage,
      },
      body,
      isBase64Encoded,
    };
    this.options.authorizeInvoke(m.functionId, 'apigateway.amazonaws.com', resourceArn);
    let result: {
      statusCode?: number;
      headers?: Record<string, unknown>;
      multiValueHeaders?: Record<string, unknown[]>;
      body?: string;
      isBase64Encoded?: boolean;
    };
    try {
      result = (await this.#fn(m.functionId).invoke(event)) as typeof result;
    } catch (err) {
      process.stderr.write(`assembly REST API: ${m.functionId} failed: ${String(err)}\n`);
      return this.#gateway(res, err instanceof Error && /Sandbox\.Timedout/.test(err.message) ? 'INTEGRATION_TIMEOUT' : 'DEFAULT_5XX');
    }
    if (typeof result?.statusCode !== 'number') return this.#gateway(res, 'DEFAULT_5XX');
    const out: Record<string, string | string[]> = { 'x-amzn-RequestId': requestId };
    for (const [k, v] of Object.entries(result.headers ?? {})) out[k] = String(v);
    for (const [k, vs] of Object.entries(result.multiValueHeaders ?? {})) out[k] = vs.map(String);
    res.writeHead(result.statusCode, out);
    res.end(result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : Buffer.from(result.body ?? '', 'utf8'));
  }
}
