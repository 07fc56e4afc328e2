/**
 * The capability registry: admission-gated registration, JSON Schema
 * validation with ajv (strict), issues without input values.
 */
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { implementationSupport, type ConnectorManifest, type ImplementationSupport } from '../../../packages/connector-sdk/src/index.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { hashJson, type Capability, type JsonObject } from '../../../packages/connector-sdk/src/protocol/index.js';
import { CapabilityRegistry } from '../../../lib/runtime/registry.js';

const TRANSFER_INPUT: JsonObject = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    amount: { type: 'integer', minimum: 1 },
    currency: { type: 'string', enum: ['EUR', 'USD'] },
    iban: { type: 'string', pattern: '^[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}$' },
    notify: { type: 'string', format: 'email' },
    meta: { type: 'object', properties: { ref: { type: 'string', maxLength: 8 } }, additionalProperties: false },
  },
  required: ['amount', 'currency', 'iban'],
  additionalProperties: false,
};

function cap(overrides: Partial<Capability> = {}): Capability {
  return {
    id: 'payments.transfer',
    kind: 'tool',
    input_schema: TRANSFER_INPUT,
    output_schema: { type: 'object', properties: { transfer_id: { type: 'string' } }, required: ['transfer_id'] },
    ...overrides,
  };
}

function manifest(capabilities: Capability[], connector_id = 'payments', support?: Record<string, ImplementationSupport>): ConnectorManifest {
  return {
    connector_id,
    version: '1.2.0',
    capabilities,
    implementation_support: support ?? Object.fromEntries(capabilities.map((c) => [c.id, implementationSupport({ invocation: true })])),
  };
}

const SECRET_LOOKING = 'DE89370400440532013000-SECRET';

describe('registration', () => {
  it('registers admitted capabilities with their connector, version and manifest hash', () => {
    const m = manifest([cap(), cap({ id: 'payments.refund' })]);
    const reg = CapabilityRegistry.fromManifests([m]);
    expect(reg.ids()).toEqual(['payments.refund', 'payments.transfer']);
    const found = reg.lookup('payments.transfer');
    expect(found).toMatchObject({ capability_id: 'payments.transfer', connector_id: 'payments', connector_version: '1.2.0', manifest_hash: hashJson(m) });
    expect(found.capability.id).toBe('payments.transfer');
    expect(found.implementation_support.invocation).toBe(true);
    expect(reg.report.connectors[0]).toMatchObject({ connector_id: 'payments', registered: ['payments.transfer', 'payments.refund'], rejected: [] });
  });

  it('a capability with an admission issue is not registered; the admission report is kept', () => {
    const streaming = cap({ id: 'payments.stream', execution: { supports_cancel: false, supports_streaming: true, supports_retry: false, timeout_ms: 1000 } });
    const reg = CapabilityRegistry.fromManifests([manifest([cap(), streaming])]);
    expect(reg.has('payments.stream')).toBe(false);
    expect(reg.has('payments.transfer')).toBe(true);
    const report = reg.report.connectors[0];
    expect(report?.admission.admitted).toBe(false);
    expect(report?.rejected).toEqual([
      { capability_id: 'payments.stream', problem: 'admission', detail: ['execution.supports_streaming requires streaming (flag streaming)'] },
    ]);
  });

  it('admits against the connector own support declarations when given', () => {
    const m = manifest([cap()]);
    const reg = CapabilityRegistry.fromManifests([{ manifest: m, support: { 'payments.transfer': implementationSupport({ invocation: true, retry: true }) } }]);
    expect(reg.has('payments.transfer')).toBe(false);
    expect(reg.report.connectors[0]?.rejected[0]?.detail).toContain('manifest implementation_support equals the connector declaration');
  });

  it('a malformed manifest registers nothing and is reported', () => {
    const reg = CapabilityRegistry.fromManifests([{ manifest: { connector_id: 'x' } }]);
    expect(reg.ids()).toEqual([]);
    expect(reg.report.connectors[0]?.admission.issues[0]?.rule).toBe('manifest matches the ConnectorManifest schema');
    expect(reg.report.connectors[0]?.connector_id).toBeUndefined();
  });

  it('a capability ID offered by two connectors is registered by neither (never manifest-order dependent)', () => {
    const reg = CapabilityRegistry.fromManifests([manifest([cap()], 'payments-a'), manifest([cap(), cap({ id: 'other.cap' })], 'payments-b')]);
    expect(reg.has('payments.transfer')).toBe(false);
    expect(reg.has('other.cap')).toBe(true);
    for (const c of reg.report.connectors) {
      expect(c.registered).not.toContain('payments.transfer');
      expect(c.rejected).toContainEqual({ capability_id: 'payments.transfer', problem: 'duplicate_across_connectors', detail: ['payments-a', 'payments-b'] });
    }
  });
});

describe('schema compilation (strict, once)', () => {
  it('a schema with an unknown keyword is rejected as schema_invalid, not silently accepted', () => {
    const reg = CapabilityRegistry.fromManifests([manifest([cap({ input_schema: { type: 'object', propertees: {} } })])]);
    expect(reg.has('payments.transfer')).toBe(false);
    const rejected = reg.report.connectors[0]?.rejected[0];
    expect(rejected?.problem).toBe('schema_invalid');
    expect(rejected?.detail[0]).toMatch(/^input schema: .*propertees/);
  });

  it('an unknown $schema dialect and an unresolvable (remote) $ref are rejected; nothing is fetched', () => {
    const reg = CapabilityRegistry.fromManifests([
      manifest([
        cap({ id: 'a.one', input_schema: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' } }),
        cap({ id: 'a.two', input_schema: { $ref: 'https://schemas.example.com/transfer.json' } }),
        cap({ id: 'a.three', output_schema: { type: 'object', format: 'no-such-format' } }),
      ]),
    ]);
    expect(reg.ids()).toEqual([]);
    expect(reg.report.connectors[0]?.rejected.map((r) => [r.capability_id, r.problem])).toEqual([
      ['a.one', 'schema_invalid'],
      ['a.two', 'schema_invalid'],
      ['a.three', 'schema_invalid'],
    ]);
    expect(reg.report.connectors[0]?.rejected[2]?.detail[0]).toMatch(/^output schema/);
  });

  it('draft-07 schemas are supported', () => {
    const reg = CapabilityRegistry.fromManifests([
      manifest([
        cap({ input_schema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } }),
      ]),
    ]);
    const c = reg.lookup('payments.transfer');
    expect(c.validateInput({ n: 1 })).toEqual([]);
    expect(c.validateInput({})).toEqual([{ path: '/n', keyword: 'required', message: "must have required property 'n'" }]);
  });

  it('schemas generated by the connector SDK (zod → JSON Schema 2020-12) compile in strict mode', () => {
    const input = z.toJSONSchema(
      z.strictObject({ amount: z.number().int().positive(), currency: z.enum(['EUR', 'USD']), email: z.email().optional(), when: z.iso.datetime().optional() }),
      { io: 'input', target: 'draft-2020-12' },
    ) as JsonObject;
    const output = z.toJSONSchema(z.object({ id: z.string().uuid(), tags: z.array(z.string()).max(3) }), {
      io: 'output',
      target: 'draft-2020-12',
    }) as JsonObject;
    const reg = CapabilityRegistry.fromManifests([manifest([cap({ input_schema: input, output_schema: output })])]);
    expect(reg.report.connectors[0]?.rejected).toEqual([]);
    const c = reg.lookup('payments.transfer');
    expect(c.validateInput({ amount: 5, currency: 'EUR', email: 'a@b.example' })).toEqual([]);
    // zod emits both `format` and `pattern` for emails: two issues, one path.
    expect(new Set(c.validateInput({ amount: 5, currency: 'EUR', email: 'not-an-email' }).map((i) => i.path))).toEqual(new Set(['/email']));
    expect(c.validateOutput({ id: '9b2f6c1e-7f4c-4a51-9d7e-0f7e1c2b3a4d', tags: ['a'] })).toEqual([]);
  });
});

describe('validation issues: paths and messages only', () => {
  const reg = CapabilityRegistry.fromManifests([manifest([cap(), cap({ id: 'no.output', output_schema: undefined })])]);
  const c = reg.lookup('payments.transfer');

  it('valid input has no issues', () => {
    expect(c.validateInput({ amount: 10, currency: 'EUR', iban: 'DE89370400440532013000' })).toEqual([]);
  });

  it('reports every violation by JSON Pointer, keyword and message, never echoing the values', () => {
    const issues = c.validateInput({
      amount: SECRET_LOOKING,
      currency: SECRET_LOOKING,
      iban: SECRET_LOOKING,
      notify: SECRET_LOOKING,
      meta: { ref: SECRET_LOOKING, extra: SECRET_LOOKING },
      [SECRET_LOOKING.slice(0, 4)]: 1,
    });
    expect(issues.map((i) => [i.path, i.keyword])).toEqual(
      expect.arrayContaining([
        ['/amount', 'type'],
        ['/currency', 'enum'],
        ['/iban', 'pattern'],
        ['/notify', 'format'],
        ['/meta/ref', 'maxLength'],
        ['/meta/extra', 'additionalProperties'],
      ]),
    );
    expect(JSON.stringify(issues)).not.toContain(SECRET_LOOKING);
    expect(JSON.stringify(issues)).not.toContain('SECRET');
  });

  it('missing required properties are reported at their path', () => {
    expect(c.validateInput({}).map((i) => i.path)).toEqual(['/amount', '/currency', '/iban']);
  });

  it('a path token with / or ~ is escaped (RFC 6901)', () => {
    expect(c.validateInput({ amount: 1, currency: 'EUR', iban: 'DE89370400440532013000', 'a/b~c': 1 }).map((i) => i.path)).toEqual(['/a~1b~0c']);
  });

  it('non-object input is an issue at the root', () => {
    expect(c.validateInput('hello')).toEqual([{ path: '', keyword: 'type', message: 'must be object' }]);
  });

  it('caps the number of issues', () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x${i}`, i]));
    expect(c.validateInput(many).length).toBeLessThanOrEqual(20);
  });

  it('validates output; a capability without output schema accepts any output', () => {
    expect(c.validateOutput({ transfer_id: 'tr-1' })).toEqual([]);
    expect(c.validateOutput({ transfer_id: 42 })).toEqual([{ path: '/transfer_id', keyword: 'type', message: 'must be string' }]);
    expect(reg.lookup('no.output').validateOutput({ anything: true })).toEqual([]);
  });
});

describe('lookup', () => {
  it('an unknown capability is AipError capability.not_found (404)', () => {
    const reg = CapabilityRegistry.fromManifests([manifest([cap()])]);
    let err: unknown;
    try {
      reg.lookup('payments.unknown');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AipError);
    expect(err).toMatchObject({ code: 'capability.not_found', details: { capability_id: 'payments.unknown' } });
    expect((err as AipError).httpStatus).toBe(404);
    expect(reg.find('payments.unknown')).toBeUndefined();
  });
});
