/**
 * A tiny scripted HTTP server on 127.0.0.1 for the client and CLI tests: it
 * records every request and answers with whatever the test's route function
 * returns. Real sockets and a real fetch; nothing is mocked.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Record<string, string>;
  readonly headers: IncomingHttpHeaders;
  /** Parsed JSON body, or the raw text when it is not JSON, or undefined when empty. */
  readonly body: unknown;
}

export interface StubResponse {
  readonly status?: number;
  /** Serialised as JSON unless `raw` is set. */
  readonly body?: unknown;
  readonly raw?: string;
  readonly contentType?: string;
  readonly headers?: Record<string, string>;
}

export type StubRoute = (req: StubRequest) => StubResponse | Promise<StubResponse>;

export interface ApiStub {
  readonly url: string;
  readonly requests: StubRequest[];
  /** Replace the route function. */
  setRoute(route: StubRoute): void;
  stop(): Promise<void>;
}

export const problem = (status: number, code: string, extra: Record<string, unknown> = {}): StubResponse => ({
  status,
  contentType: 'application/problem+json',
  body: { type: `urn:aip:error:${code}`, title: code, status, detail: `detail of ${code}`, code, category: 'conflict', retryable: false, ...extra },
});

export async function startApiStub(route: StubRoute = () => ({ status: 404, body: {} })): Promise<ApiStub> {
  let current = route;
  const requests: StubRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      if (text.length > 0) {
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
      }
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const recorded: StubRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
      };
      requests.push(recorded);
      Promise.resolve()
        .then(() => current(recorded))
        .then(
          (answer) => {
            const payload = answer.raw ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
            res.writeHead(answer.status ?? 200, { 'content-type': answer.contentType ?? 'application/json', ...answer.headers });
            res.end(payload);
          },
          () => {
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end('stub route threw');
          },
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setRoute: (r) => {
      current = r;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
