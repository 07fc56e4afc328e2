/**
 * The local stack's development signing key: one ES256 key pair, generated on
 * first use and kept under `.local/dev-keys/` (git-ignored, file mode 0600),
 * so tokens minted by one `npm start` stay valid across restarts.
 *
 * FOR LOCAL DEVELOPMENT ONLY. Deployed stacks verify tokens against the
 * configured IdP's JWKS; this key is never part of any deployed configuration.
 */
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JSONWebKeySet, type JWK } from 'jose';
import type { TokenVerifierConfig } from '../../lib/auth/verifier.js';

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DEFAULT_DEV_KEYS_DIR = join(PROJECT_ROOT, '.local', 'dev-keys');
const PRIVATE_KEY_FILE = 'es256.private.jwk.json';

/** Issuer and audience of development tokens (and of the local stack's verifier). */
export const DEV_ISSUER = 'https://aip.local/dev';
export const DEV_AUDIENCE = 'aip-local';
export const DEV_ALGORITHM = 'ES256';

export interface DevKeys {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
  /** `{ keys: [publicJwk] }`: what the local stack serves at /.well-known/jwks.json. */
  readonly jwks: JSONWebKeySet;
}

function publicPart(jwk: JWK): JWK {
  const { kty, crv, x, y } = jwk;
  return { kty, crv, x, y, kid: jwk.kid, alg: DEV_ALGORITHM, use: 'sig' } as JWK;
}

async function fromPrivateJwk(jwk: JWK): Promise<DevKeys> {
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string' || typeof jwk.kid !== 'string') {
    throw new Error('dev key file does not hold an ES256 (P-256) private JWK with a kid');
  }
  const privateKey = (await importJWK(jwk, DEV_ALGORITHM)) as CryptoKey;
  const publicJwk = publicPart(jwk);
  return { kid: jwk.kid, privateKey, publicJwk, jwks: { keys: [publicJwk] } };
}

/** A fresh in-memory key pair (tests). */
export async function generateDevKeys(kid = `dev-${randomUUID()}`): Promise<DevKeys> {
  const { privateKey } = await generateKeyPair(DEV_ALGORITHM, { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: DEV_ALGORITHM };
  return fromPrivateJwk(jwk);
}

/** Loads the key pair from `dir`, creating it on first use. */
export async function loadDevKeys(dir: string = DEFAULT_DEV_KEYS_DIR): Promise<DevKeys> {
  const file = join(dir, PRIVATE_KEY_FILE);
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (text !== undefined) return fromPrivateJwk(JSON.parse(text) as JWK);

  const { privateKey } = await generateKeyPair(DEV_ALGORITHM, { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: `dev-${randomUUID()}`, alg: DEV_ALGORITHM };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  try {
    // `wx`: two processes starting together must not overwrite each other's key.
    await writeFile(file, `${JSON.stringify(jwk)}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return fromPrivateJwk(JSON.parse(await readFile(file, 'utf8')) as JWK);
  }
  await chmod(file, 0o600);
  return fromPrivateJwk(jwk);
}

/** Verifier configuration that accepts development tokens (local JWKS, no network). */
export function devVerifierConfig(keys: DevKeys, overrides: Partial<TokenVerifierConfig> = {}): TokenVerifierConfig {
  return {
    issuer: DEV_ISSUER,
    audience: DEV_AUDIENCE,
    algorithms: [DEV_ALGORITHM],
    keys: { kind: 'jwks', jwks: keys.jwks },
    claims: { preset: 'generic' },
    ...overrides,
  };
}
