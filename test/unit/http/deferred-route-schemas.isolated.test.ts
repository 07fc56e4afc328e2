/**
 * Importing the route table builds none of its schemas: each is built on its
 * first use (`z.deferred`, docs/bench/analysis.md "Cold start and bundles").
 * Isolated: a fresh module graph, so no other file has used them first.
 *
 * zod calls its global post-processor hook once for every schema it
 * constructs (what `npm run bench:schema-census` counts with); installed
 * before the route table is imported, it counts the constructions each first
 * use causes.
 */
import { afterAll, describe, expect, it } from 'vitest';

interface ZodGlobalConfig {
  postProcessor?: (schema: unknown) => void;
}
const zodConfig = ((globalThis as { __zod_globalConfig?: ZodGlobalConfig }).__zod_globalConfig ??= {});
let constructed = 0;
zodConfig.postProcessor = () => {
  constructed++;
};
afterAll(() => {
  delete zodConfig.postProcessor;
});

const { ROUTE_LIST } = await import('../../../lib/http/routes.js');

describe('the route table’s schemas', () => {
  it('are built on their first use, not when the route table is imported', () => {
    const schemas = new Set<object>();
    for (const route of ROUTE_LIST) {
      for (const s of [route.pathParams, route.query, route.bodySchema, ...Object.values(route.responses).map((r) => r.schema)]) {
        if (s !== undefined) schemas.add(s);
      }
    }
    expect(schemas.size).toBeGreaterThan(10);
    const unbuilt: number[] = [];
    let i = 0;
    for (const s of schemas) {
      const before = constructed;
      // The first read of any property builds a deferred schema.
      expect((s as { _zod: { def: { type: string } } })._zod.def.type).toEqual(expect.any(String));
      if (constructed === before) unbuilt.push(i);
      i++;
    }
    // Every schema built something on its first use: none had been built when the table was imported.
    expect(unbuilt).toEqual([]);
  });

  it('parse as declared, and only their first parse builds', () => {
    const route = ROUTE_LIST.find((r) => r.id === 'getAction');
    const parse = () => {
      expect(route?.pathParams?.safeParse({ id: 'act-1' }).success).toBe(true);
      expect(route?.pathParams?.safeParse({ id: 'bad id' }).success).toBe(false);
      expect(route?.query?.safeParse({ wait: '5' }).data).toEqual({ wait: 5 });
      expect(route?.query?.safeParse({ wait: 'soon' }).success).toBe(false);
    };
    parse();
    const before = constructed;
    parse();
    expect(constructed).toBe(before);
  });
});
