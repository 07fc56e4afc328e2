/**
 * The provider call's HTTP client: node:http and node:https behind the part
 * of fetch's shape that the transport (transport.ts) uses.
 *
 * Why not the global fetch: Node implements fetch, Headers, Request and
 * Response with undici, which it loads on their first use. That first use
 * took about 35 ms of CPU here (Node 22; `new Headers()` alone), paid by the
 * first provider call of every execution environment: a waited execute's
 * attempt inside the submit, a worker's first invocation. node:http and
 * node:https are loaded already by then, by the AWS SDK's request handler
 * (the first exchange costs about 6 ms). node:http is reached through
 * `process.getBuiltinModule`: its ES module namespace loads undici too (it exports the
 * WebSocket class; infra/bundling.ts `builtinsThroughRequirePlugin` does the same
 * for the SDK's import of it), here in the bundles and from the sources
 * alike. Both modules are called through their module objects at call time,
 * so the X-Ray tracer's patch of `request` covers provider calls as it
 * covers the SDK's.
 *
 * What it keeps of fetch's behaviour: one request, no redirect followed (a
 * 3xx is the answer, as `redirect: 'manual'`), the response once its head
 * arrives, the body read afterwards; the signal aborts the exchange at any
 * point, the body included. What differs: no `accept-encoding` is sent, so
 * a provider answers uncompressed (fetch asks for gzip and inflates it), and
 * no `user-agent` either. Errors are Node's own, with their `code`
 * (ECONNREFUSED, ENOTFOUND, the TLS codes), which the transport reads to
 * tell "never sent" from "may have been received".
 *
 * A test can pass the global fetch (or a fake of it) instead: it has this shape.
 */
import type http from 'node:http';
import https from 'node:https';

// Node's CommonJS module object (Node 22.3 and later), without an ES import's namespace.
const nodeHttp = process.getBuiltinModule('node:http');

/** Reads response headers by name, case-insensitively, as fetch's Headers.get does. */
export interface HeaderReader {
  get(name: string): string | null;
}

/** A response body: read it by iterating, or discard it with cancel (before iterating). */
export interface ResponseBody {
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array>;
  cancel(): Promise<void>;
}

export interface ProviderFetchInit {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly signal: AbortSignal;
  /** Redirects are never followed (credentials must not travel to another origin). */
  readonly redirect: 'manual';
}

export interface ProviderFetchResponse {
  readonly status: number;
  readonly headers: HeaderReader;
  readonly body: ResponseBody | null;
}

/** The client the HTTP connector sends provider requests with; the global fetch has this shape. */
export type ProviderFetch = (url: URL | string, init: ProviderFetchInit) => Promise<ProviderFetchResponse>;

function headerReader(headers: http.IncomingHttpHeaders): HeaderReader {
  return {
    get(name) {
      const v = headers[name.toLowerCase()];
      if (v === undefined) return null;
      return Array.isArray(v) ? v.join(', ') : v;
    },
  };
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : Object.assign(new Error('the exchange was aborted'), { name: 'AbortError' });
}

function bodyOf(res: http.IncomingMessage): ResponseBody {
  return {
    [Symbol.asyncIterator]: () => res[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>,
    cancel: async () => {
      res.destroy();
    },
  };
}

/** One request over node:http or node:https (see the module comment). */
export const nodeProviderFetch: ProviderFetch = (url, init) =>
  new Promise<ProviderFetchResponse>((resolve, reject) => {
    const { signal } = init;
    if (signal.aborted) {
      reject(abortError(signal));
      return;
    }
    let target: URL;
    try {
      target = new URL(url);
    } catch (err) {
      reject(err);
      return;
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      reject(Object.assign(new TypeError(`unsupported protocol ${target.protocol}`), { code: 'ERR_INVALID_URL' }));
      return;
    }
    const body = init.body === undefined ? undefined : Buffer.from(init.body, 'utf8');
    const headers: Record<string, string> = { ...init.headers };
    if (body !== undefined) headers['content-length'] = String(body.byteLength);
    let req: http.ClientRequest;
    let res: http.IncomingMessage | undefined;
    const onAbort = (): void => {
      // Ends the exchange wherever it is: before the head (the request's promise rejects) or while the body is read (its iteration throws).
      const reason = abortError(signal);
      res?.destroy(reason);
      req.destroy(reason);
    };
    try {
      // Through the module objects, at call time: the tracer patches their `request`.
      req = (target.protocol === 'https:' ? https : nodeHttp).request(target, { method: init.method, headers }, (incoming) => {
        res = incoming;
        // Its errors reach whoever reads the body, through the iteration; unread, they are nobody's.
        incoming.on('error', () => undefined);
        incoming.once('close', () => signal.removeEventListener('abort', onAbort));
        resolve({ status: incoming.statusCode ?? 0, headers: headerReader(incoming.headers), body: bodyOf(incoming) });
      });
    } catch (err) {
      // Node refuses a bad method or header before anything is written.
      reject(err);
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    // `on`, not `once`: a destroyed request can report more than one error, and only the first one counts.
    req.on('error', (err) => {
      signal.removeEventListener('abort', onAbort);
      reject(err);
    });
    req.end(body);
  });
