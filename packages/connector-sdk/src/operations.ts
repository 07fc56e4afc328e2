import * as z from './common/zod.js';
import type { Action, TransactionMode } from './protocol/index.js';

/**
 * The twelve serialized ConnectorOperation values, spelled exactly as the
 * connector page does. Every ConnectorFailure names the one it came from.
 */
export const CONNECTOR_OPERATIONS = [
  // discovery and readiness
  'discovery',
  'admission',
  'health',
  // provider execution
  'invocation',
  'cancellation',
  'streaming',
  // transaction recovery
  'transaction_plan',
  'transaction_commit',
  'reconciliation',
  'compensation',
  // provider data exchange
  'emission',
  'ingestion',
] as const;

export type ConnectorOperation = (typeof CONNECTOR_OPERATIONS)[number];
export const ConnectorOperationSchema = z.enum(CONNECTOR_OPERATIONS);

/** The page's four groups of operation values. */
export const CONNECTOR_OPERATION_GROUPS = {
  discovery_and_readiness: ['discovery', 'admission', 'health'],
  provider_execution: ['invocation', 'cancellation', 'streaming'],
  transaction_recovery: ['transaction_plan', 'transaction_commit', 'reconciliation', 'compensation'],
  provider_data_exchange: ['emission', 'ingestion'],
} as const satisfies Record<string, readonly ConnectorOperation[]>;

/** The eight typed FrozenConnector methods. */
export const TYPED_METHODS = [
  'invoke_typed',
  'plan_typed',
  'commit_typed',
  'compensate_typed',
  'cancel_typed',
  'reconcile_typed',
  'emit_typed',
  'ingest_typed',
] as const;
export type TypedMethod = (typeof TYPED_METHODS)[number];

/** The seven typed methods that default to `connector.operation_unsupported`. */
export const OPTIONAL_TYPED_METHODS = TYPED_METHODS.filter((m) => m !== 'invoke_typed') as readonly Exclude<TypedMethod, 'invoke_typed'>[];

/** The operation value a failure of each typed method reports. */
export const TYPED_METHOD_OPERATION = {
  invoke_typed: 'invocation',
  plan_typed: 'transaction_plan',
  commit_typed: 'transaction_commit',
  compensate_typed: 'compensation',
  cancel_typed: 'cancellation',
  reconcile_typed: 'reconciliation',
  emit_typed: 'emission',
  ingest_typed: 'ingestion',
} as const satisfies Record<TypedMethod, ConnectorOperation>;

/**
 * Operations after which an unclassified error cannot prove that no external
 * effect happened. The SDK marks unknown errors from these as
 * `uncertain_outcome: true` (a timeout is not proof that nothing happened).
 */
export const SIDE_EFFECTING_OPERATIONS: ReadonlySet<ConnectorOperation> = new Set<ConnectorOperation>([
  'invocation',
  'transaction_commit',
  'compensation',
  'cancellation',
  'emission',
]);

export function isConnectorOperation(value: unknown): value is ConnectorOperation {
  return typeof value === 'string' && (CONNECTOR_OPERATIONS as readonly string[]).includes(value);
}

/** The typed methods an action can be dispatched to. */
export type DispatchMethod = 'invoke_typed' | 'plan_typed' | 'commit_typed' | 'compensate_typed' | 'reconcile_typed';

/** The page's dispatch table. `undefined` stands for "no transaction context". */
export const DISPATCH_TABLE: Readonly<Record<TransactionMode | 'none', DispatchMethod>> = {
  none: 'invoke_typed',
  execute: 'invoke_typed',
  rollback_not_supported: 'invoke_typed',
  dry_run: 'plan_typed',
  plan: 'plan_typed',
  commit: 'commit_typed',
  compensate: 'compensate_typed',
  reconcile: 'reconcile_typed',
};

export function selectMethod(action: Pick<Action, 'transaction'>): DispatchMethod {
  return DISPATCH_TABLE[action.transaction?.mode ?? 'none'];
}
