/**
 * The attributes an item's key holds (lib/aws/dynamo/table-design.ts keyAttributes, docs/table-design.md
 * "Key attributes not stored again"): read back from the key of every item kind, exactly the attributes
 * the code before the lean item model stored, and a stored value (an item written the old way) is kept.
 */
import { describe, expect, it } from 'vitest';
import { keyAttributes, keys, withKeyAttributes } from '../../../lib/aws/dynamo/table-design.js';

describe('key attributes', () => {
  it('each item kind reads its tenant, its IDs, its seq and its kind from its key', () => {
    expect(keyAttributes(keys.action('t-1', 'act-1'))).toEqual({ item_type: 'action', tenant_id: 't-1', action_id: 'act-1' });
    expect(keyAttributes(keys.routeAssignment('t-1', 'act-1'))).toEqual({ item_type: 'route_assignment', tenant_id: 't-1', action_id: 'act-1' });
    expect(keyAttributes(keys.streamChunk('t-1', 'act-1', 42))).toEqual({ item_type: 'stream_chunk', tenant_id: 't-1', action_id: 'act-1', seq: 42 });
    expect(keyAttributes(keys.transaction('t-1', 'txn-1'))).toEqual({ item_type: 'transaction', tenant_id: 't-1', transaction_id: 'txn-1' });
    expect(keyAttributes(keys.receipt('t-1', 'txn-1', 0))).toEqual({ item_type: 'receipt', tenant_id: 't-1', transaction_id: 'txn-1', seq: 0 });
    expect(keyAttributes(keys.receipt('t-1', 'txn-1', 12_345_678))).toMatchObject({ seq: 12_345_678 });
    expect(keyAttributes(keys.idempotency('t-1', 'agent-1', 'ab'.repeat(32)))).toEqual({
      item_type: 'idempotency',
      tenant_id: 't-1',
      principal_id: 'agent-1',
      key_hash: 'ab'.repeat(32),
    });
    expect(keyAttributes(keys.approval('t-1', 'apr-1'))).toEqual({ item_type: 'approval', tenant_id: 't-1', approval_id: 'apr-1' });
    expect(keyAttributes(keys.planRef('t-1', 'plan:txn-1'))).toEqual({ item_type: 'plan_ref', tenant_id: 't-1', plan_id: 'plan:txn-1' });
  });

  it('a key it does not know, or a malformed one, gives nothing', () => {
    expect(keyAttributes({})).toEqual({});
    expect(keyAttributes({ PK: 'NONCE#abc', SK: 'NONCE' })).toEqual({});
    expect(keyAttributes({ PK: 'ACTION#t-1#a#b', SK: 'ACTION' })).toEqual({});
    expect(keyAttributes({ PK: 'IDEM#t-1#agent-1', SK: 'IDEM' })).toEqual({});
    expect(keyAttributes({ PK: 'OTHER#t-1#x', SK: 'OTHER' })).toEqual({});
  });

  it('an item written the old way keeps its stored values; a lean one gets them from the key', () => {
    const lean = { ...keys.action('t-1', 'act-1'), status: 'completed' };
    expect(withKeyAttributes(lean)).toEqual({ ...lean, item_type: 'action', tenant_id: 't-1', action_id: 'act-1' });
    const old = { ...lean, item_type: 'action', tenant_id: 't-1', action_id: 'act-1' };
    expect(withKeyAttributes(old)).toEqual(old);
  });
});
