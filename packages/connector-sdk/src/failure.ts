import * as z from './common/zod.js';
import { deepFreeze } from './common/deep-freeze.js';
import { AipError, isAipError } from './errors/aip-error.js';
import { ERROR_CATALOGUE, isErrorCode, type ErrorCategory } from './errors/catalogue.js';
import {
  ErrorCategorySchema,
  ErrorCodeSchema,
  JsonObjectSchema,
  ProviderOperationRefSchema,
  TextSchema,
  type Action,
  type Capability,
  type JsonObject,
  type ProtocolError,
  type ProviderOperationRef,
} from './protocol/index.js';
import { ConnectorOperationSchema, SIDE_EFFECTING_OPERATIONS, type ConnectorOperation } from './operations.js';
import type { ImplementationSupport } from './support.js';

/** The twelve ConnectorFailure fields, in the page's order. */
export const CONNECTOR_FAILURE_FIELDS = [
  'code',
  'message',
  'category',
  'retryable',
  'retry_after_ms',
  'provider_request_id',
  'provider_operation',
  'remote_status',
  'uncertain_outcome',
  'redacted_details',
  'source',
  'operation',
] as const;
export type ConnectorFailureField = (typeof CONNECTOR_FAILURE_FIELDS)[number];

/** Serialized form of a ConnectorFailure: exactly the twelve fields (strict). */
export const ConnectorFailureRecordSchema = z.deferred(() =>
  z.strictObject({
    code: ErrorCodeSchema,
    message: TextSchema(2048).check(z.minLength(1)),
    category: ErrorCategorySchema,
    retryable: z.boolean(),
    retry_after_ms: z.optional(z.number().check(z.int(), z.gte(0), z.lte(86_400_000))),
    provider_request_id: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
    provider_operation: z.optional(ProviderOperationRefSchema),
    remote_status: z.optional(z.number().check(z.int(), z.gte(0), z.lte(999))),
    uncertain_outcome: z.boolean(),
    /** Structured details safe for durable audit storage (plain JSON; never secrets). */
    redacted_details: JsonObjectSchema,
    source: z.string().check(z.minLength(1), z.maxLength(200)),
    operation: ConnectorOperationSchema,
  }),
);
export type ConnectorFailureRecord = z.infer<typeof ConnectorFailureRecordSchema>;

/**
 * What a connector supplies to build a failure. For catalogued codes the
 * message, category, retryability and retry delay default from the catalogue.
 * For connector-namespaced codes (e.g. `payments.card_declined`) the category
 * defaults to `internal`, and `retryable` always defaults to false: claiming a
 * retry is safe must be explicit.
 */
export interface ConnectorFailureInit {
  readonly code: string;
  readonly operation: ConnectorOperation;
  readonly source: string;
  readonly message?: string | undefined;
  readonly category?: ErrorCategory | undefined;
  readonly retryable?: boolean | undefined;
  readonly retry_after_ms?: number | undefined;
  readonly provider_request_id?: string | undefined;
  readonly provider_operation?: ProviderOperationRef | undefined;
  readonly remote_status?: number | undefined;
  readonly uncertain_outcome?: boolean | undefined;
  readonly redacted_details?: JsonObject | undefined;
  /**
   * The raw error. Kept out of every serialized and inspected form (it may
   * carry provider payloads or headers); read it with connectorFailureCause().
   */
  readonly cause?: unknown;
}

const causes = new WeakMap<ConnectorFailure, unknown>();

/**
 * A typed connector failure with exactly the twelve fields of the page. It is
 * an Error (so it can be thrown from handlers) whose `toJSON` yields the
 * twelve-field record. `message` and `redacted_details` must already be
 * redacted; the constructor rejects details that are not plain JSON, which
 * also keeps a ConnectorSecret or a context object out of them.
 */
export class ConnectorFailure extends Error {
  declare readonly message: string;
  readonly code: string;
  readonly category: ErrorCategory;
  readonly retryable: boolean;
  readonly retry_after_ms: number | undefined;
  readonly provider_request_id: string | undefined;
  readonly provider_operation: ProviderOperationRef | undefined;
  readonly remote_status: number | undefined;
  readonly uncertain_outcome: boolean;
  readonly redacted_details: Readonly<JsonObject>;
  readonly source: string;
  readonly operation: ConnectorOperation;

  constructor(init: ConnectorFailureInit) {
    const catalogued = isErrorCode(init.code) ? ERROR_CATALOGUE[init.code] : undefined;
    const record = {
      code: init.code,
      message: init.message ?? catalogued?.title ?? init.code,
      category: init.category ?? catalogued?.category ?? 'internal',
      retryable: init.retryable ?? catalogued?.retryable ?? false,
      retry_after_ms: init.retry_after_ms ?? catalogued?.retryAfterMs,
      provider_request_id: init.provider_request_id,
      provider_operation: init.provider_operation,
      remote_status: init.remote_status,
      uncertain_outcome: init.uncertain_outcome ?? false,
      redacted_details: init.redacted_details ?? {},
      source: init.source,
      operation: init.operation,
    };
    const parsed = ConnectorFailureRecordSchema.safeParse(dropUndefined(record));
    if (!parsed.success) {
      // Report paths only, never values: a bad field may be exactly the secret.
      throw new AipError('connector.failure_invalid', undefined, {
        details: { fields: [...new Set(parsed.error.issues.map((i) => String(i.path[0] ?? '')))] },
      });
    }
    super(record.message);
    this.code = record.code;
    this.category = record.category;
    this.retryable = record.retryable;
    this.retry_after_ms = record.retry_after_ms;
    this.provider_request_id = record.provider_request_id;
    this.provider_operation = record.provider_operation ? Object.freeze({ ...record.provider_operation }) : undefined;
    this.remote_status = record.remote_status;
    this.uncertain_outcome = record.uncertain_outcome;
    this.redacted_details = deepFreeze(structuredClone(record.redacted_details));
    this.source = record.source;
    this.operation = record.operation;
    if (init.cause !== undefined) causes.set(this, init.cause);
  }

  /** The twelve-field record (optional fields omitted when absent). */
  toJSON(): ConnectorFailureRecord {
    return dropUndefined({
      code: this.code,
      message: this.message,
      category: this.category,
      retryable: this.retryable,
      retry_after_ms: this.retry_after_ms,
      provider_request_id: this.provider_request_id,
      provider_operation: this.provider_operation,
      remote_status: this.remote_status,
      uncertain_outcome: this.uncertain_outcome,
      redacted_details: this.redacted_details as JsonObject,
      source: this.source,
      operation: this.operation,
    });
  }

  /** Rebuilds a failure from its serialized record (validated). */
  static fromRecord(record: unknown): ConnectorFailure {
    const parsed = ConnectorFailureRecordSchema.safeParse(record);
    if (!parsed.success) throw new AipError('connector.failure_invalid', undefined, { details: { reason: 'record' } });
    return new ConnectorFailure(parsed.data);
  }

  /**
   * The default of the seven optional typed operations:
   * `connector.operation_unsupported`, category `permanent`, retryable=false.
   */
  static unsupported(operation: ConnectorOperation, source: string, redacted_details?: JsonObject): ConnectorFailure {
    return new ConnectorFailure({
      code: 'connector.operation_unsupported',
      category: 'permanent',
      retryable: false,
      operation,
      source,
      ...(redacted_details ? { redacted_details } : {}),
    });
  }
}
Object.defineProperty(ConnectorFailure.prototype, 'name', { value: 'ConnectorFailure', enumerable: false, configurable: true, writable: true });

export function isConnectorFailure(value: unknown): value is ConnectorFailure {
  return value instanceof ConnectorFailure;
}

/** The raw error a failure was built from, for local debugging only (never serialized). */
export function connectorFailureCause(failure: ConnectorFailure): unknown {
  return causes.get(failure);
}

/**
 * Normalizes anything thrown by connector code into a ConnectorFailure:
 * - a ConnectorFailure is returned unchanged;
 * - an AipError keeps its code, category, retryability, message and details
 *   (AipError messages and details are already redacted by contract);
 * - anything else becomes `connector.unexpected_error` with a generic message
 *   (the raw message may carry provider payloads), `uncertain_outcome: true`
 *   for side-effecting operations, and never retryable.
 */
export function toConnectorFailure(err: unknown, operation: ConnectorOperation, source: string): ConnectorFailure {
  if (isConnectorFailure(err)) return err;
  if (isAipError(err)) {
    return new ConnectorFailure({
      code: err.code,
      message: err.message,
      category: err.category,
      retryable: err.retryable,
      ...(err.retryAfterMs !== undefined ? { retry_after_ms: err.retryAfterMs } : {}),
      redacted_details: safeDetails(err.details),
      operation,
      source,
      cause: err,
    });
  }
  const errorType = err instanceof Error ? err.constructor.name : typeof err;
  return new ConnectorFailure({
    code: 'connector.unexpected_error',
    operation,
    source,
    retryable: false,
    uncertain_outcome: SIDE_EFFECTING_OPERATIONS.has(operation),
    redacted_details: { error_type: /^[A-Za-z0-9_$]{1,64}$/.test(errorType) ? errorType : 'unknown' },
    cause: err,
  });
}

export interface ToProtocolErrorOptions {
  /**
   * True only when the capability declares retry with downstream idempotency
   * (the `retry` flag). When false or absent an uncertain outcome is never
   * retryable.
   */
  readonly capabilityRetryable?: boolean;
}

/**
 * Keys of `ProtocolError.details` written by toProtocolError; a connector's
 * own redacted_details keys of the same name are overwritten.
 */
export const RESERVED_DETAIL_KEYS = ['connector_operation', 'uncertain_outcome'] as const;

/**
 * The retryability a failure may keep: never more permissive than the
 * failure itself, and false for an uncertain outcome unless the capability
 * declares downstream idempotency.
 */
export function safeRetryable(failure: Pick<ConnectorFailure, 'retryable' | 'uncertain_outcome'>, capabilityRetryable: boolean | undefined): boolean {
  if (!failure.retryable) return false;
  if (failure.uncertain_outcome && capabilityRetryable !== true) return false;
  return true;
}

/** The capability declares retry with downstream idempotency (contract and flag). */
export function capabilityRetryable(capability: Capability, support: ImplementationSupport): boolean {
  return capability.execution?.supports_retry === true && support.retry;
}

/**
 * Timeout retryability: true only when the admitted capability supports
 * retry and the action is not a commit or execute transaction.
 */
export function timeoutRetryable(capability: Capability, support: ImplementationSupport, action: Pick<Action, 'transaction'>): boolean {
  const mode = action.transaction?.mode;
  return capabilityRetryable(capability, support) && mode !== 'commit' && mode !== 'execute';
}

/**
 * Converts a failure into the wire ProtocolError. Keeps retry
 * (retryable, retry_after_ms), provider (provider_request_id,
 * provider_operation), remote_status, uncertain_outcome, redacted details and
 * source; the operation travels as `details.connector_operation`. It never
 * makes an unsafe retry safe (see safeRetryable).
 */
export function toProtocolError(failure: ConnectorFailure, options: ToProtocolErrorOptions = {}): ProtocolError {
  const details: JsonObject = { ...(failure.redacted_details as JsonObject), connector_operation: failure.operation };
  if (failure.uncertain_outcome) details.uncertain_outcome = true;
  else delete details.uncertain_outcome;
  return dropUndefined({
    code: failure.code,
    message: failure.message,
    category: failure.category,
    retryable: safeRetryable(failure, options.capabilityRetryable),
    retry_after_ms: failure.retry_after_ms,
    provider_request_id: failure.provider_request_id,
    provider_operation: failure.provider_operation ? { ...failure.provider_operation } : undefined,
    remote_status: failure.remote_status,
    uncertain_outcome: failure.uncertain_outcome,
    details,
    source: failure.source,
  });
}

// ---------------------------------------------------------------------------
// Uncertainty after an effect, and the timeout rule
// ---------------------------------------------------------------------------

const sdkFailures = new WeakSet<ConnectorFailure>();

/**
 * Marks a failure as produced by the SDK or the runtime itself (a stream,
 * credential or output failure), not as a classification the connector made
 * of the provider's answer. See escalateAfterEffect.
 */
export function markSdkFailure<T extends ConnectorFailure>(failure: T): T {
  sdkFailures.add(failure);
  return failure;
}

export function isSdkFailure(failure: ConnectorFailure): boolean {
  return sdkFailures.has(failure);
}

/** What the attempt did before it failed (see contextAttemptEvidence in context.ts). */
export interface EffectEvidence {
  /** The provider operation known to the attempt (recovered or checkpointed). */
  readonly provider_operation?: ProviderOperationRef | undefined;
  /** The connector published provider_effect_committed in this attempt. */
  readonly provider_effect_committed: boolean;
  /** The connector checkpointed (or tried to) a provider operation in this attempt. */
  readonly provider_operation_checkpointed: boolean;
}

export type UncertainBecause = 'provider_effect_committed' | 'provider_operation_checkpointed';

/**
 * Why a failure must report `uncertain_outcome: true` because of what its
 * attempt did first, or undefined:
 * - after `provider_effect_committed` (the provider durably accepted the
 *   effect) every failure of the attempt;
 * - after a provider operation was checkpointed (the provider accepted
 *   work) every failure the connector did not classify itself: SDK and
 *   runtime errors (a checkpoint conflict, a stream or credential failure,
 *   invalid output) and unclassified errors. A typed failure the connector
 *   built from the provider's answer (e.g. "declined", with the operation)
 *   keeps its own uncertainty.
 */
export function uncertainBecause(evidence: EffectEvidence, classifiedByConnector: boolean): UncertainBecause | undefined {
  if (evidence.provider_effect_committed) return 'provider_effect_committed';
  if (evidence.provider_operation_checkpointed && !classifiedByConnector) return 'provider_operation_checkpointed';
  return undefined;
}

/**
 * Once an effect may have happened, a failure of the attempt is
 * `uncertain_outcome: true` and carries the known provider operation
 * (details gain `uncertain_because`). A failure that records committed side
 * effects needing compensation (`side_effects_committed: true`, the partial
 * path) is a known outcome and stays certain, gaining only the operation.
 */
export function escalateAfterEffect(failure: ConnectorFailure, evidence: EffectEvidence, classifiedByConnector: boolean): ConnectorFailure {
  const why = uncertainBecause(evidence, classifiedByConnector);
  if (why === undefined) return failure;
  const partial = failure.redacted_details.side_effects_committed === true;
  const uncertain = failure.uncertain_outcome || !partial;
  const provider_operation = failure.provider_operation ?? evidence.provider_operation;
  if (uncertain === failure.uncertain_outcome && provider_operation === failure.provider_operation) return failure;
  return withFailureFields(failure, {
    uncertain_outcome: uncertain,
    ...(provider_operation !== undefined ? { provider_operation } : {}),
    redacted_details: { ...(failure.redacted_details as JsonObject), ...(uncertain && !failure.uncertain_outcome ? { uncertain_because: why } : {}) },
  });
}

/** escalateAfterEffect for a wire error that did not come from a ConnectorFailure (map_error output, a failed ActionResult). */
export function escalateProtocolErrorAfterEffect(
  error: ProtocolError,
  evidence: EffectEvidence,
  classifiedByConnector: boolean,
  options: ToProtocolErrorOptions = {},
): ProtocolError {
  const why = uncertainBecause(evidence, classifiedByConnector);
  if (why === undefined) return error;
  const wasUncertain = error.uncertain_outcome === true || error.details?.uncertain_outcome === true;
  const uncertain = wasUncertain || error.details?.side_effects_committed !== true;
  const provider_operation = error.provider_operation ?? evidence.provider_operation;
  const out: ProtocolError = {
    ...error,
    ...(provider_operation !== undefined ? { provider_operation: { ...provider_operation } } : {}),
    ...(uncertain
      ? { uncertain_outcome: true, details: { ...(error.details ?? {}), uncertain_outcome: true, ...(!wasUncertain ? { uncertain_because: why } : {}) } }
      : {}),
  };
  return clampProtocolErrorRetry(out, options);
}

/** A timeout, whoever reports it: `sla.timeout_exceeded` or category `timeout`. */
export function isTimeoutFailure(failure: { readonly code: string; readonly category: string }): boolean {
  return failure.code === 'sla.timeout_exceeded' || failure.category === 'timeout';
}

/**
 * The page's timeout rule for the action's mode: a timeout of a `commit` or
 * `execute` transaction is never retryable, whoever reports it (the runtime's
 * deadline or the connector's own deadline-bound wait).
 */
export function timeoutNeverRetryable(mode: string | undefined): boolean {
  return mode === 'commit' || mode === 'execute';
}

/** A copy of `failure` with some fields replaced (the cause and the SDK mark are kept). */
export function withFailureFields(failure: ConnectorFailure, patch: Partial<Omit<ConnectorFailureInit, 'cause'>>): ConnectorFailure {
  const copy = new ConnectorFailure({ ...failure.toJSON(), ...patch, cause: connectorFailureCause(failure) ?? failure });
  return isSdkFailure(failure) ? markSdkFailure(copy) : copy;
}

/**
 * Applies the same never-upgrade rule to a ProtocolError that did not come
 * from a ConnectorFailure (e.g. a connector's own map_error output).
 */
export function clampProtocolErrorRetry(error: ProtocolError, options: ToProtocolErrorOptions = {}): ProtocolError {
  const uncertain = error.uncertain_outcome === true || error.details?.uncertain_outcome === true;
  if (error.retryable && uncertain && options.capabilityRetryable !== true) return { ...error, retryable: false };
  return error;
}

function safeDetails(details: Readonly<Record<string, unknown>>): JsonObject {
  const parsed = JsonObjectSchema.safeParse(details);
  return parsed.success ? { ...parsed.data } : { details_dropped: 'not plain JSON' };
}

function dropUndefined<T extends Record<string, unknown>>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as T;
}
