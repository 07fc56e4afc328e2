/**
 * What a settled action says about its transaction record, read without a write (docs/table-design.md, "The action
 * settles first"): a definitive settlement of an execute, commit or compensate writes the action alone first (its
 * result is the durable answer) and the record after it. Between the two writes (a few milliseconds, or until a
 * redelivery, the sweeper or a resubmission finishes the record after a crash) the record is still in its attempt
 * status while its bound action is terminal; the record's settlement is then fully decided by the action, and the
 * readers here show it as it will be written. The write itself is lib/runtime/attempts/settlement.ts
 * (`recordSettlement`, `finishRecord`), which derives the same outcome with the same functions.
 */
import {
  ProviderOperationRefSchema,
  type ActionResult,
  type ProtocolError,
  type ProviderOperationRef,
  type TransactionMode,
} from '../../packages/connector-sdk/src/protocol/index.js';
import { TERMINAL_ACTION_STATUS_LIST, type ActionHead } from '../ports/action-store.js';
import type { TransactionRecord } from '../ports/transaction-store.js';
import { isAttemptStatus, type SettleOutcome } from '../transactions/state-machine.js';

/** True when a failed result leaves the provider outcome unknown (the page's rule). */
export function isUncertainFailure(error: ProtocolError | undefined): boolean {
  if (error === undefined) return false;
  return error.code === 'sla.timeout_exceeded' || error.details?.uncertain_outcome === true || error.uncertain_outcome === true;
}

/** A provider operation parsed from error details (or the error's own field). */
export function providerOperationFromError(error: ProtocolError | undefined): ProviderOperationRef | undefined {
  if (error === undefined) return undefined;
  if (error.provider_operation !== undefined) return error.provider_operation;
  const parsed = ProviderOperationRefSchema.safeParse(error.details?.provider_operation);
  return parsed.success ? parsed.data : undefined;
}

/** A reconciliation cursor an error's details carry. */
export function cursorFromError(error: ProtocolError | undefined): string | undefined {
  const c = error?.details?.reconciliation_cursor;
  return typeof c === 'string' && c.length > 0 && c.length <= 4096 ? c : undefined;
}

/**
 * The definitive record status an execute, commit or compensate action's terminal result settles: completed →
 * `committed` (`compensated`), a certain failure or a cancellation → `failed`. Undefined for an uncertain failure
 * (`outcome_unknown` is settled in one write with the action, never after it) and for every other mode.
 */
export function definitiveOutcome(mode: TransactionMode | undefined, result: ActionResult): SettleOutcome | undefined {
  if (mode !== 'execute' && mode !== 'commit' && mode !== 'compensate') return undefined;
  if (result.status === 'completed') return mode === 'compensate' ? 'compensated' : 'committed';
  if (result.status === 'failed' && isUncertainFailure(result.error)) return undefined;
  return result.status === 'failed' || result.status === 'cancelled' ? 'failed' : undefined;
}

/** The error a settled action's result gives its record (a completed result gives none). */
export function settledError(result: ActionResult): ProtocolError | undefined {
  return result.status === 'completed' ? undefined : result.error;
}

/** The parts of a settled action its record's settlement is computed from. */
export type SettledAction = Pick<ActionHead, 'tenant_id' | 'action_id' | 'capability_id' | 'status' | 'fence' | 'result' | 'settlement' | 'route' | 'action'>;

/** The attempt that settled the action (ActionRecord.settlement), the route's marker resolved; undefined if it cannot be. */
export function settlingAttemptId(action: SettledAction): string | undefined {
  const id = action.settlement?.attempt_id;
  if (id !== true) return id;
  return action.route?.fence_token === action.fence ? action.route.admission_reservation : undefined;
}

/**
 * The outcome `record` settles to from its bound `action`, when the action settled first and the record is still in
 * its attempt status; undefined otherwise (the record is settled, bound to another action, or the action did not
 * settle that way).
 */
export function pendingSettlement(record: TransactionRecord, action: SettledAction | undefined): SettleOutcome | undefined {
  if (action === undefined || action.settlement === undefined || action.result === undefined || settlingAttemptId(action) === undefined) return undefined;
  if (!(TERMINAL_ACTION_STATUS_LIST as readonly string[]).includes(action.status)) return undefined;
  if (!isAttemptStatus(record.status) || record.tenant_id !== action.tenant_id || record.action_id !== action.action_id) return undefined;
  return definitiveOutcome(action.action.transaction?.mode, action.result);
}

/**
 * The record as its pending settlement will write it (status, provider operation, cursor), for a reader that meets
 * it before it is written; the record itself otherwise. The receipts and the chain head stay as stored: the
 * settlement's receipt is in the chain once the record is written.
 */
export function asSettled(record: TransactionRecord, action: SettledAction | undefined): TransactionRecord {
  const to = pendingSettlement(record, action);
  if (to === undefined || action?.result === undefined) return record;
  const error = settledError(action.result);
  const ref = providerOperationFromError(error) ?? action.settlement?.provider_operation;
  const cursor = cursorFromError(error) ?? action.settlement?.reconciliation_cursor;
  return {
    ...record,
    status: to,
    ...(record.provider_operation === undefined && ref !== undefined ? { provider_operation: ref } : {}),
    ...(cursor !== undefined ? { reconciliation_cursor: cursor } : {}),
  };
}
