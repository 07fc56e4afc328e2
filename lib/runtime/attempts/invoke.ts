/**
 * One connector invocation: resolves the action-scoped route, builds the
 * trusted execution context from durable state, and runs the connector SDK's
 * attempt (deadline, cancellation, dispatch table).
 */
import { AipError, isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { CredentialHandle } from '../../../packages/connector-sdk/src/credentials/handle.js';
import type {
  ActorContext,
  ApprovalEvidence,
  ExecutionFacilities,
  IdempotencyReservation as ContextReservation,
  TraceContext,
  TransactionExecutionContext,
} from '../../../packages/connector-sdk/src/context.js';
import type { ActionRecord, RecordedActor } from '../../ports/action-store.js';
import { randomBytes } from 'node:crypto';
import { runAttempt as runConnectorAttempt, type AttemptOutcome as ConnectorAttemptOutcome } from './deadline.js';
import type { Action, Principal } from '../../../packages/connector-sdk/src/protocol/index.js';
import { routeMismatches, type RouteAssignment } from '../../ports/route-store.js';
import { bindAttemptPlacement, certifiedCapacityRefusal } from './placement.js';
import { boundedAttemptMs } from '../attempt-budget.js';
import { loadConnector, type HostedConnector } from '../deps.js';
import type { Kernel } from '../kernel.js';
import { bindRuntimeMemory, type RuntimeMemory } from '../../../packages/connector-sdk/src/memory.js';
import type { RegisteredCapability } from '../registry.js';

export interface InvocationSubject {
  readonly tenant_id: string;
  /** The connector-facing action (its capability is `reg`). */
  readonly action: Action;
  readonly reg: RegisteredCapability;
  readonly principal: Principal;
  readonly attempt_id: string;
  readonly fence: number;
  readonly issued_at: Date;
  readonly lease_ms: number;
  readonly transaction?: TransactionExecutionContext;
  readonly approval?: ApprovalEvidence;
  readonly idempotency?: ContextReservation;
  readonly memory?: RuntimeMemory;
  /** The route's action ID (the public action ID; equals action.id unless rewritten). */
  readonly route_action_id?: string;
  /** The route assignment routeToPin returned: bound to the attempt's context (a remote connector sends it pinned). */
  readonly route?: RouteAssignment;
  /** The verified caller facts the admission recorded on the action. */
  readonly actor?: RecordedActor;
  /** A reconcile the runtime runs for another principal's transaction: that principal. */
  readonly on_behalf_of?: Principal;
  /** A bound below the capability's timeout (an operator's provider lookup answers within its route's time). */
  readonly timeout_ms?: number;
}

/** Attempt timeout: the capability's, else the configured default. */
export function attemptTimeoutMs(k: Kernel, reg: RegisteredCapability): number {
  return reg.capability.execution?.timeout_ms ?? k.config.default_attempt_timeout_ms;
}

/** Lease length for an attempt: its timeout plus the configured margin. */
export function leaseMs(k: Kernel, reg: RegisteredCapability): number {
  return Math.min(86_400_000, attemptTimeoutMs(k, reg) + k.config.lease_margin_ms);
}

export async function hostedConnector(k: Kernel, reg: RegisteredCapability): Promise<HostedConnector> {
  const hosted = await loadConnector(k.deps.connectors, reg.connector_id);
  if (hosted === undefined) throw new AipError('runtime.connector_unavailable', undefined, { details: { connector_id: reg.connector_id } });
  return hosted;
}

/**
 * The route an attempt or a preview runs under, before any write: the one pinned for the action (`record.route`;
 * an action an earlier version started may hold it in a ROUTE item of its own, read then) under the reuse rules,
 * else `wanted`, which the caller's own conditional write of the action then pins (`pin`: the action item holds no
 * route). Nothing reaches a provider before that write lands. There is no lookup by transaction or plan ID.
 *
 * Migrate on read: the legacy item is read only for an action leased before (`fence > 0`). An earlier version
 * pinned the route, then leased, then called the provider: an action never leased made no provider call under
 * the route it may have pinned, so a new pin replaces nothing that ran (docs/table-design.md, "The route on the
 * action").
 */
export async function routeToPin(
  k: Kernel,
  record: Pick<ActionRecord, 'tenant_id' | 'action_id' | 'route' | 'fence'>,
  wanted: RouteAssignment,
): Promise<{ route: RouteAssignment; pin: boolean }> {
  const pinned = record.route ?? (record.fence > 0 ? await k.deps.routes.getLegacy({ tenant_id: record.tenant_id, action_id: record.action_id }) : undefined);
  return { route: pinned === undefined ? wanted : pinnedRoute(wanted, pinned), pin: record.route === undefined };
}

/** The assignment this attempt would pin (not written): what `routeToPin` answers when none is pinned. */
export function routeAssignment(
  k: Kernel,
  s: Pick<InvocationSubject, 'tenant_id' | 'reg' | 'attempt_id' | 'fence' | 'route_action_id'> & { readonly action: Pick<InvocationSubject['action'], 'id'> },
  hosted: HostedConnector,
): RouteAssignment {
  return {
    tenant_id: s.tenant_id,
    action_id: s.route_action_id ?? s.action.id,
    capability_id: s.reg.capability_id,
    verified_tenant: s.tenant_id,
    connector_id: s.reg.connector_id,
    connector_instance: hosted.instance_id ?? 'local',
    replica: hosted.replica ?? 'local-0',
    endpoint: hosted.endpoint ?? 'in-process',
    ...(hosted.peer_identity !== undefined ? { peer_identity: hosted.peer_identity } : {}),
    ...(hosted.peer_did !== undefined ? { peer_did: hosted.peer_did } : {}),
    version: s.reg.connector_version,
    manifest_hash: s.reg.manifest_hash,
    policy_revision: k.config.policy_revision,
    credential_revision: hosted.credential_revision ?? '0',
    health_revision: hosted.health_revision ?? '0',
    admission_reservation: `${s.attempt_id}`,
    fence_token: s.fence,
    created_at: k.iso(),
  };
}

/**
 * The reuse rules, applied to the pinned assignment: one whose capability or
 * tenant differs is `runtime.route_mismatch`; one pinned to another connector
 * instance, replica, endpoint or remote peer is `runtime.connector_unavailable`
 * (retry on the pinned route later). Returns the assignment the attempt runs under.
 */
function pinnedRoute(wanted: RouteAssignment, a: RouteAssignment): RouteAssignment {
  const mismatched = routeMismatches(a, wanted);
  if (mismatched.length > 0) {
    throw new AipError('runtime.route_mismatch', undefined, { details: { action_id: wanted.action_id, mismatched } });
  }
  if (
    a.connector_id !== wanted.connector_id ||
    a.connector_instance !== wanted.connector_instance ||
    a.replica !== wanted.replica ||
    a.endpoint !== wanted.endpoint ||
    a.peer_identity !== wanted.peer_identity
  ) {
    // The pinned replica (or remote peer) is not the one hosted here: retry on the pinned route later.
    throw new AipError('runtime.connector_unavailable', 'The pinned connector replica is not available here', {
      details: { connector_id: a.connector_id, connector_instance: a.connector_instance, replica: a.replica },
    });
  }
  return a;
}

/**
 * The attempt's actor, from the verified token the admission recorded on the
 * action (issuer, scheme, granted scopes, lifetime), never invented. Records
 * written before the actor was kept fall back to the runtime's issuer and the
 * capability's scopes. `delegation` says when the runtime acts beyond the
 * token: it expired before this attempt, or the runtime reconciles another
 * principal's transaction.
 */
export function actorContext(k: Kernel, s: InvocationSubject): ActorContext {
  const a = s.actor;
  const issued_at = a?.issued_at !== undefined ? new Date(a.issued_at) : s.issued_at;
  const expires_at = a?.expires_at !== undefined ? new Date(a.expires_at) : new Date(k.now().getTime() + s.lease_ms);
  const delegation: ActorContext['delegation'] =
    s.on_behalf_of !== undefined
      ? { reason: 'runtime_reconciliation', on_behalf_of: { ...s.on_behalf_of } }
      : expires_at.getTime() <= k.now().getTime()
        ? { reason: 'token_expired_before_attempt' }
        : undefined;
  return {
    principal: s.principal,
    issuer: a?.issuer ?? k.config.issuer,
    scheme: a?.scheme ?? 'aip_runtime_service',
    scopes: [...(a?.scopes ?? s.reg.capability.authorization?.scopes ?? [])],
    lifetime: { issued_at, expires_at },
    ...(delegation !== undefined ? { delegation } : {}),
  };
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

/**
 * The attempt's trace context: a new runtime span (W3C Trace Context IDs) as
 * a child of the caller's trace when the caller's metadata carries valid W3C
 * IDs (`trace_id` 32 lower-case hex, `span_id` 16, not all zeros); otherwise
 * a new trace. Caller strings are never copied in as the runtime's own span.
 */
export function attemptSpan(callerTraceId: string | undefined, callerSpanId: string | undefined): TraceContext {
  const validTrace = callerTraceId !== undefined && TRACE_ID.test(callerTraceId) && !/^0+$/.test(callerTraceId);
  const validSpan = callerSpanId !== undefined && SPAN_ID.test(callerSpanId) && !/^0+$/.test(callerSpanId);
  const trace_id = validTrace ? callerTraceId : randomBytes(16).toString('hex');
  return { trace_id, span_id: randomBytes(8).toString('hex'), ...(validTrace && validSpan ? { parent_span_id: callerSpanId } : {}) };
}

/**
 * What a connector attempt produced, and, for a remote connector, the host's
 * certified capacity refusal when its one request was refused for capacity
 * (signed "not called": ./placement.ts certifiedCapacityRefusal).
 */
export type InvocationOutcome = ConnectorAttemptOutcome & { readonly capacity_refusal?: { readonly retry_after_ms: number } };

/** Runs the connector attempt. Never throws for connector behaviour. */
export async function invokeConnector(
  k: Kernel,
  s: InvocationSubject,
  hosted: HostedConnector,
  facilities: Omit<ExecutionFacilities, 'clock'> = {},
  cancel_signal?: AbortSignal,
): Promise<InvocationOutcome> {
  const cap = s.reg.capability;
  const handleId = hosted.credential_handle?.(cap.id);
  // The capability's timeout, capped by the invocation's remaining time minus the settlement margin (../attempt-budget.ts).
  const timeout = s.timeout_ms !== undefined ? Math.min(s.timeout_ms, attemptTimeoutMs(k, s.reg)) : attemptTimeoutMs(k, s.reg);
  const deadline = new Date(k.now().getTime() + boundedAttemptMs(timeout));
  const trace = s.action.metadata?.observability;
  const pointers = cap.data?.redact_pointers ?? [];
  let context: Parameters<typeof certifiedCapacityRefusal>[0] | undefined;
  const outcome = await runConnectorAttempt({
    connector: hosted.connector,
    capability: cap,
    support: s.reg.implementation_support,
    action: s.action,
    trusted: {
      attempt_id: s.attempt_id,
      actor: actorContext(k, s),
      // The account picks the credential row (tenant, account → secret). `s.action` is the durable action
      // record's action, admitted only if the caller's token held this account (prepare → resolveAccount);
      // resubmissions must match it, a resumed approval reuses it, and a reconcile's service caller holds
      // exactly the original's account. So this is never an account the submitting token did not hold.
      tenant: {
        tenant_id: s.tenant_id,
        ...(s.action.identity?.external_account_id !== undefined ? { external_account_id: s.action.identity.external_account_id } : {}),
      },
      ...(handleId !== undefined ? { credential: CredentialHandle.of(handleId) } : {}),
      ...(s.idempotency !== undefined ? { idempotency: s.idempotency } : {}),
      ...(s.approval !== undefined ? { approval: s.approval } : {}),
      ...(s.transaction !== undefined ? { transaction: s.transaction } : {}),
      trace: attemptSpan(trace?.trace_id, trace?.span_id),
      redaction: { redaction_required: cap.data?.redaction_required === true, input_pointers: [...pointers], output_pointers: [...pointers] },
      action_deadline: deadline,
    },
    facilities: { clock: k.clock, ...facilities },
    default_timeout_ms: k.config.default_attempt_timeout_ms,
    ...(cancel_signal !== undefined ? { cancel_signal } : {}),
    ...(s.memory !== undefined || s.route !== undefined
      ? {
          on_attempt: (attempt) => {
            context = attempt.context;
            if (s.memory !== undefined) bindRuntimeMemory(attempt.context, s.memory);
            // The pinned route and the lease this attempt holds (a remote connector signs them into its request).
            if (s.route !== undefined)
              bindAttemptPlacement(attempt.context, {
                route: s.route,
                lease: { attempt_id: s.attempt_id, fence: s.fence, expires_at: new Date(k.now().getTime() + s.lease_ms) },
              });
          },
        }
      : {}),
  });
  const capacity_refusal = context !== undefined ? certifiedCapacityRefusal(context) : undefined;
  return capacity_refusal !== undefined ? { ...outcome, capacity_refusal } : outcome;
}

/**
 * Watches the action for a client's cancellation request while its attempt
 * runs in the connector: the request is durable on the action record
 * (`cancel_requested_at`, written by `Runtime.cancel`), so the worker reads it
 * back every `config.cancel_poll_ms` (one strongly consistent GetItem) and
 * aborts the returned signal when it appears. `stop()` ends the watch.
 */
export function watchCancellation(k: Kernel, tenant_id: string, action_id: string): { signal: AbortSignal; stop: () => void } {
  const controller = new AbortController();
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const poll = async (): Promise<void> => {
    if (stopped) return;
    try {
      const current = await k.deps.actions.get({ tenant_id, action_id });
      if (current?.cancel_requested_at !== undefined) {
        controller.abort();
        return;
      }
    } catch {
      // A failed read only delays the watch; the attempt is unaffected.
    }
    if (!stopped) timer = setTimeout(() => void poll(), k.config.cancel_poll_ms);
  };
  timer = setTimeout(() => void poll(), k.config.cancel_poll_ms);
  return {
    signal: controller.signal,
    stop: () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

/** True for AipErrors raised before any connector call (no provider effect possible). */
export function isPreInvocationError(err: unknown): err is AipError {
  return isAipError(err) && (err.code === 'runtime.connector_unavailable' || err.code === 'runtime.route_mismatch' || err.code === 'route.invalid_assignment');
}
