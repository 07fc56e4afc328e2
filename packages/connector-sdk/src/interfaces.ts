/**
 * The connector interfaces of the connector page: the base Connector, the
 * five role interfaces, and FrozenConnector (the callable production
 * boundary). Method names are the page's, in snake_case.
 */
import * as z from './common/zod.js';
import type { Action, ActionResult, Capability, JsonObject, JsonValue, ProtocolError, ProviderOperationRef } from './protocol/index.js';
import { JsonObjectSchema, ProviderOperationRefSchema, ReconciliationCursorSchema } from './protocol/index.js';
import type { ActionExecutionContext } from './context.js';
import type { ConnectorManifest } from './manifest.js';
import type { ConnectorOperation } from './operations.js';
import type { ImplementationSupport } from './support.js';

/** What discovery and health checks receive: deployment facts, never an actor or tenant grant. */
export interface ConnectorContext {
  /** Deployment environment, e.g. `local`, `staging`, `prod`. */
  readonly environment?: string;
  /** Connector instance (fleet replica) identifier, when placed remotely. */
  readonly instance_id?: string;
  /** Aborts a slow discovery or health check. */
  readonly signal?: AbortSignal;
}

/**
 * A connector's own readiness (its `health` check). `detail` must be
 * operator-safe (no secrets, no provider payloads). The API's `GET /v1/health`
 * answer (HealthReport, lib/http/schemas.ts) gathers one of these per hosted connector.
 */
export interface ConnectorHealth {
  readonly ready: boolean;
  readonly detail?: string;
}

/** The base interface: four responsibilities. */
export interface Connector {
  /** One stable connector identifier. */
  readonly id: string;
  /** The connector manifest for the supplied connector context. */
  discover(ctx: ConnectorContext): Promise<ConnectorManifest>;
  /**
   * Converts a connector error to a typed AIP protocol error. The runtime
   * passes the typed operation that failed, so the error can name it, and
   * the action and trusted context of the failing call (when there is one).
   */
  map_error(err: unknown, operation?: ConnectorOperation, action?: Action, ctx?: ActionExecutionContext): ProtocolError;
  /**
   * Whether the connector can currently discover and serve traffic. The
   * default (see defaultHealth) treats successful discovery as ready.
   * Readiness does not prove a provider operation, webhook, or credential
   * has been qualified.
   */
  health(ctx: ConnectorContext): Promise<ConnectorHealth>;
}

// ---------------------------------------------------------------------------
// Role interfaces
// ---------------------------------------------------------------------------

/** Returns executable capabilities independently of transport ingress. */
export interface CapabilityProviderConnector extends Connector {
  capabilities(ctx: ConnectorContext): Promise<readonly Capability[]>;
}

/** A raw external event as received (before verification). */
export interface ExternalEvent {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array | string;
  readonly received_at: Date;
}

/** Maps one external event payload to native envelopes. */
export interface InboundConnector extends Connector {
  /**
   * Verifies the event (signature, replay window) and maps it to zero or more
   * native action envelopes. An unverifiable event is rejected with a
   * ConnectorFailure (operation `ingestion`).
   */
  map_event(event: ExternalEvent, ctx: ConnectorContext): Promise<readonly Action[]>;
}

/** A conversation surface a channel connector replies to. */
export interface ConversationRef {
  readonly channel: string;
  readonly conversation_id: string;
  readonly thread_id?: string;
}

/** Ingests channel events and emits results to a conversation surface. */
export interface ChannelConnector extends Connector {
  ingest_channel_event(event: ExternalEvent, ctx: ConnectorContext): Promise<readonly Action[]>;
  emit_to_conversation(result: ActionResult, conversation: ConversationRef, ctx: ActionExecutionContext): Promise<void>;
}

/** The result of a cancellation request. */
export interface CancelOutcome {
  /** True when the provider accepted the cancellation request (not proof that it stopped work). */
  readonly accepted: boolean;
  readonly provider_operation?: ProviderOperationRef | undefined;
  /** Operator-safe, redacted detail. */
  readonly redacted_details?: JsonObject | undefined;
}
export const CancelOutcomeSchema = z.deferred(() =>
  z.strictObject({
    accepted: z.boolean(),
    provider_operation: z.optional(ProviderOperationRefSchema),
    redacted_details: z.optional(JsonObjectSchema),
  }),
);

/**
 * Invokes an external system, observes cancellation, requests remote
 * cancellation, and emits a result. Dropping a local promise does not prove
 * that a remote provider stopped work: request_remote_cancellation does.
 */
export interface OutboundConnector extends Connector {
  invoke(action: Action, ctx: ActionExecutionContext): Promise<ActionResult>;
  request_remote_cancellation(action: Action, ctx: ActionExecutionContext): Promise<CancelOutcome>;
  emit_result(result: ActionResult, ctx: ActionExecutionContext): Promise<void>;
}

/** A governed human escalation. */
export interface HumanEscalation {
  readonly action_id: string;
  readonly capability_id: string;
  readonly reason: string;
  readonly approval_policy_id?: string;
  readonly approver_scopes?: readonly string[];
  /** Redacted summary for the human. */
  readonly summary?: JsonObject;
}

export interface EscalationTicket {
  readonly ticket_id: string;
  readonly url?: string;
}

/** Maps a governed human escalation to a product workflow. */
export interface EscalationConnector extends Connector {
  escalate(escalation: HumanEscalation, ctx: ConnectorContext): Promise<EscalationTicket>;
}

// ---------------------------------------------------------------------------
// FrozenConnector
// ---------------------------------------------------------------------------

/**
 * The result of reconcile_typed. A terminal result records whether the
 * original commit completed; a non-terminal one keeps an opaque cursor and
 * redacted evidence and becomes `transaction.reconciliation_pending`.
 *
 * `provider_operation` is the provider operation the reconciliation found
 * when it looked the original request up by its idempotency key (no
 * provider operation ID was known): the runtime checkpoints it, so later
 * reconciliations look it up by ID. When an ID was known it is omitted, or
 * names that same operation.
 */
export type ReconciliationResult<O = JsonValue> =
  | {
      readonly terminal: true;
      readonly original_commit_completed: boolean;
      readonly output?: O;
      readonly cursor?: string;
      /** Redacted evidence, safe for durable audit storage. */
      readonly evidence?: JsonObject;
      /** The operation found by idempotency key (see above). */
      readonly provider_operation?: ProviderOperationRef;
    }
  | {
      readonly terminal: false;
      readonly cursor?: string;
      readonly evidence?: JsonObject;
      /** The operation found by idempotency key (see above). */
      readonly provider_operation?: ProviderOperationRef;
    };

export const ReconciliationResultSchema = z.deferred(() =>
  z.discriminatedUnion('terminal', [
    z.strictObject({
      terminal: z.literal(true),
      original_commit_completed: z.boolean(),
      output: z.optional(z.unknown()),
      cursor: z.optional(ReconciliationCursorSchema),
      evidence: z.optional(JsonObjectSchema),
      provider_operation: z.optional(ProviderOperationRefSchema),
    }),
    z.strictObject({
      terminal: z.literal(false),
      cursor: z.optional(ReconciliationCursorSchema),
      evidence: z.optional(JsonObjectSchema),
      provider_operation: z.optional(ProviderOperationRefSchema),
    }),
  ]),
);

/**
 * How a connector can find the provider operation a reconciliation is about:
 * - `provider_operation`: by the checkpointed provider operation ID
 *   (`ctx.transaction.provider_operation_id`), the page's rule;
 * - `idempotency_key`: by the idempotency key the original request sent,
 *   recomputed from `ctx.transaction.original_request` (an extension: see
 *   docs/connector-authoring.md, "Reconciling without an operation ID").
 */
export const RECONCILE_LOOKUPS = ['provider_operation', 'idempotency_key'] as const;
export type ReconcileLookup = (typeof RECONCILE_LOOKUPS)[number];
export const ReconcileLookupSchema = z.enum(RECONCILE_LOOKUPS);

/** The lookup a connector without `reconcile_lookup` supports. */
export const DEFAULT_RECONCILE_LOOKUP: readonly ReconcileLookup[] = Object.freeze(['provider_operation'] as const);

/**
 * The reconcile lookups `connector` declares for a capability: its
 * `reconcile_lookup(capability_id)` when it has one (unknown values dropped),
 * else DEFAULT_RECONCILE_LOOKUP. A `reconcile_lookup` that throws or answers
 * something other than an array declares nothing beyond the default.
 */
export function reconcileLookupOf(connector: FrozenConnector, capability_id: string): readonly ReconcileLookup[] {
  if (typeof connector.reconcile_lookup !== 'function') return DEFAULT_RECONCILE_LOOKUP;
  let declared: unknown;
  try {
    declared = connector.reconcile_lookup(capability_id);
  } catch {
    return DEFAULT_RECONCILE_LOOKUP;
  }
  if (!Array.isArray(declared)) return DEFAULT_RECONCILE_LOOKUP;
  return Object.freeze(RECONCILE_LOOKUPS.filter((l) => declared.includes(l)));
}

/** What emit_typed publishes: a terminal result or a provider event. */
export type ConnectorEmission =
  | { readonly kind: 'result'; readonly result: ActionResult }
  | { readonly kind: 'event'; readonly event_type: string; readonly payload: JsonObject };

export interface EmitReceipt {
  readonly delivered: boolean;
  readonly provider_request_id?: string;
}

/** A provider event that has already been verified by the connector's edge. */
export interface ProviderEvent {
  readonly provider: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly payload: JsonObject;
  readonly received_at: string;
}

export interface IngestResult {
  /** Native envelopes the event maps to (possibly none). */
  readonly actions: readonly Action[];
  /** The provider operation the event concerns, if any. */
  readonly provider_operation?: ProviderOperationRef;
}

/**
 * The callable production boundary. It receives a complete trusted execution
 * context and makes every optional lifecycle operation explicit:
 * implementation_support and invoke_typed are required; the seven others
 * default to ConnectorFailure `connector.operation_unsupported` (category
 * `permanent`, retryable=false) — see FrozenConnectorBase.
 *
 * Failures are thrown as ConnectorFailure (anything else is normalized by
 * map_error). Successful operations return an ActionResult for the supplied
 * action.
 */
export interface FrozenConnector extends Connector {
  /** The nine-flag record for an admitted capability, or undefined when the connector has none. */
  implementation_support(capability_id: string): ImplementationSupport | undefined;
  /** Execute a normal capability action. */
  invoke_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult>;
  /** Plan or dry-run a governed mutation. */
  plan_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult>;
  /** Commit a prepared mutation. */
  commit_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult>;
  /** Execute a separately governed compensation. */
  compensate_typed(action: Action, ctx: ActionExecutionContext): Promise<ActionResult>;
  /** Request cancellation of a submitted downstream operation. */
  cancel_typed(action: Action, ctx: ActionExecutionContext): Promise<CancelOutcome>;
  /** Determine the terminal outcome of an uncertain provider operation. */
  reconcile_typed(action: Action, ctx: ActionExecutionContext): Promise<ReconciliationResult>;
  /**
   * Optional: how reconcile_typed can find the provider operation of a
   * capability (see ReconcileLookup). Absent: `['provider_operation']`.
   * Declaring `'idempotency_key'` lets dispatch run reconcile_typed without a
   * provider operation ID when the context carries
   * `transaction.original_request`. A capability without reconciliation
   * answers `[]`. Read it through reconcileLookupOf.
   */
  reconcile_lookup?(capability_id: string): readonly ReconcileLookup[];
  /** Emit a terminal result or provider event. */
  emit_typed(emission: ConnectorEmission, ctx: ActionExecutionContext): Promise<EmitReceipt>;
  /** Map one provider event under trusted context. */
  ingest_typed(event: ProviderEvent, ctx: ActionExecutionContext): Promise<IngestResult>;
}
