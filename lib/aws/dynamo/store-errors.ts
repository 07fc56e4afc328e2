/**
 * How the single-table adapters turn DynamoDB SDK failures into AIP errors.
 *
 * - A failure that is not a condition failure goes through `mapStoreError`:
 *   throttling, server and network errors are `transaction.store_unavailable`,
 *   an item over the size limit is `transaction.record_too_large`, anything
 *   else is `internal.unexpected`.
 * - A cancelled TransactWriteItems is classified by `classifyTransactFailure`
 *   from its CancellationReasons: the first failed condition is handed to the
 *   caller's classifier for that item (with the ALL_OLD image DynamoDB
 *   returned), and a `TransactionConflict` is a lost race.
 */
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { fromAttributeMap } from './attribute-values.js';

type Item = Record<string, unknown>;

const UNAVAILABLE_ERRORS: ReadonlySet<string> = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'LimitExceededException',
  'TimeoutError',
]);
const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);

interface CancellationReason {
  Code?: string;
  Item?: unknown;
}

/** The `name` of an SDK error ('' when there is none). */
export function errorName(err: unknown): string {
  return err !== null && typeof err === 'object' && 'name' in err ? String((err as { name: unknown }).name) : '';
}

function cancellationReasons(err: unknown): CancellationReason[] {
  const reasons = (err as { CancellationReasons?: unknown }).CancellationReasons;
  return Array.isArray(reasons) ? (reasons as CancellationReason[]) : [];
}

/** Maps an SDK error that is not a condition failure. */
export function mapStoreError(err: unknown): AipError {
  if (err instanceof AipError) return err;
  const name = errorName(err);
  const code = (err as { code?: unknown } | null)?.code;
  const message = String((err as { message?: unknown } | null)?.message ?? '');
  if (name === 'ValidationException' && /size/i.test(message)) {
    return new AipError('transaction.record_too_large', undefined, { details: { reason: name } });
  }
  if (name === 'TransactionCanceledException' && cancellationReasons(err).some((r) => r.Code === 'ValidationError')) {
    return new AipError('transaction.record_too_large', undefined, { details: { reason: 'ValidationError' } });
  }
  if (UNAVAILABLE_ERRORS.has(name) || (typeof code === 'string' && NETWORK_ERROR_CODES.has(code))) {
    return new AipError('transaction.store_unavailable', undefined, { details: { reason: name || String(code) }, cause: err });
  }
  return new AipError('internal.unexpected', 'The transaction store failed unexpectedly', { details: { reason: name || 'unknown' }, cause: err });
}

/**
 * Classifies a failed TransactWriteItems. `handlers[i]` classifies the ALL_OLD
 * image of item i when its condition failed; `onRace` is the error for a
 * TransactionConflict (a concurrent transaction on the same item).
 */
export function classifyTransactFailure(
  err: unknown,
  handlers: { readonly [index: number]: (old: Item | undefined) => AipError },
  onRace: () => AipError,
): AipError {
  const name = errorName(err);
  if (name === 'TransactionConflictException') return onRace();
  if (name !== 'TransactionCanceledException') return mapStoreError(err);
  const reasons = cancellationReasons(err);
  for (let i = 0; i < reasons.length; i++) {
    const reason = reasons[i];
    if (reason?.Code === 'ConditionalCheckFailed') {
      const handler = handlers[i];
      const old = fromAttributeMap(reason.Item);
      return handler ? handler(old) : onRace();
    }
  }
  if (reasons.some((r) => r.Code === 'TransactionConflict')) return onRace();
  return mapStoreError(err);
}
