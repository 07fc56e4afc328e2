/**
 * DataContract.retention_days, applied consistently to every item of a
 * transaction:
 *
 * - the transaction record, every receipt of its chain and its plan-ID item
 *   get the same `ttl` (the terminal write's time + retention_days) in the
 *   same atomic write as the transition that makes the record terminal
 *   (settle, expire_plan, resolve, or a record created terminal); a record
 *   that is not terminal never expires, so an escalated transaction waiting
 *   for a human keeps its whole chain;
 * - the action records bound to it expire the same number of days after they
 *   end (`actionRetention`), instead of the
 *   runtime-wide `action_retention_seconds`;
 * - route assignments and stream chunks of those actions, and the idempotency
 *   reservation, keep their own shorter lifetimes (a reservation's retention
 *   is capped by the contract's).
 *
 * DynamoDB deletes an expired item some time after its ttl (typically within
 * days), not at the instant.
 */
import type { RetentionStamp, TransactionRecord } from '../ports/transaction-store.js';
import type { Kernel } from './kernel.js';
import type { DataPolicy } from './redaction.js';

/**
 * The retention stamp of a capability's terminal transaction writes: the
 * contract's retention_days, else the runtime's `transaction_retention_days`
 * (a deployed configuration's default, lib/runtime/config.ts
 * DEPLOYED_DEFAULTS), else undefined (kept).
 */
export function retentionFor(k: Kernel, capability_id: string, record?: Pick<TransactionRecord, 'plan_id'>): RetentionStamp | undefined {
  const fallback = k.config.transaction_retention_days > 0 ? k.config.transaction_retention_days : undefined;
  const days = k.deps.registry.find(capability_id)?.capability.data?.retention_days ?? fallback;
  if (days === undefined) return undefined;
  return { days, ...(record?.plan_id !== undefined ? { plan_id: record.plan_id } : {}) };
}

/** An action record's retention: the capability's retention_days, else the runtime's action_retention_seconds. */
export function actionRetention(k: Kernel, policy: DataPolicy): { retention_seconds?: number } {
  if (policy.retention_days !== undefined) return { retention_seconds: policy.retention_days * 86_400 };
  return k.config.action_retention_seconds > 0 ? { retention_seconds: k.config.action_retention_seconds } : {};
}
