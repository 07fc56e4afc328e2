/**
 * The registry and readiness reads behind GET /v1/capabilities and
 * GET /v1/health.
 *
 * capabilities(): the registered capabilities the caller may invoke (its
 * scopes cover the capability's authorization scopes), summarised: schemas
 * and the transaction, compensation, execution, approval and idempotency
 * contracts. Never credentials, data-handling pointers or anything about the
 * connector's deployment. With a selected tenant (one of the caller's), each
 * item also names the approval policies that select it for that tenant: the
 * tenant's own, then the runtime-wide ones whose tenant selector matches.
 *
 * health(): every hosted connector's own `health` (the SDK default: ready
 * when discovery succeeds), run concurrently, each bounded by
 * `config.health_timeout_ms` (the check's signal is aborted then). A check
 * that throws, times out or answers something malformed reports the
 * connector not ready, with a detail that names only what happened (a
 * failure code, never a foreign error message).
 */
import { connectorSource } from '../../packages/connector-sdk/src/base.js';
import { toConnectorFailure } from '../../packages/connector-sdk/src/failure.js';
import type { ConnectorHealth } from '../../packages/connector-sdk/src/interfaces.js';
import { loadConnector, type HostedConnector } from './deps.js';
import { assertCallerCurrent, assertTenantMember, missingScopes, type CallerIdentity } from './identity.js';
import type { Kernel } from './kernel.js';
import { DEFAULT_POLICY_MODES, selectsCapability, tenantApprovalPolicies } from './pipeline/approval-policy.js';
import type { RegisteredCapability } from './registry.js';
import type { CapabilityList, CapabilitySummary, ConnectorReadiness, HealthReport, TenantApprovalSummary } from './types.js';

/** Longest readiness detail passed on. */
export const MAX_HEALTH_DETAIL = 256;

function summarize(reg: RegisteredCapability, tenantPolicies: readonly TenantApprovalSummary[] | undefined): CapabilitySummary {
  const c = reg.capability;
  return {
    id: c.id,
    kind: c.kind,
    ...(c.description !== undefined ? { description: c.description } : {}),
    connector_id: reg.connector_id,
    connector_version: reg.connector_version,
    input_schema: c.input_schema,
    ...(c.output_schema !== undefined ? { output_schema: c.output_schema } : {}),
    ...(c.transaction !== undefined ? { transaction: c.transaction } : {}),
    ...(c.compensation !== undefined ? { compensation: c.compensation } : {}),
    ...(c.execution !== undefined ? { execution: c.execution } : {}),
    ...(c.approval !== undefined ? { approval: c.approval } : {}),
    ...(c.idempotency !== undefined ? { idempotency: c.idempotency } : {}),
    ...(tenantPolicies !== undefined ? { tenant_approval_policies: tenantPolicies } : {}),
  };
}

/**
 * The tenant's approval policies that select the capability, in evaluation
 * order: its own, then the runtime-wide (deployment) policies whose tenant
 * selector matches it, as `selectApprovalPolicy` considers them.
 */
function tenantPoliciesFor(k: Kernel, tenant_id: string, capability_id: string): TenantApprovalSummary[] {
  const defaults = k.config.approvals.default_approver_scopes;
  return tenantApprovalPolicies(k.config, tenant_id)
    .filter((p) => selectsCapability(p, capability_id))
    .map((p) => ({
      policy_id: p.policy_id,
      modes: [...(p.modes ?? DEFAULT_POLICY_MODES)],
      approver_scopes: [...(p.approver_scopes ?? defaults)],
      allow_self_approval: p.allow_self_approval ?? false,
    }));
}

export async function listCapabilities(k: Kernel, caller: CallerIdentity, tenant_id?: string): Promise<CapabilityList> {
  assertCallerCurrent(caller, k.now());
  if (tenant_id !== undefined) assertTenantMember(caller, tenant_id);
  const items: CapabilitySummary[] = [];
  for (const id of k.deps.registry.ids()) {
    const reg = k.deps.registry.find(id);
    if (reg === undefined || missingScopes(caller, reg.capability.authorization?.scopes ?? []).length > 0) continue;
    items.push(summarize(reg, tenant_id !== undefined ? tenantPoliciesFor(k, tenant_id, id) : undefined));
  }
  return { ...(tenant_id !== undefined ? { tenant_id } : {}), items };
}

/** One line, no control characters, bounded. */
function safeDetail(detail: unknown): string | undefined {
  if (typeof detail !== 'string') return undefined;
  // The control characters in the pattern are the point: they are what is replaced.
  const line = detail.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return line.length === 0 ? undefined : line.slice(0, MAX_HEALTH_DETAIL);
}

async function checkConnector(id: string, hosted: HostedConnector, timeoutMs: number): Promise<ConnectorReadiness> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve('timeout');
    }, timeoutMs);
  });
  try {
    const check = hosted.connector.health({ signal: controller.signal, ...(hosted.instance_id !== undefined ? { instance_id: hosted.instance_id } : {}) });
    const report: ConnectorHealth | 'timeout' = await Promise.race([check, timedOut]);
    if (report === 'timeout') return { id, ready: false, detail: `health check timed out after ${timeoutMs} ms` };
    if (typeof report !== 'object' || report === null || typeof report.ready !== 'boolean')
      return { id, ready: false, detail: 'health check answered an invalid report' };
    const detail = safeDetail(report.detail);
    return { id, ready: report.ready, ...(detail !== undefined ? { detail } : {}) };
  } catch (err) {
    return { id, ready: false, detail: `health check failed: ${toConnectorFailure(err, 'health', connectorSource(id)).code}` };
  } finally {
    clearTimeout(timer);
  }
}

export async function connectorHealth(k: Kernel, caller?: CallerIdentity): Promise<HealthReport> {
  if (caller !== undefined) assertCallerCurrent(caller, k.now());
  const ids = [...new Set(k.deps.connectors.ids())].sort();
  const connectors = await Promise.all(
    ids.map(async (id): Promise<ConnectorReadiness> => {
      const hosted = await loadConnector(k.deps.connectors, id);
      return hosted === undefined ? { id, ready: false, detail: 'not hosted' } : checkConnector(id, hosted, k.config.health_timeout_ms);
    }),
  );
  return { status: connectors.every((c) => c.ready) ? 'ok' : 'degraded', connectors };
}
