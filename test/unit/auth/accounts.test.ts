/**
 * External accounts come only from verified token claims:
 * the accounts claim per preset, the authorizer context round trip, and the
 * authorizer handler carrying a token's accounts to the handlers.
 */
import type { APIGatewayAuthorizerResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createAuthorizerHandler } from '../../../functions/authorizer.js';
import { SILENT_LOGGER } from '../../../functions/shared/logger.js';
import { AUTHORIZER_CONTEXT_KEYS, encodeAuthorizerContext } from '../../../lib/auth/authorizer-context.js';
import { decodeAuthorizerContext } from '../../../lib/auth/decode-authorizer-context.js';
import { claimPreset, ClaimMappingError, ClaimsConfigSchema, mapClaims, resolveClaimMapping, type ClaimPresetName } from '../../../lib/auth/claims.js';
import { IDENTITY_LIMITS, type CallerIdentity } from '../../../lib/auth/identity.js';
import { createTokenVerifier } from '../../../lib/auth/verifier.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { lambdaContext } from '../http/support.js';
import { AUDIENCE, ISSUER, jwks, sign, testKey } from './support.js';

const base = { iss: ISSUER, sub: 'alice', exp: 2_000_000_000 };

function denied(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof ClaimMappingError) return e.reason;
    throw e;
  }
  return 'mapped';
}

/** Each preset's accounts claims, first wins; cognito also needs token_use. */
const PRESETS: readonly { preset: ClaimPresetName; claims: readonly string[]; extra?: Record<string, unknown> }[] = [
  { preset: 'generic', claims: ['aip:accounts', 'accounts'] },
  { preset: 'cognito', claims: ['custom:accounts', 'aip:accounts'], extra: { token_use: 'access' } },
  { preset: 'auth0', claims: ['https://aip/accounts'] },
  { preset: 'okta', claims: ['accounts', 'aip:accounts'] },
];

describe('accounts claim per preset', () => {
  for (const { preset, claims, extra } of PRESETS) {
    const m = claimPreset(preset);
    const payload = { ...base, ...extra };

    it(`${preset}: maps ${claims.join(', ')} (array or comma/space separated), first present wins`, () => {
      expect(m.accountsClaims).toEqual(claims);
      const [first, second] = claims as [string, string | undefined];
      expect(mapClaims({ ...payload, [first]: ['acct_a', 'acct_b', 'acct_a'] }, m).accounts).toEqual(['acct_a', 'acct_b']);
      expect(mapClaims({ ...payload, [first]: 'acct_a, acct_b acct_c' }, m).accounts).toEqual(['acct_a', 'acct_b', 'acct_c']);
      if (second !== undefined) {
        expect(mapClaims({ ...payload, [second]: ['acct_2'] }, m).accounts).toEqual(['acct_2']);
        expect(mapClaims({ ...payload, [first]: ['acct_1'], [second]: ['acct_2'] }, m).accounts).toEqual(['acct_1']);
      }
    });

    it(`${preset}: no accounts claim → no accounts (undefined); an empty claim → []`, () => {
      expect(mapClaims(payload, m).accounts).toBeUndefined();
      expect(mapClaims(payload, m)).not.toHaveProperty('accounts');
      expect(mapClaims({ ...payload, [claims[0] as string]: [] }, m).accounts).toEqual([]);
      expect(mapClaims({ ...payload, [claims[0] as string]: '' }, m).accounts).toEqual([]);
    });

    it(`${preset}: drops values that are not protocol IDs; refuses a malformed claim`, () => {
      const c = claims[0] as string;
      expect(mapClaims({ ...payload, [c]: ['ok_1', 'not ok', 'x#y', '', 'a'.repeat(257)] }, m).accounts).toEqual(['ok_1']);
      expect(denied(() => mapClaims({ ...payload, [c]: [1, 2] }, m))).toMatch(/accounts/);
      expect(denied(() => mapClaims({ ...payload, [c]: { acct: true } }, m))).toMatch(/accounts/);
      expect(denied(() => mapClaims({ ...payload, [c]: 7 }, m))).toMatch(/accounts/);
      const many = Array.from({ length: IDENTITY_LIMITS.maxAccounts + 1 }, (_, i) => `acct_${i}`);
      expect(denied(() => mapClaims({ ...payload, [c]: many }, m))).toMatch(/more than 256 accounts/);
    });
  }

  it('a tenants claim never grants accounts, nor an unlisted claim name', () => {
    const m = claimPreset('generic');
    expect(mapClaims({ ...base, 'aip:tenants': ['acct_x'], 'custom:accounts': ['acct_x'], account: 'acct_x' }, m).accounts).toBeUndefined();
  });

  it('the auth0 namespace applies to the accounts claim', () => {
    const m = claimPreset('auth0', { namespace: 'https://api.example.com/' });
    expect(m.accountsClaims).toEqual(['https://api.example.com/accounts']);
    expect(mapClaims({ ...base, 'https://api.example.com/accounts': ['acct_1'], 'https://aip/accounts': ['acct_2'] }, m).accounts).toEqual(['acct_1']);
  });

  it('the accounts claims are overridable in the claims configuration', () => {
    const m = resolveClaimMapping({ preset: 'okta', accountsClaims: ['billing_accounts'] });
    expect(m.accountsClaims).toEqual(['billing_accounts']);
    expect(mapClaims({ ...base, billing_accounts: ['b1'], accounts: ['a1'] }, m).accounts).toEqual(['b1']);
    expect(resolveClaimMapping({ preset: 'okta' }).accountsClaims).toEqual(['accounts', 'aip:accounts']);
    expect(ClaimsConfigSchema.safeParse({ accountsClaims: [] }).success).toBe(false);
    expect(ClaimsConfigSchema.safeParse({ accountsClaims: [''] }).success).toBe(false);
  });
});

describe('authorizer context: accounts', () => {
  const id: CallerIdentity = { principal: { id: 'bob', kind: 'user' }, tenants: ['t1'], scopes: ['s'], accounts: ['acct_1', 'acct_2'], issuer: ISSUER };

  it('round-trips accounts as a JSON array string', () => {
    const ctx = encodeAuthorizerContext(id);
    expect(ctx[AUTHORIZER_CONTEXT_KEYS.accounts]).toBe('["acct_1","acct_2"]');
    expect(decodeAuthorizerContext({ ...ctx, principalId: 'bob' })).toEqual(id);
    const none: CallerIdentity = { ...id, accounts: [] };
    expect(decodeAuthorizerContext(encodeAuthorizerContext(none))).toEqual(none);
  });

  it('an identity without accounts has no accounts key, and decodes without accounts', () => {
    const { accounts: _drop, ...noAccounts } = id;
    const ctx = encodeAuthorizerContext(noAccounts);
    expect(ctx).not.toHaveProperty(AUTHORIZER_CONTEXT_KEYS.accounts);
    expect(decodeAuthorizerContext(ctx)).toEqual(noAccounts);
  });

  it('refuses a malformed accounts entry instead of reading it as "no account"', () => {
    const ctx = encodeAuthorizerContext(id);
    for (const accounts of ['not json', '{"a":1}', '["bad id"]', '[1]', 'null', JSON.stringify(Array.from({ length: 257 }, (_, i) => `a${i}`))]) {
      expect(() => decodeAuthorizerContext({ ...ctx, accounts })).toThrow(AipError);
    }
  });
});

describe('authorizer handler: accounts', () => {
  it('passes the token’s accounts claim to the handlers, and none when the token has none', async () => {
    const key = await testKey('ES256', 'k-acct');
    const authorizer = createAuthorizerHandler({
      verifier: createTokenVerifier({ issuer: ISSUER, audience: AUDIENCE, keys: { kind: 'jwks', jwks: jwks(key) } }),
      observability: { logger: SILENT_LOGGER },
    });
    const run = async (claims: Record<string, unknown>) => {
      const token = await sign(key, { claims: { 'aip:tenants': ['acme'], scope: 'aip:actions:write', ...claims } });
      const r = (await authorizer(
        { type: 'TOKEN', authorizationToken: `Bearer ${token}`, methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/actions' },
        lambdaContext(),
      )) as APIGatewayAuthorizerResult;
      for (const v of Object.values(r.context ?? {})) expect(typeof v).toBe('string');
      return decodeAuthorizerContext(r.context);
    };
    expect((await run({ 'aip:accounts': ['acct_1'] })).accounts).toEqual(['acct_1']);
    expect((await run({})).accounts).toBeUndefined();
  });
});
