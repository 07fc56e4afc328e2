/**
 * Key sources of the remote placement (lib/runtime/remote/config.ts) to
 * signers and verification keys: a KMS key (deployments: kms:Sign for the
 * own key, kms:GetPublicKey for the peer's) or an inline JWK (local, test).
 */
import type { KMSClient } from '@aws-sdk/client-kms';
import type { JWK } from 'jose';
import { localSigner, remoteKeyOf, type RemoteKey, type RemoteSigner } from '../../lib/runtime/remote/jws.js';
import { inlineKeysAllowed, type KeySource } from '../../lib/runtime/remote/config.js';
import { createKmsClient, kmsPublicJwk, kmsSigner } from '../../lib/aws/kms/remote-signer.js';

export class KeyResolver {
  readonly #envName: string;
  #kms: KMSClient | undefined;
  readonly #kmsFactory: () => KMSClient;
  constructor(envName: string, kms?: () => KMSClient) {
    this.#envName = envName;
    this.#kmsFactory = kms ?? (() => createKmsClient());
  }
  #client(): KMSClient {
    if (this.#kms === undefined) this.#kms = this.#kmsFactory();
    return this.#kms;
  }
  #inline(source: Extract<KeySource, { source: 'inline' }>, what: string): JWK {
    if (!inlineKeysAllowed(this.#envName)) throw new Error(`${what}: inline keys are for the local and test environments only; use a KMS key`);
    return source.jwk as JWK;
  }
  async signer(source: KeySource, what: string): Promise<RemoteSigner> {
    if (source.source === 'kms') return kmsSigner(this.#client(), source.keyId);
    const jwk = this.#inline(source, what);
    if (typeof jwk.d !== 'string') throw new Error(`${what}: a signing key needs the private JWK`);
    return localSigner(jwk);
  }
  async publicKey(source: KeySource, what: string): Promise<RemoteKey> {
    if (source.source === 'kms') return remoteKeyOf(await kmsPublicJwk(this.#client(), source.keyId));
    const { d: _d, ...pub } = this.#inline(source, what);
    return remoteKeyOf(pub);
  }
  destroy(): void {
    this.#kms?.destroy();
  }
}
