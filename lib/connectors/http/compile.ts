/**
 * Compiles an HttpConnectorConfig into what the declarative HTTP connector
 * runs on: the parsed configuration, one compiled entry per capability (its
 * Capability, zod validators built from the JSON Schemas, and the
 * implementation flags derived from the operations that are configured),
 * and the manifest, admitted and frozen. A configuration that cannot be
 * compiled is an AipError `connector.definition_invalid`; one that
 * advertises what it does not implement is `connector.admission_rejected`.
 *
 * Nothing here sends a request: the per-call behaviour is in connector.ts.
 */
import type * as z from 'zod/mini';
import { deepFreeze, joinIssuePath } from '@aip-runtime/connector-sdk/common';
import { AipError } from '@aip-runtime/connector-sdk/errors';
import { CapabilitySchema, type Capability, type JsonObject } from '@aip-runtime/connector-sdk/protocol';
import {
  admitManifest,
  formatAdmissionIssue,
  deriveSupport,
  type CapabilityDefinition,
  type ConnectorManifest,
  type ImplementationSupport,
} from '@aip-runtime/connector-sdk';
import { HttpConnectorConfigSchema, type ParsedHttpConnectorConfig } from './config.js';
import { jsonSchemaToZod, UnsupportedJsonSchemaError } from './json-schema-to-zod.js';

/** One capability of the connector, ready to serve calls. */
export interface CompiledCapability {
  readonly cfg: ParsedHttpConnectorConfig['capabilities'][number];
  readonly capability: Capability;
  readonly support: ImplementationSupport;
  readonly input: z.core.$ZodType;
  readonly output: z.core.$ZodType | undefined;
  /** Input/output of compensate (the compensation capability's, when it is in this connector). */
  readonly compensateInput: z.core.$ZodType;
  readonly compensateOutput: z.core.$ZodType | undefined;
}

export interface CompiledHttpConnector {
  readonly config: ParsedHttpConnectorConfig;
  readonly capabilities: ReadonlyMap<string, CompiledCapability>;
  /** Admitted and deeply frozen. */
  readonly manifest: ConnectorManifest;
}

function definitionError(message: string, details: Record<string, unknown> = {}): AipError {
  return new AipError('connector.definition_invalid', message, { details });
}

function schemaFromJson(schema: JsonObject, where: string): z.core.$ZodType {
  try {
    return jsonSchemaToZod(schema);
  } catch (err) {
    // The pointer and reason name keywords of the configuration, never values of a call.
    const at = err instanceof UnsupportedJsonSchemaError ? { pointer: err.pointer, reason: err.reason } : {};
    throw definitionError(`the ${where} JSON Schema is not supported`, { schema: where, ...at });
  }
}

/**
 * Validates and compiles a configuration. `credentials_available`: whether the
 * deployment supplied a CredentialProvider (required unless auth.type is `none`).
 */
export function compileHttpConnector(config: unknown, options: { readonly credentials_available: boolean }): CompiledHttpConnector {
  const parsed = HttpConnectorConfigSchema.safeParse(config);
  if (!parsed.success) {
    throw definitionError('the HTTP connector configuration is invalid', {
      issues: parsed.error.issues.slice(0, 20).map((i) => `${joinIssuePath(i.path, '.')}: ${i.message}`),
    });
  }
  const cfg = parsed.data;
  if (cfg.auth.type !== 'none' && !options.credentials_available) {
    throw definitionError('auth needs a deployment CredentialProvider (deps.credentials)', { auth: cfg.auth.type });
  }

  const schemas = new Map<string, { input: z.core.$ZodType; output: z.core.$ZodType | undefined }>();
  for (const c of cfg.capabilities) {
    if (schemas.has(c.id)) throw definitionError(`duplicate capability ${c.id}`, { capability_id: c.id });
    schemas.set(c.id, {
      input: schemaFromJson(c.input_schema, `${c.id} input`),
      output: c.output_schema !== undefined ? schemaFromJson(c.output_schema, `${c.id} output`) : undefined,
    });
  }

  const caps = new Map<string, CompiledCapability>();
  for (const c of cfg.capabilities) {
    const own = schemas.get(c.id) as { input: z.core.$ZodType; output: z.core.$ZodType | undefined };
    const target = c.contract?.compensation?.compensation_capability_id;
    const comp = target !== undefined ? (schemas.get(target) ?? own) : own;
    const capability = compileCapability(c);
    const support = deriveSupport(
      {
        handlers: presentHandlers(c.operations),
        ...(c.retry !== undefined ? { retry: c.retry } : {}),
        ...(c.approval !== undefined ? { approval: c.approval } : {}),
        ...(c.contract !== undefined ? { contract: capability } : {}),
      },
      cfg.auth.type !== 'none',
    );
    caps.set(c.id, { cfg: c, capability, support, input: own.input, output: own.output, compensateInput: comp.input, compensateOutput: comp.output });
  }

  const manifest: ConnectorManifest = {
    connector_id: cfg.connector_id,
    version: cfg.version,
    capabilities: [...caps.values()].map((c) => c.capability),
    ...(cfg.resources !== undefined ? { resources: cfg.resources } : {}),
    implementation_support: Object.fromEntries([...caps.values()].map((c) => [c.capability.id, c.support])),
  };
  const report = admitManifest(manifest);
  if (!report.admitted) {
    throw new AipError('connector.admission_rejected', `connector ${cfg.connector_id} advertises behaviour its configuration does not implement`, {
      details: { issues: report.issues.map(formatAdmissionIssue) },
    });
  }
  return { config: cfg, capabilities: caps, manifest: deepFreeze(structuredClone(manifest)) };
}

/** The capability's configuration as a protocol Capability (its contract fields spread in). */
function compileCapability(c: ParsedHttpConnectorConfig['capabilities'][number]): Capability {
  const candidate = {
    id: c.id,
    kind: c.kind ?? 'tool',
    ...(c.description !== undefined ? { description: c.description } : {}),
    input_schema: c.input_schema,
    ...(c.output_schema !== undefined ? { output_schema: c.output_schema } : {}),
    ...(c.contract ?? {}),
  };
  const capability = CapabilitySchema.safeParse(candidate);
  if (!capability.success) {
    throw definitionError(`capability ${c.id} is not a valid Capability`, {
      issues: capability.error.issues.map((i) => joinIssuePath(i.path, '.')).slice(0, 20),
    });
  }
  return capability.data;
}

/**
 * Placeholder handlers for the operations that are configured: deriveSupport
 * reads which handlers exist, never calls them.
 */
function presentHandlers(
  ops: ParsedHttpConnectorConfig['capabilities'][number]['operations'],
): CapabilityDefinition<z.core.$ZodType, z.core.$ZodType, z.core.$ZodType>['handlers'] {
  const present = (): undefined => undefined;
  return {
    ...(ops.invoke !== undefined ? { invoke: present } : {}),
    ...(ops.plan !== undefined ? { plan: present } : {}),
    ...(ops.commit !== undefined ? { commit: present } : {}),
    ...(ops.compensate !== undefined ? { compensate: present } : {}),
    ...(ops.cancel !== undefined ? { cancel: present } : {}),
    ...(ops.reconcile !== undefined ? { reconcile: present } : {}),
  } as CapabilityDefinition<z.core.$ZodType, z.core.$ZodType, z.core.$ZodType>['handlers'];
}
