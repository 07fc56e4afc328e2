import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { PrincipalSchema, type Principal } from '../../packages/connector-sdk/src/protocol/identity.js';
import { IdSchema, ScopeSchema } from '../../packages/connector-sdk/src/protocol/primitives.js';

/**
 * Who is calling, as the HTTP edge hands it to the runtime. Built ONLY from a
 * verified token (by the authorizer) and, in the HTTP handlers, ONLY from
 * `requestContext.authorizer`: never from a request body, query or header.
 */
export interface CallerIdentity {
  principal: Principal;
  /** Tenant memberships (protocol IDs), deduplicated, in token order. */
  tenants: string[];
  /** OAuth scopes, deduplicated. */
  scopes: string[];
  /**
   * External accounts (protocol IDs) the token lets the principal act for,
   * from the claim mapping's accounts claim. An action naming
   * `identity.external_account_id` must name one of these.
   */
  accounts?: string[];
  /** The verified `iss`. */
  issuer?: string;
  /** RFC 3339 time the token expires. */
  expires_at?: string;
  /** RFC 3339 time the token was issued (`iat`). */
  issued_at?: string;
}

/** Bounds on what one token may carry (API Gateway limits the authorizer context size). */
export const IDENTITY_LIMITS = {
  maxTenants: 256,
  maxScopes: 256,
  maxAccounts: 256,
} as const;

export const CallerIdentitySchema = z.strictObject({
  principal: PrincipalSchema,
  tenants: z.array(IdSchema).check(z.maxLength(IDENTITY_LIMITS.maxTenants)),
  scopes: z.array(ScopeSchema).check(z.maxLength(IDENTITY_LIMITS.maxScopes)),
  accounts: z.optional(z.array(IdSchema).check(z.maxLength(IDENTITY_LIMITS.maxAccounts))),
  issuer: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
  expires_at: z.optional(z.iso.datetime({ offset: true })),
  issued_at: z.optional(z.iso.datetime({ offset: true })),
});

/**
 * THE identity of a principal wherever the runtime counts or compares people
 * (owners, requesters, approvers, the self-approval and four-eyes rules,
 * resolutions): the principal ID alone. A deployment verifies tokens of ONE
 * issuer (`auth.issuer`), so the ID (the mapped subject) already names one
 * subject of that issuer; the kind (`user`, `agent`, ...) comes from a claim
 * the subject's tokens may carry differently, so it describes a principal and
 * never tells two apart. docs/authority.md › "One identity per principal".
 */
export function principalKey(p: Principal): string {
  return p.id;
}

/** Whether two principals are the same subject ({@link principalKey}). */
export function samePrincipal(a: Principal | undefined, b: Principal | undefined): boolean {
  return a !== undefined && b !== undefined && principalKey(a) === principalKey(b);
}
