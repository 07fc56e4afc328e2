/**
 * The record a schedule's reconcile message carries (lib/ports/messages.ts, `scheduled`): strict, an
 * `outcome_unknown` record only, on a schedule's message only, naming the message's transaction; anything else is
 * refused whole, and a record that does not fit the message bound is sent as IDs only.
 */
import { describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { decodeQueueMessage, reconcileWithImages, type ReconcileMessage } from '../../../lib/ports/messages.js';
import type { TransactionRecord } from '../../../lib/ports/transaction-store.js';

const AT = '2030-01-01T00:00:00.000Z';
const ids: ReconcileMessage = { kind: 'reconcile', tenant_id: 't1', transaction_id: 'tx1', reason: 'schedule' };
const record: TransactionRecord = {
  tenant_id: 't1',
  transaction_id: 'tx1',
  status: 'outcome_unknown',
  revision: 4,
  mode: 'execute',
  capability_id: 'pay.transfer',
  action_id: 'a1',
  principal: { id: 'p1', kind: 'agent' },
  provider_operation: { provider: 'bank', operation_id: 'op-1' },
  next_reconcile_at: AT,
  reconcile_attempts: 1,
  fence: 0,
  receipt_count: 3,
  receipt_head: 'e'.repeat(43),
  created_at: AT,
  updated_at: AT,
  data: { reconcile_action_id: 'rcn-1' },
};

function refused(body: unknown): string | undefined {
  try {
    decodeQueueMessage(JSON.stringify(body));
    return undefined;
  } catch (err) {
    return isAipError(err) ? err.code : 'other';
  }
}

describe('a schedule’s reconcile message with its record', () => {
  it('round-trips the outcome_unknown record it was created for', () => {
    const message = reconcileWithImages(ids, record);
    expect(message).toEqual({ ...ids, scheduled: { transaction: record } });
    expect(decodeQueueMessage(JSON.stringify(message))).toEqual(message);
  });

  it('refuses an image on another reason, of another transaction, in another status, escalated, or with an unknown field', () => {
    const withImage = { ...ids, scheduled: { transaction: record } };
    expect(refused({ ...withImage, reason: 'sweeper' })).toBe('queue.message_invalid');
    expect(refused({ ...withImage, scheduled: { transaction: { ...record, transaction_id: 'tx2' } } })).toBe('queue.message_invalid');
    expect(refused({ ...withImage, scheduled: { transaction: { ...record, status: 'reconciling' } } })).toBe('queue.message_invalid');
    expect(refused({ ...withImage, scheduled: { transaction: { ...record, escalated_at: AT } } })).toBe('queue.message_invalid');
    expect(refused({ ...withImage, scheduled: { transaction: { ...record, input: { amount: 1 } } } })).toBe('queue.message_invalid');
    expect(refused({ ...withImage, scheduled: { transaction: record, original: {} } })).toBe('queue.message_invalid');
  });

  it('falls back to IDs when the record is not a schedule’s or does not fit the message bound', () => {
    expect(reconcileWithImages({ ...ids, reason: 'sweeper' }, record)).toEqual({ ...ids, reason: 'sweeper' });
    expect(reconcileWithImages(ids, { ...record, status: 'reconciling' })).toEqual(ids);
    expect(reconcileWithImages(ids, { ...record, data: { big: 'x'.repeat(20_000) } })).toEqual(ids);
  });
});
