/**
 * The HTTP connector's client (lib/connectors/http/provider-fetch.ts: node:http
 * and node:https in fetch's shape) against a real loopback server, through the
 * transport's `exchange`, side by side with the global fetch where both apply.
 */
import { execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeProviderFetch, type ProviderFetch } from '../../../lib/connectors/http/provider-fetch.js';
import { exchange, MAX_RESPONSE_BYTES, TransportFailure } from '../../../lib/connectors/http/transport.js';
import type { BuiltRequest } from '../../../lib/connectors/http/mapping.js';
import type { JsonObject } from '../../../packages/connector-sdk/src/protocol/json.js';

interface Seen {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
/** Resolved when the server sees a response's connection close (the client discarded it). */
const closed = new Map<string, () => void>();

function route(req: IncomingMessage, res: ServerResponse, body: string): void {
  const path = req.url ?? '/';
  if (path === '/ok') {
    res.setHeader('Request-Id', 'req_1');
    res.setHeader('Set-Cookie', ['a=1', 'b=2']);
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ echoed: body.length > 0 ? (JSON.parse(body) as unknown) : null }));
  } else if (path === '/redirect') {
    res.writeHead(302, { location: '/ok' }).end();
  } else if (path === '/text') {
    res.writeHead(500).end('not json');
  } else if (path.startsWith('/huge/')) {
    const id = path.slice('/huge/'.length);
    res.on('close', () => closed.get(id)?.());
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    // Writes until the client hangs up: the client must stop reading at the cap and close.
    const pump = (): void => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  } else if (path === '/head-then-hang') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"partial":');
    // Never ends: the client's signal must end the read.
  } else if (path === '/head-then-break') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"partial":', () => req.socket.destroy());
  } else if (path === '/never') {
    // No head ever.
  } else {
    res.writeHead(404).end();
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      route(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const request = (path: string, body?: JsonObject): BuiltRequest => ({
  method: body === undefined ? 'GET' : 'POST',
  route: path,
  url: new URL(path, base),
  headers: { 'Idempotency-Key': 'k-1' },
  ...(body !== undefined ? { body } : {}),
});

const clients: ReadonlyArray<readonly [string, ProviderFetch]> = [
  ['node:http', nodeProviderFetch],
  ['the global fetch', fetch],
];

describe.each(clients)('exchange over %s', (_name, client) => {
  it('sends the method, the headers (the authorizer’s included) and the JSON body, and reads status, headers and body', async () => {
    const res = await exchange(request('/ok', { amount: 5 }), {
      fetch: client,
      budget_ms: 5_000,
      request_id_header: 'request-id',
      authorize: async (h) => h.set('Authorization', 'Bearer t'),
    });
    expect(res.status).toBe(200);
    expect(res.request_id).toBe('req_1');
    expect(res.json).toEqual({ echoed: { amount: 5 } });
    expect(res.headers.get('CONTENT-TYPE')).toBe('application/json');
    expect(res.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(res.headers.get('absent')).toBeNull();
    const last = seen.at(-1);
    expect(last?.method).toBe('POST');
    expect(last?.headers['idempotency-key']).toBe('k-1');
    expect(last?.headers.authorization).toBe('Bearer t');
    expect(last?.headers['content-type']).toBe('application/json');
    expect(last?.headers.accept).toBe('application/json');
  });

  it('never follows a redirect: the 3xx is the answer', async () => {
    const before = seen.length;
    const res = await exchange(request('/redirect'), { fetch: client, budget_ms: 5_000 });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/ok');
    expect(seen.length).toBe(before + 1);
  });

  it('reports a body that is not JSON as malformed, with its text', async () => {
    const res = await exchange(request('/text'), { fetch: client, budget_ms: 5_000 });
    expect(res).toMatchObject({ status: 500, text: 'not json', malformed: true, json: undefined });
  });

  it('stops reading past the size cap and hangs up', async () => {
    const id = `${_name}-${seen.length}`;
    const hungUp = new Promise<void>((resolve) => closed.set(id, resolve));
    const err = await exchange(request(`/huge/${id}`), { fetch: client, budget_ms: 30_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportFailure);
    expect(err).toMatchObject({ kind: 'response_too_large', sent: 'yes' });
    expect(MAX_RESPONSE_BYTES).toBe(1_048_576);
    // Ours closes the connection (the global fetch may keep it, unread).
    if (client === nodeProviderFetch) await hungUp;
  });

  it('a refused connection was never sent', async () => {
    const refused = createServer();
    await new Promise<void>((resolve) => refused.listen(0, '127.0.0.1', resolve));
    const port = (refused.address() as AddressInfo).port;
    await new Promise((resolve) => refused.close(resolve));
    const err = await exchange({ ...request('/ok'), url: new URL(`http://127.0.0.1:${port}/ok`) }, { fetch: client, budget_ms: 5_000 }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ kind: 'not_sent', sent: 'no' });
  });

  it('the budget ends a response whose head never comes (maybe sent) and one whose body never ends (sent)', async () => {
    await expect(exchange(request('/never'), { fetch: client, budget_ms: 200 })).rejects.toMatchObject({ kind: 'timeout', sent: 'maybe' });
    await expect(exchange(request('/head-then-hang'), { fetch: client, budget_ms: 200 })).rejects.toMatchObject({ kind: 'timeout', sent: 'yes' });
  });

  it('the cancellation signal ends a read in progress', async () => {
    const controller = new AbortController();
    const pending = exchange(request('/head-then-hang'), {
      fetch: client,
      budget_ms: 30_000,
      signal: controller.signal,
      onHeaders: async () => {
        controller.abort(new Error('shutdown'));
      },
    });
    await expect(pending).rejects.toMatchObject({ kind: 'cancelled', sent: 'yes' });
  });

  it('a connection broken after the head is lost, and the provider had the request', async () => {
    await expect(exchange(request('/head-then-break'), { fetch: client, budget_ms: 5_000 })).rejects.toMatchObject({ kind: 'connection_lost', sent: 'yes' });
  });
});

describe('nodeProviderFetch', () => {
  it('refuses a URL that is not http or https before sending anything', async () => {
    await expect(exchange({ ...request('/ok'), url: new URL('ftp://127.0.0.1/ok') }, { fetch: nodeProviderFetch, budget_ms: 1_000 })).rejects.toMatchObject({
      kind: 'not_sent',
      sent: 'no',
    });
  });

  it('leaves undici, which the global fetch and Headers load on first use, unloaded (a fresh process)', () => {
    const script = `
      import { createRequire } from 'node:module';
      const { createServer } = createRequire(import.meta.url)('node:http');
      import { exchange } from './lib/connectors/http/transport.ts';
      const server = createServer((req, res) => { req.resume(); req.on('end', () => res.end('{"ok":true}')); });
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const res = await exchange(
        { method: 'POST', route: '/', url: new URL('http://127.0.0.1:' + server.address().port + '/'), headers: {}, body: { a: 1 } },
        { budget_ms: 5000, authorize: async (h) => h.set('authorization', 'Bearer x'), fetch: (await import('./lib/connectors/http/provider-fetch.ts')).nodeProviderFetch },
      );
      server.close();
      const loaded = process.moduleLoadList.filter((m) => m.includes('undici'));
      new Headers();
      process.stdout.write(JSON.stringify({ ok: res.json.ok, before: loaded, after: process.moduleLoadList.filter((m) => m.includes('undici')).length }));
    `;
    const out = JSON.parse(
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd(), encoding: 'utf8' }),
    ) as {
      ok: boolean;
      before: string[];
      after: number;
    };
    expect(out.ok).toBe(true);
    expect(out.before).toEqual([]);
    // The probe sees undici when it does load.
    expect(out.after).toBeGreaterThan(0);
  });
});
