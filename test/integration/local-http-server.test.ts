/**
 * The local HTTP server over real HTTP on loopback: API Gateway's behaviour
 * (authorizer on every request, 401/403/404/413/504 gateway problems, proxy
 * event shape) in front of the real route handlers and the real authorizer
 * with the dev signing key.
 *
 * The runtime behind the handlers is a recording stub of the edge's own
 * RuntimeApi: this file tests the gateway and the edge; the end-to-end suite
 * runs the real runtime behind the same server.
 */
import type { APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devVerifierConfig, generateDevKeys, type DevKeys } from '../../dev/auth/keys.js';
import { mintToken } from '../../dev/auth/mint.js';
import { devAuthOptions, startLocalHttpServer, type LocalHttpServer } from '../../dev/local/http-server.js';
import type { AipHttpEvent } from '../../functions/shared/http.js';
import { SILENT_LOGGER } from '../../functions/shared/logger.js';
import type { RuntimeApi } from '../../functions/shared/runtime-api.js';
import { createTokenVerifier, KeySourceUnavailableError, type TokenVerifier } from '../../lib/auth/verifier.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { ProblemSchema, type Problem } from '../../packages/connector-sdk/src/protocol/problem.js';
import { gatewayResponse, gatewayResponseTemplate, type GatewayResponseType } from '../../lib/http/gateway-responses.js';
import { stubRuntime } from '../unit/http/support.js';

let keys: DevKeys;
let server: LocalHttpServer;
let verifications = 0;
let echoed: AipHttpEvent | undefined;
const runtime = stubRuntime({
  submit: async (_caller, body, opts) => {
    const id = (body as { id: string }).id;
    return {
      disposition: 'accepted',
      http_status: 202,
      action_id: id,
      tenant_id: opts?.tenant_id ?? '?',
      action_result: { action_id: id, status: 'accepted' },
    };
  },
  getAction: async (_caller, tenant, id) => {
    if (id === 'missing') throw new AipError('action.not_found');
    return { action_result: { action_id: id, status: 'completed', output: { tenant } } };
  },
  getTransaction: async (_caller, selector, include) => ({ transaction_id: 'tx-1', status: 'committed', selector, include }),
});

async function token(options: Partial<Parameters<typeof mintToken>[0]> = {}): Promise<string> {
  return mintToken({ sub: 'alice', tenants: ['acme'], scopes: ['aip:actions:read', 'aip:actions:write'], ...options }, keys);
}

async function call(path: string, init: RequestInit & { token?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (init.token !== undefined) headers.set('Authorization', `Bearer ${init.token}`);
  return fetch(`${server.url}${path}`, { ...init, headers });
}

async function problem(res: Response, status: number, code: string): Promise<Problem> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const p = ProblemSchema.parse(await res.json());
  expect(p).toMatchObject({ status, code, type: `urn:aip:error:${code}` });
  return p;
}

beforeAll(async () => {
  keys = await generateDevKeys();
  const real = createTokenVerifier(devVerifierConfig(keys));
  const counting: TokenVerifier = {
    verify: (t) => {
      verifications += 1;
      return real.verify(t);
    },
  };
  server = await startLocalHttpServer({
    http: { runtime: runtime as RuntimeApi, observability: { logger: SILENT_LOGGER } },
    auth: { verifier: counting },
    jwks: keys.jwks,
    maxRequestBytes: 1024 * 1024,
    integrationTimeoutMs: 2_000,
    handlers: {
      listCapabilities: async (event: AipHttpEvent): Promise<APIGatewayProxyResult> => {
        echoed = event;
        return { statusCode: 200, headers: { 'Content-Type': 'application/json' }, body: '{}' };
      },
      getHealth: () => new Promise<APIGatewayProxyResult>(() => {}),
      listApprovals: async () => {
        throw new Error('boom');
      },
    },
  });
});

afterAll(async () => {
  await server.stop();
});

describe('authentication at the gateway', () => {
  it('401 problem without a token, with a non-bearer header, or with a bad token', async () => {
    const before = verifications;
    const p = await problem(await call('/v1/actions/a1'), 401, 'auth.unauthenticated');
    expect(p.title).toBe('A valid bearer token is required');
    await problem(await call('/v1/actions/a1', { headers: { Authorization: 'Basic dXNlcjpwYXNz' } }), 401, 'auth.unauthenticated');
    expect(verifications).toBe(before);
    const res = await call('/v1/actions/a1', { token: 'abc.def.ghi' });
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    await problem(res, 401, 'auth.unauthenticated');
    await problem(
      await call('/v1/actions/a1', { token: await token({ ttl: 60, issuedAt: Math.floor(Date.now() / 1000) - 7200 }) }),
      401,
      'auth.unauthenticated',
    );
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'alice', iss: 'https://aip.local/dev', aud: 'aip-local', exp: 9_999_999_999 })).toString('base64url')}.`;
    await problem(await call('/v1/actions/a1', { headers: { Authorization: `Bearer ${none}` } }), 401, 'auth.unauthenticated');
    expect(runtime.calls.filter((c) => c.method === 'getAction')).toHaveLength(0);
  });

  it('403 problem when the authorizer denies a verified but unusable token', async () => {
    await problem(await call('/v1/actions/a1', { token: await token({ claims: { 'aip:principal_kind': 'root' } }) }), 403, 'auth.forbidden');
  });

  it('runs the authorizer on every request (no caching)', async () => {
    const t = await token();
    const before = verifications;
    await call('/v1/actions/a1', { token: t });
    await call('/v1/actions/a1', { token: t });
    expect(verifications - before).toBe(2);
  });

  it('503 problem when the authorizer cannot verify (key source down)', async () => {
    const down = await startLocalHttpServer({
      http: { runtime: runtime as RuntimeApi, observability: { logger: SILENT_LOGGER } },
      auth: {
        verifier: {
          verify: async () => {
            throw new KeySourceUnavailableError(new Error('down'));
          },
        },
      },
    });
    try {
      const res = await fetch(`${down.url}/v1/actions/a1`, { headers: { Authorization: `Bearer ${await token()}` } });
      await problem(res, 503, 'auth.authorizer_unavailable');
      expect(res.headers.get('retry-after')).toBe('1');
    } finally {
      await down.stop();
    }
  });

  it('devAuthOptions wires the dev key into a server that accepts minted tokens', async () => {
    const dev = await startLocalHttpServer({ http: { runtime: runtime as RuntimeApi, observability: { logger: SILENT_LOGGER } }, ...devAuthOptions(keys) });
    try {
      const res = await fetch(`${dev.url}/v1/actions/a9`, { headers: { Authorization: `Bearer ${await token()}` } });
      expect(res.status).toBe(200);
      expect(await (await fetch(`${dev.url}/.well-known/jwks.json`)).json()).toEqual(keys.jwks);
    } finally {
      await dev.stop();
    }
  });

  it('serves the OpenAPI document and the dev JWKS without a token', async () => {
    const doc = await call('/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(await doc.json()).toMatchObject({ openapi: '3.1.0' });
    const jwks = await call('/.well-known/jwks.json');
    expect(await jwks.json()).toEqual(keys.jwks);
  });
});

describe('routing and handlers', () => {
  it('POST /v1/actions → 202 with a Location that GET serves, path parameters decoded', async () => {
    const t = await token();
    const res = await call('/v1/actions', {
      method: 'POST',
      token: t,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: 'ns/act:1', capability_id: 'payments.refund', input: { amount: 5 } }),
    });
    expect(res.status).toBe(202);
    const location = res.headers.get('location');
    expect(location).toBe('/v1/actions/ns%2Fact%3A1');
    expect(res.headers.get('x-amzn-requestid')).toMatch(/^[0-9a-f-]{36}$/);
    const got = await call(location as string, { token: t });
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual({ action_result: { action_id: 'ns/act:1', status: 'completed', output: { tenant: 'acme' } } });
  });

  it('404 problem for unknown routes and wrong methods (as the stack maps API Gateway’s answer)', async () => {
    const t = await token();
    await problem(await call('/v1/nothing', { token: t }), 404, 'request.route_not_found');
    await problem(await call('/v1/actions', { token: t }), 404, 'request.route_not_found');
    await problem(await call('/v1/actions/a1', { method: 'DELETE', token: t }), 404, 'request.route_not_found');
    await problem(await call('/'), 404, 'request.route_not_found');
  });

  it('answers for itself with exactly the bodies and headers the deployed stack’s gateway responses send', async () => {
    const t = await token();
    const answers: [GatewayResponseType, Response][] = [
      ['UNAUTHORIZED', await call('/v1/actions/a1')],
      ['ACCESS_DENIED', await call('/v1/actions/a1', { token: await token({ claims: { 'aip:principal_kind': 'root' } }) })],
      ['MISSING_AUTHENTICATION_TOKEN', await call('/v1/nothing', { token: t })],
      [
        'REQUEST_TOO_LARGE',
        await call('/v1/actions', { method: 'POST', token: t, headers: { 'Content-Type': 'application/json' }, body: 'x'.repeat(1024 * 1024 + 1) }),
      ],
      ['INTEGRATION_FAILURE', await call('/v1/approvals', { token: t })],
    ];
    for (const [type, res] of answers) {
      const spec = gatewayResponse(type);
      expect(res.status, type).toBe(spec.status);
      expect(res.headers.get('x-amzn-errortype'), type).toBe(type);
      expect(res.headers.get('content-type'), type).toBe('application/problem+json');
      for (const [name, value] of Object.entries(spec.headers ?? {})) expect(res.headers.get(name), `${type} ${name}`).toBe(value);
      // The stack's template (infra/api.ts sends it verbatim): the same bytes.
      expect(await res.text(), type).toBe(gatewayResponseTemplate(spec));
    }
  });

  it('problems from the handlers: not found, bad JSON, invalid UTF-8, scope, tenant', async () => {
    const t = await token();
    await problem(await call('/v1/actions/missing', { token: t }), 404, 'action.not_found');
    await problem(await call('/v1/actions/bad%20id', { token: t }), 400, 'request.invalid');
    const post = (body: string | Uint8Array, tk = t, headers: Record<string, string> = {}) =>
      call('/v1/actions', { method: 'POST', token: tk, headers: { 'Content-Type': 'application/json', ...headers }, body });
    await problem(await post('{"id":'), 400, 'request.malformed_json');
    await problem(await post(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])), 400, 'request.malformed_json');
    await problem(await post('{"__proto__":{"x":1}}'), 400, 'envelope.forbidden_key');
    await problem(await post('{}', await token({ scopes: ['aip:actions:read'] })), 403, 'auth.insufficient_scope');
    await problem(await post('{}', await token({ tenants: ['acme', 'globex'] })), 400, 'auth.tenant_required');
    await problem(await post('{}', t, { 'X-AIP-Tenant': 'globex' }), 403, 'auth.tenant_forbidden');
    await problem(await call('/v1/operator/transactions?view=outcome_unknown', { token: t }), 403, 'auth.insufficient_scope');
  });

  it('413: the handler’s 256 KiB limit, then the gateway’s limit', async () => {
    const t = await token();
    const big = JSON.stringify({ id: 'a', capability_id: 'c', input: { pad: 'x'.repeat(300 * 1024) } });
    await problem(
      await call('/v1/actions', { method: 'POST', token: t, headers: { 'Content-Type': 'application/json' }, body: big }),
      413,
      'request.body_too_large',
    );
    const huge = 'x'.repeat(1024 * 1024 + 1);
    const res = await call('/v1/actions', { method: 'POST', token: t, headers: { 'Content-Type': 'application/json' }, body: huge });
    const p = await problem(res, 413, 'request.body_too_large');
    expect(p.detail).toBe('The request exceeds the gateway size limit');
    expect(res.headers.get('x-amzn-errortype')).toBe('REQUEST_TOO_LARGE');
  });

  it('repeated query parameters reach the handler as API Gateway passes them', async () => {
    const res = await call('/v1/transactions?action_id=a1&include=result&include=receipts', { token: await token() });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ selector: { tenant_id: 'acme', action_id: 'a1' }, include: { result: true, receipts: true } });
  });

  it('builds the API Gateway proxy event: authorizer context, headers, query, resource', async () => {
    const res = await call('/v1/capabilities?x=1&x=2', {
      token: await token({ tenants: ['acme', 'globex'] }),
      headers: { 'X-Custom-Header': 'v', 'X-AIP-Tenant': 'globex' },
    });
    expect(res.status).toBe(200);
    const e = echoed as AipHttpEvent;
    expect(e.resource).toBe('/v1/capabilities');
    expect(e.path).toBe('/v1/capabilities');
    expect(e.httpMethod).toBe('GET');
    expect(e.pathParameters).toBeNull();
    expect(e.queryStringParameters).toEqual({ x: '2' });
    expect(e.multiValueQueryStringParameters).toEqual({ x: ['1', '2'] });
    expect(e.headers['X-Custom-Header']).toBe('v');
    expect(e.multiValueHeaders['X-AIP-Tenant']).toEqual(['globex']);
    expect(e.isBase64Encoded).toBe(false);
    expect(e.body).toBeNull();
    expect(e.requestContext.resourcePath).toBe('/v1/capabilities');
    expect(e.requestContext.stage).toBe('local');
    const auth = e.requestContext.authorizer as Record<string, unknown>;
    expect(auth).toMatchObject({ principalId: 'alice', principal_id: 'alice', principal_kind: 'user', tenants: '["acme","globex"]' });
    for (const [k, v] of Object.entries(auth)) if (k !== 'integrationLatency') expect(typeof v).toBe('string');
  });

  it('504 problem when the integration outlasts the gateway timeout; 500 problem when the handler throws', async () => {
    await problem(await call('/v1/health', { token: await token() }), 504, 'request.timeout');
    await problem(await call('/v1/approvals', { token: await token() }), 500, 'internal.unexpected');
  });
});
