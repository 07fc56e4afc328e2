/**
 * The API side of the authorizer context (./authorizer-context.ts): the
 * identity a route's handler reads back from `requestContext.authorizer`.
 * A module of its own so that the authorizer, which only encodes, loads
 * neither the error catalogue nor the identity schema (docs/bench/analysis.md,
 * "Cold start and bundles").
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { AUTHORIZER_CONTEXT_KEYS } from './authorizer-context.js';
import { CallerIdentitySchema, type CallerIdentity } from './identity.js';

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
