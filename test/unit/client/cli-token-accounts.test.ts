/**
 * `aip token --account`: development tokens name the
 * external accounts they hold in the generic preset's `aip:accounts` claim;
 * without `--account` the token holds none (no claim at all).
 */
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { main } from '../../../dev/cli/main.js';
import { createTokenVerifier } from '../../../lib/auth/verifier.js';
import { devVerifierConfig, loadDevKeys } from '../../../dev/auth/keys.js';

async function token(argv: string[]): Promise<string> {
  let stdout = '';
  const code = await main(['token', '--sub', 'alice', '--tenant', 'demo', ...argv], { stdout: (t) => (stdout += t), stderr: () => undefined, env: {} });
  expect(code).toBe(0);
  return stdout.trim();
}

describe('aip token --account', () => {
  it('repeatable and comma-separated accounts land in aip:accounts, and the dev verifier maps them', async () => {
    const t = await token(['--account', 'acct_1', '--account', 'acct_2,acct_3']);
    expect(decodeJwt(t)['aip:accounts']).toEqual(['acct_1', 'acct_2', 'acct_3']);
    const identity = await createTokenVerifier(devVerifierConfig(await loadDevKeys())).verify(t);
    expect(identity.accounts).toEqual(['acct_1', 'acct_2', 'acct_3']);
  });

  it('without --account the token has no accounts claim', async () => {
    const t = await token([]);
    expect(decodeJwt(t)).not.toHaveProperty('aip:accounts');
    expect((await createTokenVerifier(devVerifierConfig(await loadDevKeys())).verify(t)).accounts).toBeUndefined();
  });
});
