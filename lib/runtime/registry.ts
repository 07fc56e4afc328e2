/**
 * The capability registry: built from admitted connector manifests.
 *
 * - Every manifest goes through `admitManifest` (lib/connectors/admission.ts).
 *   A capability with any admission issue is not registered; the admission
 *   report is kept per connector (`registry.report`).
 * - A capability ID offered by more than one connector is registered by none
 *   of them (reported as `duplicate_across_connectors`): routing must never
 *   depend on manifest order.
 * - Input and output schemas are JSON Schema, compiled ONCE with ajv
 *   (draft 2020-12 by default, draft-07 when the schema says so) plus
 *   ajv-formats, in strict schema mode: unknown keywords, invalid formats
 *   or unresolvable `$ref`s make the capability unregistrable (reported as
 *   `schema_invalid`) instead of silently validating nothing. Remote `$ref`s
 *   are never fetched.
 * - Validation issues carry a JSON Pointer path, the failing keyword and the
 *   validator's message: never the offending input value.
 *
 * `lookup` of an unknown (or unregistered) capability throws AipError
 * `capability.not_found`.
 */
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvDraft7Module from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { AipError } from '../errors/aip-error.js';
import { admitManifest, type AdmissionReport, type SupportSource } from '../connectors/admission.js';
import type { ConnectorManifest } from '../connectors/manifest.js';
import type { ImplementationSupport } from '../connectors/support.js';
import { hashJson, type Capability } from '../protocol/index.js';

// ajv and ajv-formats are CommonJS with `export default` typings: accept both runtime shapes.
type AjvCtor = new (opts: Record<string, unknown>) => AjvInstance;
interface AjvInstance {
  compile(schema: unknown): ValidateFunction;
}
function interop<T>(m: unknown): T {
  return (typeof m === 'function' ? m : (m as { default: T }).default) as T;
}
const Ajv2020 = interop<AjvCtor>(Ajv2020Module);
const AjvDraft7 = interop<AjvCtor>(AjvDraft7Module);
const addFormats = interop<(ajv: AjvInstance) => unknown>(addFormatsModule);

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

/** A manifest, optionally with the connector's own support declarations (see admitManifest). */
export type ManifestSource = ConnectorManifest | { readonly manifest: ConnectorManifest | unknown; readonly support?: SupportSource };

export interface CapabilityRegistryOptions {
  /** Validate `format` keywords (ajv-formats). Default true. */
  readonly validateFormats?: boolean;
}

function isWrapped(s: ManifestSource): s is { manifest: ConnectorManifest | unknown; support?: SupportSource } {
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

  /** Admits every manifest and registers the capabilities that pass admission and schema compilation. */
  static fromManifests(manifests: readonly ManifestSource[], options: CapabilityRegistryOptions = {}): CapabilityRegistry {
    const validateFormats = options.validateFormats !== false;
    const make = (Ctor: AjvCtor): AjvInstance => {
      const ajv = new Ctor({
        strict: true,
        strictSchema: true,
        strictNumbers: true,
        // zod/hand-written schemas often omit `type` next to `properties` or use unions: not an error.
        strictTypes: false,
        strictTuples: false,
        strictRequired: false,
        allowUnionTypes: true,
        allErrors: true,
        validateFormats,
        // Never fetch a remote schema.
        loadSchema: undefined,
      });
      addFormats(ajv);
      return ajv;
    };
    // One ajv instance per connector: schema `$id`s of different connectors can never collide.
    const candidates: { reg: Omit<RegisteredCapability, 'validateInput' | 'validateOutput'>; input: ValidateFunction; output?: ValidateFunction }[] = [];
    const connectors: { registration: ConnectorRegistration & { registered: string[]; rejected: RejectedCapability[] } }[] = [];

    for (const source of manifests) {
      const manifest = isWrapped(source) ? source.manifest : source;
      const admission = isWrapped(source) && source.support !== undefined ? admitManifest(manifest, source.support) : admitManifest(manifest);
      const m = manifest as Partial<ConnectorManifest>;
      const schemaOk = admission.issues.every((i) => i.rule !== 'manifest matches the ConnectorManifest schema');
      const registration = {
        ...(schemaOk && typeof m.connector_id === 'string' ? { connector_id: m.connector_id } : {}),
        ...(schemaOk && typeof m.version === 'string' ? { version: m.version } : {}),
        ...(schemaOk ? { manifest_hash: hashJson(manifest) } : {}),
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
      const ajv2020 = make(Ajv2020);
      let ajv07: AjvInstance | undefined;
      for (const admitted of admission.capabilities) {
        const cap = admitted.capability;
        const compile = (schema: unknown, which: 'input' | 'output'): ValidateFunction | string => {
          const declared = (schema as { $schema?: unknown }).$schema;
          let ajv: AjvInstance;
          if (declared === undefined || declared === DRAFT_2020) ajv = ajv2020;
          else if (typeof declared === 'string' && DRAFT_07.has(declared)) ajv = ajv07 ??= make(AjvDraft7);
          else return `${which} schema: unsupported $schema (use draft 2020-12 or draft-07)`;
          try {
            return ajv.compile(schema);
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
      connectors: connectors.map(({ registration }) => Object.freeze({ ...registration, registered: [...registration.registered], rejected: [...registration.rejected] })),
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
