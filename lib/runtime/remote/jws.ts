/**
 * Signing for the remote connector placement: JWS compact serialization
 * (RFC 7515) with ES256 (ECDSA P-256 / SHA-256, RFC 7518 §3.4) over the
 * whole message body. Why JWS and not HTTP Message Signatures: see
 * README.md next to this file ("Signatures").
 *
 * - A signer holds the private half (a local JWK, or a KMS asymmetric key:
 *   lib/aws/kms/remote-signer.ts); it only ever signs bytes.
 * - A key's ID (`kid`) is its RFC 7638 JWK thumbprint (SHA-256); its DID is
 *   `did:jwk:<base64url(canonical public JWK)>`. The route pins the host's
 *   `kid` as `peer_identity` and its DID as `peer_did`.
 * - Verification accepts exactly `alg: ES256`, the expected `typ` and a `kid`
 *   from the keyring it is given (the pinned peer, never "any known key").
 *
 * Every refusal is an AipError `connector.remote_signature_invalid` whose
 * details name the reason only (never the message or a key).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { canonicalJson } from '../../../packages/connector-sdk/src/protocol/index.js';

export const REMOTE_ALG = 'ES256' as const;

/** The public half of an EC P-256 key, as a JWK (only the public members). */
export interface PublicJwk {
  readonly kty: 'EC';
  readonly crv: 'P-256';
  readonly x: string;
  readonly y: string;
}

/** Signs bytes with one private key. `sign` returns the raw 64-byte r||s signature (JWS form). */
export interface RemoteSigner {
  /** The RFC 7638 thumbprint of the public key. */
  readonly kid: string;
  readonly public_jwk: PublicJwk;
  sign(data: Uint8Array): Promise<Uint8Array>;
}

/** A verification key. */
export interface RemoteKey {
  readonly kid: string;
  readonly did: string;
  readonly public_jwk: PublicJwk;
  readonly key: KeyObject;
}

const B64URL = /^[A-Za-z0-9_-]*$/;

export function b64url(data: Uint8Array | string): string {
  return Buffer.from(typeof data === 'string' ? Buffer.from(data, 'utf8') : data).toString('base64url');
}

/** sha256 of the message, base64url (the request digest answers are bound to). */
export function messageDigest(message: string): string {
  return createHash('sha256').update(message, 'utf8').digest('base64url');
}

export function publicJwkOf(jwk: JWK | PublicJwk): PublicJwk {
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.x !== 'string' || typeof jwk.y !== 'string') {
    throw new AipError('connector.remote_signature_invalid', 'remote keys are EC P-256 JWKs', { details: { reason: 'key_type' } });
  }
  return { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
}

/** The key's ID: its RFC 7638 thumbprint. */
export async function keyIdOf(jwk: JWK | PublicJwk): Promise<string> {
  return calculateJwkThumbprint(publicJwkOf(jwk) as JWK, 'sha256');
}

/** `did:jwk` of the public key (canonical JSON of its public members). */
export function didOf(jwk: JWK | PublicJwk): string {
  return `did:jwk:${b64url(canonicalJson(publicJwkOf(jwk)))}`;
}

export async function remoteKeyOf(jwk: JWK | PublicJwk): Promise<RemoteKey> {
  const public_jwk = publicJwkOf(jwk);
  return { kid: await keyIdOf(public_jwk), did: didOf(public_jwk), public_jwk, key: createPublicKey({ key: public_jwk as JWK, format: 'jwk' }) };
}

/** A set of verification keys by kid. */
export class RemoteKeyring {
  readonly #keys: ReadonlyMap<string, RemoteKey>;
  constructor(keys: readonly RemoteKey[]) {
    this.#keys = new Map(keys.map((k) => [k.kid, k]));
  }
  static async of(jwks: readonly (JWK | PublicJwk)[]): Promise<RemoteKeyring> {
    return new RemoteKeyring(await Promise.all(jwks.map((j) => remoteKeyOf(j))));
  }
  get(kid: string): RemoteKey | undefined {
    return this.#keys.get(kid);
  }
  kids(): string[] {
    return [...this.#keys.keys()].sort();
  }
}

/** A signer over a private P-256 JWK held in memory (local stack, tests, any host that keeps its key in a file). */
export async function localSigner(privateJwk: JWK): Promise<RemoteSigner> {
  if (typeof privateJwk.d !== 'string')
    throw new AipError('connector.remote_signature_invalid', 'a local signer needs a private JWK', { details: { reason: 'key_type' } });
  const key = createPrivateKey({ key: privateJwk, format: 'jwk' });
  const public_jwk = publicJwkOf(privateJwk);
  const kid = await keyIdOf(public_jwk);
  return Object.freeze({
    kid,
    public_jwk,
    sign: async (data: Uint8Array) => new Uint8Array(nodeSign('sha256', data, { key, dsaEncoding: 'ieee-p1363' })),
  });
}

/** A fresh P-256 key pair as JWKs (the private one includes `d`). */
export function generateRemoteKeyPair(): { private_jwk: JWK; public_jwk: PublicJwk } {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const private_jwk = privateKey.export({ format: 'jwk' }) as JWK;
  return { private_jwk, public_jwk: publicJwkOf(private_jwk) };
}

/** `BASE64URL(header).BASE64URL(payload).BASE64URL(signature)` with `{alg: ES256, kid, typ}`. */
export async function signCompact(signer: RemoteSigner, typ: string, payload: unknown): Promise<string> {
  const header = b64url(JSON.stringify({ alg: REMOTE_ALG, kid: signer.kid, typ }));
  const body = b64url(JSON.stringify(payload));
  const input = `${header}.${body}`;
  const signature = await signer.sign(Buffer.from(input, 'ascii'));
  return `${input}.${b64url(signature)}`;
}

export interface VerifiedMessage {
  readonly kid: string;
  readonly payload: unknown;
  /** sha256 of the compact message (what answers bind to). */
  readonly digest: string;
}

function refuse(reason: string): AipError {
  return new AipError('connector.remote_signature_invalid', undefined, { details: { reason } });
}

/**
 * Verifies a compact JWS: three base64url parts, a header of exactly
 * `{alg: ES256, kid, typ}` with the expected `typ`, a `kid` in `keyring`, a
 * valid ES256 signature and a JSON payload.
 */
export function verifyCompact(message: unknown, typ: string, keyring: RemoteKeyring): VerifiedMessage {
  if (typeof message !== 'string' || message.length === 0) throw refuse('unsigned');
  const parts = message.trim().split('.');
  if (parts.length !== 3 || parts.some((p) => !B64URL.test(p)) || (parts[2] as string).length === 0) throw refuse('malformed');
  const [h, p, s] = parts as [string, string, string];
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    throw refuse('malformed');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw refuse('malformed');
  const extra = Object.keys(header).filter((k) => !['alg', 'kid', 'typ'].includes(k));
  if (header.alg !== REMOTE_ALG || extra.length > 0) throw refuse('algorithm');
  if (header.typ !== typ) throw refuse('type');
  if (typeof header.kid !== 'string') throw refuse('unknown_key');
  const key = keyring.get(header.kid);
  if (key === undefined) throw refuse('unknown_key');
  const signature = Buffer.from(s, 'base64url');
  if (signature.length !== 64 || !nodeVerify('sha256', Buffer.from(`${h}.${p}`, 'ascii'), { key: key.key, dsaEncoding: 'ieee-p1363' }, signature)) {
    throw refuse('signature');
  }
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
  } catch {
    throw refuse('malformed');
  }
  return { kid: header.kid, payload, digest: messageDigest(message.trim()) };
}
