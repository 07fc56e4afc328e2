/**
 * The capability registry without a schema compiler of its own (what
 * ./registry.ts documents): the deployed functions build it with validators
 * precompiled at bundle time (./schema-precompiled.ts) and never load ajv;
 * ./registry.ts installs ajv as the default compiler for everything else.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { admitManifest, type AdmissionReport, type SupportSource } from '../../packages/connector-sdk/src/admission.js';
import type { ConnectorManifest } from '../../packages/connector-sdk/src/manifest.js';
import type { ImplementationSupport } from '../../packages/connector-sdk/src/support.js';
import { hashJson, type Capability } from '../../packages/connector-sdk/src/protocol/index.js';

const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';
const DRAFT_07 = new Set(['http://json-schema.org/draft-07/schema#', 'http://json-schema.org/draft-07/schema']);

/** At most this many issues are reported per validation. */
export const MAX_SCHEMA_ISSUES = 20;

/** One schema violation: where and what, never the value. */
export interface SchemaIssue {
  /** JSON Pointer into the validated document ('' = the root). */
  readonly path: string;
  /** The JSON Schema keyword that failed (e.g. `required`, `type`). */
  readonly keyword: string;
  readonly message: string;
}

export interface RegisteredCapability {
  readonly capability_id: string;
  readonly capability: Capability;
  readonly connector_id: string;
  readonly connector_version: string;
  /** sha256 of the canonical manifest (pinned by route assignments). */
  readonly manifest_hash: string;
  readonly implementation_support: ImplementationSupport;
  /** [] when valid. */
  validateInput(input: unknown): SchemaIssue[];
  /** [] when valid, or when the capability declares no output schema. */
  validateOutput(output: unknown): SchemaIssue[];
}

export type RegistrationProblem = 'admission' | 'schema_invalid' | 'duplicate_across_connectors';

export interface RejectedCapability {
  readonly capability_id: string;
  readonly problem: RegistrationProblem;
  /** Operator-safe detail (rules, schema names, compile messages). */
  readonly detail: readonly string[];
}

export interface ConnectorRegistration {
  readonly connector_id?: string;
  readonly version?: string;
  readonly manifest_hash?: string;
  readonly admission: AdmissionReport;
  readonly registered: readonly string[];
  readonly rejected: readonly RejectedCapability[];
}

export interface RegistryReport {
  readonly connectors: readonly ConnectorRegistration[];
}

/**
 * What {@link CapabilityRegistry.fromManifests} computes of one connector before
 * it compiles anything: the admission report and the manifest hash. Both are
 * deterministic functions of the manifest and support records, so the bundling
 * step records them with the precompiled validators (./schema-precompile.ts
 * checks there that a registry built from the record equals one built without
 * it, and refuses the record otherwise); the deployed functions then skip
 * admitting and hashing the manifest at composition.
 */
export interface RegistrationRecord {
  /** sha256 of the canonical manifest, as `hashJson` gives it. */
  readonly manifest_hash: string;
  /** `admitManifest(manifest, support)`, as JSON. */
  readonly admission: AdmissionReport;
}

/**
 * A manifest, optionally with the connector's own support declarations (see
 * admitManifest) and the registration recorded for them at bundle time
 * (trusted as given: see {@link RegistrationRecord}).
 */
export type ManifestSource =
  | ConnectorManifest
  | { readonly manifest: ConnectorManifest | unknown; readonly support?: SupportSource; readonly recorded?: RegistrationRecord };

export interface CapabilityRegistryOptions {
  /** Validate `format` keywords (ajv-formats). Default true. */
  readonly validateFormats?: boolean;
  /**
   * Compiles the input and output schemas. Default: ajv at run time
   * (./schema-ajv.ts, installed by ./registry.ts); the deployed functions pass
   * the validators precompiled at bundle time (./schema-precompiled.ts).
   */
  readonly compilers?: SchemaCompilers;
}

/** Which dialect a schema is compiled as (`$schema` absent: 2020-12). */
export type SchemaDraft = '2020-12' | 'draft-07';

/** One schema a connector's registration compiles. */
export interface SchemaRequest {
  readonly capability_id: string;
  readonly which: 'input' | 'output';
}

/** Compiles one connector's schemas; `compile` throws on a schema it refuses (the message is reported as `schema_invalid`). */
export interface ConnectorSchemaCompiler {
  compile(schema: unknown, draft: SchemaDraft, request: SchemaRequest): ValidateFunction;
}

/**
 * Where validators come from. `forConnector` is asked once per admitted
 * manifest with the ordered list of schemas it will compile (one compiler per
 * connector: schema `$id`s of different connectors can never collide).
 */
export interface SchemaCompilers {
  forConnector(
    connector: { readonly manifest_hash: string; readonly plan: readonly SchemaRequest[] },
    options: { readonly validateFormats: boolean },
  ): ConnectorSchemaCompiler;
}

let defaultCompilers: SchemaCompilers | undefined;

/** Installs the compilers `fromManifests` uses when given none (./registry.ts installs ajv's). */
export function setDefaultSchemaCompilers(compilers: SchemaCompilers): void {
  defaultCompilers = compilers;
}

function isWrapped(s: ManifestSource): s is { manifest: ConnectorManifest | unknown; support?: SupportSource; recorded?: RegistrationRecord } {
  return typeof s === 'object' && s !== null && 'manifest' in s && !('connector_id' in s);
}

/** RFC 6901 escaping of one path token. */
function escapeToken(t: string): string {
  return t.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Maps ajv errors to issues without any instance value (ajv's `data` is never read; messages do not quote data). */
export function toSchemaIssues(errors: readonly ErrorObject[] | null | undefined): SchemaIssue[] {
  const out: SchemaIssue[] = [];
  for (const e of errors ?? []) {
    if (out.length >= MAX_SCHEMA_ISSUES) break;
    let path = e.instancePath;
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required' && typeof params.missingProperty === 'string') path = `${path}/${escapeToken(params.missingProperty)}`;
    if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') path = `${path}/${escapeToken(params.additionalProperty)}`;
    if (e.keyword === 'unevaluatedProperties' && typeof params.unevaluatedProperty === 'string') path = `${path}/${escapeToken(params.unevaluatedProperty)}`;
    out.push({ path: path.slice(0, 1024), keyword: e.keyword, message: (e.message ?? 'is invalid').slice(0, 512) });
  }
  return out;
}

export class CapabilityRegistry {
  readonly report: RegistryReport;
  readonly #byId: ReadonlyMap<string, RegisteredCapability>;

  private constructor(byId: Map<string, RegisteredCapability>, report: RegistryReport) {
    this.#byId = byId;
    this.report = report;
  }

  /**
   * Admits every manifest and registers the capabilities that pass admission
   * and schema compilation. A source with a `recorded` registration takes its
   * admission report and manifest hash from it instead of computing them.
   */
  static fromManifests(manifests: readonly ManifestSource[], options: CapabilityRegistryOptions = {}): CapabilityRegistry {
    const validateFormats = options.validateFormats !== false;
    const compilers = options.compilers ?? defaultCompilers;
    if (compilers === undefined) throw new Error('CapabilityRegistry: no schema compiler; import lib/runtime/registry.js (ajv) or pass options.compilers');
    const candidates: { reg: Omit<RegisteredCapability, 'validateInput' | 'validateOutput'>; input: ValidateFunction; output?: ValidateFunction }[] = [];
    const connectors: { registration: ConnectorRegistration & { registered: string[]; rejected: RejectedCapability[] } }[] = [];

    for (const source of manifests) {
      const manifest = isWrapped(source) ? source.manifest : source;
      const recorded = isWrapped(source) ? source.recorded : undefined;
      const admission =
        recorded?.admission ?? (isWrapped(source) && source.support !== undefined ? admitManifest(manifest, source.support) : admitManifest(manifest));
      const m = manifest as Partial<ConnectorManifest>;
      const schemaOk = admission.issues.every((i) => i.rule !== 'manifest matches the ConnectorManifest schema');
      const registration = {
        ...(schemaOk && typeof m.connector_id === 'string' ? { connector_id: m.connector_id } : {}),
        ...(schemaOk && typeof m.version === 'string' ? { version: m.version } : {}),
        ...(schemaOk ? { manifest_hash: recorded?.manifest_hash ?? hashJson(manifest) } : {}),
        admission,
        registered: [] as string[],
        rejected: [] as RejectedCapability[],
      };
      connectors.push({ registration });
      if (!schemaOk) continue;

      const admittedIds = new Set(admission.capabilities.map((c) => c.capability_id));
      for (const cap of (m.capabilities ?? []) as readonly Capability[]) {
        if (!admittedIds.has(cap.id) && !registration.rejected.some((r) => r.capability_id === cap.id)) {
          registration.rejected.push({
            capability_id: cap.id,
            problem: 'admission',
            detail: admission.issues.filter((i) => i.capability_id === cap.id).map((i) => (i.flag ? `${i.rule} (flag ${i.flag})` : i.rule)),
          });
        }
      }
      // The schemas this connector compiles, in order: what a precompiled compiler must have been built for.
      const plan: SchemaRequest[] = [];
      for (const admitted of admission.capabilities) {
        plan.push({ capability_id: admitted.capability.id, which: 'input' });
        if (admitted.capability.output_schema !== undefined) plan.push({ capability_id: admitted.capability.id, which: 'output' });
      }
      const compiler = compilers.forConnector({ manifest_hash: registration.manifest_hash as string, plan }, { validateFormats });
      for (const admitted of admission.capabilities) {
        const cap = admitted.capability;
        const compile = (schema: unknown, which: 'input' | 'output'): ValidateFunction | string => {
          const declared = (schema as { $schema?: unknown }).$schema;
          let draft: SchemaDraft;
          if (declared === undefined || declared === DRAFT_2020) draft = '2020-12';
          else if (typeof declared === 'string' && DRAFT_07.has(declared)) draft = 'draft-07';
          else return `${which} schema: unsupported $schema (use draft 2020-12 or draft-07)`;
          try {
            return compiler.compile(schema, draft, { capability_id: cap.id, which });
          } catch (err) {
            return `${which} schema: ${String((err as Error).message).slice(0, 300)}`;
          }
        };
        const input = compile(cap.input_schema, 'input');
        const output = cap.output_schema === undefined ? undefined : compile(cap.output_schema, 'output');
        const problems = [input, output].filter((x): x is string => typeof x === 'string');
        if (problems.length > 0) {
          registration.rejected.push({ capability_id: cap.id, problem: 'schema_invalid', detail: problems });
          continue;
        }
        candidates.push({
          reg: {
            capability_id: cap.id,
            capability: cap,
            connector_id: m.connector_id as string,
            connector_version: m.version as string,
            manifest_hash: registration.manifest_hash as string,
            implementation_support: admitted.implementation_support,
          },
          input: input as ValidateFunction,
          ...(output !== undefined ? { output: output as ValidateFunction } : {}),
        });
        registration.registered.push(cap.id);
      }
    }

    // Capability IDs offered by several connectors: none of them is registered.
    const owners = new Map<string, Set<string>>();
    for (const c of candidates) {
      const set = owners.get(c.reg.capability_id) ?? new Set<string>();
      set.add(c.reg.connector_id);
      owners.set(c.reg.capability_id, set);
    }
    const byId = new Map<string, RegisteredCapability>();
    for (const c of candidates) {
      const set = owners.get(c.reg.capability_id) as Set<string>;
      if (set.size > 1) {
        for (const { registration } of connectors) {
          if (registration.connector_id !== c.reg.connector_id) continue;
          const idx = registration.registered.indexOf(c.reg.capability_id);
          if (idx !== -1) registration.registered.splice(idx, 1);
          if (!registration.rejected.some((r) => r.capability_id === c.reg.capability_id && r.problem === 'duplicate_across_connectors')) {
            registration.rejected.push({ capability_id: c.reg.capability_id, problem: 'duplicate_across_connectors', detail: [...set].sort() });
          }
        }
        continue;
      }
      const { input, output } = c;
      byId.set(
        c.reg.capability_id,
        Object.freeze({
          ...c.reg,
          validateInput: (value: unknown) => (input(value) ? [] : toSchemaIssues(input.errors)),
          validateOutput: (value: unknown) => (output === undefined || output(value) ? [] : toSchemaIssues(output.errors)),
        }),
      );
    }
    const report: RegistryReport = {
      connectors: connectors.map(({ registration }) =>
        Object.freeze({ ...registration, registered: [...registration.registered], rejected: [...registration.rejected] }),
      ),
    };
    return new CapabilityRegistry(byId, report);
  }

  /** The registered capability, or AipError `capability.not_found`. */
  lookup(capability_id: string): RegisteredCapability {
    const found = this.#byId.get(capability_id);
    if (found === undefined) {
      throw new AipError('capability.not_found', 'No admitted capability has this ID', {
        details: { capability_id: typeof capability_id === 'string' ? capability_id.slice(0, 256) : String(capability_id) },
      });
    }
    return found;
  }

  /** The registered capability, or undefined. */
  find(capability_id: string): RegisteredCapability | undefined {
    return this.#byId.get(capability_id);
  }

  has(capability_id: string): boolean {
    return this.#byId.has(capability_id);
  }

  /** Registered capability IDs, sorted. */
  ids(): string[] {
    return [...this.#byId.keys()].sort();
  }
}
