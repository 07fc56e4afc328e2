/**
 * The images a fresh admission's invoke message carries (lib/ports/messages.ts, `admitted`): strict, the fresh
 * admission's shape only, bound to the message's IDs, within the message bound; anything else is refused whole, and
 * an admission whose images do not fit sends IDs only.
 */
import { describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  QUEUE_MESSAGE_MAX_BYTES,
  decodeQueueMessage,
  encodeQueueMessage,
  invokeWithImages,
  reconcileWithImages,
  validateQueueMessage,
  type AdmittedImages,
  type InvokeMessage,
} from '../../../lib/ports/messages.js';

const AT = '2030-01-01T00:00:00.000Z';
const ids: InvokeMessage = { kind: 'invoke', tenant_id: 't1', action_id: 'a1', transaction_id: 'tx1', fence: 0, attempt: 1 };
const images: AdmittedImages = {
  action: {
    tenant_id: 't1',
    action_id: 'a1',
    principal: { id: 'p1', kind: 'agent' },
    capability_id: 'pay.transfer',
    mode: 'execute',
    transaction_id: 'tx1',
    status: 'accepted',
    revision: 1,
    action: { id: 'a1', capability_id: 'pay.transfer', transaction: { mode: 'execute', transaction_id: 'tx1' } },
    input_hash: 'f'.repeat(64),
    actor: { scheme: 'bearer_jwt', scopes: ['aip:actions:write'] },
    fence: 0,
    attempt: 0,
    created_at: AT,
    updated_at: AT,
  },
  transaction: {
    tenant_id: 't1',
    transaction_id: 'tx1',
    status: 'prepared',
    revision: 1,
    mode: 'execute',
    capability_id: 'pay.transfer',
    action_id: 'a1',
    principal: { id: 'p1', kind: 'agent' },
    reconcile_attempts: 0,
    fence: 0,
    receipt_count: 1,
    receipt_head: 'e'.repeat(64),
    created_at: AT,
    updated_at: AT,
    data: { transaction_context: true },
  },
};

function refused(body: unknown): string | undefined {
  try {
    decodeQueueMessage(JSON.stringify(body));
    return undefined;
  } catch (err) {
    return isAipError(err) ? err.code : 'not an AipError';
  }
}

describe('invoke message images', () => {
  it('a fresh admission’s images travel and decode as sent', () => {
    const message = invokeWithImages(ids, images);
    expect(message.admitted).toEqual(images);
    expect(decodeQueueMessage(encodeQueueMessage(message))).toEqual(message);
  });

  it('images over the message bound: the message of IDs alone', () => {
    const big = {
      ...images,
      transaction: { ...(images.transaction as NonNullable<AdmittedImages['transaction']>), data: { blob: 'x'.repeat(QUEUE_MESSAGE_MAX_BYTES) } },
    };
    expect(invokeWithImages(ids, big)).toEqual(ids);
  });

  it('images that are not a fresh admission’s shape: the message of IDs alone at the sender', () => {
    expect(invokeWithImages(ids, { ...images, action: { ...images.action, status: 'running' } } as unknown as AdmittedImages)).toEqual(ids);
    expect(invokeWithImages({ ...ids, fence: 1, attempt: 2 }, images)).toEqual({ ...ids, fence: 1, attempt: 2 });
  });

  it('a malformed or foreign image is refused with its message, never used in part', () => {
    const t = images.transaction as NonNullable<AdmittedImages['transaction']>;
    const cases: unknown[] = [
      { ...ids, admitted: { ...images, action: { ...images.action, action: { ...images.action.action, input: { amount: 1 } } } } },
      { ...ids, admitted: { ...images, action: { ...images.action, fence: 1 } } },
      { ...ids, admitted: { ...images, action: { ...images.action, lease_owner: 'att-x' } } },
      { ...ids, admitted: { ...images, action: { ...images.action, action_id: 'a2' } } },
      { ...ids, admitted: { ...images, transaction: { ...t, action_id: 'a2' } } },
      { ...ids, admitted: { ...images, transaction: { ...t, status: 'committed' } } },
      { ...ids, admitted: { ...images, transaction: { ...t, provider_operation: { provider: 'p', operation_id: 'o' } } } },
      {
        ...ids,
        admitted: {
          ...images,
          compensation: { original_action_id: 'x', requested_capability_id: 'c', compensation_capability_id: 'c', compensation_action_id: 'a1' },
        },
      },
      { ...ids, admitted: { transaction: t } },
      { ...ids, fence: 1, attempt: 2, admitted: images },
      { ...ids, admitted: { ...images, secret: 'sk' } },
    ];
    for (const body of cases) expect(refused(body)).toBe('queue.message_invalid');
    expect(refused({ ...ids, admitted: images })).toBeUndefined();
  });
});

describe('a message validated once', () => {
  const isDeepFrozen = (value: unknown): boolean =>
    typeof value !== 'object' || value === null || (Object.isFrozen(value) && Object.values(value).every(isDeepFrozen));

  it('what the sender and the decoder validated is frozen whole, and validating it again answers the same object', () => {
    const record = { ...(images.transaction as NonNullable<AdmittedImages['transaction']>), status: 'outcome_unknown', data: { n: 1 } };
    const sent = [
      invokeWithImages(ids, images),
      decodeQueueMessage(JSON.stringify({ ...ids, admitted: images })),
      reconcileWithImages({ kind: 'reconcile', tenant_id: 't1', transaction_id: 'tx1', reason: 'schedule' }, record as never),
    ];
    for (const message of sent) {
      expect(isDeepFrozen(message)).toBe(true);
      // zod's parse always builds a new object: the same object back means it was not parsed again.
      expect(validateQueueMessage(message)).toBe(message);
      expect(() => {
        (message as { fence?: number }).fence = 7;
      }).toThrow(TypeError);
    }
    expect((sent[2] as { scheduled?: unknown }).scheduled).toBeDefined();
  });

  it('a copy of a validated message is validated afresh: a change to it is refused', () => {
    const message = invokeWithImages(ids, images);
    const changed = { ...message, admitted: { ...message.admitted, secret: 'sk' } };
    expect(() => validateQueueMessage(changed)).toThrow(expect.objectContaining({ code: 'queue.message_invalid' }));
    const copy = { ...message };
    expect(validateQueueMessage(copy)).not.toBe(copy);
    expect(validateQueueMessage(copy)).toEqual(message);
  });

  it('never freezes what a caller built: a message of IDs, and the images handed to the sender', () => {
    const own: InvokeMessage = { ...ids };
    const ownImages: AdmittedImages = JSON.parse(JSON.stringify(images));
    expect(validateQueueMessage(own)).toEqual(own);
    expect(Object.isFrozen(own)).toBe(false);
    const message = invokeWithImages(own, ownImages);
    expect(message.admitted).toEqual(ownImages);
    expect(Object.isFrozen(own) || Object.isFrozen(ownImages) || Object.isFrozen(ownImages.action)).toBe(false);
    // A message of IDs (images that do not fit or are refused) is the caller's own object, not entered.
    const fallback = invokeWithImages(own, { ...ownImages, action: { ...ownImages.action, status: 'running' } } as unknown as AdmittedImages);
    expect(fallback).toBe(own);
    expect(validateQueueMessage(fallback)).not.toBe(fallback);
  });
});
