/**
 * One HTTP exchange, bounded by a time budget and a cancellation
 * signal, with an honest answer to "could the provider have received it?".
 *
 * The client (provider-fetch.ts: node:http and node:https in fetch's shape)
 * resolves when the response head (status and headers) arrives; the
 * body is read afterwards and can still be lost. `onHeaders` runs between
 * the two, so a connector can checkpoint an operation ID carried by a header
 * before it waits for the body.
 *
 * What was sent: the client does not report when the request left the
 * process, so a failure is "not sent" only when its cause proves it (the
 * connection could not be established: refused, unresolvable host,
 * unreachable network, TLS rejection; or Node refused the request before
 * writing it). Every other failure after the client was called (a broken
 * connection, an abort, a timeout) may have reached the provider.
 */
import type { BuiltRequest } from './mapping.js';
import type { HeaderReader, ProviderFetch, ProviderFetchResponse } from './provider-fetch.js';

/** Causes that prove the request never reached the provider. */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_INVALID_URL',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  // Node refuses these before it writes anything.
  'ERR_INVALID_CHAR',
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_HTTP_INVALID_HEADER_VALUE',
  'ERR_INVALID_PROTOCOL',
]);

/** Response bodies above this size are refused (the provider response is then invalid). */
export const MAX_RESPONSE_BYTES = 1_048_576;

/**
 * Why an exchange produced no complete response.
 * - `not_sent`: the request provably never reached the provider.
 * - `cancelled` / `timeout`: the signal or the budget ended the exchange.
 * - `connection_lost`: the connection broke.
 * `sent` says whether the provider may have received the request.
 */
export class TransportFailure extends Error {
  constructor(
    readonly kind: 'not_sent' | 'cancelled' | 'timeout' | 'connection_lost' | 'response_too_large',
    readonly sent: 'no' | 'maybe' | 'yes',
    readonly head?: ResponseHead,
    /** The cancellation reason, when kind is `cancelled`. */
    readonly reason?: unknown,
  ) {
    super(`provider exchange failed: ${kind}`);
    this.name = 'TransportFailure';
  }
}

export interface ResponseHead {
  readonly status: number;
  readonly headers: HeaderReader;
  readonly request_id?: string;
}

export interface ProviderResponse extends ResponseHead {
  readonly text: string;
  /** The parsed body, or undefined when empty or not JSON. */
  readonly json: unknown;
  /** True when the body was non-empty but not JSON. */
  readonly malformed: boolean;
}

export interface ExchangeOptions {
  readonly fetch: ProviderFetch;
  /** Cooperative cancellation (ctx.cancellation); absent for requests that must run after it fired. */
  readonly signal?: AbortSignal;
  /** Time budget for the whole exchange, head and body. */
  readonly budget_ms: number;
  readonly request_id_header?: string;
  /**
   * Adds credentials to the outgoing headers, at the edge, right before the
   * request is sent. Its failure (a typed ConnectorFailure) is rethrown.
   */
  readonly authorize?: (headers: RequestHeaders) => Promise<void>;
  /** Awaited after the response head arrived and before the body is read. */
  readonly onHeaders?: (head: ResponseHead) => Promise<void>;
}

const TIMEOUT = Symbol('timeout');
const CANCELLED = Symbol('cancelled');

function errorCodes(err: unknown): string[] {
  const out: string[] = [];
  const visit = (e: unknown, depth: number): void => {
    if (depth > 4 || e === null || typeof e !== 'object') return;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') out.push(code);
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors)) for (const x of errors) visit(x, depth + 1);
    visit((e as { cause?: unknown }).cause, depth + 1);
  };
  visit(err, 0);
  return out;
}

function provesNotSent(err: unknown): boolean {
  const codes = errorCodes(err);
  return codes.length > 0 && codes.some((c) => NOT_SENT_CODES.has(c)) && !codes.some((c) => c === 'UND_ERR_SOCKET' || c === 'ECONNRESET' || c === 'EPIPE');
}

/** Outgoing request headers, by lower-case name. */
export class RequestHeaders {
  readonly #values = new Map<string, string>();

  constructor(init: Readonly<Record<string, string>> = {}) {
    for (const [name, value] of Object.entries(init)) this.set(name, value);
  }

  set(name: string, value: string): void {
    this.#values.set(name.toLowerCase(), value);
  }

  get(name: string): string | null {
    return this.#values.get(name.toLowerCase()) ?? null;
  }

  toRecord(): Record<string, string> {
    return Object.fromEntries(this.#values);
  }
}

async function readCapped(res: ProviderFetchResponse, limit: number): Promise<string | undefined> {
  if (res.body === null) return '';
  const chunks = res.body[Symbol.asyncIterator]();
  const read: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await chunks.next();
    if (done === true) break;
    size += value.byteLength;
    if (size > limit) {
      // Ends the iteration, which discards the rest (a web stream is cancelled, a Node stream destroyed).
      await chunks.return?.().catch(() => undefined);
      return undefined;
    }
    read.push(value);
  }
  return Buffer.concat(read).toString('utf8');
}

/** Sends one request and reads its response, or throws a TransportFailure (or the authorize/onHeaders error). */
export async function exchange(req: BuiltRequest, opts: ExchangeOptions): Promise<ProviderResponse> {
  const signal = opts.signal;
  if (signal?.aborted) throw new TransportFailure('cancelled', 'no', undefined, signal.reason);
  if (opts.budget_ms <= 0) throw new TransportFailure('timeout', 'no');

  const headers = new RequestHeaders(req.headers);
  headers.set('accept', 'application/json');
  if (req.body !== undefined) headers.set('content-type', 'application/json');
  if (opts.authorize) await opts.authorize(headers);
  if (signal?.aborted) throw new TransportFailure('cancelled', 'no', undefined, signal.reason);

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(TIMEOUT), opts.budget_ms);
  const onAbort = (): void => controller.abort(CANCELLED);
  signal?.addEventListener('abort', onAbort, { once: true });
  const aborted = (sent: 'maybe' | 'yes', head?: ResponseHead): TransportFailure =>
    controller.signal.reason === TIMEOUT ? new TransportFailure('timeout', sent, head) : new TransportFailure('cancelled', sent, head, signal?.reason);

  try {
    let res: ProviderFetchResponse;
    try {
      res = await opts.fetch(req.url, {
        method: req.method,
        headers: headers.toRecord(),
        ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
        signal: controller.signal,
        // Never follow a redirect: credentials must not travel to another origin.
        redirect: 'manual',
      });
    } catch (err) {
      if (controller.signal.aborted) throw aborted('maybe');
      if (provesNotSent(err)) throw new TransportFailure('not_sent', 'no');
      throw new TransportFailure('connection_lost', 'maybe');
    }
    const requestId = opts.request_id_header ? res.headers.get(opts.request_id_header) : null;
    const head: ResponseHead = {
      status: res.status,
      headers: res.headers,
      ...(requestId !== null && requestId.length > 0 && requestId.length <= 512 ? { request_id: requestId } : {}),
    };
    if (opts.onHeaders) {
      try {
        await opts.onHeaders(head);
      } catch (err) {
        await res.body?.cancel().catch(() => undefined);
        throw err;
      }
    }
    let text: string | undefined;
    try {
      text = await readCapped(res, MAX_RESPONSE_BYTES);
    } catch {
      if (controller.signal.aborted) throw aborted('yes', head);
      throw new TransportFailure('connection_lost', 'yes', head);
    }
    if (text === undefined) throw new TransportFailure('response_too_large', 'yes', head);
    let json: unknown;
    let malformed = false;
    if (text.trim() !== '') {
      try {
        json = JSON.parse(text) as unknown;
      } catch {
        malformed = true;
      }
    }
    return { ...head, text, json, malformed };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Waits `ms`, or rejects with a TransportFailure when the signal fires or the
 * budget ends first. Used between completion polls; never a synchronisation device.
 */
export function pause(ms: number, signal: AbortSignal | undefined, budget_ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new TransportFailure('cancelled', 'no', undefined, signal.reason));
      return;
    }
    // When the budget ends before the pause does, fail at the end of the budget.
    const expires = budget_ms <= ms;
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new TransportFailure('cancelled', 'no', undefined, signal?.reason));
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        if (expires) reject(new TransportFailure('timeout', 'no'));
        else resolve();
      },
      expires ? Math.max(0, budget_ms) : ms,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
