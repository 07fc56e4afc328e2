/**
 * DataContract.retention_days, applied consistently to every item of a
 * transaction:
 *
 * - the transaction record gets its `ttl` (the terminal write's time +
 *   retention_days) in the atomic write of the transition that makes it
 *   terminal (settle, expire_plan, resolve, or a record created terminal); a
 *   record that is not terminal never expires;
 * - its other items (its receipt items and its plan-ID item) are written
 *   ALREADY carrying a ttl that outlasts the record's when the record settles
 *   promptly (issue 21, change 19): a record created open under a retention
 *   stores `items_ttl` = its creation + retention + {@link ITEMS_TTL_ALLOWANCE_SECONDS},
 *   and each of those items is written with it. The terminal write decides
 *   from the record it holds (`itemsRetention`): when the record's new ttl is
 *   at or before its `items_ttl` it writes nothing to them; otherwise (a late
 *   settlement, a retention lengthened since, a record written before
 *   `items_ttl`) it stamps them as before; with no retention at all (the
 *   configuration dropped it) they lose their ttl, as the record keeps its;
 * - a record that is not terminal never loses an item: a write that leaves it
 *   waiting without bound (an escalation to a human) or whose next write may
 *   come later than its items' ttl less the allowance removes their ttl
 *   (`remove`), and every later receipt is written without one, so the
 *   terminal write stamps them as before (the audit: docs/table-design.md,
 *   "TTL");
 * - the action records bound to it expire the same number of days after they
 *   end (`actionRetention`), instead of the
 *   runtime-wide `action_retention_seconds`;
 * - route assignments and stream chunks of those actions, and the idempotency
 *   reservation, keep their own shorter lifetimes (a reservation's retention
 *   is capped by the contract's).
 *
 * The decision lives here and in the journal that calls it; the store maps
 * its result (lib/ports/transaction-store.ts ItemsRetention). DynamoDB
 * deletes an expired item some time after its ttl (typically within days),
 * not at the instant.
 */
import type { TransactionStatus } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ItemsRetention, RetentionStamp, TransactionRecord } from '../ports/transaction-store.js';
import { isTerminalStatus, type TransactionOperation } from '../transactions/state-machine.js';
import type { RuntimeDeps } from './deps.js';
import type { DataPolicy } from './redaction.js';

/**
 * How long after its creation a record may still settle without stamping its items, and the least time its items'
 * ttl keeps ahead of any write of the record that is not terminal: 2 days. It covers the prompt life of every mode
 * (an execute settles in seconds, a plan is committed within its 15 minutes, an attempt with its redeliveries and
 * capacity deferrals ends within `capacity_deferral.max_age_ms` ≤ 1 day) and the longest a record that is not
 * terminal nor escalated waits for its next write with the sweeper running (`stall_after_ms` ≤ 1 day, a
 * reconciliation's delay ≤ 1 day: `reconcile.max_delay_ms`, a connector's `retry_after_ms`), with a day's margin
 * for the sweeper. What it costs: on the prompt path the items outlive the record by less than 2 days (0.5 % of a
 * 400-day retention), as DynamoDB's own deletion already lags by days.
 */
export const ITEMS_TTL_ALLOWANCE_SECONDS = 2 * 86_400;

const epochSeconds = (now: Date): number => Math.floor(now.getTime() / 1000);

/** The retention days of a capability's transactions: its contract's retention_days, else `transaction_retention_days`, else undefined (kept). */
export function retentionDays(deps: Pick<RuntimeDeps, 'config' | 'registry'>, capability_id: string): number | undefined {
  const fallback = deps.config.transaction_retention_days > 0 ? deps.config.transaction_retention_days : undefined;
  return deps.registry.find(capability_id)?.capability.data?.retention_days ?? fallback;
}

/** The ttl a record created open at `now` gives its other items, under a retention of `days`. */
export function itemsTtlAtCreation(days: number, now: Date): number {
  return epochSeconds(now) + days * 86_400 + ITEMS_TTL_ALLOWANCE_SECONDS;
}

/** A terminal record's ttl, written at `now`. */
export function recordTtl(days: number, now: Date): number {
  return epochSeconds(now) + days * 86_400;
}

/**
 * What a write of `record` does to its other items' ttl (lib/ports/transaction-store.ts ItemsRetention), from the
 * record it holds (`items_ttl`, `plan_id`), never from a guess:
 * - terminal, retained: `keep` when the record's new ttl is at or before its `items_ttl`; else `stamp` (a late
 *   write, a retention lengthened since the creation); a record without `items_ttl` (written before, or whose items
 *   lost theirs) gets undefined, which the store stamps as before;
 * - terminal, not retained (the retention dropped since): `remove`, as the record is kept;
 * - not terminal: `remove` for an escalation (a human has no deadline) and for a write whose next write is due
 *   (`due`, e.g. the next reconciliation) later than the items' ttl less the allowance; else `keep`.
 */
export function itemsRetention(
  record: Pick<TransactionRecord, 'items_ttl' | 'plan_id'>,
  write: { operation: TransactionOperation; to: TransactionStatus; ttl?: number | undefined; due?: string | undefined },
  now: Date,
): ItemsRetention | undefined {
  const held = record.items_ttl;
  const plan = record.plan_id !== undefined ? { plan_id: record.plan_id } : {};
  if (isTerminalStatus(write.to)) {
    if (write.ttl === undefined) return held !== undefined ? { kind: 'remove', ...plan } : undefined;
    if (held === undefined) return undefined;
    return write.ttl <= held ? { kind: 'keep', ttl: held } : { kind: 'stamp', ttl: write.ttl, ...plan };
  }
  if (held === undefined) return undefined;
  const due = write.due !== undefined ? Math.max(now.getTime(), Date.parse(write.due)) : now.getTime();
  if (write.operation === 'escalate' || Math.floor(due / 1000) + ITEMS_TTL_ALLOWANCE_SECONDS > held) return { kind: 'remove', ...plan };
  return { kind: 'keep', ttl: held };
}

/**
 * The retention stamp of a capability's terminal transaction writes: the
 * contract's retention_days, else the runtime's `transaction_retention_days`
 * (a deployed configuration's default, lib/runtime/config.ts
 * DEPLOYED_DEFAULTS), else undefined (kept).
 */
export function retentionFor(
  k: { deps: Pick<RuntimeDeps, 'config' | 'registry'> },
  capability_id: string,
  record?: Pick<TransactionRecord, 'plan_id'>,
): RetentionStamp | undefined {
  const days = retentionDays(k.deps, capability_id);
  if (days === undefined) return undefined;
  return { days, ...(record?.plan_id !== undefined ? { plan_id: record.plan_id } : {}) };
}

/** An action record's retention: the capability's retention_days, else the runtime's action_retention_seconds. */
export function actionRetention(k: Pick<RuntimeDeps, 'config'>, policy: DataPolicy): { retention_seconds?: number } {
  if (policy.retention_days !== undefined) return { retention_seconds: policy.retention_days * 86_400 };
  return k.config.action_retention_seconds > 0 ? { retention_seconds: k.config.action_retention_seconds } : {};
}
