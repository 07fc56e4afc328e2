/**
 * The Lambda events the cold-start probes invoke the bundles with
 * (bench/sections/bundles.ts, bench/compare-bundles.ts): each function's
 * first invocation answers without a network (every store call fails at once
 * against loopback), so the events only need to get past validation.
 */
import { encodeAuthorizerContext } from '../../lib/auth/authorizer-context.js';
import { ROUTES } from '../../lib/http/routes.js';

const caller = {
  principal: { id: 'bench', kind: 'user' as const },
  tenants: ['acme'],
  scopes: ['aip:actions:read', 'aip:actions:write', 'aip:operator'],
  issuer: 'https://issuer.bench/',
  expires_at: '2099-01-01T00:00:00.000Z',
};
/** An API Gateway proxy event for a route of the table (its path ID `bench-1`), authorized as the bench's caller. */
export const routeEvent = (routeId: string) => {
  const route = (ROUTES as Record<string, { method: string; path: string; auth: string }>)[routeId];
  if (route === undefined) throw new Error(`no route ${routeId}`);
  const path = route.path.replace('{id}', 'bench-1');
  // GET /v1/transactions selects by query; every other route's ID is in its path.
  const query = routeId === 'getTransaction' ? { transaction_id: 'bench-1' } : null;
  return {
    resource: route.path,
    path,
    httpMethod: route.method,
    headers: { accept: 'application/json' },
    multiValueHeaders: { accept: ['application/json'] },
    queryStringParameters: query,
    multiValueQueryStringParameters: query === null ? null : Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]])),
    pathParameters: route.path.includes('{id}') ? { id: 'bench-1' } : null,
    stageVariables: null,
    body: null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      authorizer: route.auth === 'jwt' ? { ...encodeAuthorizerContext(caller), principalId: 'bench' } : null,
      httpMethod: route.method,
      path,
      protocol: 'HTTP/1.1',
      requestId: 'bench',
      requestTimeEpoch: 0,
      resourceId: 'bench',
      resourcePath: route.path,
      stage: 'v1',
      identity: { sourceIp: '127.0.0.1', userAgent: 'bench' },
    },
  };
};
/**
 * POST /v1/actions with an execute of the payments connector's charge (the submit route: body validation, admission,
 * then a store call that fails). `id`: the action ID and idempotency key (default `bench-1`); `waitSeconds`: sent as
 * `Prefer: wait=<n>` (the client waits for the settlement).
 */
export const submitEvent = (options: { readonly id?: string; readonly waitSeconds?: number } = {}) => {
  const base = routeEvent('submitAction');
  const id = options.id ?? 'bench-1';
  const prefer = options.waitSeconds !== undefined ? { prefer: `wait=${options.waitSeconds}` } : {};
  return {
    ...base,
    headers: { accept: 'application/json', 'content-type': 'application/json', ...prefer },
    multiValueHeaders: {
      accept: ['application/json'],
      'content-type': ['application/json'],
      ...(options.waitSeconds !== undefined ? { prefer: [`wait=${options.waitSeconds}`] } : {}),
    },
    body: JSON.stringify({
      id,
      capability_id: 'payments.charge',
      input: { amount: 1250, currency: 'eur', customer: 'cus_bench', description: 'benchmark' },
      idempotency_key: id,
      transaction: { mode: 'execute' },
    }),
  };
};
/** An SQS event of one invoke or reconcile message. */
export const sqsEvent = (kind: 'invoke' | 'reconcile') => ({
  Records: [
    {
      messageId: 'bench-1',
      receiptHandle: 'bench',
      body: JSON.stringify(
        kind === 'invoke'
          ? { kind: 'invoke', tenant_id: 'acme', action_id: 'bench-1', fence: 1, attempt: 1 }
          : { kind: 'reconcile', tenant_id: 'acme', transaction_id: 'bench-1' },
      ),
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'bench', ApproximateFirstReceiveTimestamp: '0' },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:aip-bench-${kind}`,
      awsRegion: 'us-east-1',
    },
  ],
});

/** A REQUEST authorizer event with a malformed bearer token (denied without a network). */
export const authorizerEvent = () => ({
  type: 'REQUEST',
  methodArn: 'arn:aws:execute-api:us-east-1:000000000000:bench/v1/GET/v1/health',
  headers: { Authorization: 'Bearer not-a-jwt' },
});

/**
 * POST /v1/mcp with a tools/call of `payments.charge.execute` (the MCP function's representative
 * first invocation: it composes the Runtime with its connectors, then its first store call fails at once).
 * `idempotencyKey`: a tools/call that submits a fresh action with the submit's input (the `mcp-execute`
 * row, on stores that answer: each key is another action).
 */
export const mcpToolCallEvent = (options: { readonly idempotencyKey?: string } = {}) => {
  const base = routeEvent('mcp');
  const args =
    options.idempotencyKey === undefined
      ? { input: { amount: 1250, currency: 'eur' } }
      : { input: { amount: 1250, currency: 'eur', customer: 'cus_bench', description: 'benchmark' }, idempotency_key: options.idempotencyKey };
  const accept = 'application/json, text/event-stream';
  return {
    ...base,
    headers: { accept, 'content-type': 'application/json', prefer: 'wait=0' },
    multiValueHeaders: { accept: [accept], 'content-type': ['application/json'], prefer: ['wait=0'] },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'payments.charge.execute', arguments: args },
    }),
  };
};
