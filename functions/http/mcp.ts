/**
 * The MCP endpoint (docs/mcp.md):
 * - POST /v1/mcp → one JSON-RPC message, answered by a per-request MCP server
 *   (functions/mcp/server.ts) over a transport for the Streamable HTTP POST
 *   (functions/mcp/json-post-transport.ts: the SDK's web-standard one's checks,
 *   without building web Request and Response objects), stateless (no session
 *   ID) with JSON responses, so one Lambda invocation answers one POST;
 * - GET /v1/mcp → 405: no standalone server-to-client stream.
 *
 * Both run the route table's middy chain (lib/http/routes.ts, `mcp` and
 * `mcpStream`): the caller comes from the authorizer's context, the tenant
 * from the edge's selection, exactly as for the REST routes; a refusal there
 * is an RFC 9457 problem. A message the MCP transport itself refuses (a
 * missing Accept type, an unsupported protocol version, a batch) is a problem
 * too, with the transport's JSON-RPC error in its details.
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { ROUTES } from '../../lib/http/routes.js';
import { JsonPostTransport } from '../mcp/json-post-transport.js';
import { createMcpServer } from '../mcp/server.js';
import { headerValues, type HttpResult } from '../shared/http.js';
import { productionRuntime } from '../shared/production-runtime.js';
import { createRouteHandler, type HttpDeps, type ProxyHandler } from '../shared/route-handler.js';
import { parsePreferWait, waitBudgetMs } from '../shared/wait.js';

/** How long a tools/call without task support (and tasks/result) waits for its action by default, in seconds. `Prefer: wait=N` changes it. */
export const MCP_DEFAULT_WAIT_SECONDS = 20;

/** The transport's own refusals, as catalogued problems carrying the JSON-RPC error. */
function transportRefusal(status: number, body: unknown): AipError {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  const details = {
    ...(typeof error?.code === 'number' ? { jsonrpc_code: error.code } : {}),
    ...(typeof error?.message === 'string' ? { reason: error.message.slice(0, 512) } : {}),
  };
  if (status === 406) return new AipError('mcp.not_acceptable', undefined, { details });
  if (status === 415) return new AipError('request.unsupported_media_type', undefined, { details });
  if (status === 413) return new AipError('request.body_too_large', undefined, { details });
  if (status === 405) return new AipError('request.method_not_allowed', undefined, { details });
  return new AipError('mcp.request_rejected', typeof error?.message === 'string' ? error.message.slice(0, 512) : undefined, { details });
}

export function createMcpPostHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(
    ROUTES.mcp,
    deps,
    async ({ event, caller, tenant_id, body, runtime, clock, remainingMs }): Promise<HttpResult> => {
      const wait = parsePreferWait(headerValues(event, 'prefer')) ?? MCP_DEFAULT_WAIT_SECONDS;
      const server = createMcpServer({
        runtime: await runtime(),
        caller,
        tenant_id: tenant_id as string,
        clock,
        waitBudgetMs: waitBudgetMs(wait, remainingMs()),
        ...(deps.waitPoll !== undefined ? { poll: deps.waitPoll } : {}),
      });
      // Stateless (no session ID) with JSON responses: the answer is complete when handle returns.
      const transport = new JsonPostTransport();
      await server.connect(transport);
      try {
        const header = (name: string): string | undefined => {
          const values = headerValues(event, name);
          return values.length > 0 ? values.join(', ') : undefined;
        };
        const accept = header('accept');
        const contentType = header('content-type');
        const protocolVersion = header('mcp-protocol-version');
        const answer = await transport.handle({
          body,
          ...(accept !== undefined ? { accept } : {}),
          ...(contentType !== undefined ? { contentType } : {}),
          ...(protocolVersion !== undefined ? { protocolVersion } : {}),
        });
        if (answer.status >= 400) throw transportRefusal(answer.status, answer.body);
        return { status: answer.status, ...(answer.body !== undefined ? { body: answer.body } : {}) };
      } finally {
        await server.close();
      }
    },
    // The JSON-RPC message is the MCP server's to validate (its errors are JSON-RPC errors).
    { parseBody: (json) => json as Record<string, unknown> },
  );
}

export function createMcpGetHandler(deps: HttpDeps): ProxyHandler {
  return createRouteHandler(ROUTES.mcpStream, deps, async () => {
    throw new AipError('request.method_not_allowed', 'The MCP endpoint offers no server-to-client stream: POST JSON-RPC messages', {
      details: { allow: 'POST' },
    });
  });
}

/** Both methods of /v1/mcp in one function (one Lambda: the route table names one handler for both). */
export function createMcpHandler(deps: HttpDeps): ProxyHandler {
  const post = createMcpPostHandler(deps);
  const get = createMcpGetHandler(deps);
  return (event, context) => ((event.httpMethod ?? 'POST').toUpperCase() === 'GET' ? get(event, context) : post(event, context));
}

/** Deployed handler (functions/http/mcp.mcpHandler). */
export const mcpHandler = createMcpHandler({ runtime: productionRuntime });
