/**
 * The local stack's HTTPS API stand-in: a node:http server on loopback that
 * does what API Gateway (REST API, Lambda proxy integration, Lambda TOKEN
 * authorizer) does, with the SAME handler and authorizer code the Lambdas run.
 *
 * Per request, in API Gateway's order:
 * 1. request size: more than 10 MB (API Gateway's hard limit) → 413 (REQUEST_TOO_LARGE);
 * 2. route match against lib/http/routes.ts: unknown path or method →
 *    404 (MISSING_AUTHENTICATION_TOKEN, as the stack maps it);
 * 3. for routes with `auth: jwt`: no Authorization header, or one that fails
 *    the identity validation expression → 401 without calling the authorizer;
 *    otherwise the authorizer runs on EVERY request (no result caching):
 *    it throws `Unauthorized` → 401, throws anything else → 503
 *    (AUTHORIZER_FAILURE), answers a policy that does not allow the method
 *    ARN → 403 (ACCESS_DENIED);
 * 4. the proxy event: `resource`, `path`, `httpMethod`, `headers` and
 *    `multiValueHeaders` (original casing), `queryStringParameters` and
 *    `multiValueQueryStringParameters`, decoded `pathParameters`,
 *    `requestContext` (with `authorizer` = the policy's context, as strings,
 *    plus `principalId`), `body` (base64 with `isBase64Encoded` when the bytes
 *    are not UTF-8);
 * 5. the handler, with a Lambda-like context whose remaining time counts down
 *    from the route's timeout; more than 29 s → 504 (INTEGRATION_TIMEOUT);
 *    a thrown error or a malformed proxy result → 500 (INTEGRATION_FAILURE).
 *
 * Gateway-generated answers are the problem documents of
 * lib/http/gateway-responses.ts, exactly as the deployed stack sends them.
 *
 * Optionally serves a JWKS (the dev signing key's) at /.well-known/jwks.json.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayAuthorizerResult, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { JSONWebKeySet } from 'jose';
import { policyAllows } from '../../lib/auth/policy.js';
import { createTokenVerifier, type TokenVerifier } from '../../lib/auth/verifier.js';
import { devVerifierConfig, type DevKeys } from '../auth/keys.js';
import { gatewayProblem, gatewayResponse, type GatewayResponseType } from '../../lib/http/gateway-responses.js';
import { PROBLEM_CONTENT_TYPE } from '../../packages/connector-sdk/src/protocol/problem.js';
import { AUTHORIZATION_HEADER_PATTERN, createAuthorizerHandler, type AuthorizerHandler } from '../../functions/authorizer.js';
import { createHttpHandlers } from '../../functions/http/index.js';
import { matchRoute, ROUTE_LIST, type RouteDefinition, type RouteId } from '../../lib/http/routes.js';
import type { AipHttpEvent } from '../../functions/shared/http.js';
import { SILENT_LOGGER, errorFacts, type LoggerLike } from '../../functions/shared/logger.js';
import type { Observability } from '../../functions/shared/observability.js';
import type { HttpDeps, ProxyHandler } from '../../functions/shared/route-handler.js';

/** API Gateway's payload limit. */
export const API_GATEWAY_MAX_BYTES = 10 * 1024 * 1024;
/** API Gateway's maximum integration timeout. */
export const API_GATEWAY_TIMEOUT_MS = 29_000;
export const LOCAL_ACCOUNT_ID = '000000000000';
export const LOCAL_API_ID = 'local-api';
export const LOCAL_REGION = 'local';

export interface LocalHttpServerOptions {
  /** @default 0 (an ephemeral port) */
  readonly port?: number;
  /** @default 127.0.0.1 */
  readonly host?: string;
  /** API Gateway stage name (appears in method ARNs). @default 'local' */
  readonly stage?: string;
  /** Dependencies of the route handlers (the runtime, observability, clock, body limit). */
  readonly http: HttpDeps;
  /** Replace individual route handlers (tests). */
  readonly handlers?: Partial<Record<RouteId, ProxyHandler>>;
  /** The authorizer: a verifier (wrapped in the real authorizer handler) or a ready handler. */
  readonly auth: { readonly verifier: TokenVerifier } | { readonly authorizer: AuthorizerHandler };
  /** When set, served at GET /.well-known/jwks.json (no auth). */
  readonly jwks?: JSONWebKeySet;
  /** @default 10 MiB */
  readonly maxRequestBytes?: number;
  /** @default 29 000 */
  readonly integrationTimeoutMs?: number;
  /** Where gateway-level events are logged (never bodies or tokens). @default silent */
  readonly logger?: LoggerLike;
  /**
   * Local-only paths served before the route table is consulted (the
   * operator console and its development sign-in, dev/local/console.ts).
   * Answers true when it wrote the response. Never part of the deployed API.
   */
  readonly localRoutes?: LocalRoutes;
}

/** A local-only request handler: the request, its response, and the already-read body. */
export type LocalRoutes = (
  request: { readonly method: string; readonly path: string; readonly headers: IncomingMessage['headers']; readonly body: Buffer },
  res: ServerResponse,
) => Promise<boolean>;

export interface LocalHttpServer {
  /** Base URL, e.g. `http://127.0.0.1:4010` (no trailing slash). */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Reads the body. Past `max` bytes the rest is drained and discarded (so the
 * client, still sending, reliably reads the 413) and `undefined` is returned.
 */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) chunks.push(chunk);
      else chunks.length = 0;
    });
    req.on('end', () => resolve(size > max ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendGateway(res: ServerResponse, type: GatewayResponseType, requestId: string, extraHeaders: Record<string, string> = {}): void {
  const spec = gatewayResponse(type);
  const body = JSON.stringify(gatewayProblem(spec));
  res.writeHead(spec.status, {
    'Content-Type': PROBLEM_CONTENT_TYPE,
    'Cache-Control': 'no-store',
    'x-amzn-RequestId': requestId,
    'x-amzn-ErrorType': type,
    ...spec.headers,
    ...extraHeaders,
  });
  res.end(body);
}

function headerMaps(req: IncomingMessage): { headers: Record<string, string>; multi: Record<string, string[]> } {
  const headers: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    // Header names keep the client's casing, as API Gateway forwards them; the same name in other casings is merged.
    const existing = Object.keys(multi).find((k) => k.toLowerCase() === name.toLowerCase()) ?? name;
    const list = multi[existing];
    if (list) list.push(value);
    else multi[existing] = [value];
    headers[existing] = value;
  }
  return { headers, multi };
}

function queryMaps(search: URLSearchParams): { single: Record<string, string> | null; multi: Record<string, string[]> | null } {
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  let any = false;
  for (const [k, v] of search) {
    any = true;
    const define = <T>(o: Record<string, T>, val: T) => Object.defineProperty(o, k, { value: val, enumerable: true, writable: true, configurable: true });
    const list = Object.hasOwn(multi, k) ? (multi[k] as string[]) : [];
    list.push(v);
    define(multi, list);
    define(single, v);
  }
  return any ? { single, multi } : { single: null, multi: null };
}

function requestTime(d: Date): string {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getUTCDate())}/${months[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

export function lambdaContext(functionName: string, timeoutMs: number, requestId: string = randomUUID()): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

function isProxyResult(v: unknown): v is APIGatewayProxyResult {
  return (
    typeof v === 'object' &&
    v !== null &&
    Number.isInteger((v as { statusCode?: unknown }).statusCode) &&
    (v as { statusCode: number }).statusCode >= 100 &&
    (v as { statusCode: number }).statusCode <= 599
  );
}

/** The authorizer context as API Gateway hands it to the integration: primitive values only, as strings. */
function authorizerContext(result: APIGatewayAuthorizerResult, latencyMs: number): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(result.context ?? {})) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else if (v !== null && v !== undefined) return undefined;
  }
  out.principalId = result.principalId;
  out.integrationLatency = latencyMs;
  return out;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
const TIMED_OUT = Symbol('timed out');

/** `auth` and `jwks` options that accept the dev signing key's tokens (see dev/auth). */
export function devAuthOptions(keys: DevKeys): Pick<LocalHttpServerOptions, 'auth' | 'jwks'> {
  return { auth: { verifier: createTokenVerifier(devVerifierConfig(keys)) }, jwks: keys.jwks };
}

export async function startLocalHttpServer(options: LocalHttpServerOptions): Promise<LocalHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const stage = options.stage ?? 'local';
  const maxBytes = options.maxRequestBytes ?? API_GATEWAY_MAX_BYTES;
  const integrationTimeout = options.integrationTimeoutMs ?? API_GATEWAY_TIMEOUT_MS;
  const logger = options.logger ?? SILENT_LOGGER;
  const handlers: Record<RouteId, ProxyHandler> = { ...createHttpHandlers(options.http), ...options.handlers };
  const observability: Observability | undefined = options.http.observability;
  const authorizer: AuthorizerHandler =
    'authorizer' in options.auth
      ? options.auth.authorizer
      : createAuthorizerHandler({ verifier: options.auth.verifier, ...(observability ? { observability } : {}) });
  const headerPattern = new RegExp(AUTHORIZATION_HEADER_PATTERN);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID();
    const method = (req.method ?? 'GET').toUpperCase();
    const url = new URL(req.url ?? '/', 'http://local');
    const path = url.pathname;

    const bodyBytes = await readBody(req, maxBytes);
    if (bodyBytes === undefined) {
      sendGateway(res, 'REQUEST_TOO_LARGE', requestId);
      return;
    }

    if (options.jwks && method === 'GET' && path === '/.well-known/jwks.json') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=60' });
      res.end(JSON.stringify(options.jwks));
      return;
    }

    if (options.localRoutes !== undefined && (await options.localRoutes({ method, path, headers: req.headers, body: bodyBytes }, res))) return;

    const match = matchRoute(method, path, ROUTE_LIST);
    if (match === undefined || !('route' in match)) {
      sendGateway(res, 'MISSING_AUTHENTICATION_TOKEN', requestId);
      return;
    }
    const route: RouteDefinition = match.route;
    const { headers, multi } = headerMaps(req);
    const methodArn = `arn:aws:execute-api:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:${LOCAL_API_ID}/${stage}/${method}${path}`;

    let authorizerCtx: Record<string, unknown> | null = null;
    if (route.auth === 'jwt') {
      const authHeader = Object.entries(headers).find(([k]) => k.toLowerCase() === 'authorization')?.[1];
      if (authHeader === undefined || authHeader.length === 0 || !headerPattern.test(authHeader)) {
        sendGateway(res, 'UNAUTHORIZED', requestId);
        return;
      }
      const t0 = Date.now();
      let result: APIGatewayAuthorizerResult;
      try {
        result = await authorizer({ type: 'TOKEN', authorizationToken: authHeader, methodArn }, lambdaContext('aip-local-authorizer', 10_000));
      } catch (err) {
        if (err instanceof Error && err.message === 'Unauthorized') {
          sendGateway(res, 'UNAUTHORIZED', requestId);
        } else {
          logger.error('local gateway: authorizer failed', errorFacts(err));
          sendGateway(res, 'AUTHORIZER_FAILURE', requestId);
        }
        return;
      }
      const ctx =
        typeof result === 'object' && result !== null && typeof result.principalId === 'string' ? authorizerContext(result, Date.now() - t0) : undefined;
      if (ctx === undefined) {
        sendGateway(res, 'AUTHORIZER_CONFIGURATION_ERROR', requestId);
        return;
      }
      if (!policyAllows(result.policyDocument, methodArn)) {
        sendGateway(res, 'ACCESS_DENIED', requestId);
        return;
      }
      authorizerCtx = ctx;
    }

    let body: string | null = null;
    let isBase64Encoded = false;
    if (bodyBytes.length > 0) {
      try {
        body = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bodyBytes);
      } catch {
        body = bodyBytes.toString('base64');
        isBase64Encoded = true;
      }
    }
    const query = queryMaps(url.searchParams);
    const now = new Date();
    const event: AipHttpEvent = {
      resource: route.path,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders: multi,
      queryStringParameters: query.single,
      multiValueQueryStringParameters: query.multi,
      pathParameters: match.pathParameters,
      stageVariables: null,
      requestContext: {
        accountId: LOCAL_ACCOUNT_ID,
        apiId: LOCAL_API_ID,
        authorizer: authorizerCtx,
        domainName: req.headers.host ?? `${host}`,
        domainPrefix: LOCAL_API_ID,
        extendedRequestId: requestId,
        httpMethod: method,
        identity: {
          accessKey: null,
          accountId: null,
          apiKey: null,
          apiKeyId: null,
          caller: null,
          clientCert: null,
          cognitoAuthenticationProvider: null,
          cognitoAuthenticationType: null,
          cognitoIdentityId: null,
          cognitoIdentityPoolId: null,
          principalOrgId: null,
          sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
          user: null,
          userAgent: req.headers['user-agent'] ?? null,
          userArn: null,
        },
        path,
        protocol: `HTTP/${req.httpVersion}`,
        requestId,
        requestTime: requestTime(now),
        requestTimeEpoch: now.getTime(),
        resourceId: route.id,
        resourcePath: route.path,
        stage,
      },
      body,
      isBase64Encoded,
    };

    const handler = handlers[route.id as RouteId];
    const context = lambdaContext(`aip-local-${route.id}`, Math.min(route.timeoutSeconds * 1000, integrationTimeout), requestId);
    let result: APIGatewayProxyResult | typeof TIMED_OUT;
    try {
      result = await withTimeout(handler(event, context), integrationTimeout);
    } catch (err) {
      logger.error('local gateway: handler threw', errorFacts(err));
      sendGateway(res, 'INTEGRATION_FAILURE', requestId);
      return;
    }
    if (result === TIMED_OUT) {
      sendGateway(res, 'INTEGRATION_TIMEOUT', requestId);
      return;
    }
    if (!isProxyResult(result)) {
      logger.error('local gateway: malformed proxy result', { route: route.id });
      sendGateway(res, 'INTEGRATION_FAILURE', requestId);
      return;
    }
    const outHeaders: Record<string, string | string[]> = { 'x-amzn-RequestId': requestId };
    for (const [k, v] of Object.entries(result.headers ?? {})) outHeaders[k] = String(v);
    for (const [k, vs] of Object.entries(result.multiValueHeaders ?? {})) outHeaders[k] = vs.map(String);
    const payload = result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : Buffer.from(result.body ?? '', 'utf8');
    res.writeHead(result.statusCode, outHeaders);
    res.end(payload);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error('local gateway: request failed', errorFacts(err));
      if (!res.headersSent) sendGateway(res, 'DEFAULT_5XX', randomUUID());
      else res.destroy();
    });
  });
  // Idle keep-alive sockets are closed after a minute, not seconds: a client reuses an idle socket until
  // shortly before the announced timeout, and on a busy machine (a late event loop) that margin was not
  // enough: the request met the server's close, as ECONNRESET. stop() closes every connection anyway.
  server.keepAliveTimeout = 65_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
