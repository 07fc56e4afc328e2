/**
 * CredentialProvider adapter for AWS Secrets Manager (deployments).
 *
 * The secret ID comes only from the deployment's reference map, keyed by
 * connector + credential handle + verified tenant (+ external account). A
 * handle never names a secret directly, so a caller cannot steer resolution
 * to another tenant's secret.
 */
import { GetSecretValueCommand, type GetSecretValueCommandOutput, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { CredentialProvider, CredentialResolutionScope } from '../../connectors/ports/credentials.js';
import type { CredentialHandle } from '../../connectors/credentials/handle.js';
import {
  CredentialReferenceMap,
  credentialsResolutionFailed,
  credentialsUnavailable,
  type CredentialReferenceKey,
} from '../../connectors/credentials/references.js';
import { ConnectorSecret } from '../../connectors/credentials/secret.js';

export interface SecretsManagerReference extends CredentialReferenceKey {
  /** Secret name or ARN. */
  readonly secret_id: string;
  /** Defaults to AWSCURRENT (the service default). */
  readonly version_stage?: string;
  /** When the SecretString is a JSON object: the string field that holds the material. */
  readonly json_field?: string;
}

export interface SecretsManagerCredentialProviderOptions {
  readonly client: Pick<SecretsManagerClient, 'send'>;
  readonly connector_id: string;
  readonly references: readonly SecretsManagerReference[];
}

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
  readonly #client: Pick<SecretsManagerClient, 'send'>;
  readonly #map: CredentialReferenceMap<SecretsManagerReference>;

  constructor(options: SecretsManagerCredentialProviderOptions) {
    this.#client = options.client;
    this.#map = new CredentialReferenceMap(options.connector_id, options.references);
  }

  async resolve(handle: CredentialHandle, scope: CredentialResolutionScope): Promise<ConnectorSecret> {
    const ref = this.#map.require(handle, scope, SOURCE);
    let out: GetSecretValueCommandOutput;
    try {
      out = await this.#client.send(
        new GetSecretValueCommand({ SecretId: ref.secret_id, ...(ref.version_stage !== undefined ? { VersionStage: ref.version_stage } : {}) }),
      );
    } catch (err) {
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
    const failureContext = { operation: scope.operation ?? 'invocation', source: SOURCE } as const;
    if (out.SecretBinary !== undefined && out.SecretBinary.byteLength > 0 && ref.json_field === undefined) {
      return ConnectorSecret.fromBytes(out.SecretBinary, failureContext);
    }
    const text = out.SecretString;
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
