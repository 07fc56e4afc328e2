/**
 * The authorizer's deployment configuration, read from the `auth` part of the
 * runtime configuration (lib/config/deployment.ts `AuthConfigSchema`: issuer,
 * audience, jwksUrl, algorithms), plus the optional claim mapping
 * (`claims`: a preset and overrides, see ./claims.ts) and clock tolerance.
 *
 * The schema is lenient about fields it does not know, so the infra
 * configuration can grow without breaking cold starts; what it does read is
 * validated strictly.
 */
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { joinIssuePath } from '../../packages/connector-sdk/src/common/issues.js';
import { ClaimsConfigSchema, type ClaimsConfig } from './claims.js';
import { HTTP_AUTH_ENVIRONMENTS } from './environments.js';
import {
  ASYMMETRIC_ALGORITHMS,
  DEFAULT_ALGORITHMS,
  HMAC_ALGORITHMS,
  MAX_CLOCK_TOLERANCE_SECONDS,
  type TokenVerifierConfig,
  type VerifierAlgorithm,
} from './verifier.js';

export const AuthSettingsSchema = z.looseObject({
  issuer: z.string().check(z.minLength(1), z.maxLength(2048)),
  audience: z.union([z.string().check(z.minLength(1)), z.array(z.string().check(z.minLength(1))).check(z.minLength(1))]),
  jwksUrl: z.url({ protocol: /^https?$/ }),
  algorithms: z.optional(z.array(z.enum([...ASYMMETRIC_ALGORITHMS, ...HMAC_ALGORITHMS])).check(z.minLength(1))),
  allowHmac: z.optional(z.boolean()),
  clockToleranceSeconds: z.optional(z.number().check(z.gte(0), z.lte(MAX_CLOCK_TOLERANCE_SECONDS))),
  claims: z.optional(ClaimsConfigSchema),
});

/** Thrown at cold start for a configuration the authorizer cannot run with. */
export class AuthConfigError extends Error {
  constructor(message: string) {
    super(`auth configuration: ${message}`);
    this.name = 'AuthConfigError';
  }
}

/**
 * Runtime configuration JSON (the `AIP_RUNTIME_CONFIG` variable) → verifier
 * configuration with a remote JWKS key source. `claimsOverride` (the
 * `AIP_AUTH_CLAIMS` variable) wins over `auth.claims`. An `http:` JWKS URL
 * off loopback is accepted only when `envName` is one of
 * `HTTP_AUTH_ENVIRONMENTS` (./environments.ts).
 */
export function verifierConfigFromRuntimeConfig(runtimeConfigJson: string, claimsOverride?: ClaimsConfig): TokenVerifierConfig {
  let value: unknown;
  try {
    value = JSON.parse(runtimeConfigJson);
  } catch {
    throw new AuthConfigError('the runtime configuration is not valid JSON');
  }
  const auth = typeof value === 'object' && value !== null ? (value as { auth?: unknown }).auth : undefined;
  const envName = typeof value === 'object' && value !== null ? (value as { envName?: unknown }).envName : undefined;
  const parsed = AuthSettingsSchema.safeParse(auth);
  if (!parsed.success) {
    throw new AuthConfigError(parsed.error.issues.map((i) => `auth.${joinIssuePath(i.path, '.')}: ${i.message}`).join('; '));
  }
  const s = parsed.data;
  const config: { -readonly [K in keyof TokenVerifierConfig]: TokenVerifierConfig[K] } = {
    issuer: s.issuer,
    audience: s.audience,
    algorithms: (s.algorithms ?? DEFAULT_ALGORITHMS) as VerifierAlgorithm[],
    keys: { kind: 'jwks_url', url: s.jwksUrl, ...(typeof envName === 'string' && HTTP_AUTH_ENVIRONMENTS.includes(envName) ? { allowHttp: true } : {}) },
  };
  if (s.allowHmac !== undefined) config.allowHmac = s.allowHmac;
  if (s.clockToleranceSeconds !== undefined) config.clockToleranceSeconds = s.clockToleranceSeconds;
  const claims = claimsOverride ?? s.claims;
  if (claims !== undefined) config.claims = claims;
  return config;
}

/** Parses the `AIP_AUTH_CLAIMS` variable: a preset name (`cognito`) or a JSON claims configuration. */
export function parseClaimsOverride(text: string | undefined): ClaimsConfig | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const trimmed = text.trim();
  let value: unknown = trimmed;
  if (trimmed.startsWith('{')) {
    try {
      value = JSON.parse(trimmed);
    } catch {
      throw new AuthConfigError('AIP_AUTH_CLAIMS is not valid JSON');
    }
  } else {
    value = { preset: trimmed };
  }
  const parsed = ClaimsConfigSchema.safeParse(value);
  if (!parsed.success)
    throw new AuthConfigError(`AIP_AUTH_CLAIMS: ${parsed.error.issues.map((i) => `${joinIssuePath(i.path, '.') || '(root)'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}
