/**
 * The OpenAPI 3.1 document of the HTTPS API, generated from the route table
 * (lib/http/routes.ts) and the zod schemas with zod 4's
 * `z.toJSONSchema` (JSON Schema 2020-12, OpenAPI 3.1's dialect).
 *
 * Deterministic: the same code gives byte-identical JSON, so the committed
 * docs/openapi.json is checked against it by a unit test
 * (regenerate with `npx tsx dev/scripts/gen-openapi.ts`).
 */
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { ProblemSchema } from '../../packages/connector-sdk/src/protocol/problem.js';
import {
  ActionResultSchema,
  ActionSchema,
  ActionStateSchema,
  CancelBodySchema,
  CapabilityListSchema,
  DecisionBodySchema,
  HealthSchema,
  MAX_WAIT_SECONDS,
  RuntimeObjectSchema,
  SubmitBodySchema,
  SubmitResponseSchema,
  TENANT_HEADER,
  TransactionRequestSchema,
  TransactionResultSchema,
} from '../../lib/http/schemas.js';
import { JsonObjectSchema } from '../../packages/connector-sdk/src/protocol/json.js';
import { ROUTE_LIST, type RouteDefinition } from '../../lib/http/routes.js';

export const OPENAPI_VERSION = '3.1.0';
export const API_VERSION = '1.0.0';

type Json = Record<string, unknown>;

/** Named component schemas, in document order. */
const COMPONENTS: readonly [string, z.ZodMiniType][] = [
  ['Action', ActionSchema],
  ['TransactionRequest', TransactionRequestSchema],
  ['SubmitBody', SubmitBodySchema],
  ['ActionResult', ActionResultSchema],
  ['TransactionResult', TransactionResultSchema],
  ['SubmitResponse', SubmitResponseSchema],
  ['ActionState', ActionStateSchema],
  ['CancelBody', CancelBodySchema],
  ['DecisionBody', DecisionBodySchema],
  ['CapabilityList', CapabilityListSchema],
  ['Health', HealthSchema],
  ['RuntimeObject', RuntimeObjectSchema],
  ['Problem', ProblemSchema],
];

const REF_PREFIX = '#/components/schemas/';

function override(ctx: { zodSchema: unknown; jsonSchema: Json }): void {
  // JSON payload fields are validated by an iterative walk (z.custom), which JSON Schema cannot express beyond "an object".
  if (ctx.zodSchema === JsonObjectSchema) ctx.jsonSchema.type = 'object';
}

function clean(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

function componentSchemas(): { schemas: Record<string, Json>; refOf: Map<z.ZodMiniType, string> } {
  const registry = z.registry<{ id: string }>();
  const refOf = new Map<z.ZodMiniType, string>();
  for (const [id, schema] of COMPONENTS) {
    registry.add(schema, { id });
    refOf.set(schema, `${REF_PREFIX}${id}`);
  }
  const out = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    unrepresentable: 'any',
    uri: (id) => `${REF_PREFIX}${id}`,
    override: override as never,
  });
  const schemas: Record<string, Json> = {};
  for (const [id] of COMPONENTS) schemas[id] = clean(out.schemas[id] as Json);
  return { schemas, refOf };
}

function inlineSchema(schema: z.ZodMiniType, io: 'input' | 'output'): Json {
  return clean(z.toJSONSchema(schema, { target: 'draft-2020-12', unrepresentable: 'any', io, override: override as never }) as Json);
}

function schemaRef(schema: z.ZodMiniType | undefined, refOf: Map<z.ZodMiniType, string>): Json | undefined {
  if (schema === undefined) return undefined;
  const ref = refOf.get(schema);
  return ref !== undefined ? { $ref: ref } : inlineSchema(schema, 'output');
}

/** The shape of a zod object (also behind a refinement). */
function shapeOf(schema: z.ZodMiniType | undefined): Record<string, z.ZodMiniType> {
  if (schema === undefined) return {};
  const shape = (schema as unknown as { shape?: Record<string, z.ZodMiniType> }).shape;
  return shape ?? {};
}

function isOptional(schema: z.ZodMiniType): boolean {
  return (schema as unknown as { _zod: { optin?: string } })._zod.optin === 'optional';
}

function parameters(route: RouteDefinition): Json[] {
  const out: Json[] = [];
  for (const [name, schema] of Object.entries(shapeOf(route.pathParams))) {
    const s = inlineSchema(schema, 'input');
    const { description, ...rest } = s;
    out.push({ name, in: 'path', required: true, ...(description !== undefined ? { description } : {}), schema: rest });
  }
  for (const [name, schema] of Object.entries(shapeOf(route.query))) {
    const s = inlineSchema(schema, 'input');
    const { description, ...rest } = s;
    out.push({ name, in: 'query', required: !isOptional(schema), ...(description !== undefined ? { description } : {}), schema: rest });
  }
  if (route.auth === 'jwt' && route.tenant !== 'none') {
    out.push({
      name: TENANT_HEADER,
      in: 'header',
      required: false,
      description:
        route.tenant === 'required'
          ? 'The tenant to act in. Required when the caller belongs to several tenants; must be one of them.'
          : 'Restricts the answer to one of the caller’s tenants; without it a caller of several tenants gets all of them.',
      schema: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9._:@/-]+$' },
    });
  }
  if (route.preferWait) {
    out.push({
      name: 'Prefer',
      in: 'header',
      required: false,
      description: `RFC 7240 preferences; \`wait=N\` (N at most ${MAX_WAIT_SECONDS}) waits up to N seconds for a queued action to finish.`,
      schema: { type: 'string' },
    });
  }
  return out;
}

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: bad JSON, wrong types, unknown fields, or a failed envelope rule',
  401: 'Missing or invalid bearer token',
  403: 'The token lacks the scope or tenant membership this call needs',
  404: 'Not found',
  409: 'Conflict with the current state',
  413: 'Request body too large',
  415: 'The body must be application/json',
  422: 'Semantically invalid request',
  429: 'Too many requests',
  500: 'Internal error (no details are disclosed)',
  501: 'Not supported',
  503: 'Temporarily unavailable; retry after the indicated delay',
  504: 'Timed out',
};

/** Problem responses name no codes here (docs/error-catalogue.md lists them), so catalogue edits do not touch this document. */
function problemResponse(status: number): Json {
  return {
    description: PROBLEM_DESCRIPTIONS[status] ?? 'Error',
    content: { 'application/problem+json': { schema: { $ref: `${REF_PREFIX}Problem` } } },
  };
}

function operation(route: RouteDefinition, refOf: Map<z.ZodMiniType, string>): Json {
  const responses: Record<string, Json> = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const schema = schemaRef(r.schema, refOf);
    const resp: Json = { description: r.description };
    if (r.headers) {
      resp.headers = Object.fromEntries(Object.entries(r.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }]));
    }
    resp.content = { 'application/json': { schema: schema ?? { type: 'object' } } };
    responses[status] = resp;
  }
  const problems = new Set<number>([...route.problems, 500]);
  if (route.auth === 'jwt') {
    problems.add(401);
    problems.add(403);
  }
  for (const status of [...problems].sort((a, b) => a - b)) {
    if (responses[String(status)] === undefined) responses[String(status)] = problemResponse(status);
  }
  const op: Json = {
    operationId: route.id,
    summary: route.summary,
    description: route.description,
    tags: [route.tag],
    security: route.auth === 'jwt' ? [{ bearerAuth: [] }] : [],
  };
  if (route.scopes.length > 0) op['x-aip-scopes-any-of'] = [...route.scopes];
  const params = parameters(route);
  if (params.length > 0) op.parameters = params;
  if (route.body !== 'none' && route.bodySchema !== undefined) {
    op.requestBody = {
      required: route.body === 'required',
      content: { 'application/json': { schema: schemaRef(route.bodySchema, refOf) } },
    };
  }
  op.responses = responses;
  return op;
}

/** Builds the OpenAPI 3.1 document. */
export function buildOpenApiDocument(routes: readonly RouteDefinition[] = ROUTE_LIST): Json {
  const { schemas, refOf } = componentSchemas();
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    const item = paths[route.path] ?? {};
    item[route.method.toLowerCase()] = operation(route, refOf);
    paths[route.path] = item;
  }
  return {
    openapi: OPENAPI_VERSION,
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'AIP runtime API',
      version: API_VERSION,
      description:
        'Governed actions, transactions, approvals and operator views of the AIP runtime. Errors are RFC 9457 problem documents ' +
        '(`application/problem+json`) whose `type` is `urn:aip:error:<code>`; docs/error-catalogue.md lists every code. ' +
        `Callers belonging to several tenants name one with the ${TENANT_HEADER} header.`,
    },
    tags: [
      { name: 'actions', description: 'Submit, observe and cancel actions' },
      { name: 'transactions', description: 'Transaction records, results and receipts' },
      { name: 'operator', description: 'What is stuck and needs attention' },
      { name: 'approvals', description: 'Pending approvals and decisions' },
      { name: 'meta', description: 'Capabilities, health and this document' },
    ],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A JWT from the configured identity provider' },
      },
    },
  };
}

/** The document as committed (2-space JSON, trailing newline). */
export function renderOpenApiDocument(): string {
  return `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
}
