/**
 * Durable transaction statuses, exactly as the AIP transactions page names them.
 * The wire-facing TransactionProtocolStatus (lib/protocol) adds `requires_human`
 * and `cancelled`, which are projected from the surrounding action and are never
 * stored as a durable status.
 */
export const DURABLE_TRANSACTION_STATUSES = [
  'dry_run_completed',
  'planned',
  'prepared',
  'committing',
  'committed',
  'compensating',
  'compensated',
  'failed',
  'outcome_unknown',
  'reconciling',
  'reconciled',
  'rollback_not_supported',
] as const;

export type TransactionStatus = (typeof DURABLE_TRANSACTION_STATUSES)[number];

/** The two wire-only statuses projected from the surrounding action result. */
export const WIRE_ONLY_STATUSES = ['requires_human', 'cancelled'] as const;
export type WireOnlyStatus = (typeof WIRE_ONLY_STATUSES)[number];

export const TRANSACTION_PROTOCOL_STATUSES = [...DURABLE_TRANSACTION_STATUSES, ...WIRE_ONLY_STATUSES] as const;
export type TransactionProtocolStatusValue = (typeof TRANSACTION_PROTOCOL_STATUSES)[number];

/** The seven transaction modes (spec README, list 1). */
export const TRANSACTION_MODES = [
  'dry_run',
  'plan',
  'execute',
  'commit',
  'compensate',
  'reconcile',
  'rollback_not_supported',
] as const;
export type TransactionMode = (typeof TRANSACTION_MODES)[number];
