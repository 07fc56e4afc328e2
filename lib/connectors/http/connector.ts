/**
 * The declarative HTTP connector: a FrozenConnector driven entirely by an
 * HttpConnectorConfig (see config.ts and README.md).
 *
 * Per call it
 * 1. validates the action input against the configured JSON Schema,
 * 2. builds the request from the mappings and trusted context values,
 * 3. adds the derived idempotency header (mutations) and, at the edge, the
 *    credential resolved through the deployment CredentialProvider (the
 *    secret touches only the outgoing header and is disposed once the answer
 *    is in); when the provider refuses it (401/403) and a refetch finds it
 *    rotated, the same request (same idempotency key) is sent once more,
 * 4. sends it bounded by context.deadline and context.cancellation,
 * 5. checkpoints the provider operation ID as soon as it is known (from a
 *    response header before the body is read, else right after the body
 *    is parsed) and BEFORE anything else it waits for: completion polls,
 *    output mapping, returning,
 * 6. publishes execution_checkpoints.provider_effect_committed once the
 *    provider has durably accepted the effect (a success status that is not
 *    pending, or a polled terminal success), before returning,
 * 7. maps errors to typed failures; after a request may have reached the
 *    provider, a lost connection, a timeout or an uncertain error status is
 *    `uncertain_outcome=true` with every known provider reference, unless a
 *    configured probe proves that no operation exists. A mutation with a
 *    probe times out `probe_margin_ms` before the attempt deadline, so that
 *    the probe still runs (and checkpoints what it finds) in time.
 * 8. reconciles by the provider operation ID, or, without one, by the
 *    ORIGINAL request's idempotency key (`reconcile.by_idempotency_key`,
 *    `{$original_idempotency_key}`): a found operation is returned as the
 *    result's `provider_operation`; "not found" is non-terminal.
 *
 * The configuration is compiled at construction (compile.ts): the nine
 * implementation flags are derived with the SDK's deriveSupport from the
 * operations that are configured, and the manifest is admitted, so a
 * configuration cannot advertise what it does not implement.
 */
import * as z from 'zod/mini';
import { isAipError } from '@aip-runtime/connector-sdk/errors';
import { joinIssuePath } from '@aip-runtime/connector-sdk/common';
import {
  ProviderOperationRefSchema,
  ReconciliationCursorSchema,
  isJsonValue,
  type Action,
  type ActionResult,
  type JsonObject,
  type JsonValue,
  type ProviderOperationRef,
} from '@aip-runtime/connector-sdk/protocol';
import {
  type CredentialProvider,
  FrozenConnectorBase,
  defaultHealth,
  TRANSACTION_CHECKPOINT_MODES,
  type ActionExecutionContext,
  withCredentialRefresh,
  type ConnectorSecret,
  timeoutRetryable,
  ConnectorFailure,
  isConnectorFailure,
  DEFAULT_RECONCILE_LOOKUP,
  type CancelOutcome,
  type ConnectorContext,
  type ConnectorHealth,
  type ReconcileLookup,
  type ReconciliationResult,
  type ConnectorManifest,
  SIDE_EFFECTING_OPERATIONS,
  type ConnectorOperation,
  type ImplementationSupport,
  downstreamIdempotencyKey,
  originalIdempotencyKey,
  type IdempotencyPurpose,
} from '@aip-runtime/connector-sdk';
import { compileHttpConnector, type CompiledCapability } from './compile.js';
import {
  DEFAULT_PROBE_MARGIN_MS,
  type ContextValueName,
  type EffectOperation,
  type ErrorRule,
  type HttpConnectorConfig,
  type KeyLookup,
  type Mapping,
  type ParsedHttpConnectorConfig,
  type RequestSpec,
  type StatusLookup,
} from './config.js';
import { DraftFailure, finalizeDraft, httpErrorDraft, invalidResponseDraft, transportDraft, type FailureDraft, type FailureSite } from './errors.js';
import { MappingError, applyMapping, buildRequest, evidenceScalar, requestPreview, type BuiltRequest, type MappingScope } from './mapping.js';
import { classifyStatus, isSuccess, operationIdText, type LookupStatus } from './lookup.js';
import { getPointer } from './pointer.js';
import { TransportFailure, exchange, pause, type ProviderResponse, type RequestHeaders, type ResponseHead } from './transport.js';
import { nodeProviderFetch, type ProviderFetch } from './provider-fetch.js';

/** One structured log line. It never carries headers, bodies, query values or credentials. */
export interface HttpConnectorLogLine {
  readonly level: 'info' | 'warn';
  readonly event:
    | 'provider_request'
    | 'provider_operation_checkpointed'
    | 'provider_effect_committed'
    | 'provider_operation_missing'
    /** The provider refused the credential (401/403), a refetch found it rotated, and the request is sent again once. */
    | 'provider_credential_rotated';
  readonly connector_id: string;
  readonly capability_id: string;
  readonly action_id: string;
  readonly operation: ConnectorOperation;
  readonly method?: string;
  /** The configured path template, not the rendered path. */
  readonly route?: string;
  /** HTTP status, or what happened instead of a response. */
  readonly outcome?: number | TransportFailure['kind'];
  readonly provider_request_id?: string;
  readonly provider_operation_id?: string;
}

export interface HttpConnectorDeps {
  /** The deployment credential provider; required unless auth.type is `none`. */
  readonly credentials?: CredentialProvider;
  /** The provider call's HTTP client; defaults to node:http and node:https (provider-fetch.ts). The global fetch fits. */
  readonly fetch?: ProviderFetch;
  readonly logger?: (line: HttpConnectorLogLine) => void;
}

/** Per-call state: what this call learned about the provider operation. */
interface Call {
  readonly action: Action;
  readonly ctx: ActionExecutionContext;
  readonly cap: CompiledCapability;
  readonly operation: ConnectorOperation;
  readonly input: JsonObject;
  provider_request_id?: string;
  provider_operation?: ProviderOperationRef;
}

function zodPaths(error: z.core.$ZodError): JsonValue {
  return error.issues.map((i) => joinIssuePath(i.path, '/')).slice(0, 20);
}

/** A FrozenConnector driven by an HttpConnectorConfig. Build it with createHttpConnector. */
export class HttpConnector extends FrozenConnectorBase {
  readonly id: string;
  readonly version: string;
  readonly config: ParsedHttpConnectorConfig;
  readonly #caps: ReadonlyMap<string, CompiledCapability>;
  readonly #manifest: ConnectorManifest;
  readonly #deps: HttpConnectorDeps;
  readonly #fetch: ProviderFetch;
  readonly #namespace: string;
  /** Provider operations learned per attempt context, so cancel_typed can use them (never credentials). */
  readonly #retained = new WeakMap<ActionExecutionContext, ProviderOperationRef>();

  constructor(config: HttpConnectorConfig | unknown, deps: HttpConnectorDeps = {}) {
    super();
    const compiled = compileHttpConnector(config, { credentials_available: deps.credentials !== undefined });
    const cfg = compiled.config;
    this.config = cfg;
    this.id = cfg.connector_id;
    this.version = cfg.version;
    this.#caps = compiled.capabilities;
    this.#manifest = compiled.manifest;
    this.#deps = deps;
    this.#fetch = deps.fetch ?? nodeProviderFetch;
    this.#namespace = cfg.idempotency.namespace ?? cfg.connector_id;
  }

  manifest(): ConnectorManifest {
    return this.#manifest;
  }

  async discover(_ctx: ConnectorContext): Promise<ConnectorManifest> {
    return this.#manifest;
  }

  implementation_support(capability_id: string): ImplementationSupport | undefined {
    return this.#caps.get(capability_id)?.support;
  }

  /**
   * How reconcile_typed finds the provider operation: by ID, and also by the
   * original request's idempotency key when the capability's reconcile lookup
   * configures `by_idempotency_key`. `[]` without a reconcile lookup.
   */
  reconcile_lookup(capability_id: string): readonly ReconcileLookup[] {
    const lookup = this.#caps.get(capability_id)?.cfg.operations.reconcile;
    if (lookup === undefined) return Object.freeze([]);
    return lookup.by_idempotency_key !== undefined ? Object.freeze(['provider_operation', 'idempotency_key'] as const) : DEFAULT_RECONCILE_LOOKUP;
  }

  /** Ready when discovery succeeds and, if configured, the provider health endpoint answers 2xx. */
  override async health(ctx: ConnectorContext): Promise<ConnectorHealth> {
    const discovered = await defaultHealth(this, ctx);
    const h = this.config.health;
    if (!discovered.ready || h === undefined) return discovered;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 5_000);
    const onAbort = (): void => controller.abort();
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await this.#fetch(this.config.base_url.replace(/\/+$/, '') + h.path, {
        method: 'GET',
        headers: {},
        signal: controller.signal,
        redirect: 'manual',
      });
      await res.body?.cancel().catch(() => undefined);
      return res.status >= 200 && res.status < 300 ? { ready: true } : { ready: false, detail: `provider health endpoint answered ${res.status}` };
    } catch {
      return { ready: false, detail: 'provider health endpoint unreachable' };
    } finally {
      clearTimeout(timer);
      ctx.signal?.removeEventListener('abort', onAbort);
    }
  }

  // ---------------------------------------------------------------------------
  // Typed operations
  // ---------------------------------------------------------------------------

  async invoke_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#guard(
      action,
      ctx,
      'invocation',
      async (call) => {
        const op = call.cap.cfg.operations.invoke;
        if (op === undefined) throw this.unsupported('invocation', action);
        return this.#effect(call, op, call.cap.output);
      },
      (cap) => cap.input,
    );
  }

  override async plan_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#guard(
      action,
      ctx,
      'transaction_plan',
      async (call) => {
        const plan = call.cap.cfg.operations.plan;
        if (plan === undefined) throw this.unsupported('transaction_plan', action);
        return this.#plan(call, plan);
      },
      (cap) => cap.input,
    );
  }

  override async commit_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#guard(
      action,
      ctx,
      'transaction_commit',
      async (call) => {
        const ops = call.cap.cfg.operations;
        const op = ops.commit === 'invoke' ? ops.invoke : ops.commit;
        if (op === undefined) throw this.unsupported('transaction_commit', action);
        return this.#effect(call, op, call.cap.output);
      },
      (cap) => cap.input,
    );
  }

  override async compensate_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#guard(
      action,
      ctx,
      'compensation',
      async (call) => {
        const op = call.cap.cfg.operations.compensate;
        if (op === undefined) throw this.unsupported('compensation', action);
        return this.#effect(call, op, call.cap.compensateOutput);
      },
      (cap) => cap.compensateInput,
    );
  }

  override async cancel_typed(action: Action, ctx: ActionExecutionContext): Promise<CancelOutcome> {
    return this.#guard(
      action,
      ctx,
      'cancellation',
      async (call) => {
        const spec = call.cap.cfg.operations.cancel;
        if (spec === undefined) throw this.unsupported('cancellation', action);
        return this.#cancel(call, spec);
      },
      (cap) => cap.input,
      { checkCancelled: false },
    );
  }

  override async reconcile_typed(action: Action, ctx: ActionExecutionContext): Promise<ReconciliationResult> {
    return this.#guard(
      action,
      ctx,
      'reconciliation',
      async (call) => {
        const lookup = call.cap.cfg.operations.reconcile;
        if (lookup === undefined) throw this.unsupported('reconciliation', action);
        return this.#reconcile(call, lookup);
      },
      (cap) => cap.input,
    );
  }

  // ---------------------------------------------------------------------------
  // Call plumbing
  // ---------------------------------------------------------------------------

  /** Resolves the capability, validates input, runs `body`, and turns every error into a ConnectorFailure. */
  async #guard<T>(
    action: Action,
    ctx: ActionExecutionContext,
    operation: ConnectorOperation,
    body: (call: Call) => Promise<T>,
    inputSchema: (cap: CompiledCapability) => z.core.$ZodType,
    options: { checkCancelled?: boolean } = {},
  ): Promise<T> {
    const cap = this.#caps.get(action.capability_id);
    if (cap === undefined) throw this.unsupported(operation, action);
    const call: Call = { action, ctx, cap, operation, input: action.input };
    try {
      // Unsupported operations answer before anything else (input is irrelevant to them).
      const ops = cap.cfg.operations;
      const present: Record<ConnectorOperation, boolean> = {
        invocation: ops.invoke !== undefined,
        transaction_plan: ops.plan !== undefined,
        transaction_commit: ops.commit !== undefined,
        compensation: ops.compensate !== undefined,
        cancellation: ops.cancel !== undefined,
        reconciliation: ops.reconcile !== undefined,
        discovery: false,
        admission: false,
        health: false,
        streaming: false,
        emission: false,
        ingestion: false,
      };
      if (!present[operation]) throw this.unsupported(operation, action);
      const parsed = z.safeParse(inputSchema(cap), action.input);
      if (!parsed.success) {
        throw new ConnectorFailure({ code: 'connector.input_invalid', operation, source: this.source, redacted_details: { paths: zodPaths(parsed.error) } });
      }
      if (options.checkCancelled !== false && ctx.cancellation.aborted) {
        throw new ConnectorFailure({
          code: 'connector.attempt_cancelled',
          category: 'conflict',
          retryable: false,
          operation,
          source: this.source,
          redacted_details: { request_sent: 'no' },
        });
      }
      return await body(call);
    } catch (err) {
      throw this.#toFailure(err, call);
    }
  }

  #toFailure(err: unknown, call: Call): ConnectorFailure {
    if (isConnectorFailure(err)) return err;
    if (err instanceof DraftFailure) return finalizeDraft(err.draft, this.#uncertainRetryAllowed(call));
    if (err instanceof MappingError) {
      return new ConnectorFailure({
        code: 'connector.input_invalid',
        message: 'the action input does not provide a value the request mapping needs',
        operation: call.operation,
        source: this.source,
        redacted_details: { target: err.target, reason: err.reason },
      });
    }
    if (isAipError(err)) {
      return new ConnectorFailure({
        code: err.code,
        category: err.category,
        retryable: false,
        operation: call.operation,
        source: this.source,
        ...this.#refs(call),
        redacted_details: { reason: 'runtime_error' },
      });
    }
    // Unclassified: the SDK default (uncertain for side-effecting operations), with the known provider references.
    return new ConnectorFailure({
      code: 'connector.unexpected_error',
      operation: call.operation,
      source: this.source,
      retryable: false,
      uncertain_outcome: SIDE_EFFECTING_OPERATIONS.has(call.operation),
      ...this.#refs(call),
      redacted_details: { error_type: err instanceof Error && /^[A-Za-z0-9_$]{1,64}$/.test(err.name) ? err.name : 'unknown' },
      cause: err,
    });
  }

  #refs(call: Call): { provider_request_id?: string; provider_operation?: ProviderOperationRef } {
    return {
      ...(call.provider_request_id !== undefined ? { provider_request_id: call.provider_request_id } : {}),
      ...(call.provider_operation !== undefined ? { provider_operation: call.provider_operation } : {}),
    };
  }

  /** The page's timeout rule: retry only when the capability supports it and the action is not commit/execute. */
  #uncertainRetryAllowed(call: Call): boolean {
    return timeoutRetryable(call.cap.capability, call.cap.support, call.action);
  }

  #site(call: Call, method: string, route: string, mutation: boolean): FailureSite {
    return { operation: call.operation, source: this.source, method, route, mutation, ...this.#refs(call) };
  }

  #knownOperation(call: Call): ProviderOperationRef | undefined {
    if (call.provider_operation !== undefined) return call.provider_operation;
    const tx = call.ctx.transaction;
    if (tx?.provider_operation !== undefined) return tx.provider_operation;
    if (tx?.provider_operation_id !== undefined) return { provider: this.config.provider, operation_id: tx.provider_operation_id };
    return this.#retained.get(call.ctx);
  }

  #scope(call: Call, document: unknown, purpose: IdempotencyPurpose): MappingScope {
    const { action, ctx } = call;
    return {
      document,
      context: (name: ContextValueName): string | undefined => {
        switch (name) {
          case 'action_id':
            return action.id;
          case 'transaction_id':
            return ctx.transaction?.transaction_id;
          case 'plan_id':
            return ctx.transaction?.plan_id;
          case 'idempotency_key':
            return downstreamIdempotencyKey(action, ctx, this.#namespace, purpose);
          case 'original_idempotency_key':
            return originalIdempotencyKey(ctx, this.#namespace, purpose);
          case 'provider_operation_id':
            return this.#knownOperation(call)?.operation_id;
          case 'reconciliation_cursor':
            return ctx.transaction?.cursor;
          case 'tenant_id':
            return ctx.tenant?.tenant_id;
          case 'external_account_id':
            return ctx.tenant?.external_account_id;
          case 'trace_id':
            return ctx.trace.trace_id;
        }
      },
    };
  }

  #budget(ctx: ActionExecutionContext, spec: RequestSpec): number {
    let budget = ctx.deadline.remaining_ms();
    if (spec.timeout_ms !== undefined) budget = Math.min(budget, spec.timeout_ms);
    if (this.config.default_timeout_ms !== undefined) budget = Math.min(budget, this.config.default_timeout_ms);
    return budget;
  }

  #errorRules(call: Call, specific: readonly ErrorRule[] | undefined): ErrorRule[] {
    return [...(specific ?? []), ...(call.cap.cfg.errors ?? []), ...this.config.errors];
  }

  /**
   * Adds the credential at the edge: resolved for the verified tenant (`credential`, from withCredentialRefresh,
   * which keeps a keyed digest of it so that a refusal can be told from a rotation), used for one header, and
   * disposed at once.
   */
  #authorizer(call: Call, credential: () => Promise<ConnectorSecret>): (headers: RequestHeaders) => Promise<void> {
    const auth = this.config.auth as Exclude<HttpConnectorConfig['auth'], { type: 'none' }>;
    return async (headers: RequestHeaders): Promise<void> => {
      const handle = call.ctx.credential;
      if (handle !== undefined && handle.id !== auth.credential_handle) {
        throw new ConnectorFailure({
          code: 'connector.credentials_unavailable',
          operation: call.operation,
          source: this.source,
          redacted_details: { reason: 'credential_handle_mismatch', credential_handle: handle.id },
        });
      }
      const secret = await credential();
      try {
        secret.withUtf8((text) => {
          if (/[\r\n\0]/.test(text)) {
            throw new ConnectorFailure({
              code: 'connector.credentials_unavailable',
              operation: call.operation,
              source: this.source,
              redacted_details: { reason: 'material_not_header_safe' },
            });
          }
          try {
            if (auth.type === 'bearer') headers.set('authorization', `Bearer ${text}`);
            else headers.set(auth.header, text);
          } catch {
            throw new ConnectorFailure({
              code: 'connector.credentials_unavailable',
              operation: call.operation,
              source: this.source,
              redacted_details: { reason: 'material_not_header_safe' },
            });
          }
        });
      } finally {
        secret.dispose();
      }
    };
  }

  #log(
    call: Call,
    line: Omit<HttpConnectorLogLine, 'connector_id' | 'capability_id' | 'action_id' | 'operation' | 'level'> & { level?: 'info' | 'warn' },
  ): void {
    const logger = this.#deps.logger;
    if (logger === undefined) return;
    try {
      logger({ level: 'info', connector_id: this.id, capability_id: call.cap.capability.id, action_id: call.action.id, operation: call.operation, ...line });
    } catch {
      // a logger's failure is not the connector's
    }
  }

  /**
   * Records the provider operation: retained for cancel, checkpointed when the action is transactional.
   * `answered`: the provider's final answer is in hand and the connector returns (or throws) next, with nothing
   * awaited in between; the runtime may then persist the reference with its settlement write
   * (`checkpoint_with_answer`). Anything else (a body still to read, polling) gets the durable checkpoint first.
   */
  async #checkpoint(call: Call, operation_id: string, site: FailureSite, answered = false): Promise<void> {
    const candidate = {
      provider: this.config.provider,
      operation_id,
      ...(call.provider_request_id !== undefined ? { request_id: call.provider_request_id } : {}),
    };
    const ref = ProviderOperationRefSchema.safeParse(candidate);
    if (!ref.success) throw new DraftFailure(invalidResponseDraft(site, 'invalid_provider_operation_id'));
    const known = call.provider_operation;
    if (known !== undefined && known.operation_id === operation_id) return;
    call.provider_operation = ref.data;
    this.#retained.set(call.ctx, ref.data);
    const tx = call.ctx.transaction;
    if (tx !== undefined && TRANSACTION_CHECKPOINT_MODES.has(tx.mode)) {
      try {
        if (answered) await call.ctx.transaction_checkpoint.checkpoint_with_answer(ref.data);
        else await call.ctx.transaction_checkpoint.checkpoint(ref.data);
      } catch (err) {
        // The provider accepted work that the runtime could not record: the outcome is uncertain.
        throw new ConnectorFailure({
          code: isAipError(err) ? err.code : 'connector.unexpected_error',
          message: 'the provider operation could not be checkpointed',
          category: isAipError(err) ? err.category : 'internal',
          retryable: false,
          uncertain_outcome: true,
          operation: call.operation,
          source: this.source,
          ...this.#refs(call),
          redacted_details: { reason: 'checkpoint_failed' },
        });
      }
    }
    this.#log(call, {
      event: 'provider_operation_checkpointed',
      provider_operation_id: operation_id,
      ...(call.provider_request_id ? { provider_request_id: call.provider_request_id } : {}),
    });
  }

  #publishEffect(call: Call): void {
    call.ctx.execution_checkpoints.provider_effect_committed();
    this.#log(call, {
      event: 'provider_effect_committed',
      ...(call.provider_operation ? { provider_operation_id: call.provider_operation.operation_id } : {}),
    });
  }

  /** Sends one request. Transport failures become drafts for `site` (with the refs known when they happened). */
  async #send(
    call: Call,
    req: BuiltRequest,
    spec: RequestSpec,
    opts: { mutation: boolean; budget_ms: number; signal?: AbortSignal; onHeaders?: (head: ResponseHead) => Promise<void>; track_request_id?: boolean },
  ): Promise<ProviderResponse> {
    const track = opts.track_request_id !== false;
    const started = performance.now();
    const once = async (authorize?: (headers: RequestHeaders) => Promise<void>): Promise<ProviderResponse> => {
      const res = await exchange(req, {
        fetch: this.#fetch,
        budget_ms: opts.budget_ms - (performance.now() - started),
        ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
        ...(this.config.request_id_header !== undefined ? { request_id_header: this.config.request_id_header } : {}),
        ...(authorize !== undefined ? { authorize } : {}),
        onHeaders: async (head) => {
          if (track && head.request_id !== undefined) call.provider_request_id = head.request_id;
          if (opts.onHeaders) await opts.onHeaders(head);
        },
      });
      this.#log(call, {
        event: 'provider_request',
        method: req.method,
        route: spec.path,
        outcome: res.status,
        ...(res.request_id ? { provider_request_id: res.request_id } : {}),
      });
      return res;
    };
    try {
      if (this.config.auth.type === 'none') return await once();
      // The provider refused the credential: it authenticates before it acts, so the request had no effect.
      // Sent again once, identical (same idempotency key), only if the credential was rotated meanwhile.
      return await withCredentialRefresh(this.#deps.credentials as CredentialProvider, call.ctx, (credential) => once(this.#authorizer(call, credential)), {
        refused: (o) => o.ok && (o.value.status === 401 || o.value.status === 403),
        operation: call.operation,
        source: this.source,
        onRotated: (o) =>
          this.#log(call, {
            level: 'warn',
            event: 'provider_credential_rotated',
            method: req.method,
            route: spec.path,
            ...(o.ok ? { outcome: o.value.status } : {}),
          }),
      });
    } catch (err) {
      if (err instanceof TransportFailure) {
        if (track && err.head?.request_id !== undefined) call.provider_request_id = err.head.request_id;
        this.#log(call, {
          level: 'warn',
          event: 'provider_request',
          method: req.method,
          route: spec.path,
          outcome: err.kind,
          ...(call.provider_request_id ? { provider_request_id: call.provider_request_id } : {}),
        });
        throw new DraftFailure(transportDraft(err, this.#site(call, req.method, spec.path, opts.mutation), this.#uncertainRetryAllowed(call)));
      }
      throw err;
    }
  }

  // ---------------------------------------------------------------------------
  // Effects (invoke, commit, compensate)
  // ---------------------------------------------------------------------------

  async #effect(call: Call, op: EffectOperation, outputSchema: z.core.$ZodType | undefined): Promise<ActionResult> {
    const mutation = (op.effect ?? (op.request.method === 'GET' ? 'read' : 'mutation')) === 'mutation';
    const scope = this.#scope(call, call.input, 'effect');
    const built = buildRequest(this.config.base_url, op.request, scope);
    const req: BuiltRequest = mutation
      ? { ...built, headers: { ...built.headers, [this.config.idempotency.header.toLowerCase()]: scope.context('idempotency_key') as string } }
      : built;
    const site = (): FailureSite => this.#site(call, req.method, op.request.path, mutation);
    const idSource = op.provider_operation;

    const times = this.#effectTimes(call, op, mutation);
    let res: ProviderResponse;
    try {
      res = await this.#send(call, req, op.request, {
        mutation,
        budget_ms: times.budget_ms,
        signal: call.ctx.cancellation,
        onHeaders: async (head) => {
          // An operation ID in a header is checkpointed before the body is awaited.
          if (!mutation || idSource === undefined || !('header' in idSource) || !isSuccess(head.status, op.success_statuses)) return;
          const id = head.headers.get(idSource.header);
          if (id !== null && id.length > 0) await this.#checkpoint(call, id, site());
        },
      });
    } catch (err) {
      // Lost connection, or a request timeout inside the probe margin: ask the provider whether the operation exists.
      if (err instanceof DraftFailure && err.draft.uncertain_outcome && op.probe !== undefined && call.provider_operation === undefined) {
        const timedOut = err.draft.code === 'sla.timeout_exceeded';
        throw new DraftFailure(await this.#probe(call, op, err.draft, { after_timeout: timedOut, until: times.probe_until }));
      }
      throw err;
    }

    if (!isSuccess(res.status, op.success_statuses)) {
      const { draft, operation_id } = httpErrorDraft(this.#errorRules(call, op.errors), res, res.json, site());
      if (mutation && operation_id !== undefined) {
        // The error answer is final: with the operation known no probe follows, the failure is thrown next.
        await this.#checkpoint(call, operation_id, site(), true);
        draft.provider_operation = call.provider_operation;
      }
      if (draft.uncertain_outcome && op.probe !== undefined && call.provider_operation === undefined) {
        throw new DraftFailure(await this.#probe(call, op, draft, { after_timeout: false, until: times.probe_until }));
      }
      throw new DraftFailure(draft);
    }
    if (res.malformed) {
      const draft = invalidResponseDraft(site(), 'response_not_json', res.status);
      throw new DraftFailure(
        mutation && op.probe !== undefined && call.provider_operation === undefined
          ? await this.#probe(call, op, draft, { after_timeout: false, until: times.probe_until })
          : draft,
      );
    }

    // A pending operation is polled (a wait whose answer may be lost): its reference is durable before the poll.
    // Otherwise the body read is the provider's final answer: the result is returned next.
    const pendingStatus = mutation && op.pending !== undefined ? getPointer(res.json, op.pending.pointer) : undefined;
    const pending = op.pending !== undefined && typeof pendingStatus === 'string' && op.pending.values.includes(pendingStatus);
    if (mutation && idSource !== undefined && 'pointer' in idSource && call.provider_operation === undefined) {
      const id = operationIdText(getPointer(res.json, idSource.pointer));
      if (id !== undefined) await this.#checkpoint(call, id, site(), !pending);
      else this.#log(call, { level: 'warn', event: 'provider_operation_missing', method: req.method, route: op.request.path });
    }

    if (pending) return this.#awaitCompletion(call, op, res, outputSchema);

    if (mutation) this.#publishEffect(call);
    const output = op.output !== undefined ? this.#mapResponse(call, op.output, res.json, site(), res.status) : res.json;
    return this.#result(call, output, outputSchema, site(), mutation);
  }

  /** Response mapping (`from` reads the response body); a missing required field is an invalid provider response. */
  #mapResponse(call: Call, mapping: NonNullable<EffectOperation['output']>, doc: unknown, site: FailureSite, status: number): JsonValue {
    try {
      return applyMapping(mapping, { document: doc, context: this.#scope(call, doc, 'effect').context });
    } catch (err) {
      if (err instanceof MappingError) {
        throw new DraftFailure({
          ...invalidResponseDraft(site, 'output_mapping_failed', status),
          redacted_details: { http_method: site.method, route: site.route, reason: 'output_mapping_failed', target: err.target },
        });
      }
      throw err;
    }
  }

  #result(call: Call, output: unknown, schema: z.core.$ZodType | undefined, site: FailureSite, mutation: boolean): ActionResult {
    let value: unknown = output;
    if (schema !== undefined) {
      const parsed = z.safeParse(schema, output);
      if (!parsed.success) {
        throw new ConnectorFailure({
          code: 'connector.output_invalid',
          operation: call.operation,
          source: this.source,
          uncertain_outcome: mutation,
          ...this.#refs(call),
          redacted_details: { route: site.route, paths: zodPaths(parsed.error) },
        });
      }
      value = parsed.data;
    }
    if (value !== undefined && !isJsonValue(value)) {
      throw new ConnectorFailure({
        code: 'connector.output_invalid',
        operation: call.operation,
        source: this.source,
        uncertain_outcome: mutation,
        ...this.#refs(call),
        redacted_details: { reason: 'not_json' },
      });
    }
    return { action_id: call.action.id, status: 'completed', ...(value !== undefined ? { output: value as JsonValue } : {}) };
  }

  /**
   * The request budget of an effect, and the (monotonic) instant by which its
   * probe must be done. A mutation with a probe keeps the probe margin back
   * from the attempt deadline: its request times out that much earlier, and
   * the probe runs in what is left. `probe_until` is measured on the
   * process's monotonic clock from the remaining time at the start, because
   * the context's clock may be a stepped one (the runtime's) while the
   * attempt deadline is enforced by real timers.
   */
  #effectTimes(call: Call, op: EffectOperation, mutation: boolean): { budget_ms: number; probe_until: number } {
    const remaining = call.ctx.deadline.remaining_ms();
    const probe_until = performance.now() + remaining;
    let budget_ms = this.#budget(call.ctx, op.request);
    if (mutation && op.probe !== undefined) {
      const configured = this.config.probe_margin_ms;
      const margin = Math.min(configured ?? Math.min(DEFAULT_PROBE_MARGIN_MS, Math.floor(remaining / 4)), Math.floor(remaining / 2));
      if (margin > 0) budget_ms = Math.min(budget_ms, remaining - margin);
    }
    return { budget_ms, probe_until };
  }

  /**
   * Settles whether an uncertain mutation created an operation. Found: the
   * operation is checkpointed and the failure keeps uncertain_outcome=true
   * with its reference. Absent (the provider proves nothing exists): the
   * failure becomes certain, EXCEPT after a request timeout: the provider
   * may still be holding the delayed request and commit it after answering
   * the probe (a `before_commit` delay), so "absent" is not proof then and
   * the failure stays uncertain (`probe: absent_unproven`). Anything else
   * (the probe failed, timed out, answered another status) leaves the failure
   * as it was: uncertain without a reference.
   */
  async #probe(call: Call, op: EffectOperation, draft: FailureDraft, when: { after_timeout: boolean; until: number }): Promise<FailureDraft> {
    const probe = op.probe;
    if (probe === undefined) return draft;
    const budget = Math.min(this.#budget(call.ctx, probe.request), Math.floor(when.until - performance.now()));
    if (call.ctx.cancellation.aborted || budget <= 0) return draft;
    let res: ProviderResponse;
    try {
      const req = buildRequest(this.config.base_url, probe.request, this.#scope(call, call.input, 'effect'));
      res = await this.#send(call, req, probe.request, { mutation: false, budget_ms: budget, signal: call.ctx.cancellation, track_request_id: false });
    } catch {
      return { ...draft, redacted_details: { ...draft.redacted_details, probe: 'failed' } };
    }
    if (probe.absent_statuses.includes(res.status)) {
      if (when.after_timeout) return { ...draft, redacted_details: { ...draft.redacted_details, probe: 'absent_unproven' } };
      return { ...draft, uncertain_outcome: false, redacted_details: { ...draft.redacted_details, probe: 'absent' } };
    }
    if (probe.found_statuses.includes(res.status)) {
      const id = operationIdText(getPointer(res.json, probe.provider_operation.pointer));
      if (id === undefined) return { ...draft, redacted_details: { ...draft.redacted_details, probe: 'inconclusive' } };
      // The probe's answer is final: the failure draft is returned and thrown next.
      await this.#checkpoint(call, id, this.#site(call, probe.request.method, probe.request.path, true), true);
      const status = probe.status_pointer !== undefined ? evidenceScalar(getPointer(res.json, probe.status_pointer)) : undefined;
      return {
        ...draft,
        uncertain_outcome: true,
        ...this.#refs(call),
        redacted_details: { ...draft.redacted_details, probe: 'found', ...(status !== undefined ? { provider_status: status } : {}) },
      };
    }
    return { ...draft, redacted_details: { ...draft.redacted_details, probe: 'inconclusive', probe_status: res.status } };
  }

  /** Polls the reconcile lookup until the accepted operation is terminal, the deadline passes or the attempt is cancelled. */
  async #awaitCompletion(call: Call, op: EffectOperation, accepted: ProviderResponse, outputSchema: z.core.$ZodType | undefined): Promise<ActionResult> {
    const lookup = call.cap.cfg.operations.reconcile as StatusLookup;
    const site = (): FailureSite => this.#site(call, lookup.request.method, lookup.request.path, true);
    if (call.provider_operation === undefined) {
      throw new DraftFailure({ ...invalidResponseDraft(site(), 'pending_without_provider_operation', accepted.status), uncertain_outcome: true });
    }
    for (let round = 0; ; round++) {
      if (round > 0) {
        try {
          await pause(this.config.poll_interval_ms, call.ctx.cancellation, call.ctx.deadline.remaining_ms());
        } catch (err) {
          if (err instanceof TransportFailure) {
            // The provider accepted the operation: losing the wait leaves its outcome uncertain.
            throw new DraftFailure({ ...transportDraft(err, site(), this.#uncertainRetryAllowed(call)), uncertain_outcome: true });
          }
          throw err;
        }
      }
      let status: LookupStatus;
      try {
        status = await this.#lookup(call, lookup, true);
      } catch (err) {
        if (err instanceof DraftFailure) throw new DraftFailure({ ...err.draft, uncertain_outcome: true, ...this.#refs(call) });
        throw err;
      }
      if (status.kind === 'succeeded') {
        this.#publishEffect(call);
        const completed = op.completed_output ?? (call.operation !== 'compensation' ? lookup.output : undefined);
        const output =
          completed !== undefined
            ? this.#mapResponse(call, completed, status.res.json, site(), status.res.status)
            : op.output !== undefined
              ? this.#mapResponse(call, op.output, accepted.json, site(), accepted.status)
              : accepted.json;
        return this.#result(call, output, outputSchema, site(), true);
      }
      if (status.kind === 'failed') {
        throw new DraftFailure({
          code: 'connector.provider_operation_failed',
          category: 'permanent',
          retryable: false,
          ...this.#refs(call),
          remote_status: status.res.status,
          uncertain_outcome: false,
          redacted_details: {
            http_method: lookup.request.method,
            route: lookup.request.path,
            ...(status.provider_status !== undefined ? { provider_status: status.provider_status } : {}),
          },
          operation: call.operation,
          source: this.source,
        });
      }
    }
  }

  // ---------------------------------------------------------------------------
  // Reconcile, cancel, plan
  // ---------------------------------------------------------------------------

  async #lookup(call: Call, lookup: StatusLookup, duringCommit: boolean): Promise<LookupStatus> {
    const req = buildRequest(this.config.base_url, lookup.request, this.#scope(call, call.input, 'effect'));
    const res = await this.#send(call, req, lookup.request, {
      mutation: false,
      budget_ms: this.#budget(call.ctx, lookup.request),
      signal: call.ctx.cancellation,
      track_request_id: false,
    });
    const site = this.#site(call, req.method, lookup.request.path, duringCommit);
    if (!isSuccess(res.status, undefined))
      throw new DraftFailure(httpErrorDraft(this.#errorRules(call, lookup.errors), res, res.json, { ...site, mutation: false }).draft);
    if (res.malformed) throw new DraftFailure(invalidResponseDraft({ ...site, mutation: false }, 'response_not_json', res.status));
    return classifyStatus(res, lookup.status_pointer, lookup);
  }

  async #reconcile(call: Call, lookup: StatusLookup): Promise<ReconciliationResult> {
    const known = this.#knownOperation(call);
    if (known === undefined) {
      // No operation ID: the lookup by the original request's idempotency key, when configured and the runtime named the original request.
      if (lookup.by_idempotency_key !== undefined && call.ctx.transaction?.original_request !== undefined)
        return this.#reconcileByKey(call, lookup, lookup.by_idempotency_key);
      throw new ConnectorFailure({
        code: 'connector.reconcile_requires_provider_operation',
        operation: 'reconciliation',
        source: this.source,
        redacted_details: { idempotency_key_lookup: lookup.by_idempotency_key === undefined ? 'not_declared' : 'no_original_request' },
      });
    }
    call.provider_operation = known;
    const status = await this.#lookup(call, lookup, false);
    const site = this.#site(call, lookup.request.method, lookup.request.path, false);
    const evidence: JsonObject = {
      ...(status.provider_status !== undefined ? { provider_status: status.provider_status } : {}),
      remote_status: status.res.status,
      ...(status.res.request_id !== undefined ? { provider_request_id: status.res.request_id } : {}),
    };
    return this.#reconciliationOf(call, status, { output: lookup.output, cursor_pointer: lookup.cursor_pointer }, site, evidence);
  }

  /**
   * Reconciliation without a provider operation ID: asks the provider for the
   * operation of the idempotency key the ORIGINAL request sent
   * (`{$original_idempotency_key}`). Found: its status is mapped as the
   * operation lookup maps it (terminal or not) and the operation is returned
   * as `provider_operation` for the runtime to checkpoint (the connector does
   * not checkpoint it: the reconcile attempt's record is the runtime's).
   * Absent: NON-terminal, because an absent answer is no proof that the
   * original request will not still land (it may be in flight or held by the
   * provider, see the probe's `absent_unproven`). Pending statuses (the
   * provider still processes a request with that key): non-terminal. Any
   * other answer is a typed (certain: a lookup has no effect) failure.
   */
  async #reconcileByKey(call: Call, lookup: StatusLookup, byKey: KeyLookup): Promise<ReconciliationResult> {
    const req = buildRequest(this.config.base_url, byKey.request, this.#scope(call, call.input, 'effect'));
    const res = await this.#send(call, req, byKey.request, {
      mutation: false,
      budget_ms: this.#budget(call.ctx, byKey.request),
      signal: call.ctx.cancellation,
      track_request_id: false,
    });
    const site = this.#site(call, req.method, byKey.request.path, false);
    const evidence: JsonObject = {
      lookup: 'idempotency_key',
      remote_status: res.status,
      ...(res.request_id !== undefined ? { provider_request_id: res.request_id } : {}),
    };
    if (byKey.found_statuses.includes(res.status)) {
      if (res.malformed) throw new DraftFailure(invalidResponseDraft(site, 'response_not_json', res.status));
      const id = operationIdText(getPointer(res.json, byKey.provider_operation.pointer));
      const ref = ProviderOperationRefSchema.safeParse({ provider: this.config.provider, operation_id: id });
      if (id === undefined || !ref.success) throw new DraftFailure(invalidResponseDraft(site, 'invalid_provider_operation_id', res.status));
      call.provider_operation = ref.data;
      const status = classifyStatus(res, byKey.status_pointer ?? lookup.status_pointer, lookup);
      const found: JsonObject = {
        ...evidence,
        operation_found: true,
        ...(status.provider_status !== undefined ? { provider_status: status.provider_status } : {}),
      };
      const mappings = { output: byKey.output ?? lookup.output, cursor_pointer: byKey.cursor_pointer ?? lookup.cursor_pointer };
      return { ...this.#reconciliationOf(call, status, mappings, site, found), provider_operation: ref.data };
    }
    if (byKey.absent_statuses.includes(res.status)) return { terminal: false, evidence: { ...evidence, operation_found: false } };
    if (byKey.pending_statuses.includes(res.status))
      return { terminal: false, evidence: { ...evidence, operation_found: false, original_request_in_progress: true } };
    throw new DraftFailure(httpErrorDraft(this.#errorRules(call, byKey.errors ?? lookup.errors), res, res.json, site).draft);
  }

  /** A status lookup's answer → ReconciliationResult (output for a success, cursor, evidence). */
  #reconciliationOf(
    call: Call,
    status: LookupStatus,
    mappings: { output: Mapping | undefined; cursor_pointer: string | undefined },
    site: FailureSite,
    evidence: JsonObject,
  ): ReconciliationResult {
    let cursor: string | undefined;
    if (mappings.cursor_pointer !== undefined) {
      const c = evidenceScalar(getPointer(status.res.json, mappings.cursor_pointer));
      if (c !== undefined && ReconciliationCursorSchema.safeParse(String(c)).success) cursor = String(c);
    }
    const withCursor = cursor !== undefined ? { cursor } : {};
    if (status.kind === 'succeeded') {
      let output: JsonValue | undefined;
      if (mappings.output !== undefined) {
        const mapped = this.#mapResponse(call, mappings.output, status.res.json, site, status.res.status);
        output = this.#result(call, mapped, call.cap.output, site, false).output;
      }
      return { terminal: true, original_commit_completed: true, ...(output !== undefined ? { output } : {}), ...withCursor, evidence };
    }
    if (status.kind === 'failed') return { terminal: true, original_commit_completed: false, ...withCursor, evidence };
    return { terminal: false, ...withCursor, evidence };
  }

  /**
   * Requests cancellation of the retained provider operation. It runs after
   * the runtime signalled cancellation (often because the deadline passed),
   * so it is bounded by cancel_timeout_ms, not by the attempt's signal.
   */
  async #cancel(call: Call, spec: NonNullable<CompiledCapability['cfg']['operations']['cancel']>): Promise<CancelOutcome> {
    const known = this.#knownOperation(call);
    if (known === undefined) {
      throw new ConnectorFailure({
        code: 'connector.provider_operation_unknown',
        operation: 'cancellation',
        source: this.source,
        redacted_details: { reason: 'no_provider_operation' },
      });
    }
    call.provider_operation = known;
    const scope = this.#scope(call, call.input, 'cancel');
    const built = buildRequest(this.config.base_url, spec.request, scope);
    const req: BuiltRequest = {
      ...built,
      headers: { ...built.headers, [this.config.idempotency.header.toLowerCase()]: scope.context('idempotency_key') as string },
    };
    const res = await this.#send(call, req, spec.request, { mutation: true, budget_ms: spec.request.timeout_ms ?? this.config.cancel_timeout_ms });
    const status = spec.status_pointer !== undefined ? evidenceScalar(getPointer(res.json, spec.status_pointer)) : undefined;
    const details: JsonObject = { remote_status: res.status, ...(status !== undefined ? { provider_status: status } : {}) };
    if (spec.accepted_statuses.includes(res.status)) return { accepted: true, provider_operation: known, redacted_details: details };
    if (spec.rejected_statuses.includes(res.status)) return { accepted: false, provider_operation: known, redacted_details: details };
    throw new DraftFailure(httpErrorDraft(this.#errorRules(call, spec.errors), res, res.json, this.#site(call, req.method, spec.request.path, true)).draft);
  }

  async #plan(call: Call, plan: NonNullable<CompiledCapability['cfg']['operations']['plan']>): Promise<ActionResult> {
    if ('preview' in plan) {
      const ops = call.cap.cfg.operations;
      const op = ops.commit === 'invoke' || ops.commit === undefined ? ops.invoke : ops.commit;
      if (op === undefined) return { action_id: call.action.id, status: 'completed', output: { fidelity: 'preview' } };
      const mutation = (op.effect ?? (op.request.method === 'GET' ? 'read' : 'mutation')) === 'mutation';
      const req = buildRequest(this.config.base_url, op.request, this.#scope(call, call.input, 'effect'));
      return {
        action_id: call.action.id,
        status: 'completed',
        output: { fidelity: 'preview', request: requestPreview(req, mutation ? this.config.idempotency.header : undefined) },
      };
    }
    const v = plan.validate;
    const req = buildRequest(this.config.base_url, v.request, this.#scope(call, call.input, 'effect'));
    const res = await this.#send(call, req, v.request, { mutation: false, budget_ms: this.#budget(call.ctx, v.request), signal: call.ctx.cancellation });
    const site = this.#site(call, req.method, v.request.path, false);
    if (!v.valid_statuses.includes(res.status)) throw new DraftFailure(httpErrorDraft(this.#errorRules(call, v.errors), res, res.json, site).draft);
    if (res.malformed) throw new DraftFailure(invalidResponseDraft(site, 'response_not_json', res.status));
    const output = v.output !== undefined ? this.#mapResponse(call, v.output, res.json, site, res.status) : (res.json ?? {});
    if (!isJsonValue(output)) throw new DraftFailure(invalidResponseDraft(site, 'response_not_json', res.status));
    return { action_id: call.action.id, status: 'completed', output: { fidelity: 'downstream_validation', validation: output as JsonValue } };
  }
}

/** Builds a declarative HTTP connector from its configuration (validated; invalid → AipError `connector.definition_invalid`). */
export function createHttpConnector(config: HttpConnectorConfig | unknown, deps: HttpConnectorDeps = {}): HttpConnector {
  return new HttpConnector(config, deps);
}
