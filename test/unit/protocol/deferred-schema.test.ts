/**
 * `z.deferred` (packages/connector-sdk/src/common/zod.ts): a schema built on
 * its first use behaves as the schema built at once, under one identity.
 * test/unit/http/deferred-route-schemas.isolated.test.ts shows that importing
 * the route table builds none of its schemas.
 */
import { describe, expect, it } from 'vitest';
import * as z from '../../../packages/connector-sdk/src/common/zod.js';

/** Two schemas with every kind of composition the project uses, the inner ones passed in. */
function schemas(make: <T extends object>(build: () => T) => T) {
  const Id = make(() => z.string().check(z.minLength(1), z.maxLength(8), z.regex(/^[a-z0-9]+$/, { message: 'invalid ID' })));
  const Tagged = make(() => z.strictObject({ id: Id, tags: z.optional(z.array(Id).check(z.maxLength(2))) }).check(z.meta({ description: 'A tagged thing' })));
  const Count = make(() => z.pipe(z.string(), z.transform(Number)).check(z.meta({ description: 'A count' })));
  const Envelope = make(() =>
    z
      .strictObject({
        thing: Tagged,
        kind: z.discriminatedUnion('type', [z.strictObject({ type: z.literal('a'), a: Id }), z.strictObject({ type: z.literal('b'), n: z.int() })]),
        either: z.union([Id, z.array(Id)]),
        count: z.optional(Count),
        id: Id.check(z.meta({ description: 'The envelope ID' })),
        rest: z.record(Id, Tagged),
      })
      .check(
        z.superRefine((v, ctx) => {
          if (v.thing.id === v.id) ctx.addIssue({ code: 'custom', path: ['id'], message: 'must differ from the thing' });
        }),
      ),
  );
  return { Id, Tagged, Count, Envelope };
}

const now = <T extends object>(build: () => T): T => build();

const VALID = { thing: { id: 't1', tags: ['a'] }, kind: { type: 'a', a: 'x' }, either: ['p', 'q'], count: '3', id: 'e1', rest: { k: { id: 'r' } } };
const INPUTS: unknown[] = [
  VALID,
  { ...VALID, id: 't1' },
  { ...VALID, thing: { id: 'T!', tags: ['a', 'b', 'c'] } },
  { ...VALID, kind: { type: 'c' } },
  { ...VALID, kind: { type: 'b', n: 1.5 } },
  { ...VALID, either: 3 },
  { ...VALID, extra: true },
  { ...VALID, count: undefined, rest: { 'bad key': { id: 'r' } } },
  { ...VALID, thing: null },
  'not an object',
  undefined,
];

describe('z.deferred', () => {
  it('parses and refuses exactly as the schema built at once: outputs, issue codes, paths and messages', () => {
    const eager = schemas(now).Envelope;
    const deferred = schemas(z.deferred).Envelope;
    for (const input of INPUTS) {
      const a = eager.safeParse(input);
      const b = deferred.safeParse(input);
      expect(b.success).toBe(a.success);
      expect(b.data).toEqual(a.data);
      expect(b.error?.issues).toEqual(a.error?.issues);
      expect(z.safeParse(deferred, input).error?.issues).toEqual(a.error?.issues);
    }
  });

  it('builds on the first use, once, and only what is used', () => {
    let builds = 0;
    const Inner = z.deferred(() => {
      builds++;
      return z.string();
    });
    const Outer = z.deferred(() => z.strictObject({ inner: z.optional(Inner) }));
    const Unused = z.deferred(() => {
      builds++;
      return z.number();
    });
    expect(builds).toBe(0);
    expect(Outer.parse({})).toEqual({});
    expect(Outer.parse({ inner: 'x' })).toEqual({ inner: 'x' });
    expect(Inner.parse('y')).toBe('y');
    expect(builds).toBe(1);
    expect(Unused).toBeDefined();
    expect(builds).toBe(1);
  });

  it('converts to the same JSON Schema, descriptions and registry IDs included', () => {
    const eager = schemas(now);
    const deferred = schemas(z.deferred);
    for (const io of ['input', 'output'] as const) {
      expect(z.toJSONSchema(deferred.Envelope, { io, unrepresentable: 'any' })).toEqual(z.toJSONSchema(eager.Envelope, { io, unrepresentable: 'any' }));
    }
    const document = (s: ReturnType<typeof schemas>) => {
      const registry = z.registry<{ id: string }>();
      registry.add(s.Tagged, { id: 'Tagged' });
      registry.add(s.Envelope, { id: 'Envelope' });
      return z.toJSONSchema(registry, { unrepresentable: 'any', uri: (id) => `#/components/schemas/${id}` });
    };
    const expected = document(eager);
    expect(JSON.stringify(expected)).toContain('"$ref":"#/components/schemas/Tagged"');
    expect(document(deferred)).toEqual(expected);
  });

  it('keeps one identity, answers instanceof, and carries the built schema’s metadata', () => {
    const { Tagged, Id } = schemas(z.deferred);
    const eager = schemas(now).Tagged;
    expect(Tagged).toBe(Tagged);
    expect(Tagged instanceof z.ZodMiniObject).toBe(true);
    expect(Id instanceof z.ZodMiniString).toBe(true);
    expect(Tagged instanceof z.ZodMiniString).toBe(false);
    expect(Object.getPrototypeOf(Tagged)).toBe(Object.getPrototypeOf(eager));
    expect(z.globalRegistry.get(Tagged)).toEqual({ description: 'A tagged thing' });
    expect(Object.keys(Tagged.shape)).toEqual(['id', 'tags']);
    expect(Object.keys(Tagged).sort()).toEqual(Object.keys(eager).sort());
    expect('shape' in Tagged).toBe(true);
    // Derived schemas (.check, the functional API) build from the deferred one as from any schema.
    const Short = Id.check(z.maxLength(2));
    expect(Short.safeParse('abc').success).toBe(false);
    expect(z.extend(Tagged, { more: z.boolean() }).parse({ id: 'a', more: true })).toEqual({ id: 'a', more: true });
    // A method read from the deferred schema works detached, as zod's own do.
    const { parse } = Id;
    expect(parse('ok')).toBe('ok');
  });

  it('refuses a cycle while building and builds again after a failed build', () => {
    const Self: z.ZodMiniType = z.deferred(() => z.array(Self.check()));
    expect(() => Self.parse([])).toThrow(/cycle between deferred schemas/);
    let attempts = 0;
    const Flaky = z.deferred(() => {
      attempts++;
      if (attempts === 1) throw new Error('first build fails');
      return z.boolean();
    });
    expect(() => Flaky.parse(true)).toThrow('first build fails');
    expect(Flaky.parse(true)).toBe(true);
    expect(attempts).toBe(2);
  });

  it('cannot be frozen (its target would have to report properties it does not hold)', () => {
    const S = z.deferred(() => z.string());
    expect(() => Object.freeze(S)).toThrow(TypeError);
    expect(S.parse('still usable')).toBe('still usable');
  });
});
