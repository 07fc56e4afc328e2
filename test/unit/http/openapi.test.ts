import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPENAPI_DOC_PATH } from '../../../dev/scripts/gen-openapi.js';
import { ROUTE_LIST } from '../../../lib/http/routes.js';
import { buildOpenApiDocument, renderOpenApiDocument } from '../../../functions/shared/openapi.js';

type Json = Record<string, unknown>;

function refs(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) refs(x, out);
  else if (typeof v === 'object' && v !== null) {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push(x);
      else refs(x, out);
    }
  }
  return out;
}

describe('OpenAPI document', () => {
  it('docs/openapi.json matches the generator (run `npx tsx dev/scripts/gen-openapi.ts` to refresh)', () => {
    expect(readFileSync(OPENAPI_DOC_PATH, 'utf8')).toBe(renderOpenApiDocument());
  });

  it('is deterministic', () => {
    expect(renderOpenApiDocument()).toBe(renderOpenApiDocument());
  });

  it('is OpenAPI 3.1 with every route as an operation and every $ref resolvable', () => {
    const doc = buildOpenApiDocument() as Json & { paths: Record<string, Record<string, Json>>; components: { schemas: Record<string, unknown> } };
    expect(doc.openapi).toBe('3.1.0');
    for (const r of ROUTE_LIST) {
      const op = doc.paths[r.path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.path}`).toMatchObject({ operationId: r.id });
      expect(Object.keys(op?.responses as Json)).toContain('500');
      if (r.auth === 'jwt') expect(op?.security).toEqual([{ bearerAuth: [] }]);
      else expect(op?.security).toEqual([]);
    }
    for (const ref of refs(doc)) {
      expect(ref.startsWith('#/components/schemas/')).toBe(true);
      expect(doc.components.schemas[ref.slice('#/components/schemas/'.length)], ref).toBeDefined();
    }
  });

  it('documents request bodies from the zod schemas, strict (additionalProperties false)', () => {
    const doc = buildOpenApiDocument() as { components: { schemas: Record<string, Json> } };
    expect(doc.components.schemas.Action).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: expect.arrayContaining(['id', 'capability_id', 'input']),
    });
    expect(doc.components.schemas.DecisionBody).toMatchObject({ additionalProperties: false, properties: { decision: { enum: ['approve', 'deny'] } } });
    expect((doc.components.schemas.Action!.properties as Json).input).toEqual({ type: 'object' });
  });
});
