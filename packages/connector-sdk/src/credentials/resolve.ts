import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
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

/** What one send through {@link withCredentialRefresh} came to: its value, or what it threw. */
export type SendOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

export interface CredentialRefreshOptions<T> {
  /**
   * Whether the provider refused the credential in this outcome (HTTP 401 or
   * 403, or the failure a connector maps them to) AND the refused request
   * had no effect, so that sending it again, identical, is safe.
   */
  readonly refused: (outcome: SendOutcome<T>) => boolean;
  readonly operation?: ConnectorOperation;
  readonly source?: string;
  /** Called once a refusal was found to be a rotation, before the one resend (for a log line; never given material). */
  readonly onRotated?: (refused: SendOutcome<T>) => void;
}

/**
 * A downstream exchange with the context's credential, and the one resend a
 * rotated credential allows: the rule every connector shares (the
 * declarative HTTP connector per request, defineConnector per handler run).
 *
 * `send` gets `credential`, which resolves the context's credential through
 * the deployment provider (resolveCredential; the caller disposes each
 * secret, as early as it likes). When `refused` says the provider refused the
 * credential, the provider is asked to fetch it afresh (`refresh`: the
 * Secrets Manager cache forgets it, at most once a second); if the fresh
 * material differs from the refused one (compared in constant time, on
 * keyed digests taken when the secret was resolved: the refused secret may
 * already be disposed), `send` runs once more, with a new `credential`. A
 * refusal of the current material, a provider that caches nothing, or a
 * failed refetch ends the exchange with the first outcome. Never more than
 * one resend.
 */
export async function withCredentialRefresh<T>(
  provider: CredentialProvider,
  ctx: ActionExecutionContext,
  send: (credential: () => Promise<ConnectorSecret>) => Promise<T>,
  options: CredentialRefreshOptions<T>,
): Promise<T> {
  const operation = options.operation ?? 'invocation';
  const source = options.source ?? 'connector-sdk:credentials';
  let used: Uint8Array | undefined;
  const credential = async (): Promise<ConnectorSecret> => {
    const secret = await resolveCredential(provider, ctx, operation, source);
    used = digestOf(secret);
    return secret;
  };
  const first = await settle(send(credential));
  if (used !== undefined && options.refused(first) && (await credentialRotated(provider, ctx, used, operation, source))) {
    options.onRotated?.(first);
    return send(credential);
  }
  if (first.ok) return first.value;
  throw first.error;
}

async function settle<T>(p: Promise<T>): Promise<SendOutcome<T>> {
  try {
    return { ok: true, value: await p };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The per-process key of the digests that stand for refused material (never leaves this module). */
let digestKey: Buffer | undefined;

/** A keyed digest of a secret's material: compares material without keeping it. */
function digestOf(secret: ConnectorSecret): Uint8Array {
  digestKey ??= randomBytes(32);
  const key = digestKey;
  return secret.withBytes((bytes) => createHmac('sha256', key).update(bytes).digest());
}

/**
 * After the downstream provider refused material whose digest is `refused`:
 * asks the deployment provider to fetch the credential afresh and reports
 * whether it changed. False when the provider caches nothing (no
 * `refresh`) or the refetch fails: retrying then would only be refused
 * again. Never throws.
 */
async function credentialRotated(
  provider: CredentialProvider,
  ctx: ActionExecutionContext,
  refused: Uint8Array,
  operation: ConnectorOperation,
  source: string,
): Promise<boolean> {
  if (provider.refresh === undefined) return false;
  try {
    const { handle, scope } = scopeOf(ctx, operation, source);
    await provider.refresh(handle, scope);
    const fresh = await resolveFor(provider, ctx, operation, source);
    try {
      return !timingSafeEqual(digestOf(fresh), refused);
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
