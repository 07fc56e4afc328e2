/**
 * Which approval policy applies to an action (pipeline step 6, and what
 * dry_run / plan record under the preview-first exception).
 *
 * - The capability's own policy (`approval.required`) wins;
 * - otherwise the first tenant policy that selects the capability and mode;
 * - a compensate whose CompensationContract sets approval_required is forced
 *   through approval: when no stronger policy was selected, the runtime
 *   supplies the tenant's default policy.
 */
import { hashJson, type ApprovalPolicyRef, type Capability, type TransactionMode } from '../../protocol/index.js';
import type { ApprovalPolicySnapshot } from '../../ports/approval-store.js';
import type { RuntimeConfig } from '../config.js';

/** Modes a tenant policy applies to when it names none: everything that reaches a connector with effect. */
export const DEFAULT_POLICY_MODES: readonly (TransactionMode | 'none')[] = ['execute', 'commit', 'compensate', 'reconcile', 'rollback_not_supported', 'none'];

/** The default tenant-policy approval ID when the tenant configures none. */
export const DEFAULT_TENANT_APPROVAL_POLICY_ID = 'tenant-default';

/**
 * The approval policy that governs executing this capability in this mode,
 * or undefined. For dry_run and plan pass the mode the preview stands for
 * (`commit` for a plan, `execute` for a dry run).
 */
export function selectApprovalPolicy(config: RuntimeConfig, tenant_id: string, capability: Capability, mode: TransactionMode | undefined): ApprovalPolicyRef | undefined {
  const defaults = config.approvals.default_approver_scopes;
  if (capability.approval?.required === true) {
    return {
      policy_id: capability.approval.policy_id ?? `capability:${capability.id}`,
      source: 'capability',
      approver_scopes: [...(capability.approval.approver_scopes ?? defaults)],
      allow_self_approval: capability.approval.allow_self_approval ?? false,
    };
  }
  const tenant = config.tenants[tenant_id];
  const effectiveMode = mode ?? 'none';
  for (const p of tenant?.approvals ?? []) {
    const capOk = p.capabilities.includes('*') || p.capabilities.includes(capability.id);
    const modeOk = (p.modes ?? DEFAULT_POLICY_MODES).includes(effectiveMode);
    if (capOk && modeOk) {
      return { policy_id: p.policy_id, source: 'tenant_default', approver_scopes: [...(p.approver_scopes ?? defaults)], allow_self_approval: p.allow_self_approval ?? false };
    }
  }
  if (mode === 'compensate' && capability.compensation?.approval_required === true) {
    return {
      policy_id: tenant?.default_approval_policy_id ?? DEFAULT_TENANT_APPROVAL_POLICY_ID,
      source: 'tenant_default',
      approver_scopes: [...defaults],
      allow_self_approval: false,
    };
  }
  return undefined;
}

/** The snapshot stored with a pending approval; its hash is the evidence handed to the connector. */
export function policySnapshot(policy: ApprovalPolicyRef, config: RuntimeConfig): ApprovalPolicySnapshot {
  const approver_scopes = [...(policy.approver_scopes ?? config.approvals.default_approver_scopes)];
  const allow_self_approval = policy.allow_self_approval ?? false;
  return {
    policy_id: policy.policy_id,
    policy_hash: hashJson({ policy_id: policy.policy_id, source: policy.source, approver_scopes, allow_self_approval }),
    approver_scopes,
    allow_self_approval,
  };
}
