import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { DEV_AUDIENCE, DEV_ISSUER, devVerifierConfig, generateDevKeys, loadDevKeys } from '../../../dev/auth/keys.js';
import { DEFAULT_DEV_SCOPES, mintToken, ttlSeconds } from '../../../dev/auth/mint.js';
import { createTokenVerifier, TokenRejectedError } from '../../../lib/auth/verifier.js';

const ROOT = resolve(import.meta.dirname, '../../..');

describe('dev signing key', () => {
  it('is created once under the key directory (mode 0600) and reloaded with the same kid', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'aip-dev-keys-')), 'nested');
    const first = await loadDevKeys(dir);
    const file = join(dir, 'es256.private.jwk.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const second = await loadDevKeys(dir);
    expect(second.kid).toBe(first.kid);
    expect(second.publicJwk).toEqual(first.publicJwk);
    expect(first.publicJwk).not.toHaveProperty('d');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toHaveProperty('d');
    const token = await mintToken({ sub: 'alice', tenants: ['acme'] }, first);
    expect((await createTokenVerifier(devVerifierConfig(second)).verify(token)).principal.id).toBe('alice');
  });

  it('two concurrent first loads agree on one key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aip-dev-keys-'));
    const [a, b] = await Promise.all([loadDevKeys(dir), loadDevKeys(dir)]);
    expect(a.kid).toBe(b.kid);
  });
});

describe('mintToken', () => {
  it('mints a token the dev verifier maps to the requested identity', async () => {
    const keys = await generateDevKeys();
    // The lifetime is 5 minutes from the moment of minting, which lies between these two (second precision, as in the token).
    const before = Math.floor(Date.now() / 1000) * 1000;
    const token = await mintToken({ sub: 'bot-7', kind: 'agent', tenants: ['acme', 'globex'], scopes: ['aip:operator'], ttl: '5m' }, keys);
    const after = Math.ceil(Date.now() / 1000) * 1000;
    const id = await createTokenVerifier(devVerifierConfig(keys)).verify(token);
    expect(id).toMatchObject({ principal: { id: 'bot-7', kind: 'agent' }, tenants: ['acme', 'globex'], scopes: ['aip:operator'], issuer: DEV_ISSUER });
    const exp = Date.parse(id.expires_at ?? '');
    expect(exp).toBeGreaterThanOrEqual(before + 300_000);
    expect(exp).toBeLessThanOrEqual(after + 300_000);
  });

  it('defaults to read+write scopes and the dev audience; can mint expired tokens for tests', async () => {
    const keys = await generateDevKeys();
    const v = createTokenVerifier(devVerifierConfig(keys));
    expect((await v.verify(await mintToken({ sub: 'a' }, keys))).scopes).toEqual([...DEFAULT_DEV_SCOPES]);
    const expired = await mintToken({ sub: 'a', ttl: 60, issuedAt: Math.floor(Date.now() / 1000) - 3600 }, keys);
    await expect(v.verify(expired)).rejects.toBeInstanceOf(TokenRejectedError);
    const otherAudience = await mintToken({ sub: 'a', audience: 'elsewhere' }, keys);
    await expect(v.verify(otherAudience)).rejects.toBeInstanceOf(TokenRejectedError);
    expect(DEV_AUDIENCE).toBe('aip-local');
  });

  it('parses time spans', () => {
    expect(ttlSeconds(undefined)).toBe(3600);
    expect(ttlSeconds('90')).toBe(90);
    expect(ttlSeconds('15m')).toBe(900);
    expect(ttlSeconds('2h')).toBe(7200);
    expect(ttlSeconds('1d')).toBe(86_400);
    expect(() => ttlSeconds('0')).toThrow();
    expect(() => ttlSeconds('1w')).toThrow();
    expect(() => ttlSeconds('30d')).toThrow();
  });
});

describe('mint-token CLI', () => {
  it('prints a token for the given principal, tenant and scope', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aip-dev-keys-'));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'dev/auth/mint-token.ts', '--sub', 'alice', '--tenant', 'acme', '--scope', 'aip:actions:write', '--keys-dir', dir],
      { cwd: ROOT },
    );
    const token = stdout.trim();
    const id = await createTokenVerifier(devVerifierConfig(await loadDevKeys(dir))).verify(token);
    expect(id).toMatchObject({ principal: { id: 'alice', kind: 'user' }, tenants: ['acme'], scopes: ['aip:actions:write'] });
  });

  it('refuses to run without --sub', async () => {
    await expect(promisify(execFile)(process.execPath, ['--import', 'tsx', 'dev/auth/mint-token.ts', '--tenant', 'acme'], { cwd: ROOT })).rejects.toMatchObject(
      { code: 2 },
    );
  });
});
