/**
 * The contract between the Lambda authorizer and the HTTP handlers.
 *
 * API Gateway copies the authorizer's `context` map (string values only) into
 * `event.requestContext.authorizer` of every proxied request, next to
 * `principalId`. The handlers rebuild the {@link CallerIdentity} from there
 * and from nowhere else.
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
import { AipError } from '../errors/aip-error.js';
import { CallerIdentitySchema, type CallerIdentity } from './identity.js';

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

function unauthenticated(reason: string): AipError {
  // The reason is about our own wiring, never about caller input: safe to return.
  return new AipError('auth.unauthenticated', undefined, { details: { reason } });
}

function str(ctx: Readonly<Record<string, unknown>>, key: string): string | undefined {
  const v = Object.hasOwn(ctx, key) ? ctx[key] : undefined;
  return typeof v === 'string' ? v : undefined;
}

function jsonArray(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * `requestContext.authorizer` → identity. Throws `auth.unauthenticated` when
 * the context is missing or malformed (a route deployed without the
 * authorizer must not run as anybody).
 */
export function decodeAuthorizerContext(authorizer: Readonly<Record<string, unknown>> | null | undefined): CallerIdentity {
  if (authorizer === null || authorizer === undefined || typeof authorizer !== 'object') throw unauthenticated('no authorizer context');
  const candidate: Record<string, unknown> = {
    principal: { id: str(authorizer, AUTHORIZER_CONTEXT_KEYS.principalId), kind: str(authorizer, AUTHORIZER_CONTEXT_KEYS.principalKind) },
    tenants: jsonArray(str(authorizer, AUTHORIZER_CONTEXT_KEYS.tenants)),
    scopes: jsonArray(str(authorizer, AUTHORIZER_CONTEXT_KEYS.scopes)),
  };
  const accounts = str(authorizer, AUTHORIZER_CONTEXT_KEYS.accounts);
  // Present but not a JSON array of IDs: malformed (the schema refuses it), never "no account".
  if (accounts !== undefined) candidate.accounts = jsonArray(accounts) ?? null;
  const issuer = str(authorizer, AUTHORIZER_CONTEXT_KEYS.issuer);
  if (issuer !== undefined) candidate.issuer = issuer;
  const expiresAt = str(authorizer, AUTHORIZER_CONTEXT_KEYS.expiresAt);
  if (expiresAt !== undefined) candidate.expires_at = expiresAt;
  const issuedAt = str(authorizer, AUTHORIZER_CONTEXT_KEYS.issuedAt);
  if (issuedAt !== undefined) candidate.issued_at = issuedAt;
  const parsed = CallerIdentitySchema.safeParse(candidate);
  if (!parsed.success) throw unauthenticated('malformed authorizer context');
  return parsed.data;
}
