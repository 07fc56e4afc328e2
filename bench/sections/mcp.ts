/**
 * Section "mcp": DynamoDB requests of an MCP call beside the REST call it
 * mirrors, on DynamoDB Local with the metered Runtime of the cost section
 * (bench/lib/harness.ts).
 *
 * Both run through their deployed Lambda handlers, in process, with proxy
 * events authorized as the harness's caller: `POST /v1/actions` and
 * `GET /v1/actions/{id}` (functions/http/actions.ts) against `POST /v1/mcp`
 * (functions/http/mcp.ts) with the matching JSON-RPC message. Neither waits
 * (`Prefer: wait=0` for the MCP call; no `Prefer` for REST): the waits poll
 * the same functions (functions/shared/wait.ts), so what is compared is
 * what each front door adds. The worker's attempt between the submit and
 * the later calls runs unmetered. Counts are properties of the code: the
 * figures are those of the last of `runs` rounds (they agree across rounds).
 */
import type { Context } from 'aws-lambda';
import { encodeAuthorizerContext } from '../../lib/auth/authorizer-context.js';
import { ROUTES } from '../../lib/http/routes.js';
import { createGetActionHandler, createSubmitActionHandler } from '../../functions/http/actions.js';
import { createMcpPostHandler } from '../../functions/http/mcp.js';
import { SILENT_LOGGER } from '../../functions/shared/logger.js';
import { toRuntimeApi } from '../../functions/shared/production-runtime.js';
import type { AipHttpEvent } from '../../functions/shared/http.js';
import type { HttpDeps } from '../../functions/shared/route-handler.js';
import type { CallerIdentity } from '../../lib/auth/identity.js';
import { uid, type Harness } from '../lib/harness.js';
import type { CallRecord } from '../lib/meter.js';

export interface McpCallFigures {
  readonly id: string;
  readonly label: string;
  readonly rest_reads: number;
  readonly mcp_reads: number;
  readonly rest_writes: number;
  readonly mcp_writes: number;
  /** mcp_reads − rest_reads. */
  readonly extra_reads: number;
}

export interface McpFigures {
  readonly calls: McpCallFigures[];
  readonly max_extra_reads: number;
}

type RouteId = keyof typeof ROUTES;

function event(
  caller: CallerIdentity,
  routeId: RouteId,
  options: { body?: unknown; path?: string; pathId?: string; headers?: Record<string, string> },
): AipHttpEvent {
  const route = ROUTES[routeId];
  const path = options.path ?? route.path.replace('{id}', options.pathId ?? '');
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...options.headers };
  const built = {
    resource: route.path,
    path,
    httpMethod: route.method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: options.pathId !== undefined ? { id: options.pathId } : null,
    stageVariables: null,
    body: options.body === undefined ? null : JSON.stringify(options.body),
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      authorizer: { ...encodeAuthorizerContext(caller), principalId: caller.principal.id },
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
  // The fields the handlers read; API Gateway's other identity fields do not matter here.
  return built as unknown as AipHttpEvent;
}

const context: Context = {
  callbackWaitsForEmptyEventLoop: true,
  functionName: 'bench',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:bench',
  memoryLimitInMB: '512',
  awsRequestId: 'bench',
  logGroupName: 'bench',
  logStreamName: 'bench',
  getRemainingTimeInMillis: () => 29_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

const MCP_HEADERS = { accept: 'application/json, text/event-stream', prefer: 'wait=0' };

function rpc(method: string, params: Record<string, unknown>) {
  return { jsonrpc: '2.0', id: 1, method, params };
}

function count(calls: readonly CallRecord[]): { reads: number; writes: number } {
  const dynamo = calls.filter((c) => c.service === 'dynamodb');
  return { reads: dynamo.filter((c) => c.kind === 'read').length, writes: dynamo.filter((c) => c.kind === 'write').length };
}

export async function runMcpSection(h: Harness, runs: number, log: (line: string) => void): Promise<McpFigures> {
  const deps: HttpDeps = { runtime: toRuntimeApi(h.runtime), observability: { logger: SILENT_LOGGER } };
  const submit = createSubmitActionHandler(deps);
  const get = createGetActionHandler(deps);
  const mcp = createMcpPostHandler(deps);

  /** DynamoDB requests of one handler call; fails when the answer is not the expected status. */
  const metered = async (what: string, call: () => Promise<{ statusCode: number; body: string }>, status: number) => {
    const from = h.meter.calls.length;
    const res = await call();
    if (res.statusCode !== status) throw new Error(`mcp section: ${what} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    return { ...count(h.meter.calls.slice(from)), body: JSON.parse(res.body) as Record<string, any> };
  };

  let figures: McpCallFigures[] = [];
  for (let round = 0; round < runs; round++) {
    const row = (id: string, label: string, rest: { reads: number; writes: number }, m: { reads: number; writes: number }): McpCallFigures => ({
      id,
      label,
      rest_reads: rest.reads,
      mcp_reads: m.reads,
      rest_writes: rest.writes,
      mcp_writes: m.writes,
      extra_reads: m.reads - rest.reads,
    });
    const input = (amount: number) => ({ amount, currency: 'eur', customer: 'cus_bench' });
    const rows: McpCallFigures[] = [];

    // execute: admission only (the attempt is the worker's, unmetered below).
    const restAction = { id: uid('rest'), capability_id: 'payments.charge', input: input(1_100), transaction: { mode: 'execute' } };
    const restSubmit = await metered('REST execute', () => submit(event(h.caller, 'submitAction', { body: restAction }), context), 202);
    const mcpCall = rpc('tools/call', { name: 'payments.charge.execute', arguments: { input: input(1_100), idempotency_key: uid('mcp') } });
    const mcpSubmit = await metered('MCP execute', () => mcp(event(h.caller, 'mcp', { body: mcpCall, headers: MCP_HEADERS }), context), 200);
    const mcpActionId = mcpSubmit.body.result?.structuredContent?.action_id as string;
    if (typeof mcpActionId !== 'string') throw new Error(`mcp section: no action in ${JSON.stringify(mcpSubmit.body).slice(0, 300)}`);
    rows.push(row('execute', 'execute, admission (tools/call vs POST /v1/actions)', restSubmit, mcpSubmit));
    await h.meter.quiet(() => h.drain());

    // The same call again: a replay of the completed action.
    const restReplay = await metered('REST replay', () => submit(event(h.caller, 'submitAction', { body: restAction }), context), 200);
    const mcpReplay = await metered('MCP replay', () => mcp(event(h.caller, 'mcp', { body: mcpCall, headers: MCP_HEADERS }), context), 200);
    if (mcpReplay.body.result?.structuredContent?.replayed !== true) throw new Error('mcp section: the repeated tools/call was not a replay');
    rows.push(row('replay', 'the same call again: a replay', restReplay, mcpReplay));

    // Status of the completed action: tasks/get vs GET /v1/actions/{id}.
    const restRead = await metered('REST read', () => get(event(h.caller, 'getAction', { pathId: restAction.id }), context), 200);
    const mcpRead = await metered(
      'MCP tasks/get',
      () => mcp(event(h.caller, 'mcp', { body: rpc('tasks/get', { taskId: mcpActionId }), headers: MCP_HEADERS }), context),
      200,
    );
    rows.push(row('status', 'status of an action (tasks/get vs GET /v1/actions/{id})', restRead, mcpRead));

    // A plan: answered by the runtime at once.
    const restPlan = { id: uid('rest-plan'), capability_id: 'payments.charge', input: input(1_200), transaction: { mode: 'plan' } };
    const restPlanned = await metered('REST plan', () => submit(event(h.caller, 'submitAction', { body: restPlan }), context), 200);
    const mcpPlan = rpc('tools/call', { name: 'payments.charge.plan', arguments: { input: input(1_200), idempotency_key: uid('mcp-plan') } });
    const mcpPlanned = await metered('MCP plan', () => mcp(event(h.caller, 'mcp', { body: mcpPlan, headers: MCP_HEADERS }), context), 200);
    rows.push(row('plan', 'plan (answered at once)', restPlanned, mcpPlanned));

    // A retry while the outcome is unknown: REST refuses it (409 runtime.reconciliation_required); MCP answers the
    // same action's task, which costs the read of the action's result after the same refusal (the refusal names the transaction).
    h.emulators.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'drop_after_commit' }, times: 2 }]);
    const restLost = { id: uid('rest-lost'), capability_id: 'payments.charge', input: input(1_300), transaction: { mode: 'execute' } };
    const mcpLost = rpc('tools/call', { name: 'payments.charge.execute', arguments: { input: input(1_300), idempotency_key: uid('mcp-lost') } });
    await h.meter.quiet(async () => {
      await submit(event(h.caller, 'submitAction', { body: restLost }), context);
      await mcp(event(h.caller, 'mcp', { body: mcpLost, headers: MCP_HEADERS }), context);
      await h.drain();
    });
    h.emulators.simulator.setFaults([]);
    const restUnknown = await metered('REST retry (unknown)', () => submit(event(h.caller, 'submitAction', { body: restLost }), context), 409);
    const mcpUnknown = await metered('MCP retry (unknown)', () => mcp(event(h.caller, 'mcp', { body: mcpLost, headers: MCP_HEADERS }), context), 200);
    if (mcpUnknown.body.result?.structuredContent?.task_status !== 'working')
      throw new Error('mcp section: the retry of an unknown outcome is not a working task');
    rows.push(row('retry_unknown', 'retry while the outcome is unknown (REST: 409; MCP: the working task)', restUnknown, mcpUnknown));

    figures = rows;
    log(`mcp round ${round + 1}/${runs}: extra reads ${rows.map((r) => `${r.id} ${r.extra_reads}`).join(', ')}`);
  }
  return { calls: figures, max_extra_reads: Math.max(...figures.map((f) => f.extra_reads)) };
}

export function renderMcpMarkdown(f: McpFigures, heading: string): string[] {
  return [
    heading,
    '',
    'DynamoDB requests of one call through each front door, through the deployed handlers (`bench/sections/mcp.ts`). ' +
      'Target: at most 1 read beyond the REST path. MCP cold start: the `functions/http/mcp.ts` row of the bundles section.',
    '',
    '| call | REST reads | MCP reads | extra reads | REST writes | MCP writes |',
    '|---|---:|---:|---:|---:|---:|',
    ...f.calls.map((c) => `| ${c.label} | ${c.rest_reads} | ${c.mcp_reads} | ${c.extra_reads} | ${c.rest_writes} | ${c.mcp_writes} |`),
    '',
    `Most extra reads per MCP call: **${f.max_extra_reads}** (the retry of an action whose outcome is unknown: REST only refuses it, ` +
      'MCP reads the action’s result to answer its task; every other call adds none).',
    '',
  ];
}
