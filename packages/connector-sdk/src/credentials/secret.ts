import { timingSafeEqual } from 'node:crypto';
import { inspect } from 'node:util';
import { AipError } from '../errors/aip-error.js';
import { ConnectorFailure } from '../failure.js';
import type { ConnectorOperation } from '../operations.js';

/** What every diagnostic rendering of a secret shows. */
export const REDACTED = '[REDACTED]';

/**
 * Zeroes a secret's bytes when the wrapper is garbage-collected without an
 * explicit dispose (the JavaScript stand-in for "zeroize on drop"). The held
 * value is the byte array, never the wrapper, so registration keeps nothing
 * else alive.
 */
const zeroOnDrop = new FinalizationRegistry<Uint8Array>((bytes) => bytes.fill(0));

/**
 * A value that structuredClone cannot copy: held in an own enumerable
 * property, it makes structuredClone(secret) throw a DataCloneError.
 */
const NOT_CLONEABLE: unique symbol = Symbol('ConnectorSecret is not serializable');

export interface SecretFailureContext {
  /** The operation reported if the material is empty (default `invocation`). */
  readonly operation?: ConnectorOperation;
  /** The component reported if the material is empty. */
  readonly source?: string;
}

/**
 * In-memory wrapper for secret material, available to connector code at the
 * provider edge.
 *
 * - The bytes live in a private Uint8Array; nothing enumerable refers to them.
 * - It cannot be serialized: JSON.stringify throws
 *   AipError('credentials.secret_not_serializable') and structuredClone throws
 *   a DataCloneError.
 * - It renders as `[REDACTED]` in toString, String(), template strings,
 *   util.inspect / console.log and util.format.
 * - equals() compares equal-length material in constant time
 *   (crypto.timingSafeEqual); different lengths are simply unequal.
 * - dispose() / `using` zeroes the bytes; any later use throws
 *   AipError('credentials.secret_disposed').
 * - Material is reachable only inside withBytes / withUtf8, while building
 *   the downstream request. Do not keep what they hand you.
 */
export class ConnectorSecret implements Disposable {
  #bytes: Uint8Array | undefined;
  /** Clone guard (see NOT_CLONEABLE). Carries no material. */
  readonly not_serializable: typeof NOT_CLONEABLE = NOT_CLONEABLE;

  private constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    zeroOnDrop.register(this, bytes, this);
    Object.freeze(this);
  }

  /**
   * Wraps bytes. The secret ADOPTS the array (no copy): dispose() zeroes the
   * caller's buffer too, and the caller should not keep using it. Empty
   * material is a typed connector failure (`connector.credentials_unavailable`).
   */
  static fromBytes(bytes: Uint8Array, context: SecretFailureContext = {}): ConnectorSecret {
    if (!(bytes instanceof Uint8Array) || bytes.byteLength === 0) throw emptyMaterial(context);
    return new ConnectorSecret(bytes);
  }

  /** Encodes UTF-8 text into a fresh buffer owned by the secret. */
  static fromUtf8(text: string, context: SecretFailureContext = {}): ConnectorSecret {
    if (typeof text !== 'string' || text.length === 0) throw emptyMaterial(context);
    return new ConnectorSecret(new TextEncoder().encode(text));
  }

  static is(value: unknown): value is ConnectorSecret {
    return typeof value === 'object' && value !== null && #bytes in value;
  }

  /** True after dispose(). */
  get disposed(): boolean {
    return this.#bytes === undefined;
  }

  /**
   * Runs `fn` with a view of the live bytes (not a copy). Use it only to build
   * the downstream request; do not retain the view or anything derived from it.
   */
  withBytes<T>(fn: (bytes: Uint8Array) => T): T {
    return fn(this.#live());
  }

  /**
   * Runs `fn` with the material decoded as UTF-8. JavaScript strings cannot be
   * zeroed, so prefer withBytes where the downstream client accepts bytes.
   */
  withUtf8<T>(fn: (text: string) => T): T {
    return fn(new TextDecoder('utf-8', { fatal: false }).decode(this.#live()));
  }

  /** Constant-time comparison for equal lengths; false for different lengths. */
  equals(other: ConnectorSecret): boolean {
    const mine = this.#live();
    const theirs = other.#live();
    if (mine.byteLength !== theirs.byteLength) return false;
    return timingSafeEqual(mine, theirs);
  }

  /** Zeroes the bytes and makes every later use throw. Idempotent. */
  dispose(): void {
    const bytes = this.#bytes;
    if (bytes === undefined) return;
    bytes.fill(0);
    this.#bytes = undefined;
    zeroOnDrop.unregister(this);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return REDACTED;
  }

  [Symbol.toPrimitive](): string {
    return REDACTED;
  }

  /** JSON.stringify(secret) throws: secret material is never serialized. */
  toJSON(): never {
    throw new AipError('credentials.secret_not_serializable');
  }

  [inspect.custom](): string {
    return REDACTED;
  }

  #live(): Uint8Array {
    if (this.#bytes === undefined) throw new AipError('credentials.secret_disposed');
    return this.#bytes;
  }
}

function emptyMaterial(context: SecretFailureContext): ConnectorFailure {
  return new ConnectorFailure({
    code: 'connector.credentials_unavailable',
    message: 'credential material is empty',
    operation: context.operation ?? 'invocation',
    source: context.source ?? 'connector-sdk:credentials',
    redacted_details: { reason: 'empty_material' },
  });
}
