import middy from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { httpErrorHandler } from '../../../functions/shared/error-handler.js';
import type { AipHttpEvent } from '../../../functions/shared/http.js';
import { jsonBody } from '../../../functions/shared/json-body.js';
import { parseAt, queryObject, validateRequest } from '../../../functions/shared/validate-request.js';
import { ActionPathSchema, DecisionBodySchema, GetActionQuerySchema, GetTransactionQuerySchema, OperatorQuerySchema } from '../../../lib/http/schemas.js';
import { expectProblem, lambdaContext, proxyEvent, type EventInput } from './support.js';

function run(input: EventInput, validators: Parameters<typeof validateRequest>[0]) {
  let state: unknown;
  const h = middy<AipHttpEvent, APIGatewayProxyResult>(async (event: AipHttpEvent) => {
    state = { path: event.aip?.path, query: event.aip?.query, body: event.aip?.body };
    return { statusCode: 204, body: '' };
  })
    .use(httpErrorHandler())
    .use(jsonBody())
    .use(validateRequest(validators));
  return h(proxyEvent(input), lambdaContext()).then((res) => ({ res, state }));
}

describe('validateRequest', () => {
  it('parses path, query and body into event.aip', async () => {
    const { res, state } = await run(
      { pathParameters: { id: 'act-1' }, query: { wait: '7' }, method: 'POST', body: '{"decision":"approve"}' },
      { path: ActionPathSchema, query: GetActionQuerySchema, body: (v) => parseAt(DecisionBodySchema, v, 'body') },
    );
    expect(res.statusCode).toBe(204);
    expect(state).toEqual({ path: { id: 'act-1' }, query: { wait: 7 }, body: { decision: 'approve' } });
  });

  it('rejects unknown query parameters, bad values and repeated single-valued parameters with request.invalid', async () => {
    for (const query of [{ wat: '1' }, { wait: '26' }, { wait: '-1' }, { wait: '1.5' }, { wait: 'abc' }, { wait: ['1', '2'] }] as Record<
      string,
      string | string[]
    >[]) {
      const p = expectProblem((await run({ query }, { query: GetActionQuerySchema })).res, 400, 'request.invalid');
      expect(p.details?.location).toBe('query');
    }
  });

  it('rejects an invalid path ID', async () => {
    const p = expectProblem((await run({ pathParameters: { id: 'a b' } }, { path: ActionPathSchema })).res, 400, 'request.invalid');
    expect(p.details?.location).toBe('path');
  });

  it('rejects unknown body fields and wrong types, naming paths but not values', async () => {
    const secret = 'sk_live_very_secret';
    const p = expectProblem(
      (await run({ method: 'POST', body: JSON.stringify({ decision: secret, extra: secret }) }, { body: (v) => parseAt(DecisionBodySchema, v, 'body') })).res,
      400,
      'request.invalid',
    );
    expect(p.details?.location).toBe('body');
    expect(JSON.stringify(p)).not.toContain(secret);
    expect(JSON.stringify(p.details?.issues)).toContain('extra');
  });

  it('GET /v1/transactions needs exactly one selector and a known include list', async () => {
    const ok = await run({ query: { plan_id: 'plan:t1', include: 'result,receipts' } }, { query: GetTransactionQuerySchema });
    expect(ok.state).toMatchObject({ query: { plan_id: 'plan:t1', include: { result: true, receipts: true } } });
    const repeated = await run({ query: { action_id: 'a', include: ['result', 'receipts'] } }, { query: GetTransactionQuerySchema });
    expect(repeated.state).toMatchObject({ query: { include: { result: true, receipts: true } } });
    for (const query of [{}, { plan_id: 'p', action_id: 'a' }, { transaction_id: 't', include: 'everything' }] as Record<string, string>[]) {
      expectProblem((await run({ query }, { query: GetTransactionQuerySchema })).res, 400, 'request.invalid');
    }
  });

  it('operator listing needs a known view and bounds limit', async () => {
    expect((await run({ query: { view: 'outcome_unknown', limit: '100' } }, { query: OperatorQuerySchema })).res.statusCode).toBe(204);
    for (const query of [
      {},
      { view: 'everything' },
      { view: 'reconciling', limit: '0' },
      { view: 'reconciling', limit: '101' },
      { view: 'reconciling', cursor: 'a b' },
    ] as Record<string, string>[]) {
      expectProblem((await run({ query }, { query: OperatorQuerySchema })).res, 400, 'request.invalid');
    }
  });

  it('queryObject prefers the multi-value map and never pollutes prototypes', () => {
    const o = queryObject({ queryStringParameters: { a: '2' }, multiValueQueryStringParameters: { a: ['1', '2'], __proto__: ['x'] } as never });
    expect(o.a).toEqual(['1', '2']);
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    expect(queryObject({ queryStringParameters: { b: '1' }, multiValueQueryStringParameters: null })).toEqual({ b: '1' });
    expect(queryObject({ queryStringParameters: null, multiValueQueryStringParameters: null })).toEqual({});
  });

  it('a "__proto__" query key is an unknown parameter, not a prototype write', async () => {
    const multi = JSON.parse('{"__proto__":["1"]}') as Record<string, string[]>;
    const event = proxyEvent({});
    event.multiValueQueryStringParameters = multi;
    const h = middy<AipHttpEvent, APIGatewayProxyResult>(async () => ({ statusCode: 204, body: '' }))
      .use(httpErrorHandler())
      .use(validateRequest({ query: z.strictObject({}) }));
    expectProblem(await h(event, lambdaContext()), 400, 'request.invalid');
  });
});
