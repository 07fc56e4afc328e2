/**
 * The capability registry: built from admitted connector manifests.
 *
 * - Every manifest goes through `admitManifest` (packages/connector-sdk/src/admission.ts).
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
 *   are never fetched. The compilation runs at run time (./schema-ajv.ts,
 *   the default this module installs) or, in the deployed functions, at
 *   bundle time (./schema-precompiled.ts: the same ajv calls, kept as
 *   standalone code, so the functions never load ajv).
 * - Validation issues carry a JSON Pointer path, the failing keyword and the
 *   validator's message: never the offending input value.
 *
 * `lookup` of an unknown (or unregistered) capability throws AipError
 * `capability.not_found`.
 */
import { AJV_SCHEMA_COMPILERS } from './schema-ajv.js';
import { setDefaultSchemaCompilers } from './registry-core.js';

// Importing this module makes ajv the default compiler (the deployed functions import ./registry-core.ts instead).
setDefaultSchemaCompilers(AJV_SCHEMA_COMPILERS);

export * from './registry-core.js';
