import { createHash } from 'node:crypto';
import { canonicalJson } from './jcs.js';
import type { JsonObject } from './json.js';
import type { Receipt } from './transaction.js';
import { receiptHashInput } from './receipt-chain.js';

export { canonicalJson } from './jcs.js';

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

/**
 * Hash of a receipt: sha256 over the canonical JSON of its hashed fields
 * (receiptHashInput in ./receipt-chain.ts: every field but `hash` for a
 * version 2 receipt; the seven original fields for a legacy one).
 */
export function receiptHash(receipt: Omit<Receipt, 'hash'>): string {
  return hashJson(receiptHashInput(receipt));
}
