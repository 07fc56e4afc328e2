import { generateSecret, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimMappingError } from '../../../lib/auth/claims.js';
import {
  checkAlgorithms,
  createTokenVerifier,
  KeySourceUnavailableError,
  MAX_TOKEN_LENGTH,
  TokenRejectedError,
  type TokenRejectionReason,
  type TokenVerifier,
  type TokenVerifierConfig,
} from '../../../lib/auth/verifier.js';
import { AUDIENCE, ISSUER, jwks, jwksServer, sign, standardClaims, testKey, unsecuredToken, type TestKey } from './support.js';

let es: TestKey;
let rs: TestKey;
let stranger: TestKey;
let verifier: TokenVerifier;

function config(overrides: Partial<TokenVerifierConfig> = {}): TokenVerifierConfig {
  return { issuer: ISSUER, audience: AUDIENCE, keys: { kind: 'jwks', jwks: jwks(es, rs) }, ...overrides };
}

async function reason(v: TokenVerifier, token: string): Promise<TokenRejectionReason | string> {
  try {
    await v.verify(token);
    return 'accepted';
  } catch (e) {
    if (e instanceof TokenRejectedError) return e.reason;
    if (e instanceof ClaimMappingError) return `denied:${e.reason}`;
    if (e instanceof KeySourceUnavailableError) return 'unavailable';
    throw e;
  }
}

beforeAll(async () => {
  [es, rs, stranger] = await Promise.all([testKey('ES256', 'es-1'), testKey('RS256', 'rs-1'), testKey('ES256', 'stranger')]);
  verifier = createTokenVerifier(config());
});

describe('token verification', () => {
  it('accepts valid ES256 and RS256 tokens and maps the identity', async () => {
    const token = await sign(es, { claims: { 'aip:tenants': ['acme', 'globex'], scope: 'aip:actions:read aip:actions:write', 'aip:principal_kind': 'agent' } });
    const id = await verifier.verify(token);
    expect(id).toMatchObject({
      principal: { id: 'alice', kind: 'agent' },
      tenants: ['acme', 'globex'],
      scopes: ['aip:actions:read', 'aip:actions:write'],
      issuer: ISSUER,
    });
    expect(Date.parse(id.expires_at ?? '')).toBeGreaterThan(Date.now());
    expect(await reason(verifier, await sign(rs))).toBe('accepted');
  });

  it('accepts any configured audience, in a string or an array aud', async () => {
    const v = createTokenVerifier(config({ audience: ['other', AUDIENCE] }));
    expect(await reason(v, await sign(es, { audience: [AUDIENCE, 'x'] }))).toBe('accepted');
  });

  it('rejects an expired token (beyond the clock tolerance) and accepts one within it', async () => {
    expect(await reason(verifier, await sign(es, { expiresIn: -60 }))).toBe('expired');
    expect(await reason(verifier, await sign(es, { expiresIn: -2 }))).toBe('accepted');
    expect(await reason(createTokenVerifier(config({ clockToleranceSeconds: 0 })), await sign(es, { expiresIn: -2 }))).toBe('expired');
  });

  it('rejects a token that is not yet valid', async () => {
    expect(await reason(verifier, await sign(es, { notBeforeIn: 120 }))).toBe('not_yet_valid');
  });

  it('rejects the wrong issuer and the wrong audience', async () => {
    expect(await reason(verifier, await sign(es, { issuer: 'https://evil.test/' }))).toBe('wrong_issuer');
    expect(await reason(verifier, await sign(es, { issuer: 'https://issuer.test' }))).toBe('wrong_issuer');
    expect(await reason(verifier, await sign(es, { audience: 'someone-else' }))).toBe('wrong_audience');
    expect(await reason(verifier, await sign(es, { audience: null }))).toBe('wrong_audience');
  });

  it('rejects alg "none" in any spelling, with or without a signature', async () => {
    for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
      expect(await reason(verifier, unsecuredToken(standardClaims(), { alg, typ: 'JWT' }))).toBe('algorithm_not_allowed');
    }
    expect(await reason(verifier, unsecuredToken(standardClaims(), { alg: 'none', kid: 'es-1' }, 'c2ln'))).toBe('algorithm_not_allowed');
    expect(await reason(verifier, unsecuredToken(standardClaims(), { typ: 'JWT' }))).toBe('algorithm_not_allowed');
  });

  it('rejects HS256 (a forged "symmetric" token keyed with the public key bytes) unless explicitly configured', async () => {
    const forged = await new SignJWT(standardClaims())
      .setProtectedHeader({ alg: 'HS256', kid: 'es-1' })
      .sign(new TextEncoder().encode(JSON.stringify(es.publicJwk)));
    expect(await reason(verifier, forged)).toBe('algorithm_not_allowed');
    const secret = await generateSecret('HS256', { extractable: true });
    const hs = await new SignJWT(standardClaims()).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    expect(await reason(verifier, hs)).toBe('algorithm_not_allowed');
    const v = createTokenVerifier(config({ algorithms: ['HS256'], allowHmac: true, keys: { kind: 'resolver', getKey: async () => secret } }));
    expect(await reason(v, hs)).toBe('accepted');
  });

  it('rejects algorithms outside the allow-list even with a valid key', async () => {
    const esOnly = createTokenVerifier(config({ algorithms: ['ES256'] }));
    expect(await reason(esOnly, await sign(rs))).toBe('algorithm_not_allowed');
    expect(await reason(esOnly, await sign(es))).toBe('accepted');
  });

  it('rejects an unknown kid and a key that is not in the JWKS', async () => {
    expect(await reason(verifier, await sign(stranger))).toBe('unknown_key');
    expect(await reason(verifier, await sign(stranger, { kid: 'nobody' }))).toBe('unknown_key');
  });

  it('rejects a token signed by another key under a known kid', async () => {
    expect(await reason(verifier, await sign(stranger, { kid: 'es-1' }))).toBe('bad_signature');
  });

  it('rejects tampered signatures and payloads', async () => {
    const token = await sign(es, { claims: { 'aip:tenants': ['acme'] } });
    const [h, p, s] = token.split('.') as [string, string, string];
    const flipped = `${s.slice(0, 10)}${s[10] === 'A' ? 'B' : 'A'}${s.slice(11)}`;
    expect(await reason(verifier, `${h}.${p}.${flipped}`)).toBe('bad_signature');
    const evilPayload = Buffer.from(JSON.stringify({ ...standardClaims(), 'aip:tenants': ['victim'] })).toString('base64url');
    expect(await reason(verifier, `${h}.${evilPayload}.${s}`)).toBe('bad_signature');
    expect(await reason(verifier, `${h}.${p}.`)).not.toBe('accepted');
  });

  it('requires sub and exp', async () => {
    expect(await reason(verifier, await sign(es, { sub: null }))).toBe('missing_claim');
    expect(await reason(verifier, await sign(es, { expiresIn: null }))).toBe('missing_claim');
  });

  it('rejects malformed and oversized tokens before any key lookup', async () => {
    for (const t of ['', 'abc', 'a.b', 'a.b.c.d', 'ey!.x.y', '..', `${'a'.repeat(10)}.${'b'.repeat(10)}.c`]) {
      expect(['malformed', 'algorithm_not_allowed']).toContain(await reason(verifier, t));
    }
    expect(await reason(verifier, `${'a'.repeat(MAX_TOKEN_LENGTH)}.b.c`)).toBe('too_long');
  });

  it('denies (not 401) a verified token whose claims cannot be mapped', async () => {
    expect(await reason(verifier, await sign(es, { claims: { 'aip:principal_kind': 'root' } }))).toBe(
      'denied:claim aip:principal_kind must be one of user, agent, service, application',
    );
    expect(await reason(verifier, await sign(es, { sub: 'auth0|abc' }))).toMatch(/^denied:/);
  });
});

describe('verifier configuration', () => {
  it('refuses none, unknown algorithms, and HMAC without allowHmac', () => {
    expect(() => checkAlgorithms(['none'], false)).toThrow(/not supported/);
    expect(() => checkAlgorithms(['none'], true)).toThrow(/not supported/);
    expect(() => checkAlgorithms(['HS256'], false)).toThrow(/allowHmac/);
    expect(() => checkAlgorithms([], false)).toThrow(/at least one/);
    expect(checkAlgorithms(['ES256', 'RS256'], false)).toEqual(['ES256', 'RS256']);
  });

  it('refuses an empty issuer or audience, a large clock tolerance, and a non-https remote JWKS', () => {
    expect(() => createTokenVerifier(config({ issuer: '' }))).toThrow();
    expect(() => createTokenVerifier(config({ audience: [] }))).toThrow();
    expect(() => createTokenVerifier(config({ clockToleranceSeconds: 3600 }))).toThrow();
    expect(() => createTokenVerifier(config({ keys: { kind: 'jwks_url', url: 'http://idp.example.com/jwks' } }))).toThrow(/https/);
  });

  it('accepts an http JWKS URL off loopback only with allowHttp (the local and localstack environments)', () => {
    const url = 'http://host.docker.internal:4011/.well-known/jwks.json';
    expect(() => createTokenVerifier(config({ keys: { kind: 'jwks_url', url, allowHttp: false } }))).toThrow(/https/);
    expect(() => createTokenVerifier(config({ keys: { kind: 'jwks_url', url, allowHttp: true } }))).not.toThrow();
    // allowHttp widens the scheme only: anything but http(s) is still refused.
    expect(() => createTokenVerifier(config({ keys: { kind: 'jwks_url', url: 'ftp://host.docker.internal/jwks', allowHttp: true } }))).toThrow(/https/);
  });
});

describe('remote JWKS (over loopback)', () => {
  let server: Awaited<ReturnType<typeof jwksServer>>;
  beforeAll(async () => {
    server = await jwksServer(jwks(es));
  });
  afterAll(async () => {
    await server.close();
  });

  it('fetches keys once, caches them, and rejects an unknown kid', async () => {
    const v = createTokenVerifier(config({ keys: { kind: 'jwks_url', url: server.url, cooldownMs: 60_000 } }));
    expect(await reason(v, await sign(es))).toBe('accepted');
    expect(await reason(v, await sign(es))).toBe('accepted');
    expect(server.hits()).toBe(1);
    expect(await reason(v, await sign(stranger))).toBe('unknown_key');
  });

  it('picks up a rotated key on an unknown kid once the cooldown has passed', async () => {
    const v = createTokenVerifier(config({ keys: { kind: 'jwks_url', url: server.url, cooldownMs: 0 } }));
    expect(await reason(v, await sign(es))).toBe('accepted');
    server.set(jwks(es, stranger));
    expect(await reason(v, await sign(stranger))).toBe('accepted');
    server.set(jwks(es));
  });

  it('reports an unreachable or failing key source as unavailable, not as a bad token', async () => {
    server.fail(500);
    const v = createTokenVerifier(config({ keys: { kind: 'jwks_url', url: server.url } }));
    expect(await reason(v, await sign(es))).toBe('unavailable');
    server.fail(undefined);
    const closed = createTokenVerifier(config({ keys: { kind: 'jwks_url', url: 'http://127.0.0.1:9/jwks.json', timeoutMs: 1000 } }));
    expect(await reason(closed, await sign(es))).toBe('unavailable');
  });
});
