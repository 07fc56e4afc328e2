/**
 * JWT bearer-token verification with `jose`.
 *
 * - Signature: keys come from an injectable {@link KeySource}: a JWKS URL
 *   (`createRemoteJWKSet`, cached per container, refetched on an unknown
 *   `kid` after a cooldown), an in-memory JWKS (local stack, tests), or any
 *   jose key-resolver function.
 * - Algorithms: an explicit allow-list, RS256/ES256 by default. `none` is
 *   never accepted, whatever the configuration says; HMAC (`HS*`) only when
 *   the configuration opts in with `allowHmac`.
 * - Claims: `iss` must equal the configured issuer, the audience must match
 *   (in `aud`, or, for Cognito access tokens, `client_id`), `exp` and `sub`
 *   are required, `nbf`/`exp` are checked with a small clock tolerance.
 *
 * Outcomes: a verified identity; {@link TokenRejectedError} (the token is bad:
 * the authorizer answers 401); {@link ClaimMappingError} (the token is good
 * but unusable: 403); {@link KeySourceUnavailableError} (cannot decide now:
 * 5xx). Reasons are logged, never returned to the caller, and no token text
 * is ever put in an error.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
} from 'jose';
import { mapClaims, resolveClaimMapping, type ClaimMapping, type ClaimsConfig } from './claims.js';
import type { CallerIdentity } from './identity.js';

export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export const HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;
export type VerifierAlgorithm = (typeof ASYMMETRIC_ALGORITHMS)[number] | (typeof HMAC_ALGORITHMS)[number];
export const DEFAULT_ALGORITHMS: readonly VerifierAlgorithm[] = ['RS256', 'ES256'];

/** Upper bound on a token's length; real ones are 1-2 KiB. */
export const MAX_TOKEN_LENGTH = 8192;
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 5;
export const MAX_CLOCK_TOLERANCE_SECONDS = 60;

export type KeySource =
  | {
      readonly kind: 'jwks_url';
      readonly url: string;
      readonly timeoutMs?: number;
      readonly cooldownMs?: number;
      readonly cacheMaxAgeMs?: number;
      /**
       * Accept an `http:` URL on any host, not only on loopback. Only the
       * `local` and `localstack` environments set it (./config.ts), where
       * Lambda containers reach a development JWKS on the host.
       */
      readonly allowHttp?: boolean;
    }
  | { readonly kind: 'jwks'; readonly jwks: JSONWebKeySet }
  | { readonly kind: 'resolver'; readonly getKey: JWTVerifyGetKey };

export interface TokenVerifierConfig {
  readonly issuer: string;
  readonly audience: string | readonly string[];
  /** @default ['RS256', 'ES256'] */
  readonly algorithms?: readonly VerifierAlgorithm[];
  /** Must be true for any HS* algorithm to be accepted. */
  readonly allowHmac?: boolean;
  /** @default 5 (at most 60) */
  readonly clockToleranceSeconds?: number;
  /** A preset name plus overrides, or an already resolved mapping. @default generic preset */
  readonly claims?: ClaimsConfig | ClaimMapping;
  readonly keys: KeySource;
  /** Clock for exp/nbf (tests). @default the system clock */
  readonly now?: () => Date;
}

export type TokenRejectionReason =
  | 'malformed'
  | 'too_long'
  | 'algorithm_not_allowed'
  | 'unknown_key'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'missing_claim'
  | 'invalid_claims';

/** The token is not acceptable (→ 401). `reason` is for logs only. */
export class TokenRejectedError extends Error {
  readonly reason: TokenRejectionReason;
  constructor(reason: TokenRejectionReason) {
    super(`bearer token rejected: ${reason}`);
    this.name = 'TokenRejectedError';
    this.reason = reason;
  }
}

/** Keys could not be fetched: the token can be neither accepted nor refused now (→ 5xx). */
export class KeySourceUnavailableError extends Error {
  constructor(cause: unknown) {
    super('the signing keys could not be loaded', { cause });
    this.name = 'KeySourceUnavailableError';
  }
}

export interface TokenVerifier {
  /** Verifies a compact JWS (no `Bearer ` prefix) and maps its claims. */
  verify(token: string): Promise<CallerIdentity>;
}

function isMapping(c: ClaimsConfig | ClaimMapping | undefined): c is ClaimMapping {
  return c !== undefined && 'audienceClaims' in c && Array.isArray(c.audienceClaims) && 'machineKind' in c && !('preset' in c);
}

/** Validates the algorithm policy; throws a configuration Error. */
export function checkAlgorithms(algorithms: readonly string[], allowHmac: boolean): VerifierAlgorithm[] {
  if (algorithms.length === 0) throw new Error('auth configuration: at least one JWS algorithm must be allowed');
  const out: VerifierAlgorithm[] = [];
  for (const alg of algorithms) {
    if ((ASYMMETRIC_ALGORITHMS as readonly string[]).includes(alg)) out.push(alg as VerifierAlgorithm);
    else if ((HMAC_ALGORITHMS as readonly string[]).includes(alg)) {
      if (!allowHmac) throw new Error(`auth configuration: ${alg} is a shared-secret algorithm; set allowHmac to accept it`);
      out.push(alg as VerifierAlgorithm);
    } else throw new Error(`auth configuration: JWS algorithm ${JSON.stringify(alg)} is not supported`);
  }
  return out;
}

function keyResolver(source: KeySource): JWTVerifyGetKey {
  switch (source.kind) {
    case 'jwks':
      return createLocalJWKSet(source.jwks);
    case 'resolver':
      return source.getKey;
    case 'jwks_url': {
      const url = new URL(source.url);
      const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (loopback || source.allowHttp === true))) {
        throw new Error('auth configuration: the JWKS URL must use https (http only on loopback, or in the local and localstack environments)');
      }
      return createRemoteJWKSet(url, {
        timeoutDuration: source.timeoutMs ?? 3000,
        cooldownDuration: source.cooldownMs ?? 30_000,
        cacheMaxAge: source.cacheMaxAgeMs ?? 600_000,
      });
    }
  }
}

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

function audienceMatches(payload: JWTPayload, audiences: readonly string[], claims: ClaimMapping['audienceClaims']): boolean {
  for (const claim of claims) {
    const v: unknown = Object.hasOwn(payload, claim) ? (payload as Record<string, unknown>)[claim] : undefined;
    if (typeof v === 'string' && audiences.includes(v)) return true;
    if (claim === 'aud' && Array.isArray(v) && v.some((a) => typeof a === 'string' && audiences.includes(a))) return true;
  }
  return false;
}

function rejectionFromJose(err: unknown): TokenRejectedError | KeySourceUnavailableError | undefined {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : '';
  const claim = typeof err === 'object' && err !== null && 'claim' in err ? String((err as { claim: unknown }).claim) : '';
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return new TokenRejectedError('expired');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const reason = (err as { reason?: unknown }).reason;
      if (claim === 'iss') return new TokenRejectedError('wrong_issuer');
      if (claim === 'aud') return new TokenRejectedError('wrong_audience');
      if (claim === 'nbf' || claim === 'iat') return new TokenRejectedError('not_yet_valid');
      if (reason === 'missing') return new TokenRejectedError('missing_claim');
      return new TokenRejectedError('invalid_claims');
    }
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return new TokenRejectedError('bad_signature');
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return new TokenRejectedError('unknown_key');
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return new TokenRejectedError('algorithm_not_allowed');
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
    case 'ERR_JWK_INVALID':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return new TokenRejectedError('malformed');
    case 'ERR_JWKS_TIMEOUT':
    case 'ERR_JWKS_INVALID':
      return new KeySourceUnavailableError(err);
    default:
      return undefined;
  }
}

/** Builds a verifier. Throws a configuration Error for an unusable configuration. */
export function createTokenVerifier(config: TokenVerifierConfig): TokenVerifier {
  const allowHmac = config.allowHmac === true;
  const algorithms = checkAlgorithms(config.algorithms ?? DEFAULT_ALGORITHMS, allowHmac);
  const audiences = typeof config.audience === 'string' ? [config.audience] : [...config.audience];
  if (audiences.length === 0 || audiences.some((a) => a.length === 0)) throw new Error('auth configuration: audience must be non-empty');
  if (config.issuer.length === 0) throw new Error('auth configuration: issuer must be non-empty');
  const tolerance = config.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0 || tolerance > MAX_CLOCK_TOLERANCE_SECONDS) {
    throw new Error(`auth configuration: clockToleranceSeconds must be 0-${MAX_CLOCK_TOLERANCE_SECONDS}`);
  }
  const mapping = isMapping(config.claims) ? config.claims : resolveClaimMapping(config.claims ?? {});
  const getKey = keyResolver(config.keys);
  const audienceByJose = mapping.audienceClaims.length === 1 && mapping.audienceClaims[0] === 'aud';

  return {
    async verify(token: string): Promise<CallerIdentity> {
      if (typeof token !== 'string' || token.length === 0) throw new TokenRejectedError('malformed');
      if (token.length > MAX_TOKEN_LENGTH) throw new TokenRejectedError('too_long');
      if (!COMPACT_JWS.test(token)) throw new TokenRejectedError('malformed');
      let alg: unknown;
      try {
        alg = decodeProtectedHeader(token).alg;
      } catch {
        throw new TokenRejectedError('malformed');
      }
      // Checked before any key lookup: `none` and anything outside the allow-list never reach jose.
      if (typeof alg !== 'string' || alg.toLowerCase() === 'none' || !(algorithms as readonly string[]).includes(alg)) {
        throw new TokenRejectedError('algorithm_not_allowed');
      }
      const options: JWTVerifyOptions = {
        issuer: config.issuer,
        algorithms: [...algorithms],
        clockTolerance: tolerance,
        requiredClaims: ['exp', 'sub', 'iss'],
      };
      if (audienceByJose) options.audience = audiences;
      if (config.now) options.currentDate = config.now();
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, getKey, options));
      } catch (err) {
        const mapped = rejectionFromJose(err);
        if (mapped) throw mapped;
        // Anything else from the key source (network, HTTP status from the JWKS endpoint).
        if (config.keys.kind === 'jwks_url') throw new KeySourceUnavailableError(err);
        throw new TokenRejectedError('malformed');
      }
      if (!audienceByJose && !audienceMatches(payload, audiences, mapping.audienceClaims)) {
        throw new TokenRejectedError('wrong_audience');
      }
      return mapClaims(payload as Record<string, unknown>, mapping);
    },
  };
}
