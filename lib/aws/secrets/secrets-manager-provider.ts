/**
 * CredentialProvider adapter for AWS Secrets Manager (deployments).
 *
 * The secret ID comes only from the deployment's reference map, keyed by
 * connector + credential handle + verified tenant (+ external account). A
 * handle never names a secret directly, so a caller cannot steer resolution
 * to another tenant's secret.
 *
 * Values are cached per execution environment (./secret-cache.ts, Powertools
 * Parameters) for `max_age_seconds`: one GetSecretValue per secret per age,
 * not one per provider call. `refresh` drops a value the provider refused
 * (401/403) and fetches it afresh. Every `resolve` still returns a fresh
 * ConnectorSecret (a copy) that the caller disposes.
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { CredentialProvider, CredentialResolutionScope } from '../../../packages/connector-sdk/src/ports/credentials.js';
import type { CredentialHandle } from '../../../packages/connector-sdk/src/credentials/handle.js';
import {
  CredentialReferenceMap,
  credentialsResolutionFailed,
  credentialsUnavailable,
  type CredentialReferenceKey,
} from '../../../packages/connector-sdk/src/credentials/references.js';
import { ConnectorSecret } from '../../../packages/connector-sdk/src/credentials/secret.js';
import { DEFAULT_CREDENTIAL_CACHE_SECONDS, SecretValueCache, type SecretValue } from './secret-cache.js';

export interface SecretsManagerReference extends CredentialReferenceKey {
  /** Secret name or ARN. */
  readonly secret_id: string;
  /** Defaults to AWSCURRENT (the service default). */
  readonly version_stage?: string;
  /** When the SecretString is a JSON object: the string field that holds the material. */
  readonly json_field?: string;
}

export type SecretsManagerCredentialProviderOptions = {
  readonly connector_id: string;
  readonly references: readonly SecretsManagerReference[];
  /** How long a fetched value is reused, in whole seconds (0: fetched on every use). @default DEFAULT_CREDENTIAL_CACHE_SECONDS */
  readonly max_age_seconds?: number;
} & (
  | { readonly client: SecretsManagerClient }
  /** The execution environment's cache, shared by the connectors of one composition. */
  | { readonly cache: SecretValueCache }
);

const SOURCE = 'credentials:aws-secrets-manager';

/** Service errors that mean "this secret cannot be resolved" (not transient). */
const PERMANENT_ERRORS = new Set([
  'ResourceNotFoundException',
  'AccessDeniedException',
  'AccessDeniedError',
  'DecryptionFailure',
  'InvalidParameterException',
  'InvalidRequestException',
  'UnrecognizedClientException',
]);

export class SecretsManagerCredentialProvider implements CredentialProvider {
  readonly #cache: SecretValueCache;
  readonly #maxAge: number;
  readonly #map: CredentialReferenceMap<SecretsManagerReference>;

  constructor(options: SecretsManagerCredentialProviderOptions) {
    this.#cache = 'cache' in options ? options.cache : new SecretValueCache({ client: options.client });
    const age = options.max_age_seconds ?? DEFAULT_CREDENTIAL_CACHE_SECONDS;
    this.#maxAge = Number.isInteger(age) && age > 0 ? age : 0;
    this.#map = new CredentialReferenceMap(options.connector_id, options.references);
  }

  async resolve(handle: CredentialHandle, scope: CredentialResolutionScope): Promise<ConnectorSecret> {
    const ref = this.#map.require(handle, scope, SOURCE);
    return this.#secretOf(ref, await this.#fetch(ref, handle, scope, false), handle, scope);
  }

  /**
   * The provider refused material resolved for this handle and scope (HTTP
   * 401/403): fetches the secret afresh, so that this and every later
   * resolve see a rotated value. A scope without a reference is a no-op.
   */
  async refresh(handle: CredentialHandle, scope: CredentialResolutionScope): Promise<void> {
    const ref = this.#map.select(handle, scope);
    if (ref !== undefined) await this.#fetch(ref, handle, scope, true);
  }

  async #fetch(ref: SecretsManagerReference, handle: CredentialHandle, scope: CredentialResolutionScope, force: boolean): Promise<SecretValue> {
    try {
      return await this.#cache.get(ref, this.#maxAge, force);
    } catch (thrown) {
      // Powertools wraps the SDK error in a GetParameterError whose `cause` is the SDK's.
      const err = (thrown as { cause?: unknown }).cause ?? thrown;
      const name = (err as { name?: unknown }).name;
      const meta = (err as { $metadata?: { httpStatusCode?: number; requestId?: string } }).$metadata;
      if (typeof name === 'string' && PERMANENT_ERRORS.has(name)) {
        throw credentialsUnavailable(handle, scope, SOURCE, `secrets_manager:${name}`);
      }
      throw credentialsResolutionFailed(handle, scope, SOURCE, {
        reason: typeof name === 'string' && /^[A-Za-z]{1,64}$/.test(name) ? `secrets_manager:${name}` : 'secrets_manager:error',
        ...(meta?.httpStatusCode !== undefined ? { remote_status: meta.httpStatusCode } : {}),
        ...(meta?.requestId !== undefined ? { provider_request_id: meta.requestId } : {}),
      });
    }
  }

  #secretOf(ref: SecretsManagerReference, value: SecretValue, handle: CredentialHandle, scope: CredentialResolutionScope): ConnectorSecret {
    const failureContext = { operation: scope.operation ?? 'invocation', source: SOURCE } as const;
    if (value instanceof Uint8Array) {
      // A copy: the secret adopts and zeroes its bytes on dispose, and the cached value serves later uses.
      if (value.byteLength === 0 || ref.json_field !== undefined) throw credentialsUnavailable(handle, scope, SOURCE, 'empty_material');
      return ConnectorSecret.fromBytes(value.slice(), failureContext);
    }
    const text = value;
    if (text === undefined || text.length === 0) throw credentialsUnavailable(handle, scope, SOURCE, 'empty_material');
    if (ref.json_field === undefined) return ConnectorSecret.fromUtf8(text, failureContext);
    let field: unknown;
    try {
      const obj: unknown = JSON.parse(text);
      field = typeof obj === 'object' && obj !== null && Object.hasOwn(obj, ref.json_field) ? (obj as Record<string, unknown>)[ref.json_field] : undefined;
    } catch {
      throw credentialsUnavailable(handle, scope, SOURCE, 'secret_not_json');
    }
    if (typeof field !== 'string' || field.length === 0) throw credentialsUnavailable(handle, scope, SOURCE, 'empty_material');
    return ConnectorSecret.fromUtf8(field, failureContext);
  }
}
