/**
 * `resolveAccount` and `checkIdentityFields`: an action's
 * `identity.external_account_id` must be one of the accounts the caller's
 * verified token holds; the runtime's service caller for a reconcile holds
 * exactly the original action's account.
 */
import { describe, expect, it } from 'vitest';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { checkIdentityFields, resolveAccount, serviceCaller } from '../../../lib/runtime/identity.js';

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

describe('checkIdentityFields', () => {
  it('identity.user_id naming the verified caller (whatever kind its token claims) is allowed; no user_id is allowed', () => {
    expect(() => checkIdentityFields(caller(), { identity: { tenant_id: 'demo', user_id: 'alice' } })).not.toThrow();
    expect(() => checkIdentityFields({ ...caller(), principal: { id: 'alice', kind: 'agent' } }, { identity: { user_id: 'alice' } })).not.toThrow();
    expect(() => checkIdentityFields(caller(), {})).not.toThrow();
    expect(() =>
      checkIdentityFields(caller(), { identity: { tenant_id: 'demo', organization_id: 'org-1', workspace_id: 'ws-1', session_id: 's-1' } }),
    ).not.toThrow();
  });

  it('identity.user_id naming another user is runtime.identity_mismatch (403), naming the field, not the user', () => {
    const err = refusal(() => checkIdentityFields(caller(), { identity: { tenant_id: 'demo', user_id: 'mallory' } }));
    expect(err.code).toBe('runtime.identity_mismatch');
    expect(err.httpStatus).toBe(403);
    expect(err.details).toEqual({ path: '/identity/user_id' });
    expect(`${err.message} ${JSON.stringify(err.details)}`).not.toContain('mallory');
  });

  it("the runtime's service caller of a reconcile carries the original action's identity", () => {
    const svc = serviceCaller({ id: 'aip-runtime', kind: 'service' }, 'demo', ['s']);
    expect(() => checkIdentityFields(svc, { identity: { tenant_id: 'demo', user_id: 'alice' } })).not.toThrow();
    // A token naming the service principal is an ordinary caller.
    const forged: CallerIdentity = { principal: { id: 'aip-runtime', kind: 'service' }, tenants: ['demo'], scopes: [] };
    expect(refusal(() => checkIdentityFields(forged, { identity: { user_id: 'alice' } })).code).toBe('runtime.identity_mismatch');
  });
});
