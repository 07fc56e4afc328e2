/**
 * The DynamoDB adapters' own (unsealed) cursors, against DynamoDB Local: a
 * cursor that decodes to a start key DynamoDB refuses (`ValidationException`)
 * is the listing's typed 400, never `internal.unexpected` (defence in
 * depth: the runtime seals the cursors callers see, so such a
 * cursor can only come from inside).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { TENANT, createStores, type Stores } from './support.js';

let s: Stores;
beforeAll(async () => {
  s = await createStores('rs-page');
});
afterAll(async () => s.table.destroy());

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isAipError(err)) return err.code;
    throw err;
  }
  return 'none';
}

describe('a start key DynamoDB refuses is the listing’s typed 400', () => {
  it('listByStatus (the status index): missing or empty key attributes', async () => {
    for (const cursor of [
      b64({ GSI3PK: 'STATUS#outcome_unknown' }),
      b64({ GSI3PK: 'STATUS#outcome_unknown', GSI3SK: '', PK: '', SK: '' }),
      b64({ GSI3PK: 'STATUS#outcome_unknown', GSI3SK: 'x' }),
    ]) {
      expect(await codeOf(s.table.store.listByStatus({ status: 'outcome_unknown', limit: 1, cursor }))).toBe('transaction.invalid_listing');
    }
    // A well-formed start key is still accepted.
    const ok = await s.table.store.listByStatus({
      status: 'outcome_unknown',
      limit: 1,
      cursor: b64({ GSI3PK: 'STATUS#outcome_unknown', GSI3SK: '2000-01-01T00:00:00.000Z#t#x', PK: 'TXN#t#x', SK: 'TXN' }),
    });
    expect(ok.items).toEqual([]);
  });

  it('listPending (approvals in the status index)', async () => {
    expect(await codeOf(s.approvals.listPending({ tenant_id: TENANT, limit: 1, cursor: b64({ GSI3PK: `APPROVAL#pending#${TENANT}` }) }))).toBe(
      'approval.invalid_listing',
    );
    expect(
      await codeOf(s.approvals.listPending({ tenant_id: TENANT, limit: 1, cursor: b64({ GSI3PK: `APPROVAL#pending#${TENANT}`, GSI3SK: '', PK: '', SK: '' }) })),
    ).toBe('approval.invalid_listing');
  });

  it('listReceipts and stream chunks (base-table queries): an empty sort key', async () => {
    const receipts = await codeOf(
      s.table.store.listReceipts({ tenant_id: TENANT, transaction_id: 'txn-1', limit: 1, cursor: b64({ PK: `TXN#${TENANT}#txn-1`, SK: '' }) }),
    );
    expect(receipts).toBe('transaction.invalid_listing');
    const chunks = await codeOf(s.streams.list({ tenant_id: TENANT, action_id: 'act-1', limit: 1, cursor: b64({ PK: `ACTION#${TENANT}#act-1`, SK: '' }) }));
    expect(chunks).toBe('stream.invalid_chunk');
  });
});
