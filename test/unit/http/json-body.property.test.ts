/**
 * Fuzzing the body path of real route handlers (POST /v1/actions and
 * POST /v1/approvals/{id}/decision): whatever the bytes, the answer is a
 * 2xx (valid input reached the stub runtime) or a 4xx problem document,
 * never a 5xx.
 */
import type { APIGatewayProxyResult } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSubmitActionHandler } from '../../../functions/http/actions.js';
import { createDecideApprovalHandler } from '../../../functions/http/approvals.js';
import { parseJsonBody } from '../../../functions/shared/json-body.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { ProblemSchema } from '../../../packages/connector-sdk/src/protocol/problem.js';
import { deps, lambdaContext, proxyEvent, stubRuntime } from './support.js';

const runtime = stubRuntime({
  submit: async (_caller, bodyValue) => {
    const id = typeof bodyValue === 'object' && bodyValue !== null && 'id' in bodyValue ? String((bodyValue as { id: unknown }).id) : 'x';
    return { disposition: 'completed', http_status: 200, action_id: id, tenant_id: 'acme', action_result: { action_id: id, status: 'completed' } };
  },
  decideApproval: async () => ({ status: 'approved' }),
});
const submit = createSubmitActionHandler(deps(runtime));
const decide = createDecideApprovalHandler(deps(runtime));

type Send = (body: string, isBase64Encoded: boolean) => Promise<APIGatewayProxyResult>;

const targets: [string, Send][] = [
  [
    'submit',
    (b, b64) =>
      submit(
        proxyEvent({ method: 'POST', path: '/v1/actions', headers: { 'Content-Type': 'application/json' }, body: b, isBase64Encoded: b64 }),
        lambdaContext(),
      ),
  ],
  [
    'decide',
    (b, b64) =>
      decide(
        proxyEvent({
          method: 'POST',
          resource: '/v1/approvals/{id}/decision',
          path: '/v1/approvals/ap-1/decision',
          pathParameters: { id: 'ap-1' },
          headers: { 'Content-Type': 'application/json' },
          body: b,
          isBase64Encoded: b64,
        }),
        lambdaContext(),
      ),
  ],
];

function expectNever5xx(res: APIGatewayProxyResult): void {
  expect(res.statusCode).toBeGreaterThanOrEqual(200);
  expect(res.statusCode).toBeLessThan(500);
  if (res.statusCode >= 400) {
    expect(res.headers?.['Content-Type']).toBe('application/problem+json');
    const problem = ProblemSchema.parse(JSON.parse(res.body));
    expect(problem.status).toBe(res.statusCode);
  }
}

/** JSON text with `__proto__` / `constructor` / `prototype` keys planted at random depths. */
const protoJsonArb = fc
  .tuple(fc.json({ maxDepth: 3 }), fc.constantFrom('__proto__', 'constructor', 'prototype'), fc.json({ maxDepth: 2 }), fc.nat(4))
  .map(([inner, key, value, depth]) => {
    let text = `{"${key}":${value},"pad":${inner}}`;
    for (let i = 0; i < depth; i++) text = `{"input":${text}}`;
    return text;
  });

/** Deeply nested arrays and objects, up to far beyond the depth limit. */
const deepJsonArb = fc
  .tuple(fc.integer({ min: 1, max: 20_000 }), fc.boolean())
  .map(([d, obj]) => (obj ? `${'{"a":'.repeat(d)}0${'}'.repeat(d)}` : `${'['.repeat(d)}${']'.repeat(d)}`));

/** Strings holding lone surrogates, raw or escaped. */
const surrogateJsonArb = fc.tuple(fc.integer({ min: 0xd800, max: 0xdfff }), fc.boolean(), fc.boolean()).map(([cp, escaped, asKey]) => {
  const s = escaped ? `\\u${cp.toString(16)}` : String.fromCharCode(cp);
  return asKey ? `{"${s}":1}` : `{"id":"a","capability_id":"c","input":{"k":"${s}"}}`;
});

const nearActionArb = fc
  .record(
    {
      id: fc.oneof(fc.string(), fc.constant('act-1')),
      capability_id: fc.oneof(fc.string(), fc.constant('cap')),
      input: fc.oneof(fc.object({ maxDepth: 2 }), fc.anything({ maxDepth: 2 })),
      transaction: fc.record({ mode: fc.oneof(fc.string(), fc.constantFrom('dry_run', 'plan', 'commit', 'execute')) }, { requiredKeys: [] }),
      decision: fc.oneof(fc.constantFrom('approve', 'deny'), fc.string()),
      reason: fc.string(),
    },
    { requiredKeys: [] },
  )
  .map((v) => JSON.stringify(v));

describe('JSON body fuzzing: never a 5xx', () => {
  for (const [name, send] of targets) {
    describe(name, () => {
      it('arbitrary text', async () => {
        await fc.assert(
          fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 200 }), async (text) => expectNever5xx(await send(text, false))),
          { numRuns: 300 },
        );
      });

      it('arbitrary JSON and near-envelopes', async () => {
        await fc.assert(
          fc.asyncProperty(fc.oneof(fc.json({ maxDepth: 5 }), nearActionArb), async (text) => expectNever5xx(await send(text, false))),
          { numRuns: 300 },
        );
      });

      it('arbitrary bytes (invalid UTF-8 included), base64-encoded as API Gateway sends binary', async () => {
        await fc.assert(
          fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (bytes) => expectNever5xx(await send(Buffer.from(bytes).toString('base64'), true))),
          { numRuns: 300 },
        );
      });

      it('forbidden prototype keys', async () => {
        await fc.assert(
          fc.asyncProperty(protoJsonArb, async (text) => {
            const res = await send(text, false);
            expectNever5xx(res);
            expect(res.statusCode).toBe(400);
          }),
          { numRuns: 200 },
        );
        expect(({} as Record<string, unknown>).pad).toBeUndefined();
      });

      it('deep nesting', async () => {
        await fc.assert(
          fc.asyncProperty(deepJsonArb, async (text) => expectNever5xx(await send(text, false))),
          { numRuns: 60 },
        );
      });

      it('lone surrogates', async () => {
        await fc.assert(
          fc.asyncProperty(surrogateJsonArb, async (text) => {
            const res = await send(text, false);
            expectNever5xx(res);
            expect(res.statusCode).toBe(400);
          }),
          { numRuns: 100 },
        );
      });
    });
  }

  it('huge bodies get 413, whatever their content', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 256 * 1024 + 1, max: 2 * 1024 * 1024 }), fc.constantFrom('x', 'é', '{', '😀'), async (size, ch) => {
        const text = ch.repeat(Math.ceil(size / Buffer.byteLength(ch)));
        for (const [, send] of targets) {
          const res = await send(text, false);
          expectNever5xx(res);
          expect(res.statusCode).toBe(413);
        }
      }),
      { numRuns: 10 },
    );
  });

  it('parseJsonBody only ever throws 4xx AipErrors', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.json(), protoJsonArb, surrogateJsonArb), (text) => {
        try {
          parseJsonBody(text);
        } catch (e) {
          expect(e).toBeInstanceOf(AipError);
          const status = (e as AipError).httpStatus;
          expect(status).toBeGreaterThanOrEqual(400);
          expect(status).toBeLessThan(500);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
