import middy from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { contentType, isJsonContentType, type BodyPolicy } from '../../../functions/shared/content-type.js';
import { httpErrorHandler } from '../../../functions/shared/error-handler.js';
import type { AipHttpEvent } from '../../../functions/shared/http.js';
import { expectProblem, lambdaContext, proxyEvent } from './support.js';

function run(policy: BodyPolicy, body: string | null, headers: Record<string, string> = {}) {
  const h = middy<AipHttpEvent, APIGatewayProxyResult>(async () => ({ statusCode: 204, body: '' }))
    .use(httpErrorHandler())
    .use(contentType({ body: policy }));
  return h(proxyEvent({ method: 'POST', body, headers }), lambdaContext());
}

describe('contentType', () => {
  it('recognises JSON media types', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('Application/JSON; charset=UTF-8')).toBe(true);
    expect(isJsonContentType('application/json;charset="utf-8"')).toBe(true);
    expect(isJsonContentType('application/merge-patch+json')).toBe(true);
    expect(isJsonContentType('application/json; charset=latin1')).toBe(false);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType('application/jsonx')).toBe(false);
    expect(isJsonContentType('')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });

  it('accepts a JSON body with any header casing', async () => {
    expect((await run('required', '{}', { 'CONTENT-TYPE': 'application/json' })).statusCode).toBe(204);
  });

  it('answers 415 for a body that is not declared as JSON', async () => {
    expectProblem(await run('required', '{}', { 'Content-Type': 'text/plain' }), 415, 'request.unsupported_media_type');
    expectProblem(await run('optional', '{}'), 415, 'request.unsupported_media_type');
  });

  it('answers 400 when a required body is missing, and when a body-less route gets one', async () => {
    expectProblem(await run('required', null), 400, 'request.invalid');
    expectProblem(await run('required', ''), 400, 'request.invalid');
    expectProblem(await run('none', '{}', { 'Content-Type': 'application/json' }), 400, 'request.invalid');
  });

  it('lets an absent body through where it is optional or not taken', async () => {
    expect((await run('optional', null)).statusCode).toBe(204);
    expect((await run('none', null)).statusCode).toBe(204);
  });
});
