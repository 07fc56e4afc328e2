import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { AipError } from '../errors/aip-error.js';
import { inspectJson, type JsonObject } from './json.js';
import type { Receipt } from './transaction.js';

// `canonicalize` is CommonJS (`module.exports = fn`) with an ESM-style
// `export default` typing; under NodeNext the default import is typed as the
// module record. Accept both runtime shapes (Node ESM interop and bundlers).
type Serialize = (input: unknown) => string | undefined;
const canonicalizeAny = canonicalizeModule as unknown as Serialize | { default: Serialize };
const canonicalize: Serialize = typeof canonicalizeAny === 'function' ? canonicalizeAny : canonicalizeAny.default;

/**
 * RFC 8785 (JCS) canonical JSON. Accepts only plain JSON (objects with
 * `undefined` properties are allowed and those properties are dropped, as in
 * JSON.stringify; own keys such as `__proto__` or `constructor` are hashed
 * like any other key; -0 serializes as 0). Anything else is a programming error in the caller, since
 * values reaching this point have already been validated: it throws
 * AipError('internal.unexpected').
 */
export function canonicalJson(value: unknown): string {
  const problem = inspectJson(value, { maxDepth: 64, maxNodes: 1_000_000, maxSize: 64 * 1_048_576, maxStringLength: 16 * 1_048_576, rejectForbiddenKeys: false });
  if (problem !== undefined) {
    throw new AipError('internal.unexpected', 'value cannot be canonicalized as JSON', {
      details: { reason: problem.kind },
    });
  }
  const out = canonicalize(value);
  if (out === undefined) throw new AipError('internal.unexpected', 'value cannot be canonicalized as JSON');
  return out;
}

/** Lower-case hex SHA-256 of a string (UTF-8) or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** sha256Hex(canonicalJson(value)). */
export function hashJson(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * The plan input hash: covers the capability ID and the action input only,
 * never Action.transaction (nor identity, metadata or idempotency key).
 */
export function planInputHash(capability_id: string, input: JsonObject): string {
  return hashJson({ capability_id, input });
}

/** Hash of a receipt: sha256 over canonical JSON of every field except `hash`. */
export function receiptHash(receipt: Omit<Receipt, 'hash'>): string {
  const { seq, transaction_id, status, revision, at, prev_hash, event } = receipt;
  return hashJson({ seq, transaction_id, status, revision, at, prev_hash, event });
}
