/**
 * The connector host: runs connectors out of the runtime's process and serves
 * the wire protocol of ./protocol.ts. Transport-neutral: `handle(request)`
 * takes the method, path, headers and body and returns the answer; the Node
 * HTTP server (functions/connector-host/server.ts) and the Lambda handler
 * (functions/connector-host/handler.ts) are thin adapters around it.
 *
 * A typed-operation request (POST /v1/attempts) is accepted only when, in
 * this order:
 * 1. its JWS verifies with a runtime key this host trusts (`iss` = `kid`);
 * 2. `iat` is within the freshness window;
 * 3. the `AIP-Deadline` header equals the signed deadline and the deadline
 *    has not passed;
 * 4. the pinned route names exactly what this host serves: the endpoint
 *    (also the JWS `aud`), this host's key (`peer_identity`, `peer_did`),
 *    a hosted connector, its version and manifest hash, this instance and
 *    replica, the credential revision, the tenant of the trusted context,
 *    the action's capability and ID, and the operation the action's mode
 *    selects; the lease belongs to the attempt and has not expired;
 * 5. its nonce was never seen (replay protection, NonceStore);
 * 6. the connector has a free slot under its concurrency limit
 *    (`max_concurrent_attempts`, held in a CapacityGate until the attempt
 *    ends; `cancel_typed` is never refused: it is how the runtime stops
 *    work). Otherwise `connector.remote_capacity_exhausted`: HTTP 429 with
 *    `Retry-After`, certain (the connector was not called) and retryable.
 * Any refusal is a signed `refused` answer (the connector was not called),
 * carrying its RFC 9457 problem document too.
 * Only then does the host construct the attempt's execution context itself,
 * from the signed facts (the context never travels), and run the connector
 * as the runtime does (lib/runtime/attempts/deadline.ts runAttempt): its own deadline
 * enforcement, dispatch table and failure normalization. Credentials resolve
 * inside this process through the connector's own CredentialProvider.
 * Transaction checkpoints go to the runtime's signed checkpoint receiver and
 * are acknowledged durable before the connector continues (./callback.ts);
 * stream chunks are collected and travel in the signed answer.
 */
import { randomBytes } from 'node:crypto';
import { joinIssuePath } from '../../../packages/connector-sdk/src/common/issues.js';
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { toProblem } from '../../../packages/connector-sdk/src/protocol/problem.js';
import { ERROR_CATALOGUE, isErrorCode } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { hashJson, type JsonObject } from '../../../packages/connector-sdk/src/protocol/index.js';
import { systemClock, type Clock } from '../../../packages/connector-sdk/src/ports/clock.js';
import type { StreamSink } from '../../../packages/connector-sdk/src/ports/stream-sink.js';
import {
  createExecutionContext,
  type ExecutionAttempt,
  type TransactionCheckpointWriter,
  type TrustedAttemptState,
} from '../../../packages/connector-sdk/src/context.js';
import { CredentialHandle } from '../../../packages/connector-sdk/src/credentials/handle.js';
import { runAttempt } from '../attempts/deadline.js';
import { selectMethod } from '../../../packages/connector-sdk/src/operations.js';
import { ConnectorFailure, toConnectorFailure } from '../../../packages/connector-sdk/src/failure.js';
import { reconcileLookupOf, type FrozenConnector } from '../../../packages/connector-sdk/src/interfaces.js';
import type { ConnectorManifest } from '../../../packages/connector-sdk/src/manifest.js';
import { TYPED_METHOD_OPERATION, type ConnectorOperation } from '../../../packages/connector-sdk/src/operations.js';
import type { StreamChunk } from '../../../packages/connector-sdk/src/protocol/stream-chunk.js';
import { didOf, messageDigest, signCompact, verifyCompact, type RemoteKeyring, type RemoteSigner } from './jws.js';
import {
  DEADLINE_HEADER,
  FRESHNESS_WINDOW_MS,
  REMOTE_CONTENT_TYPE,
  REMOTE_PATHS,
  REMOTE_TYP,
  RemoteCheckpointAckSchema,
  RemoteRequestSchema,
  isFresh,
  type RemoteAnswer,
  type RemoteAnswerBody,
  type RemoteCheckpointCallback,
  type PublishedConnector,
  type RemoteOutcome,
  type RemoteRequest,
} from './protocol.js';
import { InMemoryCapacityGate, type CapacityGate, type NonceStore } from './stores.js';

/** A connector this host runs, with the credential facts it publishes. */
export interface LocallyHostedConnector {
  readonly connector: FrozenConnector;
  /** The credential handle ID the connector's CredentialProvider resolves for a capability. */
  credential_handle?(capability_id: string): string | undefined;
  /** The revision of this host's credentials (pinned by routes). Default `0`. */
  readonly credential_revision?: string;
  /** Most attempts of this connector the host runs at once (admission check 6). Absent: no limit. */
  readonly max_concurrent_attempts?: number;
}

export interface RemoteHostOptions {
  /** This host's public base URL, exactly as routes pin it. */
  readonly endpoint: string;
  readonly instance_id: string;
  readonly replica: string;
  readonly connectors: readonly LocallyHostedConnector[];
  /** This host's signing key (its kid is the peer identity routes pin). */
  readonly signer: RemoteSigner;
  /** The runtime keys whose requests (and checkpoint acknowledgements) this host accepts. */
  readonly runtime_keys: RemoteKeyring;
  readonly nonces: NonceStore;
  /** Where the connectors' concurrency slots are held. @default an InMemoryCapacityGate (this process) */
  readonly capacity?: CapacityGate;
  readonly clock?: Clock;
  /** For checkpoint callbacks. */
  readonly fetch?: typeof fetch;
  /** Checkpoint receiver URLs this host may call; absent: the one a verified request names. */
  readonly callback_urls?: readonly string[];
  /** Fallback attempt timeout when neither the capability nor the request bounds it. */
  readonly default_timeout_ms?: number;
}

export interface HostRequest {
  readonly method: string;
  /** Path with query string. */
  readonly path: string;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
  /** Aborts when the caller went away (the attempt's cooperative cancellation). */
  readonly signal?: AbortSignal;
}

export interface HostResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

interface Served {
  readonly hosted: LocallyHostedConnector;
  readonly manifest: ConnectorManifest;
  readonly published: PublishedConnector;
}

const UNKNOWN_NONCE = 'A'.repeat(22);
/** A capacity slot outlives its attempt's deadline by this much at most (a host that died holding it). */
export const CAPACITY_SLOT_MARGIN_MS = 60_000;
const nonce = () => randomBytes(18).toString('base64url');

export class RemoteConnectorHost {
  readonly #o: RemoteHostOptions;
  readonly #served: ReadonlyMap<string, Served>;
  readonly #clock: Clock;
  readonly #did: string;
  readonly #capacity: CapacityGate;
  /** Attempts running in this process, by attempt ID (cancel_typed reuses their context). */
  readonly #inflight = new Map<string, ExecutionAttempt>();

  private constructor(options: RemoteHostOptions, served: Map<string, Served>) {
    this.#o = options;
    this.#served = served;
    this.#clock = options.clock ?? systemClock;
    this.#did = didOf(options.signer.public_jwk);
    this.#capacity = options.capacity ?? new InMemoryCapacityGate(() => this.#clock.now().getTime());
  }

  /** Discovers every hosted connector (its manifest is published and pinned by hash). */
  static async create(options: RemoteHostOptions): Promise<RemoteConnectorHost> {
    const served = new Map<string, Served>();
    for (const hosted of options.connectors) {
      const c = hosted.connector;
      // The JSON form is what travels and what the runtime's registry hashes.
      const manifest = JSON.parse(JSON.stringify(await c.discover({ instance_id: options.instance_id }))) as ConnectorManifest;
      const caps = manifest.capabilities.map((cap) => cap.id);
      const handles: Record<string, string> = {};
      for (const id of caps) {
        const h = hosted.credential_handle?.(id);
        if (h !== undefined) handles[id] = h;
      }
      served.set(c.id, {
        hosted,
        manifest,
        published: {
          connector_id: c.id,
          version: manifest.version,
          manifest: manifest as PublishedConnector['manifest'],
          manifest_hash: hashJson(manifest),
          reconcile_lookup: Object.fromEntries(caps.map((id) => [id, [...reconcileLookupOf(c, id)]])),
          credential_handles: handles,
          credential_revision: hosted.credential_revision ?? '0',
        },
      });
    }
    return new RemoteConnectorHost(options, served);
  }

  /** This host's key ID (the `peer_identity` routes pin). */
  get kid(): string {
    return this.#o.signer.kid;
  }
  get did(): string {
    return this.#did;
  }
  get endpoint(): string {
    return this.#o.endpoint;
  }
  published(connector_id: string): PublishedConnector | undefined {
    return this.#served.get(connector_id)?.published;
  }

  async handle(req: HostRequest): Promise<HostResponse> {
    const url = new URL(req.path, 'http://host');
    const method = req.method.toUpperCase();
    if (method === 'POST' && url.pathname === REMOTE_PATHS.attempt) return this.#attempt(req);
    if (method === 'GET' && (url.pathname === REMOTE_PATHS.manifest || url.pathname === REMOTE_PATHS.health)) return this.#document(url);
    return { status: 404, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'not_found' }) };
  }

  // -------------------------------------------------------------------------

  async #document(url: URL): Promise<HostResponse> {
    const id = url.searchParams.get('connector_id') ?? '';
    const n = url.searchParams.get('nonce') ?? '';
    const served = this.#served.get(id);
    if (served === undefined || !/^[A-Za-z0-9_-]{22,128}$/.test(n))
      return { status: 404, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 'not_found' }) };
    const common = { v: 1, iss: this.kid, iat: this.#clock.now().getTime(), nonce: n };
    if (url.pathname === REMOTE_PATHS.manifest) {
      return this.#signed(200, REMOTE_TYP.manifest, {
        ...common,
        kind: 'manifest',
        endpoint: this.#o.endpoint,
        instance_id: this.#o.instance_id,
        replica: this.#o.replica,
        connector: served.published,
      });
    }
    let report: { ready: boolean; detail?: string };
    try {
      const r = await served.hosted.connector.health({ instance_id: this.#o.instance_id, signal: AbortSignal.timeout(2_000) });
      report = { ready: r.ready === true, ...(typeof r.detail === 'string' ? { detail: r.detail.replace(/[\r\n]+/g, ' ').slice(0, 256) } : {}) };
    } catch (err) {
      report = { ready: false, detail: `health check failed: ${isAipError(err) || err instanceof ConnectorFailure ? err.code : 'error'}` };
    }
    return this.#signed(200, REMOTE_TYP.health, { ...common, kind: 'health', connector_id: id, ...report });
  }

  async #signed(status: number, typ: string, payload: unknown): Promise<HostResponse> {
    return { status, headers: { 'content-type': REMOTE_CONTENT_TYPE, 'cache-control': 'no-store' }, body: await signCompact(this.#o.signer, typ, payload) };
  }

  async #answer(
    request: Pick<RemoteRequest, 'iss' | 'nonce'> | undefined,
    digest: string,
    body: RemoteAnswerBody,
    route?: RemoteRequest['route'],
  ): Promise<HostResponse> {
    const answer: RemoteAnswer = {
      v: 1,
      kind: 'answer',
      iss: this.kid,
      aud: request?.iss ?? 'unknown',
      iat: this.#clock.now().getTime(),
      nonce: request?.nonce ?? UNKNOWN_NONCE,
      request_digest: digest,
      ...(route !== undefined ? { route } : {}),
      body,
    };
    const status = body.status === 'refused' ? (isErrorCode(body.failure.code) ? ERROR_CATALOGUE[body.failure.code].http : 400) : 200;
    const signed = await this.#signed(status, REMOTE_TYP.answer, answer);
    const retryAfterMs = body.status === 'refused' && body.failure.retryable ? body.failure.retry_after_ms : undefined;
    return retryAfterMs === undefined ? signed : { ...signed, headers: { ...signed.headers, 'retry-after': String(Math.ceil(retryAfterMs / 1000)) } };
  }

  async #refuse(request: RemoteRequest | undefined, digest: string, code: string, details: JsonObject): Promise<HostResponse> {
    const operation: ConnectorOperation = request !== undefined ? TYPED_METHOD_OPERATION[request.op] : 'invocation';
    const failure = new ConnectorFailure({
      code,
      operation,
      source: `remote-host:${this.#o.instance_id}`,
      uncertain_outcome: false,
      redacted_details: { refused_by: 'connector_host', ...details },
    });
    const problem = isErrorCode(code) ? { problem: toProblem(new AipError(code, undefined, { details: failure.redacted_details })) } : {};
    return this.#answer(request, digest, { status: 'refused', failure: failure.toJSON(), ...problem });
  }

  async #attempt(req: HostRequest): Promise<HostResponse> {
    const jws = req.body.trim();
    const digest = messageDigest(jws);
    // 1. signature (a refusal still names the claimed issuer so the runtime can match it; it proves nothing)
    let verified;
    try {
      verified = verifyCompact(jws, REMOTE_TYP.request, this.#o.runtime_keys);
    } catch (err) {
      const reason = isAipError(err) && typeof err.details.reason === 'string' ? err.details.reason : 'unverifiable';
      return this.#refuse(undefined, digest, 'connector.remote_signature_invalid', { reason });
    }
    const parsed = RemoteRequestSchema.safeParse(verified.payload);
    if (!parsed.success)
      return this.#refuse(undefined, digest, 'connector.remote_signature_invalid', {
        reason: 'payload_schema',
        paths: parsed.error.issues.slice(0, 10).map((i) => joinIssuePath(i.path, '/')),
      });
    const r = parsed.data;
    if (r.iss !== verified.kid) return this.#refuse(r, digest, 'connector.remote_signature_invalid', { reason: 'issuer' });
    const now = this.#clock.now().getTime();
    // 2. freshness
    if (!isFresh(r.iat, now)) return this.#refuse(r, digest, 'connector.remote_stale', { reason: 'iat' });
    // 3. deadline
    if (req.headers[DEADLINE_HEADER] !== r.deadline) return this.#refuse(r, digest, 'connector.remote_signature_invalid', { reason: 'deadline_header' });
    if (Date.parse(r.deadline) <= now) return this.#refuse(r, digest, 'connector.remote_deadline_exceeded', { deadline: r.deadline });
    // 4. pinning
    const served = this.#served.get(r.route.connector_id);
    const mismatched = this.#pinMismatches(r, served, now);
    if (mismatched.length > 0 || served === undefined)
      return this.#refuse(r, digest, 'connector.remote_route_mismatch', { mismatched: mismatched.length > 0 ? mismatched : ['connector_id'] });
    // 5. replay
    if (!(await this.#o.nonces.claim(r.nonce, new Date(r.iat + FRESHNESS_WINDOW_MS))))
      return this.#refuse(r, digest, 'connector.remote_replay', { reason: 'nonce' });

    const capability = served.manifest.capabilities.find((c) => c.id === r.action.capability_id);
    const support = served.hosted.connector.implementation_support(r.action.capability_id);
    if (capability === undefined || support === undefined) return this.#refuse(r, digest, 'connector.remote_route_mismatch', { mismatched: ['capability_id'] });

    const checkpoints: { provider_operation: NonNullable<RemoteCheckpointCallback['provider_operation']>; cursor?: string }[] = [];
    const chunks: StreamChunk[] = [];
    let seq = 0;
    const writer: TransactionCheckpointWriter = {
      checkpoint: async ({ provider_operation, reconciliation_cursor }) => {
        const n = seq++;
        await this.#publishCheckpoint(r, jws, digest, n, provider_operation, reconciliation_cursor);
        checkpoints.push({ provider_operation: { ...provider_operation }, ...(reconciliation_cursor !== undefined ? { cursor: reconciliation_cursor } : {}) });
      },
    };
    const sink: StreamSink = { write: async (chunk) => void chunks.push(chunk.chunk) };
    const trusted = trustedFrom(r);
    const facilities = {
      clock: this.#clock,
      transaction_checkpoints: writer,
      stream_sink: sink,
      ...(req.signal !== undefined ? { parent_signal: req.signal } : {}),
    };

    let outcome: RemoteOutcome;
    let provider_effect_committed = false;
    let timed_out = false;
    if (r.op === 'cancel_typed') {
      const running = this.#inflight.get(r.context.attempt_id);
      const attempt =
        running ??
        createExecutionContext(
          {
            ...trusted,
            action_id: r.action.id,
            capability_id: capability.id,
            deadline_at: new Date(r.deadline),
            streaming: capability.execution?.supports_streaming === true && support.streaming,
          },
          facilities,
        );
      try {
        const cancel = await served.hosted.connector.cancel_typed(r.action, attempt.context);
        outcome = { type: 'cancel', cancel: JSON.parse(JSON.stringify(cancel)) as Extract<RemoteOutcome, { type: 'cancel' }>['cancel'] };
      } catch (err) {
        outcome = { type: 'cancel_failure', failure: toConnectorFailure(err, 'cancellation', `connector:${served.hosted.connector.id}`).toJSON() };
      } finally {
        // A context built for this cancel alone ends with it: kept, it is dead (credentials, checkpoints refused).
        if (running === undefined) {
          await attempt.end({ drain: false });
          attempt.retire?.();
        }
      }
    } else {
      // 6. capacity (after every check, so only an authentic, pinned, fresh request can hold a slot)
      const limit = served.hosted.max_concurrent_attempts;
      const slot =
        limit !== undefined
          ? await this.#capacity.acquire(served.hosted.connector.id, limit, new Date(Date.parse(r.deadline) + CAPACITY_SLOT_MARGIN_MS))
          : undefined;
      if (limit !== undefined && slot === undefined) {
        return this.#refuse(r, digest, 'connector.remote_capacity_exhausted', { connector_id: served.hosted.connector.id, max_concurrent_attempts: limit });
      }
      const attemptId = r.context.attempt_id;
      const result = await runAttempt({
        connector: served.hosted.connector,
        capability,
        support,
        action: r.action,
        trusted: { ...trusted, action_deadline: new Date(r.deadline) },
        facilities,
        ...(this.#o.default_timeout_ms !== undefined ? { default_timeout_ms: this.#o.default_timeout_ms } : {}),
        on_attempt: (a) => void this.#inflight.set(attemptId, a),
      }).finally(async () => {
        this.#inflight.delete(attemptId);
        await slot?.release();
      });
      provider_effect_committed = result.provider_effect_committed;
      timed_out = result.timed_out;
      const reconciliation =
        result.reconciliation !== undefined
          ? { reconciliation: JSON.parse(JSON.stringify(result.reconciliation)) as Extract<RemoteOutcome, { type: 'result' }>['reconciliation'] }
          : {};
      outcome = result.ok
        ? { type: 'result', result: result.result, ...reconciliation }
        : {
            type: 'error',
            error: result.error,
            ...(result.failure !== undefined ? { failure: result.failure.toJSON() } : {}),
            ...(result.result !== undefined ? { result: result.result } : {}),
            ...reconciliation,
          };
    }
    return this.#answer(r, digest, { status: 'answered', outcome, checkpoints, chunks, provider_effect_committed, timed_out }, r.route);
  }

  #pinMismatches(r: RemoteRequest, served: Served | undefined, now: number): string[] {
    const route = r.route;
    const out: string[] = [];
    if (r.aud !== this.#o.endpoint) out.push('aud');
    if (route.endpoint !== this.#o.endpoint) out.push('endpoint');
    if (route.peer_identity !== this.kid) out.push('peer_identity');
    if (route.peer_did !== undefined && route.peer_did !== this.#did) out.push('peer_did');
    if (served === undefined) out.push('connector_id');
    else {
      if (route.version !== served.published.version) out.push('version');
      if (route.manifest_hash !== served.published.manifest_hash) out.push('manifest_hash');
      if (route.credential_revision !== served.published.credential_revision) out.push('credential_revision');
    }
    if (route.connector_instance !== this.#o.instance_id) out.push('connector_instance');
    if (route.replica !== this.#o.replica) out.push('replica');
    const tenant = r.context.tenant?.tenant_id;
    if (tenant === undefined || route.verified_tenant !== tenant || route.tenant_id !== tenant) out.push('tenant');
    if (route.capability_id !== r.action.capability_id) out.push('capability_id');
    if (route.action_id !== r.action.id) out.push('action_id');
    if (r.op !== 'cancel_typed' && r.op !== selectMethod(r.action)) out.push('operation');
    if (r.lease.attempt_id !== r.context.attempt_id || r.lease.fence < route.fence_token) out.push('lease');
    else if (Date.parse(r.lease.expires_at) <= now) out.push('lease_expired');
    return out;
  }

  /**
   * Publishes one checkpoint to the runtime's receiver and waits for its
   * signed acknowledgement (durable) before the connector goes on. Anything
   * else rejects the connector's checkpoint call.
   */
  async #publishCheckpoint(
    r: RemoteRequest,
    requestJws: string,
    digest: string,
    seq: number,
    ref: RemoteCheckpointCallback['provider_operation'],
    cursor: string | undefined,
  ): Promise<void> {
    const url = r.callback?.url;
    if (url === undefined || (this.#o.callback_urls !== undefined && !this.#o.callback_urls.includes(url))) {
      throw new AipError('connector.transaction_checkpoint_unavailable', 'the request names no checkpoint receiver this host may call');
    }
    const n = nonce();
    const callback: RemoteCheckpointCallback = {
      v: 1,
      kind: 'checkpoint',
      iss: this.kid,
      aud: url,
      iat: this.#clock.now().getTime(),
      nonce: n,
      request: requestJws,
      seq,
      provider_operation: { ...ref },
      ...(cursor !== undefined ? { cursor } : {}),
    };
    const body = await signCompact(this.#o.signer, REMOTE_TYP.checkpoint, callback);
    let text: string;
    try {
      const remaining = Math.max(1_000, Date.parse(r.deadline) - this.#clock.now().getTime());
      const res = await (this.#o.fetch ?? fetch)(url, {
        method: 'POST',
        headers: { 'content-type': REMOTE_CONTENT_TYPE, accept: REMOTE_CONTENT_TYPE },
        body,
        signal: AbortSignal.timeout(remaining),
      });
      text = await res.text();
    } catch {
      throw new ConnectorFailure({
        code: 'connector.remote_answer_lost',
        operation: TYPED_METHOD_OPERATION[r.op],
        source: `remote-host:${this.#o.instance_id}`,
        uncertain_outcome: true,
        redacted_details: { phase: 'checkpoint' },
      });
    }
    const ack = RemoteCheckpointAckSchema.safeParse(verifyCompact(text, REMOTE_TYP.checkpoint_ack, this.#o.runtime_keys).payload);
    const a = ack.success ? ack.data : undefined;
    if (
      a === undefined ||
      a.nonce !== n ||
      a.request_digest !== digest ||
      a.seq !== seq ||
      a.aud !== this.kid ||
      !isFresh(a.iat, this.#clock.now().getTime())
    ) {
      throw new AipError('connector.remote_answer_invalid', 'the checkpoint acknowledgement does not match the checkpoint', {
        details: { phase: 'checkpoint' },
      });
    }
    if (a.status !== 'durable') {
      if (a.failure !== undefined)
        throw new AipError(isErrorCode(a.failure.code) ? a.failure.code : 'transaction.provider_operation_conflict', a.failure.message, {
          details: a.failure.redacted_details,
        });
      throw new AipError('transaction.provider_operation_conflict');
    }
  }
}

/** The attempt's trusted state, from the verified request's facts only. */
function trustedFrom(r: RemoteRequest): Omit<TrustedAttemptState, 'deadline_at' | 'streaming' | 'capability_id' | 'action_id'> {
  const c = r.context;
  const tx = c.transaction;
  return {
    attempt_id: c.attempt_id,
    actor: {
      principal: { ...c.actor.principal },
      issuer: c.actor.issuer,
      scheme: c.actor.scheme,
      scopes: [...c.actor.scopes],
      lifetime: { issued_at: new Date(c.actor.lifetime.issued_at), expires_at: new Date(c.actor.lifetime.expires_at) },
      ...(c.actor.delegation !== undefined
        ? {
            delegation: {
              reason: c.actor.delegation.reason,
              ...(c.actor.delegation.on_behalf_of !== undefined ? { on_behalf_of: c.actor.delegation.on_behalf_of } : {}),
            },
          }
        : {}),
    },
    ...(c.tenant !== undefined
      ? {
          tenant: {
            tenant_id: c.tenant.tenant_id,
            ...(c.tenant.external_account_id !== undefined ? { external_account_id: c.tenant.external_account_id } : {}),
          },
        }
      : {}),
    ...(c.credential_handle !== undefined ? { credential: CredentialHandle.of(c.credential_handle) } : {}),
    ...(c.idempotency !== undefined ? { idempotency: { ...c.idempotency } } : {}),
    ...(c.approval !== undefined ? { approval: c.approval } : {}),
    ...(tx !== undefined
      ? {
          transaction: {
            transaction_id: tx.transaction_id,
            mode: tx.mode,
            ...(tx.plan_id !== undefined ? { plan_id: tx.plan_id } : {}),
            ...(tx.provider_operation_id !== undefined ? { provider_operation_id: tx.provider_operation_id } : {}),
            ...(tx.provider_operation !== undefined ? { provider_operation: tx.provider_operation } : {}),
            ...(tx.cursor !== undefined ? { cursor: tx.cursor } : {}),
            ...(tx.original_request !== undefined ? { original_request: tx.original_request } : {}),
          },
        }
      : {}),
    trace: {
      trace_id: c.trace.trace_id,
      span_id: c.trace.span_id,
      ...(c.trace.parent_span_id !== undefined ? { parent_span_id: c.trace.parent_span_id } : {}),
    },
    redaction: c.redaction,
  };
}
