/**
 * Mints development tokens the local stack accepts: ES256, signed with the
 * dev key (./keys.ts), issuer `https://aip.local/dev`, audience `aip-local`,
 * claims in the `generic` preset's names (`aip:principal_kind`,
 * `aip:tenants`, `aip:accounts`, `scope`). FOR LOCAL DEVELOPMENT AND TESTS ONLY.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { PRINCIPAL_KINDS, type PrincipalKind } from '../../packages/connector-sdk/src/protocol/identity.js';
import { DEV_ALGORITHM, DEV_AUDIENCE, DEV_ISSUER, loadDevKeys, type DevKeys } from './keys.js';

/** Scopes a development token gets when none are named. */
export const DEFAULT_DEV_SCOPES = ['aip:actions:read', 'aip:actions:write'] as const;
export const MAX_DEV_TTL_SECONDS = 7 * 24 * 3600;

export interface MintTokenOptions {
  sub: string;
  /** @default 'user' */
  kind?: PrincipalKind;
  tenants?: readonly string[];
  /**
   * External accounts the token lets the principal act for (claim
   * `aip:accounts`, omitted when absent: the token then holds no account).
   */
  accounts?: readonly string[];
  /** @default DEFAULT_DEV_SCOPES */
  scopes?: readonly string[];
  /** Seconds, or a jose time span such as `1h`, `30m`. @default 1h */
  ttl?: number | string;
  issuer?: string;
  audience?: string | string[];
  /** Extra claims (tests: IdP-specific shapes). */
  claims?: Record<string, unknown>;
  /** Signs with this key ID instead of the key's own (tests: unknown kid). */
  kid?: string;
  /** Issue time in epoch seconds (tests: already expired tokens). @default now */
  issuedAt?: number;
}

/** Parses `90`, `90s`, `15m`, `1h`, `2d` to seconds. */
export function ttlSeconds(ttl: number | string | undefined): number {
  if (ttl === undefined) return 3600;
  let seconds: number;
  if (typeof ttl === 'number') seconds = ttl;
  else {
    const m = /^(\d+)\s*([smhd]?)$/.exec(ttl.trim());
    if (!m) throw new Error(`invalid ttl ${JSON.stringify(ttl)}: use seconds or a number with s, m, h or d`);
    seconds = Number(m[1]) * ({ '': 1, s: 1, m: 60, h: 3600, d: 86_400 } as const)[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  }
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_DEV_TTL_SECONDS) {
    throw new Error(`ttl must be 1 s to ${MAX_DEV_TTL_SECONDS} s`);
  }
  return seconds;
}

/** Signs a development token. Loads (or creates) the dev key when none is given. */
export async function mintToken(options: MintTokenOptions, keys?: DevKeys): Promise<string> {
  const k = keys ?? (await loadDevKeys());
  const kind = options.kind ?? 'user';
  if (!(PRINCIPAL_KINDS as readonly string[]).includes(kind)) throw new Error(`kind must be one of ${PRINCIPAL_KINDS.join(', ')}`);
  if (options.sub.length === 0) throw new Error('sub must be non-empty');
  const now = options.issuedAt ?? Math.floor(Date.now() / 1000);
  return new SignJWT({
    'aip:principal_kind': kind,
    'aip:tenants': [...(options.tenants ?? [])],
    ...(options.accounts !== undefined ? { 'aip:accounts': [...options.accounts] } : {}),
    scope: [...(options.scopes ?? DEFAULT_DEV_SCOPES)].join(' '),
    ...options.claims,
  })
    .setProtectedHeader({ alg: DEV_ALGORITHM, kid: options.kid ?? k.kid, typ: 'JWT' })
    .setIssuer(options.issuer ?? DEV_ISSUER)
    .setAudience(options.audience ?? DEV_AUDIENCE)
    .setSubject(options.sub)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + ttlSeconds(options.ttl))
    .setJti(randomUUID())
    .sign(k.privateKey);
}
