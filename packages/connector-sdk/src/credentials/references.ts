import { AipError } from '../errors/aip-error.js';
import type { CredentialResolutionScope } from '../ports/credentials.js';
import { ConnectorFailure } from '../failure.js';
import type { CredentialHandle } from './handle.js';

/**
 * One row of a credential reference map: which secret backs credential
 * `handle` of connector `connector_id` for a tenant (and, optionally, one
 * external account of that tenant). The map is deployment configuration,
 * never action input.
 */
export interface CredentialReferenceKey {
  readonly connector_id: string;
  readonly handle: string;
  readonly tenant_id: string;
  /** Absent: the tenant-wide default for every external account of the tenant. */
  readonly external_account_id?: string | undefined;
}

function keyOf(k: CredentialReferenceKey): string {
  return JSON.stringify([k.connector_id, k.handle, k.tenant_id, k.external_account_id ?? null]);
}

/**
 * Lookup shared by the credential providers. Selection, for the verified
 * scope only:
 * 1. the row for (connector, handle, tenant, external account), else
 * 2. the tenant-wide row for (connector, handle, tenant).
 * Another tenant's row is never selected.
 */
export class CredentialReferenceMap<R extends CredentialReferenceKey> {
  readonly #rows = new Map<string, R>();
  readonly connector_id: string;

  constructor(connector_id: string, rows: readonly R[]) {
    this.connector_id = connector_id;
    for (const row of rows) {
      if (row.connector_id !== connector_id) continue;
      const k = keyOf(row);
      if (this.#rows.has(k)) {
        throw new AipError('connector.definition_invalid', 'duplicate credential reference', {
          details: { connector_id: row.connector_id, handle: row.handle, tenant_id: row.tenant_id, external_account_id: row.external_account_id ?? null },
        });
      }
      this.#rows.set(k, row);
    }
  }

  select(handle: CredentialHandle, scope: CredentialResolutionScope): R | undefined {
    const base = { connector_id: this.connector_id, handle: handle.id, tenant_id: scope.tenant_id };
    if (scope.external_account_id !== undefined) {
      const exact = this.#rows.get(keyOf({ ...base, external_account_id: scope.external_account_id }));
      if (exact !== undefined) return exact;
    }
    return this.#rows.get(keyOf(base));
  }

  /** Like select, but a missing row is the typed `connector.credentials_unavailable` failure. */
  require(handle: CredentialHandle, scope: CredentialResolutionScope, source: string): R {
    const row = this.select(handle, scope);
    if (row === undefined) throw credentialsUnavailable(handle, scope, source, 'no_reference');
    return row;
  }
}

/** The permanent credentials failure (empty, missing or unresolvable material). */
export function credentialsUnavailable(
  handle: CredentialHandle | undefined,
  scope: Partial<CredentialResolutionScope>,
  source: string,
  reason: string,
): ConnectorFailure {
  return new ConnectorFailure({
    code: 'connector.credentials_unavailable',
    operation: scope.operation ?? 'invocation',
    source,
    redacted_details: {
      reason,
      ...(handle ? { credential_handle: handle.id } : {}),
      ...(scope.tenant_id ? { tenant_id: scope.tenant_id } : {}),
    },
  });
}

/** The temporary credentials failure (the secret store failed transiently). */
export function credentialsResolutionFailed(
  handle: CredentialHandle,
  scope: CredentialResolutionScope,
  source: string,
  extra: { reason: string; remote_status?: number; provider_request_id?: string },
): ConnectorFailure {
  return new ConnectorFailure({
    code: 'connector.credentials_resolution_failed',
    operation: scope.operation ?? 'invocation',
    source,
    ...(extra.remote_status !== undefined ? { remote_status: extra.remote_status } : {}),
    ...(extra.provider_request_id !== undefined ? { provider_request_id: extra.provider_request_id } : {}),
    redacted_details: { reason: extra.reason, credential_handle: handle.id, tenant_id: scope.tenant_id },
  });
}
