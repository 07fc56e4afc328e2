import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as z from '../common/zod.js';
import { AipError } from '../errors/aip-error.js';
import { IdSchema } from '../protocol/index.js';
import type { CredentialProvider, CredentialResolutionScope } from '../ports/credentials.js';
import { ConnectorFailure } from '../failure.js';
import type { CredentialHandle } from './handle.js';
import { CredentialReferenceMap, credentialsUnavailable, type CredentialReferenceKey } from './references.js';
import { ConnectorSecret } from './secret.js';

/**
 * Where a local secret lives: an environment variable, or a file whose
 * whole content is the secret (one trailing newline is ignored), in the
 * style of mounted secret files.
 */
export type LocalSecretLocation = { readonly env: string } | { readonly file: string };

export type LocalCredentialReference = CredentialReferenceKey & LocalSecretLocation;

/**
 * The JSON config file format of EnvCredentialProvider.fromConfigFile. It names locations, never values.
 * Built on first use (deployed functions never read a local credential file).
 */
export const localCredentialConfigSchema = z.lazySchema(() => {
  const LocalReferenceSchema = z.union([
    z.strictObject({
      connector_id: IdSchema,
      handle: IdSchema,
      tenant_id: IdSchema,
      external_account_id: z.optional(IdSchema),
      env: z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/)),
    }),
    z.strictObject({
      connector_id: IdSchema,
      handle: IdSchema,
      tenant_id: IdSchema,
      external_account_id: z.optional(IdSchema),
      file: z.string().check(z.minLength(1)),
    }),
  ]);
  return z.strictObject({ references: z.array(LocalReferenceSchema).check(z.maxLength(10_000)) });
});

export interface EnvCredentialProviderOptions {
  readonly connector_id: string;
  readonly references: readonly LocalCredentialReference[];
  /** Defaults to process.env (read at resolve time). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const SOURCE = 'credentials:local';

/**
 * Local-run credential provider: resolves a handle, for the verified tenant
 * and account, to an environment variable or a file named by the reference
 * map. A missing variable, missing file or empty value is the typed
 * `connector.credentials_unavailable` failure; nothing falls back to
 * caller-supplied material.
 */
export class EnvCredentialProvider implements CredentialProvider {
  readonly #map: CredentialReferenceMap<LocalCredentialReference>;
  readonly #env: Readonly<Record<string, string | undefined>> | undefined;

  constructor(options: EnvCredentialProviderOptions) {
    this.#map = new CredentialReferenceMap(options.connector_id, options.references);
    this.#env = options.env;
  }

  /** Loads the reference map from a JSON file `{"references": [...]}`. */
  static fromConfigFile(path: string, options: { connector_id: string; env?: Readonly<Record<string, string | undefined>> }): EnvCredentialProvider {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch {
      throw new AipError('connector.definition_invalid', 'credential config file is missing or not JSON');
    }
    const config = localCredentialConfigSchema().safeParse(parsed);
    if (!config.success) throw new AipError('connector.definition_invalid', 'credential config file does not match the schema');
    return new EnvCredentialProvider({ connector_id: options.connector_id, references: config.data.references, ...(options.env ? { env: options.env } : {}) });
  }

  async resolve(handle: CredentialHandle, scope: CredentialResolutionScope): Promise<ConnectorSecret> {
    const row = this.#map.require(handle, scope, SOURCE);
    const failureContext = { operation: scope.operation ?? 'invocation', source: SOURCE } as const;
    if ('env' in row) {
      const value = (this.#env ?? process.env)[row.env];
      if (value === undefined || value.length === 0) throw credentialsUnavailable(handle, scope, SOURCE, 'empty_material');
      return ConnectorSecret.fromUtf8(value, failureContext);
    }
    let raw: Buffer;
    try {
      raw = await readFile(row.file);
    } catch {
      throw credentialsUnavailable(handle, scope, SOURCE, 'unreadable_file');
    }
    let end = raw.byteLength;
    if (end > 0 && raw[end - 1] === 0x0a) end -= 1;
    if (end > 0 && raw[end - 1] === 0x0d) end -= 1;
    const bytes = new Uint8Array(end);
    bytes.set(raw.subarray(0, end));
    raw.fill(0);
    if (bytes.byteLength === 0) throw credentialsUnavailable(handle, scope, SOURCE, 'empty_material');
    try {
      return ConnectorSecret.fromBytes(bytes, failureContext);
    } catch (err) {
      bytes.fill(0);
      if (err instanceof ConnectorFailure) throw err;
      throw credentialsUnavailable(handle, scope, SOURCE, 'unreadable_file');
    }
  }
}
