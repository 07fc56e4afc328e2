/**
 * validateQueueMessage validates a message with the schema of its kind (lib/ports/messages.ts `schemaOf`), so a
 * process that only sends invoke messages never builds the reconcile message's schemas. It must answer exactly as
 * the union of both (`QueueMessageSchema`) does: the same message accepted, or the same issues refused (paths,
 * codes, unknown keys), for every kind, including none and an unknown one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { QueueMessageSchema, encodeQueueMessage, validateQueueMessage } from '../../../lib/ports/messages.js';

const AT = '2030-01-01T00:00:00.000Z';
const invoke = { kind: 'invoke', tenant_id: 't1', action_id: 'a1', transaction_id: 'tx1', fence: 0, attempt: 1 };
const reconcile = { kind: 'reconcile', tenant_id: 't1', transaction_id: 'tx1', reason: 'sweeper' };
const record = {
  tenant_id: 't1',
  transaction_id: 'tx1',
  revision: 2,
  capability_id: 'pay.transfer',
  action_id: 'a1',
  principal: { id: 'p1', kind: 'agent' },
  status: 'outcome_unknown',
  mode: 'execute',
  reconcile_attempts: 0,
  fence: 1,
  receipt_count: 2,
  receipt_head: 'e'.repeat(64),
  created_at: AT,
  updated_at: AT,
  data: {},
};

/** What validateQueueMessage answers: the message, or the details of its `queue.message_invalid`. */
function answer(value: unknown): unknown {
  try {
    return { ok: validateQueueMessage(value) };
  } catch (err) {
    if (!isAipError(err) || err.code !== 'queue.message_invalid') throw err;
    return { refused: err.details };
  }
}

/** What the union answers, in the same form. */
function unionAnswer(value: unknown): unknown {
  const parsed = QueueMessageSchema.safeParse(value);
  if (parsed.success) return { ok: parsed.data };
  const issues = parsed.error.issues.map((i) => ({
    path: i.path.map(String).join('.'),
    code: i.code,
    ...(i.code === 'unrecognized_keys' ? { keys: (i as { keys: string[] }).keys } : {}),
  }));
  return { refused: { reason: 'schema', issues } };
}

const CASES: readonly [string, unknown][] = [
  ['an invoke message', invoke],
  ['an invoke message without a transaction', { ...invoke, transaction_id: undefined }],
  ['an invoke message with an unknown field', { ...invoke, input: { amount: 1 } }],
  ['an invoke message with a negative fence', { ...invoke, fence: -1 }],
  ['an invoke message with images on a later attempt', { ...invoke, attempt: 2, admitted: { action: {} } }],
  ['a reconcile message', reconcile],
  ['a schedule’s reconcile message with its record', { ...reconcile, reason: 'schedule', scheduled: { transaction: record } }],
  ['a sweeper’s reconcile message with a record', { ...reconcile, scheduled: { transaction: record } }],
  ['a reconcile message of another reason', { ...reconcile, reason: 'whim' }],
  ['a message of an unknown kind', { ...invoke, kind: 'compensate' }],
  ['a message without a kind', { tenant_id: 't1', action_id: 'a1' }],
  ['null', null],
  ['a string', 'invoke'],
  ['an array', [invoke]],
];

describe('queue messages, validated by their kind', () => {
  it.each(CASES)('%s: answered as the union answers', (_name, value) => {
    expect(answer(value)).toEqual(unionAnswer(value));
  });

  it('answers any object as the union does (fast-check)', () => {
    const field = fc.oneof(fc.string({ maxLength: 8 }), fc.integer({ min: -2, max: 3 }), fc.constant(undefined), fc.constant(null));
    const message = fc.record(
      {
        kind: fc.constantFrom('invoke', 'reconcile', 'other', undefined, 1),
        tenant_id: field,
        action_id: field,
        transaction_id: field,
        fence: field,
        attempt: field,
        reason: fc.oneof(fc.constantFrom('schedule', 'sweeper', 'operator'), field),
        extra: field,
      },
      { requiredKeys: ['kind'] },
    );
    fc.assert(
      fc.property(message, (value) => {
        expect(answer(value)).toEqual(unionAnswer(value));
      }),
    );
  });

  it('encodes a valid message as its JSON and refuses an invalid one', () => {
    expect(JSON.parse(encodeQueueMessage(invoke as never))).toEqual(invoke);
    expect(() => encodeQueueMessage({ ...reconcile, reason: 'whim' } as never)).toThrow(expect.objectContaining({ code: 'queue.message_invalid' }));
  });
});
