/**
 * Pipeline step 4 and the identity rules: the tenant comes from the caller's
 * verified memberships, never from the body alone; so does the external
 * account (the token's accounts claim); scopes come from the verified token;
 * `identity.user_id` must name the verified caller. Nothing here reads a
 * principal from the action body.
 */
import { principalKey, type CallerIdentity } from '../auth/identity.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { Action, Capability } from '../../packages/connector-sdk/src/protocol/index.js';
import { isServiceCaller } from './authority.js';

export type { CallerIdentity } from '../auth/identity.js';

/** The caller's token must still be valid. */
export function assertCallerCurrent(caller: CallerIdentity, now: Date): void {
  if (caller.expires_at !== undefined && Date.parse(caller.expires_at) <= now.getTime()) {
    throw new AipError('runtime.caller_expired');
  }
}

/**
 * The verified tenant of an action: the identity's tenant (or the explicit
 * tenant option, or the caller's only tenant) and it must be one of the
 * caller's memberships.
 */
export function resolveTenant(caller: CallerIdentity, action: Pick<Action, 'identity'>, explicit?: string): string {
  const named = action.identity?.tenant_id;
  if (named !== undefined && explicit !== undefined && named !== explicit) {
    throw new AipError('runtime.tenant_forbidden', 'The action names a tenant other than the selected one', { details: { reason: 'tenant_differs' } });
  }
  const tenant = named ?? explicit ?? (caller.tenants.length === 1 ? caller.tenants[0] : undefined);
  if (tenant === undefined) throw new AipError('runtime.tenant_required');
  if (!caller.tenants.includes(tenant)) throw new AipError('runtime.tenant_forbidden');
  return tenant;
}

/**
 * The verified external account of an action: `identity.external_account_id`,
 * when the action names one, must be one of the accounts the caller's token
 * holds (`caller.accounts`; a token without an accounts claim holds none).
 * The account selects the credential row the attempt resolves (tenant,
 * account → secret), so it is never taken from the body alone. Returns the
 * account, or undefined when the action names none (the tenant-wide
 * credential applies). The refusal names the field, not the account.
 */
export function resolveAccount(caller: CallerIdentity, action: Pick<Action, 'identity'>): string | undefined {
  const named = action.identity?.external_account_id;
  if (named === undefined) return undefined;
  if (!(caller.accounts ?? []).includes(named)) {
    throw new AipError('runtime.account_forbidden', undefined, { details: { path: '/identity/external_account_id' } });
  }
  return named;
}

/**
 * The identity fields an action names beyond tenant and account
 * (lib/protocol/identity.ts): `identity.user_id` names WHO acts, so it must be
 * the verified caller (its identity key, lib/auth/identity.ts
 * `principalKey`); a body naming another user is
 * `runtime.identity_mismatch` (403), naming the field, not the principal.
 * `organization_id`, `workspace_id` and `session_id` are no claim of any
 * token: they are the caller's own declared context inside the verified
 * tenant, kept as declared and never used to authorize anything.
 */
export function checkIdentityFields(caller: CallerIdentity, action: Pick<Action, 'identity'>): void {
  const user = action.identity?.user_id;
  // The runtime's own reconcile actions carry the original action's identity, checked when it was admitted.
  if (user !== undefined && user !== principalKey(caller.principal) && !isServiceCaller(caller)) {
    throw new AipError('runtime.identity_mismatch', undefined, { details: { path: '/identity/user_id' } });
  }
}

/** Checks tenant membership for reads and decisions. */
export function assertTenantMember(caller: CallerIdentity, tenant_id: string): void {
  if (!caller.tenants.includes(tenant_id)) throw new AipError('runtime.tenant_forbidden');
}

/** Scopes the capability policy requires that the caller lacks. */
export function missingScopes(caller: Pick<CallerIdentity, 'scopes'>, required: readonly string[]): string[] {
  const have = new Set(caller.scopes);
  return required.filter((s) => !have.has(s));
}

/** Step 4: scopes against the capability's authorization policy. */
export function authorizeCapability(caller: CallerIdentity, capability: Capability): void {
  const missing = missingScopes(caller, capability.authorization?.scopes ?? []);
  if (missing.length > 0) throw new AipError('runtime.scope_missing', undefined, { details: { missing_scopes: missing, capability_id: capability.id } });
}

export { serviceCaller } from './authority.js';
