/**
 * The write shards of the byStatus and byExpiry indexes (lib/aws/dynamo/table-design.ts,
 * docs/table-design.md "byStatus"): stable, in range, spread over every shard,
 * one tenant's transactions included, and every shard listed for the reads.
 */
import { describe, expect, it } from 'vitest';
import { APPROVAL_EXPIRY_SHARDS, STATUS_INDEX_EPISODES, STATUS_INDEX_SHARDS, keys } from '../../../lib/aws/dynamo/table-design.js';

describe('status index shards', () => {
  it('a transaction has one stable shard in range; its key names status, escalation and shard', () => {
    const s = keys.statusIndexShard('tenant-a', 'txn-1');
    expect(keys.statusIndexShard('tenant-a', 'txn-1')).toBe(s);
    expect(s).toBeGreaterThanOrEqual(0);
    expect(s).toBeLessThan(STATUS_INDEX_SHARDS);
    expect(keys.statusIndex('prepared', false, 7)).toBe('STATUS#prepared#07');
    expect(keys.statusIndex('outcome_unknown', true, 31)).toBe('STATUS#outcome_unknown#escalated#31');
    expect(keys.statusIndexLegacy('outcome_unknown', true)).toBe('STATUS#outcome_unknown#escalated');
  });

  it('the tenant is part of the hash: the same transaction ID of two tenants is placed independently', () => {
    const differ = Array.from({ length: 64 }, (_, i) => `txn-${i}`).filter(
      (tx) => keys.statusIndexShard('tenant-a', tx) !== keys.statusIndexShard('tenant-b', tx),
    );
    expect(differ.length).toBeGreaterThan(0);
  });

  it("one tenant's transactions reach every shard, none with more than twice its share", () => {
    const counts = new Array<number>(STATUS_INDEX_SHARDS).fill(0);
    const n = STATUS_INDEX_SHARDS * 500;
    for (let i = 0; i < n; i++) counts[keys.statusIndexShard('tenant-a', `tx-${i.toString(36)}-${(i * 7919).toString(16)}`)]! += 1;
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThan((2 * n) / STATUS_INDEX_SHARDS);
  });

  it('a listing reads the legacy partition and every shard, each once', () => {
    const parts = keys.statusIndexPartitions('committing');
    expect(parts[0]).toBe('STATUS#committing');
    expect(parts).toHaveLength(STATUS_INDEX_SHARDS + 1);
    expect(new Set(parts).size).toBe(parts.length);
    for (let s = 0; s < STATUS_INDEX_SHARDS; s++) expect(parts).toContain(keys.statusIndex('committing', false, s));
    const expiry = keys.approvalExpiryIndexPartitions();
    expect(expiry[0]).toBe(keys.approvalExpiryIndexLegacy);
    expect(expiry).toHaveLength(APPROVAL_EXPIRY_SHARDS + 1);
    expect(expiry).toContain(keys.approvalExpiryIndex(keys.approvalExpiryIndexShard('tenant-a', 'apr-1')));
  });

  it('a listing of committing or reconciling also reads the partitions of the entry its records may keep (one entry per episode)', () => {
    expect(STATUS_INDEX_EPISODES).toEqual({ committing: 'planned', reconciling: 'outcome_unknown' });
    for (const [status, kept] of Object.entries(STATUS_INDEX_EPISODES)) {
      const parts = keys.statusListingPartitions(status);
      expect(parts).toEqual([...keys.statusIndexPartitions(status), ...keys.statusIndexPartitions(kept)]);
      expect(new Set(parts).size).toBe(2 * (STATUS_INDEX_SHARDS + 1));
    }
    for (const status of ['planned', 'prepared', 'compensating', 'outcome_unknown'])
      expect(keys.statusListingPartitions(status)).toEqual(keys.statusIndexPartitions(status));
    // The escalated listing reads its own partitions only (an escalated entry is never kept by a reconciliation).
    expect(keys.statusListingPartitions('outcome_unknown', true)).toEqual(keys.statusIndexPartitions('outcome_unknown', true));
  });

  it("tells a status's own entries (sharded or legacy) from kept and escalated ones", () => {
    expect(keys.isOwnStatusEntry('STATUS#reconciling#05', 'reconciling')).toBe(true);
    expect(keys.isOwnStatusEntry('STATUS#reconciling', 'reconciling')).toBe(true);
    expect(keys.isOwnStatusEntry('STATUS#outcome_unknown#05', 'reconciling')).toBe(false);
    expect(keys.isOwnStatusEntry('STATUS#outcome_unknown#escalated#05', 'outcome_unknown')).toBe(false);
    expect(keys.isOwnStatusEntry('STATUS#outcome_unknown#escalated#05', 'outcome_unknown', true)).toBe(true);
    expect(keys.isOwnStatusEntry('STATUS#outcome_unknown#escalated', 'outcome_unknown', true)).toBe(true);
    expect(keys.isOwnStatusEntry('STATUS#planned#31', 'committing')).toBe(false);
    expect(keys.isOwnStatusEntry(undefined, 'committing')).toBe(false);
  });
});
