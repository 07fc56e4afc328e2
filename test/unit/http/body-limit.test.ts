import middy from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { bodyByteLength, bodyLimit } from '../../../functions/shared/body-limit.js';
import { httpErrorHandler } from '../../../functions/shared/error-handler.js';
import type { AipHttpEvent } from '../../../functions/shared/http.js';
import { expectProblem, lambdaContext, proxyEvent } from './support.js';

function run(body: string | null, isBase64Encoded = false, maxBytes = 16) {
  const h = middy<AipHttpEvent, APIGatewayProxyResult>(async () => ({ statusCode: 204, body: '' }))
    .use(httpErrorHandler())
    .use(bodyLimit({ maxBytes }));
  return h(proxyEvent({ method: 'POST', body, isBase64Encoded }), lambdaContext());
}

describe('bodyLimit', () => {
  it('counts UTF-8 bytes, not characters', () => {
    expect(bodyByteLength('abc', false)).toBe(3);
    expect(bodyByteLength('é', false)).toBe(2);
    expect(bodyByteLength('😀', false)).toBe(4);
    expect(bodyByteLength(null, false)).toBe(0);
  });

  it('counts decoded bytes of base64 bodies', () => {
    for (const n of [0, 1, 2, 3, 4, 5, 100]) {
      expect(bodyByteLength(Buffer.alloc(n, 7).toString('base64'), true)).toBe(n);
    }
  });

  it('lets a body at the limit through', async () => {
    expect((await run('x'.repeat(16))).statusCode).toBe(204);
    expect((await run(Buffer.alloc(16).toString('base64'), true)).statusCode).toBe(204);
    expect((await run(null)).statusCode).toBe(204);
  });

  it('answers 413 request.body_too_large one byte over, also for multi-byte text and base64', async () => {
    expectProblem(await run('x'.repeat(17)), 413, 'request.body_too_large');
    expectProblem(await run('é'.repeat(9)), 413, 'request.body_too_large');
    expectProblem(await run(Buffer.alloc(17).toString('base64'), true), 413, 'request.body_too_large');
  });

  it('defaults to 256 KiB', async () => {
    const h = middy<AipHttpEvent, APIGatewayProxyResult>(async () => ({ statusCode: 204, body: '' }))
      .use(httpErrorHandler())
      .use(bodyLimit());
    expect((await h(proxyEvent({ method: 'POST', body: 'x'.repeat(256 * 1024) }), lambdaContext())).statusCode).toBe(204);
    const p = expectProblem(await h(proxyEvent({ method: 'POST', body: 'x'.repeat(256 * 1024 + 1) }), lambdaContext()), 413);
    expect(p.details).toEqual({ max_bytes: 256 * 1024 });
  });
});
