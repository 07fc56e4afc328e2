import * as z from '../common/zod.js';

/** Maximum length of any protocol ID. */
export const ID_MAX_LENGTH = 256;
/** Prefix of the default plan ID, `plan:<transaction_id>`. */
export const PLAN_ID_PREFIX = 'plan:';
/**
 * Transaction IDs are shorter than other IDs so that the default plan ID
 * `plan:<transaction_id>` always fits the ID pattern.
 */
export const TRANSACTION_ID_MAX_LENGTH = ID_MAX_LENGTH - PLAN_ID_PREFIX.length;

/**
 * Characters allowed in IDs: ASCII letters, digits and `. _ : @ / -`.
 * This excludes whitespace, control characters and `#` (used as a key
 * separator in the DynamoDB single-table design).
 */
export const ID_PATTERN = /^[A-Za-z0-9._:@/-]+$/;

/** The ID pattern used for every protocol ID. */
export const IdSchema = z
  .string()
  .check(z.minLength(1), z.maxLength(ID_MAX_LENGTH), z.regex(ID_PATTERN, { message: 'invalid ID: allowed are letters, digits and . _ : @ / -' }));

/** A transaction ID: an ID short enough for `plan:<transaction_id>`. */
export const TransactionIdSchema = IdSchema.check(z.maxLength(TRANSACTION_ID_MAX_LENGTH));

/** The default plan ID for a transaction. */
export function defaultPlanId(transactionId: string): string {
  return `${PLAN_ID_PREFIX}${transactionId}`;
}

/** Idempotency keys: 1..256 printable ASCII characters, no whitespace. */
export const IdempotencyKeySchema = z
  .string()
  .check(z.minLength(1), z.maxLength(256), z.regex(/^[\x21-\x7e]+$/, { message: 'invalid idempotency key: printable ASCII without whitespace' }));

/** RFC 3339 timestamp with `Z` or a numeric offset. */
export const Rfc3339Schema = z.iso.datetime({ offset: true });

/** Lower-case hex SHA-256 digest. */
export const Sha256HexSchema = z.string().check(z.regex(/^[0-9a-f]{64}$/, { message: 'expected a lower-case hex SHA-256 digest' }));

/** Short human-readable text (messages, reasons, descriptions): no control characters except tab/newline. */
export const TextSchema = (max: number) =>
  z.string().check(z.maxLength(max), z.regex(/^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$/, { message: 'contains control characters' }));

/** OAuth-style scope strings. */
export const ScopeSchema = z.string().check(z.minLength(1), z.maxLength(200), z.regex(/^[\x21-\x7e]+$/, { message: 'invalid scope' }));

/** RFC 6901 JSON Pointer: empty (whole document) or `/`-separated tokens with only `~0`/`~1` escapes. */
export const JsonPointerSchema = z.string().check(z.maxLength(1024), z.regex(/^(\/([^~/]|~[01])*)*$/, { message: 'invalid JSON pointer (RFC 6901)' }));

/** Label keys and values on action metadata. */
export const LabelsSchema = z.deferred(() =>
  z
    .record(z.string().check(z.minLength(1), z.maxLength(63), z.regex(/^[a-z0-9]([a-z0-9._/-]*[a-z0-9])?$/, { message: 'invalid label key' })), TextSchema(256))
    .check(z.refine((r) => Object.keys(r).length <= 64, { message: 'at most 64 labels' })),
);
