import middy from '@middy/core';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { httpErrorHandler } from '../../../functions/shared/error-handler.js';
import type { AipHttpEvent } from '../../../functions/shared/http.js';
import { bodyText, jsonBody, parseJsonBody } from '../../../functions/shared/json-body.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { expectProblem, lambdaContext, proxyEvent } from './support.js';

function run(body: string | null, isBase64Encoded = false) {
  let seen: unknown = 'not called';
  const h = middy<AipHttpEvent, APIGatewayProxyResult>(async (event: AipHttpEvent) => {
    seen = event.aip?.json;
    return { statusCode: 204, body: '' };
  })
    .use(httpErrorHandler())
    .use(jsonBody());
  return h(proxyEvent({ method: 'POST', body, isBase64Encoded }), lambdaContext()).then((res) => ({ res, seen }));
}

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof AipError) return e.code;
    throw e;
  }
  return 'ok';
}

describe('jsonBody', () => {
  it('parses a JSON body into event.aip.json and leaves an empty body undefined', async () => {
    expect((await run('{"a":[1,"x",null,true]}')).seen).toEqual({ a: [1, 'x', null, true] });
    expect((await run(null)).seen).toBeUndefined();
  });

  it('decodes base64 bodies and ignores a leading byte-order mark', async () => {
    expect((await run(Buffer.from('{"a":"é"}', 'utf8').toString('base64'), true)).seen).toEqual({ a: 'é' });
    expect((await run('\uFEFF{"a":1}')).seen).toEqual({ a: 1 });
    expect((await run(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"b":2}')]).toString('base64'), true)).seen).toEqual({ b: 2 });
  });

  it('answers 400 request.malformed_json for syntax errors without quoting the input', async () => {
    for (const text of ['{"zqmark', '{"zqmark":}', 'zqmark', "{'zqmark':1}", '   ', '{"zqmark":1}}', 'NaN', '\uFEFF']) {
      const { res } = await run(text);
      expectProblem(res, 400, 'request.malformed_json');
      expect(res.body).not.toContain('zqmark');
    }
  });

  it('refuses bytes that are not UTF-8 and malformed base64', async () => {
    expectProblem((await run(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]).toString('base64'), true)).res, 400, 'request.malformed_json');
    expectProblem((await run(Buffer.from([0xc3, 0x28]).toString('base64'), true)).res, 400, 'request.malformed_json');
    expectProblem((await run('not base64!!', true)).res, 400, 'request.malformed_json');
    expectProblem((await run('abc', true)).res, 400, 'request.malformed_json');
  });

  it('refuses lone surrogates (escaped or raw), in values and keys', () => {
    expect(codeOf(() => parseJsonBody('{"a":"\\ud800"}'))).toBe('request.malformed_json');
    expect(codeOf(() => parseJsonBody('{"\\udfff":1}'))).toBe('request.malformed_json');
    expect(codeOf(() => parseJsonBody('["\ud800"]'))).toBe('request.malformed_json');
    expect(parseJsonBody('{"a":"\\ud83d\\ude00"}')).toEqual({ a: '😀' });
  });

  it('refuses __proto__, constructor and prototype keys anywhere', async () => {
    for (const text of [
      '{"__proto__":{"polluted":true}}',
      '{"a":{"constructor":{"prototype":1}}}',
      '[{"prototype":1}]',
      '{"input":{"x":[{"__proto__":null}]}}',
    ]) {
      const { res } = await run(text);
      expectProblem(res, 400, 'envelope.forbidden_key');
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses nesting deeper than the envelope limit without overflowing the stack', async () => {
    expectProblem((await run(`${'['.repeat(33)}${']'.repeat(33)}`)).res, 400, 'envelope.too_deep');
    const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    const { res } = await run(deep);
    expect(res.statusCode).toBe(400);
  });

  it('accepts nesting at the limit', () => {
    expect(codeOf(() => parseJsonBody(`${'['.repeat(32)}${']'.repeat(32)}`))).toBe('ok');
  });

  it('bodyText returns non-base64 bodies unchanged', () => {
    expect(bodyText('{"a":1}', false)).toBe('{"a":1}');
  });
});
