/**
 * One execution environment's cache of Secrets Manager secret values, on
 * Powertools Parameters (`SecretsProvider`, whose in-memory store expires a
 * value `maxAge` seconds after it was fetched).
 *
 * What it adds to the Powertools provider:
 * - one `SecretsProvider` per version stage: the Powertools cache key is the
 *   secret ID (and transform) only, so AWSCURRENT and AWSPENDING of one
 *   secret would otherwise share an entry;
 * - concurrent reads of one secret share one request (a cold environment
 *   handling a batch fetches each secret once, not once per message);
 * - a forced refresh (after the provider refused the material with 401 or
 *   403) at most once per `minRefreshIntervalMs` per secret, so a credential
 *   that stays refused costs a bounded number of requests, and concurrent
 *   refusals of the same old material share one refetch.
 *
 * A rotated secret therefore takes effect within `maxAge` seconds, and at the
 * first refusal after the rotation (lib/connectors/http/connector.ts).
 *
 * The values stay in memory for their age: strings cannot be zeroed, and the
 * SDK's response parsing makes one anyway. They never leave this object but
 * as the ConnectorSecret copies the credential provider builds per use.
 *
 * Powertools Parameters (and, through it, the Secrets Manager client) is
 * imported on the first fetch, and the client may be given as a loader: a
 * function that composes the connectors but never resolves a credential (a
 * submit, the capabilities listing) loads neither (docs/bench/analysis.md,
 * "Issue 22: the routes that load the connectors").
 */
import type { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/** How long a secret value is reused in one execution environment, by default (seconds). */
export const DEFAULT_CREDENTIAL_CACHE_SECONDS = 300;

/** Forced refreshes of one secret are at least this far apart (ms). */
export const DEFAULT_MIN_REFRESH_INTERVAL_MS = 1_000;

export interface SecretValueCacheOptions {
  /** The client, or a loader called once, on the first fetch. */
  readonly client: SecretsManagerClient | (() => Promise<SecretsManagerClient>);
  /** @default DEFAULT_MIN_REFRESH_INTERVAL_MS */
  readonly minRefreshIntervalMs?: number;
}

export interface SecretLocation {
  readonly secret_id: string;
  readonly version_stage?: string;
}

/** The secret value as Secrets Manager returned it: SecretString, else SecretBinary; undefined when neither is set. */
export type SecretValue = string | Uint8Array | undefined;

export class SecretValueCache {
  readonly #client: SecretsManagerClient | (() => Promise<SecretsManagerClient>);
  readonly #minRefreshMs: number;
  readonly #providers = new Map<string, Promise<SecretsProvider>>();
  readonly #inflight = new Map<string, { readonly value: Promise<SecretValue>; readonly forced: boolean }>();
  readonly #forcedAt = new Map<string, number>();

  constructor(options: SecretValueCacheOptions) {
    this.#client = options.client;
    this.#minRefreshMs = options.minRefreshIntervalMs ?? DEFAULT_MIN_REFRESH_INTERVAL_MS;
  }

  /**
   * The value, from the cache while it is younger than `maxAgeSeconds` (an
   * integer; 0 fetches on every call), else from Secrets Manager. `force`
   * fetches even a fresh value, unless this secret was force-fetched less
   * than the minimum refresh interval ago. Errors are Powertools'
   * GetParameterError, with the SDK error as `cause`; nothing is cached then.
   */
  get(location: SecretLocation, maxAgeSeconds: number, force = false): Promise<SecretValue> {
    const stage = location.version_stage ?? '';
    const key = JSON.stringify([location.secret_id, stage]);
    const running = this.#inflight.get(key);
    // A request under way is as fresh as a new one, unless this call forces and that one may be a cache hit.
    if (running !== undefined && (running.forced || !force)) return running.value;
    let forceFetch = false;
    if (force) {
      const now = Date.now();
      const last = this.#forcedAt.get(key);
      if (last === undefined || now - last >= this.#minRefreshMs) {
        forceFetch = true;
        this.#forcedAt.set(key, now);
      }
    }
    const entry = {
      forced: forceFetch,
      value: this.#provider(stage)
        .then((provider) =>
          provider.get(location.secret_id, {
            maxAge: maxAgeSeconds,
            forceFetch,
            ...(location.version_stage !== undefined ? { sdkOptions: { VersionStage: location.version_stage } } : {}),
          }),
        )
        .finally(() => {
          if (this.#inflight.get(key) === entry) this.#inflight.delete(key);
        }) as Promise<SecretValue>,
    };
    this.#inflight.set(key, entry);
    return entry.value;
  }

  #provider(stage: string): Promise<SecretsProvider> {
    let provider = this.#providers.get(stage);
    if (provider === undefined) {
      const client = this.#client;
      const created = Promise.all([import('@aws-lambda-powertools/parameters/secrets'), typeof client === 'function' ? client() : client]).then(
        ([{ SecretsProvider }, awsSdkV3Client]) => new SecretsProvider({ awsSdkV3Client }),
      );
      provider = created;
      this.#providers.set(stage, created);
      // A loader that failed (the client's import) is tried again by the next fetch.
      created.catch(() => {
        if (this.#providers.get(stage) === created) this.#providers.delete(stage);
      });
    }
    return provider;
  }
}
