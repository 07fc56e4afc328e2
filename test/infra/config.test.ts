/**
 * The deployment configuration's validation: every rejection names its field,
 * defaults are applied, and the runtime part survives the trip through the
 * AIP_RUNTIME_CONFIG variable.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  APPROVAL_GATED_MODES,
  InfraConfigError,
  type InfraConfigInput,
  loadInfraConfig,
  parseInfraConfig,
  parseDeploymentRuntimeConfig,
  toDeploymentRuntimeConfig,
} from '../../lib/config/deployment.js';
import { secretsManagerReferences } from '../../lib/config/secret-references.js';
import { BASE_CONFIG } from './support.js';
import { verifierFromEnv } from '../../functions/authorizer.js';
import { PROJECT_ROOT } from '../../infra/functions.js';
import { DEV_ALGORITHM, DEV_AUDIENCE, DEV_ISSUER, loadDevKeys } from '../../dev/auth/keys.js';
import { mintToken } from '../../dev/auth/mint.js';
import { DEFAULT_JWKS_PORT, JWKS_PATH, startJwksServer } from '../../dev/auth/serve-jwks.js';

function issuesOf(input: unknown): { path: string; message: string }[] {
  try {
    parseInfraConfig(input);
  } catch (error) {
    if (error instanceof InfraConfigError) return [...error.issues];
    throw error;
  }
  throw new Error('expected the configuration to be rejected');
}

const row = { handle: 'api_key', tenantId: 'acme', secret: 'aip/test/payments/api-key' };
const withAuth = (auth: Partial<Record<string, unknown>>): unknown => ({ ...BASE_CONFIG, auth: { ...BASE_CONFIG.auth, ...auth } });

describe('parseInfraConfig', () => {
  it('applies the documented defaults', () => {
    const config = parseInfraConfig({ envName: 'dev', auth: BASE_CONFIG.auth });
    expect(config).toMatchObject({
      connectors: [],
      approvalPolicies: [],
      logRetentionDays: 30,
      queueEncryption: 'sqs-managed',
      workerTimeoutSeconds: 60,
      reconcilerTimeoutSeconds: 60,
      workerMaxConcurrency: 10,
      reconcilerMaxConcurrency: 5,
      logLevel: 'INFO',
      lambdaSystemLogLevel: 'WARN',
      outcomeUnknownAlarmAgeSeconds: 1800,
      quietTenantQueueAgeAlarmSeconds: 300,
      connectorEndpoints: {},
      api: {
        type: 'rest',
        stageName: 'api',
        throttlingRateLimit: 50,
        throttlingBurstLimit: 100,
        authorizerCacheTtlSeconds: 60,
        cloudWatchRole: true,
        xraySampling: { reservoir: 1, rate: 0.01 },
      },
      auth: { algorithms: ['RS256'] },
    });
    expect(config.alarmEmail).toBeUndefined();
    expect(config.workerReservedConcurrency).toBeUndefined();
    expect(config.reconcilerReservedConcurrency).toBeUndefined();
    expect(config.auth.claims).toBeUndefined();
  });

  it.each([
    ['envName', { ...BASE_CONFIG, envName: 'Prod_1' }, /must match/],
    ['envName', { ...BASE_CONFIG, envName: undefined }, /is required/],
    ['auth.issuer', withAuth({ issuer: 'http://issuer.example.com/' }), /https:\/\/ URL \(the JWT issuer\)/],
    ['auth.jwksUrl', withAuth({ jwksUrl: 'jwks.json' }), /https:\/\/ URL \(the JWKS URL\)/],
    [
      'auth.jwksUrl',
      withAuth({ jwksUrl: 'http://issuer.example.com/jwks.json' }),
      /https:\/\/ URL \(the JWKS URL\); http:\/\/ is accepted only when envName is "local" or "localstack" \(envName is "test"\)/,
    ],
    ['auth.issuer', withAuth({ issuer: 'http://issuer.example.com/' }), /http:\/\/ is accepted only when envName is "local" or "localstack"/],
    ['auth.jwksUrl', withAuth({ jwksUrl: 'ftp://issuer.example.com/jwks.json' }), /https:\/\/ URL \(the JWKS URL\)/],
    ['auth.audience', withAuth({ audience: [] }), /audience/],
    ['auth.algorithms[0]', withAuth({ algorithms: ['none'] }), /must be one of RS256/],
    ['alarmEmail', { ...BASE_CONFIG, alarmEmail: 'ops at example' }, /email address/],
    ['logRetentionDays', { ...BASE_CONFIG, logRetentionDays: 31 }, /retention days/],
    ['queueEncryption', { ...BASE_CONFIG, queueEncryption: 'aes' }, /"sqs-managed" or "kms"/],
    ['workerTimeoutSeconds', { ...BASE_CONFIG, workerTimeoutSeconds: 901 }, /900/],
    ['connectors[0].id', { ...BASE_CONFIG, connectors: [{ id: 'pay#ments' }] }, /letters, digits and \. _ : @ \/ - \(connector ID\)/],
    [
      'connectors[0].credentials[0].secret',
      { ...BASE_CONFIG, connectors: [{ id: 'payments', credentials: [{ ...row, secret: 'arn:aws:s3:::bucket' }] }] },
      /Secrets Manager secret ARN/,
    ],
    [
      'connectors[0].credentials[0].secret',
      { ...BASE_CONFIG, connectors: [{ id: 'payments', credentials: [{ ...row, secret: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:partial' }] }] },
      /complete Secrets Manager secret ARN/,
    ],
    [
      'connectors[0].credentials[0].tenantId',
      { ...BASE_CONFIG, connectors: [{ id: 'payments', credentials: [{ handle: 'api_key', secret: 'x' }] }] },
      /is required/,
    ],
    [
      'connectors[0].credentials[1]',
      { ...BASE_CONFIG, connectors: [{ id: 'payments', credentials: [row, { ...row, secret: 'other' }] }] },
      /duplicate credential reference: handle "api_key" for tenant "acme" is already mapped/,
    ],
    ['connectors[1].id', { ...BASE_CONFIG, connectors: [{ id: 'payments' }, { id: 'payments' }] }, /duplicate connector ID "payments"/],
    [
      'approvalPolicies[0].connector',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'crm', approverScopes: ['aip:approve'] }] },
      /"crm" is not an enabled connector \(enabled: payments\)/,
    ],
    [
      'approvalPolicies[0].modes[0]',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'payments', modes: ['plan'], approverScopes: ['s'] }] },
      /"plan" cannot be gated by approval/,
    ],
    [
      'approvalPolicies[0].approverScopes',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'payments', approverScopes: [] }] },
      /at least one approver scope/,
    ],
    [
      'approvalPolicies[0].tenants',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'payments', approverScopes: ['s'], tenants: [] }] },
      /at least one tenant \(or "\*"\), or be omitted/,
    ],
    [
      'approvalPolicies[0].tenants[1]',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'payments', approverScopes: ['s'], tenants: ['acme', 'not a tenant'] }] },
      /must be "\*" or a tenant ID/,
    ],
    [
      'approvalPolicies[0].tenants',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'payments', approverScopes: ['s'], tenants: ['*', 'acme'] }] },
      /"\*" selects every tenant: list it alone/,
    ],
    [
      'approvalPolicies[0].tenants[1]',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'payments', approverScopes: ['s'], tenants: ['acme', 'acme'] }] },
      /duplicate tenant "acme"/,
    ],
    [
      'approvalPolicies[0].minApprovals',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'payments', approverScopes: ['s'], minApprovals: 0 }] },
      /at least 1 \(approvals needed\)/,
    ],
    [
      'approvalPolicies[0].expiresAfterSeconds',
      { ...BASE_CONFIG, approvalPolicies: [{ id: 'p', connector: 'payments', approverScopes: ['s'], expiresAfterSeconds: 8 * 24 * 3600 }] },
      /at most 604800 \(seconds\)/,
    ],
    ['', { ...BASE_CONFIG, region: 'eu-west-1' }, /unknown field\(s\) "region"/],
    ['auth.claims.preset', withAuth({ claims: { preset: 'keycloak' } }), /generic/],
    ['auth.clockToleranceSeconds', withAuth({ clockToleranceSeconds: 600 }), /at most 60/],
    ['logLevel', { ...BASE_CONFIG, logLevel: 'TRACE' }, /one of DEBUG, INFO, WARN, ERROR/],
    ['lambdaSystemLogLevel', { ...BASE_CONFIG, lambdaSystemLogLevel: 'ERROR' }, /one of DEBUG, INFO, WARN \(Lambda's system log level\)/],
    ['api.xraySampling.rate', { ...BASE_CONFIG, api: { xraySampling: { rate: 5 } } }, /at most 1 \(a share\)/],
    ['api.xraySampling.rate', { ...BASE_CONFIG, api: { xraySampling: { rate: '5%' } } }, /a number from 0 to 1/],
    ['api.xraySampling.reservoir', { ...BASE_CONFIG, api: { xraySampling: { reservoir: -1 } } }, /at least 0/],
    ['api.xraySampling', { ...BASE_CONFIG, api: { xraySampling: { fixedRate: 0.1 } } }, /unknown field\(s\) "fixedRate"/],
    ['workerMaxConcurrency', { ...BASE_CONFIG, workerMaxConcurrency: 1 }, /SQS event sources allow 2-1000/],
    ['api.authorizerCacheTtlSeconds', { ...BASE_CONFIG, api: { authorizerCacheTtlSeconds: 3600 } }, /at most 300/],
    ['api.stageName', { ...BASE_CONFIG, api: { stageName: 'v1/prod' } }, /API stage name/],
    ['api.throttlingBurstLimit', { ...BASE_CONFIG, api: { throttlingRateLimit: 100, throttlingBurstLimit: 10 } }, /at least the rate limit \(100\)/],
    ['api', { ...BASE_CONFIG, api: { waf: true } }, /unknown field\(s\) "waf"/],
    [
      'connectorEndpoints.crm',
      { ...BASE_CONFIG, connectorEndpoints: { crm: 'https://crm.example.com' } },
      /"crm" is not an enabled connector \(enabled: payments\)/,
    ],
    ['connectorEndpoints.payments', { ...BASE_CONFIG, connectorEndpoints: { payments: 'ftp://pay.example.com' } }, /http:\/\/ or https:\/\/ URL/],
    ['outcomeUnknownAlarmAgeSeconds', { ...BASE_CONFIG, outcomeUnknownAlarmAgeSeconds: 10 }, /at least 60/],
    ['quietTenantQueueAgeAlarmSeconds', { ...BASE_CONFIG, quietTenantQueueAgeAlarmSeconds: 30 }, /at least 60/],
    ['workerReservedConcurrency', { ...BASE_CONFIG, workerReservedConcurrency: 5 }, /at least workerMaxConcurrency \(10\)/],
    [
      'reconcilerReservedConcurrency',
      { ...BASE_CONFIG, reconcilerMaxConcurrency: 8, reconcilerReservedConcurrency: 6 },
      /at least reconcilerMaxConcurrency \(8\)/,
    ],
  ] as const)('rejects a bad %s with a message naming it', (path, input, message) => {
    const issues = issuesOf(input);
    const issue = issues.find((candidate) => candidate.path === path);
    expect(issue, JSON.stringify(issues)).toBeDefined();
    expect(issue!.message).toMatch(message);
  });

  it('puts every issue in one error message, one line per field', () => {
    expect(() => parseInfraConfig({ envName: 'x!', auth: { issuer: 'ftp://a', audience: 'a', jwksUrl: 'https://a/j' } }, 'test.json')).toThrow(
      /^Invalid AIP infrastructure configuration \(test\.json\):\n {2}- envName: .+\n {2}- auth\.issuer: .+$/,
    );
  });

  it('approval policies: a tenant selector is optional (absent = every tenant); minApprovals and expiresAfterSeconds default to 1 and 86400', () => {
    const config = parseInfraConfig({
      ...BASE_CONFIG,
      approvalPolicies: [
        { id: 'everyone', connector: 'payments', approverScopes: ['aip:approve'] },
        {
          id: 'named',
          connector: 'payments',
          approverScopes: ['aip:approve', 'ops:approve'],
          tenants: ['acme', 'beta'],
          minApprovals: 2,
          expiresAfterSeconds: 3600,
        },
        { id: 'star', connector: 'payments', approverScopes: ['aip:approve'], tenants: ['*'] },
      ],
    });
    expect(config.approvalPolicies[0]).toEqual({
      id: 'everyone',
      connector: 'payments',
      approverScopes: ['aip:approve'],
      minApprovals: 1,
      expiresAfterSeconds: 86_400,
    });
    expect(config.approvalPolicies[0]?.tenants).toBeUndefined();
    expect(config.approvalPolicies[1]).toMatchObject({ tenants: ['acme', 'beta'], minApprovals: 2, expiresAfterSeconds: 3600 });
    expect(config.approvalPolicies[2]?.tenants).toEqual(['*']);
    // The runtime part carries the selector to the functions.
    expect(parseDeploymentRuntimeConfig(JSON.stringify(toDeploymentRuntimeConfig(config))).approvalPolicies[1]?.tenants).toEqual(['acme', 'beta']);
  });

  it('accepts every gated mode and rejects the two preview modes, whatever the combination', () => {
    fc.assert(
      fc.property(fc.subarray([...APPROVAL_GATED_MODES, 'dry_run', 'plan'] as const, { minLength: 1 }), (modes) => {
        const input: InfraConfigInput = {
          ...BASE_CONFIG,
          approvalPolicies: [{ id: 'p', connector: 'payments', modes: [...modes], approverScopes: ['aip:approve'] }],
        };
        const previews = modes.filter((mode) => mode === 'dry_run' || mode === 'plan');
        if (previews.length === 0) {
          expect(parseInfraConfig(input).approvalPolicies[0]!.modes).toEqual(modes);
        } else {
          expect(issuesOf(input).map((issue) => issue.path)).toEqual(previews.map((mode) => `approvalPolicies[0].modes[${modes.indexOf(mode)}]`));
        }
      }),
    );
  });
});

describe('loadInfraConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aip-config-'));

  it('names the file when its JSON is malformed', () => {
    const file = join(dir, 'broken.json');
    writeFileSync(file, '{ "envName": ');
    expect(() => loadInfraConfig(file)).toThrow(new RegExp(`\\(${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\):\\n {2}- \\(root\\): not valid JSON`));
  });

  it('resolves a relative path against the given directory', () => {
    writeFileSync(join(dir, 'ok.json'), JSON.stringify(BASE_CONFIG));
    expect(loadInfraConfig('ok.json', dir).envName).toBe('test');
  });
});

describe('runtime configuration', () => {
  it('gives the Secrets Manager credential provider its reference rows', () => {
    const config = parseInfraConfig({
      ...BASE_CONFIG,
      connectors: [
        {
          id: 'payments',
          credentials: [
            row,
            { handle: 'api_key', tenantId: 'acme', externalAccountId: 'acct_9', secret: 'aip/acme/acct_9', versionStage: 'AWSPREVIOUS', jsonField: 'key' },
          ],
        },
      ],
    });
    expect(secretsManagerReferences(config, 'payments')).toEqual([
      { connector_id: 'payments', handle: 'api_key', tenant_id: 'acme', secret_id: 'aip/test/payments/api-key' },
      {
        connector_id: 'payments',
        handle: 'api_key',
        tenant_id: 'acme',
        external_account_id: 'acct_9',
        secret_id: 'aip/acme/acct_9',
        version_stage: 'AWSPREVIOUS',
        json_field: 'key',
      },
    ]);
    expect(secretsManagerReferences(config, 'crm')).toEqual([]);
  });

  it("carries a connector's credential cache age to the functions, in whole seconds of at most an hour", () => {
    const config = parseInfraConfig({ ...BASE_CONFIG, connectors: [{ id: 'payments', credentials: [row], credentialCacheSeconds: 60 }] });
    const json = JSON.stringify(toDeploymentRuntimeConfig(config));
    expect(parseDeploymentRuntimeConfig(json).connectors[0]?.credentialCacheSeconds).toBe(60);
    expect(parseInfraConfig({ ...BASE_CONFIG, connectors: [{ id: 'payments', credentials: [row] }] }).connectors[0]?.credentialCacheSeconds).toBeUndefined();
    expect(issuesOf({ ...BASE_CONFIG, connectors: [{ id: 'payments', credentialCacheSeconds: 3601 }] })).toEqual([
      { path: 'connectors[0].credentialCacheSeconds', message: expect.stringContaining('at most 3600') },
    ]);
    expect(issuesOf({ ...BASE_CONFIG, connectors: [{ id: 'payments', credentialCacheSeconds: 1.5 }] })).toHaveLength(1);
  });

  it('round-trips through the AIP_RUNTIME_CONFIG JSON', () => {
    const config = parseInfraConfig(BASE_CONFIG);
    const json = JSON.stringify(toDeploymentRuntimeConfig(config));
    expect(parseDeploymentRuntimeConfig(json)).toEqual(toDeploymentRuntimeConfig(config));
  });

  it('carries references only: no field beyond envName, auth, connectors, approval policies and where a waited attempt runs', () => {
    const config = parseInfraConfig({ ...BASE_CONFIG, alarmEmail: 'ops@example.com' });
    expect(Object.keys(toDeploymentRuntimeConfig(config)).sort()).toEqual(['approvalPolicies', 'attemptWhenWaited', 'auth', 'connectors', 'envName']);
    expect(toDeploymentRuntimeConfig(config).attemptWhenWaited).toBe('inline');
    expect(toDeploymentRuntimeConfig(parseInfraConfig({ ...BASE_CONFIG, attemptWhenWaited: 'queue' })).attemptWhenWaited).toBe('queue');
    expect(() => parseInfraConfig({ ...BASE_CONFIG, attemptWhenWaited: 'worker' })).toThrow(/attemptWhenWaited: must be one of inline, queue/);
  });

  it('rejects a malformed variable with a typed error', () => {
    expect(() => parseDeploymentRuntimeConfig('{')).toThrow(InfraConfigError);
    expect(() => parseDeploymentRuntimeConfig(JSON.stringify({ envName: 'x' }))).toThrow(/auth: is required/);
  });
});

describe('http auth URLs (LocalStack against the development issuer)', () => {
  const httpAuth = { issuer: 'http://host.docker.internal:8080/realms/dev', jwksUrl: 'http://host.docker.internal:4011/.well-known/jwks.json' };

  it.each(['local', 'localstack'])('accepts an http:// JWKS URL and issuer when envName is %s, and carries them to the functions', (envName) => {
    const config = parseInfraConfig({ ...BASE_CONFIG, envName, auth: { ...BASE_CONFIG.auth, ...httpAuth } });
    expect(config.auth).toMatchObject(httpAuth);
    const runtime = parseDeploymentRuntimeConfig(JSON.stringify(toDeploymentRuntimeConfig(config)));
    expect(runtime.auth.jwksUrl).toBe(httpAuth.jwksUrl);
    // The authorizer builds a verifier from the same variable (keys are fetched on first use, not here).
    expect(() => verifierFromEnv({ AIP_RUNTIME_CONFIG: JSON.stringify(runtime) })).not.toThrow();
  });

  it.each(['dev', 'prod', 'test', 'localstack2'])('refuses them for envName %s, naming each field', (envName) => {
    const issues = issuesOf({ ...BASE_CONFIG, envName, auth: { ...BASE_CONFIG.auth, ...httpAuth } });
    expect(issues.map((issue) => issue.path).sort()).toEqual(['auth.issuer', 'auth.jwksUrl']);
    for (const issue of issues) expect(issue.message).toContain(`(envName is "${envName}")`);
    // The runtime slice is checked the same way when a function reads it.
    const runtime = JSON.stringify({ envName, auth: { ...BASE_CONFIG.auth, ...httpAuth }, connectors: [], approvalPolicies: [] });
    expect(() => parseDeploymentRuntimeConfig(runtime)).toThrow(/auth\.jwksUrl: must be an absolute https:\/\/ URL/);
    // And the authorizer's verifier refuses to fetch keys over http off loopback there.
    expect(() => verifierFromEnv({ AIP_RUNTIME_CONFIG: runtime })).toThrow(/JWKS URL must use https/);
  });

  it('infra/config.localstack.json trusts the development issuer that `aip token` signs for', () => {
    const config = loadInfraConfig(join(PROJECT_ROOT, 'infra', 'config.localstack.json'));
    expect(config.envName).toBe('localstack');
    expect(config.auth).toMatchObject({
      issuer: DEV_ISSUER,
      audience: DEV_AUDIENCE,
      algorithms: [DEV_ALGORITHM],
      jwksUrl: `http://host.docker.internal:${DEFAULT_JWKS_PORT}${JWKS_PATH}`,
    });
  });

  it('a LocalStack-style verifier accepts a development token against the JWKS dev/auth/serve-jwks.ts serves', async () => {
    const keysDir = mkdtempSync(join(tmpdir(), 'aip-dev-keys-'));
    const server = await startJwksServer({ host: '127.0.0.1', port: 0, keysDir });
    try {
      const localstack = loadInfraConfig(join(PROJECT_ROOT, 'infra', 'config.localstack.json'));
      // The deployed URL names host.docker.internal; here the same server is reached on loopback.
      const runtime = { ...toDeploymentRuntimeConfig(localstack), auth: { ...localstack.auth, jwksUrl: server.jwksUrl } };
      const verifier = verifierFromEnv({ AIP_RUNTIME_CONFIG: JSON.stringify(runtime) });
      const token = await mintToken({ sub: 'alice', tenants: ['demo'], scopes: ['aip:actions:write'] }, await loadDevKeys(keysDir));
      const identity = await verifier.verify(token);
      expect(identity).toMatchObject({ principal: { id: 'alice' }, tenants: ['demo'], scopes: ['aip:actions:write'], issuer: DEV_ISSUER });
    } finally {
      await server.stop();
    }
  });
});
