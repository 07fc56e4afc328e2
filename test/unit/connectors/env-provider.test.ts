import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConnectorFailure,
  EnvCredentialProvider,
  credentialHandle,
  resolveCredential,
  withCredential,
  type CredentialProvider,
} from '../../../packages/connector-sdk/src/index.js';
import { attempt } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'aip-cred-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const handle = credentialHandle('payments/api_key');
const env = {
  PAY_KEY_TENANT_A: 'key-tenant-a',
  PAY_KEY_TENANT_A_ACCT_9: 'key-tenant-a-acct-9',
  PAY_KEY_TENANT_B: 'key-tenant-b',
  EMPTY: '',
};

function provider(): EnvCredentialProvider {
  return new EnvCredentialProvider({
    connector_id: 'payments',
    env,
    references: [
      { connector_id: 'payments', handle: 'payments/api_key', tenant_id: 'tenant-a', env: 'PAY_KEY_TENANT_A' },
      { connector_id: 'payments', handle: 'payments/api_key', tenant_id: 'tenant-a', external_account_id: 'acct-9', env: 'PAY_KEY_TENANT_A_ACCT_9' },
      { connector_id: 'payments', handle: 'payments/api_key', tenant_id: 'tenant-b', env: 'PAY_KEY_TENANT_B' },
      { connector_id: 'payments', handle: 'payments/empty', tenant_id: 'tenant-a', env: 'EMPTY' },
      { connector_id: 'other', handle: 'payments/api_key', tenant_id: 'tenant-c', env: 'PAY_KEY_TENANT_B' },
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

describe('EnvCredentialProvider', () => {
  it('resolves an environment variable for the verified tenant, preferring the account-specific reference', async () => {
    const p = provider();
    expect((await p.resolve(handle, { tenant_id: 'tenant-a' })).withUtf8((t) => t)).toBe('key-tenant-a');
    expect((await p.resolve(handle, { tenant_id: 'tenant-a', external_account_id: 'acct-1' })).withUtf8((t) => t)).toBe('key-tenant-a');
    expect((await p.resolve(handle, { tenant_id: 'tenant-a', external_account_id: 'acct-9' })).withUtf8((t) => t)).toBe('key-tenant-a-acct-9');
    expect((await p.resolve(handle, { tenant_id: 'tenant-b' })).withUtf8((t) => t)).toBe('key-tenant-b');
  });

  it('never selects another tenant or another connector: an unmapped scope is a typed failure', async () => {
    const f = await failureOf(provider().resolve(handle, { tenant_id: 'tenant-c' }));
    expect(f.toJSON()).toMatchObject({
      code: 'connector.credentials_unavailable',
      category: 'permanent',
      retryable: false,
      redacted_details: { reason: 'no_reference', credential_handle: 'payments/api_key' },
    });
  });

  it('treats an empty or missing variable as a typed failure, reported for the requesting operation', async () => {
    const empty = await failureOf(provider().resolve(credentialHandle('payments/empty'), { tenant_id: 'tenant-a', operation: 'transaction_commit' }));
    expect(empty.code).toBe('connector.credentials_unavailable');
    expect(empty.operation).toBe('transaction_commit');
    const missing = new EnvCredentialProvider({ connector_id: 'c', env: {}, references: [{ connector_id: 'c', handle: 'h', tenant_id: 't', env: 'NOPE' }] });
    expect((await failureOf(missing.resolve(credentialHandle('h'), { tenant_id: 't' }))).code).toBe('connector.credentials_unavailable');
  });

  it('reads a secret file (ignoring one trailing newline) and a JSON config file naming locations', async () => {
    const secretFile = join(dir, 'api_key');
    writeFileSync(secretFile, 'file-secret\n');
    const emptyFile = join(dir, 'empty');
    writeFileSync(emptyFile, '\n');
    const config = join(dir, 'credentials.json');
    writeFileSync(
      config,
      JSON.stringify({
        references: [
          { connector_id: 'payments', handle: 'payments/api_key', tenant_id: 'tenant-a', file: secretFile },
          { connector_id: 'payments', handle: 'payments/empty', tenant_id: 'tenant-a', file: emptyFile },
          { connector_id: 'payments', handle: 'payments/missing', tenant_id: 'tenant-a', file: join(dir, 'nope') },
        ],
      }),
    );
    const p = EnvCredentialProvider.fromConfigFile(config, { connector_id: 'payments' });
    expect((await p.resolve(handle, { tenant_id: 'tenant-a' })).withUtf8((t) => t)).toBe('file-secret');
    expect((await failureOf(p.resolve(credentialHandle('payments/empty'), { tenant_id: 'tenant-a' }))).redacted_details).toMatchObject({
      reason: 'empty_material',
    });
    expect((await failureOf(p.resolve(credentialHandle('payments/missing'), { tenant_id: 'tenant-a' }))).redacted_details).toMatchObject({
      reason: 'unreadable_file',
    });
  });

  it('rejects duplicate references at construction', () => {
    const row = { connector_id: 'c', handle: 'h', tenant_id: 't', env: 'X' };
    expect(() => new EnvCredentialProvider({ connector_id: 'c', references: [row, { ...row, env: 'Y' }] })).toThrow();
  });
});

describe('resolveCredential at the connector edge', () => {
  it('uses the context handle and the VERIFIED tenant and account, nothing else', async () => {
    const seen: unknown[] = [];
    const spy: CredentialProvider = {
      resolve: async (h, scope) => {
        seen.push({ handle: h.id, ...scope });
        return provider().resolve(h, scope);
      },
    };
    const a = attempt({ tenant: { tenant_id: 'tenant-a', external_account_id: 'acct-9' } });
    const text = await withCredential(spy, a.context, (s) => s.withUtf8((t) => t), 'invocation');
    expect(text).toBe('key-tenant-a-acct-9');
    expect(seen).toEqual([{ handle: 'payments/api_key', tenant_id: 'tenant-a', external_account_id: 'acct-9', operation: 'invocation' }]);
  });

  it('disposes the secret after the scoped use', async () => {
    let kept: { disposed: boolean } | undefined;
    await withCredential(provider(), attempt().context, (s) => {
      kept = s;
    });
    expect(kept?.disposed).toBe(true);
  });

  it('fails with a typed failure when the context has no handle or no verified tenant (no fallback)', async () => {
    const noHandle = await failureOf(resolveCredential(provider(), attempt({ credential: undefined }).context));
    expect(noHandle.toJSON()).toMatchObject({ code: 'connector.credentials_unavailable', redacted_details: { reason: 'no_credential_handle' } });
    const noTenant = await failureOf(resolveCredential(provider(), attempt({ tenant: undefined }).context));
    expect(noTenant.redacted_details).toMatchObject({ reason: 'no_verified_tenant' });
  });

  it('turns an untyped provider error into a temporary resolution failure that does not echo it', async () => {
    const broken: CredentialProvider = { resolve: async () => Promise.reject(new Error('token sk_live_leak')) };
    const f = await failureOf(resolveCredential(broken, attempt().context));
    expect(f.toJSON()).toMatchObject({ code: 'connector.credentials_resolution_failed', category: 'temporary', retryable: true });
    expect(JSON.stringify(f)).not.toContain('sk_live');
  });
});
