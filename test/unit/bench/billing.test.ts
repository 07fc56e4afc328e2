/**
 * DynamoDB capacity as AWS bills it (bench/lib/billing.ts item sizes and
 * units; bench/lib/awscost-model.ts billedUnits), on items and traces written
 * out here, against the published rules worked by hand.
 */
import { describe, expect, it } from 'vitest';
import { billedUnits } from '../../../bench/lib/awscost-model.js';
import { itemSize, readUnits, sumBilled, valueSize, writeUnits } from '../../../bench/lib/billing.js';

describe('DynamoDB item size and units by AWS rules', () => {
  it('sizes attribute values', () => {
    expect(valueSize({ S: 'héllo' })).toBe(6); // UTF-8 bytes
    expect(valueSize({ N: '1250' })).toBe(3); // 3 significant digits (125) → ceil(3 / 2) + 1
    expect(valueSize({ N: '-0.001500' })).toBe(2); // 15 → 1 + 1
    expect(valueSize({ BOOL: true })).toBe(1);
    expect(valueSize({ NULL: true })).toBe(1);
    expect(valueSize({ L: [{ S: 'ab' }, { N: '7' }] })).toBe(3 + (2 + 1) + (2 + 1));
    expect(valueSize({ M: { k: { S: 'v' } } })).toBe(3 + (1 + 1 + 1));
  });

  it('sizes an item as names plus values', () => {
    // PK (2 + 8) + SK (2 + 4) + amount (6 + 3) = 25
    expect(itemSize({ PK: { S: 'TXN#0001' }, SK: { S: 'META' }, amount: { N: '1250' } })).toBe(25);
    expect(itemSize(undefined)).toBe(0);
  });

  it('rounds writes up to 1 KB and reads up to 4 KB, at least one unit', () => {
    expect(writeUnits(0)).toBe(1);
    expect(writeUnits(1024)).toBe(1);
    expect(writeUnits(1025)).toBe(2);
    expect(readUnits(100, true)).toBe(1);
    expect(readUnits(4097, true)).toBe(2);
    expect(readUnits(4097, false)).toBe(1);
  });

  it('sums bills, counting estimated requests', () => {
    const s = sumBilled([
      { wru: 4, rru: 0, index_wru: 1, basis: 'items', items: [] },
      { wru: 1, rru: 0, index_wru: 0, basis: 'refused_estimate', items: [] },
      undefined,
      { wru: 0, rru: 2, index_wru: 0, basis: 'items', items: [] },
    ]);
    expect(s).toEqual({ wru: 5, rru: 2, index_wru: 1, total: 8, estimated_requests: 1, reported_requests: 0 });
  });
});

describe('billed units of a measured scenario', () => {
  it('takes the billed total, index writes included, when the run has it', () => {
    const u = billedUnits({ trace: [], billed: { total: { wru: 28, rru: 2, index_wru: 3, estimated_requests: 0 } } });
    expect(u.wru).toBe(31);
    expect(u.rru).toBe(2);
    expect(u.source).toMatch(/billed from item sizes/);
  });

  it('estimates from the trace otherwise: each transactional item at least 2 WRU', () => {
    const u = billedUnits({
      trace: [
        'admit (API):',
        '  TransactWriteItems [Put:ACTION, Put:IDEM, Put:TXN, Put:RCPT] 4 CU  — site',
        '  sqs:SendMessage',
        'attempt (worker):',
        '  BatchGetItem [ACTION, TXN] 2 CU',
        '  TransactWriteItems [Update:TXN, Put:RCPT] 12 CU',
        '  UpdateItem IDEM 2 CU',
        '  PutItem ACTION (ConditionalCheckFailed)',
        '  GetItem TXN 1 CU',
      ],
    });
    // writes: max(8, 4) + max(4, 12) + 2 + 1 (refused, no capacity) = 23; reads: 2 + 1 = 3
    expect(u).toMatchObject({ wru: 23, rru: 3 });
    expect(u.source).toMatch(/lower bound/);
  });
});
