/**
 * Payments provider simulator: a small Stripe-like HTTP API (node:http only)
 * with idempotent charges and refunds, an operation lookup, an inspectable
 * ledger and injectable faults. Used by local runs, end-to-end tests and
 * benchmarks. See README.md next to this file for the API.
 *
 * Concurrency: the process is single-threaded, and between reserving an
 * idempotency key and committing its effect there is no `await` (unless a
 * `before_commit` latency fault holds the reservation on purpose, in which case
 * duplicates get 409 `idempotency_key_in_use`). So N concurrent identical
 * requests produce exactly one ledger effect.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type * as z from 'zod';
import { FaultBook, type FaultContext, type FaultRuleView, type SelectedFault } from './faults.js';
import { BodyAborted, BodyTooLarge, errorBody, isJsonContentType, readBody, sendJson, stableStringify, validationError } from './http.js';
import {
  CancelBody,
  CreateChargeBody,
  CreateRefundBody,
  FaultRuleList,
  IdempotencyKey,
  OperationIdParam,
  ResolveBody,
  ResourceIdParam,
  type Fault,
  type FaultRuleInput,
  type LedgerEntry,
  type OperationView,
} from './schemas.js';
import { ProviderState, providerError, type CommitOutcome, type ProviderError, type StoredResponse } from './state.js';

export type { FaultRuleInput, LedgerEntry, OperationView, Fault } from './schemas.js';
export type { FaultRuleView } from './faults.js';

// --- public types -------------------------------------------------------------------

export interface PaymentsSimulatorOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** Defaults to 127.0.0.1. The `/_sim/*` routes are unauthenticated: keep it on loopback. */
  readonly host?: string;
  /** Accepted `Authorization: Bearer` keys. At least one, none empty. */
  readonly apiKeys: readonly string[];
  /** Seed of the RNG behind probabilistic faults (default 1). */
  readonly seed?: number;
  /** Fault rules installed at start. */
  readonly faults?: readonly FaultRuleInput[];
  /** Clock for timestamps (default: system time). */
  readonly now?: () => Date;
  /** Receives one line per request. Lines never contain the Authorization header. */
  readonly logger?: (line: SimLogLine) => void;
  /** Serve the dev-only `/_sim/*` control routes other than health (default true). */
  readonly controlRoutes?: boolean;
}

export interface SimLogLine {
  readonly ts: string;
  readonly request_id: string;
  readonly method: string;
  readonly path: string;
  /** HTTP status, or `dropped` when the socket was destroyed without a response. */
  readonly status: number | 'dropped';
  readonly duration_ms: number;
  readonly idempotency_key?: string;
  readonly replayed?: boolean;
  readonly fault?: Fault['type'];
}

export type SimEvent =
  | {
      readonly type: 'fault_applied';
      readonly request_id: string;
      readonly rule_id: string;
      readonly fault: Fault;
      readonly method: string;
      readonly path: string;
      readonly idempotency_key: string | undefined;
    }
  | { readonly type: 'committed'; readonly entry: LedgerEntry }
  | {
      readonly type: 'response';
      readonly request_id: string;
      readonly method: string;
      readonly path: string;
      readonly status: number | 'dropped';
      readonly idempotency_key: string | undefined;
      /** Position in `apiKeys` of the key a `/v1` request authenticated with (never the key itself). */
      readonly api_key_index?: number;
    };

export interface PaymentsSimulator {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  /** Closes the listener and every connection, ends pending fault delays; idempotent. */
  stop(): Promise<void>;
  /** Every committed effect, in commit order. */
  ledger(): LedgerEntry[];
  /** Committed effects made under one idempotency key (0 or 1 entries). */
  effectsFor(idempotencyKey: string): LedgerEntry[];
  /** Replaces the fault rules (throws a ZodError and changes nothing if one is invalid). */
  setFaults(rules: readonly FaultRuleInput[]): FaultRuleView[];
  /** Appends fault rules after the current ones. */
  addFaults(rules: readonly FaultRuleInput[]): FaultRuleView[];
  /** The rules not yet used up, with their remaining uses. */
  faults(): FaultRuleView[];
  /** Forgets all charges, refunds, operations, idempotency keys, ledger and faults; reseeds the RNG. */
  reset(): void;
  /** Replaces the accepted API keys (a rotation: the old ones get 401 from now on). Same rules as `apiKeys`. */
  setApiKeys(keys: readonly string[]): void;
  /** Resolves once no request is being handled (including ones held by latency faults). */
  idle(): Promise<void>;
  /** Ends every pending latency-fault delay now, as if it had elapsed. Returns how many. */
  releaseDelays(): number;
  operation(operationId: string): OperationView | undefined;
  /** Settles a pending operation (as `POST /_sim/operations/{id}/resolve`). Throws if it is not pending. */
  resolveOperation(operationId: string, status: 'succeeded' | 'failed', failureCode?: string): OperationView;
  /** Subscribes to simulator events; returns the unsubscribe function. */
  onEvent(listener: (event: SimEvent) => void): () => void;
  /** The next event matching `predicate`. */
  waitForEvent(predicate: (event: SimEvent) => boolean): Promise<SimEvent>;
}

// --- implementation -------------------------------------------------------------------

type DelayEnd = 'elapsed' | 'released' | 'stopped';

interface RequestCtx {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly state: ProviderState;
  idempotencyKey?: string;
  /** Index in `apiKeys` of the key the request authenticated with. */
  apiKeyIndex?: number;
  replayed?: boolean;
  fault?: Fault['type'];
  /** The `customer` of a charge request (fault rules can match it). */
  customer?: string;
}

/** Thrown inside a handler to answer with a typed provider error. */
class Reject extends Error {
  constructor(readonly error: ProviderError) {
    super(error.type);
  }
}

const UNAVAILABLE = (status: number): ProviderError =>
  providerError(status, 'provider_unavailable', 'The provider is temporarily unavailable; retry with the same Idempotency-Key');

/** A decoded path segment; a malformed escape yields '' (which matches no ID, so 404). */
function pathParam(raw: string | undefined): string {
  try {
    return decodeURIComponent(raw ?? '');
  } catch {
    return '';
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export async function startPaymentsSimulator(options: PaymentsSimulatorOptions): Promise<PaymentsSimulator> {
  const apiKeys = options.apiKeys;
  if (!Array.isArray(apiKeys) || apiKeys.length === 0 || apiKeys.some((k) => typeof k !== 'string' || k.length === 0)) {
    throw new TypeError('startPaymentsSimulator: apiKeys must list at least one non-empty key');
  }
  // Compare digests in constant time (equal lengths whatever the presented key).
  let keyDigests = apiKeys.map(digest);
  const host = options.host ?? '127.0.0.1';
  const now = options.now ?? (() => new Date());
  const controlRoutes = options.controlRoutes ?? true;
  const log = options.logger;

  const listeners = new Set<(e: SimEvent) => void>();
  const emit = (e: SimEvent): void => {
    for (const l of [...listeners]) {
      try {
        l(e);
      } catch {
        // a listener's failure is not the simulator's
      }
    }
  };

  const makeState = (): ProviderState => new ProviderState(now, (entry) => emit({ type: 'committed', entry }));
  let state = makeState();
  const faultBook = new FaultBook(options.seed ?? 1);
  if (options.faults) faultBook.set(options.faults);

  // Latency-fault delays, so stop() and releaseDelays() can end them.
  const delays = new Map<NodeJS.Timeout, (end: DelayEnd) => void>();
  let stopping = false;
  const wait = (ms: number): Promise<DelayEnd> => {
    if (stopping) return Promise.resolve('stopped');
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        delays.delete(timer);
        resolve('elapsed');
      }, ms);
      delays.set(timer, resolve);
    });
  };
  const endDelays = (end: DelayEnd): number => {
    const n = delays.size;
    for (const [timer, resolve] of [...delays]) {
      clearTimeout(timer);
      delays.delete(timer);
      resolve(end);
    }
    return n;
  };

  // In-flight requests, for idle().
  const inflight = new Set<Promise<void>>();
  const idle = async (): Promise<void> => {
    while (inflight.size > 0) await Promise.allSettled([...inflight]);
  };

  /** The index of the presented key in `apiKeys`, or undefined. Every key is compared (constant time). */
  const authenticate = (header: string | undefined): number | undefined => {
    const m = header === undefined ? null : /^Bearer +(\S+) *$/i.exec(header);
    if (!m?.[1]) return undefined;
    const presented = digest(m[1]);
    let index: number | undefined;
    keyDigests.forEach((d, i) => {
      if (timingSafeEqual(presented, d)) index ??= i;
    });
    return index;
  };

  // --- response plumbing ---

  const respond = (ctx: RequestCtx, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    sendJson(ctx.res, status, body, {
      headers: { 'request-id': ctx.id, ...(ctx.replayed ? { 'idempotent-replayed': 'true' } : {}), ...headers },
    });
  };
  const fail = (ctx: RequestCtx, err: ProviderError, headers: Record<string, string> = {}): void => {
    respond(ctx, err.status, errorBody(err, ctx.id), headers);
  };
  const drop = (ctx: RequestCtx): void => {
    ctx.res.socket?.destroy();
    ctx.res.destroy();
  };

  /**
   * Runs `work` (a synchronous commit, replay or read) under the selected fault.
   * `abandon` undoes the idempotency reservation when nothing was committed.
   */
  const runWithFault = async (
    ctx: RequestCtx,
    selected: SelectedFault | undefined,
    work: () => { response: StoredResponse; headers?: Record<string, string> },
    abandon: () => void = () => {},
  ): Promise<void> => {
    const f = selected?.fault;
    if (f?.type === 'error_before_commit') {
      abandon();
      fail(ctx, UNAVAILABLE(f.status), { 'retry-after': '1' });
      return;
    }
    if (f?.type === 'latency' && f.phase === 'before_commit') {
      if ((await wait(f.ms)) === 'stopped') {
        abandon();
        drop(ctx);
        return;
      }
    }
    const { response, headers } = work();
    if (f?.type === 'drop_after_commit') {
      drop(ctx);
      return;
    }
    if (f?.type === 'error_after_commit') {
      fail(ctx, UNAVAILABLE(f.status), { 'retry-after': '1' });
      return;
    }
    if (f?.type === 'latency' && f.phase === 'after_commit') {
      if ((await wait(f.ms)) === 'stopped') {
        drop(ctx);
        return;
      }
    }
    respond(ctx, response.status, response.body, headers);
  };

  const selectFault = (ctx: RequestCtx, stage: FaultContext['stage']): SelectedFault | undefined => {
    const method = ctx.method === 'GET' ? 'GET' : 'POST';
    const selected = faultBook.select({ method, path: ctx.path, idempotencyKey: ctx.idempotencyKey, customer: ctx.customer, stage });
    if (selected) {
      ctx.fault = selected.fault.type;
      emit({
        type: 'fault_applied',
        request_id: ctx.id,
        rule_id: selected.rule_id,
        fault: selected.fault,
        method: ctx.method,
        path: ctx.path,
        idempotency_key: ctx.idempotencyKey,
      });
    }
    return selected;
  };

  // --- request parsing ---

  const jsonBody = async (ctx: RequestCtx, emptyAs?: unknown): Promise<unknown> => {
    if (!isJsonContentType(ctx.req.headers['content-type'])) {
      throw new Reject(providerError(415, 'unsupported_media_type', 'The request body must be application/json'));
    }
    let raw: Buffer;
    try {
      raw = await readBody(ctx.req);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        throw new Reject(providerError(413, 'payload_too_large', 'The request body exceeds 64 KiB'));
      }
      throw err;
    }
    const text = raw.toString('utf8');
    if (text.trim() === '' && emptyAs !== undefined) return emptyAs;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new Reject(providerError(400, 'invalid_json', 'The request body is not valid JSON'));
    }
  };

  const parse = <S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> => {
    const r = schema.safeParse(value);
    if (!r.success) throw new Reject(validationError(r.error, where));
    return r.data;
  };

  const requireIdempotencyKey = (ctx: RequestCtx): string => {
    const raw = ctx.req.headers['idempotency-key'];
    if (raw === undefined) {
      throw new Reject(providerError(400, 'idempotency_key_missing', 'Mutations need an Idempotency-Key header', { param: 'Idempotency-Key' }));
    }
    const r = IdempotencyKey.safeParse(raw);
    if (!r.success) {
      throw new Reject(
        providerError(400, 'invalid_request', 'The Idempotency-Key header must be 1-255 printable ASCII characters without spaces', {
          param: 'Idempotency-Key',
        }),
      );
    }
    ctx.idempotencyKey = r.data;
    return r.data;
  };

  // --- idempotent mutations ---

  /**
   * The idempotency protocol shared by charges, refunds and cancels. `execute`
   * runs synchronously right after the reservation (or after a before-commit
   * delay) and either commits (stored for replay) or rejects (key released).
   */
  const mutate = async (
    ctx: RequestCtx,
    key: string,
    endpoint: string,
    body: unknown,
    stage: 'create' | 'cancel',
    execute: (fault: Fault | undefined) => { store: boolean; response: StoredResponse },
  ): Promise<void> => {
    const st = ctx.state;
    const fingerprint = stableStringify(body);
    // ---- synchronous from here until runWithFault's first await ----
    const existing = st.idempotencyRecord(key);
    if (existing) {
      if (existing.endpoint !== endpoint || existing.fingerprint !== fingerprint) {
        fail(
          ctx,
          providerError(409, 'idempotency_key_reuse', 'This Idempotency-Key was already used with a different request', {
            param: 'Idempotency-Key',
          }),
        );
        return;
      }
      if (existing.state === 'in_progress') {
        fail(
          ctx,
          providerError(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed', {
            param: 'Idempotency-Key',
          }),
          { 'retry-after': '1' },
        );
        return;
      }
      const stored = existing.response;
      ctx.replayed = true;
      await runWithFault(ctx, selectFault(ctx, 'replay'), () => ({ response: stored }));
      return;
    }
    const selected = selectFault(ctx, stage);
    st.reserve(key, endpoint, fingerprint);
    await runWithFault(
      ctx,
      selected,
      () => {
        const out = execute(selected?.fault);
        if (out.store) st.complete(key, out.response);
        else st.release(key);
        return { response: out.response };
      },
      () => st.release(key),
    );
  };

  const outcomeOf = (fault: Fault | undefined): CommitOutcome => {
    if (fault?.type === 'pending') return { status: 'pending' };
    if (fault?.type === 'decline') return { status: 'failed', failure_code: fault.code };
    return { status: 'succeeded' };
  };

  const declined = (ctx: RequestCtx, kind: 'charge' | 'refund', view: { id: string; operation_id: string; failure_code: string | null }): StoredResponse => ({
    status: 402,
    body: errorBody(
      providerError(402, kind === 'charge' ? 'card_declined' : 'refund_declined', `The ${kind} was declined`, {
        extra: { code: view.failure_code, operation_id: view.operation_id, [`${kind}_id`]: view.id },
      }),
      ctx.id,
    ),
  });

  const createCharge = async (ctx: RequestCtx): Promise<void> => {
    const key = requireIdempotencyKey(ctx);
    const body = parse(CreateChargeBody, await jsonBody(ctx), 'charge');
    if (body.customer !== undefined) ctx.customer = body.customer;
    await mutate(ctx, key, 'POST /v1/charges', body, 'create', (fault) => {
      const outcome = outcomeOf(fault);
      const view = ctx.state.commitCharge(key, body, outcome);
      if (outcome.status === 'failed') return { store: true, response: declined(ctx, 'charge', view) };
      return { store: true, response: { status: outcome.status === 'pending' ? 202 : 201, body: view } };
    });
  };

  const createRefund = async (ctx: RequestCtx): Promise<void> => {
    const key = requireIdempotencyKey(ctx);
    const body = parse(CreateRefundBody, await jsonBody(ctx), 'refund');
    await mutate(ctx, key, 'POST /v1/refunds', body, 'create', (fault) => {
      const outcome = outcomeOf(fault);
      const r = ctx.state.commitRefund(key, body, outcome);
      if (!r.ok) return { store: false, response: { status: r.error.status, body: errorBody(r.error, ctx.id) } };
      if (outcome.status === 'failed') return { store: true, response: declined(ctx, 'refund', r.value) };
      return { store: true, response: { status: outcome.status === 'pending' ? 202 : 201, body: r.value } };
    });
  };

  const cancelOperation = async (ctx: RequestCtx, operationId: string): Promise<void> => {
    const key = requireIdempotencyKey(ctx);
    const body = parse(CancelBody, await jsonBody(ctx, {}), 'cancel request');
    const endpoint = `POST /v1/operations/${operationId}/cancel`;
    await mutate(ctx, key, endpoint, body, 'cancel', () => {
      if (!OperationIdParam.safeParse(operationId).success) {
        const err = providerError(404, 'resource_missing', 'No such operation');
        return { store: false, response: { status: 404, body: errorBody(err, ctx.id) } };
      }
      const r = ctx.state.finalize(operationId, 'canceled');
      if (!r.ok) return { store: false, response: { status: r.error.status, body: errorBody(r.error, ctx.id) } };
      return { store: true, response: { status: 200, body: r.value } };
    });
  };

  // --- reads ---

  const read = async (ctx: RequestCtx, produce: () => StoredResponse): Promise<void> => {
    await runWithFault(ctx, selectFault(ctx, 'read'), () => ({ response: produce() }));
  };

  const notFound = (ctx: RequestCtx, what: string): StoredResponse => ({
    status: 404,
    body: errorBody(providerError(404, 'resource_missing', `No such ${what}`), ctx.id),
  });

  const getOperationByKey = async (ctx: RequestCtx): Promise<void> => {
    const extra = [...ctx.query.keys()].filter((k) => k !== 'idempotency_key');
    if (extra.length > 0) {
      throw new Reject(providerError(400, 'invalid_request', `Unknown query parameter: ${extra[0]}`, { param: extra[0] }));
    }
    const raw = ctx.query.get('idempotency_key');
    if (raw === null) {
      throw new Reject(providerError(400, 'invalid_request', 'Query parameter idempotency_key is required', { param: 'idempotency_key' }));
    }
    const key = parse(IdempotencyKey, raw, 'idempotency_key');
    await read(ctx, () => {
      const op = ctx.state.operationForKey(key);
      if (op) return { status: 200, body: op };
      if (ctx.state.idempotencyRecord(key)?.state === 'in_progress') {
        const err = providerError(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed');
        return { status: 409, body: errorBody(err, ctx.id) };
      }
      return notFound(ctx, 'operation for this idempotency key');
    });
  };

  // --- router ---

  const methodNotAllowed = (allow: string): never => {
    throw new Reject(providerError(405, 'method_not_allowed', `Allowed: ${allow}`, { extra: { allow } }));
  };

  const routeV1 = async (ctx: RequestCtx): Promise<void> => {
    ctx.apiKeyIndex = authenticate(ctx.req.headers.authorization);
    if (ctx.apiKeyIndex === undefined) {
      fail(ctx, providerError(401, 'authentication_failed', 'Missing or invalid API key'), {
        'www-authenticate': 'Bearer realm="payments-simulator"',
      });
      return;
    }
    const p = ctx.path;
    const seg = p.split('/').slice(1); // ['v1', ...]
    if (p === '/v1/charges') {
      if (ctx.method !== 'POST') methodNotAllowed('POST');
      return createCharge(ctx);
    }
    if (p === '/v1/refunds') {
      if (ctx.method !== 'POST') methodNotAllowed('POST');
      return createRefund(ctx);
    }
    if (p === '/v1/operations') {
      if (ctx.method !== 'GET') methodNotAllowed('GET');
      return getOperationByKey(ctx);
    }
    if (seg.length === 3 && (seg[1] === 'charges' || seg[1] === 'refunds' || seg[1] === 'operations')) {
      if (ctx.method !== 'GET') methodNotAllowed('GET');
      const id = pathParam(seg[2]);
      if (seg[1] === 'operations') {
        return read(ctx, () => {
          const op = OperationIdParam.safeParse(id).success ? ctx.state.operation(id) : undefined;
          return op ? { status: 200, body: op } : notFound(ctx, 'operation');
        });
      }
      const kind = seg[1] === 'charges' ? 'charge' : 'refund';
      return read(ctx, () => {
        const valid = ResourceIdParam.safeParse(id).success;
        const view = !valid ? undefined : kind === 'charge' ? ctx.state.charge(id) : ctx.state.refund(id);
        return view ? { status: 200, body: view } : notFound(ctx, kind);
      });
    }
    if (seg.length === 4 && seg[1] === 'operations' && seg[3] === 'cancel') {
      if (ctx.method !== 'POST') methodNotAllowed('POST');
      return cancelOperation(ctx, pathParam(seg[2]));
    }
    fail(ctx, providerError(404, 'route_not_found', 'No such route'));
  };

  const routeSim = async (ctx: RequestCtx): Promise<void> => {
    const p = ctx.path;
    if (p === '/_sim/health') {
      if (ctx.method !== 'GET') methodNotAllowed('GET');
      respond(ctx, 200, { status: 'ok' });
      return;
    }
    if (!controlRoutes) {
      fail(ctx, providerError(404, 'route_not_found', 'No such route'));
      return;
    }
    if (p === '/_sim/ledger') {
      if (ctx.method !== 'GET') methodNotAllowed('GET');
      const key = ctx.query.get('idempotency_key');
      respond(ctx, 200, { entries: key === null ? ctx.state.ledger() : ctx.state.effectsFor(key) });
      return;
    }
    if (p === '/_sim/faults') {
      if (ctx.method === 'GET') {
        respond(ctx, 200, { faults: faultBook.list() });
        return;
      }
      if (ctx.method === 'DELETE') {
        faultBook.clear();
        respond(ctx, 200, { faults: [] });
        return;
      }
      if (ctx.method !== 'POST') methodNotAllowed('GET, POST, DELETE');
      const rules = parse(FaultRuleList, await jsonBody(ctx), 'fault rules');
      const mode = ctx.query.get('mode') ?? 'replace';
      if (mode !== 'replace' && mode !== 'append') {
        throw new Reject(providerError(400, 'invalid_request', 'mode must be replace or append', { param: 'mode' }));
      }
      const list = mode === 'append' ? faultBook.add(rules) : faultBook.set(rules);
      respond(ctx, 200, { faults: list });
      return;
    }
    if (p === '/_sim/reset') {
      if (ctx.method !== 'POST') methodNotAllowed('POST');
      handle.reset();
      respond(ctx, 200, { status: 'reset' });
      return;
    }
    if (p === '/_sim/delays/release') {
      if (ctx.method !== 'POST') methodNotAllowed('POST');
      respond(ctx, 200, { released: endDelays('released') });
      return;
    }
    const m = /^\/_sim\/operations\/([^/]+)\/resolve$/.exec(p);
    if (m) {
      if (ctx.method !== 'POST') methodNotAllowed('POST');
      const id = pathParam(m[1]);
      const body = parse(ResolveBody, await jsonBody(ctx), 'resolve request');
      const r = OperationIdParam.safeParse(id).success
        ? ctx.state.finalize(id, body.status, body.failure_code)
        : ({ ok: false, error: providerError(404, 'resource_missing', 'No such operation') } as const);
      if (!r.ok) fail(ctx, r.error);
      else respond(ctx, 200, r.value);
      return;
    }
    fail(ctx, providerError(404, 'route_not_found', 'No such route'));
  };

  const handleRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = performance.now();
    res.on('error', () => {});
    const requestId = `req_${randomBytes(8).toString('hex')}`;
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://simulator.invalid');
    } catch {
      url = new URL('http://simulator.invalid/');
    }
    const ctx: RequestCtx = {
      req,
      res,
      id: requestId,
      method: (req.method ?? 'GET').toUpperCase(),
      path: url.pathname,
      query: url.searchParams,
      state, // captured: a reset() during this request does not mix old and new state
    };
    let logged = false;
    const finish = (): void => {
      if (logged) return;
      logged = true;
      const status: number | 'dropped' = res.writableEnded ? res.statusCode : 'dropped';
      emit({
        type: 'response',
        request_id: ctx.id,
        method: ctx.method,
        path: ctx.path,
        status,
        idempotency_key: ctx.idempotencyKey,
        ...(ctx.apiKeyIndex !== undefined ? { api_key_index: ctx.apiKeyIndex } : {}),
      });
      if (!log) return;
      const line: SimLogLine = {
        ts: now().toISOString(),
        request_id: ctx.id,
        method: ctx.method,
        path: ctx.path,
        status,
        duration_ms: Math.round(performance.now() - started),
        ...(ctx.idempotencyKey === undefined ? {} : { idempotency_key: ctx.idempotencyKey }),
        ...(ctx.replayed ? { replayed: true } : {}),
        ...(ctx.fault === undefined ? {} : { fault: ctx.fault }),
      };
      try {
        log(line);
      } catch {
        // a logger's failure is not the simulator's
      }
    };
    try {
      if (ctx.path === '/v1' || ctx.path.startsWith('/v1/')) await routeV1(ctx);
      else if (ctx.path.startsWith('/_sim/')) await routeSim(ctx);
      else fail(ctx, providerError(404, 'route_not_found', 'No such route'));
    } catch (err) {
      if (err instanceof Reject) {
        const allow = err.error.extra?.allow;
        fail(ctx, err.error, typeof allow === 'string' ? { allow } : {});
      } else if (err instanceof BodyAborted) {
        drop(ctx);
      } else {
        // A simulator bug, never a response to bad input.
        if (!res.headersSent) fail(ctx, providerError(500, 'internal_error', 'Internal simulator error'));
        else drop(ctx);
      }
    }
    // A request whose body was never read (e.g. 401) must not leave the connection stuck.
    if (!req.complete) req.resume();
    finish();
  };

  const server: Server = createServer((req, res) => {
    const p = handleRequest(req, res);
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  let stopped: Promise<void> | undefined;
  const handle: PaymentsSimulator = {
    url: `http://${urlHost}:${port}`,
    port,
    stop: () => {
      stopped ??= (async () => {
        stopping = true;
        endDelays('stopped');
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await closed;
        await idle();
        listeners.clear();
      })();
      return stopped;
    },
    ledger: () => state.ledger(),
    effectsFor: (key) => state.effectsFor(key),
    setFaults: (rules) => faultBook.set(rules),
    addFaults: (rules) => faultBook.add(rules),
    faults: () => faultBook.list(),
    reset: () => {
      state = makeState();
      faultBook.reset();
    },
    setApiKeys: (keys) => {
      if (!Array.isArray(keys) || keys.length === 0 || keys.some((k) => typeof k !== 'string' || k.length === 0)) {
        throw new TypeError('setApiKeys: keys must list at least one non-empty key');
      }
      keyDigests = keys.map(digest);
    },
    idle,
    releaseDelays: () => endDelays('released'),
    operation: (id) => state.operation(id),
    resolveOperation: (id, status, failureCode) => {
      const r = state.finalize(id, status, failureCode);
      if (!r.ok) throw new Error(`resolveOperation: ${r.error.type}: ${r.error.message}`);
      return r.value;
    },
    onEvent: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    waitForEvent: (predicate) =>
      new Promise<SimEvent>((resolve) => {
        const off = handle.onEvent((e) => {
          if (predicate(e)) {
            off();
            resolve(e);
          }
        });
      }),
  };
  return handle;
}
