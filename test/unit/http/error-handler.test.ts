import middy from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { ConnectorFailure } from '../../../packages/connector-sdk/src/failure.js';
import { httpErrorHandler } from '../../../functions/shared/error-handler.js';
import type { AipHttpEvent } from '../../../functions/shared/http.js';
import { body, expectProblem, header, lambdaContext, proxyEvent, recordingLogger } from './support.js';

function chain(fail: () => unknown, logger = recordingLogger()) {
  const h = middy<AipHttpEvent, APIGatewayProxyResult>(async () => {
    fail();
    return { statusCode: 200, body: '' };
  }).use(httpErrorHandler({ logger }));
  return { h, logger };
}

describe('httpErrorHandler', () => {
  it('maps an AipError to its catalogue status as application/problem+json', async () => {
    const { h } = chain(() => {
      throw new AipError('transaction.not_found', 'No transaction matches', { details: { selector: 'plan_id' } });
    });
    const res = await h(proxyEvent(), lambdaContext());
    const p = expectProblem(res, 404, 'transaction.not_found');
    expect(p.detail).toBe('No transaction matches');
    expect(p.details).toEqual({ selector: 'plan_id' });
    expect(p.instance).toBe('urn:aip:request:req-1');
    expect(header(res, 'cache-control')).toBe('no-store');
  });

  it('adds WWW-Authenticate to 401 and Retry-After to retryable problems', async () => {
    const r401 = await chain(() => {
      throw new AipError('auth.unauthenticated');
    }).h(proxyEvent(), lambdaContext());
    expectProblem(r401, 401, 'auth.unauthenticated');
    expect(header(r401, 'www-authenticate')).toMatch(/^Bearer/);

    const r503 = await chain(() => {
      throw new AipError('transaction.reconciliation_pending');
    }).h(proxyEvent(), lambdaContext());
    expectProblem(r503, 503);
    expect(header(r503, 'retry-after')).toBe('5');
  });

  it('turns any other thrown value into a 500 with no internal detail, and logs class and stack but not the message', async () => {
    const secret = 'password=hunter2 at db.internal:5432';
    const { h, logger } = chain(() => {
      throw new TypeError(secret);
    });
    const res = await h(proxyEvent(), lambdaContext());
    const p = expectProblem(res, 500, 'internal.unexpected');
    expect(res.body).not.toContain('hunter2');
    expect(p.details).toBeUndefined();
    const logged = JSON.stringify(logger.lines);
    expect(logged).toContain('TypeError');
    expect(logged).not.toContain('hunter2');
  });

  it('answers a retryable connector failure by its catalogued code, not a 500 (a remote host unreachable when the runtime is composed)', async () => {
    const secret = 'host said: token=abc123';
    const { h, logger } = chain(() => {
      throw new ConnectorFailure({ code: 'connector.remote_unavailable', operation: 'discovery', source: 'remote:payments', message: secret });
    });
    const res = await h(proxyEvent(), lambdaContext());
    const p = expectProblem(res, 503, 'connector.remote_unavailable');
    expect(p.retryable).toBe(true);
    expect(header(res, 'retry-after')).toBe('1');
    expect(res.body).not.toContain('abc123');
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([['warn', 'request failed']]);
    expect(JSON.stringify(logger.lines)).not.toContain('abc123');
  });

  it('keeps a connector failure that is not retryable, or not catalogued, a 500', async () => {
    for (const failure of [
      new ConnectorFailure({ code: 'connector.remote_unavailable', operation: 'discovery', source: 'remote:payments', retryable: false }),
      new ConnectorFailure({ code: 'acme.private_code', operation: 'discovery', source: 'acme', retryable: true }),
    ]) {
      const { h, logger } = chain(() => {
        throw failure;
      });
      expectProblem(await h(proxyEvent(), lambdaContext()), 500, 'internal.unexpected');
      expect(logger.lines.map((l) => [l.level, l.message])).toEqual([['error', 'unhandled error']]);
    }
  });

  it('handles non-Error throws (strings, undefined, objects with hostile getters)', async () => {
    for (const thrown of [
      'boom',
      undefined,
      null,
      42,
      {
        get message() {
          throw new Error('x');
        },
      },
    ]) {
      const res = await chain(() => {
        throw thrown;
      }).h(proxyEvent(), lambdaContext());
      expectProblem(res, 500, 'internal.unexpected');
    }
  });

  it("maps middy's early timeout to 504 request.timeout", async () => {
    const h = middy<AipHttpEvent, APIGatewayProxyResult>(() => new Promise<APIGatewayProxyResult>(() => {}), { timeoutEarlyInMillis: 10 }).use(
      httpErrorHandler(),
    );
    const res = await h(proxyEvent(), lambdaContext(30));
    expectProblem(res, 504, 'request.timeout');
    expect((body(res) as { retryable: boolean }).retryable).toBe(false);
  });
});
