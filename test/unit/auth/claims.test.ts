import { beforeAll, describe, expect, it } from 'vitest';
import { claimPreset, ClaimMappingError, escapeSubject, isMachineToken, mapClaims, resolveClaimMapping } from '../../../lib/auth/claims.js';
import { createTokenVerifier, TokenRejectedError } from '../../../lib/auth/verifier.js';
import { AUDIENCE, ISSUER, jwks, sign, testKey, type TestKey } from './support.js';

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

describe('generic preset', () => {
  const m = claimPreset('generic');
  it('maps sub, aip:principal_kind, aip:tenants (array) and scope (space-separated)', () => {
    expect(mapClaims({ ...base, 'aip:principal_kind': 'agent', 'aip:tenants': ['acme', 'acme', 'globex'], scope: 'a b  a' }, m)).toEqual({
      principal: { id: 'alice', kind: 'agent' },
      tenants: ['acme', 'globex'],
      scopes: ['a', 'b'],
      issuer: ISSUER,
      expires_at: new Date(2_000_000_000_000).toISOString(),
    });
  });
  it('falls back to principal_kind/tenants and to scp arrays, unions scopes', () => {
    expect(mapClaims({ ...base, principal_kind: 'service', tenants: 'acme, globex', scope: 'x', scp: ['y', 'x'] }, m)).toMatchObject({
      principal: { kind: 'service' },
      tenants: ['acme', 'globex'],
      scopes: ['x', 'y'],
    });
  });
  it('defaults the kind to user, and to service for a client-credentials token', () => {
    expect(mapClaims(base, m).principal.kind).toBe('user');
    expect(mapClaims({ ...base, sub: 'client-1', client_id: 'client-1' }, m).principal.kind).toBe('service');
  });
  it('drops tenant IDs the protocol cannot carry and scopes with spaces or control characters', () => {
    expect(mapClaims({ ...base, 'aip:tenants': ['ok', 'not ok', 'x#y', ''], scp: ['fine', 'bad\u0001'] }, m)).toMatchObject({
      tenants: ['ok'],
      scopes: ['fine'],
    });
  });
  it('denies an unknown kind, a non-string tenants claim, and a subject that is not an ID', () => {
    expect(denied(() => mapClaims({ ...base, 'aip:principal_kind': 'admin' }, m))).toMatch(/principal_kind/);
    expect(denied(() => mapClaims({ ...base, 'aip:tenants': [1, 2] }, m))).toMatch(/tenants/);
    expect(denied(() => mapClaims({ ...base, 'aip:tenants': { a: 1 } }, m))).toMatch(/tenants/);
    expect(denied(() => mapClaims({ ...base, sub: 'has space' }, m))).toMatch(/sub/);
    expect(denied(() => mapClaims({ ...base, sub: undefined }, m))).toMatch(/sub/);
  });
  it('never reads inherited properties', () => {
    const payload = Object.create({ 'aip:tenants': ['inherited'], 'aip:principal_kind': 'service' }) as Record<string, unknown>;
    Object.assign(payload, base);
    expect(mapClaims(payload, m)).toMatchObject({ tenants: [], principal: { kind: 'user' } });
  });
});

describe('cognito preset', () => {
  const m = claimPreset('cognito');
  it('reads custom:tenants as a comma string and requires an access token', () => {
    expect(mapClaims({ ...base, token_use: 'access', 'custom:tenants': 'acme,globex', scope: 'aip:actions:write' }, m)).toMatchObject({
      tenants: ['acme', 'globex'],
      scopes: ['aip:actions:write'],
    });
    expect(denied(() => mapClaims({ ...base, token_use: 'id' }, m))).toMatch(/token_use/);
    expect(mapClaims({ ...base, token_use: 'id' }, resolveClaimMapping({ preset: 'cognito', tokenUse: 'any' })).principal.id).toBe('alice');
  });
  it('treats a client-credentials access token (sub = client_id) as a service', () => {
    expect(mapClaims({ ...base, token_use: 'access', sub: '7abc', client_id: '7abc' }, m).principal).toEqual({ id: '7abc', kind: 'service' });
  });
});

describe('auth0 preset', () => {
  it('reads namespaced claims and permissions, and escapes pipe subjects', () => {
    const m = claimPreset('auth0', { namespace: 'https://api.example.com/' });
    const id = mapClaims(
      {
        ...base,
        sub: 'google-oauth2|1234',
        'https://api.example.com/tenants': ['acme'],
        'https://api.example.com/principal_kind': 'agent',
        scope: 'openid',
        permissions: ['aip:actions:write'],
      },
      m,
    );
    expect(id).toMatchObject({ principal: { id: 'google-oauth2.x7c.1234', kind: 'agent' }, tenants: ['acme'], scopes: ['openid', 'aip:actions:write'] });
    expect(mapClaims({ ...base, 'https://aip/tenants': ['t'] }, claimPreset('auth0')).tenants).toEqual(['t']);
  });
  it('treats a client-credentials grant as a service', () => {
    expect(mapClaims({ ...base, sub: 'abc@clients', gty: 'client-credentials' }, claimPreset('auth0')).principal).toEqual({
      id: 'abc@clients',
      kind: 'service',
    });
  });
  it('escaping keeps valid subjects unchanged and is deterministic', () => {
    expect(escapeSubject('auth0|a b')).toBe('auth0.x7c.a.x20.b');
    expect(mapClaims({ ...base, sub: 'plain-id' }, claimPreset('auth0')).principal.id).toBe('plain-id');
  });
});

describe('okta preset', () => {
  it('reads scp arrays and the tenants claim; cid machine tokens are services', () => {
    const m = claimPreset('okta');
    expect(mapClaims({ ...base, scp: ['aip:actions:read'], tenants: ['acme'] }, m)).toMatchObject({
      tenants: ['acme'],
      scopes: ['aip:actions:read'],
      principal: { kind: 'user' },
    });
    expect(mapClaims({ ...base, sub: '0oa1', cid: '0oa1' }, m).principal.kind).toBe('service');
  });
});

describe('overrides', () => {
  it('replace single fields of a preset', () => {
    const m = resolveClaimMapping({ preset: 'okta', tenantsClaims: ['orgs'], defaultKind: 'agent', principalIdClaim: 'uid' });
    expect(mapClaims({ ...base, uid: 'u-1', orgs: ['o1'] }, m)).toMatchObject({ principal: { id: 'u-1', kind: 'agent' }, tenants: ['o1'] });
  });
  it('refuse unknown presets and fields', () => {
    expect(() => resolveClaimMapping({ preset: 'keycloak' } as never)).toThrow();
    expect(() => resolveClaimMapping({ tenantClaim: 'x' } as never)).toThrow();
  });
  it('isMachineToken needs an explicit machine marker', () => {
    expect(isMachineToken({ sub: 'a' })).toBe(false);
    expect(isMachineToken({ sub: 'a', client_id: 'b' })).toBe(false);
  });
});

describe('presets through the verifier', () => {
  let key: TestKey;
  beforeAll(async () => {
    key = await testKey('RS256', 'k1');
  });

  it('cognito: an access token without aud is accepted by client_id; a wrong client_id is a wrong audience', async () => {
    const v = createTokenVerifier({
      issuer: ISSUER,
      audience: 'client-abc',
      algorithms: ['RS256'],
      claims: { preset: 'cognito' },
      keys: { kind: 'jwks', jwks: jwks(key) },
    });
    const ok = await sign(key, {
      audience: null,
      claims: { token_use: 'access', client_id: 'client-abc', 'custom:tenants': 'acme', scope: 'aip:actions:write' },
    });
    expect(await v.verify(ok)).toMatchObject({ tenants: ['acme'], scopes: ['aip:actions:write'] });
    const wrong = await sign(key, { audience: null, claims: { token_use: 'access', client_id: 'client-xyz' } });
    await expect(v.verify(wrong)).rejects.toBeInstanceOf(TokenRejectedError);
  });

  it('auth0: a namespaced token verifies against the configured audience', async () => {
    const v = createTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms: ['RS256'],
      claims: { preset: 'auth0', namespace: 'https://aip.example/' },
      keys: { kind: 'jwks', jwks: jwks(key) },
    });
    const t = await sign(key, { sub: 'auth0|42', claims: { 'https://aip.example/tenants': ['acme'], permissions: ['aip:operator'] } });
    expect(await v.verify(t)).toMatchObject({ principal: { id: 'auth0.x7c.42' }, tenants: ['acme'], scopes: ['aip:operator'] });
  });
});
