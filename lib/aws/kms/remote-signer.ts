/**
 * A RemoteSigner (lib/runtime/remote/jws.ts) over a KMS asymmetric key
 * (ECC_NIST_P256, SIGN_VERIFY): the private key never leaves KMS; the
 * function holding it may only `kms:Sign` with it. The public key comes from
 * `kms:GetPublicKey` (the peer side needs only that permission, never Sign),
 * read once per container.
 *
 * KMS answers an ASN.1 DER ECDSA signature; JWS ES256 wants the raw 64-byte
 * r||s (RFC 7518 §3.4): converted here.
 */
import { createHash, createPublicKey } from 'node:crypto';
import { GetPublicKeyCommand, KMSClient, SignCommand } from '@aws-sdk/client-kms';
import type { JWK } from 'jose';
import { keyIdOf, publicJwkOf, type PublicJwk, type RemoteSigner } from '../../runtime/remote/jws.js';

export function createKmsClient(options: { readonly endpoint?: string; readonly region?: string } = {}): KMSClient {
  return new KMSClient({
    ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
    ...(options.region !== undefined ? { region: options.region } : {}),
  });
}

/** The public JWK of a KMS key (kms:GetPublicKey). */
export async function kmsPublicJwk(client: KMSClient, keyId: string): Promise<PublicJwk> {
  const out = await client.send(new GetPublicKeyCommand({ KeyId: keyId }));
  if (out.PublicKey === undefined || out.KeySpec !== 'ECC_NIST_P256') throw new Error(`KMS key ${keyId} is not an ECC_NIST_P256 signing key`);
  return publicJwkOf(createPublicKey({ key: Buffer.from(out.PublicKey), format: 'der', type: 'spki' }).export({ format: 'jwk' }) as JWK);
}

/** DER `SEQUENCE { INTEGER r, INTEGER s }` → 64-byte r||s. */
export function derToRawEcdsa(der: Uint8Array, size = 32): Uint8Array {
  const b = Buffer.from(der);
  let i = 0;
  const take = (): number => b[i++] as number;
  const length = (): number => {
    let len = take();
    if (len & 0x80) {
      const n = len & 0x7f;
      len = 0;
      for (let k = 0; k < n; k++) len = (len << 8) | take();
    }
    return len;
  };
  if (take() !== 0x30) throw new Error('not an ECDSA DER signature');
  length();
  const int = (): Buffer => {
    if (take() !== 0x02) throw new Error('not an ECDSA DER signature');
    const len = length();
    let v = b.subarray(i, i + len);
    i += len;
    while (v.length > size && v[0] === 0) v = v.subarray(1);
    if (v.length > size) throw new Error('ECDSA integer too long');
    return Buffer.concat([Buffer.alloc(size - v.length), v]);
  };
  const r = int();
  const s = int();
  return new Uint8Array(Buffer.concat([r, s]));
}

/**
 * A signer over a KMS key: `kms:Sign` (ECDSA_SHA_256) per message. The SHA-256
 * digest is computed here and sent as `MessageType: DIGEST` (KMS takes at most
 * 4 KiB of RAW message; a request carries the action's input).
 */
export async function kmsSigner(client: KMSClient, keyId: string): Promise<RemoteSigner> {
  const public_jwk = await kmsPublicJwk(client, keyId);
  const kid = await keyIdOf(public_jwk);
  return Object.freeze({
    kid,
    public_jwk,
    async sign(data: Uint8Array): Promise<Uint8Array> {
      const digest = createHash('sha256').update(data).digest();
      const out = await client.send(new SignCommand({ KeyId: keyId, Message: digest, MessageType: 'DIGEST', SigningAlgorithm: 'ECDSA_SHA_256' }));
      if (out.Signature === undefined) throw new Error('KMS returned no signature');
      return derToRawEcdsa(out.Signature);
    },
  });
}
