/**
 * The registry precompiled at bundle time (lib/runtime/schema-precompile.ts
 * generates the module, lib/runtime/schema-precompiled.ts serves it) gives
 * the registrations, the report and the validation results run-time ajv
 * gives; a registration it was not built for falls back to ajv in the
 * composition (functions/shared/compose-connectors.ts `buildRegistry`).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitManifest, implementationSupport, type ConnectorManifest, type ImplementationSupport } from '../../../packages/connector-sdk/src/index.js';
import { hashJson } from '../../../packages/connector-sdk/src/protocol/canonical.js';
import type { Capability, JsonObject } from '../../../packages/connector-sdk/src/protocol/index.js';
import { CapabilityRegistry, type ManifestSource, type RegistrationRecord } from '../../../lib/runtime/registry-core.js';
import { AJV_SCHEMA_COMPILERS } from '../../../lib/runtime/schema-ajv.js';
import {
  checkRegistrationRecord,
  precompiledRegistrySource,
  RegistrationRecordMismatchError,
  type PrecompileSource,
} from '../../../lib/runtime/schema-precompile.js';
import {
  PrecompiledMismatchError,
  precompiledCompilers,
  type PrecompiledConnector,
  type PrecompiledRegistry,
} from '../../../lib/runtime/schema-precompiled.js';
import { connectorRegistrySource } from '../../../functions/shared/connector-factories.js';
import { buildRegistry } from '../../../functions/shared/compose-connectors.js';

const INPUT_2020: JsonObject = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    amount: { type: 'integer', minimum: 1 },
    currency: { type: 'string', enum: ['EUR', 'USD'] },
    notify: { type: 'string', format: 'email' },
    meta: { type: 'object', properties: { ref: { type: 'string', maxLength: 8 } }, additionalProperties: false },
  },
  required: ['amount', 'currency'],
  additionalProperties: false,
};

const INPUT_07: JsonObject = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: { id: { type: 'string', minLength: 2 }, when: { type: 'string', format: 'date-time' } },
  required: ['id'],
};

function cap(id: string, input: JsonObject, output?: JsonObject): Capability {
  return { id, kind: 'tool', input_schema: input, ...(output !== undefined ? { output_schema: output } : {}) };
}

function manifest(connector_id: string, capabilities: Capability[]): { manifest: ConnectorManifest; support: Record<string, ImplementationSupport> } {
  const support = Object.fromEntries(capabilities.map((c) => [c.id, implementationSupport({ invocation: true })]));
  return { manifest: { connector_id, version: '1.0.0', capabilities, implementation_support: support }, support };
}

/** A connector with every case: 2020-12 with formats, draft-07, no output schema, an unknown keyword, an unsupported dialect. */
const MIXED = manifest('mixed', [
  cap('mixed.transfer', INPUT_2020, { type: 'object', properties: { transfer_id: { type: 'string' } }, required: ['transfer_id'] }),
  cap('mixed.lookup', INPUT_07),
  cap('mixed.unknown_keyword', { type: 'object', properties: {}, frobnicate: true } as JsonObject),
  cap('mixed.dialect', { $schema: 'https://example.com/my-dialect', type: 'object' } as JsonObject),
]);

const SAMPLES: unknown[] = [
  { amount: 5, currency: 'EUR' },
  { amount: 0, currency: 'GBP', extra: 1 },
  { amount: 5, currency: 'EUR', notify: 'not-an-email', meta: { ref: 'much-too-long', x: 1 } },
  { id: 'x', when: 'yesterday' },
  { id: 'ok', when: '2026-01-01T00:00:00Z' },
  'a string',
  null,
  { transfer_id: 7 },
  { transfer_id: 't-1' },
];

const DIR = join(process.cwd(), '.vitest-tmp', `precompiled-${process.pid}`);
let inputs: PrecompileSource[];
let sources: ManifestSource[];
let precompiled: PrecompiledRegistry;

beforeAll(async () => {
  const payments = await connectorRegistrySource('payments');
  inputs = [payments, { connector_id: 'mixed', ...MIXED }];
  sources = inputs.map((s) => ({ manifest: s.manifest, support: s.support }));
  // The generated module, loaded the way a bundle runs it: ESM with a require() for ajv's run-time helpers.
  mkdirSync(DIR, { recursive: true });
  const file = join(DIR, 'precompiled-registry.mjs');
  writeFileSync(file, `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);\n${precompiledRegistrySource(inputs)}`);
  precompiled = ((await import(pathToFileURL(file).href)) as { PRECOMPILED_REGISTRY: PrecompiledRegistry }).PRECOMPILED_REGISTRY;
});

afterAll(() => rmSync(DIR, { recursive: true, force: true }));

function results(registry: CapabilityRegistry): unknown {
  return registry.ids().map((id) => {
    const c = registry.lookup(id);
    return {
      id,
      connector: c.connector_id,
      hash: c.manifest_hash,
      input: SAMPLES.map((s) => c.validateInput(s)),
      output: SAMPLES.map((s) => c.validateOutput(s)),
    };
  });
}

describe('precompiled registry', () => {
  it('registers, reports and validates exactly as run-time ajv', () => {
    const atRunTime = CapabilityRegistry.fromManifests(sources, { compilers: AJV_SCHEMA_COMPILERS });
    const fromBundle = CapabilityRegistry.fromManifests(sources, { compilers: precompiledCompilers(precompiled) });
    expect(fromBundle.ids()).toEqual(atRunTime.ids());
    expect(fromBundle.ids()).toEqual(expect.arrayContaining(['mixed.transfer', 'mixed.lookup']));
    expect(fromBundle.report).toEqual(atRunTime.report);
    expect(results(fromBundle)).toEqual(results(atRunTime));
    const mixed = fromBundle.report.connectors.find((c) => c.connector_id === 'mixed');
    expect(mixed?.rejected.map((r) => [r.capability_id, r.problem])).toEqual([
      ['mixed.unknown_keyword', 'schema_invalid'],
      ['mixed.dialect', 'schema_invalid'],
    ]);
  });

  it('carries the connectors manifests and support records, so the registry is the same built from the module alone', () => {
    const fromModule = CapabilityRegistry.fromManifests(
      precompiled.connectors.map((c) => ({ manifest: c.manifest, support: c.support })),
      { compilers: precompiledCompilers(precompiled) },
    );
    expect(fromModule.report).toEqual(CapabilityRegistry.fromManifests(sources, { compilers: AJV_SCHEMA_COMPILERS }).report);
  });

  it('refuses a registration it was not built for, or serves it from the fallback', () => {
    const changed = manifest('mixed', [cap('mixed.transfer', { ...INPUT_2020, required: ['amount'] })]);
    expect(() => CapabilityRegistry.fromManifests([changed], { compilers: precompiledCompilers(precompiled) })).toThrow(PrecompiledMismatchError);
    expect(() => CapabilityRegistry.fromManifests(sources, { compilers: precompiledCompilers(precompiled), validateFormats: false })).toThrow(
      PrecompiledMismatchError,
    );
    const withFallback = CapabilityRegistry.fromManifests([changed], { compilers: precompiledCompilers(precompiled, AJV_SCHEMA_COMPILERS) });
    expect(withFallback.report).toEqual(CapabilityRegistry.fromManifests([changed], { compilers: AJV_SCHEMA_COMPILERS }).report);
  });

  it('the composition uses it when it covers the manifests and falls back to run-time ajv otherwise', async () => {
    const expected = CapabilityRegistry.fromManifests(sources, { compilers: AJV_SCHEMA_COMPILERS });
    expect(results(await buildRegistry(sources, precompiled))).toEqual(results(expected));
    expect((await buildRegistry(sources, undefined)).report).toEqual(expected.report);
    const changed = [...sources, manifest('other', [cap('other.lookup', INPUT_07)])];
    expect((await buildRegistry(changed, precompiled)).report).toEqual(CapabilityRegistry.fromManifests(changed, { compilers: AJV_SCHEMA_COMPILERS }).report);
  });

  it('records each connector registration (admission report and manifest hash), and the registry built from it is the one built from the manifests', () => {
    for (const [i, c] of precompiled.connectors.entries()) {
      const input = inputs[i] as PrecompileSource;
      expect(c.recorded).toEqual({ manifest_hash: hashJson(input.manifest), admission: admitManifest(input.manifest, input.support) });
    }
    const fromRecord = CapabilityRegistry.fromManifests(
      precompiled.connectors.map((c) => ({ manifest: c.manifest, support: c.support, recorded: c.recorded })),
      { compilers: precompiledCompilers(precompiled) },
    );
    const atRunTime = CapabilityRegistry.fromManifests(sources, { compilers: AJV_SCHEMA_COMPILERS });
    expect(fromRecord.report).toEqual(atRunTime.report);
    const registered = (registry: CapabilityRegistry) =>
      registry.ids().map((id) => {
        const { validateInput: _i, validateOutput: _o, ...rest } = registry.lookup(id);
        return rest;
      });
    expect(registered(fromRecord)).toEqual(registered(atRunTime));
    expect(results(fromRecord)).toEqual(results(atRunTime));
  });

  it('takes a record as given at run time, which is why a record that does not match its manifest is refused at bundle time', () => {
    const payments = precompiled.connectors[0] as PrecompiledConnector;
    const source = inputs[0] as PrecompileSource;
    expect(() => checkRegistrationRecord(source, payments.recorded)).not.toThrow();
    const admission = payments.recorded.admission;
    const [first, ...rest] = admission.capabilities;
    const tampered = [
      // another manifest's hash
      { ...payments.recorded, manifest_hash: hashJson({ other: true }) },
      // a capability dropped from the admitted ones
      { ...payments.recorded, admission: { ...admission, capabilities: rest } },
      // an admitted capability with another input schema
      {
        ...payments.recorded,
        admission: { ...admission, capabilities: [{ ...first, capability: { ...first?.capability, input_schema: { type: 'object' } } }, ...rest] },
      },
      // a capability admitted with other flags than the connector declares
      { ...payments.recorded, admission: { ...admission, capabilities: [{ ...first, implementation_support: implementationSupport() }, ...rest] } },
      // an issue the admission does not raise
      { ...payments.recorded, admission: { ...admission, admitted: false, issues: [{ rule: 'discovery succeeds' }] } },
    ] as RegistrationRecord[];
    for (const recorded of tampered) {
      // Trusted as given when composing: the registry reports what the record says.
      const registry = CapabilityRegistry.fromManifests([{ manifest: payments.manifest, support: payments.support, recorded }], {
        compilers: AJV_SCHEMA_COMPILERS,
      });
      expect(registry.report.connectors[0]?.admission).toEqual(recorded.admission);
      // So the bundling refuses it.
      expect(() => checkRegistrationRecord(source, recorded)).toThrow(RegistrationRecordMismatchError);
    }
  });
});
