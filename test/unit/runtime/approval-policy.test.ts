/**
 * Approval policy selection (lib/runtime/pipeline/approval-policy.ts) and the
 * translation of the deployment's approval policies into runtime-wide ones
 * (functions/shared/compose-runtime.ts `runtimeConfigFor`), so that a policy
 * without a tenant selector applies to every tenant, named in the configuration or not.
 */
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OPTIONAL_ENV, readBootstrapSettings } from '../../../functions/shared/settings.js';
import { runtimeConfigFor } from '../../../functions/shared/compose-runtime.js';
import { implementationSupport, type ConnectorManifest } from '../../../packages/connector-sdk/src/index.js';
import type { Capability } from '../../../packages/connector-sdk/src/protocol/index.js';
import { parseRuntimeSettingsInput, type RuntimeSettingsInput } from '../../../lib/runtime/config.js';
import {
  policySnapshot,
  selectApprovalPolicy,
  selectApprovalPolicyTerms,
  snapshotOf,
  tenantApprovalPolicies,
} from '../../../lib/runtime/pipeline/approval-policy.js';
import { CapabilityRegistry } from '../../../lib/runtime/registry.js';
import { functionEnv } from '../../support/function-env.js';

const cap = (id: string, extra: Partial<Capability> = {}): Capability => ({ id, kind: 'tool', input_schema: { type: 'object' }, ...extra });
const CHARGE = cap('payments.charge');
const REFUND = cap('payments.refund');
const GUARDED = cap('payments.guarded', { approval: { required: true, policy_id: 'cap-own', approver_scopes: ['treasury:approve'] } });

const config = (input: RuntimeSettingsInput) => parseRuntimeSettingsInput({ ...input, test_mode: true }, 'test');

describe('selectApprovalPolicy', () => {
  const c = config({
    approvals: { ttl_ms: 86_400_000 },
    tenants: {
      acme: { approvals: [{ policy_id: 'acme-own', capabilities: ['payments.charge'], modes: ['execute'], approver_scopes: ['acme:approve'] }] },
      quiet: { compensator_scopes: ['ops:comp'] },
    },
    approval_policies: [
      { policy_id: 'only-beta', tenants: ['beta'], capabilities: ['payments.charge'], modes: ['execute'], approver_scopes: ['beta:approve'], min_approvals: 3 },
      {
        policy_id: 'everyone',
        capabilities: ['payments.charge', 'payments.guarded'],
        modes: ['execute'],
        approver_scopes: ['a:approve', 'b:approve'],
        min_approvals: 2,
        ttl_ms: 3_600_000,
      },
    ],
  });

  it('the runtime-wide policy defaults to every tenant (selector ["*"])', () => {
    expect(c.approval_policies[1]?.tenants).toEqual(['*']);
  });

  it('a tenant named nowhere in the configuration gets the runtime-wide default, with its terms', () => {
    expect(selectApprovalPolicyTerms(c, 'never-configured', CHARGE, 'execute')).toEqual({
      ref: { policy_id: 'everyone', source: 'tenant_default', approver_scopes: ['a:approve', 'b:approve'], allow_self_approval: false },
      min_approvals: 2,
      ttl_ms: 3_600_000,
    });
    // A tenant with settings but no approval policies of its own: the same.
    expect(selectApprovalPolicy(c, 'quiet', CHARGE, 'execute')?.policy_id).toBe('everyone');
  });

  it('a tenant selector applies the policy only to the tenants it names, ahead of later policies', () => {
    expect(selectApprovalPolicyTerms(c, 'beta', CHARGE, 'execute')).toMatchObject({ ref: { policy_id: 'only-beta' }, min_approvals: 3 });
    expect(selectApprovalPolicyTerms(c, 'beta', CHARGE, 'execute')?.ttl_ms).toBeUndefined();
    expect(selectApprovalPolicy(c, 'gamma', CHARGE, 'execute')?.policy_id).toBe('everyone');
  });

  it("precedence: the capability's own policy, then the tenant's own, then runtime-wide", () => {
    expect(selectApprovalPolicyTerms(c, 'acme', GUARDED, 'execute')).toEqual({
      ref: { policy_id: 'cap-own', source: 'capability', approver_scopes: ['treasury:approve'], allow_self_approval: false },
      min_approvals: 1,
    });
    expect(selectApprovalPolicy(c, 'acme', CHARGE, 'execute')?.policy_id).toBe('acme-own');
    expect(tenantApprovalPolicies(c, 'acme').map((p) => p.policy_id)).toEqual(['acme-own', 'everyone']);
    expect(tenantApprovalPolicies(c, 'beta').map((p) => p.policy_id)).toEqual(['only-beta', 'everyone']);
  });

  it('modes and capabilities still select: another mode or capability needs no approval', () => {
    expect(selectApprovalPolicy(c, 'never-configured', CHARGE, 'commit')).toBeUndefined();
    expect(selectApprovalPolicy(c, 'never-configured', REFUND, 'execute')).toBeUndefined();
  });

  it('the reference a preview records stays an ApprovalPolicyRef (no terms in it)', () => {
    expect(Object.keys(selectApprovalPolicy(c, 'never-configured', CHARGE, 'execute') ?? {}).sort()).toEqual([
      'allow_self_approval',
      'approver_scopes',
      'policy_id',
      'source',
    ]);
  });

  it('is total over tenants: every tenant not named by a selector gets the default', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), (tenant) => {
        fc.pre(tenant !== 'acme' && tenant !== 'beta');
        expect(selectApprovalPolicy(c, tenant, CHARGE, 'execute')?.policy_id).toBe('everyone');
      }),
    );
  });
});

describe('policySnapshot', () => {
  const c = config({
    approval_policies: [{ policy_id: 'p', capabilities: ['*'], modes: ['execute'], approver_scopes: ['s'], min_approvals: 2, ttl_ms: 60_000 }],
  });

  it('carries min_approvals and the policy lifetime, both covered by the policy hash', () => {
    const snap = policySnapshot(c, 't', CHARGE, 'execute');
    expect(snap).toMatchObject({ policy_id: 'p', approver_scopes: ['s'], allow_self_approval: false, min_approvals: 2, ttl_ms: 60_000 });
    const selected = selectApprovalPolicyTerms(c, 't', CHARGE, 'execute')!;
    expect(snapshotOf({ ...selected, min_approvals: 1 }, c).policy_hash).not.toBe(snap?.policy_hash);
    expect(snapshotOf({ ...selected, ttl_ms: 120_000 }, c).policy_hash).not.toBe(snap?.policy_hash);
    expect(snapshotOf(selected, c).policy_hash).toBe(snap?.policy_hash);
    expect(policySnapshot(c, 't', CHARGE, 'commit')).toBeUndefined();
  });

  it('defaults to one approval and no lifetime of its own', () => {
    const snap = policySnapshot(config({ tenants: { t: { approvals: [{ policy_id: 'q', capabilities: ['*'] }] } } }), 't', CHARGE, 'execute');
    expect(snap?.min_approvals).toBe(1);
    expect(snap?.ttl_ms).toBeUndefined();
  });
});

describe('runtime configuration schema', () => {
  it('refuses a bad selector, min_approvals or ttl_ms', () => {
    const bad: unknown[] = [
      { policy_id: 'p', capabilities: ['*'], tenants: [] },
      { policy_id: 'p', capabilities: ['*'], tenants: ['has space'] },
      { policy_id: 'p', capabilities: ['*'], min_approvals: 0 },
      { policy_id: 'p', capabilities: ['*'], min_approvals: 11 },
      { policy_id: 'p', capabilities: ['*'], ttl_ms: 10 },
      { policy_id: 'p', capabilities: ['*'], unknown: true },
    ];
    for (const policy of bad) expect(() => config({ approval_policies: [policy] } as RuntimeSettingsInput), JSON.stringify(policy)).toThrow(/config/);
  });
});

describe('runtimeConfigFor: the deployment policies become runtime-wide policies', () => {
  const manifest: ConnectorManifest = {
    connector_id: 'payments',
    version: '1.0.0',
    capabilities: [CHARGE, REFUND],
    implementation_support: { 'payments.charge': implementationSupport({ invocation: true }), 'payments.refund': implementationSupport({ invocation: true }) },
  };
  const registry = CapabilityRegistry.fromManifests([manifest]);
  const settingsWith = (approvalPolicies: unknown[], runtimeSettings: Record<string, unknown> = {}) =>
    readBootstrapSettings(
      functionEnv(
        {
          envName: 'local',
          auth: { issuer: 'https://aip.local/dev', audience: 'aip-local', jwksUrl: 'https://aip.local/dev/.well-known/jwks.json', algorithms: ['ES256'] },
          connectors: [{ id: 'payments', credentials: [{ handle: 'api_key', tenantId: 'demo', secret: 'aip/local/payments' }] }],
          approvalPolicies,
        },
        { [OPTIONAL_ENV.runtimeSettings]: JSON.stringify(runtimeSettings) },
      ),
    );

  it('with their selector, approvers needed and lifetime; no copy per configured tenant', () => {
    const out = runtimeConfigFor(
      settingsWith([
        {
          id: 'all',
          connector: 'payments',
          capabilities: ['payments.charge'],
          modes: ['execute'],
          approverScopes: ['a', 'b'],
          minApprovals: 2,
          expiresAfterSeconds: 3600,
        },
        { id: 'acme-only', connector: 'payments', tenants: ['acme'], approverScopes: ['c'] },
      ]),
      registry,
    );
    expect(out.approval_policies).toEqual([
      {
        policy_id: 'all',
        tenants: ['*'],
        capabilities: ['payments.charge'],
        modes: ['execute'],
        approver_scopes: ['a', 'b'],
        allow_self_approval: false,
        min_approvals: 2,
        ttl_ms: 3_600_000,
      },
      {
        policy_id: 'acme-only',
        tenants: ['acme'],
        capabilities: ['payments.charge', 'payments.refund'],
        approver_scopes: ['c'],
        allow_self_approval: false,
        min_approvals: 1,
        ttl_ms: 86_400_000,
      },
    ]);
    // The configured tenant (a credential row) keeps an entry (the sweeper visits it) but holds no copied policies.
    expect(out.tenants.demo).toEqual({});
    // Any tenant, configured or not, is gated by the policy without a selector.
    expect(selectApprovalPolicy(out, 'other', CHARGE, 'execute')?.policy_id).toBe('all');
    expect(selectApprovalPolicy(out, 'acme', REFUND, 'execute')?.policy_id).toBe('acme-only');
    expect(selectApprovalPolicy(out, 'other', REFUND, 'execute')).toBeUndefined();
  });

  it("a tenant's own policies (AIP_RUNTIME_SETTINGS) still come first; the settings' own runtime-wide policies precede the deployment's", () => {
    const out = runtimeConfigFor(
      settingsWith([{ id: 'deploy', connector: 'payments', approverScopes: ['a'] }], {
        tenants: { demo: { approvals: [{ policy_id: 'demo-own', capabilities: ['payments.charge'] }] } },
        approval_policies: [{ policy_id: 'settings-wide', capabilities: ['payments.refund'] }],
      }),
      registry,
    );
    expect(out.approval_policies.map((p) => p.policy_id)).toEqual(['settings-wide', 'deploy']);
    expect(selectApprovalPolicy(out, 'demo', CHARGE, 'execute')?.policy_id).toBe('demo-own');
    expect(selectApprovalPolicy(out, 'demo', REFUND, 'execute')?.policy_id).toBe('settings-wide');
    expect(selectApprovalPolicy(out, 'elsewhere', CHARGE, 'execute')?.policy_id).toBe('deploy');
  });
});
