/**
 * One MCP POST, answered with JSON: the SDK's `Transport` for the endpoint's
 * only mode (stateless, no session ID, JSON responses, no server-to-client
 * stream), on the Lambda event's parts rather than web-standard `Request` and
 * `Response` objects.
 *
 * Why not the SDK's `WebStandardStreamableHTTPServerTransport`: Node builds
 * `Request`, `Response` and `Headers` with undici, which it loads on their
 * first use, and that took about 35 ms of CPU on every MCP function's first
 * invocation here (Node 22), for objects made only to be taken apart again.
 *
 * What it keeps of that transport, in the same order and with the same
 * JSON-RPC errors (its `handlePostRequest` for `enableJsonResponse: true`
 * and no session ID generator; the messages checked by ./protocol.ts, as
 * the SDK's schemas check them):
 * - 406 unless Accept names both `application/json` and `text/event-stream`;
 * - 415 unless the Content-Type's media type is `application/json`;
 * - 400 for a batch of more than the SDK's `MAX_BATCH_SIZE` messages, and for
 *   a message that is not JSON-RPC;
 * - an initialize request must come alone; any other message is refused (400)
 *   when its `MCP-Protocol-Version` header names a version the SDK does not
 *   support;
 * - notifications and responses only: 202 with no body, after they are
 *   handed to the server;
 * - otherwise 200 once the server has answered every request: the one
 *   response, or the array of them.
 * A message the server sends that answers no request of this POST (a
 * notification, a request to the client) has no stream to go on, and is
 * dropped, as the SDK's transport drops it in JSON mode.
 */
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isInitializeRequest, isJsonRpcRequest, isJsonRpcResponse, parseJsonRpcMessage, SUPPORTED_PROTOCOL_VERSIONS } from './protocol.js';

/** The parts of an MCP POST the transport reads (header values joined with ", " when repeated). */
export interface McpPost {
  readonly accept?: string;
  readonly contentType?: string;
  readonly protocolVersion?: string;
  /** The parsed JSON body. */
  readonly body: unknown;
}

/** The HTTP answer: 200 with the JSON-RPC response(s), 202 without a body, or a 4xx with a JSON-RPC error. */
export interface McpAnswer {
  readonly status: number;
  readonly body?: unknown;
}

function refusal(status: number, code: number, message: string): McpAnswer {
  return { status, body: { jsonrpc: '2.0', error: { code, message }, id: null } };
}

export class JsonPostTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  /** Stateless: no session. */
  sessionId?: string;

  #awaiting: readonly RequestId[] = [];
  readonly #answers = new Map<RequestId, JSONRPCMessage>();
  #settle: ((answer: McpAnswer) => void) | undefined;
  #closed = false;

  async start(): Promise<void> {}

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!isJsonRpcResponse(message)) return;
    const id = message.id;
    if (id === undefined || !this.#awaiting.includes(id)) throw new Error(`No connection established for request ID: ${String(id)}`);
    this.#answers.set(id, message);
    if (this.#settle !== undefined && this.#awaiting.every((i) => this.#answers.has(i))) {
      const responses = this.#awaiting.map((i) => this.#answers.get(i));
      const settle = this.#settle;
      this.#settle = undefined;
      settle({ status: 200, body: responses.length === 1 ? responses[0] : responses });
    }
  }

  /** Hands the POST's messages to the server and resolves with the HTTP answer (once, for one POST). */
  async handle(post: McpPost): Promise<McpAnswer> {
    if (this.#closed) return refusal(404, -32001, 'Session not found');
    const refuse = (status: number, code: number, message: string): McpAnswer => {
      this.onerror?.(new Error(message));
      return refusal(status, code, message);
    };
    const accept = post.accept;
    if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return refuse(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    }
    if (!isJsonContentType(post.contentType ?? null)) return refuse(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    const raw = post.body;
    if (Array.isArray(raw) && raw.length > MAX_BATCH_SIZE) return refuse(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
    let messages: JSONRPCMessage[];
    try {
      messages = (Array.isArray(raw) ? raw : [raw]).map(parseJsonRpcMessage);
    } catch {
      return refuse(400, -32700, 'Parse error: Invalid JSON-RPC message');
    }
    if (messages.some(isInitializeRequest)) {
      if (messages.length > 1) return refuse(400, -32600, 'Invalid Request: Only one initialization request is allowed');
    } else {
      const version = post.protocolVersion;
      if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
        return refuse(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`);
      }
    }
    const requests = messages.filter(isJsonRpcRequest);
    if (requests.length === 0) {
      for (const m of messages) this.onmessage?.(m);
      return { status: 202 };
    }
    return new Promise<McpAnswer>((resolve) => {
      this.#settle = resolve;
      this.#awaiting = requests.map((r) => r.id);
      for (const m of messages) this.onmessage?.(m);
    });
  }
}
