import { inspect } from 'node:util';
import { AipError } from '../errors/aip-error.js';
import { IdSchema } from '../protocol/index.js';

/**
 * An opaque reference to a credential slot, e.g. `payments/api_key`. It
 * holds no secret bytes: only its ID, which is safe to log. The runtime puts
 * one into the ActionExecutionContext; the connector's deployment
 * CredentialProvider resolves it, for the verified tenant and account, into a
 * ConnectorSecret at the provider edge.
 *
 * Nominal (branded by a private field): a plain object or string with the
 * same shape is not a CredentialHandle.
 */
export class CredentialHandle {
  readonly #brand = 'CredentialHandle';
  readonly id: string;

  private constructor(id: string) {
    this.id = id;
    Object.freeze(this);
  }

  /** Builds a handle; the ID must match the protocol ID pattern. */
  static of(id: string): CredentialHandle {
    if (!IdSchema.safeParse(id).success) throw new AipError('credentials.handle_invalid');
    return new CredentialHandle(id);
  }

  static is(value: unknown): value is CredentialHandle {
    return typeof value === 'object' && value !== null && #brand in value;
  }

  equals(other: CredentialHandle): boolean {
    return other.id === this.id;
  }

  toString(): string {
    return `CredentialHandle(${this.id})`;
  }

  /** Serializes as its ID only. */
  toJSON(): string {
    return this.id;
  }

  [inspect.custom](): string {
    return this.toString();
  }
}

/** Shorthand for CredentialHandle.of. */
export function credentialHandle(id: string): CredentialHandle {
  return CredentialHandle.of(id);
}
