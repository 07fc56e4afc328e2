/**
 * The authority rule (lib/runtime/authority.ts): the table's promises as
 * properties over generated callers and targets, and the generated doc.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AUTHORITY_DOC_PATH, withTable } from '../../../dev/scripts/gen-authority-docs.js';
import type { CallerIdentity } from '../../../lib/auth/identity.js';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  AUTHORITY_OPERATIONS,
  AUTHORITY_TABLE,
  Authority,
  authorityPolicy,
  isServiceCaller,
  missingTarget,
  serviceCaller,
  type AuthorityTarget,
  type TargetKind,
} from '../../../lib/runtime/authority.js';

const SERVICE = { id: 'aip-runtime', kind: 'service' as const };
const authority = new Authority(
  authorityPolicy({ operator_scope: 'aip:operator', service_principal: SERVICE, tenants: { t2: { compensator_scopes: ['pay:refund-any'] } } }),
);

const principal = fc.record({
  id: fc.constantFrom('alice', 'bob', 'aip-runtime', 'ops'),
  kind: fc.constantFrom('user' as const, 'service' as const, 'agent' as const),
});
const scopes = fc.subarray(['aip:operator', 'aip:approve', 'pay:approve', 'aip:actions:read', 'pay:refund-any']);
const caller = fc.record({ principal, tenants: fc.subarray(['t1', 't2']), scopes }) as fc.Arbitrary<CallerIdentity>;
const kind = fc.constantFrom<TargetKind>('action', 'transaction', 'plan', 'approval', 'compensation_target');
const target = fc.record({
  kind,
  tenant_id: fc.constantFrom('t1', 't2'),
  id: fc.constantFrom('x-1', 'x-2'),
  owner: principal,
  approver_scopes: fc.subarray(['aip:approve', 'pay:approve']),
  allow_self_approval: fc.boolean(),
  requested_by: principal,
  details: fc.constant({ fields: ['input'], status: 'committed', planned_by: 'alice' }),
}) as fc.Arbitrary<AuthorityTarget>;
const operation = fc.constantFrom(...AUTHORITY_OPERATIONS);

function refusalOf(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    if (isAipError(err)) return err;
    throw err;
  }
  return undefined;
}

describe('the authority rule', () => {
  it('a caller outside the target tenant is never allowed anything', () => {
    fc.assert(
      fc.property(caller, target, operation, (c, t, op) => {
        fc.pre(!c.tenants.includes(t.tenant_id));
        expect(authority.allows(c, op, t)).toBeUndefined();
      }),
    );
  });

  it('a target that does not exist is refused with its kind’s answer for every caller and operation', () => {
    fc.assert(
      fc.property(caller, kind, operation, (c, k, op) => {
        const err = refusalOf(() => authority.require(c, op, missingTarget(k, 't1', 'x-1')));
        expect(err).toBeDefined();
        const row = AUTHORITY_TABLE[op];
        if (row.hidden === 'by_kind') expect(err?.httpStatus).toBe(404);
        expect(Object.keys(err?.details ?? {}).length).toBeLessThanOrEqual(1);
      }),
    );
  });

  it('a refusal to a caller who may not read the target names nothing but the ID given', () => {
    fc.assert(
      fc.property(caller, target, operation, (c, t, op) => {
        fc.pre(!authority.mayRead(c, t) && authority.allows(c, op, t) === undefined);
        const err = refusalOf(() => authority.require(c, op, t));
        expect(err).toBeDefined();
        const text = JSON.stringify({ message: err?.message, details: err?.details });
        for (const leak of ['committed', 'planned_by', 'fields', t.owner?.id === 'x-1' ? '' : `"${t.owner?.id}"`])
          if (leak !== '') expect(text).not.toContain(leak);
      }),
    );
  });

  it('allowed means the table lists one of the caller’s roles', () => {
    fc.assert(
      fc.property(caller, target, operation, (c, t, op) => {
        const role = authority.allows(c, op, t);
        if (role !== undefined) {
          expect(AUTHORITY_TABLE[op].allowed).toContain(role);
          expect(authority.roles(c, t).has(role)).toBe(true);
        }
      }),
    );
  });

  it('only an identity the runtime built is the service principal; a token naming the same subject is not', () => {
    const forged: CallerIdentity = { principal: { ...SERVICE }, tenants: ['t1'], scopes: [] };
    const real = serviceCaller(SERVICE, 't1', []);
    const t: AuthorityTarget = { kind: 'transaction', tenant_id: 't1', id: 'x', owner: { id: 'alice', kind: 'user' } };
    expect(isServiceCaller(forged)).toBe(false);
    expect(authority.allows(forged, 'reconcile', t)).toBeUndefined();
    expect(authority.allows(real, 'reconcile', t)).toBe('service');
    // A copy of the runtime's identity (e.g. decoded from JSON) is not it either.
    expect(authority.allows(JSON.parse(JSON.stringify(real)) as CallerIdentity, 'reconcile', t)).toBeUndefined();
  });

  it('the requester holding an approver scope is refused self-approval unless the policy allows it', () => {
    const alice: CallerIdentity = { principal: { id: 'alice', kind: 'user' }, tenants: ['t1'], scopes: ['aip:approve'] };
    const t: AuthorityTarget = {
      kind: 'approval',
      tenant_id: 't1',
      id: 'apr-1',
      approver_scopes: ['aip:approve', 'other'],
      allow_self_approval: false,
      requested_by: alice.principal,
    };
    expect(refusalOf(() => authority.require(alice, 'approve', t))?.code).toBe('runtime.self_approval_forbidden');
    expect(authority.allows(alice, 'approve', { ...t, allow_self_approval: true })).toBe('approver');
    // Any one of the approver scopes suffices.
    const bob: CallerIdentity = { principal: { id: 'bob', kind: 'user' }, tenants: ['t1'], scopes: ['other'] };
    expect(authority.allows(bob, 'approve', t)).toBe('approver');
  });

  it('one identity per principal: a token of the same subject claiming another kind is the same owner and the same requester', () => {
    const t: AuthorityTarget = { kind: 'transaction', tenant_id: 't1', id: 'x', owner: { id: 'alice', kind: 'user' } };
    const aliceAsAgent: CallerIdentity = { principal: { id: 'alice', kind: 'agent' }, tenants: ['t1'], scopes: ['aip:approve'] };
    expect(authority.allows(aliceAsAgent, 'read', t)).toBe('owner');
    const approval: AuthorityTarget = {
      kind: 'approval',
      tenant_id: 't1',
      id: 'apr-1',
      approver_scopes: ['aip:approve'],
      allow_self_approval: false,
      requested_by: { id: 'alice', kind: 'user' },
    };
    expect(refusalOf(() => authority.require(aliceAsAgent, 'approve', approval))?.code).toBe('runtime.self_approval_forbidden');
    expect(authority.roles(aliceAsAgent, approval).has('requester')).toBe(true);
  });

  it('compensating another principal’s action needs the tenant’s compensator scope (default: the operator scope)', () => {
    const t1: AuthorityTarget = { kind: 'compensation_target', tenant_id: 't1', id: 'a-1', owner: { id: 'alice', kind: 'user' } };
    const ops: CallerIdentity = { principal: { id: 'ops', kind: 'user' }, tenants: ['t1', 't2'], scopes: ['aip:operator'] };
    expect(authority.allows(ops, 'compensate', t1)).toBe('compensator');
    expect(authority.allows(ops, 'compensate', { ...t1, tenant_id: 't2' })).toBeUndefined();
    expect(refusalOf(() => authority.require(ops, 'compensate', { ...t1, tenant_id: 't2' }))?.code).toBe('runtime.compensation_forbidden');
  });

  it('docs/authority.md holds the table rendered from the rule', () => {
    const doc = readFileSync(AUTHORITY_DOC_PATH, 'utf8');
    expect(withTable(doc)).toBe(doc);
  });
});
