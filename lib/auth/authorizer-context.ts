/**
 * The contract between the Lambda authorizer and the HTTP handlers.
 *
 * API Gateway copies the authorizer's `context` map (string values only) into
 * `event.requestContext.authorizer` of every proxied request, next to
 * `principalId`. The handlers rebuild the {@link CallerIdentity} from there
 * and from nowhere else (./decode-authorizer-context.ts).
 *
 * Keys:
 * - `principal_id`, `principal_kind`
 * - `tenants`: JSON array of tenant IDs
 * - `scopes`: JSON array of scopes
 * - `accounts`: JSON array of external account IDs (only when the token had
 *   an accounts claim; absent = the caller holds no account)
 * - `issuer`, `expires_at`, `issued_at` (optional)
 *
 * Size: API Gateway bounds the authorizer response, context included. Every
 * value here comes from the verified token, which is at most 8 KiB
 * (verifier.ts MAX_TOKEN_LENGTH), and each list is bounded by
 * IDENTITY_LIMITS (lib/auth/identity.ts), so the accounts list adds at most
 * what the token's accounts claim carried (plus JSON quoting).
 */
import type { CallerIdentity } from './identity.js';

export const AUTHORIZER_CONTEXT_KEYS = {
  principalId: 'principal_id',
  principalKind: 'principal_kind',
  tenants: 'tenants',
  scopes: 'scopes',
  accounts: 'accounts',
  issuer: 'issuer',
  expiresAt: 'expires_at',
  issuedAt: 'issued_at',
} as const;

export type AuthorizerContext = Record<string, string>;

/** Identity → the authorizer's `context` map (strings only, as API Gateway requires). */
export function encodeAuthorizerContext(identity: CallerIdentity): AuthorizerContext {
  const ctx: AuthorizerContext = {
    [AUTHORIZER_CONTEXT_KEYS.principalId]: identity.principal.id,
    [AUTHORIZER_CONTEXT_KEYS.principalKind]: identity.principal.kind,
    [AUTHORIZER_CONTEXT_KEYS.tenants]: JSON.stringify(identity.tenants),
    [AUTHORIZER_CONTEXT_KEYS.scopes]: JSON.stringify(identity.scopes),
  };
  if (identity.accounts !== undefined) ctx[AUTHORIZER_CONTEXT_KEYS.accounts] = JSON.stringify(identity.accounts);
  if (identity.issuer !== undefined) ctx[AUTHORIZER_CONTEXT_KEYS.issuer] = identity.issuer;
  if (identity.expires_at !== undefined) ctx[AUTHORIZER_CONTEXT_KEYS.expiresAt] = identity.expires_at;
  if (identity.issued_at !== undefined) ctx[AUTHORIZER_CONTEXT_KEYS.issuedAt] = identity.issued_at;
  return ctx;
}
