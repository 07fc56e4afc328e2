/**
 * Test helpers for the HTTP edge: API Gateway REST proxy events with an
 * authorizer context, a Lambda context, a fake wait clock, a recording stub
 * of the edge's own RuntimeApi interface, and problem-body assertions.
 *
 * The stub stands in for the runtime ONLY in these unit tests of the thin
 * edge; the end-to-end tests run the real runtime behind the same handlers.
 */
import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import { expect } from 'vitest';
import { encodeAuthorizerContext } from '../../../lib/auth/authorizer-context.js';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { ProblemSchema, type Problem } from '../../../packages/connector-sdk/src/protocol/problem.js';
import type { AipHttpEvent } from '../../../functions/shared/http.js';
import { SILENT_LOGGER, type LoggerLike } from '../../../functions/shared/logger.js';
import type { Observability } from '../../../functions/shared/observability.js';
import type { HttpDeps } from '../../../functions/shared/route-handler.js';
import type { RuntimeApi } from '../../../functions/shared/runtime-api.js';
import type { WaitClock } from '../../../functions/shared/wait.js';

export const ALICE: CallerIdentity = {
  principal: { id: 'alice', kind: 'user' },
  tenants: ['acme'],
  scopes: ['aip:actions:read', 'aip:actions:write'],
  issuer: 'https://issuer.test/',
  expires_at: '2030-01-01T00:00:00.000Z',
};

export interface EventInput {
  method?: string;
  resource?: string;
  path?: string;
  pathParameters?: Record<string, string> | null;
  query?: Record<string, string | string[]>;
  headers?: Record<string, string>;
  body?: string | null;
  isBase64Encoded?: boolean;
  /** The verified caller; `null` for no authorizer context at all. */
  caller?: CallerIdentity | null;
  /** Raw authorizer context (overrides caller). */
  authorizer?: Record<string, unknown> | null;
  stagePrefix?: string;
}

export function proxyEvent(input: EventInput = {}): AipHttpEvent {
  const method = input.method ?? 'GET';
  const path = input.path ?? '/v1/actions';
  const headers = input.headers ?? {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(headers)) multiValueHeaders[k] = [v];
  let single: Record<string, string> | null = null;
  let multi: Record<string, string[]> | null = null;
  if (input.query) {
    single = {};
    multi = {};
    for (const [k, v] of Object.entries(input.query)) {
      const list = Array.isArray(v) ? v : [v];
      multi[k] = list;
      single[k] = list[list.length - 1] as string;
    }
  }
  const caller = input.caller === undefined ? ALICE : input.caller;
  const authorizer =
    input.authorizer !== undefined
      ? input.authorizer
      : caller === null
        ? null
        : { ...encodeAuthorizerContext(caller), principalId: caller.principal.id, integrationLatency: 3 };
  return {
    resource: input.resource ?? path,
    path,
    httpMethod: method,
    headers,
    multiValueHeaders,
    queryStringParameters: single,
    multiValueQueryStringParameters: multi,
    pathParameters: input.pathParameters ?? null,
    stageVariables: null,
    body: input.body ?? null,
    isBase64Encoded: input.isBase64Encoded ?? false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      authorizer,
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
        sourceIp: '127.0.0.1',
        user: null,
        userAgent: 'vitest',
        userArn: null,
      },
      path: `${input.stagePrefix ?? ''}${path}`,
      protocol: 'HTTP/1.1',
      requestId: 'req-1',
      requestTimeEpoch: 0,
      resourceId: 'r',
      resourcePath: input.resource ?? path,
      stage: 'test',
    },
  };
}

export function jsonEvent(input: EventInput & { json: unknown }): AipHttpEvent {
  return proxyEvent({ method: 'POST', ...input, headers: { 'Content-Type': 'application/json', ...input.headers }, body: JSON.stringify(input.json) });
}

export function lambdaContext(remainingMs = 30_000): Context {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'test',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:test',
    memoryLimitInMB: '512',
    awsRequestId: 'aws-req-1',
    logGroupName: 'g',
    logStreamName: 's',
    getRemainingTimeInMillis: () => remainingMs,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** A clock whose sleep advances time instantly (no real waiting in unit tests). */
export function fakeClock(start = 1_000_000): WaitClock & { sleeps: number[] } {
  let t = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      t += ms;
    },
  };
}

export interface Call {
  method: keyof RuntimeApi;
  args: unknown[];
}

/** A RuntimeApi whose methods record their calls and delegate to `impl` (unimplemented → throws). */
export function stubRuntime(impl: Partial<RuntimeApi> = {}): RuntimeApi & { calls: Call[] } {
  const calls: Call[] = [];
  const methods: (keyof RuntimeApi)[] = [
    'submit',
    'getAction',
    'getActionResult',
    'cancel',
    'readStream',
    'getTransaction',
    'listOperator',
    'listApprovals',
    'getApproval',
    'decideApproval',
    'capabilities',
    'health',
  ];
  const out = { calls } as RuntimeApi & { calls: Call[] };
  for (const m of methods) {
    (out as unknown as Record<string, unknown>)[m] = async (...args: unknown[]) => {
      calls.push({ method: m, args });
      const f = impl[m] as ((...a: unknown[]) => Promise<unknown>) | undefined;
      if (!f) throw new Error(`stub runtime: ${m} not implemented`);
      return f(...args);
    };
  }
  return out;
}

export function recordingLogger(): LoggerLike & { lines: { level: string; message: string; extra: unknown[] }[] } {
  const lines: { level: string; message: string; extra: unknown[] }[] = [];
  const at =
    (level: string) =>
    (message: string, ...extra: unknown[]) =>
      lines.push({ level, message, extra });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export function deps(runtime: RuntimeApi, extra: Partial<HttpDeps> = {}): HttpDeps {
  const observability: Observability = { logger: SILENT_LOGGER };
  return { runtime, observability, clock: fakeClock(), ...extra };
}

export function body(res: APIGatewayProxyResult): unknown {
  return JSON.parse(res.body) as unknown;
}

export function header(res: APIGatewayProxyResult, name: string): string | undefined {
  const entry = Object.entries(res.headers ?? {}).find(([k]) => k.toLowerCase() === name.toLowerCase());
  return entry === undefined ? undefined : String(entry[1]);
}

/** Asserts an RFC 9457 problem response with this status (and code); returns the problem. */
export function expectProblem(res: APIGatewayProxyResult, status: number, code?: string): Problem {
  expect(res.statusCode).toBe(status);
  expect(header(res, 'content-type')).toBe('application/problem+json');
  const problem = ProblemSchema.parse(body(res));
  expect(problem.status).toBe(status);
  if (code !== undefined) expect(problem.code).toBe(code);
  expect(problem.type).toBe(`urn:aip:error:${problem.code}`);
  return problem;
}
