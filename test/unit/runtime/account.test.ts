/**
 * `resolveAccount`: an action's
 * `identity.external_account_id` must be one of the accounts the caller's
 * verified token holds; the runtime's service caller for a reconcile holds
 * exactly the original action's account.
 */
import { describe, expect, it } from 'vitest';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { AipError } from '../../../lib/errors/aip-error.js';
import { resolveAccount, serviceCaller } from '../../../lib/runtime/identity.js';

const caller = (accounts?: string[]): CallerIdentity => ({
  principal: { id: 'alice', kind: 'user' },
  tenants: ['demo'],
  scopes: [],
  ...(accounts !== undefined ? { accounts } : {}),
});

function refusal(fn: () => unknown): AipError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AipError) return e;
    throw e;
  }
  throw new Error('not refused');
}

describe('resolveAccount', () => {
  it('a held account is allowed and returned', () => {
    expect(resolveAccount(caller(['acct_a', 'acct_other']), { identity: { tenant_id: 'demo', external_account_id: 'acct_other' } })).toBe('acct_other');
  });

  it('an action naming no account is allowed whatever the token holds', () => {
    expect(resolveAccount(caller(), {})).toBeUndefined();
    expect(resolveAccount(caller(), { identity: { tenant_id: 'demo' } })).toBeUndefined();
    expect(resolveAccount(caller(['acct_a']), { identity: { tenant_id: 'demo' } })).toBeUndefined();
  });

  it('an account the token does not hold is runtime.account_forbidden (403), naming the field, not the account', () => {
    for (const c of [caller(), caller([]), caller(['acct_a']), caller(['ACCT_OTHER', 'acct_other_'])]) {
      const err = refusal(() => resolveAccount(c, { identity: { tenant_id: 'demo', external_account_id: 'acct_other' } }));
      expect(err.code).toBe('runtime.account_forbidden');
      expect(err.httpStatus).toBe(403);
      expect(err.details).toEqual({ path: '/identity/external_account_id' });
      expect(`${err.message} ${JSON.stringify(err.details)}`).not.toContain('acct_other');
    }
  });

  it('the service caller of a reconcile holds exactly the account it is given', () => {
    const svc = serviceCaller({ id: 'aip-runtime', kind: 'service' }, 'demo', ['s'], { accounts: ['acct_other'] });
    expect(resolveAccount(svc, { identity: { tenant_id: 'demo', external_account_id: 'acct_other' } })).toBe('acct_other');
    expect(refusal(() => resolveAccount(svc, { identity: { tenant_id: 'demo', external_account_id: 'acct_a' } })).code).toBe('runtime.account_forbidden');
    const none = serviceCaller({ id: 'aip-runtime', kind: 'service' }, 'demo', ['s'], { accounts: [] });
    expect(refusal(() => resolveAccount(none, { identity: { tenant_id: 'demo', external_account_id: 'acct_a' } })).code).toBe('runtime.account_forbidden');
  });
});
