/**
 * Port of the connector SDK: the deployment's credential provider.
 *
 * The ActionExecutionContext carries only an opaque CredentialHandle. A
 * CredentialProvider resolves it, inside the connector process, for the
 * VERIFIED tenant and external account (taken from the trusted context, never
 * from action input or metadata) into a ConnectorSecret.
 *
 * Contract for implementations:
 * - Empty, missing or unresolvable material rejects with a ConnectorFailure
 *   `connector.credentials_unavailable` (permanent) or, for a transient outage
 *   of the secret store, `connector.credentials_resolution_failed` (temporary).
 *   There is never a fallback to caller-supplied credentials.
 * - Failures carry no secret material and no secret identifiers beyond the
 *   handle ID.
 * - Every call returns a fresh ConnectorSecret the caller disposes.
 * - A provider may cache material for a bounded age. It then implements
 *   `refresh`, which the connector calls when the downstream provider refused
 *   the material (HTTP 401/403): the next resolve returns material fetched
 *   after the refusal (a rotated secret takes effect at once).
 *
 * Adapters: lib/aws/secrets/secrets-manager-provider.ts (deployments) and
 * ../credentials/env-provider.ts (local runs).
 */
import type { CredentialHandle } from '../credentials/handle.js';
import type { ConnectorSecret } from '../credentials/secret.js';
import type { ConnectorOperation } from '../operations.js';

export interface CredentialResolutionScope {
  /** Verified tenant (from ActionExecutionContext.tenant). */
  readonly tenant_id: string;
  /** Verified external account, when the action is bound to one. */
  readonly external_account_id?: string;
  /** The typed operation on whose behalf the secret is resolved (for failure reporting). */
  readonly operation?: ConnectorOperation;
}

export interface CredentialProvider {
  resolve(handle: CredentialHandle, scope: CredentialResolutionScope): Promise<ConnectorSecret>;
  /** Optional: forget cached material for this handle and scope, and fetch it afresh. Absent: nothing is cached. */
  refresh?(handle: CredentialHandle, scope: CredentialResolutionScope): Promise<void>;
}
