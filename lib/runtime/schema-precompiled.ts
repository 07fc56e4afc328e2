/**
 * The capability registry's validators, compiled at bundle time.
 *
 * The deployed functions do not compile JSON Schemas with ajv when they start:
 * the bundling step (infra/bundling.ts) runs the registry's own compilation
 * for the connectors the deployment enables, with ajv's standalone code
 * generation on (./schema-precompile.ts), and bundles the result as the
 * module functions/shared/precompiled-registry.ts stands for. That module
 * carries, per connector: its manifest and implementation-support records
 * (so the registry is built without the connector's code), the manifest hash,
 * the registration record (the admission report and manifest hash, so the
 * registry does not admit nor hash the manifest again: ./registry-core.ts
 * `RegistrationRecord`), the ordered list of schemas the registration
 * compiles, and for each either the standalone validator or the compile
 * error ajv raised.
 *
 * {@link precompiledCompilers} serves them to `CapabilityRegistry.fromManifests`
 * for exactly the registration they were built for (same manifest hash, same
 * `validateFormats`, same schemas in the same order), so the registry, its
 * report and every validation result are the ones run-time ajv gives
 * (test/unit/runtime/schema-precompiled.test.ts compares them). Anything else
 * is refused loudly; the composition falls back to run-time ajv when a
 * connector has no precompiled entry (functions/shared/compose-runtime.ts).
 */
import type { ValidateFunction } from 'ajv';
import type { ConnectorManifest } from '../../packages/connector-sdk/src/manifest.js';
import type { ConnectorSchemaCompiler, RegistrationRecord, SchemaCompilers, SchemaRequest } from './registry-core.js';

/** A compile result: the validator, or the message of the error ajv threw. */
export type PrecompiledResult = ValidateFunction | { readonly error: string };

export interface PrecompiledConnector {
  readonly connector_id: string;
  /** The base URL the connector was built with (its AIP_CONNECTOR_ENDPOINTS entry); absent: its own default. */
  readonly base_url?: string;
  /** The manifest the connector's code publishes (`discover`), as the registry admits it. */
  readonly manifest: ConnectorManifest;
  /** The connector's `implementation_support(id)` for every capability of the manifest (absent: undefined). */
  readonly support: Readonly<Record<string, unknown>>;
  readonly manifest_hash: string;
  /** The registration of `manifest` with `support`, recorded and checked at bundle time (./schema-precompile.ts). */
  readonly recorded: RegistrationRecord;
  readonly validate_formats: boolean;
  /** The schemas the registration compiles, in order. */
  readonly plan: readonly SchemaRequest[];
  /** By {@link requestKey}. */
  readonly results: Readonly<Record<string, PrecompiledResult>>;
}

export interface PrecompiledRegistry {
  readonly version: 1;
  readonly connectors: readonly PrecompiledConnector[];
}

export function requestKey(request: SchemaRequest): string {
  return `${request.which}:${request.capability_id}`;
}

function samePlan(a: readonly SchemaRequest[], b: readonly SchemaRequest[]): boolean {
  return a.length === b.length && a.every((r, i) => r.capability_id === b[i]?.capability_id && r.which === b[i]?.which);
}

/** A registration the precompiled validators were not built for (another manifest, plan or `validateFormats`). */
export class PrecompiledMismatchError extends Error {
  constructor(manifest_hash: string) {
    super(`no precompiled validators for the manifest ${manifest_hash.slice(0, 16)}… (rebuild the bundle, or compose with run-time ajv)`);
    this.name = 'PrecompiledMismatchError';
  }
}

/**
 * Compilers serving the precompiled validators. A registration they were not
 * built for goes to `fallback` (run-time ajv) when one is given, and throws
 * {@link PrecompiledMismatchError} otherwise (the composition then loads ajv
 * and composes again with it as the fallback: functions/shared/compose-runtime.ts).
 */
export function precompiledCompilers(data: PrecompiledRegistry, fallback?: SchemaCompilers): SchemaCompilers {
  return {
    forConnector: (connector, options): ConnectorSchemaCompiler => {
      const { manifest_hash, plan } = connector;
      const { validateFormats } = options;
      const entry = data.connectors.find((c) => c.manifest_hash === manifest_hash && c.validate_formats === validateFormats && samePlan(c.plan, plan));
      if (entry === undefined) {
        if (fallback !== undefined) return fallback.forConnector(connector, options);
        throw new PrecompiledMismatchError(manifest_hash);
      }
      return {
        compile: (_schema, _draft, request) => {
          const result = entry.results[requestKey(request)];
          if (result === undefined) throw new Error(`no precompiled validator for ${requestKey(request)}`);
          if (typeof result === 'function') return result;
          throw new Error(result.error);
        },
      };
    },
  };
}
