import type { CredentialProvider, CredentialResolutionScope } from '../ports/credentials.js';
import { contextAttemptEvidence, type ActionExecutionContext } from '../context.js';
import { ConnectorFailure, isConnectorFailure, markSdkFailure } from '../failure.js';
import type { ConnectorOperation } from '../operations.js';
import type { CredentialHandle } from './handle.js';
import { credentialsResolutionFailed, credentialsUnavailable } from './references.js';
import { ConnectorSecret } from './secret.js';

/**
 * Resolves the context's credential handle through the deployment provider,
 * for the context's VERIFIED tenant and external account. There is no other
 * input: no fallback to anything the caller supplied.
 *
 * Fails with `connector.credentials_unavailable` when the context has no
 * handle or no verified tenant, or the provider returns nothing usable;
 * an untyped provider error becomes `connector.credentials_resolution_failed`;
 * a context whose attempt ended (ExecutionAttempt.retire) is refused with
 * `connector.attempt_ended`, before the provider is asked. Every failure is
 * marked as the SDK's (see markSdkFailure): after a provider effect it is
 * reported uncertain.
 */
export async function resolveCredential(
  provider: CredentialProvider,
  ctx: ActionExecutionContext,
  operation: ConnectorOperation = 'invocation',
  source = 'connector-sdk:credentials',
): Promise<ConnectorSecret> {
  try {
    return await resolveFor(provider, ctx, operation, source);
  } catch (err) {
    throw isConnectorFailure(err) ? markSdkFailure(err) : err;
  }
}

/** The context's handle and verified scope (the only inputs a provider gets). */
function scopeOf(
  ctx: ActionExecutionContext,
  operation: ConnectorOperation,
  source: string,
): { handle: CredentialHandle; scope: CredentialResolutionScope & { operation: ConnectorOperation } } {
  if (contextAttemptEvidence(ctx).retired) {
    throw new ConnectorFailure({ code: 'connector.attempt_ended', operation, source, redacted_details: { facility: 'credentials' } });
  }
  const handle = ctx.credential;
  const tenant = ctx.tenant;
  if (handle === undefined) throw credentialsUnavailable(undefined, { operation }, source, 'no_credential_handle');
  if (tenant === undefined) throw credentialsUnavailable(handle, { operation }, source, 'no_verified_tenant');
  return {
    handle,
    scope: {
      tenant_id: tenant.tenant_id,
      ...(tenant.external_account_id !== undefined ? { external_account_id: tenant.external_account_id } : {}),
      operation,
    },
  };
}

/**
 * The downstream provider refused `refused` (material resolved for the
 * context) with 401 or 403: asks the deployment provider to fetch the
 * credential afresh and reports whether it changed (constant-time
 * comparison). False when the provider caches nothing (no `refresh`), when
 * the refetch fails, or when the material is the same: retrying then would
 * only be refused again. Never throws; disposes nothing it was given.
 */
export async function credentialRotated(
  provider: CredentialProvider,
  ctx: ActionExecutionContext,
  refused: ConnectorSecret,
  operation: ConnectorOperation = 'invocation',
  source = 'connector-sdk:credentials',
): Promise<boolean> {
  if (provider.refresh === undefined || refused.disposed) return false;
  try {
    const { handle, scope } = scopeOf(ctx, operation, source);
    await provider.refresh(handle, scope);
    const fresh = await resolveFor(provider, ctx, operation, source);
    try {
      return !fresh.equals(refused);
    } finally {
      fresh.dispose();
    }
  } catch {
    return false;
  }
}

async function resolveFor(provider: CredentialProvider, ctx: ActionExecutionContext, operation: ConnectorOperation, source: string): Promise<ConnectorSecret> {
  const { handle, scope } = scopeOf(ctx, operation, source);
  let secret: unknown;
  try {
    secret = await provider.resolve(handle, scope);
  } catch (err) {
    if (isConnectorFailure(err)) throw err;
    throw credentialsResolutionFailed(handle, scope, source, { reason: 'provider_error' });
  }
  if (!ConnectorSecret.is(secret) || secret.disposed) throw credentialsUnavailable(handle, scope, source, 'empty_material');
  return secret;
}

/**
 * Resolves the credential, runs `fn` with it, and disposes it (zeroing the
 * bytes) whatever happens. Use it around building and sending the downstream
 * request only.
 */
export async function withCredential<T>(
  provider: CredentialProvider,
  ctx: ActionExecutionContext,
  fn: (secret: ConnectorSecret) => Promise<T> | T,
  operation: ConnectorOperation = 'invocation',
): Promise<T> {
  const secret = await resolveCredential(provider, ctx, operation);
  try {
    return await fn(secret);
  } finally {
    secret.dispose();
  }
}
