/**
 * The MCP protocol layer of the endpoint (docs/mcp.md, "The protocol layer:
 * ours, checked against the SDK"): JSON-RPC 2.0 messages as MCP defines them,
 * and a server that answers the requests of one POST with a table of method
 * handlers. It stands where the SDK's low-level `Server` stood, and answers
 * as it does for every message this endpoint serves; the SDK (1.32.2) stays
 * the reference that test/unit/functions/mcp-protocol.test.ts holds it to.
 *
 * Why not the SDK's `Server` at run time: it imports the SDK's protocol
 * module, which declares about 900 schemas in zod's classic API. Classic zod
 * and those schemas were the largest part of the MCP function's cold start
 * beyond a REST route's (docs/bench/analysis.md, "Issue 22: the MCP protocol
 * layer"). This module validates with the project's zod/mini, and only the
 * messages and parameters the endpoint reads.
 *
 * Where it departs from the SDK's server, on purpose:
 * - a request whose parameters do not fit its method is JSON-RPC's
 *   `Invalid params` (-32602), naming the field; the SDK answers
 *   `Internal error` (-32603) with zod's issue list;
 * - a tools/call result is not re-validated (the SDK parses it against its
 *   result schema): results.ts builds every one, and the parity test checks
 *   each kind against the SDK's schema;
 * - an error a method throws that is not an {@link McpError} is `Internal
 *   error` with nothing of its cause (the SDK puts its message on the wire).
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import * as z from '../../packages/connector-sdk/src/common/zod.js';

/** The protocol versions this server negotiates, newest first (those of the SDK it follows: the parity test checks them). */
export const LATEST_PROTOCOL_VERSION = '2025-11-25';
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [LATEST_PROTOCOL_VERSION, '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];

/** JSON-RPC's error codes and MCP's (the SDK's `ErrorCode`). */
export const ERROR_CODE = {
  ConnectionClosed: -32000,
  RequestTimeout: -32001,
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
} as const;

/** A JSON-RPC error a handler throws: its code, message and data go on the wire (message prefixed as the SDK's `McpError` does). */
export class McpError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(`MCP error ${code}: ${message}`);
    this.name = 'McpError';
    this.code = code;
    this.data = data;
  }
}

const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';
const JsonRpcId = z.union([z.string(), z.int()]);
const RequestMeta = z.looseObject({
  progressToken: z.optional(z.union([z.string(), z.int()])),
  [RELATED_TASK_META_KEY]: z.optional(z.object({ taskId: z.string() })),
});
const MessageParams = z.optional(z.looseObject({ _meta: z.optional(RequestMeta) }));

/** The four JSON-RPC messages, each strict about its own keys, as MCP's schema (and the SDK's `JSONRPCMessageSchema`) has them. */
const JsonRpcMessage = z.union([
  z.strictObject({ jsonrpc: z.literal('2.0'), id: JsonRpcId, method: z.string(), params: MessageParams }),
  z.strictObject({ jsonrpc: z.literal('2.0'), method: z.string(), params: MessageParams }),
  z.strictObject({ jsonrpc: z.literal('2.0'), id: JsonRpcId, result: z.looseObject({ _meta: z.optional(RequestMeta) }) }),
  z.strictObject({
    jsonrpc: z.literal('2.0'),
    id: z.optional(JsonRpcId),
    error: z.object({ code: z.int(), message: z.string(), data: z.optional(z.unknown()) }),
  }),
]);

/** A JSON-RPC message, parsed; throws on anything else. */
export function parseJsonRpcMessage(value: unknown): JSONRPCMessage {
  return JsonRpcMessage.parse(value) as JSONRPCMessage;
}

type JsonRpcRequest = Extract<JSONRPCMessage, { id: RequestId; method: string }>;

/** Of a parsed message: a request (an ID and a method). */
export function isJsonRpcRequest(message: JSONRPCMessage): message is JsonRpcRequest {
  return 'method' in message && 'id' in message;
}

/** Of a parsed message: a response to a request (a result or an error). */
export function isJsonRpcResponse(message: JSONRPCMessage): message is Exclude<JSONRPCMessage, { method: string }> {
  return 'result' in message || 'error' in message;
}

const AnyObject = z.custom<object>((v) => v !== null && (typeof v === 'object' || typeof v === 'function'));

/** initialize's parameters: MCP's `InitializeRequestParams` (the client's capabilities and implementation, checked as the SDK does). */
const InitializeParams = z.lazySchema(() =>
  z.object({
    _meta: z.optional(RequestMeta),
    protocolVersion: z.string(),
    capabilities: z.object({
      experimental: z.optional(z.record(z.string(), AnyObject)),
      sampling: z.optional(z.object({ context: z.optional(AnyObject), tools: z.optional(AnyObject) })),
      elicitation: z.optional(z.looseObject({ form: z.optional(z.looseObject({ applyDefaults: z.optional(z.boolean()) })), url: z.optional(AnyObject) })),
      roots: z.optional(z.object({ listChanged: z.optional(z.boolean()) })),
      tasks: z.optional(
        z.looseObject({
          list: z.optional(AnyObject),
          cancel: z.optional(AnyObject),
          requests: z.optional(
            z.looseObject({
              sampling: z.optional(z.looseObject({ createMessage: z.optional(AnyObject) })),
              elicitation: z.optional(z.looseObject({ create: z.optional(AnyObject) })),
            }),
          ),
        }),
      ),
      extensions: z.optional(z.record(z.string(), AnyObject)),
    }),
    clientInfo: z.object({
      name: z.string(),
      title: z.optional(z.string()),
      icons: z.optional(
        z.array(
          z.object({
            src: z.string(),
            mimeType: z.optional(z.string()),
            sizes: z.optional(z.array(z.string())),
            theme: z.optional(z.enum(['light', 'dark'])),
          }),
        ),
      ),
      version: z.string(),
      websiteUrl: z.optional(z.string()),
      description: z.optional(z.string()),
    }),
  }),
);

/** Of a parsed message: a well-formed initialize request (which must come alone, and is exempt from the version header). */
export function isInitializeRequest(message: JSONRPCMessage): boolean {
  return isJsonRpcRequest(message) && message.method === 'initialize' && InitializeParams().safeParse(message.params).success;
}

/** A method's parameters: what a handler is given. */
export const PARAMS = {
  none: z.optional(z.object({ _meta: z.optional(RequestMeta) })),
  paginated: z.optional(z.object({ _meta: z.optional(RequestMeta), cursor: z.optional(z.string()) })),
  task: z.object({ _meta: z.optional(RequestMeta), taskId: z.string() }),
  toolCall: z.object({
    _meta: z.optional(RequestMeta),
    task: z.optional(z.object({ ttl: z.optional(z.number()) })),
    name: z.string(),
    arguments: z.optional(z.record(z.string(), z.unknown())),
  }),
} as const;

/** `Invalid params`, naming the first field that does not fit. */
function invalidParams(method: string, error: z.core.$ZodError): McpError {
  const issue = error.issues[0];
  const at = issue === undefined || issue.path.length === 0 ? 'params' : `params.${issue.path.map(String).join('.')}`;
  return new McpError(ERROR_CODE.InvalidParams, `Invalid params for ${method}: ${at}: ${issue?.message ?? 'invalid'}`);
}

/** One method of the server: it checks its parameters, then answers with its JSON-RPC result. */
export interface McpMethod {
  readonly run: (name: string, params: unknown) => Promise<Record<string, unknown>>;
}

/** A method whose handler gets its parameters as its schema parsed them (`Invalid params` when they do not fit). */
export function method<S extends z.ZodMiniType>(params: S, handle: (params: z.output<S>) => Promise<Record<string, unknown>>): McpMethod {
  return {
    run: (name, raw) => {
      const parsed = params.safeParse(raw);
      if (!parsed.success) throw invalidParams(name, parsed.error);
      return handle(parsed.data);
    },
  };
}

export interface McpServerOptions {
  readonly serverInfo: { readonly name: string; readonly version: string };
  readonly capabilities: Record<string, unknown>;
  readonly instructions?: string;
}

/**
 * The server of one POST: connected to its transport, it answers each request the transport hands it, in its
 * own time (a batch's requests run concurrently, as the SDK's do), and ignores notifications and responses
 * (it sends no request of its own, so no response can be awaited). `initialize` and `ping` are built in.
 */
export class McpServer {
  readonly #methods: ReadonlyMap<string, McpMethod>;
  #transport: Transport | undefined;

  constructor(options: McpServerOptions, methods: Readonly<Record<string, McpMethod>>) {
    // Its schema is built by the first initialize, not by every server (a tools/call never needs it).
    const initialize: McpMethod = {
      run: (name, raw) =>
        method(InitializeParams(), async ({ protocolVersion }) => ({
          protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(protocolVersion) ? protocolVersion : LATEST_PROTOCOL_VERSION,
          capabilities: options.capabilities,
          serverInfo: options.serverInfo,
          ...(options.instructions !== undefined && options.instructions !== '' ? { instructions: options.instructions } : {}),
        })).run(name, raw),
    };
    this.#methods = new Map([['initialize', initialize], ['ping', method(PARAMS.none, async () => ({}))], ...Object.entries(methods)]);
  }

  async connect(transport: Transport): Promise<void> {
    this.#transport = transport;
    transport.onmessage = (message) => {
      if (isJsonRpcRequest(message)) void this.#answer(transport, message);
    };
    await transport.start();
  }

  async close(): Promise<void> {
    const transport = this.#transport;
    this.#transport = undefined;
    await transport?.close();
  }

  async #answer(transport: Transport, request: JsonRpcRequest): Promise<void> {
    const { id, method: name } = request;
    let response: JSONRPCMessage;
    const handler = this.#methods.get(name);
    if (handler === undefined) {
      response = { jsonrpc: '2.0', id, error: { code: ERROR_CODE.MethodNotFound, message: 'Method not found' } };
    } else {
      try {
        response = { result: await handler.run(name, request.params), jsonrpc: '2.0', id } as JSONRPCMessage;
      } catch (err) {
        // An MCP error goes on the wire as it is; anything else is `Internal error` and says nothing of its cause.
        response = {
          jsonrpc: '2.0',
          id,
          error:
            err instanceof McpError
              ? { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) }
              : { code: ERROR_CODE.InternalError, message: 'Internal error' },
        };
      }
    }
    // The transport refuses an answer to a request it did not hand over; nothing else can fail here.
    await transport.send(response).catch((err: unknown) => transport.onerror?.(err instanceof Error ? err : new Error(String(err))));
  }
}
