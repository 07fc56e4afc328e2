import * as z from './common/zod.js';
import { CapabilitySchema, IdSchema, TextSchema, type Capability } from './protocol/index.js';
import { ImplementationSupportSchema, type ImplementationSupport } from './support.js';

/**
 * A read-only data resource the connector exposes. Resources have no
 * callable contract and need no invocation flag. (A capability of kind
 * `resource` is likewise exempt from the invocation flag at admission.)
 */
export const ManifestResourceSchema = z.deferred(() =>
  z.strictObject({
    id: IdSchema,
    description: z.optional(TextSchema(4096)),
    /** RFC 6570 URI template of the resource, when addressable. */
    uri_template: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
    media_type: z.optional(z.string().check(z.minLength(1), z.maxLength(255))),
  }),
);
export type ManifestResource = z.infer<typeof ManifestResourceSchema>;

/** Connector versions: semantic versions (`1.2.3`, `1.2.3-rc.1`). */
export const ConnectorVersionSchema = z
  .string()
  .check(z.maxLength(64), z.regex(/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/, { message: 'expected a semantic version' }));

/**
 * What `discover` returns: the connector's identity, its capabilities (the
 * protocol Capability contract, with JSON Schemas), optional resources, and
 * the nine-flag implementation support record per capability ID.
 *
 * Built on first use (`z.deferred`), as the admission schemas under it: a
 * deployed function whose registry comes from the bundle's recorded
 * admission never parses a manifest (docs/bench/analysis.md, "Issue 22: the
 * submit's registry and the admission schemas").
 */
export const ConnectorManifestSchema = z.deferred(() =>
  z.strictObject({
    connector_id: IdSchema,
    version: ConnectorVersionSchema,
    capabilities: z.array(CapabilitySchema).check(z.maxLength(1000)),
    resources: z.optional(z.array(ManifestResourceSchema).check(z.maxLength(1000))),
    implementation_support: z.record(IdSchema, ImplementationSupportSchema),
  }),
);

export interface ConnectorManifest {
  readonly connector_id: string;
  readonly version: string;
  readonly capabilities: readonly Capability[];
  readonly resources?: readonly ManifestResource[];
  readonly implementation_support: Readonly<Record<string, ImplementationSupport>>;
}
