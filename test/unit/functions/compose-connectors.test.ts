/**
 * Connectors on first use (functions/shared/compose-connectors.ts): with a
 * precompiled registry built for an enabled connector as the composition
 * builds it, the registry comes from the manifest and support records the
 * bundle carries, and the connector is imported and built on its first
 * `loadConnector`, once, and checked against them. Without one (another base
 * URL, no precompiled registry) the connector is built at composition, as
 * before. The registry takes the admission report and manifest hash the
 * bundling recorded for the connector. The Secrets Manager client loads on
 * the first credential fetch (lib/aws/secrets/secret-cache.ts), against the
 * request shapes (aws-sdk-client-mock).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPTIONAL_FUNCTION_ENV } from '../../../lib/config/function-env.js';
import { SecretValueCache } from '../../../lib/aws/secrets/secret-cache.js';
import { createPaymentsConnector } from '../../../lib/connectors/reference/payments.js';
import { loadConnector } from '../../../lib/runtime/deps.js';
import { precompiledRegistrySource } from '../../../lib/runtime/schema-precompile.js';
import type { PrecompiledRegistry } from '../../../lib/runtime/schema-precompiled.js';
import { composeConnectors, precompiledEntry, type ConnectorWiring } from '../../../functions/shared/compose-connectors.js';
import { BUILT_IN_CONNECTOR_FACTORIES, connectorRegistrySource, type ConnectorFactory } from '../../../functions/shared/connector-factories.js';
import { readBootstrapSettings } from '../../../functions/shared/settings.js';
import { functionEnv } from '../../support/function-env.js';
import { systemClock } from '../../../packages/connector-sdk/src/ports/clock.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';

const runtimeConfig = {
  envName: 'local',
  auth: { issuer: 'https://aip.local/dev', audience: 'aip-local', jwksUrl: 'https://aip.local/dev/.well-known/jwks.json', algorithms: ['ES256'] },
  connectors: [{ id: 'payments', credentials: [{ handle: 'payments/api_key', tenantId: 'demo', secret: 'aip/local/payments' }] }],
  approvalPolicies: [],
};

const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => functionEnv(runtimeConfig, extra);

const SAMPLES: unknown[] = [
  { amount: 1250, currency: 'eur', customer: 'cus_1' },
  { amount: 0, currency: 'eur' },
  { amount: 10, currency: 'euro' },
  { amount: 10, currency: 'eur', metadata: { a: 'b' }, extra: true },
  { charge_id: 'ch_1', amount: 5 },
  'not an object',
];

const DIR = join(process.cwd(), '.vitest-tmp', `compose-connectors-${process.pid}`);
let precompiled: PrecompiledRegistry;
const dynamo = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
const documents = DynamoDBDocumentClient.from(dynamo);

beforeAll(async () => {
  // The generated module, loaded the way a bundle runs it (as test/unit/runtime/schema-precompiled.test.ts does).
  mkdirSync(DIR, { recursive: true });
  const file = join(DIR, 'precompiled-registry.mjs');
  const source = precompiledRegistrySource([await connectorRegistrySource('payments')]);
  writeFileSync(file, `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);\n${source}`);
  precompiled = ((await import(pathToFileURL(file).href)) as { PRECOMPILED_REGISTRY: PrecompiledRegistry }).PRECOMPILED_REGISTRY;
});

afterAll(() => {
  rmSync(DIR, { recursive: true, force: true });
  documents.destroy();
});

/** Wiring whose payments factory counts its builds and whose Secrets Manager client must never be asked for. */
function wiring(precompiledRegistry: PrecompiledRegistry | undefined, factory: ConnectorFactory = BUILT_IN_CONNECTOR_FACTORIES.payments as ConnectorFactory) {
  let builds = 0;
  let secrets = 0;
  const w: ConnectorWiring = {
    documents,
    secrets: () => {
      secrets += 1;
      return Promise.reject(new Error('no credential is resolved in these tests'));
    },
    clock: systemClock,
    connectorFactories: {
      payments: (options) => {
        builds += 1;
        return factory(options);
      },
    },
    precompiled: precompiledRegistry,
  };
  return { wiring: w, builds: () => builds, secrets: () => secrets };
}

function validations(registry: Awaited<ReturnType<typeof composeConnectors>>['registry']) {
  return registry.ids().map((id) => {
    const c = registry.lookup(id);
    return { id, hash: c.manifest_hash, input: SAMPLES.map((s) => c.validateInput(s)), output: SAMPLES.map((s) => c.validateOutput(s)) };
  });
}

describe('connectors on first use', () => {
  it('builds the registry from the precompiled manifests without building the connector, and builds it once, on first load', async () => {
    const settings = readBootstrapSettings(env());
    const lazy = wiring(precompiled);
    const composed = await composeConnectors(settings, lazy.wiring);
    expect(lazy.builds()).toBe(0);

    // The same registry, report and validation as the connector built at composition (no precompiled registry: run-time ajv).
    const eager = wiring(undefined);
    const built = await composeConnectors(settings, eager.wiring);
    expect(eager.builds()).toBe(1);
    expect(composed.registry.ids()).toEqual(['payments.charge', 'payments.refund']);
    expect(composed.registry.report).toEqual(built.registry.report);
    expect(validations(composed.registry)).toEqual(validations(built.registry));
    // Its admission report and manifest hash are the ones the bundling recorded, not computed again.
    expect(composed.registry.report.connectors[0]?.admission).toBe(precompiled.connectors[0]?.recorded.admission);
    expect(composed.registry.report.connectors[0]?.manifest_hash).toBe(precompiled.connectors[0]?.recorded.manifest_hash);
    expect(composed.connectors.ids()).toEqual(['payments']);
    expect(lazy.builds()).toBe(0);

    // Used before it is loaded: a programming error, said so.
    let early: unknown;
    try {
      composed.connectors.get('payments');
    } catch (err) {
      early = err;
    }
    expect(isAipError(early) && early.code).toBe('internal.unexpected');

    const [first, second] = await Promise.all([loadConnector(composed.connectors, 'payments'), loadConnector(composed.connectors, 'payments')]);
    expect(lazy.builds()).toBe(1);
    expect(second).toBe(first);
    expect(await loadConnector(composed.connectors, 'payments')).toBe(first);
    expect(composed.connectors.get('payments')).toBe(first);
    expect(lazy.builds()).toBe(1);
    expect(await first?.connector.discover({})).toEqual(await built.connectors.get('payments')?.connector.discover({}));
    expect(first?.credential_handle?.('payments.charge')).toBe(built.connectors.get('payments')?.credential_handle?.('payments.charge'));
    expect(await loadConnector(composed.connectors, 'ledger')).toBeUndefined();
    // Nothing resolved a credential, so the Secrets Manager client was never asked for.
    expect(lazy.secrets() + eager.secrets()).toBe(0);
  });

  it('fails every load of a connector that publishes another manifest than the one the bundle was built for', async () => {
    const other: ConnectorFactory = (options) => ({ connector: createPaymentsConnector({ credentials: options.credentials, timeoutMs: 1234 }) });
    const lazy = wiring(precompiled, other);
    const composed = await composeConnectors(readBootstrapSettings(env()), lazy.wiring);
    expect(composed.registry.ids()).toEqual(['payments.charge', 'payments.refund']);
    for (let i = 0; i < 2; i++) await expect(loadConnector(composed.connectors, 'payments')).rejects.toThrow(/precompiled registry: rebuild the bundle/);
    expect(lazy.builds()).toBe(2);
  });

  it('builds at composition, as before, a connector the precompiled registry was not built for (another base URL)', async () => {
    const settings = readBootstrapSettings(env({ [OPTIONAL_FUNCTION_ENV.connectorEndpoints]: JSON.stringify({ payments: 'http://127.0.0.1:4999' }) }));
    expect(precompiledEntry(precompiled, 'payments', 'http://127.0.0.1:4999')).toBeUndefined();
    expect(precompiledEntry(precompiled, 'payments', undefined)?.connector_id).toBe('payments');
    const eager = wiring(precompiled);
    const composed = await composeConnectors(settings, eager.wiring);
    expect(eager.builds()).toBe(1);
    expect(composed.connectors.get('payments')?.connector.id).toBe('payments');
    expect(composed.registry.ids()).toEqual(['payments.charge', 'payments.refund']);
  });
});

describe('the Secrets Manager client of the credential cache', () => {
  const sm = mockClient(SecretsManagerClient);
  // The unit files share a module graph (vitest.config.ts): the client's own send comes back after this file.
  afterAll(() => sm.restore());

  it('is loaded on the first fetch, once, and serves every later one', async () => {
    sm.reset();
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'sk_lazy_client_3kQ' });
    let loads = 0;
    const client = new SecretsManagerClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    const cache = new SecretValueCache({
      client: async () => {
        loads += 1;
        return client;
      },
    });
    expect(loads).toBe(0);
    const values = await Promise.all([cache.get({ secret_id: 'aip/a' }, 300), cache.get({ secret_id: 'aip/b' }, 300)]);
    expect(values).toEqual(['sk_lazy_client_3kQ', 'sk_lazy_client_3kQ']);
    expect(await cache.get({ secret_id: 'aip/a' }, 300)).toBe('sk_lazy_client_3kQ');
    expect(loads).toBe(1);
    expect(sm.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input)).toEqual([{ SecretId: 'aip/a' }, { SecretId: 'aip/b' }]);
    client.destroy();
  });

  it('is asked for again after a load that failed', async () => {
    sm.reset();
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'sk_second_try_8Zp' });
    let loads = 0;
    const client = new SecretsManagerClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    const cache = new SecretValueCache({
      client: async () => {
        loads += 1;
        if (loads === 1) throw new Error('the client could not be loaded');
        return client;
      },
    });
    await expect(cache.get({ secret_id: 'aip/a' }, 300)).rejects.toThrow('the client could not be loaded');
    expect(await cache.get({ secret_id: 'aip/a' }, 300)).toBe('sk_second_try_8Zp');
    expect(loads).toBe(2);
    client.destroy();
  });
});
