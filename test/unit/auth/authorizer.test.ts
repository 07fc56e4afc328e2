import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayAuthorizerResult, APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearerToken, createAuthorizerHandler, verifierFromEnv, type AuthorizerHandler } from '../../../functions/authorizer.js';
import { encodeAuthorizerContext } from '../../../lib/auth/authorizer-context.js';
import { decodeAuthorizerContext } from '../../../lib/auth/decode-authorizer-context.js';
import { AuthConfigError, parseClaimsOverride, verifierConfigFromRuntimeConfig } from '../../../lib/auth/config.js';
import { parseMethodArn, policyAllows, stageWildcardArn } from '../../../lib/auth/policy.js';
import { createTokenVerifier, KeySourceUnavailableError, type TokenVerifier } from '../../../lib/auth/verifier.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { SILENT_LOGGER } from '../../../functions/shared/logger.js';
import { lambdaContext } from '../http/support.js';
import { AUDIENCE, ISSUER, jwks, sign, testKey, unsecuredToken, standardClaims, type TestKey } from './support.js';

const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/actions';
let key: TestKey;
let authorizer: AuthorizerHandler;

function tokenEvent(authorizationToken: string): APIGatewayTokenAuthorizerEvent {
  return { type: 'TOKEN', authorizationToken, methodArn: METHOD_ARN };
}

async function outcome(h: AuthorizerHandler, header: string): Promise<'401' | '5xx' | APIGatewayAuthorizerResult> {
  try {
    return await h(tokenEvent(header), lambdaContext());
  } catch (e) {
    return (e as Error).message === 'Unauthorized' ? '401' : '5xx';
  }
}

beforeAll(async () => {
  key = await testKey('ES256', 'k1');
  authorizer = createAuthorizerHandler({
    verifier: createTokenVerifier({ issuer: ISSUER, audience: AUDIENCE, keys: { kind: 'jwks', jwks: jwks(key) } }),
    observability: { logger: SILENT_LOGGER },
  });
});

describe('authorizer handler', () => {
  it('allows a valid token on the whole stage and passes the identity as string context', async () => {
    const token = await sign(key, { claims: { 'aip:tenants': ['acme'], scope: 'aip:actions:write', 'aip:principal_kind': 'agent' } });
    const result = await outcome(authorizer, `Bearer ${token}`);
    expect(result).not.toBe('401');
    const r = result as APIGatewayAuthorizerResult;
    expect(r.principalId).toBe('alice');
    expect(r.policyDocument.Statement).toEqual([
      { Action: 'execute-api:Invoke', Effect: 'Allow', Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*' },
    ]);
    for (const v of Object.values(r.context ?? {})) expect(typeof v).toBe('string');
    expect(decodeAuthorizerContext(r.context)).toMatchObject({ principal: { id: 'alice', kind: 'agent' }, tenants: ['acme'], scopes: ['aip:actions:write'] });
    expect(policyAllows(r.policyDocument, 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/GET/v1/approvals')).toBe(true);
  });

  it('answers Unauthorized (401) for a missing, non-bearer, expired, forged or alg-none token', async () => {
    const cases = [
      '',
      'Basic dXNlcjpwYXNz',
      'Bearer',
      'Bearer a b',
      `Bearer ${await sign(key, { expiresIn: -600 })}`,
      `Bearer ${await sign(key, { issuer: 'https://evil.test/' })}`,
      `Bearer ${await sign(key, { audience: 'nope' })}`,
      `Bearer ${unsecuredToken(standardClaims())}`,
      `Bearer ${await sign(await testKey('ES256', 'k1'))}`,
    ];
    for (const header of cases) expect(await outcome(authorizer, header), header.slice(0, 20)).toBe('401');
  });

  it('denies (403) a verified token whose identity is unusable', async () => {
    const r = (await outcome(authorizer, `Bearer ${await sign(key, { claims: { 'aip:principal_kind': 'superuser' } })}`)) as APIGatewayAuthorizerResult;
    expect(r.policyDocument.Statement[0]?.Effect).toBe('Deny');
    expect(r.context).toBeUndefined();
    expect(policyAllows(r.policyDocument, METHOD_ARN)).toBe(false);
  });

  it('fails (5xx) rather than 401 when keys are unavailable or the configuration is broken', async () => {
    const failing: TokenVerifier = {
      verify: async () => {
        throw new KeySourceUnavailableError(new Error('ECONNREFUSED'));
      },
    };
    expect(await outcome(createAuthorizerHandler({ verifier: failing, observability: { logger: SILENT_LOGGER } }), 'Bearer a.b.c')).toBe('5xx');
    const broken = createAuthorizerHandler({
      verifier: () => {
        throw new Error('bad config');
      },
      observability: { logger: SILENT_LOGGER },
    });
    expect(await outcome(broken, 'Bearer a.b.c')).toBe('5xx');
  });

  it('also works as a REQUEST authorizer', async () => {
    const token = await sign(key);
    const r = await authorizer(
      { type: 'REQUEST', methodArn: METHOD_ARN, headers: { authorization: `Bearer ${token}` } } as unknown as APIGatewayTokenAuthorizerEvent,
      lambdaContext(),
    );
    expect(r.principalId).toBe('alice');
  });

  it('bearerToken extracts only a single bearer credential', () => {
    expect(bearerToken('Bearer abc.def.ghi')).toBe('abc.def.ghi');
    expect(bearerToken('bearer  abc')).toBe('abc');
    expect(bearerToken('Bearer abc def')).toBeUndefined();
    expect(bearerToken('Token abc')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});

describe('authorizer configuration from the environment', () => {
  const runtimeConfig = (auth: Record<string, unknown>) => JSON.stringify({ envName: 'dev', auth, connectors: [], approvalPolicies: [] });

  it('reads the auth part of AIP_RUNTIME_CONFIG (inline JSON or a file path)', () => {
    const auth = { issuer: ISSUER, audience: [AUDIENCE], jwksUrl: 'https://idp.example.com/.well-known/jwks.json', algorithms: ['RS256'] };
    const cfg = verifierConfigFromRuntimeConfig(runtimeConfig(auth));
    expect(cfg).toMatchObject({ issuer: ISSUER, audience: [AUDIENCE], algorithms: ['RS256'], keys: { kind: 'jwks_url', url: auth.jwksUrl } });
    const dir = mkdtempSync(join(tmpdir(), 'aip-auth-'));
    const file = join(dir, 'runtime.json');
    writeFileSync(file, runtimeConfig(auth));
    expect(() => verifierFromEnv({ AIP_RUNTIME_CONFIG: file, AIP_AUTH_CLAIMS: 'cognito' })).not.toThrow();
    expect(() => verifierFromEnv({})).toThrow(/AIP_RUNTIME_CONFIG/);
  });

  it('applies the claims override and defaults the algorithms to RS256 + ES256', () => {
    const cfg = verifierConfigFromRuntimeConfig(
      runtimeConfig({ issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'https://idp.example.com/jwks', claims: { preset: 'okta' } }),
      parseClaimsOverride('{"preset":"auth0","namespace":"https://x/"}'),
    );
    expect(cfg.algorithms).toEqual(['RS256', 'ES256']);
    expect(cfg.claims).toEqual({ preset: 'auth0', namespace: 'https://x/' });
  });

  it('fails with a clear message on a bad configuration', () => {
    expect(() => verifierConfigFromRuntimeConfig('not json')).toThrow(AuthConfigError);
    expect(() => verifierConfigFromRuntimeConfig(runtimeConfig({ issuer: ISSUER, audience: AUDIENCE }))).toThrow(/jwksUrl/);
    expect(() => verifierConfigFromRuntimeConfig(runtimeConfig({ issuer: ISSUER, audience: AUDIENCE, jwksUrl: 'https://x/j', algorithms: ['none'] }))).toThrow(
      /algorithms/,
    );
    expect(() => parseClaimsOverride('keycloak')).toThrow(AuthConfigError);
    expect(() => parseClaimsOverride('{bad')).toThrow(AuthConfigError);
    expect(parseClaimsOverride(undefined)).toBeUndefined();
    expect(parseClaimsOverride('  ')).toBeUndefined();
  });
});

describe('authorizer context', () => {
  it('round-trips an identity and refuses a missing or forged context', () => {
    const id = { principal: { id: 'bob', kind: 'service' as const }, tenants: ['t1'], scopes: ['s'], issuer: ISSUER, expires_at: '2030-01-01T00:00:00.000Z' };
    expect(decodeAuthorizerContext({ ...encodeAuthorizerContext(id), principalId: 'bob', integrationLatency: 3 })).toEqual(id);
    for (const ctx of [null, undefined, {}, { ...encodeAuthorizerContext(id), scopes: '{"a":1}' }, { ...encodeAuthorizerContext(id), principal_id: 'x y' }]) {
      expect(() => decodeAuthorizerContext(ctx as Record<string, unknown>)).toThrow(AipError);
    }
  });
});

describe('policies', () => {
  it('parses method ARNs and builds the stage wildcard', () => {
    expect(parseMethodArn(METHOD_ARN)).toEqual({
      partition: 'aws',
      region: 'eu-west-1',
      accountId: '123456789012',
      apiId: 'abc123',
      stage: 'prod',
      method: 'POST',
      path: 'v1/actions',
    });
    expect(stageWildcardArn('not-an-arn')).toBe('not-an-arn');
  });

  it('evaluates like IAM: an Allow must match and an explicit Deny wins', () => {
    const allow = {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: 'execute-api:Invoke', Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*' }],
    };
    expect(policyAllows(allow, METHOD_ARN)).toBe(true);
    expect(policyAllows(allow, 'arn:aws:execute-api:eu-west-1:123456789012:abc123/test/POST/v1/actions')).toBe(false);
    const both = { Statement: [...allow.Statement, { Effect: 'Deny', Action: 'execute-api:*', Resource: ['*'] }] };
    expect(policyAllows(both, METHOD_ARN)).toBe(false);
    expect(policyAllows({ Statement: [{ Effect: 'Allow', Action: 'execute-api:Invoke', Resource: '*', Condition: { x: {} } }] }, METHOD_ARN)).toBe(false);
    expect(policyAllows(undefined, METHOD_ARN)).toBe(false);
    expect(policyAllows({ Statement: [] }, METHOD_ARN)).toBe(false);
  });
});
