/**
 * Pure parts of the declarative HTTP connector: JSON pointers, templates,
 * mappings, the idempotency-key derivation, the configuration schema and
 * Retry-After parsing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  HttpConnectorConfigSchema,
  MappingError,
  applyMapping,
  buildRequest,
  deriveIdempotencyKey,
  getPointer,
  parsePointer,
  parseTemplate,
  retryAfterMs,
  setPointer,
  type HttpConnectorConfig,
  type IdempotencyIdentity,
  type MappingScope,
} from '../../../../lib/connectors/http/index.js';
import { paymentsConnectorConfig } from '../../../../lib/connectors/reference/payments.js';
import type { JsonValue } from '../../../../packages/connector-sdk/src/protocol/index.js';

const scope = (document: unknown, ctx: Record<string, string> = {}): MappingScope => ({ document, context: (name) => ctx[name] });

describe('JSON pointers (RFC 6901)', () => {
  it('reads with ~0 / ~1 escapes and array indices', () => {
    const doc = { 'a/b': { 'm~n': [10, 20] }, '': 1 };
    expect(parsePointer('/a~1b/m~0n/1')).toEqual(['a/b', 'm~n', '1']);
    expect(getPointer(doc, '/a~1b/m~0n/1')).toBe(20);
    expect(getPointer(doc, '/')).toBe(1);
    expect(getPointer(doc, '')).toEqual(doc);
    expect(getPointer(doc, '/a~1b/m~0n/01')).toBeUndefined();
    expect(getPointer(doc, '/missing/deeper')).toBeUndefined();
    expect(getPointer({}, '/__proto__')).toBeUndefined();
    expect(getPointer({ a: 1 }, '/constructor')).toBeUndefined();
  });

  it('writes create intermediate objects and refuse prototype keys', () => {
    expect(setPointer({}, '/a/b', 1)).toEqual({ a: { b: 1 } });
    expect(setPointer({ list: [1] }, '/list/-', 2)).toEqual({ list: [1, 2] });
    expect(setPointer({ x: 1 }, '', 'whole')).toBe('whole');
    expect(() => setPointer({}, '/__proto__/polluted', true)).toThrow(TypeError);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('what is written at a pointer is read back from it (property)', () => {
    const token = fc.string({ maxLength: 6 }).filter((t) => !['__proto__', 'constructor', 'prototype', '-'].includes(t) && !/^\d+$/.test(t));
    fc.assert(
      fc.property(fc.array(token, { minLength: 1, maxLength: 5 }), fc.jsonValue(), (tokens, value) => {
        const pointer = tokens.map((t) => `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
        const doc = setPointer({}, pointer, value as JsonValue);
        expect(getPointer(doc, pointer)).toEqual(value);
      }),
    );
  });
});

describe('templates and mappings', () => {
  it('parses literals, pointers, context values and escaped braces', () => {
    expect(parseTemplate('a{/x}b{$action_id}{{c}}')).toEqual([{ text: 'a' }, { pointer: '/x' }, { text: 'b' }, { context: 'action_id' }, { text: '{c}' }]);
    expect(() => parseTemplate('{x}')).toThrow(TypeError);
    expect(() => parseTemplate('open {')).toThrow(TypeError);
    expect(() => parseTemplate('close }')).toThrow(TypeError);
  });

  it('maps values, defaults, optional omissions and literals', () => {
    const out = applyMapping(
      {
        '/a': { from: '/x' },
        '/b/c': { from: '/missing', optional: true },
        '/d': { from: '/missing', default: 7 },
        '/e': { value: { fixed: true } },
        '/f': { template: '{/x}-{$tenant_id}' },
        '/g': { context: 'transaction_id', optional: true },
      },
      scope({ x: 'X' }, { tenant_id: 'T' }),
    );
    expect(out).toEqual({ a: 'X', d: 7, e: { fixed: true }, f: 'X-T' });
  });

  it('a missing required value is a MappingError naming the target, never the value', () => {
    let err: unknown;
    try {
      applyMapping({ '/amount': { from: '/amount' } }, scope({ secretish: 'v' }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MappingError);
    expect(err).toMatchObject({ target: '/amount', reason: 'missing' });
    expect(() => applyMapping({ '/a': { template: '{/obj}' } }, scope({ obj: { k: 1 } }))).toThrow(MappingError);
  });

  it('percent-encodes path placeholders and repeats array query values', () => {
    const req = buildRequest(
      'https://api.example/v2/',
      {
        method: 'GET',
        path: '/items/{/id}/{$action_id}',
        query: { tag: { from: '/tags' }, none: { from: '/nope', optional: true } },
        headers: { 'X-Tenant': { context: 'tenant_id' } },
      },
      scope({ id: 'a b/c?d', tags: ['x', 'y'] }, { action_id: 'act:1', tenant_id: 't1' }),
    );
    expect(req.url.toString()).toBe('https://api.example/v2/items/a%20b%2Fc%3Fd/act%3A1?tag=x&tag=y');
    expect(req.headers).toEqual({ 'x-tenant': 't1' });
    expect(req.route).toBe('/items/{/id}/{$action_id}');
  });
});

describe('the idempotency key derivation', () => {
  const identity = fc.oneof(
    fc.record({
      namespace: fc.constantFrom('payments', 'tickets'),
      capability_id: fc.constantFrom('a.b', 'c.d'),
      purpose: fc.constantFrom('effect' as const, 'cancel' as const),
      kind: fc.constant('reservation' as const),
      reservation_id: fc.stringMatching(/^[\x21-\x7e]{1,40}$/),
    }),
    fc.record({
      namespace: fc.constantFrom('payments', 'tickets'),
      capability_id: fc.constantFrom('a.b', 'c.d'),
      purpose: fc.constantFrom('effect' as const, 'cancel' as const),
      kind: fc.constant('action' as const),
      tenant_id: fc.option(fc.stringMatching(/^[a-z0-9-]{1,12}$/), { nil: undefined }),
      action_id: fc.stringMatching(/^[a-z0-9-]{1,12}$/),
      transaction_id: fc.option(fc.stringMatching(/^[a-z0-9-]{1,12}$/), { nil: undefined }),
    }),
  );
  const clean = (i: IdempotencyIdentity): IdempotencyIdentity => JSON.parse(JSON.stringify(i)) as IdempotencyIdentity;

  it('is deterministic, printable and bounded (property)', () => {
    fc.assert(
      fc.property(identity, (i) => {
        const k = deriveIdempotencyKey(clean(i));
        expect(k).toBe(deriveIdempotencyKey(clean(i)));
        expect(k).toMatch(/^aip1-[A-Za-z0-9_-]{43}$/);
      }),
    );
  });

  it('separates distinct identities (property)', () => {
    fc.assert(
      fc.property(identity, identity, (a, b) => {
        const same = JSON.stringify(clean(a)) === JSON.stringify(clean(b));
        expect(deriveIdempotencyKey(clean(a)) === deriveIdempotencyKey(clean(b))).toBe(same);
      }),
    );
  });
});

describe('the configuration schema', () => {
  const valid = (): HttpConnectorConfig => paymentsConnectorConfig({ baseUrl: 'http://127.0.0.1:4010' });
  const issues = (c: unknown): string[] => {
    const r = HttpConnectorConfigSchema.safeParse(c);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('accepts the payments configuration', () => {
    expect(issues(valid())).toEqual([]);
  });

  it('refuses reserved headers, GET bodies, unknown context names and pending without a lookup', () => {
    const c = valid();
    const charge = c.capabilities[0]!;
    const invoke = charge.operations.invoke!;
    expect(
      issues({
        ...c,
        capabilities: [
          {
            ...charge,
            operations: { ...charge.operations, invoke: { ...invoke, request: { ...invoke.request, headers: { Authorization: { value: 'x' } } } } },
          },
        ],
      }).join(),
    ).toContain('reserved');
    expect(
      issues({
        ...c,
        capabilities: [
          {
            ...charge,
            operations: { ...charge.operations, invoke: { ...invoke, request: { ...invoke.request, headers: { 'Idempotency-Key': { value: 'x' } } } } },
          },
        ],
      }).join(),
    ).toContain('set by the connector');
    expect(
      issues({
        ...c,
        capabilities: [{ ...charge, operations: { ...charge.operations, invoke: { ...invoke, request: { ...invoke.request, method: 'GET' } } } }],
      }).join(),
    ).toContain('GET request has no body');
    expect(
      issues({
        ...c,
        capabilities: [{ ...charge, operations: { ...charge.operations, invoke: { ...invoke, request: { ...invoke.request, path: '/v1/{$password}' } } } }],
      }).join(),
    ).toContain('unknown context value');
    expect(issues({ ...c, capabilities: [{ ...charge, operations: { ...charge.operations, reconcile: undefined } }] }).join()).toContain(
      'pending response needs the capability reconcile lookup',
    );
    expect(
      issues({
        ...c,
        capabilities: [{ ...charge, operations: { ...charge.operations, invoke: { ...invoke, output: { '/__proto__/x': { from: '/id' } } } } }],
      }).join(),
    ).toContain('output./__proto__/x: Invalid key');
  });
});

describe('Retry-After', () => {
  it('reads seconds and HTTP dates, capped at a day', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': '2' }))).toBe(2000);
    expect(retryAfterMs(new Headers({ 'retry-after': new Date(10_000).toUTCString() }), 4_000)).toBe(6000);
    expect(retryAfterMs(new Headers({ 'retry-after': '999999' }))).toBe(86_400_000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });
});
