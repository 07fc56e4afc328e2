/** Keys and token builders for the auth tests (ES256 and RS256, real signatures). */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { base64url, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JSONWebKeySet, type JWK, type JWTPayload } from 'jose';

export const ISSUER = 'https://issuer.test/';
export const AUDIENCE = 'aip-api';

export interface TestKey {
  kid: string;
  alg: 'ES256' | 'RS256';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function testKey(alg: 'ES256' | 'RS256', kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

export function jwks(...keys: TestKey[]): JSONWebKeySet {
  return { keys: keys.map((k) => k.publicJwk) };
}

export interface SignOptions {
  claims?: JWTPayload;
  issuer?: string | null;
  audience?: string | string[] | null;
  sub?: string | null;
  /** Seconds from now; null: no exp. */
  expiresIn?: number | null;
  notBeforeIn?: number;
  kid?: string;
}

export async function sign(key: TestKey, options: SignOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ ...options.claims }).setProtectedHeader({ alg: key.alg, kid: options.kid ?? key.kid, typ: 'JWT' }).setIssuedAt(now);
  if (options.issuer !== null) jwt.setIssuer(options.issuer ?? ISSUER);
  if (options.audience !== null) jwt.setAudience(options.audience ?? AUDIENCE);
  if (options.sub !== null) jwt.setSubject(options.sub ?? 'alice');
  if (options.expiresIn !== null) jwt.setExpirationTime(now + (options.expiresIn ?? 600));
  if (options.notBeforeIn !== undefined) jwt.setNotBefore(now + options.notBeforeIn);
  return jwt.sign(key.privateKey);
}

/** An unsecured JWT (`alg: none`), built by hand. */
export function unsecuredToken(payload: JWTPayload, header: Record<string, unknown> = { alg: 'none', typ: 'JWT' }, signature = ''): string {
  const enc = (v: unknown) => base64url.encode(new TextEncoder().encode(JSON.stringify(v)));
  return `${enc(header)}.${enc(payload)}.${signature}`;
}

export function standardClaims(extra: JWTPayload = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return { iss: ISSUER, aud: AUDIENCE, sub: 'alice', iat: now, exp: now + 600, ...extra };
}

/** A JWKS endpoint on loopback; `status` lets a test make it fail. */
export async function jwksServer(
  initial: JSONWebKeySet,
): Promise<{ url: string; set(keys: JSONWebKeySet): void; fail(status: number | undefined): void; hits(): number; close(): Promise<void> }> {
  let current = initial;
  let failStatus: number | undefined;
  let hits = 0;
  const server: Server = createServer((_req, res) => {
    hits += 1;
    if (failStatus !== undefined) {
      res.writeHead(failStatus).end('nope');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(current));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    set: (k) => {
      current = k;
    },
    fail: (s) => {
      failStatus = s;
    },
    hits: () => hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
