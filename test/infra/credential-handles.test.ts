/**
 * The example deployment configurations (infra/config.*.json) map exactly the
 * credential handles their enabled connectors ask for. A handle the connector
 * never asks for is a dead row; a handle it asks for with no row fails every
 * attempt with a credential error at run time. What a connector asks for is
 * read from the build itself: the connector factory of the composition root
 * (functions/shared/connector-factories.ts CONNECTOR_FACTORIES) names the handle
 * each credentialed capability's attempts get, and an HTTP connector's own
 * `auth.credential_handle` must be that handle (it refuses any other).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONNECTOR_FACTORIES } from '../../functions/shared/connector-factories.js';
import { loadInfraConfig, type InfraConfig } from '../../infra/config.js';
import { PROJECT_ROOT } from '../../infra/functions.js';
import { EnvCredentialProvider } from '../../packages/connector-sdk/src/credentials/env-provider.js';
import { HttpConnector } from '../../lib/connectors/http/connector.js';

const INFRA_DIR = join(PROJECT_ROOT, 'infra');
const EXAMPLE_CONFIGS = readdirSync(INFRA_DIR)
  .filter((f) => /^config\..+\.json$/.test(f))
  .sort();

/** The handles a connector of this build asks for (one per credentialed capability, deduplicated). */
async function requestedHandles(connector_id: string): Promise<string[]> {
  const factory = CONNECTOR_FACTORIES[connector_id];
  if (factory === undefined) throw new Error(`the build has no connector "${connector_id}"`);
  const hosted = factory({ credentials: new EnvCredentialProvider({ connector_id, references: [] }) });
  const manifest = await hosted.connector.discover({});
  const handles = new Set<string>();
  for (const capability of manifest.capabilities) {
    if (capability.credentials?.required !== true) continue;
    const handle = hosted.credential_handle?.(capability.id);
    if (handle === undefined) throw new Error(`${connector_id}: ${capability.id} requires credentials but the build names no handle for it`);
    handles.add(handle);
  }
  const auth = hosted.connector instanceof HttpConnector ? hosted.connector.config.auth : undefined;
  if (auth !== undefined && auth.type !== 'none' && [...handles].some((h) => h !== auth.credential_handle)) {
    throw new Error(`${connector_id}: the factory hands attempts ${[...handles].join(', ')}, but the connector only accepts ${auth.credential_handle}`);
  }
  return [...handles].sort();
}

/** Every disagreement between a configuration's credential rows and what its enabled connectors ask for. */
async function handleDrift(config: InfraConfig): Promise<string[]> {
  const problems: string[] = [];
  for (const connector of config.connectors) {
    const requested = await requestedHandles(connector.id);
    const tenants = [...new Set(connector.credentials.map((r) => r.tenantId))].sort();
    for (const row of connector.credentials) {
      if (!requested.includes(row.handle))
        problems.push(`${connector.id}: handle "${row.handle}" (tenant ${row.tenantId}) is not one the connector asks for (${requested.join(', ')})`);
    }
    for (const handle of requested) {
      if (connector.credentials.length === 0) problems.push(`${connector.id}: asks for "${handle}", which no row maps`);
      for (const tenant of tenants) {
        if (!connector.credentials.some((r) => r.handle === handle && r.tenantId === tenant))
          problems.push(`${connector.id}: asks for "${handle}", which tenant ${tenant} does not map`);
      }
    }
  }
  return problems;
}

describe('credential handles of the example configurations', () => {
  it('finds the example configurations', () => {
    expect(EXAMPLE_CONFIGS).toEqual(expect.arrayContaining(['config.local.json', 'config.localstack.json']));
  });

  it.each(EXAMPLE_CONFIGS)('infra/%s maps exactly the handles its enabled connectors ask for', async (file) => {
    const config = loadInfraConfig(join(INFRA_DIR, file));
    expect(config.connectors.length).toBeGreaterThan(0);
    expect(await handleDrift(config)).toEqual([]);
  });

  it('the payments connector asks for payments/api_key', async () => {
    expect(await requestedHandles('payments')).toEqual(['payments/api_key']);
  });

  it('reports a handle the connector does not ask for, and a requested handle a tenant does not map', async () => {
    const config = loadInfraConfig(join(INFRA_DIR, 'config.local.json'));
    const drifted: InfraConfig = {
      ...config,
      connectors: [{ id: 'payments', credentials: [{ handle: 'api_key', tenantId: 'demo', secret: 'aip/local/payments/api-key' }] }],
    };
    expect(await handleDrift(drifted)).toEqual([
      'payments: handle "api_key" (tenant demo) is not one the connector asks for (payments/api_key)',
      'payments: asks for "payments/api_key", which tenant demo does not map',
    ]);
    expect(await handleDrift({ ...config, connectors: [{ id: 'payments', credentials: [] }] })).toEqual([
      'payments: asks for "payments/api_key", which no row maps',
    ]);
  });
});
