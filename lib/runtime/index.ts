/**
 * The governed action runtime. See docs/runtime.md and docs/spec-map.md.
 */
export { Runtime } from './runtime.js';
export type { RuntimeDeps, ConnectorHost, HostedConnector, RuntimeLogger } from './deps.js';
export { staticConnectorHost, SILENT_LOGGER } from './deps.js';
export { RuntimeConfigSchema, ProductionRuntimeConfigSchema, parseRuntimeConfig, reconcileBackoffMs, type RuntimeConfig, type RuntimeConfigInput, type TenantPolicy, type TenantApprovalPolicy } from './config.js';
export { CRASH_POINTS, ArmedCrashPoints, NO_CRASH_POINTS, type CrashPoints, type CrashPointName } from './crash-points.js';
export { ATTEMPT_SETTLEMENT_MARGIN_MS, type AttemptBudget } from './attempt-budget.js';
export type { CallerIdentity } from './identity.js';
export type {
  SubmitOutcome,
  SubmitDisposition,
  AttemptOutcome,
  AttemptDisposition,
  ReconcileOutcome,
  ReconcileDisposition,
  DecisionOutcome,
  PageOf,
  CapabilityList,
  CapabilitySummary,
  TenantApprovalSummary,
  HealthReport,
  ConnectorReadiness,
  SweepOutcome,
} from './types.js';
export { DISPOSITION_HTTP } from './types.js';
export type { ApprovalDecisionInput } from './approvals.js';
export type { OperatorQuery, OperatorView, OperatorItem } from './reads.js';
export { runtimeMemory, type RuntimeMemory, type CompensationMemory } from './memory.js';
export { deriveTransactionId, deriveApprovalId } from './kernel.js';
export { reconcileActionId } from './reconciliation.js';
export { RECEIPT_EVENTS } from './journal.js';
export { CapabilityRegistry, type RegisteredCapability } from './registry.js';
export { buildReceipt, verifyReceiptChain } from './receipts.js';
