/**
 * The cursor key in the composition root: AIP_CURSOR_KEY_SECRET_ARN (deployed
 * functions, read through Secrets Manager once, on first use), AIP_CURSOR_KEY
 * (local and test only), or a random key (local and test only).
 * Secrets Manager has no emulator here, so its client is mocked for request
 * shapes (CONTRIBUTING.md).
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { FUNCTION_ENV } from '../../../lib/config/function-env.js';
import { BootstrapConfigError, OPTIONAL_ENV, readBootstrapSettings, settingsToEnv, type BootstrapSettings } from '../../../functions/shared/settings.js';
import { cursorSealerFor } from '../../../functions/shared/compose-runtime.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { CursorBinding } from '../../../lib/runtime/cursor.js';
import { functionEnv } from '../../support/function-env.js';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:CursorKey1A2B3C4D-AbCdEf';
const MATERIAL = 'Gk3v9QzR2mXw7LpT4sYb8NcJ6hFd1aEuVo5iKqWr0tZyMnBx'; // what a generated password looks like
const binding: CursorBinding = { listing: 'operator', tenants: ['demo'], principal: { id: 'ops-1', kind: 'user' }, query: { view: 'outcome_unknown' } };

const runtimeConfig = (envName: string) => ({
  envName,
  auth: { issuer: 'https://issuer.example.com/', audience: 'aip', jwksUrl: 'https://issuer.example.com/.well-known/jwks.json', algorithms: ['RS256'] },
  connectors: [],
  approvalPolicies: [],
});

const env = (envName: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv => functionEnv(runtimeConfig(envName), extra);

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(BootstrapConfigError);
    return (err as BootstrapConfigError).issues.map((i) => `${i.variable}: ${i.message}`);
  }
  throw new Error('expected a BootstrapConfigError');
}

const sm = mockClient(SecretsManagerClient);
// The unit files share a module graph (vitest.config.ts): the client's own send comes back after this file.
afterAll(() => sm.restore());
const client = new SecretsManagerClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
beforeEach(() => sm.reset());

describe('reading the environment', () => {
  it('takes the secret ARN, or the inline material in local and test environments, and round-trips through settingsToEnv', () => {
    const deployed = readBootstrapSettings(env('prod', { [FUNCTION_ENV.cursorKeySecretArn]: ARN }));
    expect(deployed.cursorKey).toEqual({ source: 'secrets-manager', secretArn: ARN });
    expect(readBootstrapSettings(settingsToEnv(deployed)).cursorKey).toEqual(deployed.cursorKey);
    const local = readBootstrapSettings(env('local', { [OPTIONAL_ENV.cursorKey]: MATERIAL }));
    expect(local.cursorKey).toEqual({ source: 'inline', material: MATERIAL });
    expect(readBootstrapSettings(settingsToEnv(local)).cursorKey).toEqual(local.cursorKey);
    expect(readBootstrapSettings(env('test')).cursorKey).toEqual({ source: 'none' });
  });

  it('refuses inline material outside local and test, both variables at once, and a malformed ARN, without echoing values', () => {
    const prod = issuesOf(() => readBootstrapSettings(env('prod', { [OPTIONAL_ENV.cursorKey]: MATERIAL })));
    expect(prod).toEqual([
      `${OPTIONAL_ENV.cursorKey}: is for the local and test environments only; deployed functions read the key from ${FUNCTION_ENV.cursorKeySecretArn}`,
    ]);
    expect(issuesOf(() => readBootstrapSettings(env('local', { [OPTIONAL_ENV.cursorKey]: MATERIAL, [FUNCTION_ENV.cursorKeySecretArn]: ARN })))).toEqual([
      `${OPTIONAL_ENV.cursorKey}: set either it or ${FUNCTION_ENV.cursorKeySecretArn}, not both`,
    ]);
    const bad = issuesOf(() => readBootstrapSettings(env('prod', { [FUNCTION_ENV.cursorKeySecretArn]: 'aip/cursor-key' })));
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatch(/^AIP_CURSOR_KEY_SECRET_ARN: must be a Secrets Manager secret ARN/);
    for (const issue of [...prod, ...bad]) expect(issue).not.toContain(MATERIAL);
  });
});

describe('the composition’s sealer', () => {
  const settings = (envName: string, extra: Record<string, string> = {}): BootstrapSettings => readBootstrapSettings(env(envName, extra));

  it('deployed: reads the secret by its ARN once, on the first cursor, and two containers open each other’s cursors', async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: MATERIAL });
    const s = settings('prod', { [FUNCTION_ENV.cursorKeySecretArn]: ARN });
    const one = cursorSealerFor(s, () => client);
    const two = cursorSealerFor(s, () => client);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(0);
    const raw = Buffer.from('{"PK":"TXN#demo#x"}').toString('base64url');
    const sealed = await one.seal(raw, binding);
    await one.seal(raw, binding);
    expect(await two.open(sealed, binding)).toBe(raw);
    const calls = sm.commandCalls(GetSecretValueCommand);
    expect(calls).toHaveLength(2); // one per container
    for (const call of calls) expect(call.args[0].input).toEqual({ SecretId: ARN });
  });

  it('deployed: a secret without a string value, or too short, fails the listing, not as a bad cursor; the next call fetches again', async () => {
    sm.on(GetSecretValueCommand)
      .resolvesOnce({ SecretBinary: new Uint8Array([1]) })
      .resolvesOnce({ SecretString: 'short' })
      .resolves({ SecretString: MATERIAL });
    const sealer = cursorSealerFor(settings('prod', { [FUNCTION_ENV.cursorKeySecretArn]: ARN }), () => client);
    const first = await sealer.seal('x', binding).catch((err: unknown) => err);
    expect(isAipError(first)).toBe(false);
    expect(String(first)).toContain('no string value');
    const second = await sealer.seal('x', binding).catch((err: unknown) => err);
    expect(String(second)).toContain('at least 32 characters');
    expect(String(second)).not.toContain('short"');
    expect(await sealer.open(await sealer.seal('x', binding), binding)).toBe('x');
  });

  it('is required outside local and test; local and test get the inline key or a random one', async () => {
    expect(issuesOf(() => cursorSealerFor(settings('prod'), () => client))).toEqual([
      `${FUNCTION_ENV.cursorKeySecretArn}: is required outside the local and test environments (the key that seals pagination cursors)`,
    ]);
    expect(issuesOf(() => cursorSealerFor(settings('local', { [OPTIONAL_ENV.cursorKey]: 'too-short' }), () => client))).toEqual([
      `${OPTIONAL_ENV.cursorKey}: every key needs at least 32 characters`,
    ]);

    const a = cursorSealerFor(settings('local', { [OPTIONAL_ENV.cursorKey]: MATERIAL }), () => client);
    const b = cursorSealerFor(settings('local', { [OPTIONAL_ENV.cursorKey]: MATERIAL }), () => client);
    expect(await b.open(await a.seal('x', binding), binding)).toBe('x');
    const random = cursorSealerFor(settings('test'), () => client);
    await expect(random.open(await a.seal('x', binding), binding)).rejects.toMatchObject({ code: 'runtime.cursor_invalid' });
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(0);
  });
});
