/**
 * A typed client for the AIP HTTPS API (fetch-based, Node 20+).
 *
 *   const aip = new AipClient({ baseUrl: 'http://127.0.0.1:3000', token });
 *   const sub = await aip.submitAction(action, { wait: 5 });
 *   const done = await aip.waitForAction(sub.action_id, { timeoutMs: 120_000 });
 *
 * Every method maps to one route (see docs/http-api.md). Non-2xx answers
 * become {@link AipClientError}s with the problem's catalogued `code` and the
 * HTTP `status`. Nothing is retried implicitly except inside
 * {@link AipClient.waitForAction}, which keeps long-polling through
 * retryable errors until its deadline.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TENANT_HEADER } from '../http/constants.js';
import { AipClientError, CLIENT_ERROR_CODES, errorFromResponse } from './errors.js';
import {
  MAX_WAIT_SECONDS,
  TERMINAL_STATUSES,
  type ActionState,
  type ApprovalDecision,
  type HealthReport,
  type OperatorView,
  type Page,
  type StreamChunkView,
  type StreamPage,
  type SubmitBody,
  type SubmitResponse,
  type TransactionInclude,
  type TransactionResult,
  type TransactionSelector,
} from './types.js';

/** Header naming the tenant when the caller belongs to several. */
export { TENANT_HEADER };
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export type TokenSource = string | (() => string | Promise<string>);

export interface AipClientOptions {
  /** e.g. `http://127.0.0.1:3000` or an API Gateway stage URL (`https://…/prod`). */
  readonly baseUrl: string;
  /** Bearer token, or a function returning a fresh one per request. */
  readonly token?: TokenSource;
  /** Default tenant (X-AIP-Tenant) for tenant-scoped routes; needed when the token names several tenants. */
  readonly tenant?: string;
  /** Per-request timeout, on top of any long-poll wait. Default 30 s. */
  readonly timeoutMs?: number;
  /** Defaults to the global fetch. */
  readonly fetch?: typeof fetch;
  /** Extra headers on every request. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface CallOptions {
  /** Overrides the client's tenant for this call. */
  readonly tenant?: string;
  readonly signal?: AbortSignal;
}

export interface WaitOptions extends CallOptions {
  /** Long-poll up to this many seconds (0..25). */
  readonly wait?: number;
}

export interface SubmitResult extends SubmitResponse {
  /** The HTTP status of the answer: 200/201 answered by the runtime, 202 queued. */
  readonly http_status: number;
}

export interface WaitForActionOptions extends CallOptions {
  /** Overall deadline. */
  readonly timeoutMs: number;
  /** Called after every poll with the latest state and the time spent so far. */
  readonly onProgress?: (state: ActionState, elapsedMs: number) => void;
  /** Stop at `requires_human` too (default true): an approval is needed before anything else happens. */
  readonly stopAtRequiresHuman?: boolean;
  /** Long-poll window per request, 1..25 s. Default 20. */
  readonly pollSeconds?: number;
}

export interface StreamChunksOptions extends CallOptions {
  /** Start after this sequence number. */
  readonly after?: number;
  /** Keep reading until the action is terminal (polling), instead of stopping at the end of what is persisted. */
  readonly follow?: boolean;
  /** Pause between polls while following. Default 1000 ms. */
  readonly pollIntervalMs?: number;
}

export interface PageOptions extends CallOptions {
  readonly cursor?: string;
  readonly limit?: number;
}

/** Terminal per the protocol, or `requires_human` when asked to stop there. */
export function isSettled(state: ActionState, stopAtRequiresHuman = true): boolean {
  const status = state.action_result.status;
  return TERMINAL_STATUSES.includes(status) || (stopAtRequiresHuman && status === 'requires_human');
}

function invalid(message: string): AipClientError {
  return new AipClientError({ status: 0, code: CLIENT_ERROR_CODES.badRequest, message });
}

function checkWait(wait: number | undefined): void {
  if (wait === undefined) return;
  if (!Number.isInteger(wait) || wait < 0 || wait > MAX_WAIT_SECONDS) throw invalid(`wait must be an integer from 0 to ${MAX_WAIT_SECONDS} seconds`);
}

function pathId(id: string): string {
  if (typeof id !== 'string' || id.length === 0) throw invalid('an ID must be a non-empty string');
  return encodeURIComponent(id);
}

interface RequestSpec {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** false: send no tenant header (routes that take none). */
  readonly tenant?: string | false | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Added to the request timeout (long polls). */
  readonly waitSeconds?: number;
}

export class AipClient {
  readonly baseUrl: string;
  readonly tenant: string | undefined;
  readonly #token: TokenSource | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #headers: Readonly<Record<string, string>>;

  constructor(options: AipClientOptions) {
    if (!URL.canParse(options.baseUrl) || !/^https?:$/.test(new URL(options.baseUrl).protocol)) throw invalid('baseUrl must be an http(s) URL');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.tenant = options.tenant;
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#headers = options.headers ?? {};
  }

  // --- actions ---------------------------------------------------------------------

  /** `POST /v1/actions`: an action envelope or a TransactionRequest. `wait` sends `Prefer: wait=N`. */
  async submitAction(body: SubmitBody, options: WaitOptions = {}): Promise<SubmitResult> {
    checkWait(options.wait);
    const { status, body: answer } = await this.#request<SubmitResponse>({
      method: 'POST',
      path: '/v1/actions',
      body,
      ...(options.wait !== undefined ? { headers: { Prefer: `wait=${options.wait}` }, waitSeconds: options.wait } : {}),
      tenant: options.tenant,
      signal: options.signal,
    });
    return { ...answer, http_status: status };
  }

  /** `GET /v1/actions/{id}`, long-polling up to `wait` seconds. */
  async getAction(id: string, options: WaitOptions = {}): Promise<ActionState> {
    checkWait(options.wait);
    return (
      await this.#request<ActionState>({
        method: 'GET',
        path: `/v1/actions/${pathId(id)}`,
        query: { wait: options.wait },
        tenant: options.tenant,
        signal: options.signal,
        ...(options.wait !== undefined ? { waitSeconds: options.wait } : {}),
      })
    ).body;
  }

  /**
   * Long-polls until the action is terminal (or `requires_human`), or the
   * deadline passes (`client.wait_timeout`, with the last state in details).
   * Retryable errors (throttling, 5xx, network) are retried until the deadline.
   */
  async waitForAction(id: string, options: WaitForActionOptions): Promise<ActionState> {
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs < 0) throw invalid('timeoutMs must be a non-negative number');
    const pollSeconds = options.pollSeconds ?? 20;
    if (!Number.isInteger(pollSeconds) || pollSeconds < 1 || pollSeconds > MAX_WAIT_SECONDS) throw invalid(`pollSeconds must be 1..${MAX_WAIT_SECONDS}`);
    const stopAtHuman = options.stopAtRequiresHuman ?? true;
    const started = Date.now();
    let last: ActionState | undefined;
    for (;;) {
      const remainingMs = options.timeoutMs - (Date.now() - started);
      const wait = Math.max(0, Math.min(pollSeconds, Math.floor(remainingMs / 1000)));
      try {
        last = await this.getAction(id, {
          wait,
          ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
        options.onProgress?.(last, Date.now() - started);
        if (isSettled(last, stopAtHuman)) return last;
      } catch (err) {
        if (!(err instanceof AipClientError) || !err.retryable || options.signal?.aborted) throw err;
        const pause = Math.min(Math.max(err.retryAfterMs ?? 1_000, 100), Math.max(0, options.timeoutMs - (Date.now() - started)));
        if (pause > 0) await sleep(pause, undefined, options.signal ? { signal: options.signal } : undefined);
      }
      if (Date.now() - started >= options.timeoutMs) {
        throw new AipClientError({
          status: 0,
          code: CLIENT_ERROR_CODES.waitTimeout,
          message: `action ${id} did not finish within ${options.timeoutMs} ms${last ? ` (last status: ${last.action_result.status})` : ''}`,
          retryable: true,
          ...(last ? { details: { action_id: id, status: last.action_result.status } } : {}),
        });
      }
    }
  }

  /** `POST /v1/actions/{id}/cancel`. */
  async cancel(id: string, options: CallOptions = {}): Promise<Record<string, unknown>> {
    return (
      await this.#request<Record<string, unknown>>({
        method: 'POST',
        path: `/v1/actions/${pathId(id)}/cancel`,
        body: {},
        tenant: options.tenant,
        signal: options.signal,
      })
    ).body;
  }

  /** `GET /v1/actions/{id}/stream?after=`: one page of persisted chunks. */
  async readStream(id: string, options: CallOptions & { readonly after?: number } = {}): Promise<StreamPage> {
    if (options.after !== undefined && (!Number.isSafeInteger(options.after) || options.after < 0)) throw invalid('after must be a non-negative integer');
    return (
      await this.#request<StreamPage>({
        method: 'GET',
        path: `/v1/actions/${pathId(id)}/stream`,
        query: { after: options.after },
        tenant: options.tenant,
        signal: options.signal,
      })
    ).body;
  }

  /**
   * Every persisted chunk after `after`, in sequence order. With `follow`,
   * keeps polling until the action is terminal and no chunk is left.
   */
  async *streamChunks(id: string, options: StreamChunksOptions = {}): AsyncGenerator<StreamChunkView, void, undefined> {
    let after = options.after;
    const call = { ...(options.tenant !== undefined ? { tenant: options.tenant } : {}), ...(options.signal ? { signal: options.signal } : {}) };
    for (;;) {
      const page = await this.readStream(id, { ...call, ...(after !== undefined ? { after } : {}) });
      const chunks = page.items ?? page.chunks ?? [];
      for (const chunk of chunks) {
        yield chunk;
        if (typeof chunk.seq === 'number') after = chunk.seq;
      }
      if (chunks.length > 0) continue;
      if (!options.follow) return;
      const state = await this.getAction(id, call);
      if (TERMINAL_STATUSES.includes(state.action_result.status)) {
        // One last read: chunks persisted just before the action settled.
        const tail = await this.readStream(id, { ...call, ...(after !== undefined ? { after } : {}) });
        for (const chunk of tail.items ?? tail.chunks ?? []) yield chunk;
        return;
      }
      await sleep(options.pollIntervalMs ?? 1_000, undefined, options.signal ? { signal: options.signal } : undefined);
    }
  }

  // --- transactions and operators --------------------------------------------------

  /** `GET /v1/transactions` by exactly one of transaction_id, plan_id or action_id. */
  async getTransaction(
    selector: TransactionSelector,
    options: CallOptions & { readonly include?: readonly TransactionInclude[] } = {},
  ): Promise<TransactionResult> {
    const keys = (['transaction_id', 'plan_id', 'action_id'] as const).filter((k) => (selector as Record<string, unknown>)[k] !== undefined);
    if (keys.length !== 1) throw invalid('select by exactly one of transaction_id, plan_id or action_id');
    const key = keys[0] as 'transaction_id' | 'plan_id' | 'action_id';
    return (
      await this.#request<TransactionResult>({
        method: 'GET',
        path: '/v1/transactions',
        query: { [key]: (selector as Record<string, string>)[key], include: options.include?.length ? options.include.join(',') : undefined },
        tenant: options.tenant,
        signal: options.signal,
      })
    ).body;
  }

  /** `GET /v1/operator/transactions?view=`: what is stuck, one page. */
  async listOperator(view: OperatorView, options: PageOptions = {}): Promise<Page> {
    return (
      await this.#request<Page>({
        method: 'GET',
        path: '/v1/operator/transactions',
        query: { view, cursor: options.cursor, limit: options.limit },
        tenant: options.tenant,
        signal: options.signal,
      })
    ).body;
  }

  /** `POST /v1/operator/transactions/{id}/reconcile`: reconcile now (resets the attempt bound once). */
  async operatorReconcile(transactionId: string, options: CallOptions & { readonly reason?: string } = {}): Promise<Record<string, unknown>> {
    return (
      await this.#request<Record<string, unknown>>({
        method: 'POST',
        path: `/v1/operator/transactions/${pathId(transactionId)}/reconcile`,
        body: options.reason !== undefined ? { reason: options.reason } : {},
        tenant: options.tenant,
        signal: options.signal,
      })
    ).body;
  }

  /** `POST /v1/operator/transactions/{id}/resolve`: the truth found at the provider for an escalated transaction. */
  async operatorResolve(transactionId: string, resolution: Record<string, unknown>, options: CallOptions = {}): Promise<Record<string, unknown>> {
    return (
      await this.#request<Record<string, unknown>>({
        method: 'POST',
        path: `/v1/operator/transactions/${pathId(transactionId)}/resolve`,
        body: resolution,
        tenant: options.tenant,
        signal: options.signal,
      })
    ).body;
  }

  // --- approvals -------------------------------------------------------------------

  /** `GET /v1/approvals/{id}`: one approval with what it approves (`facts`). */
  async getApproval(id: string, options: CallOptions = {}): Promise<Record<string, unknown>> {
    return (
      await this.#request<Record<string, unknown>>({ method: 'GET', path: `/v1/approvals/${pathId(id)}`, tenant: options.tenant, signal: options.signal })
    ).body;
  }

  /** `GET /v1/approvals`: pending approvals of the tenant. */
  async listApprovals(options: PageOptions = {}): Promise<Page> {
    return (
      await this.#request<Page>({
        method: 'GET',
        path: '/v1/approvals',
        query: { cursor: options.cursor, limit: options.limit },
        tenant: options.tenant,
        signal: options.signal,
      })
    ).body;
  }

  /** `POST /v1/approvals/{id}/decision`. */
  async decideApproval(id: string, decision: ApprovalDecision, options: CallOptions & { readonly reason?: string } = {}): Promise<Record<string, unknown>> {
    if (decision !== 'approve' && decision !== 'deny') throw invalid('decision must be approve or deny');
    return (
      await this.#request<Record<string, unknown>>({
        method: 'POST',
        path: `/v1/approvals/${pathId(id)}/decision`,
        body: { decision, ...(options.reason !== undefined ? { reason: options.reason } : {}) },
        tenant: options.tenant,
        signal: options.signal,
      })
    ).body;
  }

  approve(id: string, options: CallOptions & { readonly reason?: string } = {}): Promise<Record<string, unknown>> {
    return this.decideApproval(id, 'approve', options);
  }

  deny(id: string, options: CallOptions & { readonly reason?: string } = {}): Promise<Record<string, unknown>> {
    return this.decideApproval(id, 'deny', options);
  }

  // --- meta ---------------------------------------------------------------------

  /** `GET /v1/capabilities`. */
  async capabilities(options: CallOptions = {}): Promise<Record<string, unknown>> {
    return (await this.#request<Record<string, unknown>>({ method: 'GET', path: '/v1/capabilities', tenant: options.tenant, signal: options.signal })).body;
  }

  /** `GET /v1/health`: `ok`, or `degraded` naming the connectors that are not ready (both 200). */
  async health(options: CallOptions = {}): Promise<HealthReport> {
    return (await this.#request<HealthReport>({ method: 'GET', path: '/v1/health', tenant: false, signal: options.signal })).body;
  }

  /** `GET /v1/openapi.json`. */
  async openapi(options: CallOptions = {}): Promise<Record<string, unknown>> {
    return (await this.#request<Record<string, unknown>>({ method: 'GET', path: '/v1/openapi.json', tenant: false, signal: options.signal })).body;
  }

  // --- transport ------------------------------------------------------------------

  async #request<T>(spec: RequestSpec): Promise<{ status: number; body: T }> {
    const url = new URL(`${this.baseUrl}${spec.path}`);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const label = `${spec.method} ${spec.path}`;
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json', ...this.#headers, ...spec.headers };
    const token = typeof this.#token === 'function' ? await this.#token() : this.#token;
    if (token) headers.authorization = `Bearer ${token}`;
    const tenant = spec.tenant === false ? undefined : (spec.tenant ?? this.tenant);
    if (tenant) headers[TENANT_HEADER] = tenant;
    let payload: string | undefined;
    if (spec.body !== undefined) {
      payload = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }

    const timeout = AbortSignal.timeout(this.#timeoutMs + (spec.waitSeconds ?? 0) * 1000);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, { method: spec.method, headers, ...(payload !== undefined ? { body: payload } : {}), signal });
      text = await response.text();
    } catch (err) {
      if (spec.signal?.aborted) throw err;
      const timedOut = timeout.aborted;
      throw new AipClientError({
        status: 0,
        code: timedOut ? CLIENT_ERROR_CODES.timeout : CLIENT_ERROR_CODES.network,
        message: timedOut
          ? `${label} timed out`
          : `${label} failed: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : 'network error'}`,
        retryable: true,
        request: label,
        cause: err,
      });
    }
    const contentType = response.headers.get('content-type') ?? '';
    if (!response.ok) throw errorFromResponse(response.status, contentType, text, label, response.headers.get('retry-after'));
    if (text.length === 0) return { status: response.status, body: {} as T };
    try {
      return { status: response.status, body: JSON.parse(text) as T };
    } catch (err) {
      throw new AipClientError({
        status: response.status,
        code: CLIENT_ERROR_CODES.badResponse,
        message: `${label} answered ${response.status} with a body that is not JSON`,
        request: label,
        cause: err,
      });
    }
  }
}
