/**
 * Bundle-time half of ./schema-precompiled.ts: runs the capability
 * registry's own compilation (`CapabilityRegistry.fromManifests` with the
 * ajv compilers of ./schema-ajv.ts, ajv's `code.source` on) for each
 * connector and writes the JavaScript module the deployed functions import:
 * the manifests, the support records and, for every schema the registration
 * compiles, ajv's standalone validator or the compile error.
 *
 * With them goes each connector's registration record (its admission report
 * and manifest hash: ./registry-core.ts `RegistrationRecord`), so that the
 * deployed registry neither admits nor hashes the manifest again. The record
 * is checked here, as the function will read it (through JSON), against the
 * registry built without it ({@link checkRegistrationRecord}); one that does
 * not give the same registry fails the build. The function does not check it
 * again: it comes from this computation, in the same generated module as the
 * manifest and the validators, which the function trusts as given too.
 *
 * The module's `require()` calls name ajv's and ajv-formats' run-time
 * helpers; the bundler resolves them from the project (infra/bundling.ts
 * bundles the module with the function). Build-time only: nothing deployed
 * imports this file.
 */
import { isDeepStrictEqual } from 'node:util';
import standaloneCodeModule from 'ajv/dist/standalone/index.js';
import type { ValidateFunction } from 'ajv';
import type { ConnectorManifest } from '../../packages/connector-sdk/src/manifest.js';
import { CapabilityRegistry, type RegistrationRecord, type SchemaCompilers, type SchemaRequest } from './registry.js';
import { AJV_SCHEMA_COMPILERS, ajvConnectorCompiler, type AjvInstance } from './schema-ajv.js';
import { requestKey } from './schema-precompiled.js';

type StandaloneCode = (ajv: AjvInstance, validate: ValidateFunction) => string;
const standaloneCode = ((m: unknown) => (typeof m === 'function' ? m : (m as { default: unknown }).default))(standaloneCodeModule) as StandaloneCode;

/** One connector of the build: what its code publishes. */
export interface PrecompileSource {
  readonly connector_id: string;
  /** The base URL the connector was built with, when the deployment sets one. */
  readonly base_url?: string;
  readonly manifest: ConnectorManifest;
  /** `implementation_support(id)` for each capability of the manifest. */
  readonly support: Readonly<Record<string, unknown>>;
}

interface Recorded {
  manifest_hash?: string;
  plan?: readonly SchemaRequest[];
  readonly results: { key: string; code?: string; error?: string }[];
}

/** A registration record that does not give the registry built without it: the bundle is not built. */
export class RegistrationRecordMismatchError extends Error {
  constructor(connector_id: string, what: string) {
    super(`the registration record of connector "${connector_id}" does not match its manifest (${what}): not bundled`);
    this.name = 'RegistrationRecordMismatchError';
  }
}

/** A registry as its users see it, without the validators (compared by the plan and compile results instead). */
function registryView(registry: CapabilityRegistry): unknown {
  return {
    report: registry.report,
    capabilities: registry.ids().map((id) => {
      const { validateInput: _input, validateOutput: _output, ...rest } = registry.lookup(id);
      return rest;
    }),
  };
}

/**
 * Throws {@link RegistrationRecordMismatchError} unless the registry built
 * from `source` with `recorded`, as the deployed function reads it (through
 * JSON), is the one built from `source` alone: the same report, the same
 * registered capabilities, and the same schemas compiled (ajv, both ways).
 */
export function checkRegistrationRecord(
  source: { readonly connector_id: string; readonly manifest: ConnectorManifest; readonly support: Readonly<Record<string, unknown>> },
  recorded: RegistrationRecord,
  options: { readonly validateFormats?: boolean } = {},
): void {
  const asShipped = JSON.parse(JSON.stringify(recorded)) as RegistrationRecord;
  const plans: (readonly SchemaRequest[])[] = [];
  const compilers: SchemaCompilers = {
    forConnector: (connector, opts) => {
      plans.push(connector.plan);
      return AJV_SCHEMA_COMPILERS.forConnector(connector, opts);
    },
  };
  const { manifest, support } = source;
  const validateFormats = options.validateFormats !== false;
  const without = CapabilityRegistry.fromManifests([{ manifest, support }], { validateFormats, compilers });
  const withRecord = CapabilityRegistry.fromManifests([{ manifest, support, recorded: asShipped }], { validateFormats, compilers });
  if (asShipped.manifest_hash !== without.report.connectors[0]?.manifest_hash) throw new RegistrationRecordMismatchError(source.connector_id, 'manifest hash');
  if (!isDeepStrictEqual(plans[0], plans[1])) throw new RegistrationRecordMismatchError(source.connector_id, 'schemas compiled');
  if (!isDeepStrictEqual(registryView(withRecord), registryView(without))) throw new RegistrationRecordMismatchError(source.connector_id, 'registry');
}

/** The JavaScript source of the precompiled registry module for these connectors. */
export function precompiledRegistrySource(sources: readonly PrecompileSource[], options: { readonly validateFormats?: boolean } = {}): string {
  const validateFormats = options.validateFormats !== false;
  const blocks: string[] = [];
  const entries: string[] = [];
  let n = 0;
  for (const source of sources) {
    // What the deployed function will see: the manifest and support records as JSON.
    const manifest = JSON.parse(JSON.stringify(source.manifest)) as ConnectorManifest;
    const support = JSON.parse(JSON.stringify(source.support ?? {})) as Record<string, unknown>;
    const recorded: Recorded = { results: [] };
    const compilers: SchemaCompilers = {
      forConnector: (connector, { validateFormats: formats }) => {
        recorded.manifest_hash = connector.manifest_hash;
        recorded.plan = connector.plan;
        const ajv = ajvConnectorCompiler(formats, { code: { source: true } });
        return {
          compile: (schema, draft, request) => {
            const key = requestKey(request);
            try {
              const validate = ajv.compile(schema, draft, request);
              recorded.results.push({ key, code: standaloneCode(ajv.instance(draft), validate) });
              return validate;
            } catch (err) {
              recorded.results.push({ key, error: String((err as Error).message) });
              throw err;
            }
          },
        };
      },
    };
    const registry = CapabilityRegistry.fromManifests([{ manifest, support }], { validateFormats, compilers });
    // A manifest the admission refuses as a whole registers nothing: no entry, the run-time path reports it.
    if (recorded.manifest_hash === undefined || recorded.plan === undefined) continue;
    const registration = registry.report.connectors[0];
    if (registration === undefined) continue;
    const record: RegistrationRecord = { manifest_hash: recorded.manifest_hash, admission: registration.admission };
    checkRegistrationRecord({ connector_id: source.connector_id, manifest, support }, record, { validateFormats });
    const results: string[] = [];
    for (const r of recorded.results) {
      if (r.code !== undefined) {
        const name = `v${n++}`;
        blocks.push(`const ${name} = (() => {\nconst module = { exports: {} };\nconst exports = module.exports;\n${r.code}\nreturn module.exports;\n})();`);
        results.push(`${JSON.stringify(r.key)}: ${name}`);
      } else {
        results.push(`${JSON.stringify(r.key)}: ${JSON.stringify({ error: r.error })}`);
      }
    }
    entries.push(
      `{ connector_id: ${JSON.stringify(source.connector_id)}, ${source.base_url !== undefined ? `base_url: ${JSON.stringify(source.base_url)}, ` : ''}manifest: ${JSON.stringify(manifest)}, support: ${JSON.stringify(support)}, ` +
        `manifest_hash: ${JSON.stringify(recorded.manifest_hash)}, recorded: ${JSON.stringify(record)}, validate_formats: ${validateFormats}, plan: ${JSON.stringify(recorded.plan)}, ` +
        `results: { ${results.join(', ')} } }`,
    );
  }
  return [
    "// Generated at bundle time by lib/runtime/schema-precompile.ts from the connectors' manifests. Do not edit.",
    ...blocks,
    `export const PRECOMPILED_REGISTRY = { version: 1, connectors: [${entries.join(', ')}] };`,
    '',
  ].join('\n');
}
