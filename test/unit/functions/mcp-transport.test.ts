/**
 * functions/mcp/json-post-transport.ts answers every POST as the SDK's
 * web-standard Streamable HTTP transport does in the endpoint's mode
 * (stateless, JSON responses): same status, same JSON body, case by case,
 * with an SDK Server behind each.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, LATEST_PROTOCOL_VERSION, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { JsonPostTransport, type McpAnswer, type McpPost } from '../../../functions/mcp/json-post-transport.js';

const BOTH = 'application/json, text/event-stream';

function server(): Server {
  const s = new Server({ name: 'test', version: '1.0.0' }, { capabilities: { tools: {} } });
  s.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }));
  s.setRequestHandler(CallToolRequestSchema, async (req) => ({ content: [{ type: 'text', text: JSON.stringify(req.params.arguments ?? {}) }] }));
  return s;
}

async function ours(post: McpPost): Promise<McpAnswer> {
  const s = server();
  const t = new JsonPostTransport();
  await s.connect(t);
  try {
    return await t.handle(post);
  } finally {
    await s.close();
  }
}

async function sdks(post: McpPost): Promise<McpAnswer> {
  const s = server();
  const t = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
  await s.connect(t);
  try {
    const headers = new Headers();
    if (post.accept !== undefined) headers.set('accept', post.accept);
    if (post.contentType !== undefined) headers.set('content-type', post.contentType);
    if (post.protocolVersion !== undefined) headers.set('mcp-protocol-version', post.protocolVersion);
    const res = await t.handleRequest(new Request('https://aip.invalid/v1/mcp', { method: 'POST', headers, body: '' }), { parsedBody: post.body });
    const text = await res.text();
    return { status: res.status, ...(text.length > 0 ? { body: JSON.parse(text) as unknown } : {}) };
  } finally {
    await s.close();
  }
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'c', version: '1' } },
};
const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
const call = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { a: id } } });
const notification = { jsonrpc: '2.0', method: 'notifications/initialized' };

const CASES: ReadonlyArray<readonly [string, McpPost, number]> = [
  ['no Accept', { contentType: 'application/json', body: list(1) }, 406],
  ['Accept without the event stream', { accept: 'application/json', contentType: 'application/json', body: list(1) }, 406],
  ['a text body type', { accept: BOTH, contentType: 'text/plain', body: list(1) }, 415],
  ['a media type that only contains application/json', { accept: BOTH, contentType: 'text/plain; a=application/json', body: list(1) }, 415],
  ['a JSON type with parameters', { accept: BOTH, contentType: 'application/json; charset=utf-8', body: list(1) }, 200],
  ['no Content-Type', { accept: BOTH, body: list(1) }, 415],
  ['not JSON-RPC', { accept: BOTH, contentType: 'application/json', body: { hello: 'world' } }, 400],
  ['a batch over the limit', { accept: BOTH, contentType: 'application/json', body: Array.from({ length: 101 }, (_, i) => list(i)) }, 400],
  ['initialize', { accept: BOTH, contentType: 'application/json', body: initialize }, 200],
  ['initialize with another message', { accept: BOTH, contentType: 'application/json', body: [initialize, list(2)] }, 400],
  ['an unsupported protocol version', { accept: BOTH, contentType: 'application/json', protocolVersion: '1999-01-01', body: list(1) }, 400],
  ['a supported protocol version', { accept: BOTH, contentType: 'application/json', protocolVersion: LATEST_PROTOCOL_VERSION, body: list(1) }, 200],
  ['a notification alone', { accept: BOTH, contentType: 'application/json', body: notification }, 202],
  ['a tools/call', { accept: BOTH, contentType: 'application/json', body: call('x') }, 200],
  ['a batch: two requests and a notification', { accept: BOTH, contentType: 'application/json', body: [call(2), notification, list(3)] }, 200],
  ['a batch of one request', { accept: BOTH, contentType: 'application/json', body: [call(4)] }, 200],
  ['an unknown method', { accept: BOTH, contentType: 'application/json', body: { jsonrpc: '2.0', id: 9, method: 'nope/nothing', params: {} } }, 200],
];

describe('JsonPostTransport answers as the SDK’s web-standard transport (stateless, JSON responses)', () => {
  it.each(CASES)('%s', async (_name, post, status) => {
    const [a, b] = [await ours(post), await sdks(post)];
    expect(a).toEqual(b);
    expect(a.status).toBe(status);
  });

  it('answers a batch with its responses in request order', async () => {
    const a = await ours({ accept: BOTH, contentType: 'application/json', body: [call(2), notification, list(3)] });
    expect((a.body as { id: number }[]).map((r) => r.id)).toEqual([2, 3]);
  });

  it('refuses a response for a request this POST did not carry', async () => {
    const t = new JsonPostTransport();
    await expect(t.send({ jsonrpc: '2.0', id: 7, result: {} })).rejects.toThrow(/request ID: 7/);
  });
});
