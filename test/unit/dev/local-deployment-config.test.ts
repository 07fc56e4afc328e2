/**
 * dev/local/deployment-connectors.ts: how `npm start` finds the deployment
 * configuration (`deploymentConfigFrom`) and which variable stands for each
 * secret of its credential rows (`localSecretVariable`), and the banner's
 * lines (`describeHostedConnectors`), and the refusal of a source for the
 * built-in payments connector. The hosting itself
 * runs in test/e2e/deployment-connectors.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  deploymentConfigFrom,
  describeHostedConnectors,
  loadLocalDeploymentConnectors,
  localSecretVariable,
} from '../../../dev/local/deployment-connectors.js';
import { InfraConfigError } from '../../../infra/config.js';

describe('npm start: the deployment configuration', () => {
  it('--config wins over AIP_DEPLOYMENT_CONFIG; relative paths are relative to where npm ran (INIT_CWD)', () => {
    expect(deploymentConfigFrom(['--config', 'aip.config.json'], { INIT_CWD: '/team', AIP_DEPLOYMENT_CONFIG: '/other.json' })).toBe('/team/aip.config.json');
    expect(deploymentConfigFrom(['-c', '/abs/aip.json'], { INIT_CWD: '/team' })).toBe('/abs/aip.json');
    expect(deploymentConfigFrom([], { INIT_CWD: '/team', AIP_DEPLOYMENT_CONFIG: 'conf/local.json' })).toBe('/team/conf/local.json');
    expect(deploymentConfigFrom([], { INIT_CWD: '/team', AIP_DEPLOYMENT_CONFIG: '  ' })).toBeUndefined();
    expect(deploymentConfigFrom([], {})).toBeUndefined();
  });

  it('refuses an unknown option', () => {
    expect(() => deploymentConfigFrom(['--confg', 'x.json'], {})).toThrow(/--confg/);
  });
});

describe('the local variable of a credential row', () => {
  it('is AIP_LOCAL_SECRET_ and the secret name, upper-cased, other characters as underscores', () => {
    expect(localSecretVariable({ secret: 'team/crm/token' })).toBe('AIP_LOCAL_SECRET_TEAM_CRM_TOKEN');
    expect(localSecretVariable({ secret: 'prod/orders-api.key+v2' })).toBe('AIP_LOCAL_SECRET_PROD_ORDERS_API_KEY_V2');
  });

  it("of an ARN: the secret's name without the 6-character suffix", () => {
    expect(localSecretVariable({ secret: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/crm/token-AbC123' })).toBe(
      'AIP_LOCAL_SECRET_PROD_CRM_TOKEN',
    );
  });

  it('names the JSON field too: rows reading two fields of one secret get two variables', () => {
    expect(localSecretVariable({ secret: 'prod/crm', jsonField: 'api_key' })).toBe('AIP_LOCAL_SECRET_PROD_CRM_API_KEY');
    expect(localSecretVariable({ secret: 'prod/crm', jsonField: 'token' })).toBe('AIP_LOCAL_SECRET_PROD_CRM_TOKEN');
  });
});

describe("the banner's lines for the configuration's connectors", () => {
  it('names an unset variable, and how to mint a token for a tenant the rows name when it is not the stack tenant', () => {
    const lines = describeHostedConnectors(
      {
        file: '/team/aip.config.json',
        hosted: [
          {
            id: 'crm',
            kind: 'http',
            capabilities: ['crm.contact_lookup'],
            credentials: [{ handle: 'crm/token', tenant_id: 'acme', external_account_id: 'acct_1', env: 'AIP_LOCAL_SECRET_CRM', set: false }],
          },
        ],
      },
      'demo',
    );
    expect(lines).toContain('  crm            declarative HTTP: crm.contact_lookup');
    expect(lines).toContain('                 credential crm/token (tenant acme, account acct_1) from $AIP_LOCAL_SECRET_CRM   (NOT SET)');
    expect(lines).toContain('  npx aip token --tenant acme');
  });
});

describe('a configuration that gives payments a source', () => {
  it('is refused naming the field: the local stack runs its own payments connector against the simulator', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aip-local-config-'));
    try {
      const file = join(dir, 'aip.config.json');
      writeFileSync(
        file,
        JSON.stringify({
          envName: 'team',
          auth: { issuer: 'https://issuer.example.com/', audience: 'aip', jwksUrl: 'https://issuer.example.com/jwks.json' },
          connectors: [{ id: 'payments', module: './payments.ts' }],
        }),
      );
      const refused = await loadLocalDeploymentConnectors(file).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(InfraConfigError);
      expect((refused as InfraConfigError).issues).toEqual([{ path: 'connectors[0].id', message: expect.stringContaining('built-in connector') }]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
