/**
 * Credential rows of the configuration (the deployment's and the remote
 * connector host's) in the shape of the Secrets Manager credential provider.
 * No AWS SDK here: the provider's reference type is imported as a type only.
 */
import type { SecretsManagerReference } from '../aws/secrets/secrets-manager-provider.js';

/** A credential row as the deployment and the remote connector host configure it (the fields the provider reads). */
export interface CredentialRowFields {
  readonly handle: string;
  readonly tenantId: string;
  readonly externalAccountId?: string | undefined;
  readonly secret: string;
  readonly versionStage?: string | undefined;
  readonly jsonField?: string | undefined;
}

/** The rows of connector `connectorId`, as the provider's references. */
export function toSecretsManagerReferences(connectorId: string, rows: ReadonlyArray<CredentialRowFields>): SecretsManagerReference[] {
  return rows.map((row) => ({
    connector_id: connectorId,
    handle: row.handle,
    tenant_id: row.tenantId,
    ...(row.externalAccountId !== undefined ? { external_account_id: row.externalAccountId } : {}),
    secret_id: row.secret,
    ...(row.versionStage !== undefined ? { version_stage: row.versionStage } : {}),
    ...(row.jsonField !== undefined ? { json_field: row.jsonField } : {}),
  }));
}

/**
 * The deployment's credential rows of connector `connectorId` (the
 * `connectors` of ./deployment.ts's DeploymentRuntimeConfig), for the Secrets
 * Manager credential provider. Here rather than in ./deployment.ts so the
 * functions that build connectors do not load the configuration's schemas
 * (functions/shared/compose-connectors.ts).
 */
export function secretsManagerReferences(
  config: { readonly connectors: ReadonlyArray<{ readonly id: string; readonly credentials?: ReadonlyArray<CredentialRowFields> | undefined }> },
  connectorId: string,
): SecretsManagerReference[] {
  const connector = config.connectors.find((candidate) => candidate.id === connectorId);
  return toSecretsManagerReferences(connectorId, connector?.credentials ?? []);
}
