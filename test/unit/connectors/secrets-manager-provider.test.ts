import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { SecretsManagerCredentialProvider } from '../../../lib/aws/secrets/secrets-manager-provider.js';
import { ConnectorFailure, credentialHandle } from '../../../packages/connector-sdk/src/index.js';

const sm = mockClient(SecretsManagerClient);
// The unit files share a module graph (vitest.config.ts): the client's own send comes back after this file.
afterAll(() => sm.restore());
const client = new SecretsManagerClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
const handle = credentialHandle('payments/api_key');

function provider(): SecretsManagerCredentialProvider {
  return new SecretsManagerCredentialProvider({
    client,
    connector_id: 'payments',
    references: [
      { connector_id: 'payments', handle: 'payments/api_key', tenant_id: 'tenant-a', secret_id: 'aip/payments/tenant-a' },
      {
        connector_id: 'payments',
        handle: 'payments/api_key',
        tenant_id: 'tenant-a',
        external_account_id: 'acct-9',
        secret_id: 'aip/payments/tenant-a/acct-9',
        version_stage: 'AWSPENDING',
      },
      { connector_id: 'payments', handle: 'payments/json', tenant_id: 'tenant-a', secret_id: 'aip/payments/json', json_field: 'api_key' },
      { connector_id: 'other', handle: 'payments/api_key', tenant_id: 'tenant-b', secret_id: 'aip/other/tenant-b' },
    ],
  });
}

async function failureOf(p: Promise<unknown>): Promise<ConnectorFailure> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectorFailure);
    return err as ConnectorFailure;
  }
  throw new Error('expected a ConnectorFailure');
}

function awsError(name: string, status: number): Error {
  return Object.assign(new Error(`${name}: details with arn:aws:secretsmanager:...`), { name, $metadata: { httpStatusCode: status, requestId: 'aws-req-1' } });
}

beforeEach(() => sm.reset());

describe('SecretsManagerCredentialProvider', () => {
  it('sends GetSecretValue with the secret ID from the reference map for the verified tenant', async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'tenant-a-key' });
    const s = await provider().resolve(handle, { tenant_id: 'tenant-a' });
    expect(s.withUtf8((t) => t)).toBe('tenant-a-key');
    const calls = sm.commandCalls(GetSecretValueCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.args[0].input).toEqual({ SecretId: 'aip/payments/tenant-a' });
  });

  it('prefers the account-specific reference and passes its VersionStage', async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'acct-key' });
    await provider().resolve(handle, { tenant_id: 'tenant-a', external_account_id: 'acct-9' });
    expect(sm.commandCalls(GetSecretValueCommand)[0]?.args[0].input).toEqual({ SecretId: 'aip/payments/tenant-a/acct-9', VersionStage: 'AWSPENDING' });
  });

  it('never calls AWS for a scope without a reference (no other tenant, no other connector)', async () => {
    const f = await failureOf(provider().resolve(handle, { tenant_id: 'tenant-b' }));
    expect(f.code).toBe('connector.credentials_unavailable');
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(0);
  });

  it('adopts SecretBinary bytes and extracts a JSON field from SecretString', async () => {
    sm.on(GetSecretValueCommand, { SecretId: 'aip/payments/tenant-a' }).resolves({ SecretBinary: new TextEncoder().encode('binary-key') });
    sm.on(GetSecretValueCommand, { SecretId: 'aip/payments/json' }).resolves({ SecretString: JSON.stringify({ api_key: 'json-key', other: 'x' }) });
    expect((await provider().resolve(handle, { tenant_id: 'tenant-a' })).withUtf8((t) => t)).toBe('binary-key');
    expect((await provider().resolve(credentialHandle('payments/json'), { tenant_id: 'tenant-a' })).withUtf8((t) => t)).toBe('json-key');
  });

  it('treats empty material as a typed failure', async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: '' });
    expect((await failureOf(provider().resolve(handle, { tenant_id: 'tenant-a' }))).redacted_details).toMatchObject({ reason: 'empty_material' });
    sm.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ other: 'x' }) });
    expect((await failureOf(provider().resolve(credentialHandle('payments/json'), { tenant_id: 'tenant-a' }))).code).toBe('connector.credentials_unavailable');
  });

  it('maps a missing or forbidden secret to the permanent failure and throttling to the temporary one', async () => {
    sm.on(GetSecretValueCommand).rejects(awsError('ResourceNotFoundException', 400));
    const missing = await failureOf(provider().resolve(handle, { tenant_id: 'tenant-a', operation: 'transaction_commit' }));
    expect(missing.toJSON()).toMatchObject({
      code: 'connector.credentials_unavailable',
      category: 'permanent',
      retryable: false,
      operation: 'transaction_commit',
      source: 'credentials:aws-secrets-manager',
    });
    sm.on(GetSecretValueCommand).rejects(awsError('ThrottlingException', 400));
    const throttled = await failureOf(provider().resolve(handle, { tenant_id: 'tenant-a' }));
    expect(throttled.toJSON()).toMatchObject({
      code: 'connector.credentials_resolution_failed',
      category: 'temporary',
      retryable: true,
      remote_status: 400,
      provider_request_id: 'aws-req-1',
    });
    expect(JSON.stringify(throttled)).not.toContain('arn:aws');
  });
});
