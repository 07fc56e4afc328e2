/**
 * Configuration of the remote placement (JSON in environment variables):
 *
 * - `AIP_REMOTE_CONNECTORS` (the runtime's functions: workers, the
 *   reconcile consumer, the checkpoint receiver): which enabled connectors
 *   run on which host, the host's public key (the pinned peer), the
 *   runtime's signing key and the checkpoint receiver's URL.
 * - `AIP_CONNECTOR_HOST_CONFIG` (a connector host): its endpoint, instance
 *   and replica, its signing key, the runtime keys it trusts, the connectors
 *   it runs and their credential references (resolved inside the host).
 *
 * A key is `{source: "kms", keyId}` (a KMS ECC_NIST_P256 SIGN_VERIFY key:
 * deployments) or an inline JWK (local stack and tests only: refused outside
 * the `local` and `test` environments by the compositions).
 */
import * as z from '../../../packages/connector-sdk/src/common/zod.js';
import { IdSchema } from '../../../packages/connector-sdk/src/protocol/index.js';

/**
 * Largest per-connector concurrency limit: a host with a shared slot store
 * (lib/aws/dynamo/remote-capacity-gate.ts) tries up to this many slots
 * before it refuses.
 */
export const MAX_CONCURRENT_ATTEMPTS_LIMIT = 100;

/**
 * The schemas, built on first use: most functions never read a remote
 * placement (the variable is unset), and building them at import cost every
 * cold start about a hundred zod schemas (docs/bench/analysis.md).
 */
export const remoteConfigSchemas = z.lazySchema(() => {
  const Jwk = z.looseObject({
    kty: z.literal('EC'),
    crv: z.literal('P-256'),
    x: z.string().check(z.minLength(1)),
    y: z.string().check(z.minLength(1)),
    d: z.optional(z.string().check(z.minLength(1))),
  });

  const KeySourceSchema = z.discriminatedUnion('source', [
    z.strictObject({ source: z.literal('kms'), keyId: z.string().check(z.minLength(1), z.maxLength(2048)) }),
    z.strictObject({ source: z.literal('inline'), jwk: Jwk }),
  ]);

  const HttpUrl = z.pipe(
    z.url({ protocol: /^https?$/ }),
    z.transform((u) => u.replace(/\/+$/, '')),
  );

  const RemotePlacementSchema = z.strictObject({
    /** The runtime's signing key (requests, checkpoint acknowledgements). */
    signing: KeySourceSchema,
    /** The checkpoint receiver's URL (absent: transactional capabilities cannot checkpoint remotely). */
    callbackUrl: z.optional(HttpUrl),
    connectors: z
      .array(
        z.strictObject({
          id: IdSchema,
          /** The host's public base URL, pinned by routes. */
          endpoint: HttpUrl,
          instanceId: IdSchema,
          replica: IdSchema,
          /** The host's key (public half used): the pinned peer. */
          hostKey: KeySourceSchema,
          credentialRevision: z._default(z.string().check(z.minLength(1), z.maxLength(256)), '0'),
        }),
      )
      .check(z.minLength(1)),
  });

  const CredentialRowSchema = z.strictObject({
    handle: z.string().check(z.minLength(1), z.maxLength(256)),
    tenantId: IdSchema,
    externalAccountId: z.optional(IdSchema),
    secret: z.string().check(z.minLength(1), z.maxLength(2048)),
    versionStage: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
    jsonField: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
  });

  const ConnectorHostConfigSchema = z.strictObject({
    envName: z.string().check(z.minLength(1), z.maxLength(32)),
    /** The public base URL routes pin; `function-url`: the Lambda Function URL the request arrived on. */
    endpoint: z.union([HttpUrl, z.literal('function-url')]),
    instanceId: IdSchema,
    replica: IdSchema,
    signing: KeySourceSchema,
    runtimeKeys: z.array(KeySourceSchema).check(z.minLength(1), z.maxLength(10)),
    connectors: z
      .array(
        z.strictObject({
          id: IdSchema,
          baseUrl: z.optional(HttpUrl),
          credentialRevision: z._default(z.string().check(z.minLength(1), z.maxLength(256)), '0'),
          /** Secrets Manager credential rows (deployments); local hosts take AIP_LOCAL_CREDENTIALS-style references instead. */
          credentials: z._default(z.array(CredentialRowSchema).check(z.maxLength(1000)), []),
          /** Most attempts of this connector the host runs at once (the host's admission check; absent: no limit). */
          maxConcurrentAttempts: z.optional(z.int().check(z.gte(1), z.lte(MAX_CONCURRENT_ATTEMPTS_LIMIT))),
        }),
      )
      .check(z.minLength(1)),
    /** Checkpoint receiver URLs the host may call (absent: the one a verified request names). */
    callbackUrls: z.optional(z.array(HttpUrl).check(z.maxLength(10))),
    /** DynamoDB table of the host's nonces (absent: process memory, a single long-lived process). */
    nonceTable: z.optional(z.string().check(z.minLength(3), z.maxLength(255))),
  });
  return { KeySourceSchema, RemotePlacementSchema, CredentialRowSchema, ConnectorHostConfigSchema };
});
type Schemas = ReturnType<typeof remoteConfigSchemas>;
export type KeySource = z.infer<Schemas['KeySourceSchema']>;
export type RemotePlacement = z.infer<Schemas['RemotePlacementSchema']>;
export type ConnectorHostConfig = z.infer<Schemas['ConnectorHostConfigSchema']>;

export const REMOTE_ENV = {
  placement: 'AIP_REMOTE_CONNECTORS',
  hostConfig: 'AIP_CONNECTOR_HOST_CONFIG',
} as const;

/** Inline keys are for the local and test environments only. */
export function inlineKeysAllowed(envName: string): boolean {
  return envName === 'local' || envName === 'test';
}

export function keySources(p: RemotePlacement): KeySource[] {
  return [p.signing, ...p.connectors.map((c) => c.hostKey)];
}
