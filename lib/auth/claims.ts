/**
 * How verified JWT claims become a {@link CallerIdentity}.
 *
 * Identity providers put the same facts under different claims. A
 * {@link ClaimMapping} names where to look; presets cover the common IdPs:
 *
 * | preset    | tenants                                   | accounts                          | principal kind                               | scopes                  | audience checked in      |
 * |-----------|-------------------------------------------|-----------------------------------|----------------------------------------------|-------------------------|--------------------------|
 * | `generic` | `aip:tenants`, `tenants`                  | `aip:accounts`, `accounts`        | `aip:principal_kind`, `principal_kind`       | `scope`, `scp`          | `aud`                    |
 * | `cognito` | `custom:tenants`, `aip:tenants`           | `custom:accounts`, `aip:accounts` | `custom:principal_kind`, `aip:principal_kind` | `scope`                 | `aud` or `client_id`     |
 * | `auth0`   | `<ns>tenants`                             | `<ns>accounts`                    | `<ns>principal_kind`                          | `scope`, `permissions`  | `aud`                    |
 * | `okta`    | `tenants`, `aip:tenants`                  | `accounts`, `aip:accounts`        | `principal_kind`, `aip:principal_kind`        | `scp`, `scope`          | `aud`                    |
 *
 * The first tenants/accounts/kind claim present wins; scopes are the union
 * of every scope claim present. Accounts are the external accounts
 * (`identity.external_account_id`) the principal may act for: a token with
 * no accounts claim holds none, so an action naming an account is refused
 * (`runtime.account_forbidden`, lib/runtime/identity.ts `resolveAccount`).
 * Tenant and account values that are not protocol IDs are dropped (that only
 * ever narrows access). A claim value may be a JSON array of strings or one
 * string separated by commas and/or spaces (Cognito custom attributes are
 * strings). Auth0 requires namespaced custom claims: `<ns>` defaults to
 * `https://aip/` and is configurable.
 *
 * Failures here are not token failures: the token was verified, but it cannot
 * be turned into a usable identity, so the authorizer DENIES (HTTP 403)
 * rather than answering 401.
 */
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { PRINCIPAL_KINDS, type PrincipalKind } from '../../packages/connector-sdk/src/protocol/identity.js';
import { ID_MAX_LENGTH, ID_PATTERN } from '../../packages/connector-sdk/src/protocol/primitives.js';
import { IDENTITY_LIMITS, type CallerIdentity } from './identity.js';

export const CLAIM_PRESET_NAMES = ['generic', 'cognito', 'auth0', 'okta'] as const;
export type ClaimPresetName = (typeof CLAIM_PRESET_NAMES)[number];

export interface ClaimMapping {
  /** Claim holding the principal ID. */
  readonly principalIdClaim: string;
  /**
   * What to do with a subject that is not a protocol ID (letters, digits and
   * `. _ : @ / -`): `strict` refuses the token; `escape` rewrites every other
   * character as `.x<hex>.` (Auth0 subjects look like `auth0|abc`).
   */
  readonly subjectEncoding: 'strict' | 'escape';
  /** Claims naming the principal kind (`user`, `agent`, `service`, `application`); first present wins. */
  readonly kindClaims: readonly string[];
  /** Kind when no kind claim is present and the token is not a machine token. */
  readonly defaultKind: PrincipalKind;
  /** Kind of a machine (client-credentials) token that names no kind. */
  readonly machineKind: PrincipalKind;
  /** Claims holding tenant memberships; first present wins. */
  readonly tenantsClaims: readonly string[];
  /** Claims holding the external accounts the principal may act for; first present wins. */
  readonly accountsClaims: readonly string[];
  /** Claims holding scopes; the union of all present. */
  readonly scopeClaims: readonly string[];
  /** Claims the configured audience is matched against (`aud`, and `client_id` for Cognito access tokens). */
  readonly audienceClaims: readonly ('aud' | 'client_id' | 'azp' | 'cid')[];
  /** Required `token_use` claim value (Cognito: `access`), when set. */
  readonly tokenUse?: string;
}

export const DEFAULT_AUTH0_NAMESPACE = 'https://aip/';

const GENERIC: ClaimMapping = {
  principalIdClaim: 'sub',
  subjectEncoding: 'strict',
  kindClaims: ['aip:principal_kind', 'principal_kind'],
  defaultKind: 'user',
  machineKind: 'service',
  tenantsClaims: ['aip:tenants', 'tenants'],
  accountsClaims: ['aip:accounts', 'accounts'],
  scopeClaims: ['scope', 'scp'],
  audienceClaims: ['aud'],
};

/** The preset mappings. `auth0` takes the custom-claim namespace. */
export function claimPreset(name: ClaimPresetName, options: { namespace?: string } = {}): ClaimMapping {
  switch (name) {
    case 'generic':
      return GENERIC;
    case 'cognito':
      return {
        ...GENERIC,
        kindClaims: ['custom:principal_kind', 'aip:principal_kind'],
        tenantsClaims: ['custom:tenants', 'aip:tenants'],
        accountsClaims: ['custom:accounts', 'aip:accounts'],
        scopeClaims: ['scope'],
        audienceClaims: ['aud', 'client_id'],
        tokenUse: 'access',
      };
    case 'auth0': {
      const ns = options.namespace ?? DEFAULT_AUTH0_NAMESPACE;
      return {
        ...GENERIC,
        subjectEncoding: 'escape',
        kindClaims: [`${ns}principal_kind`],
        tenantsClaims: [`${ns}tenants`],
        accountsClaims: [`${ns}accounts`],
        scopeClaims: ['scope', 'permissions'],
      };
    }
    case 'okta':
      return {
        ...GENERIC,
        kindClaims: ['principal_kind', 'aip:principal_kind'],
        tenantsClaims: ['tenants', 'aip:tenants'],
        accountsClaims: ['accounts', 'aip:accounts'],
        scopeClaims: ['scp', 'scope'],
      };
  }
}

/** Configuration form: a preset plus optional overrides of single fields. */
export const ClaimsConfigSchema = z.deferred(() => {
  const claimName = z.string().check(z.minLength(1), z.maxLength(256));
  return z.strictObject({
    preset: z._default(z.enum(CLAIM_PRESET_NAMES), 'generic'),
    /** Auth0 custom-claim namespace, e.g. `https://api.example.com/`. */
    namespace: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
    principalIdClaim: z.optional(claimName),
    subjectEncoding: z.optional(z.enum(['strict', 'escape'])),
    kindClaims: z.optional(z.array(claimName).check(z.minLength(1), z.maxLength(8))),
    defaultKind: z.optional(z.enum(PRINCIPAL_KINDS)),
    machineKind: z.optional(z.enum(PRINCIPAL_KINDS)),
    tenantsClaims: z.optional(z.array(claimName).check(z.minLength(1), z.maxLength(8))),
    accountsClaims: z.optional(z.array(claimName).check(z.minLength(1), z.maxLength(8))),
    scopeClaims: z.optional(z.array(claimName).check(z.minLength(1), z.maxLength(8))),
    audienceClaims: z.optional(z.array(z.enum(['aud', 'client_id', 'azp', 'cid'])).check(z.minLength(1), z.maxLength(4))),
    /** `any` turns off the preset's token_use check. */
    tokenUse: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  });
});
export type ClaimsConfig = z.input<typeof ClaimsConfigSchema>;

/** Resolves a claims configuration (preset + overrides) to a mapping. */
export function resolveClaimMapping(config: ClaimsConfig = {}): ClaimMapping {
  const c = ClaimsConfigSchema.parse(config);
  const base = claimPreset(c.preset, c.namespace === undefined ? {} : { namespace: c.namespace });
  const out: { -readonly [K in keyof ClaimMapping]: ClaimMapping[K] } = { ...base };
  if (c.principalIdClaim !== undefined) out.principalIdClaim = c.principalIdClaim;
  if (c.subjectEncoding !== undefined) out.subjectEncoding = c.subjectEncoding;
  if (c.kindClaims !== undefined) out.kindClaims = c.kindClaims;
  if (c.defaultKind !== undefined) out.defaultKind = c.defaultKind;
  if (c.machineKind !== undefined) out.machineKind = c.machineKind;
  if (c.tenantsClaims !== undefined) out.tenantsClaims = c.tenantsClaims;
  if (c.accountsClaims !== undefined) out.accountsClaims = c.accountsClaims;
  if (c.scopeClaims !== undefined) out.scopeClaims = c.scopeClaims;
  if (c.audienceClaims !== undefined) out.audienceClaims = c.audienceClaims;
  if (c.tokenUse === 'any') delete out.tokenUse;
  else if (c.tokenUse !== undefined) out.tokenUse = c.tokenUse;
  return out;
}

/** The token was verified but does not map to a usable identity (→ deny). */
export class ClaimMappingError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`token claims cannot be mapped to an identity: ${reason}`);
    this.name = 'ClaimMappingError';
    this.reason = reason;
  }
}

function own(payload: Readonly<Record<string, unknown>>, key: string): unknown {
  return Object.hasOwn(payload, key) ? payload[key] : undefined;
}

const SCOPE_PATTERN = /^[\x21-\x7e]{1,200}$/;

/** A claim as a list of strings: an array of strings, or one string split on commas/whitespace. */
function stringList(value: unknown, claim: string): string[] {
  if (typeof value === 'string') return value.split(/[\s,]+/).filter((s) => s.length > 0);
  if (Array.isArray(value)) {
    const out: string[] = [];
    for (const v of value) {
      if (typeof v !== 'string') throw new ClaimMappingError(`claim ${claim} must hold strings`);
      out.push(v);
    }
    return out;
  }
  throw new ClaimMappingError(`claim ${claim} must be a string or an array of strings`);
}

/** Rewrites characters outside the protocol ID alphabet as `.x<hex>.` (only called for non-conforming subjects). */
export function escapeSubject(sub: string): string {
  let out = '';
  for (const ch of sub) {
    out += /^[A-Za-z0-9._:@/-]$/.test(ch) ? ch : `.x${(ch.codePointAt(0) ?? 0).toString(16)}.`;
  }
  return out;
}

function principalId(payload: Readonly<Record<string, unknown>>, mapping: ClaimMapping): string {
  const sub = own(payload, mapping.principalIdClaim);
  if (typeof sub !== 'string' || sub.length === 0) throw new ClaimMappingError(`claim ${mapping.principalIdClaim} is missing`);
  if (ID_PATTERN.test(sub) && sub.length <= ID_MAX_LENGTH) return sub;
  if (mapping.subjectEncoding === 'escape') {
    const escaped = escapeSubject(sub);
    if (escaped.length <= ID_MAX_LENGTH) return escaped;
  }
  throw new ClaimMappingError(`claim ${mapping.principalIdClaim} is not a usable principal ID`);
}

/** A client-credentials (machine) token: no end user behind it. */
export function isMachineToken(payload: Readonly<Record<string, unknown>>): boolean {
  const sub = own(payload, 'sub');
  if (own(payload, 'gty') === 'client-credentials') return true; // Auth0
  if (typeof sub !== 'string') return false;
  // Cognito (client_id) and Okta (cid) machine tokens use the client ID as subject.
  return sub === own(payload, 'client_id') || sub === own(payload, 'cid');
}

function principalKind(payload: Readonly<Record<string, unknown>>, mapping: ClaimMapping): PrincipalKind {
  for (const claim of mapping.kindClaims) {
    const v = own(payload, claim);
    if (v === undefined) continue;
    if (typeof v === 'string' && (PRINCIPAL_KINDS as readonly string[]).includes(v)) return v as PrincipalKind;
    throw new ClaimMappingError(`claim ${claim} must be one of ${PRINCIPAL_KINDS.join(', ')}`);
  }
  return isMachineToken(payload) ? mapping.machineKind : mapping.defaultKind;
}

/** The first present claim of `claims` as deduplicated protocol IDs, or undefined when none is present. */
function idList(payload: Readonly<Record<string, unknown>>, claims: readonly string[], max: number, what: string): string[] | undefined {
  for (const claim of claims) {
    const v = own(payload, claim);
    if (v === undefined) continue;
    // Only IDs the protocol can carry are kept: dropping one only ever narrows access.
    const list = [...new Set(stringList(v, claim))].filter((t) => t.length <= ID_MAX_LENGTH && ID_PATTERN.test(t));
    if (list.length > max) throw new ClaimMappingError(`claim ${claim} lists more than ${max} ${what}`);
    return list;
  }
  return undefined;
}

function tenants(payload: Readonly<Record<string, unknown>>, mapping: ClaimMapping): string[] {
  return idList(payload, mapping.tenantsClaims, IDENTITY_LIMITS.maxTenants, 'tenants') ?? [];
}

/** The token's accounts, or undefined when it has no accounts claim (it then holds no account). */
function accounts(payload: Readonly<Record<string, unknown>>, mapping: ClaimMapping): string[] | undefined {
  return idList(payload, mapping.accountsClaims, IDENTITY_LIMITS.maxAccounts, 'accounts');
}

function scopes(payload: Readonly<Record<string, unknown>>, mapping: ClaimMapping): string[] {
  const out = new Set<string>();
  for (const claim of mapping.scopeClaims) {
    const v = own(payload, claim);
    if (v === undefined) continue;
    for (const s of stringList(v, claim)) if (SCOPE_PATTERN.test(s)) out.add(s);
  }
  if (out.size > IDENTITY_LIMITS.maxScopes) throw new ClaimMappingError(`the token carries more than ${IDENTITY_LIMITS.maxScopes} scopes`);
  return [...out];
}

/** Maps a verified payload to a caller identity. Throws {@link ClaimMappingError}. */
export function mapClaims(payload: Readonly<Record<string, unknown>>, mapping: ClaimMapping): CallerIdentity {
  if (mapping.tokenUse !== undefined && own(payload, 'token_use') !== mapping.tokenUse) {
    throw new ClaimMappingError(`token_use must be ${mapping.tokenUse}`);
  }
  const identity: CallerIdentity = {
    principal: { id: principalId(payload, mapping), kind: principalKind(payload, mapping) },
    tenants: tenants(payload, mapping),
    scopes: scopes(payload, mapping),
  };
  const held = accounts(payload, mapping);
  if (held !== undefined) identity.accounts = held;
  const iss = own(payload, 'iss');
  if (typeof iss === 'string') identity.issuer = iss;
  const exp = own(payload, 'exp');
  if (typeof exp === 'number' && Number.isFinite(exp)) {
    const d = new Date(exp * 1000);
    if (!Number.isNaN(d.getTime())) identity.expires_at = d.toISOString();
  }
  const iat = own(payload, 'iat');
  if (typeof iat === 'number' && Number.isFinite(iat)) {
    const d = new Date(iat * 1000);
    if (!Number.isNaN(d.getTime())) identity.issued_at = d.toISOString();
  }
  return identity;
}
