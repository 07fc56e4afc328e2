/**
 * The one decision on a record's other items' ttl (lib/runtime/retention.ts `itemsRetention`), from the record a
 * write holds: keep, stamp or remove, never a guess.
 */
import { describe, expect, it } from 'vitest';
import { ITEMS_TTL_ALLOWANCE_SECONDS, itemsRetention, itemsTtlAtCreation, recordTtl } from '../../../lib/runtime/retention.js';

const DAY = 86_400;
const created = new Date('2030-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(created.getTime() + seconds * 1000);
const held = { items_ttl: itemsTtlAtCreation(400, created), plan_id: 'plan-1' };

describe('itemsRetention', () => {
  it('a record created open under a retention gives its items its creation + retention + the allowance', () => {
    expect(held.items_ttl).toBe(created.getTime() / 1000 + 400 * DAY + ITEMS_TTL_ALLOWANCE_SECONDS);
  });

  it('a terminal write within the allowance keeps the items as they are', () => {
    const now = at(ITEMS_TTL_ALLOWANCE_SECONDS);
    expect(itemsRetention(held, { operation: 'settle', to: 'committed', ttl: recordTtl(400, now) }, now)).toEqual({ kind: 'keep', ttl: held.items_ttl });
  });

  it('a terminal write after the allowance, or under a retention lengthened since, stamps them with the record ttl', () => {
    const late = at(ITEMS_TTL_ALLOWANCE_SECONDS + 1);
    expect(itemsRetention(held, { operation: 'settle', to: 'committed', ttl: recordTtl(400, late) }, late)).toEqual({
      kind: 'stamp',
      ttl: recordTtl(400, late),
      plan_id: 'plan-1',
    });
    const now = at(60);
    expect(itemsRetention(held, { operation: 'resolve', to: 'reconciled', ttl: recordTtl(500, now) }, now)?.kind).toBe('stamp');
  });

  it('a terminal write without a retention (dropped since the creation) removes their ttl; a record without items_ttl is left to the store', () => {
    expect(itemsRetention(held, { operation: 'settle', to: 'committed' }, at(60))).toEqual({ kind: 'remove', plan_id: 'plan-1' });
    expect(itemsRetention({}, { operation: 'settle', to: 'committed', ttl: recordTtl(400, at(60)) }, at(60))).toBeUndefined();
    expect(itemsRetention({}, { operation: 'settle', to: 'committed' }, at(60))).toBeUndefined();
  });

  it('an escalation always removes their ttl; another open write keeps it while its next write is due an allowance before it', () => {
    expect(itemsRetention(held, { operation: 'escalate', to: 'outcome_unknown' }, at(60))).toEqual({ kind: 'remove', plan_id: 'plan-1' });
    expect(itemsRetention(held, { operation: 'settle', to: 'outcome_unknown', due: at(120).toISOString() }, at(60))).toEqual({
      kind: 'keep',
      ttl: held.items_ttl,
    });
    const lastKeep = held.items_ttl - ITEMS_TTL_ALLOWANCE_SECONDS - created.getTime() / 1000;
    expect(itemsRetention(held, { operation: 'checkpoint', to: 'prepared' }, at(lastKeep))?.kind).toBe('keep');
    expect(itemsRetention(held, { operation: 'checkpoint', to: 'prepared' }, at(lastKeep + 1))?.kind).toBe('remove');
    expect(itemsRetention(held, { operation: 'reschedule_reconcile', to: 'outcome_unknown', due: at(lastKeep + 1).toISOString() }, at(60))?.kind).toBe(
      'remove',
    );
    expect(itemsRetention({}, { operation: 'escalate', to: 'outcome_unknown' }, at(60))).toBeUndefined();
  });
});
