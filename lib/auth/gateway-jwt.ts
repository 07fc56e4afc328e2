/**
 * The caller identity of a request that API Gateway's built-in JWT authorizer
 * (HTTP API, payload format 2.0) already verified: the same
 * {@link CallerIdentity} the Lambda TOKEN authorizer of the REST API builds
 * (./verifier.ts, ./claims.ts), derived from the claims the gateway copies
 * into `requestContext.authorizer.jwt.claims`.
 *
 * What the gateway checked before the function runs (AWS documentation,
 * "Control access to HTTP APIs with JWT authorizers"): an RSA signature by a
 * key of the issuer's `jwks_uri` (found by OIDC discovery), `kid`, `iss`
 * equal to the configured issuer, `aud` (or `client_id` when there is no
 * `aud`) among the configured audiences, `exp`, `nbf`, `iat`.
 *
 * What the Lambda authorizer also checks and the JWT authorizer cannot, done
 * here (so a request reaches the core with the identity REST would give it,
 * or is refused with the same typed error):
 * - the configured algorithm allow-list (read from the token's protected
 *   header: the gateway accepts any RSA algorithm it supports);
 * - `exp`, `sub` and `iss` present, `iss` equal to the configured issuer;
 * - the audience in the claims the claim mapping names (`aud` only for the
 *   generic preset: the gateway would also accept `client_id`);
 * - the claim mapping itself: usable subject, principal kind, tenant and
 *   account claims of the right shape, `token_use` (Cognito), bounded lists.
 *
 * The gateway renders claim values as strings: a JSON array of strings
 * arrives as `"[a b c]"`, a number as its digits. {@link normaliseGatewayClaims}
 * turns the list claims back into arrays and the time claims into numbers
 * before the mapping runs. One shape cannot be told apart: an array element
 * that itself holds a space arrives split in two. Tenant, account and scope
 * values never hold a space (they are protocol IDs and OAuth scopes), so the
 * identity is the same for every token whose values are usable at all.
 *
 * Outcomes: an identity; {@link GatewayTokenRejectedError} (the REST
 * authorizer would have answered 401); {@link ClaimMappingError} (the REST
 * authorizer would have denied: 403, thrown by ./claims.ts `mapClaims`). Reasons are for logs only.
 */
import { mapClaims, type ClaimMapping } from './claims.js';
import type { CallerIdentity } from './identity.js';

export type GatewayRejectionReason = 'algorithm_not_allowed' | 'malformed' | 'missing_claim' | 'wrong_issuer' | 'wrong_audience';

/** The token the gateway accepted is one the Lambda authorizer would have rejected (→ 401). */
export class GatewayTokenRejectedError extends Error {
  readonly reason: GatewayRejectionReason;
  constructor(reason: GatewayRejectionReason) {
    super(`bearer token rejected: ${reason}`);
    this.name = 'GatewayTokenRejectedError';
    this.reason = reason;
  }
}

export interface GatewayJwtPolicy {
  readonly issuer: string;
  readonly audiences: readonly string[];
  /** The configured JWS allow-list (`auth.algorithms`). */
  readonly algorithms: readonly string[];
  readonly mapping: ClaimMapping;
}

/** Claim values as `requestContext.authorizer.jwt.claims` holds them. */
export type GatewayClaims = Readonly<Record<string, unknown>>;

const TIME_CLAIMS = ['exp', 'iat', 'nbf'] as const;
/** `[a b c]`: how the gateway renders a JSON array of strings. */
const RENDERED_ARRAY = /^\[(.*)\]$/s;

/** A list claim as the gateway rendered it → the list. */
function listValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const m = RENDERED_ARRAY.exec(value.trim());
  if (!m) return value;
  return m[1]!.split(/\s+/).filter((s) => s.length > 0);
}

/** The claims with the mapping's list claims as arrays and the time claims as numbers (what the token itself held). */
export function normaliseGatewayClaims(claims: GatewayClaims, mapping: ClaimMapping): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(claims)) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  const lists = new Set<string>(['aud', ...mapping.tenantsClaims, ...mapping.accountsClaims, ...mapping.scopeClaims]);
  for (const claim of lists) if (Object.hasOwn(out, claim)) out[claim] = listValue(out[claim]);
  for (const claim of TIME_CLAIMS) {
    const v = Object.hasOwn(out, claim) ? out[claim] : undefined;
    if (typeof v === 'string' && /^\d{1,15}$/.test(v)) out[claim] = Number(v);
  }
  return out;
}

function audienceMatches(payload: Readonly<Record<string, unknown>>, audiences: readonly string[], claims: ClaimMapping['audienceClaims']): boolean {
  for (const claim of claims) {
    const v = Object.hasOwn(payload, claim) ? payload[claim] : undefined;
    if (typeof v === 'string' && audiences.includes(v)) return true;
    if (Array.isArray(v) && v.some((a) => typeof a === 'string' && audiences.includes(a))) return true;
  }
  return false;
}

/** `alg` of a compact JWS's protected header, or undefined when it cannot be read. */
export function protectedHeaderAlg(token: string): string | undefined {
  const dot = token.indexOf('.');
  if (dot <= 0 || dot > 2048) return undefined;
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8')) as unknown;
    const alg = typeof header === 'object' && header !== null ? (header as { alg?: unknown }).alg : undefined;
    return typeof alg === 'string' ? alg : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The caller identity of a request the gateway's JWT authorizer accepted.
 * `token` is the bearer token of the request's Authorization header (the
 * authorizer's identity source, so the token the gateway verified).
 */
export function identityFromGatewayClaims(claims: GatewayClaims, token: string | undefined, policy: GatewayJwtPolicy): CallerIdentity {
  const alg = token === undefined ? undefined : protectedHeaderAlg(token);
  if (alg === undefined) throw new GatewayTokenRejectedError('malformed');
  if (!policy.algorithms.includes(alg)) throw new GatewayTokenRejectedError('algorithm_not_allowed');
  const payload = normaliseGatewayClaims(claims, policy.mapping);
  for (const claim of ['exp', 'sub', 'iss']) if (!Object.hasOwn(payload, claim)) throw new GatewayTokenRejectedError('missing_claim');
  if (payload.iss !== policy.issuer) throw new GatewayTokenRejectedError('wrong_issuer');
  if (!audienceMatches(payload, policy.audiences, policy.mapping.audienceClaims)) throw new GatewayTokenRejectedError('wrong_audience');
  return mapClaims(payload, policy.mapping);
}
