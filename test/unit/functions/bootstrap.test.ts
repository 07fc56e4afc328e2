/**
 * The composition root's environment validation (functions/shared/settings.ts).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FUNCTION_ENV } from '../../../lib/config/function-env.js';
import { createRuntime } from '../../../functions/shared/bootstrap.js';
import { BootstrapConfigError, OPTIONAL_ENV, readBootstrapSettings, settingsToEnv } from '../../../functions/shared/settings.js';
import { parseRuntimeSettings } from '../../../functions/shared/compose-runtime.js';
import { ArmedCrashPoints } from '../../../lib/runtime/crash-points.js';
import { functionEnv } from '../../support/function-env.js';

const runtimeConfig = {
  envName: 'local',
  auth: { issuer: 'https://aip.local/dev', audience: 'aip-local', jwksUrl: 'https://aip.local/dev/.well-known/jwks.json', algorithms: ['ES256'] },
  connectors: [{ id: 'payments', credentials: [{ handle: 'api_key', tenantId: 'demo', secret: 'aip/local/payments' }] }],
  approvalPolicies: [{ id: 'pay', connector: 'payments', modes: ['commit'], approverScopes: ['aip:approve'], minApprovals: 1, expiresAfterSeconds: 3600 }],
};

const validEnv = (): NodeJS.ProcessEnv => functionEnv(runtimeConfig);

function issuesOf(env: NodeJS.ProcessEnv): { variable: string; message: string }[] {
  try {
    readBootstrapSettings(env);
  } catch (err) {
    expect(err).toBeInstanceOf(BootstrapConfigError);
    return [...(err as BootstrapConfigError).issues];
  }
  throw new Error('expected a BootstrapConfigError');
}

describe('readBootstrapSettings', () => {
  it('reads a complete environment with defaults for the optional variables', () => {
    const settings = readBootstrapSettings({ ...validEnv(), AWS_ENDPOINT_URL: 'http://127.0.0.1:4566', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:9324' });
    expect(settings).toMatchObject({
      tableName: 'aip-local',
      reconcileQueueArn: 'arn:aws:sqs:us-east-1:000000000000:aip-local-reconcile',
      scheduleGroup: 'aip-local-reconcile',
      servicePrincipal: { id: 'aip-runtime', kind: 'service' },
      credentials: { source: 'secrets-manager' },
      connectorEndpoints: {},
      runtimeSettings: {},
      endpoints: {
        dynamodb: 'http://127.0.0.1:4566',
        sqs: 'http://127.0.0.1:9324',
        scheduler: 'http://127.0.0.1:4566',
        secretsManager: 'http://127.0.0.1:4566',
      },
    });
    expect(settings.runtimeConfig.connectors[0]?.id).toBe('payments');
  });

  it('names every missing or malformed variable at once, without echoing values', () => {
    const env = validEnv();
    delete env[FUNCTION_ENV.tableName];
    env[FUNCTION_ENV.invokeQueueUrl] = 'not a url';
    env[FUNCTION_ENV.schedulerRoleArn] = 'arn:aws:iam::000000000000:user/secret-looking-value';
    const issues = issuesOf(env);
    expect(issues.map((i) => i.variable).sort()).toEqual([FUNCTION_ENV.invokeQueueUrl, FUNCTION_ENV.schedulerRoleArn, FUNCTION_ENV.tableName].sort());
    expect(JSON.stringify(issues)).not.toContain('secret-looking-value');
    expect(() => readBootstrapSettings(env)).toThrow(/AIP_TABLE_NAME: is required/);
  });

  it('points into the runtime configuration JSON for a bad field', () => {
    const env = validEnv();
    env[FUNCTION_ENV.runtimeConfig] = JSON.stringify({ ...runtimeConfig, connectors: [{ id: 'bad id!', credentials: [] }] });
    const issues = issuesOf(env);
    expect(issues.some((i) => i.variable === `${FUNCTION_ENV.runtimeConfig}: connectors[0].id`)).toBe(true);
    env[FUNCTION_ENV.runtimeConfig] = '{not json';
    expect(issuesOf(env)).toEqual([{ variable: FUNCTION_ENV.runtimeConfig, message: 'is not valid JSON' }]);
  });

  it('reads JSON variables from a file path, relative to cwd', () => {
    const dir = mkdtempSync(join(tmpdir(), 'aip-bootstrap-'));
    writeFileSync(join(dir, 'runtime.json'), JSON.stringify(runtimeConfig));
    writeFileSync(
      join(dir, 'creds.json'),
      JSON.stringify({ references: [{ connector_id: 'payments', handle: 'api_key', tenant_id: 'demo', env: 'PAYMENTS_KEY' }] }),
    );
    const settings = readBootstrapSettings(
      { ...validEnv(), [FUNCTION_ENV.runtimeConfig]: 'runtime.json', [OPTIONAL_ENV.localCredentials]: join(dir, 'creds.json') },
      { cwd: dir },
    );
    expect(settings.runtimeConfig.envName).toBe('local');
    expect(settings.credentials).toEqual({
      source: 'local',
      references: [{ connector_id: 'payments', handle: 'api_key', tenant_id: 'demo', env: 'PAYMENTS_KEY' }],
    });
    expect(issuesOf({ ...validEnv(), [FUNCTION_ENV.runtimeConfig]: 'missing.json' })).toEqual([
      { variable: FUNCTION_ENV.runtimeConfig, message: 'is neither JSON nor the path of an existing file' },
    ]);
  });

  it('validates the optional variables', () => {
    const issues = issuesOf({
      ...validEnv(),
      [OPTIONAL_ENV.servicePrincipal]: 'has spaces',
      [OPTIONAL_ENV.connectorEndpoints]: JSON.stringify({ payments: 'ftp://x' }),
      [OPTIONAL_ENV.localCredentials]: JSON.stringify({ references: [{ connector_id: 'payments', handle: 'api_key', tenant_id: 'demo', value: 'sk' }] }),
      [OPTIONAL_ENV.runtimeSettings]: '[1]',
    });
    const variables = issues.map((i) => i.variable);
    expect(variables).toContain(OPTIONAL_ENV.servicePrincipal);
    expect(variables).toContain(`${OPTIONAL_ENV.connectorEndpoints}: payments`);
    expect(variables.some((v) => v.startsWith(OPTIONAL_ENV.localCredentials))).toBe(true);
    expect(variables).toContain(OPTIONAL_ENV.runtimeSettings);
    expect(issuesOf({ ...validEnv(), [OPTIONAL_ENV.connectorEndpoints]: JSON.stringify({ ledger: 'http://127.0.0.1:1' }) })).toEqual([
      { variable: `${OPTIONAL_ENV.connectorEndpoints}: ledger`, message: 'is not an enabled connector (enabled: payments)' },
    ]);
  });

  it("reads the invoke queue's maxReceiveCount (1-1000) and hands it to the Runtime's capacity deferral bound, over the settings' own", () => {
    const settings = readBootstrapSettings({
      ...validEnv(),
      [FUNCTION_ENV.invokeQueueMaxReceiveCount]: '2',
      [OPTIONAL_ENV.runtimeSettings]: JSON.stringify({ capacity_deferral: { max_deferrals: 5, queue_max_receive_count: 9 } }),
    });
    expect(settings.invokeQueueMaxReceiveCount).toBe(2);
    expect(parseRuntimeSettings(settings).capacity_deferral).toMatchObject({ max_deferrals: 5, queue_max_receive_count: 2 });
    expect(readBootstrapSettings(validEnv()).invokeQueueMaxReceiveCount).toBeUndefined();
    expect(parseRuntimeSettings(readBootstrapSettings(validEnv())).capacity_deferral.queue_max_receive_count).toBeUndefined();
    for (const bad of ['0', '1001', '2.5', 'five'])
      expect(issuesOf({ ...validEnv(), [FUNCTION_ENV.invokeQueueMaxReceiveCount]: bad }).map((i) => i.variable)).toEqual([
        FUNCTION_ENV.invokeQueueMaxReceiveCount,
      ]);
  });

  it('round-trips through settingsToEnv', () => {
    const settings = readBootstrapSettings({
      ...validEnv(),
      [FUNCTION_ENV.invokeQueueMaxReceiveCount]: '5',
      [OPTIONAL_ENV.servicePrincipal]: 'svc-local',
      [OPTIONAL_ENV.connectorEndpoints]: JSON.stringify({ payments: 'http://127.0.0.1:4010' }),
      [OPTIONAL_ENV.runtimeSettings]: JSON.stringify({ stall_after_ms: 60_000 }),
    });
    const again = readBootstrapSettings(settingsToEnv(settings));
    expect({ ...again, endpoints: {} }).toEqual({ ...settings, endpoints: {} });
    expect(again.servicePrincipal).toEqual({ id: 'svc-local', kind: 'service' });
  });
});

describe('test mode (the crash-point hook)', () => {
  const settingsFor = (envName: string, runtimeSettings: Record<string, unknown>) =>
    readBootstrapSettings({
      ...validEnv(),
      [FUNCTION_ENV.runtimeConfig]: JSON.stringify({ ...runtimeConfig, envName }),
      [OPTIONAL_ENV.runtimeSettings]: JSON.stringify(runtimeSettings),
    });

  it('a production deployment refuses test_mode in AIP_RUNTIME_SETTINGS; local and test accept it', () => {
    let caught: unknown;
    try {
      parseRuntimeSettings(settingsFor('prod', { test_mode: true }));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(BootstrapConfigError);
    expect((caught as BootstrapConfigError).issues.map((i) => i.variable)).toEqual([`${OPTIONAL_ENV.runtimeSettings}: test_mode`]);
    expect(parseRuntimeSettings(settingsFor('prod', {})).test_mode).toBe(false);
    expect(parseRuntimeSettings(settingsFor('local', { test_mode: true })).test_mode).toBe(true);
    expect(parseRuntimeSettings(settingsFor('test', { test_mode: true })).test_mode).toBe(true);
  });

  it('a deployed environment gets four eyes on resolutions and a retention for transactions and receipts unless its settings say otherwise', () => {
    const prod = parseRuntimeSettings(settingsFor('prod', {}));
    expect(prod.resolution.four_eyes).toBe(true);
    expect(prod.transaction_retention_days).toBe(400);
    expect(prod.action_retention_seconds).toBe(400 * 86_400);
    const chosen = parseRuntimeSettings(
      settingsFor('staging', { resolution: { four_eyes: false, approval_ttl_ms: 3_600_000 }, transaction_retention_days: 30, action_retention_seconds: 0 }),
    );
    expect(chosen.resolution).toEqual({ four_eyes: false, approval_ttl_ms: 3_600_000, provider_lookup_timeout_ms: 5_000 });
    expect(chosen.transaction_retention_days).toBe(30);
    expect(chosen.action_retention_seconds).toBe(0);
    // The local stack and the tests keep the schema defaults.
    for (const env of ['local', 'test']) {
      const local = parseRuntimeSettings(settingsFor(env, {}));
      expect(local.resolution.four_eyes).toBe(false);
      expect(local.transaction_retention_days).toBe(0);
    }
  });

  it('the composition hands crash points to the Runtime, which refuses them without test mode', async () => {
    await expect(createRuntime(settingsFor('local', {}), { crashPoints: new ArmedCrashPoints() })).rejects.toMatchObject({ code: 'runtime.config_invalid' });
    const handle = await createRuntime(settingsFor('local', { test_mode: true }), { crashPoints: new ArmedCrashPoints() });
    handle.close();
  });
});

describe('per-route composition (the connector half on first need)', () => {
  const caller = { principal: { id: 'agent-1', kind: 'agent' as const }, tenants: ['demo'], scopes: ['aip:actions:read', 'aip:approve'] };

  it('builds the enabled connectors, with their Secrets Manager credential providers, on the first method that needs them', async () => {
    const handle = await createRuntime(readBootstrapSettings(validEnv()), { maxAttempts: 1 });
    try {
      const list = await handle.runtime.capabilities(caller, 'demo');
      expect(list.items.length).toBeGreaterThan(0);
      expect(list.items.every((c) => c.connector_id === 'payments')).toBe(true);
    } finally {
      handle.close();
    }
  });

  it('fails the first method that needs connectors on a connector this build does not contain, and again on the next', async () => {
    const settings = readBootstrapSettings({
      ...validEnv(),
      [FUNCTION_ENV.runtimeConfig]: JSON.stringify({ ...runtimeConfig, connectors: [{ id: 'ledger', credentials: [] }], approvalPolicies: [] }),
    });
    const handle = await createRuntime(settings, { maxAttempts: 1 });
    try {
      for (let i = 0; i < 2; i++) {
        const err = await handle.runtime.capabilities(caller, 'demo').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(BootstrapConfigError);
        expect((err as BootstrapConfigError).issues.map((x) => x.variable)).toEqual([`${FUNCTION_ENV.runtimeConfig}: connectors[0].id`]);
      }
    } finally {
      handle.close();
    }
  });
});
