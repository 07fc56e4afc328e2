/**
 * A plain Node HTTP server around a transport-neutral handler (the
 * connector host, lib/runtime/remote/host.ts, or the runtime's checkpoint
 * receiver, lib/runtime/remote/callback.ts): the local stack's remote
 * host, and any HTTPS service that runs a host behind its own TLS
 * terminator. The request's AbortSignal fires when the client goes away
 * before the answer is sent (the host then cancels the attempt).
 *
 * `intercept` (tests and the local stack's fault hooks) sees each answer
 * before it is sent and may send it, drop it (the socket is destroyed: the
 * caller gets no answer) or replace it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HostRequest, HostResponse } from '../../lib/runtime/remote/host.js';

export type AnswerDisposition = 'send' | 'drop' | { readonly replace: HostResponse };

export interface RemoteServerOptions {
  readonly handle: (req: HostRequest) => Promise<HostResponse>;
  /** @default 0 (a free port) */
  readonly port?: number;
  /** @default 127.0.0.1 */
  readonly host?: string;
  /** @default 10 MiB */
  readonly maxRequestBytes?: number;
  readonly intercept?: (req: HostRequest, answer: HostResponse) => AnswerDisposition | Promise<AnswerDisposition>;
  readonly onError?: (err: unknown) => void;
}

export interface RemoteServer {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) chunks.push(c);
    });
    req.on('end', () => resolve(size > max ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startRemoteServer(options: RemoteServerOptions): Promise<RemoteServer> {
  const max = options.maxRequestBytes ?? 10 * 1024 * 1024;
  const sockets = new Set<import('node:net').Socket>();
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort(new Error('client went away'));
    });
    const body = await readBody(req, max);
    if (body === undefined) {
      res.writeHead(413, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'request_too_large' }));
      return;
    }
    const headers: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
    const request: HostRequest = { method: req.method ?? 'GET', path: req.url ?? '/', headers, body, signal: gone.signal };
    let answer = await options.handle(request);
    const disposition = options.intercept !== undefined ? await options.intercept(request, answer) : 'send';
    if (disposition === 'drop') {
      req.socket.destroy();
      return;
    }
    if (disposition !== 'send') answer = disposition.replace;
    res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) }).end(answer.body);
  };
  const server = createServer((req, res) => {
    serve(req, res).catch((err: unknown) => {
      options.onError?.(err);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 'internal' }));
      else res.destroy();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let stopped: Promise<void> | undefined;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      })),
  };
}
