/**
 * Receipt chains: building links and detecting any altered, removed or
 * reordered receipt (fast-check properties).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  GENESIS_RECEIPT_HASH,
  ReceiptSchema,
  canonicalJson,
  receiptHash,
  sha256Hex,
  type Receipt,
  type TransactionProtocolStatus,
} from '../../../packages/connector-sdk/src/protocol/index.js';
import { TRANSACTION_PROTOCOL_STATUSES } from '../../../lib/transactions/status.js';
import { buildReceipt, verifyReceiptChain } from '../../../lib/runtime/receipts.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');

/** A valid chain of `n` receipts built the way the runtime builds them. */
function chain(n: number, statuses: readonly TransactionProtocolStatus[] = ['prepared'], txn = 'txn-1'): Receipt[] {
  const out: Receipt[] = [];
  let tip = { transaction_id: txn, receipt_count: 0, revision: 0 } as {
    transaction_id: string;
    receipt_count: number;
    receipt_head?: string;
    revision: number;
  };
  for (let i = 0; i < n; i++) {
    const { receipt } = buildReceipt({
      record: tip,
      status: statuses[i % statuses.length] as TransactionProtocolStatus,
      event: `transaction.step_${i}`,
      at: new Date(T0 + i * 1000),
    });
    out.push(receipt);
    tip = { transaction_id: txn, receipt_count: i + 1, receipt_head: receipt.hash, revision: receipt.revision };
  }
  return out;
}

const statusArb = fc.constantFrom(...TRANSACTION_PROTOCOL_STATUSES);
const chainArb = fc.tuple(fc.integer({ min: 1, max: 12 }), fc.array(statusArb, { minLength: 1, maxLength: 5 })).map(([n, st]) => chain(n, st));
const anchor = (c: readonly Receipt[]) => ({ expected_count: c.length, ...(c.length > 0 ? { expected_head: c[c.length - 1]?.hash as string } : {}) });

describe('buildReceipt', () => {
  it('the first receipt of a new record: seq 0, genesis prev_hash, revision 1, a valid self hash', () => {
    const { receipt } = buildReceipt({ transaction_id: 'txn-9', status: 'planned', event: 'transaction.planned', at: '2030-01-01T00:00:00.000Z' });
    expect(receipt).toMatchObject({ seq: 0, prev_hash: GENESIS_RECEIPT_HASH, revision: 1, transaction_id: 'txn-9', status: 'planned' });
    const { hash, ...body } = receipt;
    expect(hash).toBe(receiptHash(body));
    expect(ReceiptSchema.safeParse(receipt).success).toBe(true);
  });

  it('extends a record tip: seq = receipt_count, prev_hash = receipt_head, revision = revision + 1', () => {
    const first = buildReceipt({ transaction_id: 'txn-9', status: 'planned', event: 'transaction.planned', at: new Date(T0) }).receipt;
    const next = buildReceipt({
      record: { transaction_id: 'txn-9', receipt_count: 1, receipt_head: first.hash, revision: 1 },
      status: 'committing',
      event: 'transaction.claimed',
      at: new Date(T0 + 1),
    });
    expect(next.receipt).toMatchObject({ seq: 1, prev_hash: first.hash, revision: 2 });
    const viaPrev = buildReceipt({
      prev: first,
      transaction_id: 'txn-9',
      status: 'committing',
      revision: 2,
      event: 'transaction.claimed',
      at: new Date(T0 + 1),
    });
    expect(viaPrev.receipt).toEqual(next.receipt);
  });

  it('carries the evidence, the actor and the digest of the recorded result inside the receipt, covered by its hash', () => {
    const result = { action_id: 'a-1', status: 'completed' as const, output: { charge_id: 'ch_1' } };
    const base = { transaction_id: 't', status: 'committed' as const, event: 'transaction.settled.committed', at: new Date(T0) };
    const a = buildReceipt({ ...base, evidence: { code: 'x' }, actor: { id: 'ops', kind: 'user' }, result });
    const b = buildReceipt(base);
    expect(a.receipt).toMatchObject({
      v: 2,
      evidence: { code: 'x' },
      actor: { id: 'ops', kind: 'user' },
      result_digest: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(a.receipt.hash).not.toBe(b.receipt.hash);
    for (const tamper of [{ evidence: { code: 'y' } }, { actor: { id: 'alice', kind: 'user' } }, { result_digest: '0'.repeat(64) }]) {
      expect(verifyReceiptChain([{ ...a.receipt, ...tamper }])).toMatchObject({ valid: false, problem: 'altered', at_seq: 0 });
    }
    // The result the record holds must be the one the receipt recorded.
    expect(verifyReceiptChain([a.receipt], { result })).toMatchObject({ valid: true });
    expect(verifyReceiptChain([a.receipt], { result: { ...result, output: { charge_id: 'ch_2' } } })).toEqual({
      valid: false,
      problem: 'result_mismatch',
      at_seq: 0,
    });
  });

  it('still verifies a legacy receipt (no version: the seven original fields hashed)', () => {
    const body = {
      seq: 0,
      transaction_id: 't',
      status: 'failed' as const,
      revision: 1,
      at: new Date(T0).toISOString(),
      prev_hash: '0'.repeat(64),
      event: 'transaction.failed',
    };
    const legacy = { ...body, hash: sha256Hex(canonicalJson(body)) };
    expect(verifyReceiptChain([legacy])).toMatchObject({ valid: true, count: 1 });
    expect(verifyReceiptChain([{ ...legacy, event: 'transaction.other' }])).toMatchObject({ valid: false, problem: 'altered' });
  });
});

describe('verifyReceiptChain', () => {
  it('accepts every chain the runtime builds (and the empty chain)', () => {
    fc.assert(
      fc.property(chainArb, (c) => {
        expect(verifyReceiptChain(c, { transaction_id: 'txn-1', ...anchor(c) })).toEqual({ valid: true, count: c.length, head: c[c.length - 1]?.hash });
      }),
    );
    expect(verifyReceiptChain([])).toEqual({ valid: true, count: 0 });
  });

  it('property: any single altered field (hash not recomputed) is detected as altered at that seq', () => {
    const fieldArb = fc.constantFrom('status', 'revision', 'at', 'event', 'transaction_id', 'prev_hash', 'hash', 'seq');
    fc.assert(
      fc.property(chainArb, fc.nat(), fieldArb, (c, pick, field) => {
        const i = pick % c.length;
        const original = c[i] as Receipt;
        const altered: Record<string, unknown> = { ...original };
        switch (field) {
          case 'status':
            altered.status = original.status === 'committed' ? 'failed' : 'committed';
            break;
          case 'revision':
          case 'seq':
            altered[field] = (original[field] as number) + 1;
            break;
          case 'at':
            altered.at = new Date(Date.parse(original.at) + 1).toISOString();
            break;
          case 'event':
            altered.event = `${original.event}.x`;
            break;
          case 'transaction_id':
            altered.transaction_id = 'txn-evil';
            break;
          case 'prev_hash':
          case 'hash':
            altered[field] = (original[field] === GENESIS_RECEIPT_HASH ? '1' : '0').repeat(64);
            break;
        }
        const tampered = c.map((r, j) => (j === i ? altered : r));
        const verdict = verifyReceiptChain(tampered, anchor(c));
        expect(verdict).toEqual({ valid: false, problem: 'altered', at_seq: i });
      }),
      { numRuns: 300 },
    );
  });

  it('property: an alteration with a recomputed hash breaks the next link (or, for the last receipt, the anchored head)', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), (c, pick) => {
        const i = pick % c.length;
        const original = c[i] as Receipt;
        const body = { ...original, event: `${original.event}.forged` };
        const { hash: _h, ...rest } = body;
        const forged: Receipt = { ...rest, hash: receiptHash(rest) };
        const tampered = c.map((r, j) => (j === i ? forged : r));
        const verdict = verifyReceiptChain(tampered, anchor(c));
        expect(verdict.valid).toBe(false);
        if (i < c.length - 1) expect(verdict).toEqual({ valid: false, problem: 'broken_link', at_seq: i + 1 });
        else expect(verdict).toEqual({ valid: false, problem: 'altered', at_seq: i });
      }),
      { numRuns: 200 },
    );
  });

  it('property: any single removed receipt is detected (removed; the last one through the anchor)', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), (c, pick) => {
        const i = pick % c.length;
        const tampered = c.filter((_, j) => j !== i);
        expect(verifyReceiptChain(tampered, anchor(c))).toEqual({ valid: false, problem: 'removed', at_seq: i });
      }),
      { numRuns: 300 },
    );
  });

  it('property: any swap of two receipts is detected as reordered at the first swapped position', () => {
    fc.assert(
      fc.property(
        chainArb.filter((c) => c.length >= 2),
        fc.nat(),
        fc.nat(),
        (c, x, y) => {
          const i = x % c.length;
          let j = y % c.length;
          if (i === j) j = (j + 1) % c.length;
          const tampered = [...c];
          [tampered[i], tampered[j]] = [tampered[j] as Receipt, tampered[i] as Receipt];
          expect(verifyReceiptChain(tampered, anchor(c))).toEqual({ valid: false, problem: 'reordered', at_seq: Math.min(i, j) });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: any single alteration, removal or swap is detected even without the anchor, except changes confined to the tail', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), fc.constantFrom('remove', 'swap', 'alter'), (c, pick, kind) => {
        const i = pick % c.length;
        let tampered: unknown[];
        if (kind === 'remove') {
          if (i === c.length - 1) return; // a truncated tail is a shorter valid chain: needs the anchor
          tampered = c.filter((_, j) => j !== i);
        } else if (kind === 'swap') {
          if (c.length < 2) return;
          const j = i === c.length - 1 ? i - 1 : i + 1;
          tampered = [...c];
          [tampered[i], tampered[j]] = [tampered[j], tampered[i]];
        } else {
          tampered = c.map((r, j) => (j === i ? { ...r, event: 'transaction.tampered' } : r));
        }
        expect(verifyReceiptChain(tampered).valid).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('a receipt that is valid on its own but names another predecessor is a broken_link', () => {
    const c = chain(3);
    const { hash: _h, ...rest } = c[1] as Receipt;
    const relinked = { ...rest, prev_hash: 'a'.repeat(64) };
    const tampered = [c[0], { ...relinked, hash: receiptHash(relinked) }, c[2]];
    expect(verifyReceiptChain(tampered)).toEqual({ valid: false, problem: 'broken_link', at_seq: 1 });
  });

  it('a chain of another transaction, receipts from two transactions, or a malformed receipt are altered', () => {
    const c = chain(2);
    expect(verifyReceiptChain(c, { transaction_id: 'txn-other' })).toEqual({ valid: false, problem: 'altered', at_seq: 0 });
    expect(verifyReceiptChain([c[0], chain(2, ['prepared'], 'txn-2')[1]])).toMatchObject({ valid: false, problem: 'altered', at_seq: 1 });
    expect(verifyReceiptChain([{ not: 'a receipt' }])).toEqual({ valid: false, problem: 'altered', at_seq: 0 });
  });

  it('more receipts than the anchor count is altered (an appended forgery)', () => {
    const c = chain(3);
    expect(verifyReceiptChain(c, { expected_count: 2 })).toEqual({ valid: false, problem: 'altered', at_seq: 2 });
  });
});
