/**
 * The runtime side of the remote placement: a FrozenConnector whose every
 * typed operation is one signed HTTPS POST to the pinned connector host.
 *
 * The runtime runs it like any connector (lib/runtime/attempts/deadline.ts
 * runAttempt → dispatch → `invoke_typed` …). Per call the proxy:
 * 1. reads the attempt's pinned route and lease (bound to the context by the
 *    runtime, ./placement.ts) and checks they name this host (endpoint,
 *    connector, instance, replica, peer key): otherwise nothing is sent;
 * 2. serializes the trusted context's facts (never the context), signs the
 *    request with the runtime's key and POSTs it, the deadline also in the
 *    `AIP-Deadline` header; the context's cancellation aborts the request
 *    (the host then cancels its own attempt);
 * 3. verifies the answer: signed by the pinned peer's key, bound to this
 *    request (digest and nonce), addressed to the runtime's key, fresh, and
 *    for the same route. A message that fails any check is refused with a
 *    typed failure that is uncertain for side-effecting operations (the
 *    request reached, or may have reached, the host: never a blind retry);
 * 4. replays what the host's attempt published through the runtime's own
 *    publishers: checkpoints (already durable in the checkpoint inbox) through
 *    the attempt's fenced checkpoint writer, stream chunks through the
 *    runtime-owned stream publisher, the provider-effect checkpoint; then
 *    returns (or throws) what the host's connector returned (or threw).
 * When the answer is lost or refused after the request was sent, the proxy
 * reads the checkpoint inbox first, so a checkpoint the host made durable is
 * on the transaction record before the attempt settles `outcome_unknown`.
 */
import { randomBytes } from 'node:crypto';
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  canonicalJson,
  hashJson,
  type Action,
  type ActionResult,
  type JsonObject,
  type ProtocolError,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import { systemClock, type Clock } from '../../../packages/connector-sdk/src/ports/clock.js';
import { contextAttemptIdentity, TRANSACTION_CHECKPOINT_MODES, type ActionExecutionContext } from '../../../packages/connector-sdk/src/context.js';
import { DEFAULT_CANCEL_GRACE_MS } from '../attempts/deadline.js';
import { ConnectorFailure, toConnectorFailure, toProtocolError } from '../../../packages/connector-sdk/src/failure.js';
import {
  DEFAULT_RECONCILE_LOOKUP,
  type CancelOutcome,
  type ConnectorContext,
  type ConnectorEmission,
  type EmitReceipt,
  type FrozenConnector,
  type ConnectorHealth,
  type IngestResult,
  type ProviderEvent,
  type ReconcileLookup,
  type ReconciliationResult,
} from '../../../packages/connector-sdk/src/interfaces.js';
import type { ConnectorManifest } from '../../../packages/connector-sdk/src/manifest.js';
import { SIDE_EFFECTING_OPERATIONS, TYPED_METHOD_OPERATION, type ConnectorOperation } from '../../../packages/connector-sdk/src/operations.js';
import type { ImplementationSupport } from '../../../packages/connector-sdk/src/support.js';
import type { HostedConnector } from '../deps.js';
import { messageDigest, signCompact, verifyCompact, RemoteKeyring, type RemoteKey, type RemoteSigner } from './jws.js';
import { attemptPlacement, noteCapacityRefusal, noteRemoteRequest, type AttemptPlacement } from '../attempts/placement.js';
import {
  DEADLINE_HEADER,
  REMOTE_CONTENT_TYPE,
  REMOTE_PATHS,
  REMOTE_TYP,
  RemoteAnswerSchema,
  RemoteHealthSchema,
  RemoteManifestSchema,
  isFresh,
  type ContextFacts,
  type PinnedRoute,
  type PublishedConnector,
  type RemoteAnswer,
  type RemoteOperation,
  type RemoteRequest,
} from './protocol.js';
import type { RemoteCheckpointInbox } from './stores.js';

export interface RemoteConnectorOptions {
  readonly connector_id: string;
  /** The host's public base URL (pinned as the route's endpoint). */
  readonly endpoint: string;
  readonly instance_id: string;
  readonly replica: string;
  /** The host's public key: the pinned peer (`peer_identity` = its kid, `peer_did` = its DID). */
  readonly host_key: RemoteKey;
  /** The runtime's signing key. */
  readonly signer: RemoteSigner;
  /** The checkpoint receiver's URL the host publishes checkpoints to (required for transactional capabilities). */
  readonly callback_url?: string;
  /** Where the receiver makes checkpoints durable (read on a lost answer and before a reconciliation). */
  readonly inbox?: RemoteCheckpointInbox;
  /** Pinned by routes; the host refuses another. Default `0`. */
  readonly credential_revision?: string;
  readonly fetch?: typeof fetch;
  readonly clock?: Clock;
  /** Bound of discovery and health requests. Default 5 000 ms. */
  readonly request_timeout_ms?: number;
  /** Bound of a cancel_typed request. Default the SDK's cancel grace (2 s). */
  readonly cancel_timeout_ms?: number;
}

export const REMOTE_SOURCE = 'runtime:remote';

/** Errors before a request left this process: the host cannot have seen it. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_INVALID_URL']);

const nonce = () => randomBytes(18).toString('base64url');

export class RemoteConnector implements FrozenConnector {
  readonly id: string;
  readonly #o: RemoteConnectorOptions;
  readonly #hostKeys: RemoteKeyring;
  readonly #clock: Clock;
  readonly #fetch: typeof fetch;
  #published: PublishedConnector | undefined;

  constructor(options: RemoteConnectorOptions) {
    this.id = options.connector_id;
    this.#o = options;
    this.#hostKeys = new RemoteKeyring([options.host_key]);
    this.#clock = options.clock ?? systemClock;
    this.#fetch = options.fetch ?? fetch;
  }

  /** What the host published at the last discovery (undefined before). */
  get published(): PublishedConnector | undefined {
    return this.#published;
  }

  // -------------------------------------------------------------------------
  // Discovery and readiness (signed answers, fresh and bound to our nonce)
  // -------------------------------------------------------------------------

  async discover(ctx: ConnectorContext): Promise<ConnectorManifest> {
    const n = nonce();
    const verified = await this.#getSigned(
      `${REMOTE_PATHS.manifest}?connector_id=${encodeURIComponent(this.id)}&nonce=${n}`,
      REMOTE_TYP.manifest,
      'discovery',
      ctx.signal,
    );
    const parsed = RemoteManifestSchema.safeParse(verified);
    if (!parsed.success) throw this.#invalid('discovery', 'schema', false);
    const m = parsed.data;
    const c = m.connector;
    if (m.nonce !== n) throw this.#invalid('discovery', 'nonce', false);
    if (!isFresh(m.iat, this.#clock.now().getTime())) throw this.#failure('connector.remote_stale', 'discovery', false, { phase: 'manifest' });
    const mismatched = [
      ...(m.endpoint !== this.#o.endpoint ? ['endpoint'] : []),
      ...(m.instance_id !== this.#o.instance_id ? ['connector_instance'] : []),
      ...(m.replica !== this.#o.replica ? ['replica'] : []),
      ...(c.connector_id !== this.id || c.manifest.connector_id !== this.id ? ['connector_id'] : []),
      ...(c.version !== c.manifest.version ? ['version'] : []),
      ...(c.manifest_hash !== hashJson(c.manifest) ? ['manifest_hash'] : []),
      ...(c.credential_revision !== (this.#o.credential_revision ?? '0') ? ['credential_revision'] : []),
    ];
    if (mismatched.length > 0) throw this.#failure('connector.remote_route_mismatch', 'discovery', false, { phase: 'manifest', mismatched });
    this.#published = c;
    return c.manifest as ConnectorManifest;
  }

  async health(ctx: ConnectorContext): Promise<ConnectorHealth> {
    try {
      const n = nonce();
      const verified = await this.#getSigned(
        `${REMOTE_PATHS.health}?connector_id=${encodeURIComponent(this.id)}&nonce=${n}`,
        REMOTE_TYP.health,
        'health',
        ctx.signal,
      );
      const parsed = RemoteHealthSchema.safeParse(verified);
      if (!parsed.success || parsed.data.nonce !== n || parsed.data.connector_id !== this.id)
        return { ready: false, detail: 'remote host answered an invalid health document' };
      if (!isFresh(parsed.data.iat, this.#clock.now().getTime())) return { ready: false, detail: 'remote host answered a stale health document' };
      return { ready: parsed.data.ready, ...(parsed.data.detail !== undefined ? { detail: parsed.data.detail } : {}) };
    } catch (err) {
      return { ready: false, detail: `remote host: ${err instanceof ConnectorFailure ? err.code : 'unreachable'}` };
    }
  }

  map_error(err: unknown, operation?: ConnectorOperation): ProtocolError {
    return toProtocolError(toConnectorFailure(err, operation ?? 'invocation', `remote:${this.id}`));
  }

  implementation_support(capability_id: string): ImplementationSupport | undefined {
    return this.#published?.manifest.implementation_support[capability_id];
  }

  reconcile_lookup(capability_id: string): readonly ReconcileLookup[] {
    return this.#published?.reconcile_lookup[capability_id] ?? DEFAULT_RECONCILE_LOOKUP;
  }

  /** The credential handle ID the host resolves for a capability (as it published it). */
  credential_handle(capability_id: string): string | undefined {
    return this.#published?.credential_handles[capability_id];
  }

  // -------------------------------------------------------------------------
  // Typed operations
  // -------------------------------------------------------------------------

  async invoke_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#resultOf('invoke_typed', action, ctx);
  }
  async plan_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#resultOf('plan_typed', action, ctx);
  }
  async commit_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#resultOf('commit_typed', action, ctx);
  }
  async compensate_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    return this.#resultOf('compensate_typed', action, ctx);
  }

  async reconcile_typed(action: Action, ctx: ActionExecutionContext): Promise<ReconciliationResult> {
    const outcome = await this.#call('reconcile_typed', action, ctx);
    if (outcome.type === 'result' && outcome.reconciliation?.terminal === true) {
      const r = outcome.reconciliation;
      return {
        terminal: true,
        original_commit_completed: r.original_commit_completed === true,
        ...(outcome.result.output !== undefined ? { output: outcome.result.output } : {}),
        ...(r.cursor !== undefined ? { cursor: r.cursor } : {}),
        ...(r.evidence !== undefined ? { evidence: r.evidence } : {}),
        ...(r.provider_operation !== undefined ? { provider_operation: r.provider_operation } : {}),
      };
    }
    if (outcome.type === 'error' && outcome.reconciliation?.terminal === false) {
      const r = outcome.reconciliation;
      return {
        terminal: false,
        ...(r.cursor !== undefined ? { cursor: r.cursor } : {}),
        ...(r.evidence !== undefined ? { evidence: r.evidence } : {}),
        ...(r.provider_operation !== undefined ? { provider_operation: r.provider_operation } : {}),
      };
    }
    if (outcome.type === 'error') throw this.#thrownFrom(outcome.failure, outcome.error, 'reconciliation');
    throw this.#invalid('reconciliation', 'outcome_type', false);
  }

  async cancel_typed(action: Action, ctx: ActionExecutionContext): Promise<CancelOutcome> {
    const outcome = await this.#call('cancel_typed', action, ctx);
    if (outcome.type === 'cancel') return outcome.cancel as CancelOutcome;
    if (outcome.type === 'cancel_failure') throw ConnectorFailure.fromRecord(outcome.failure);
    throw this.#invalid('cancellation', 'outcome_type', true);
  }

  async emit_typed(_emission: ConnectorEmission, _ctx: ActionExecutionContext): Promise<EmitReceipt> {
    throw ConnectorFailure.unsupported('emission', `remote:${this.id}`, { placement: 'remote' });
  }
  async ingest_typed(_event: ProviderEvent, _ctx: ActionExecutionContext): Promise<IngestResult> {
    throw ConnectorFailure.unsupported('ingestion', `remote:${this.id}`, { placement: 'remote' });
  }

  async #resultOf(op: Exclude<RemoteOperation, 'reconcile_typed' | 'cancel_typed'>, action: Action, ctx: ActionExecutionContext): Promise<ActionResult> {
    const outcome = await this.#call(op, action, ctx);
    const operation = TYPED_METHOD_OPERATION[op];
    if (outcome.type === 'result') return outcome.result;
    if (outcome.type === 'error') {
      if (outcome.failure !== undefined) throw ConnectorFailure.fromRecord(outcome.failure);
      // The host's connector returned a failed result, or its map_error answered a ProtocolError.
      return outcome.result ?? { action_id: action.id, status: 'failed', error: outcome.error };
    }
    throw this.#invalid(operation, 'outcome_type', SIDE_EFFECTING_OPERATIONS.has(operation));
  }

  #thrownFrom(failure: unknown, error: ProtocolError, operation: ConnectorOperation): ConnectorFailure {
    if (failure !== undefined) return ConnectorFailure.fromRecord(failure);
    return new ConnectorFailure({
      code: error.code,
      message: error.message,
      category: error.category,
      retryable: error.retryable,
      ...(error.retry_after_ms !== undefined ? { retry_after_ms: error.retry_after_ms } : {}),
      ...(error.provider_operation !== undefined ? { provider_operation: error.provider_operation } : {}),
      uncertain_outcome: error.uncertain_outcome === true,
      operation,
      source: error.source ?? `remote:${this.id}`,
    });
  }

  /** One signed request and its verified answer, with the host's publications replayed. */
  async #call(op: RemoteOperation, action: Action, ctx: ActionExecutionContext): Promise<Extract<RemoteAnswer['body'], { status: 'answered' }>['outcome']> {
    const operation = TYPED_METHOD_OPERATION[op];
    const sideEffecting = SIDE_EFFECTING_OPERATIONS.has(operation);
    const placement = this.#placementOf(ctx, operation);
    const facts = await this.#facts(op, ctx);
    const request: RemoteRequest = {
      v: 1,
      kind: 'request',
      op,
      iss: this.#o.signer.kid,
      aud: this.#o.endpoint,
      iat: this.#clock.now().getTime(),
      nonce: nonce(),
      // cancel_typed runs after the attempt's deadline (a timeout): its own deadline is its grace.
      deadline:
        op === 'cancel_typed'
          ? new Date(this.#clock.now().getTime() + (this.#o.cancel_timeout_ms ?? DEFAULT_CANCEL_GRACE_MS)).toISOString()
          : ctx.deadline.at.toISOString(),
      route: pinnedRoute(placement),
      lease: { attempt_id: placement.lease.attempt_id, fence: placement.lease.fence, expires_at: placement.lease.expires_at.toISOString() },
      action,
      context: facts,
      ...(this.#o.callback_url !== undefined ? { callback: { url: this.#o.callback_url } } : {}),
    };
    const jws = await signCompact(this.#o.signer, REMOTE_TYP.request, request);
    const digest = messageDigest(jws);

    // cancel_typed runs after the attempt's own signal fired: bound it by its grace instead.
    const signal = op === 'cancel_typed' ? AbortSignal.timeout(this.#o.cancel_timeout_ms ?? DEFAULT_CANCEL_GRACE_MS) : ctx.cancellation;
    let text: string;
    noteRemoteRequest(ctx);
    try {
      const res = await this.#fetch(`${this.#o.endpoint}${REMOTE_PATHS.attempt}`, {
        method: 'POST',
        headers: { 'content-type': REMOTE_CONTENT_TYPE, accept: REMOTE_CONTENT_TYPE, [DEADLINE_HEADER]: request.deadline },
        body: jws,
        signal,
      });
      text = await res.text();
    } catch (err) {
      if (notSent(err)) {
        throw this.#failure('connector.remote_unavailable', operation, false, { phase: 'request', reason: transportReason(err) });
      }
      await this.#recoverCheckpoints(ctx, placement);
      throw this.#failure('connector.remote_answer_lost', operation, sideEffecting, { phase: 'answer', reason: transportReason(err) });
    }

    let answer: RemoteAnswer;
    try {
      answer = this.#verifyAnswer(text, request, digest);
    } catch (err) {
      await this.#recoverCheckpoints(ctx, placement);
      const code = isAipError(err) ? err.code : 'connector.remote_answer_invalid';
      const reason = isAipError(err) && typeof err.details.reason === 'string' ? err.details.reason : 'unverifiable';
      throw this.#failure(code, operation, sideEffecting, {
        phase: 'answer',
        reason,
        ...(isAipError(err) && Array.isArray(err.details.mismatched) ? { mismatched: err.details.mismatched as string[] } : {}),
      });
    }

    const body = answer.body;
    if (body.status === 'refused') {
      // The host certified it did no work for this request.
      const failure = ConnectorFailure.fromRecord(body.failure);
      // Signed, bound to this request, certain: the runtime may redeliver the attempt later instead of failing it.
      if (failure.code === 'connector.remote_capacity_exhausted' && op !== 'cancel_typed' && failure.uncertain_outcome !== true)
        noteCapacityRefusal(ctx, failure.retry_after_ms ?? 1_000);
      throw failure;
    }
    // Replay the host attempt's publications through the runtime's own publishers, in order.
    const tx = ctx.transaction;
    if (body.checkpoints.length > 0 && (tx === undefined || !TRANSACTION_CHECKPOINT_MODES.has(tx.mode))) {
      throw this.#failure('connector.remote_answer_invalid', operation, sideEffecting, { phase: 'answer', reason: 'checkpoint_without_transaction' });
    }
    for (const c of body.checkpoints) await ctx.transaction_checkpoint.checkpoint(c.provider_operation, c.cursor);
    for (const chunk of body.chunks) await ctx.stream.emit(chunk);
    if (body.provider_effect_committed) ctx.execution_checkpoints.provider_effect_committed();
    return body.outcome;
  }

  #verifyAnswer(text: string, request: RemoteRequest, digest: string): RemoteAnswer {
    const verified = verifyCompact(text, REMOTE_TYP.answer, this.#hostKeys);
    const parsed = RemoteAnswerSchema.safeParse(verified.payload);
    if (!parsed.success) throw new AipError('connector.remote_answer_invalid', undefined, { details: { reason: 'schema' } });
    const a = parsed.data;
    if (a.iss !== verified.kid) throw new AipError('connector.remote_signature_invalid', undefined, { details: { reason: 'issuer' } });
    if (a.request_digest !== digest || a.nonce !== request.nonce || a.aud !== request.iss) {
      throw new AipError('connector.remote_answer_invalid', undefined, { details: { reason: 'request_binding' } });
    }
    if (!isFresh(a.iat, this.#clock.now().getTime())) throw new AipError('connector.remote_stale', undefined, { details: { reason: 'iat' } });
    if (a.body.status === 'answered') {
      const mismatched = a.route === undefined ? ['route'] : routeDifferences(request.route, a.route);
      if (mismatched.length > 0) throw new AipError('connector.remote_route_mismatch', undefined, { details: { reason: 'route', mismatched } });
    }
    return a;
  }

  /** The pinned route and lease, checked against this host before anything is sent. */
  #placementOf(ctx: ActionExecutionContext, operation: ConnectorOperation): AttemptPlacement {
    const placement = attemptPlacement(ctx);
    if (placement === undefined) throw this.#failure('connector.remote_route_mismatch', operation, false, { phase: 'request', reason: 'no_pinned_route' });
    const r = placement.route;
    const mismatched = [
      ...(r.connector_id !== this.id ? ['connector_id'] : []),
      ...(r.endpoint !== this.#o.endpoint ? ['endpoint'] : []),
      ...(r.connector_instance !== this.#o.instance_id ? ['connector_instance'] : []),
      ...(r.replica !== this.#o.replica ? ['replica'] : []),
      ...(r.peer_identity !== this.#o.host_key.kid ? ['peer_identity'] : []),
      ...(r.peer_did !== undefined && r.peer_did !== this.#o.host_key.did ? ['peer_did'] : []),
    ];
    if (mismatched.length > 0) throw this.#failure('connector.remote_route_mismatch', operation, false, { phase: 'request', mismatched });
    return placement;
  }

  async #facts(op: RemoteOperation, ctx: ActionExecutionContext): Promise<ContextFacts> {
    const { attempt_id } = contextAttemptIdentity(ctx);
    const a = ctx.actor;
    let tx = ctx.transaction;
    // A reconciliation without a known operation: a checkpoint the host made durable that the record lacks.
    if (op === 'reconcile_typed' && tx !== undefined && tx.provider_operation_id === undefined && this.#o.inbox !== undefined && ctx.tenant !== undefined) {
      const found = await this.#o.inbox.get({ tenant_id: ctx.tenant.tenant_id, transaction_id: tx.transaction_id });
      if (found !== undefined) {
        await ctx.transaction_checkpoint.checkpoint(found.provider_operation, found.cursor);
        tx = {
          ...tx,
          provider_operation_id: found.provider_operation.operation_id,
          provider_operation: found.provider_operation,
          ...(found.cursor !== undefined ? { cursor: found.cursor } : {}),
        };
      }
    }
    return {
      attempt_id,
      actor: {
        principal: { ...a.principal },
        issuer: a.issuer,
        scheme: a.scheme,
        scopes: [...a.scopes],
        lifetime: { issued_at: a.lifetime.issued_at.toISOString(), expires_at: a.lifetime.expires_at.toISOString() },
        ...(a.delegation !== undefined
          ? {
              delegation: {
                reason: a.delegation.reason,
                ...(a.delegation.on_behalf_of !== undefined ? { on_behalf_of: { ...a.delegation.on_behalf_of } } : {}),
              },
            }
          : {}),
      },
      ...(ctx.tenant !== undefined ? { tenant: { ...ctx.tenant } } : {}),
      ...(ctx.credential !== undefined ? { credential_handle: ctx.credential.id } : {}),
      ...(ctx.idempotency !== undefined ? { idempotency: { ...ctx.idempotency } } : {}),
      ...(ctx.approval !== undefined
        ? {
            approval: {
              approval_ids: [...ctx.approval.approval_ids],
              decision_ids: [...ctx.approval.decision_ids],
              policy_hashes: [...ctx.approval.policy_hashes],
              authorization: { ...ctx.approval.authorization, scopes: [...ctx.approval.authorization.scopes] },
            },
          }
        : {}),
      ...(tx !== undefined
        ? {
            transaction: {
              transaction_id: tx.transaction_id,
              mode: tx.mode,
              ...(tx.plan_id !== undefined ? { plan_id: tx.plan_id } : {}),
              ...(tx.provider_operation_id !== undefined ? { provider_operation_id: tx.provider_operation_id } : {}),
              ...(tx.provider_operation !== undefined ? { provider_operation: { ...tx.provider_operation } } : {}),
              ...(tx.cursor !== undefined ? { cursor: tx.cursor } : {}),
              ...(tx.original_request !== undefined ? { original_request: { ...tx.original_request } } : {}),
            },
          }
        : {}),
      trace: { ...ctx.trace },
      redaction: {
        redaction_required: ctx.redaction.redaction_required,
        input_pointers: [...ctx.redaction.input_pointers],
        output_pointers: [...ctx.redaction.output_pointers],
      },
      streaming: ctx.stream.enabled,
    };
  }

  /** After a lost or refused answer: fold a checkpoint the host made durable in the inbox. Never throws. */
  async #recoverCheckpoints(ctx: ActionExecutionContext, placement: AttemptPlacement): Promise<void> {
    const tx = ctx.transaction;
    if (this.#o.inbox === undefined || tx === undefined || !TRANSACTION_CHECKPOINT_MODES.has(tx.mode)) return;
    try {
      const found = await this.#o.inbox.get({ tenant_id: placement.route.tenant_id, transaction_id: tx.transaction_id });
      if (found !== undefined) await ctx.transaction_checkpoint.checkpoint(found.provider_operation, found.cursor);
    } catch {
      // The inbox stays durable: reconciliation reads it again.
    }
  }

  #failure(code: string, operation: ConnectorOperation, uncertain: boolean, details: JsonObject): ConnectorFailure {
    return new ConnectorFailure({
      code,
      operation,
      source: REMOTE_SOURCE,
      uncertain_outcome: uncertain,
      retryable: code === 'connector.remote_unavailable',
      redacted_details: { connector_id: this.id, ...details },
    });
  }

  #invalid(operation: ConnectorOperation, reason: string, uncertain: boolean): ConnectorFailure {
    return this.#failure('connector.remote_answer_invalid', operation, uncertain, { phase: 'answer', reason });
  }

  async #getSigned(path: string, typ: string, operation: ConnectorOperation, signal?: AbortSignal): Promise<unknown> {
    const bound = AbortSignal.timeout(this.#o.request_timeout_ms ?? 5_000);
    let text: string;
    try {
      const res = await this.#fetch(`${this.#o.endpoint}${path}`, {
        headers: { accept: REMOTE_CONTENT_TYPE },
        signal: signal !== undefined ? AbortSignal.any([signal, bound]) : bound,
      });
      text = await res.text();
    } catch (err) {
      throw this.#failure('connector.remote_unavailable', operation, false, { phase: 'request', reason: transportReason(err) });
    }
    try {
      const verified = verifyCompact(text, typ, this.#hostKeys);
      return verified.payload;
    } catch (err) {
      throw this.#failure(isAipError(err) ? err.code : 'connector.remote_answer_invalid', operation, false, {
        phase: 'answer',
        reason: isAipError(err) && typeof err.details.reason === 'string' ? err.details.reason : 'unverifiable',
      });
    }
  }
}

/** The route as the request pins it (the peer is required for remote placement). */
function pinnedRoute(p: AttemptPlacement): PinnedRoute {
  const r = p.route;
  return {
    tenant_id: r.tenant_id,
    action_id: r.action_id,
    capability_id: r.capability_id,
    verified_tenant: r.verified_tenant,
    connector_id: r.connector_id,
    connector_instance: r.connector_instance,
    replica: r.replica,
    endpoint: r.endpoint,
    peer_identity: r.peer_identity ?? '',
    ...(r.peer_did !== undefined ? { peer_did: r.peer_did } : {}),
    version: r.version,
    manifest_hash: r.manifest_hash,
    policy_revision: r.policy_revision,
    credential_revision: r.credential_revision,
    health_revision: r.health_revision,
    admission_reservation: r.admission_reservation,
    fence_token: r.fence_token,
    created_at: r.created_at,
  };
}

/** Names of the route fields that differ. */
export function routeDifferences(a: PinnedRoute, b: PinnedRoute): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof PinnedRoute>;
  return [...keys].filter((k) => canonicalJson(a[k] ?? null) !== canonicalJson(b[k] ?? null)).sort();
}

function causeCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e !== null && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function notSent(err: unknown): boolean {
  const code = causeCode(err);
  return code !== undefined && NOT_SENT_CODES.has(code);
}

function transportReason(err: unknown): string {
  if (err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError')) return err.name === 'TimeoutError' ? 'timeout' : 'aborted';
  const code = causeCode(err);
  return code !== undefined && /^[A-Z0-9_]{1,64}$/.test(code) ? code : 'transport_error';
}

/**
 * A HostedConnector for the runtime's ConnectorHost: the proxy plus the
 * placement facts route assignments pin (endpoint, instance, replica, peer
 * key ID and DID, credential revision). The credential handle IDs are the
 * ones the host published; the credentials resolve inside the host.
 */
export function remoteHostedConnector(options: RemoteConnectorOptions): HostedConnector & { readonly connector: RemoteConnector } {
  const connector = new RemoteConnector(options);
  return {
    connector,
    instance_id: options.instance_id,
    replica: options.replica,
    endpoint: options.endpoint,
    peer_identity: options.host_key.kid,
    peer_did: options.host_key.did,
    credential_revision: options.credential_revision ?? '0',
    credential_handle: (capability_id) => connector.credential_handle(capability_id),
  };
}
