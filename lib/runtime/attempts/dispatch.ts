/**
 * The runtime dispatch adapter: binds a handler to one capability, selects
 * the typed method from the action's transaction mode (the page's table),
 * and turns everything the connector returns or throws into a typed outcome.
 * It never throws for connector behaviour.
 */
import { joinIssuePath } from '../../../packages/connector-sdk/src/common/issues.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  ActionResultSchema,
  ProtocolErrorSchema,
  type Action,
  type ActionResult,
  type JsonObject,
  type ProtocolError,
  type ProviderOperationRef,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import { contextAttemptEvidence, contextAttemptIdentity, type ActionExecutionContext } from '../../../packages/connector-sdk/src/context.js';
import {
  ConnectorFailure,
  clampProtocolErrorRetry,
  escalateAfterEffect,
  escalateProtocolErrorAfterEffect,
  isConnectorFailure,
  isSdkFailure,
  isTimeoutFailure,
  markSdkFailure,
  timeoutNeverRetryable,
  toConnectorFailure,
  toProtocolError,
  withFailureFields,
} from '../../../packages/connector-sdk/src/failure.js';
import { ReconciliationResultSchema, reconcileLookupOf, type FrozenConnector } from '../../../packages/connector-sdk/src/interfaces.js';
import {
  SIDE_EFFECTING_OPERATIONS,
  TYPED_METHOD_OPERATION,
  selectMethod,
  type ConnectorOperation,
  type DispatchMethod,
} from '../../../packages/connector-sdk/src/operations.js';

export const DISPATCH_SOURCE = 'runtime:dispatch';

/**
 * What a reconciliation produced, for the runtime to persist.
 * `provider_operation` is set when the connector found the operation by the
 * original request's idempotency key (no operation ID was known): the
 * runtime checkpoints it so later reconciliations look it up by ID.
 */
export type ReconciliationRecord =
  | {
      readonly terminal: true;
      readonly original_commit_completed: boolean;
      readonly cursor?: string;
      readonly evidence?: JsonObject;
      readonly provider_operation?: ProviderOperationRef;
    }
  | { readonly terminal: false; readonly cursor?: string; readonly evidence?: JsonObject; readonly provider_operation?: ProviderOperationRef };

export type DispatchOutcome =
  | {
      readonly ok: true;
      readonly method: DispatchMethod;
      readonly operation: ConnectorOperation;
      /** A completed (or other non-failed) ActionResult for the supplied action. */
      readonly result: ActionResult;
      readonly reconciliation?: ReconciliationRecord;
    }
  | {
      readonly ok: false;
      readonly method: DispatchMethod;
      readonly operation: ConnectorOperation;
      /** The wire error (retryability already made safe for the capability). */
      readonly error: ProtocolError;
      /** The typed failure, when the connector (or the adapter) produced one. */
      readonly failure?: ConnectorFailure;
      /** The failed ActionResult the connector returned, if it returned one. */
      readonly result?: ActionResult;
      readonly reconciliation?: ReconciliationRecord;
    };

export interface DispatchOptions {
  /** The capability declares retry with downstream idempotency (execution.supports_retry and the retry flag). */
  readonly capabilityRetryable?: boolean;
}

/** Builds a failed outcome from a ConnectorFailure. */
export function failedOutcome(
  method: DispatchMethod,
  failure: ConnectorFailure,
  options: DispatchOptions,
  extra: { reconciliation?: ReconciliationRecord } = {},
): Extract<DispatchOutcome, { ok: false }> {
  return {
    ok: false,
    method,
    operation: TYPED_METHOD_OPERATION[method],
    error: toProtocolError(failure, options),
    failure,
    ...extra,
  };
}

/**
 * Dispatches `action` to `connector`'s typed method for the capability bound
 * to this handler.
 *
 * - An action whose capability differs from `boundCapabilityId` (or a context
 *   built for another action or capability) is rejected without calling the
 *   connector: `connector.capability_mismatch`.
 * - reconcile needs transaction context (`connector.reconcile_requires_transaction`)
 *   and a durable provider operation ID, or else (an extension of the page)
 *   `ctx.transaction.original_request` AND a connector that declares the
 *   `idempotency_key` reconcile lookup for the capability (reconcileLookupOf);
 *   otherwise `connector.reconcile_requires_provider_operation`.
 * - A non-terminal reconciliation becomes `transaction.reconciliation_pending`
 *   (temporary, retryable, retry_after_ms 5000) keeping its cursor and
 *   redacted evidence; a terminal one records original_commit_completed.
 * - A failure of invoke / commit / compensate after the attempt published
 *   provider_effect_committed, or (unless the connector classified it
 *   itself) after it checkpointed a provider operation, is
 *   `uncertain_outcome: true` with the known provider operation
 *   (escalateAfterEffect).
 * - A timeout (`sla.timeout_exceeded` or category `timeout`) of a `commit` or
 *   `execute` action is never retryable, whoever reports it.
 */
export async function dispatch(
  connector: FrozenConnector,
  boundCapabilityId: string,
  action: Action,
  ctx: ActionExecutionContext,
  options: DispatchOptions = {},
): Promise<DispatchOutcome> {
  const method = selectMethod(action);
  const operation = TYPED_METHOD_OPERATION[method];

  const identity = contextAttemptIdentity(ctx);
  if (action.capability_id !== boundCapabilityId || identity.capability_id !== boundCapabilityId || identity.action_id !== action.id) {
    return failedOutcome(
      method,
      new ConnectorFailure({
        code: 'connector.capability_mismatch',
        operation,
        source: DISPATCH_SOURCE,
        redacted_details: {
          bound_capability_id: boundCapabilityId,
          action_capability_id: action.capability_id,
          ...(identity.action_id !== action.id ? { context_action_mismatch: true } : {}),
          ...(identity.capability_id !== boundCapabilityId ? { context_capability_mismatch: true } : {}),
        },
      }),
      options,
    );
  }

  if (method === 'reconcile_typed') return dispatchReconcile(connector, action, ctx, options);

  let result: ActionResult;
  try {
    result = await connector[method](action, ctx);
  } catch (err) {
    return settleOutcome(thrownOutcome(connector, method, action, ctx, err, options), action);
  }
  return settleOutcome(resultOutcome(method, action, ctx, result, options), action);
}

/** The page's timeout rule on the wire: a timeout of a `commit` or `execute` is never retryable, whoever reports it. */
function settleOutcome(outcome: DispatchOutcome, action: Action): DispatchOutcome {
  if (outcome.ok || !timeoutNeverRetryable(action.transaction?.mode) || !isTimeoutFailure(outcome.error)) return outcome;
  if (!outcome.error.retryable && outcome.failure?.retryable !== true) return outcome;
  return {
    ...outcome,
    error: { ...outcome.error, retryable: false },
    ...(outcome.failure !== undefined ? { failure: withFailureFields(outcome.failure, { retryable: false }) } : {}),
  };
}

/** Effect methods: their failures can follow a provider effect of the same attempt. */
function isEffectMethod(method: DispatchMethod): boolean {
  return method === 'invoke_typed' || method === 'commit_typed' || method === 'compensate_typed';
}

async function dispatchReconcile(connector: FrozenConnector, action: Action, ctx: ActionExecutionContext, options: DispatchOptions): Promise<DispatchOutcome> {
  const method = 'reconcile_typed';
  const tx = ctx.transaction;
  const actionTx = action.transaction;
  if (
    tx === undefined ||
    actionTx?.mode !== 'reconcile' ||
    tx.mode !== 'reconcile' ||
    (actionTx.transaction_id !== undefined && actionTx.transaction_id !== tx.transaction_id)
  ) {
    return failedOutcome(
      method,
      new ConnectorFailure({ code: 'connector.reconcile_requires_transaction', operation: 'reconciliation', source: DISPATCH_SOURCE }),
      options,
    );
  }
  if (tx.provider_operation_id === undefined) {
    // Without an operation ID the connector may look the original request up by its idempotency key, when it says it can.
    const byKey = reconcileLookupOf(connector, action.capability_id).includes('idempotency_key');
    if (tx.original_request === undefined || !byKey) {
      return failedOutcome(
        method,
        new ConnectorFailure({
          code: 'connector.reconcile_requires_provider_operation',
          operation: 'reconciliation',
          source: DISPATCH_SOURCE,
          redacted_details: { transaction_id: tx.transaction_id, idempotency_key_lookup: !byKey ? 'not_declared' : 'no_original_request' },
        }),
        options,
      );
    }
  }
  let raw: unknown;
  try {
    raw = await connector.reconcile_typed(action, ctx);
  } catch (err) {
    return thrownOutcome(connector, method, action, ctx, err, options);
  }
  const parsed = ReconciliationResultSchema.safeParse(raw);
  const known: ProviderOperationRef | undefined = tx.provider_operation;
  if (parsed.success && parsed.data.provider_operation !== undefined && !sameAsKnown(parsed.data.provider_operation, tx.provider_operation_id, known)) {
    // The operation being reconciled is already known: a connector that reports another one is wrong, not a new fact.
    return failedOutcome(
      method,
      new ConnectorFailure({
        code: 'connector.output_invalid',
        message: 'reconcile_typed reported a provider operation other than the one being reconciled',
        operation: 'reconciliation',
        source: DISPATCH_SOURCE,
        ...(known ? { provider_operation: known } : {}),
        redacted_details: { reason: 'provider_operation_mismatch' },
      }),
      options,
    );
  }
  const provider_operation: ProviderOperationRef | undefined = known ?? (parsed.success ? parsed.data.provider_operation : undefined);
  const found = parsed.success ? parsed.data.provider_operation : undefined;
  if (!parsed.success) {
    return failedOutcome(
      method,
      new ConnectorFailure({
        code: 'connector.output_invalid',
        message: 'reconcile_typed returned an invalid ReconciliationResult',
        operation: 'reconciliation',
        source: DISPATCH_SOURCE,
        ...(provider_operation ? { provider_operation } : {}),
        redacted_details: { paths: parsed.error.issues.map((i) => joinIssuePath(i.path, '/')) },
      }),
      options,
    );
  }
  const r = parsed.data;
  if (!r.terminal) {
    const reconciliation: ReconciliationRecord = {
      terminal: false,
      ...(r.cursor !== undefined ? { cursor: r.cursor } : {}),
      ...(r.evidence !== undefined ? { evidence: r.evidence } : {}),
      ...(found !== undefined ? { provider_operation: found } : {}),
    };
    return failedOutcome(
      method,
      new ConnectorFailure({
        code: 'transaction.reconciliation_pending',
        category: 'temporary',
        retryable: true,
        retry_after_ms: 5_000,
        operation: 'reconciliation',
        source: connectorSourceOf(connector),
        ...(provider_operation ? { provider_operation } : {}),
        redacted_details: {
          ...(r.cursor !== undefined ? { reconciliation_cursor: r.cursor } : {}),
          ...(r.evidence !== undefined ? { evidence: r.evidence } : {}),
          ...(found !== undefined ? { provider_operation: { ...found } } : {}),
        },
      }),
      options,
      { reconciliation },
    );
  }
  const reconciliation: ReconciliationRecord = {
    terminal: true,
    original_commit_completed: r.original_commit_completed,
    ...(r.cursor !== undefined ? { cursor: r.cursor } : {}),
    ...(r.evidence !== undefined ? { evidence: r.evidence } : {}),
    ...(found !== undefined ? { provider_operation: found } : {}),
  };
  const result = {
    action_id: action.id,
    status: 'completed' as const,
    ...(r.output !== undefined ? { output: r.output } : {}),
    metadata: { reconciliation: { ...reconciliation } as JsonObject },
  };
  const checked = ActionResultSchema.safeParse(result);
  if (!checked.success) {
    return failedOutcome(
      method,
      new ConnectorFailure({
        code: 'connector.output_invalid',
        operation: 'reconciliation',
        source: DISPATCH_SOURCE,
        redacted_details: { paths: checked.error.issues.map((i) => joinIssuePath(i.path, '/')) },
      }),
      options,
      { reconciliation },
    );
  }
  return { ok: true, method, operation: 'reconciliation', result: checked.data, reconciliation };
}

/** A reported operation is acceptable when no operation was known, or when it is the known one. */
function sameAsKnown(reported: ProviderOperationRef, known_id: string | undefined, known: ProviderOperationRef | undefined): boolean {
  if (known_id === undefined) return true;
  if (reported.operation_id !== known_id) return false;
  return known === undefined || known.provider === reported.provider;
}

function resultOutcome(method: DispatchMethod, action: Action, ctx: ActionExecutionContext, result: unknown, options: DispatchOptions): DispatchOutcome {
  const operation = TYPED_METHOD_OPERATION[method];
  const evidence = contextAttemptEvidence(ctx);
  const parsed = ActionResultSchema.safeParse(result);
  if (!parsed.success || parsed.data.action_id !== action.id) {
    const invalid = markSdkFailure(
      new ConnectorFailure({
        code: 'connector.output_invalid',
        message: 'the connector returned an invalid ActionResult',
        operation,
        source: DISPATCH_SOURCE,
        // The connector ran: an external effect may have happened.
        uncertain_outcome: SIDE_EFFECTING_OPERATIONS.has(operation),
        redacted_details: parsed.success ? { reason: 'action_id_mismatch' } : { paths: parsed.error.issues.map((i) => joinIssuePath(i.path, '/')) },
      }),
    );
    return failedOutcome(method, isEffectMethod(method) ? escalateAfterEffect(invalid, evidence, false) : invalid, options);
  }
  const r = parsed.data;
  if (r.status === 'failed' && r.error !== undefined) {
    // A failed result is the connector's own classification: only a published effect makes it uncertain.
    const error = isEffectMethod(method) ? escalateProtocolErrorAfterEffect(r.error, evidence, true, options) : r.error;
    return { ok: false, method, operation, error: clampProtocolErrorRetry(error, options), result: r };
  }
  return { ok: true, method, operation, result: r };
}

function thrownOutcome(
  connector: FrozenConnector,
  method: DispatchMethod,
  action: Action,
  ctx: ActionExecutionContext,
  err: unknown,
  options: DispatchOptions,
): DispatchOutcome {
  const operation = TYPED_METHOD_OPERATION[method];
  const evidence = contextAttemptEvidence(ctx);
  const effect = isEffectMethod(method);
  if (isConnectorFailure(err)) return failedOutcome(method, effect ? escalateAfterEffect(err, evidence, !isSdkFailure(err)) : err, options);
  let mapped: ProtocolError | undefined;
  try {
    const candidate = ProtocolErrorSchema.safeParse(connector.map_error(err, operation, action, ctx));
    if (candidate.success) mapped = candidate.data;
  } catch {
    mapped = undefined;
  }
  // A map_error that throws or returns something that is not a ProtocolError falls back to the SDK normalization.
  if (mapped === undefined) {
    const failure = toConnectorFailure(err, operation, connectorSourceOf(connector));
    return failedOutcome(method, effect ? escalateAfterEffect(failure, evidence, false) : failure, options);
  }
  // The connector's mapping of a provider error is its classification; an SDK or runtime error (an AipError) is not.
  const error = effect ? escalateProtocolErrorAfterEffect(mapped, evidence, !isAipError(err), options) : mapped;
  return { ok: false, method, operation, error: clampProtocolErrorRetry(error, options) };
}

function connectorSourceOf(connector: FrozenConnector): string {
  return `connector:${connector.id}`;
}
