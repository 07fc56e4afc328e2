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
  'envelope.invalid': entry('validation', 400, false, 'The action envelope failed core validation'),
  'envelope.commit_requires_plan_id': entry('validation', 400, false, 'Every commit needs a plan_id'),

  // --- transaction store (compare-and-set) ---------------------------------
  'transaction.not_found': entry('not_found', 404, false, 'No transaction matches the selector'),
  'transaction.already_exists': entry('conflict', 409, false, 'A transaction with this ID already exists'),
  'transaction.state_conflict': entry('conflict', 409, false, 'The transaction is not in an allowed state or revision for this change'),
  'transaction.invalid_transition': entry('conflict', 409, false, 'The transition is not in the transaction state machine'),
  'transaction.provider_operation_conflict': entry('conflict', 409, false, 'A different provider operation is already checkpointed'),
  'transaction.invalid_provider_operation': entry('validation', 400, false, 'Provider and operation ID must be non-empty'),
  'transaction.invalid_selector': entry('validation', 400, false, 'Select by exactly one of transaction_id, plan_id or action_id'),
  'transaction.reconciliation_pending': entry('temporary', 503, true, 'Reconciliation has not reached a terminal answer yet', 5_000),

  // --- connectors -----------------------------------------------------------
  'connector.operation_unsupported': entry('permanent', 501, false, 'The connector does not support this operation'),

  // --- service level --------------------------------------------------------
  'sla.timeout_exceeded': entry('timeout', 504, false, 'The action exceeded its effective timeout'),

  // --- internal ---------------------------------------------------------------
  'internal.unexpected': entry('internal', 500, false, 'An unexpected internal error occurred'),
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, code);
}
