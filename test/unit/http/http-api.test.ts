/**
 * The route handlers behind the HTTP API (`api.type: "http"`): payload
 * format 2.0 events through the adapter (functions/shared/http-api-event.ts),
 * and the caller identity derived from the claims API Gateway's JWT
 * authorizer verified (lib/auth/gateway-jwt.ts). The identity must be the
 * one the REST API's Lambda authorizer builds from the same token (its real
 * verifier, real RS256 signatures), and a token that authorizer would refuse
 * gets the same problem+json here.
 */
import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyResult } from 'aws-lambda';
import type { JWTPayload } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSubmitActionHandler } from '../../../functions/http/actions.js';
import { createGetOpenApiHandler, createListCapabilitiesHandler } from '../../../functions/http/meta.js';
import type { ApiHandler } from '../../../functions/shared/route-handler.js';
import { gatewayJwtPolicy } from '../../../functions/shared/gateway-jwt-policy.js';
import { fromHttpApiEvent, isHttpApiEvent } from '../../../functions/shared/http-api-event.js';
import { requestState } from '../../../functions/shared/http.js';
import type { ClaimsConfig } from '../../../lib/auth/claims.js';
import { normaliseGatewayClaims } from '../../../lib/auth/gateway-jwt.js';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { createTokenVerifier } from '../../../lib/auth/verifier.js';
import { AUDIENCE, ISSUER, jwks, sign, standardClaims, testKey, type TestKey } from '../auth/support.js';
import { body, deps, expectProblem, header, lambdaContext, proxyEvent, stubRuntime } from './support.js';

const ACTION = { id: 'act-1', capability_id: 'payments.refund', input: { amount: 10 } };

/** How API Gateway's JWT authorizer renders claims in `requestContext.authorizer.jwt.claims`: every value a string, arrays as `[a b c]`. */
function gatewayRendering(payload: JWTPayload): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(payload)) out[k] = Array.isArray(v) ? `[${v.join(' ')}]` : String(v);
  return out;
}

interface V2Input {
  method?: string;
  routeKey?: string;
  rawPath?: string;
  rawQueryString?: string;
  headers?: Record<string, string>;
  body?: string;
  pathParameters?: Record<string, string>;
  /** The token the gateway verified (its claims go to the JWT context); undefined: a public route. */
  token?: string;
  claims?: Record<string, string>;
}

function v2Event(input: V2Input): APIGatewayProxyEventV2WithJWTAuthorizer {
  const method = input.method ?? 'GET';
  const rawPath = input.rawPath ?? '/api/v1/capabilities';
  const headers: Record<string, string> = { ...input.headers };
  if (input.token !== undefined) headers.authorization = `Bearer ${input.token}`;
  const event = {
    version: '2.0',
    routeKey: input.routeKey ?? `${method} ${rawPath.replace(/^\/api/, '')}`,
    rawPath,
    rawQueryString: input.rawQueryString ?? '',
    headers,
    ...(input.pathParameters ? { pathParameters: input.pathParameters } : {}),
    ...(input.body !== undefined ? { body: input.body } : {}),
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'api',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'vitest' },
      requestId: 'req-2',
      routeKey: input.routeKey ?? `${method} ${rawPath.replace(/^\/api/, '')}`,
      stage: 'api',
      time: '02/Dec/2026:17:00:00 +0000',
      timeEpoch: 0,
      ...(input.claims !== undefined ? { authorizer: { principalId: '', integrationLatency: 0, jwt: { claims: input.claims, scopes: null } } } : {}),
    },
  };
  return event as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
}

const POLICY_INPUT = { issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'https://issuer.test/jwks.json', algorithms: ['RS256' as const] };

describe('HTTP API (payload format 2.0) events', () => {
  let key: TestKey;
  beforeAll(async () => {
    key = await testKey('RS256', 'k1');
  });

  /** The identity the REST API's authorizer builds from `token`, and what a route sees for the same token behind the HTTP API. */
  async function bothWays(payload: JWTPayload, claims?: ClaimsConfig): Promise<{ rest: CallerIdentity; http: unknown; res: APIGatewayProxyResult }> {
    const token = await sign(key, { claims: payload, ...(typeof payload.sub === 'string' ? { sub: payload.sub } : {}) });
    const verified = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as JWTPayload;
    const rest = await createTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms: ['RS256'],
      keys: { kind: 'jwks', jwks: jwks(key) },
      ...(claims ? { claims } : {}),
    }).verify(token);
    let seen: unknown;
    const rt = stubRuntime({
      capabilities: async (caller) => {
        seen = caller;
        return [];
      },
    });
    const policy = gatewayJwtPolicy({ ...POLICY_INPUT, ...(claims ? { claims } : {}) });
    const res = await (createListCapabilitiesHandler(deps(rt, { gatewayJwt: policy })) as ApiHandler)(
      v2Event({ token, claims: gatewayRendering(verified) }),
      lambdaContext(),
    );
    return { rest, http: seen, res };
  }

  it('derives the caller identity the REST API’s Lambda authorizer derives from the same token (generic claims)', async () => {
    const { rest, http, res } = await bothWays({
      'aip:tenants': ['acme', 'globex'],
      'aip:accounts': ['acct-1'],
      'aip:principal_kind': 'agent',
      scope: 'aip:actions:read aip:actions:write',
    });
    expect(res.statusCode).toBe(200);
    expect(http).toEqual(rest);
    expect(rest).toMatchObject({ principal: { id: 'alice', kind: 'agent' }, tenants: ['acme', 'globex'], accounts: ['acct-1'] });
  });

  it('derives the same identity with the Auth0 preset (namespaced claims, scopes from permissions)', async () => {
    const { rest, http } = await bothWays(
      { sub: 'auth0|abc', 'https://aip/tenants': ['acme'], permissions: ['aip:actions:read', 'aip:operator'], scope: 'openid' },
      { preset: 'auth0' },
    );
    expect(http).toEqual(rest);
    expect(rest.principal.id).toBe('auth0.x7c.abc');
    expect([...rest.scopes].sort()).toEqual(['aip:actions:read', 'aip:operator', 'openid']);
  });

  it('puts the event in the REST shape: path without the stage, repeated query parameters, cookies, the stage-prefixed Location', async () => {
    const converted = fromHttpApiEvent({
      ...v2Event({ rawPath: '/api/v1/transactions', rawQueryString: 'a=1&a=2&b=x%20y', headers: { 'x-aip-tenant': 'acme' } }),
      cookies: ['c1=v1', 'c2=v2'],
    });
    expect(converted).toMatchObject({
      httpMethod: 'GET',
      path: '/v1/transactions',
      resource: '/v1/transactions',
      queryStringParameters: { a: '2', b: 'x y' },
      multiValueQueryStringParameters: { a: ['1', '2'], b: ['x y'] },
      headers: { 'x-aip-tenant': 'acme', cookie: 'c1=v1; c2=v2' },
      requestContext: { path: '/api/v1/transactions', requestId: 'req-2', stage: 'api' },
    });
    expect(requestState(converted).gatewayJwt).toBeUndefined();
    expect(isHttpApiEvent(proxyEvent())).toBe(false);

    const token = await sign(key, { claims: { 'aip:tenants': ['acme'], scope: 'aip:actions:write' } });
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as JWTPayload;
    const rt = stubRuntime({
      submit: async () => ({
        disposition: 'accepted',
        http_status: 202,
        action_id: 'act-1',
        tenant_id: 'acme',
        action_result: { action_id: 'act-1', status: 'accepted' },
      }),
    });
    const res = await (createSubmitActionHandler(deps(rt, { gatewayJwt: gatewayJwtPolicy(POLICY_INPUT) })) as ApiHandler)(
      v2Event({
        method: 'POST',
        rawPath: '/api/v1/actions',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ACTION),
        token,
        claims: gatewayRendering(payload),
      }),
      lambdaContext(),
    );
    expect(res.statusCode).toBe(202);
    expect(header(res, 'location')).toBe('/api/v1/actions/act-1');
    expect(rt.calls[0]!.args.slice(1)).toEqual([ACTION, { tenant_id: 'acme' }]);
  });

  it('serves a public route without any authorizer context', async () => {
    const res = await (createGetOpenApiHandler(deps(stubRuntime())) as ApiHandler)(v2Event({ rawPath: '/api/v1/openapi.json' }), lambdaContext());
    expect(res.statusCode).toBe(200);
    expect((body(res) as { openapi?: string }).openapi).toMatch(/^3\./);
  });

  it('answers 401 auth.unauthenticated, as the REST API’s gateway response does, for what the Lambda authorizer would reject', async () => {
    const h = createListCapabilitiesHandler(deps(stubRuntime({ capabilities: async () => [] }), { gatewayJwt: gatewayJwtPolicy(POLICY_INPUT) })) as ApiHandler;
    const cases: [string, string, Record<string, string>][] = [];
    const good = standardClaims({ 'aip:tenants': ['acme'] });
    const token = await sign(key, { claims: { 'aip:tenants': ['acme'] } });
    // An algorithm outside the configured allow-list (the gateway accepts any RSA algorithm).
    const header512 = Buffer.from(JSON.stringify({ alg: 'RS512', kid: 'k1' })).toString('base64url');
    cases.push(['algorithm', `${header512}.${token.split('.')[1]}.sig`, gatewayRendering(good)]);
    cases.push(['issuer', token, gatewayRendering({ ...good, iss: 'https://other.test/' })]);
    cases.push(['missing sub', token, gatewayRendering(Object.fromEntries(Object.entries(good).filter(([k]) => k !== 'sub')))]);
    // The gateway accepts client_id when there is no aud; the generic mapping matches aud only.
    const noAud = Object.fromEntries(Object.entries(good).filter(([k]) => k !== 'aud'));
    cases.push(['audience in client_id only', token, gatewayRendering({ ...noAud, client_id: AUDIENCE })]);
    for (const [what, t, claims] of cases) {
      const res = await h(v2Event({ token: t, claims }), lambdaContext());
      expectProblem(res, 401, 'auth.unauthenticated');
      expect(header(res, 'www-authenticate'), what).toBe('Bearer realm="aip"');
    }
  });

  it('answers 403 auth.forbidden for verified claims the Lambda authorizer would deny (principal kind, token_use)', async () => {
    const token = await sign(key, { claims: {} });
    const h = createListCapabilitiesHandler(deps(stubRuntime({ capabilities: async () => [] }), { gatewayJwt: gatewayJwtPolicy(POLICY_INPUT) })) as ApiHandler;
    expectProblem(
      await h(v2Event({ token, claims: gatewayRendering(standardClaims({ 'aip:principal_kind': 'robot' })) }), lambdaContext()),
      403,
      'auth.forbidden',
    );
    const cognito = createListCapabilitiesHandler(
      deps(stubRuntime({ capabilities: async () => [] }), { gatewayJwt: gatewayJwtPolicy({ ...POLICY_INPUT, claims: { preset: 'cognito' } }) }),
    ) as ApiHandler;
    expectProblem(await cognito(v2Event({ token, claims: gatewayRendering(standardClaims({ token_use: 'id' })) }), lambdaContext()), 403, 'auth.forbidden');
  });

  it('checks route scopes and tenants in the function, with the same problems as behind the REST API', async () => {
    const token = await sign(key, { claims: {} });
    const h = createSubmitActionHandler(deps(stubRuntime(), { gatewayJwt: gatewayJwtPolicy(POLICY_INPUT) })) as ApiHandler;
    const submit = (claims: JWTPayload, headers: Record<string, string> = {}) =>
      h(
        v2Event({
          method: 'POST',
          rawPath: '/api/v1/actions',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(ACTION),
          token,
          claims: gatewayRendering(standardClaims(claims)),
        }),
        lambdaContext(),
      );
    expectProblem(await submit({ 'aip:tenants': ['acme'], scope: 'aip:actions:read' }), 403, 'auth.insufficient_scope');
    expectProblem(await submit({ 'aip:tenants': ['acme', 'globex'], scope: 'aip:actions:write' }), 400, 'auth.tenant_required');
    expectProblem(await submit({ 'aip:tenants': ['acme'], scope: 'aip:actions:write' }, { 'x-aip-tenant': 'globex' }), 403, 'auth.tenant_forbidden');
  });

  it('never takes a JWT-shaped context from a REST event as verified claims', async () => {
    const h = createListCapabilitiesHandler(deps(stubRuntime({ capabilities: async () => [] }), { gatewayJwt: gatewayJwtPolicy(POLICY_INPUT) })) as ApiHandler;
    const res = await h(proxyEvent({ path: '/v1/capabilities', authorizer: { jwt: { claims: gatewayRendering(standardClaims()) } } }), lambdaContext());
    expectProblem(res, 401, 'auth.unauthenticated');
  });

  it('reads the gateway’s rendering back: list claims as arrays, time claims as numbers, other values untouched', () => {
    const policy = gatewayJwtPolicy(POLICY_INPUT);
    expect(
      normaliseGatewayClaims({ 'aip:tenants': '[acme globex]', tenants: 'acme', aud: '[a b]', exp: '1700000000', name: '[not a list]' }, policy.mapping),
    ).toEqual({ 'aip:tenants': ['acme', 'globex'], tenants: 'acme', aud: ['a', 'b'], exp: 1_700_000_000, name: '[not a list]' });
  });
});
