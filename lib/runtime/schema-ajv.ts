/**
 * The registry's run-time schema compiler: ajv (draft 2020-12 by default,
 * draft-07 when the schema says so) plus ajv-formats, in strict schema mode
 * (see ./registry.ts for the rules). One ajv instance per connector and
 * dialect, so schema `$id`s of different connectors can never collide.
 *
 * The bundle-time precompiler (./schema-precompiled.ts) runs these same
 * compilers with ajv's `code.source` on and keeps the standalone code.
 */
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvDraft7Module from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { ConnectorSchemaCompiler, SchemaCompilers, SchemaDraft } from './registry-core.js';

// ajv and ajv-formats are CommonJS with `export default` typings: accept both runtime shapes.
type AjvCtor = new (opts: Record<string, unknown>) => AjvInstance;
export interface AjvInstance {
  compile(schema: unknown): ValidateFunction;
}
function interop<T>(m: unknown): T {
  return (typeof m === 'function' ? m : (m as { default: T }).default) as T;
}
const Ajv2020 = interop<AjvCtor>(Ajv2020Module);
const AjvDraft7 = interop<AjvCtor>(AjvDraft7Module);
const addFormats = interop<(ajv: AjvInstance) => unknown>(addFormatsModule);

/** The ajv options of the registry; `code` is set by the precompiler only. */
export function ajvOptions(validateFormats: boolean): Record<string, unknown> {
  return {
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
  };
}

/** One connector's ajv instances (2020-12 at once, draft-07 on first use), each with ajv-formats. */
export function ajvConnectorCompiler(
  validateFormats: boolean,
  extra: Record<string, unknown> = {},
): ConnectorSchemaCompiler & { instance(draft: SchemaDraft): AjvInstance } {
  const make = (Ctor: AjvCtor): AjvInstance => {
    const ajv = new Ctor({ ...ajvOptions(validateFormats), ...extra });
    addFormats(ajv);
    return ajv;
  };
  const ajv2020 = make(Ajv2020);
  let ajv07: AjvInstance | undefined;
  const instance = (draft: SchemaDraft): AjvInstance => {
    if (draft === '2020-12') return ajv2020;
    ajv07 ??= make(AjvDraft7);
    return ajv07;
  };
  return { instance, compile: (schema, draft) => instance(draft).compile(schema) };
}

/** ajv at run time: what CapabilityRegistry.fromManifests uses unless told otherwise. */
export const AJV_SCHEMA_COMPILERS: SchemaCompilers = {
  forConnector: (_connector, { validateFormats }) => ajvConnectorCompiler(validateFormats),
};
