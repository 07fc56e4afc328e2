/**
 * Which approval policy applies to an action (pipeline step 6, and what
 * dry_run / plan record under the preview-first exception).
 *
 * - The capability's own policy (`approval.required`) wins;
 * - otherwise the first of the tenant's own policies
 *   (`config.tenants[t].approvals`) that selects the capability and mode;
 * - otherwise the first runtime-wide policy (`config.approval_policies`, the
 *   deployment's policies) whose tenant selector matches the tenant and that
 *   selects the capability and mode: a tenant named nowhere in the
 *   configuration gets these too;
 * - a compensate whose CompensationContract sets approval_required is forced
 *   through approval: when no stronger policy was selected, the runtime
 *   supplies the tenant's default policy.
 */
import { hashJson, type ApprovalPolicyRef, type Capability, type TransactionMode } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ApprovalPolicySnapshot } from '../../ports/approval-store.js';
import type { RuntimeSettings, TenantApprovalPolicy } from '../config.js';

/** Modes a tenant policy applies to when it names none: everything that reaches a connector with effect. */
export const DEFAULT_POLICY_MODES: readonly (TransactionMode | 'none')[] = ['execute', 'commit', 'compensate', 'reconcile', 'rollback_not_supported', 'none'];

/** The default tenant-policy approval ID when the tenant configures none. */
export const DEFAULT_TENANT_APPROVAL_POLICY_ID = 'tenant-default';

/** The selected policy (the reference previews record) and its approval terms. */
export interface SelectedApprovalPolicy {
  readonly ref: ApprovalPolicyRef;
  /** Distinct approvers needed (1 unless the policy says otherwise). */
  readonly min_approvals: number;
  /** The policy's own lifetime of a pending approval; absent: `config.approvals.ttl_ms`. */
  readonly ttl_ms?: number;
}

/** Does a runtime-wide policy's tenant selector match the tenant? */
export function selectsTenant(selector: readonly string[], tenant_id: string): boolean {
  return selector.includes('*') || selector.includes(tenant_id);
}

/**
 * The tenant policies that apply to a tenant, in evaluation order: its own
 * (`tenants[t].approvals`), then the runtime-wide ones whose selector
 * matches it. An unconfigured tenant gets just the runtime-wide defaults.
 */
export function tenantApprovalPolicies(config: RuntimeSettings, tenant_id: string): TenantApprovalPolicy[] {
  const own = config.tenants[tenant_id]?.approvals ?? [];
  const global = (config.approval_policies ?? []).filter((p) => selectsTenant(p.tenants, tenant_id));
  return [...own, ...global];
}

/** Does a tenant policy select this capability (in any mode)? */
export function selectsCapability(policy: TenantApprovalPolicy, capability_id: string): boolean {
  return policy.capabilities.includes('*') || policy.capabilities.includes(capability_id);
}

/**
 * The approval policy that governs executing this capability in this mode,
 * with its terms, or undefined. For dry_run and plan pass the mode the
 * preview stands for (`commit` for a plan, `execute` for a dry run).
 */
export function selectApprovalPolicyTerms(
  config: RuntimeSettings,
  tenant_id: string,
  capability: Capability,
  mode: TransactionMode | undefined,
): SelectedApprovalPolicy | undefined {
  const defaults = config.approvals.default_approver_scopes;
  if (capability.approval?.required === true) {
    return {
      ref: {
        policy_id: capability.approval.policy_id ?? `capability:${capability.id}`,
        source: 'capability',
        approver_scopes: [...(capability.approval.approver_scopes ?? defaults)],
        allow_self_approval: capability.approval.allow_self_approval ?? false,
      },
      min_approvals: 1,
    };
  }
  const effectiveMode = mode ?? 'none';
  for (const p of tenantApprovalPolicies(config, tenant_id)) {
    if (selectsCapability(p, capability.id) && (p.modes ?? DEFAULT_POLICY_MODES).includes(effectiveMode)) {
      return {
        ref: {
          policy_id: p.policy_id,
          source: 'tenant_default',
          approver_scopes: [...(p.approver_scopes ?? defaults)],
          allow_self_approval: p.allow_self_approval ?? false,
        },
        min_approvals: p.min_approvals ?? 1,
        ...(p.ttl_ms !== undefined ? { ttl_ms: p.ttl_ms } : {}),
      };
    }
  }
  if (mode === 'compensate' && capability.compensation?.approval_required === true) {
    return {
      ref: {
        policy_id: config.tenants[tenant_id]?.default_approval_policy_id ?? DEFAULT_TENANT_APPROVAL_POLICY_ID,
        source: 'tenant_default',
        approver_scopes: [...defaults],
        allow_self_approval: false,
      },
      min_approvals: 1,
    };
  }
  return undefined;
}

/** The policy reference alone (what a preview records as `approval_policy`), or undefined. */
export function selectApprovalPolicy(
  config: RuntimeSettings,
  tenant_id: string,
  capability: Capability,
  mode: TransactionMode | undefined,
): ApprovalPolicyRef | undefined {
  return selectApprovalPolicyTerms(config, tenant_id, capability, mode)?.ref;
}

/**
 * The snapshot of the policy that governs executing this capability in this
 * mode for this tenant (what a pending approval stores), or undefined when
 * no policy applies. See {@link snapshotOf}.
 */
export function policySnapshot(
  config: RuntimeSettings,
  tenant_id: string,
  capability: Capability,
  mode: TransactionMode | undefined,
): ApprovalPolicySnapshot | undefined {
  const selected = selectApprovalPolicyTerms(config, tenant_id, capability, mode);
  return selected === undefined ? undefined : snapshotOf(selected, config);
}

/**
 * The snapshot stored with a pending approval; its hash is the evidence
 * handed to the connector context, and covers every term an approval is
 * decided by (approver scopes, self-approval, approvals needed, lifetime).
 */
export function snapshotOf(selected: SelectedApprovalPolicy, config: RuntimeSettings): ApprovalPolicySnapshot {
  const policy = selected.ref;
  const approver_scopes = [...(policy.approver_scopes ?? config.approvals.default_approver_scopes)];
  const allow_self_approval = policy.allow_self_approval ?? false;
  const min_approvals = selected.min_approvals;
  const ttl = selected.ttl_ms !== undefined ? { ttl_ms: selected.ttl_ms } : {};
  return {
    policy_id: policy.policy_id,
    policy_hash: hashJson({ policy_id: policy.policy_id, source: policy.source, approver_scopes, allow_self_approval, min_approvals, ...ttl }),
    approver_scopes,
    allow_self_approval,
    min_approvals,
    ...ttl,
  };
}
