/**
 * The one error catalogue. Every code the runtime can return is listed here
 * with its category, whether it is retryable, and its HTTP status. Nothing
 * invents a code inline: `AipError` only accepts a key of this object.
 *
 * Codes are stable and namespaced `<area>.<reason>`. Codes quoted by the AIP
 * pages (`connector.operation_unsupported`, `sla.timeout_exceeded`,
 * `transaction.reconciliation_pending`) are spelled exactly as the pages do.
 *
 * docs/error-catalogue.md is generated from this file (see its test).
 */
export const ERROR_CATEGORIES = [
  'validation',
  'authentication',
  'authorization',
  'not_found',
  'conflict',
  'approval',
  'rate_limited',
  'timeout',
  'temporary',
  'permanent',
  'internal',
] as const;
export type ErrorCategory = (typeof ERROR_CATEGORIES)[number];

export interface CatalogueEntry {
  readonly category: ErrorCategory;
  readonly retryable: boolean;
  readonly http: number;
  readonly title: string;
  /** Default retry delay, where the code implies one. */
  readonly retryAfterMs?: number;
}

function entry(category: ErrorCategory, http: number, retryable: boolean, title: string, retryAfterMs?: number): CatalogueEntry {
  return retryAfterMs === undefined ? { category, http, retryable, title } : { category, http, retryable, title, retryAfterMs };
}

export const ERROR_CATALOGUE = {
  // --- request and envelope validation -------------------------------------
  'request.malformed_json': entry('validation', 400, false, 'The request body is not valid JSON'),
  'request.body_too_large': entry('validation', 413, false, 'The request body exceeds the size limit'),
  'request.unsupported_media_type': entry('validation', 415, false, 'The request body must be application/json'),
  'request.invalid': entry('validation', 400, false, 'The request does not match the expected shape'),
  'request.method_not_allowed': entry('validation', 405, false, 'The resource does not accept this method'),
  // the MCP endpoint (functions/mcp, docs/mcp.md)
  'mcp.not_acceptable': entry('validation', 406, false, 'An MCP request must accept application/json and text/event-stream'),
  'mcp.request_rejected': entry('validation', 400, false, 'The MCP transport rejected the JSON-RPC message'),
  'mcp.unknown_tool': entry('not_found', 404, false, 'No tool of this name is offered to the caller'),
  'envelope.invalid': entry('validation', 400, false, 'The action envelope failed core validation'),
  'envelope.commit_requires_plan_id': entry('validation', 400, false, 'Every commit needs a plan_id'),
  // protocol model (lib/protocol): core envelope validator
  'envelope.compensate_requires_compensation_for': entry('validation', 400, false, 'Every compensate names the action it compensates in compensation_for'),
  'envelope.transaction_context_required': entry('validation', 400, false, 'A TransactionRequest action needs a transaction context with a mode'),
  'envelope.transaction_id_mismatch': entry('validation', 400, false, 'The wrapper transaction_id differs from the action transaction_id'),
  'envelope.forbidden_key': entry('validation', 400, false, 'The envelope contains a forbidden key (__proto__, constructor or prototype)'),
  'envelope.too_deep': entry('validation', 400, false, 'The envelope is nested deeper than the limit'),
  'envelope.too_large': entry('validation', 413, false, 'The envelope exceeds the size limit'),

  // --- transaction store (compare-and-set) ---------------------------------
  'transaction.not_found': entry('not_found', 404, false, 'No transaction matches the selector'),
  'transaction.already_exists': entry('conflict', 409, false, 'A transaction with this ID already exists'),
  'transaction.state_conflict': entry('conflict', 409, false, 'The transaction is not in an allowed state or revision for this change'),
  'transaction.invalid_transition': entry('conflict', 409, false, 'The transition is not in the transaction state machine'),
  'transaction.provider_operation_conflict': entry('conflict', 409, false, 'A different provider operation is already checkpointed'),
  'transaction.invalid_provider_operation': entry('validation', 400, false, 'Provider and operation ID must be non-empty'),
  'transaction.invalid_selector': entry('validation', 400, false, 'Select by exactly one of transaction_id, plan_id or action_id'),
  'transaction.reconciliation_pending': entry('temporary', 503, true, 'Reconciliation has not reached a terminal answer yet', 5_000),
  'transaction.lease_held': entry('conflict', 409, true, 'Another attempt holds an unexpired lease on the transaction'),
  'transaction.invalid_record': entry('validation', 400, false, 'The transaction write is malformed (IDs, revision, lease or fields)'),
  'transaction.invalid_receipt': entry('validation', 400, false, 'The receipt does not extend the transaction receipt chain'),
  'transaction.invalid_listing': entry('validation', 400, false, 'List by a non-terminal status with a valid time bound, limit and cursor'),
  'transaction.record_too_large': entry('validation', 413, false, 'The transaction record exceeds the store item size limit'),
  'transaction.store_unavailable': entry('temporary', 503, true, 'The transaction store is temporarily unavailable', 1_000),

  // --- queue and scheduler (lib/ports/queue.ts, lib/ports/scheduler.ts) ---------
  'queue.message_invalid': entry('validation', 400, false, 'The queue message or its send options do not match the message schema'),
  'queue.send_failed': entry('temporary', 503, true, 'The message could not be enqueued', 1_000),
  'scheduler.request_failed': entry('temporary', 503, true, 'The reconciliation schedule could not be created or deleted', 1_000),

  // --- connectors -----------------------------------------------------------
  'connector.operation_unsupported': entry('permanent', 501, false, 'The connector does not support this operation'),
  // connector SDK (lib/connectors)
  'connector.capability_mismatch': entry('validation', 400, false, 'The action names a capability other than the one bound to this connector handler'),
  'connector.reconcile_requires_transaction': entry('validation', 400, false, 'A reconcile action needs a transaction context with a transaction ID'),
  'connector.reconcile_requires_provider_operation': entry('conflict', 409, false, 'Reconciliation needs a durable provider operation ID'),
  'connector.transaction_checkpoint_unavailable': entry('internal', 500, false, 'The transaction checkpoint is unavailable outside a transactional action'),
  'connector.context_not_serializable': entry('internal', 500, false, 'The action execution context is attempt-scoped and cannot be serialized'),
  'connector.stream_closed': entry('conflict', 409, false, 'The attempt has ended or its stream failed; no more chunks are accepted'),
  'connector.attempt_ended': entry(
    'conflict',
    409,
    false,
    'The attempt this execution context belongs to has ended; the context can no longer resolve credentials or publish checkpoints',
  ),
  'connector.stream_chunk_invalid': entry('internal', 500, false, 'A stream chunk is not plain JSON'),
  'connector.stream_sink_failed': entry('internal', 500, false, 'The runtime could not persist a stream chunk'),
  'connector.credentials_unavailable': entry('permanent', 502, false, 'Credential material for the verified tenant and account is empty or cannot be resolved'),
  'connector.credentials_resolution_failed': entry('temporary', 503, true, 'The credential provider failed transiently', 1_000),
  'connector.manifest_invalid': entry('internal', 500, false, 'The connector manifest does not match the manifest schema'),
  'connector.admission_rejected': entry('validation', 422, false, 'The manifest advertises behaviour its implementation support does not declare'),
  'connector.definition_invalid': entry('internal', 500, false, 'The connector definition is inconsistent'),
  'connector.input_invalid': entry('validation', 400, false, 'The action input does not match the capability input schema'),
  'connector.output_invalid': entry('internal', 502, false, 'The connector returned output that does not match the capability output schema'),
  'connector.failure_invalid': entry('internal', 500, false, 'A connector failure has invalid or non-redacted fields'),
  'connector.unexpected_error': entry('internal', 502, false, 'The connector failed with an unclassified error'),
  // remote connector placement (lib/connectors/remote)
  'connector.remote_signature_invalid': entry(
    'authentication',
    401,
    false,
    'The remote connector message is unsigned, malformed, or not signed by the expected key',
  ),
  'connector.remote_replay': entry('authentication', 401, false, 'The remote connector message reuses a nonce already seen within the freshness window'),
  'connector.remote_stale': entry('authentication', 401, false, 'The remote connector message was issued outside the freshness window'),
  'connector.remote_deadline_exceeded': entry('timeout', 504, false, 'The remote connector request arrived after its deadline'),
  'connector.remote_route_mismatch': entry('conflict', 409, false, 'The remote connector message does not match the pinned route'),
  'connector.remote_unavailable': entry('temporary', 503, true, 'The remote connector host could not be reached; the request was not sent', 1_000),
  'connector.remote_answer_lost': entry('temporary', 502, false, 'The remote connector host did not answer after the request was sent'),
  'connector.remote_answer_invalid': entry('internal', 502, false, 'The remote connector host answered with a message the runtime cannot accept'),
  'connector.remote_capacity_exhausted': entry(
    'rate_limited',
    429,
    true,
    'The remote connector host is already running as many attempts of this connector as its limit allows; the connector was not called',
    1_000,
  ),
  'credentials.secret_not_serializable': entry('internal', 500, false, 'ConnectorSecret cannot be serialized'),
  'credentials.secret_disposed': entry('internal', 500, false, 'The ConnectorSecret was disposed and its bytes zeroed'),
  'credentials.handle_invalid': entry('validation', 400, false, 'The credential handle ID is not a valid opaque ID'),
  // declarative HTTP connector and reference connectors (lib/connectors/http, lib/connectors/reference)
  'connector.provider_unreachable': entry('temporary', 503, true, 'The provider could not be reached; the request was not sent', 1_000),
  'connector.provider_connection_lost': entry(
    'temporary',
    502,
    false,
    'The connection to the provider broke after the request may have been sent; the outcome is uncertain',
  ),
  'connector.provider_response_invalid': entry('internal', 502, false, 'The provider response could not be read or mapped'),
  'connector.provider_rejected': entry('permanent', 502, false, 'The provider rejected the request'),
  'connector.provider_unavailable': entry('temporary', 503, true, 'The provider failed with a server error', 1_000),
  'connector.provider_rate_limited': entry('rate_limited', 429, true, 'The provider throttled the request', 1_000),
  'connector.provider_auth_failed': entry('permanent', 502, false, 'The provider rejected the connector credential'),
  'connector.provider_operation_failed': entry('permanent', 502, false, 'The provider reports the operation as failed or canceled'),
  'connector.provider_operation_unknown': entry('conflict', 409, false, 'No provider operation reference is known for this action'),
  'connector.attempt_cancelled': entry('conflict', 409, false, 'The attempt was cancelled while the provider request was pending'),

  // --- runtime stores (lib/ports/{action,idempotency,approval,route,stream}-store.ts) ---
  'action.already_exists': entry('conflict', 409, false, 'An action with this ID already exists in the tenant'),
  'action.not_found': entry('not_found', 404, false, 'No action with this ID exists in the tenant'),
  'action.state_conflict': entry('conflict', 409, false, 'The action is not in an allowed state or revision for this change'),
  'action.lease_held': entry('conflict', 409, true, 'Another attempt holds an unexpired lease on the action', 1_000),
  'action.fence_stale': entry('conflict', 409, false, 'The attempt holds an older fence: a newer attempt owns the action'),
  'action.invalid_record': entry('validation', 400, false, 'The action write is malformed (IDs, statuses, lease or fields)'),
  'idempotency.fingerprint_mismatch': entry('conflict', 409, false, 'The idempotency key was used for a different request (fingerprint mismatch)'),
  'idempotency.in_flight': entry('conflict', 409, true, 'A request with this idempotency key is still in flight', 1_000),
  'idempotency.outcome_unknown': entry(
    'conflict',
    409,
    false,
    'The earlier request with this idempotency key has an unknown outcome; reconciliation is required',
  ),
  'idempotency.not_owner': entry('conflict', 409, false, 'The idempotency reservation is owned by another action or a newer attempt fence'),
  'idempotency.key_held': entry('conflict', 409, false, 'The idempotency key is held by an earlier request whose stored result answers this one'),
  'idempotency.invalid_request': entry('validation', 400, false, 'The idempotency reservation request is malformed'),
  'approval.already_exists': entry('conflict', 409, false, 'An approval with this ID already exists in the tenant'),
  'approval.not_found': entry('not_found', 404, false, 'No approval with this ID exists in the tenant'),
  'approval.already_decided': entry('conflict', 409, false, 'The approval is no longer pending: a decision was already recorded or it expired'),
  'approval.expired': entry('conflict', 409, false, 'The approval expired before the decision'),
  'approval.not_expired': entry('conflict', 409, false, 'The approval has not reached its expiry yet'),
  'approval.state_conflict': entry('conflict', 409, false, 'The approval changed since it was read (revision mismatch)'),
  'approval.already_approved_by_caller': entry(
    'conflict',
    409,
    false,
    'The caller already approved this approval; the next approval must come from a different approver',
  ),
  'approval.self_approval_forbidden': entry('authorization', 403, false, 'The approval policy does not allow the requester to decide their own approval'),
  'approval.invalid_record': entry('validation', 400, false, 'The approval write is malformed (IDs, policy, decision or expiry)'),
  'approval.invalid_listing': entry('validation', 400, false, 'List pending approvals with a valid tenant, time bound, limit and cursor'),
  'route.already_assigned': entry('conflict', 409, false, 'The action already has a route assignment; it is never overwritten'),
  'route.invalid_assignment': entry('validation', 400, false, 'The route assignment is malformed'),
  'stream.sequence_conflict': entry('conflict', 409, false, 'A stream chunk with this sequence number already exists for the action'),
  'stream.invalid_chunk': entry('validation', 400, false, 'The stream chunk or listing request is malformed'),
  // capability registry (lib/runtime/registry.ts)
  'capability.not_found': entry('not_found', 404, false, 'No admitted capability has this ID'),

  // --- http edge and auth (functions/http, functions/authorizer.ts, lib/auth; see docs/http-api.md) ---
  'auth.unauthenticated': entry('authentication', 401, false, 'A valid bearer token is required'),
  'auth.forbidden': entry('authorization', 403, false, 'The token was verified but grants no access to this API'),
  'auth.insufficient_scope': entry('authorization', 403, false, 'The token lacks a scope this route requires'),
  'auth.tenant_required': entry('validation', 400, false, 'The caller belongs to several tenants: name one in the X-AIP-Tenant header'),
  'auth.tenant_forbidden': entry('authorization', 403, false, 'The caller is not a member of the selected tenant'),
  'auth.authorizer_unavailable': entry('temporary', 503, true, 'The token could not be verified right now (key source unavailable)', 1_000),
  'request.route_not_found': entry('not_found', 404, false, 'No route matches the method and path'),
  'request.throttled': entry('rate_limited', 429, true, 'Too many requests', 1_000),
  'request.timeout': entry('timeout', 504, false, 'The request did not complete within the gateway time limit'),
  // API Gateway's own answers without a more specific code (lib/http/gateway-responses.ts)
  'auth.api_key_invalid': entry('authorization', 403, false, 'The API key is missing or not valid for this API'),
  'request.origin_forbidden': entry('authorization', 403, false, 'The local development sign-in answers loopback hosts and origins only'),
  'request.blocked': entry('authorization', 403, false, 'The request was blocked by the web application firewall'),
  'request.rejected': entry('validation', 400, false, 'The gateway rejected the request'),

  // --- runtime (lib/runtime: admission pipeline, modes, attempts, approvals, views) ---
  // step 2: TransactionRequest checks
  'runtime.requester_mismatch': entry('authorization', 403, false, 'requested_by does not name the authenticated runtime principal'),
  // step 3: capability lookup and input schema
  'runtime.input_invalid': entry('validation', 400, false, 'The action input does not match the capability input schema'),
  'runtime.mode_unsupported': entry('validation', 422, false, 'The capability contract does not declare this transaction mode'),
  // step 4: authorization
  'runtime.caller_expired': entry('authentication', 401, false, 'The caller identity has expired'),
  'runtime.tenant_required': entry('validation', 400, false, 'The tenant cannot be determined: name one of the caller tenants'),
  'runtime.tenant_forbidden': entry('authorization', 403, false, 'The caller is not a member of the tenant the action names'),
  'runtime.scope_missing': entry('authorization', 403, false, 'The caller lacks a scope the capability policy requires'),
  'runtime.identity_mismatch': entry('authorization', 403, false, 'The action identity names a user other than the authenticated principal'),
  'runtime.account_forbidden': entry('authorization', 403, false, 'The caller token does not hold the external account the action names'),
  // the authority rule (lib/runtime/authority.ts)
  'runtime.operator_required': entry('authorization', 403, false, 'This operation needs the operator scope'),
  'runtime.compensation_forbidden': entry('authorization', 403, false, 'The caller may not compensate another principal action'),
  // step 6: approval gate
  'runtime.approval_denied': entry('approval', 403, false, 'The approval was denied'),
  'runtime.approval_expired': entry('approval', 410, false, 'The pending approval expired before a decision'),
  'runtime.approval_withdrawn': entry('approval', 409, false, 'The approval was withdrawn: its action can no longer succeed (details name the reason)'),
  'runtime.approver_forbidden': entry('authorization', 403, false, 'The caller is not an authorized approver for this policy'),
  'runtime.self_approval_forbidden': entry('authorization', 403, false, 'The requester cannot approve their own action under this policy'),
  // step 7: idempotency
  'runtime.idempotency_key_required': entry('validation', 400, false, 'The capability requires an idempotency_key'),
  // step 8: transaction admission
  'runtime.action_conflict': entry('conflict', 409, false, 'The action ID is already used by a different action'),
  'runtime.action_in_flight': entry('conflict', 409, true, 'The action was already accepted and is still in flight', 1_000),
  'runtime.transaction_id_required': entry('validation', 400, false, 'This transaction mode needs a transaction ID'),
  'runtime.execution_contract_mismatch': entry('conflict', 409, false, 'The transaction ID exists with a different execution contract'),
  'runtime.attempt_in_flight': entry('conflict', 409, true, 'An attempt on this transaction is in flight', 1_000),
  'runtime.reconciliation_required': entry('conflict', 409, false, 'The transaction outcome is unknown: reconciliation is required, no blind retry'),
  'runtime.plan_transaction_support_missing': entry('validation', 422, false, 'Downstream plan validation needs a handler that advertises transaction support'),
  'runtime.plan_required': entry('validation', 400, false, 'This commit needs a plan: direct commit is not available here'),
  'runtime.plan_not_found': entry('not_found', 404, false, 'The referenced plan does not exist'),
  'runtime.plan_not_planned': entry('conflict', 409, false, 'The plan transaction record is no longer planned'),
  'runtime.plan_capability_mismatch': entry('conflict', 409, false, 'The commit capability differs from the planned capability'),
  'runtime.plan_principal_mismatch': entry('conflict', 409, false, 'The committing principal differs from the planning principal'),
  'runtime.plan_expired': entry('conflict', 409, false, 'The plan has expired'),
  'runtime.plan_transaction_mismatch': entry('conflict', 409, false, 'The supplied transaction ID differs from the planned transaction ID'),
  'runtime.plan_input_mismatch': entry('conflict', 409, false, 'The hash of the capability ID and input differs from the plan hash'),
  'runtime.plan_identity_mismatch': entry('conflict', 409, false, 'The identity context differs from the planned tenant or external account'),
  'runtime.plan_claim_conflict': entry('conflict', 409, false, 'Another commit claimed the plan first'),
  'runtime.compensation_not_supported': entry('validation', 422, false, 'The capability compensation mode is neither supported nor best_effort'),
  'runtime.compensation_target_not_found': entry('not_found', 404, false, 'The action named by compensation_for does not exist'),
  'runtime.compensation_target_ineligible': entry(
    'conflict',
    409,
    false,
    'The compensation target neither completed nor recorded committed side effects requiring compensation',
  ),
  'runtime.compensation_window_expired': entry('conflict', 409, false, 'The compensation window has passed'),
  'runtime.compensation_window_unverifiable': entry(
    'validation',
    422,
    false,
    'The compensation window cannot be measured: no target record and no original_completed_at',
  ),
  'runtime.compensation_capability_unavailable': entry('validation', 422, false, 'The compensating capability named by the contract is not admitted'),
  'runtime.reconcile_not_outcome_unknown': entry('conflict', 409, false, 'Reconciliation needs a transaction in outcome_unknown'),
  // step 9: attempts and settlement
  'runtime.attempt_abandoned': entry('temporary', 503, false, 'An earlier attempt stopped without settling; its provider outcome is unknown'),
  'runtime.output_invalid': entry('internal', 502, false, 'The connector output does not match the capability output schema'),
  'runtime.connector_unavailable': entry('temporary', 503, true, 'No connector instance serves this capability right now', 1_000),
  'runtime.route_mismatch': entry('conflict', 409, false, 'The action route assignment pins another capability or tenant'),
  'runtime.reconciliation_exhausted': entry('conflict', 409, false, 'Reconciliation attempts are exhausted: a human must decide'),
  'runtime.cancelled': entry('conflict', 409, false, 'The action was cancelled before an attempt started'),
  'runtime.cancel_not_allowed': entry('conflict', 409, false, 'The action can no longer be cancelled'),
  // reads and operators
  'runtime.operator_forbidden': entry('authorization', 403, false, 'Operator views need the operator scope'),
  'runtime.resolve_not_escalated': entry('conflict', 409, false, 'Only a transaction escalated to a human (requires_human) can be resolved by an operator'),
  'operator.resolution_contradicts_provider': entry(
    'conflict',
    409,
    false,
    'The provider answered otherwise than the resolution says; resend it with provider_override and a reason to record it anyway',
  ),
  'runtime.invalid_query': entry('validation', 400, false, 'The query or selector is malformed'),
  'runtime.cursor_invalid': entry('validation', 400, false, 'The pagination cursor is not valid for this caller and query'),
  // configuration and test hooks
  'runtime.config_invalid': entry('internal', 500, false, 'The runtime configuration is invalid'),
  'runtime.crash_injected': entry('internal', 500, false, 'A test crash point fired (test mode only)'),

  // --- service level --------------------------------------------------------
  'sla.timeout_exceeded': entry('timeout', 504, false, 'The action exceeded its effective timeout'),

  // --- internal ---------------------------------------------------------------
  'internal.unexpected': entry('internal', 500, false, 'An unexpected internal error occurred'),
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, code);
}
