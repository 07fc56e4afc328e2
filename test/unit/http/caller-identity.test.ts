import middy from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { callerIdentity } from '../../../functions/shared/caller-identity.js';
import { httpErrorHandler } from '../../../functions/shared/error-handler.js';
import type { AipHttpEvent } from '../../../functions/shared/http.js';
import { encodeAuthorizerContext } from '../../../lib/auth/authorizer-context.js';
import { ALICE, expectProblem, lambdaContext, proxyEvent, type EventInput } from './support.js';

function run(input: EventInput, anyOfScopes: string[] = []) {
  let caller: unknown;
  const h = middy<AipHttpEvent, APIGatewayProxyResult>(async (event: AipHttpEvent) => {
    caller = event.aip?.caller;
    return { statusCode: 204, body: '' };
  })
    .use(httpErrorHandler())
    .use(callerIdentity({ anyOfScopes }));
  return h(proxyEvent(input), lambdaContext()).then((res) => ({ res, caller }));
}

describe('callerIdentity', () => {
  it('rebuilds the caller from requestContext.authorizer', async () => {
    const { res, caller } = await run({});
    expect(res.statusCode).toBe(204);
    expect(caller).toEqual(ALICE);
  });

  it('ignores identity claims in the body and headers', async () => {
    const { caller } = await run({
      method: 'POST',
      headers: { 'X-Principal-Id': 'mallory', 'Content-Type': 'application/json' },
      body: JSON.stringify({ principal: { id: 'mallory', kind: 'service' }, tenants: ['victim'] }),
    });
    expect(caller).toEqual(ALICE);
  });

  it('answers 401 when the authorizer context is missing or malformed', async () => {
    expectProblem((await run({ caller: null })).res, 401, 'auth.unauthenticated');
    expectProblem((await run({ authorizer: {} })).res, 401, 'auth.unauthenticated');
    const ctx = encodeAuthorizerContext(ALICE);
    expectProblem((await run({ authorizer: { ...ctx, tenants: 'not json' } })).res, 401, 'auth.unauthenticated');
    expectProblem((await run({ authorizer: { ...ctx, principal_kind: 'root' } })).res, 401, 'auth.unauthenticated');
    expectProblem((await run({ authorizer: { ...ctx, tenants: '["a b"]' } })).res, 401, 'auth.unauthenticated');
  });

  it('enforces the route scopes (any one suffices)', async () => {
    expect((await run({}, ['aip:operator', 'aip:actions:read'])).res.statusCode).toBe(204);
    const p = expectProblem((await run({}, ['aip:operator'])).res, 403, 'auth.insufficient_scope');
    expect(p.details).toEqual({ required_any_of: ['aip:operator'] });
  });
});
