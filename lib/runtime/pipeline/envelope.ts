/**
 * Pipeline steps 1 and 2: the core envelope validator, then the
 * TransactionRequest checks (requested_by is the runtime principal; the
 * wrapper transaction ID matches the action's or is copied in).
 */
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  transactionRequestAction,
  validateAction,
  validateTransactionRequest,
  type Action,
  type TransactionRequest,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import type { CallerIdentity } from '../identity.js';

export interface ParsedSubmission {
  /** The action as submitted (wrapper transaction ID copied in). */
  readonly action: Action;
  /** Present on the first-class TransactionRequest path. */
  readonly request?: TransactionRequest;
}

/** A body is a TransactionRequest when it wraps an `action`. */
export function isTransactionRequestBody(body: unknown): boolean {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && Object.hasOwn(body, 'action');
}

/** Step 1 (core validation) and step 2 (TransactionRequest checks). */
export function parseSubmission(caller: CallerIdentity, body: unknown): ParsedSubmission {
  if (!isTransactionRequestBody(body)) return { action: validateAction(body) };
  const request = validateTransactionRequest(body);
  // "checks that the requested_by ID matches the runtime principal ID"
  if (request.requested_by.id !== caller.principal.id) {
    throw new AipError('runtime.requester_mismatch', undefined, { details: { path: '/requested_by/id' } });
  }
  return { action: transactionRequestAction(request), request };
}
