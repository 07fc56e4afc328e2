/**
 * functions/mcp/protocol.ts against the SDK it replaced at run time
 * (@modelcontextprotocol/sdk, the version package.json pins):
 * - its constants are the SDK's;
 * - it accepts and parses JSON-RPC messages, and recognises an initialize
 *   request, exactly as the SDK's schemas do (fast-check);
 * - the endpoint's server answers every POST of a corpus as the SDK's
 *   `Server` does with the same methods behind the same transport, except
 *   where it departs on purpose (parameters that do not fit: -32602, not
 *   -32603);
 * - every kind of result the endpoint builds is one the SDK's result schemas
 *   take unchanged, which is why the server does not re-validate them.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  CancelTaskRequestSchema,
  CreateTaskResultSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  GetTaskResultSchema,
  isInitializeRequest as sdkIsInitializeRequest,
  JSONRPCMessageSchema,
  LATEST_PROTOCOL_VERSION as SDK_LATEST,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  SUPPORTED_PROTOCOL_VERSIONS as SDK_SUPPORTED,
} from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonPostTransport, type McpAnswer } from '../../../functions/mcp/json-post-transport.js';
import {
  ERROR_CODE,
  isInitializeRequest,
  LATEST_PROTOCOL_VERSION,
  McpError,
  McpServer,
  method,
  PARAMS,
  parseJsonRpcMessage,
  SUPPORTED_PROTOCOL_VERSIONS,
  type McpMethod,
} from '../../../functions/mcp/protocol.js';
import { taskOf, toolErrorOf, toolResultOf, readResultOf } from '../../../functions/mcp/results.js';
import { createMcpServer, MCP_SERVER_OPTIONS, mcpMethods, type McpRequestContext } from '../../../functions/mcp/server.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionState, CallerIdentity, RuntimeApi } from '../../../functions/shared/runtime-api.js';
import { alice as caller, CAPS } from './mcp-support.js';

const BOTH = 'application/json, text/event-stream';
const AT = Date.parse('2026-12-04T10:00:00.000Z');

const transaction = (status: string) => ({ transaction_id: 'txn-1', status, receipt_count: 2, receipt_head: 'a'.repeat(64), links: { action_id: 'a1' } });
/** The actions the runtime double knows, by ID: one of each task status. */
const STATES: Record<string, ActionState> = {
  'exe-done': { action_result: { action_id: 'exe-done', status: 'completed', output: { charge_id: 'ch_1' } }, transaction: transaction('committed') as never },
  'exe-human': { action_result: { action_id: 'exe-human', status: 'requires_human', metadata: { approval_id: 'ap1' } } },
  'exe-failed': {
    action_result: {
      action_id: 'exe-failed',
      status: 'failed',
      error: { code: 'payments.card_declined', message: 'declined', category: 'permanent', retryable: false, uncertain_outcome: false },
    },
    transaction: transaction('failed') as never,
  },
  'exe-running': { action_result: { action_id: 'exe-running', status: 'running' } },
};

function stateOf(id: string): ActionState {
  const s = STATES[id];
  if (s === undefined) throw new AipError('action.not_found', `No action ${id}`);
  return s;
}

/** A RuntimeApi double for the protocol layer alone (the runtime's own behaviour is tested against the emulators). */
const runtime = {
  capabilities: async () => CAPS,
  submit: async (_caller: CallerIdentity, body: { id: string }) => ({
    disposition: 'admitted',
    http_status: 202,
    action_id: body.id,
    tenant_id: 'demo',
    action_result: { action_id: body.id, status: 'accepted' },
  }),
  getAction: async (_c: unknown, _t: unknown, id: string) => stateOf(id),
  getActionTimed: async (_c: unknown, _t: unknown, id: string) => ({
    ...stateOf(id),
    created_at: '2026-12-04T09:00:00.000Z',
    updated_at: '2026-12-04T09:30:00.000Z',
  }),
  getActionResult: async (_c: unknown, _t: unknown, id: string) => stateOf(id).action_result,
  getTransaction: async () => transaction('committed'),
  listApprovals: async () => ({ items: [] }),
  cancel: async (_c: unknown, _t: unknown, id: string) => {
    if (id !== 'exe-running') throw new AipError('runtime.cancel_not_allowed', 'No');
    return {};
  },
} as unknown as RuntimeApi;

const ctx: McpRequestContext = { runtime, caller, tenant_id: 'demo', clock: { now: () => AT, sleep: async () => {} }, waitBudgetMs: 0 };

/** The SDK's `Server` with the endpoint's options and the same methods, each behind the SDK's request schema. */
function sdkServer(): Server {
  const server = new Server(MCP_SERVER_OPTIONS.serverInfo, { capabilities: MCP_SERVER_OPTIONS.capabilities, instructions: MCP_SERVER_OPTIONS.instructions });
  const methods = mcpMethods(ctx) as Record<string, McpMethod>;
  const run = (name: string) => (request: { params?: unknown }) => methods[name]!.run(name, request.params) as never;
  server.setRequestHandler(ListToolsRequestSchema, run('tools/list'));
  server.setRequestHandler(CallToolRequestSchema, run('tools/call'));
  server.setRequestHandler(GetTaskRequestSchema, run('tasks/get'));
  server.setRequestHandler(GetTaskPayloadRequestSchema, run('tasks/result'));
  server.setRequestHandler(CancelTaskRequestSchema, run('tasks/cancel'));
  return server;
}

async function answer(
  server: { connect(t: JsonPostTransport): Promise<void>; close(): Promise<void> },
  body: unknown,
  protocolVersion?: string,
): Promise<McpAnswer> {
  const transport = new JsonPostTransport();
  await server.connect(transport);
  try {
    return await transport.handle({ accept: BOTH, contentType: 'application/json', body, ...(protocolVersion !== undefined ? { protocolVersion } : {}) });
  } finally {
    await server.close();
  }
}

const request = (id: number | string, method: string, params?: unknown) => ({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
const initialize = (version: string, extra: Record<string, unknown> = {}) =>
  request(1, 'initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'c', version: '1' }, ...extra });
const call = (id: number, name: string, args?: unknown, more: Record<string, unknown> = {}) =>
  request(id, 'tools/call', { name, ...(args !== undefined ? { arguments: args } : {}), ...more });

/** [case, body, what both answer alike (true) or where ours departs: 'invalid params'] */
const CORPUS: ReadonlyArray<readonly [string, unknown, true | 'invalid params']> = [
  ['initialize, the latest version', initialize(LATEST_PROTOCOL_VERSION), true],
  ['initialize, an older version', initialize('2025-03-26'), true],
  ['initialize, an unknown version (answered with the latest)', initialize('1999-01-01'), true],
  [
    'initialize with client capabilities and icons',
    initialize('2025-06-18', {
      capabilities: { roots: { listChanged: true }, tasks: { list: {} }, elicitation: {} },
      clientInfo: { name: 'c', version: '1', icons: [{ src: 'x', theme: 'dark' }] },
    }),
    true,
  ],
  ['initialize without clientInfo', request(1, 'initialize', { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {} }), 'invalid params'],
  ['ping', request(2, 'ping'), true],
  ['ping with _meta', request('p', 'ping', { _meta: { progressToken: 3 } }), true],
  ['tools/list', request(3, 'tools/list'), true],
  ['tools/list with a cursor', request(3, 'tools/list', { cursor: 'abc' }), true],
  ['tools/call execute (pending: nobody waits)', call(4, 'payments.charge.execute', { input: { amount: 5 } }), true],
  ['tools/call execute as a task', call(5, 'payments.charge.execute', { input: { amount: 5 } }, { task: { ttl: 60000 } }), true],
  ['tools/call compensate', call(5, 'payments.charge.compensate', { input: { charge_id: 'ch_1' }, compensation_for: 'exe-done' }), true],
  ['tools/call commit without its plan (a tool error)', call(5, 'payments.charge.commit', { input: { amount: 5 } }), true],
  ['tools/call of a capability without a transaction contract', call(5, 'notes.add', { input: {} }, { _meta: { progressToken: 'p1' } }), true],
  ['tools/call with bad wrapper arguments (a tool error)', call(6, 'payments.charge.execute', { amount: 5 }), true],
  ['tools/call with bad wrapper arguments as a task (a JSON-RPC error)', call(6, 'payments.charge.execute', { amount: 5 }, { task: {} }), true],
  ['tools/call of an unknown tool', call(7, 'nope.nothing', {}), true],
  ['tools/call of a read tool', call(8, 'aip.get_action', { action_id: 'exe-done' }), true],
  ['tools/call of a read tool, unknown action', call(8, 'aip.get_action', { action_id: 'exe-unknown' }), true],
  ['tools/call of a read tool as a task', call(8, 'aip.get_action', { action_id: 'exe-done' }, { task: {} }), true],
  ['tools/call of the approvals list with a bad limit', call(8, 'aip.list_pending_approvals', { limit: 0 }), true],
  ['tools/call without a name', request(9, 'tools/call', { arguments: {} }), 'invalid params'],
  ['tools/call with arguments that are not an object', request(9, 'tools/call', { name: 'payments.charge.execute', arguments: [1] }), 'invalid params'],
  ['tasks/get, completed', request(10, 'tasks/get', { taskId: 'exe-done' }), true],
  ['tasks/get, waiting for a person', request(10, 'tasks/get', { taskId: 'exe-human' }), true],
  ['tasks/get, unknown', request(10, 'tasks/get', { taskId: 'exe-unknown' }), true],
  ['tasks/get without a task ID', request(10, 'tasks/get', {}), 'invalid params'],
  ['tasks/result, completed', request(11, 'tasks/result', { taskId: 'exe-done' }), true],
  ['tasks/result, failed', request(11, 'tasks/result', { taskId: 'exe-failed' }), true],
  ['tasks/result, still waiting (RequestTimeout)', request(11, 'tasks/result', { taskId: 'exe-human' }), true],
  ['tasks/cancel, running', request(12, 'tasks/cancel', { taskId: 'exe-running' }), true],
  ['tasks/cancel, terminal', request(12, 'tasks/cancel', { taskId: 'exe-done' }), true],
  ['an unknown method', request(13, 'resources/list'), true],
  ['a notification', { jsonrpc: '2.0', method: 'notifications/initialized' }, true],
  ['a cancellation notification', { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } }, true],
  ['a response from the client', { jsonrpc: '2.0', id: 99, result: {} }, true],
  [
    'a batch',
    [
      request(20, 'tools/list'),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      request(21, 'ping'),
      call(22, 'aip.get_action', { action_id: 'exe-human' }),
    ],
    true,
  ],
  ['not JSON-RPC', { jsonrpc: '2.0', id: 1 }, true],
  ['initialize in a batch', [initialize(LATEST_PROTOCOL_VERSION), request(2, 'ping')], true],
];

describe('the MCP protocol layer answers as the SDK it replaced', () => {
  it('negotiates the SDK’s protocol versions and uses its error codes', () => {
    expect(LATEST_PROTOCOL_VERSION).toBe(SDK_LATEST);
    expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual(SDK_SUPPORTED);
    for (const [name, code] of Object.entries(ERROR_CODE)) expect(ErrorCode[name as keyof typeof ErrorCode], name).toBe(code);
  });

  it.each(CORPUS)('%s', async (_name, body, alike) => {
    const [ours, sdks] = [await answer(createMcpServer(ctx), body), await answer(sdkServer(), body)];
    if (alike === true) {
      expect(ours).toEqual(sdks);
      return;
    }
    // Parameters that do not fit: JSON-RPC's Invalid params naming the field, where the SDK answers Internal error.
    const error = (a: McpAnswer) => (a.body as { error: { code: number; message: string }; id: unknown }).error;
    expect(ours.status).toBe(sdks.status);
    expect((ours.body as { id: unknown }).id).toEqual((sdks.body as { id: unknown }).id);
    expect(error(sdks).code).toBe(ErrorCode.InternalError);
    expect(error(ours).code).toBe(ErrorCode.InvalidParams);
    expect(error(ours).message).toMatch(/^MCP error -32602: Invalid params for [a-z/]+: params\.[A-Za-z.]+: /);
  });

  it('gives a version header the SDK does not support the same refusal', async () => {
    const [ours, sdks] = [await answer(createMcpServer(ctx), request(1, 'ping'), '1999-01-01'), await answer(sdkServer(), request(1, 'ping'), '1999-01-01')];
    expect(ours).toEqual(sdks);
    expect(ours.status).toBe(400);
  });
});

describe('errors a method throws', () => {
  const server = () =>
    new McpServer(MCP_SERVER_OPTIONS, {
      'x/mcp': method(PARAMS.none, async () => {
        throw new McpError(ERROR_CODE.InvalidParams, 'Task not found: t1', { taskId: 't1' });
      }),
      'x/plain': method(PARAMS.none, async () => {
        throw new Error('DynamoDB said: arn:aws:dynamodb:us-east-1:123456789012:table/aip with key sk_live_secret');
      }),
      'x/thrown': method(PARAMS.none, () => {
        throw 'a string';
      }),
    });

  it('an MCP error goes on the wire as it is; anything else is Internal error and says nothing of its cause', async () => {
    const [mcp, plain, thrown] = await Promise.all(['x/mcp', 'x/plain', 'x/thrown'].map((m, i) => answer(server(), request(i, m))));
    expect(mcp?.body).toEqual({ jsonrpc: '2.0', id: 0, error: { code: -32602, message: 'MCP error -32602: Task not found: t1', data: { taskId: 't1' } } });
    expect(plain?.body).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'Internal error' } });
    expect(thrown?.body).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32603, message: 'Internal error' } });
    expect(JSON.stringify([mcp, plain, thrown])).not.toMatch(/sk_live|arn:aws|a string/);
  });
});

/** Values shaped like JSON-RPC messages, near misses included. */
const idArb = fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.double(), fc.constant(null), fc.constant(Number.MAX_SAFE_INTEGER + 2));
const metaArb = fc.oneof(
  fc.constant(undefined),
  fc.record(
    {
      progressToken: fc.option(idArb, { nil: undefined }),
      'io.modelcontextprotocol/related-task': fc.option(fc.record({ taskId: fc.oneof(fc.string(), fc.integer()), extra: fc.string() }), { nil: undefined }),
      other: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue(),
);
const paramsArb = fc.oneof(fc.constant(undefined), fc.record({ _meta: metaArb, name: fc.string(), x: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue());
const messageArb = fc.record(
  {
    jsonrpc: fc.constantFrom('2.0', '1.0', 2),
    id: idArb,
    method: fc.oneof(fc.constantFrom('initialize', 'ping', 'tools/call'), fc.string({ maxLength: 6 }), fc.integer()),
    params: paramsArb,
    result: fc.oneof(fc.record({ _meta: metaArb, content: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue()),
    error: fc.oneof(
      fc.record(
        { code: fc.oneof(fc.integer(), fc.double()), message: fc.oneof(fc.string(), fc.integer()), data: fc.jsonValue(), more: fc.string() },
        { requiredKeys: [] },
      ),
      fc.jsonValue(),
    ),
    extra: fc.jsonValue(),
  },
  { requiredKeys: [] },
);
/** Mostly valid (weight 6), sometimes not: so that a run reaches every field's check with the others valid. */
const mostly = <T, U>(valid: fc.Arbitrary<T>, invalid: fc.Arbitrary<U>) => fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: invalid, weight: 1 });
const anObject = mostly(fc.object({ maxDepth: 1 }), fc.oneof(fc.integer(), fc.constant(null)));
const initializeArb = fc.record({
  jsonrpc: fc.constant('2.0'),
  id: fc.integer(),
  method: fc.constant('initialize'),
  params: fc.record({
    protocolVersion: mostly(fc.constantFrom(...SDK_SUPPORTED, '1999-01-01'), fc.integer()),
    capabilities: mostly(
      fc.record(
        {
          experimental: mostly(fc.dictionary(fc.string({ maxLength: 3 }), anObject, { maxKeys: 2 }), fc.constant(null)),
          sampling: mostly(fc.record({ context: anObject, tools: anObject }, { requiredKeys: [] }), fc.integer()),
          elicitation: mostly(
            fc.oneof(
              fc.constant({}),
              fc.record(
                { form: mostly(fc.record({ applyDefaults: mostly(fc.boolean(), fc.string()) }, { requiredKeys: [] }), fc.string()), url: anObject },
                { requiredKeys: [] },
              ),
            ),
            fc.array(fc.integer()),
          ),
          roots: mostly(fc.record({ listChanged: mostly(fc.boolean(), fc.string()) }, { requiredKeys: [] }), fc.string()),
          tasks: mostly(
            fc.record(
              {
                list: anObject,
                cancel: anObject,
                requests: mostly(
                  fc.record(
                    {
                      sampling: fc.record({ createMessage: anObject }, { requiredKeys: [] }),
                      elicitation: fc.record({ create: anObject }, { requiredKeys: [] }),
                    },
                    { requiredKeys: [] },
                  ),
                  fc.integer(),
                ),
              },
              { requiredKeys: [] },
            ),
            fc.boolean(),
          ),
          extensions: mostly(fc.dictionary(fc.string({ maxLength: 3 }), anObject, { maxKeys: 2 }), fc.string()),
        },
        { requiredKeys: [] },
      ),
      fc.jsonValue(),
    ),
    clientInfo: mostly(
      fc.record(
        {
          name: mostly(fc.string(), fc.integer()),
          version: mostly(fc.string(), fc.constant(undefined)),
          title: mostly(fc.string(), fc.integer()),
          websiteUrl: mostly(fc.string(), fc.integer()),
          description: mostly(fc.string(), fc.integer()),
          icons: mostly(
            fc.array(
              fc.record(
                {
                  src: mostly(fc.string(), fc.integer()),
                  mimeType: mostly(fc.string(), fc.integer()),
                  theme: mostly(fc.constantFrom('light', 'dark'), fc.constant('blue')),
                  sizes: mostly(fc.array(mostly(fc.string(), fc.integer()), { maxLength: 2 }), fc.string()),
                },
                { requiredKeys: [] },
              ),
              { maxLength: 2 },
            ),
            fc.string(),
          ),
        },
        { requiredKeys: ['name', 'version'] },
      ),
      fc.string(),
    ),
  }),
});

describe('JSON-RPC messages are checked as the SDK’s schemas check them', () => {
  const ourParse = (v: unknown) => {
    try {
      return { ok: true, value: parseJsonRpcMessage(v) } as const;
    } catch {
      return { ok: false } as const;
    }
  };

  it('accepts what JSONRPCMessageSchema accepts, parsed to the same value', () => {
    fc.assert(
      fc.property(fc.oneof(messageArb, fc.jsonValue()), (v) => {
        const sdk = JSONRPCMessageSchema.safeParse(v);
        const ours = ourParse(v);
        expect(ours.ok).toBe(sdk.success);
        if (ours.ok && sdk.success) expect(ours.value).toEqual(sdk.data);
      }),
      { numRuns: 2000 },
    );
  });

  it('recognises an initialize request as isInitializeRequest does', () => {
    fc.assert(
      fc.property(fc.oneof(initializeArb, messageArb), (v) => {
        const parsed = ourParse(v);
        if (!parsed.ok) return;
        expect(isInitializeRequest(parsed.value)).toBe(sdkIsInitializeRequest(v));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('the results the endpoint builds are the SDK’s result shapes, unchanged by its schemas', () => {
  const timed = (id: string) => ({ ...stateOf(id), created_at: '2026-12-04T09:00:00.000Z', updated_at: '2026-12-04T09:30:00.000Z' });
  const unchanged = (schema: { parse(v: unknown): unknown }, value: unknown) => expect(schema.parse(value)).toEqual(value);

  it('tool results, tool errors, read results, tasks and the tool list', async () => {
    for (const id of Object.keys(STATES)) {
      unchanged(CallToolResultSchema, toolResultOf(stateOf(id), { tenant_id: 'demo', disposition: 'admitted' }));
      unchanged(CreateTaskResultSchema, { task: taskOf(stateOf(id), timed(id), null) });
      unchanged(GetTaskResultSchema, taskOf(stateOf(id), timed(id), null));
      unchanged(CallToolResultSchema, readResultOf(stateOf(id)));
    }
    unchanged(CallToolResultSchema, toolErrorOf(new AipError('request.invalid', 'input must be an object', { details: { path: '/input' } })));
    unchanged(CallToolResultSchema, toolErrorOf(new Error('anything')));
    const list = await (mcpMethods(ctx) as Record<string, McpMethod>)['tools/list']!.run('tools/list', undefined);
    unchanged(ListToolsResultSchema, list);
  });
});
