/**
 * The operator-action table (lib/transactions/operator-actions.ts) against
 * the statuses it speaks about: every durable and wire transaction status,
 * escalated or not, and every action status. The runtime's routes and the
 * console's buttons both read this table, so these are the rules an
 * operator meets in either.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../../packages/connector-sdk/src/errors/catalogue.js';
import { ACTION_STATUSES, TERMINAL_ACTION_STATUSES } from '../../../packages/connector-sdk/src/protocol/action.js';
import { TRANSACTION_PROTOCOL_STATUSES } from '../../../packages/connector-sdk/src/protocol/transaction.js';
import { OPERATOR_ACTION_RULES, mayCancel, mayReconcile, mayResolve } from '../../../lib/transactions/operator-actions.js';

const anyTransaction = fc.record({
  status: fc.constantFrom(...TRANSACTION_PROTOCOL_STATUSES),
  escalated: fc.boolean(),
});

describe('operator actions by state', () => {
  it('reconcile: exactly an outcome_unknown record, escalated or not (the wire shows an escalated one as requires_human)', () => {
    fc.assert(
      fc.property(anyTransaction, (t) => {
        const durable = t.status === 'outcome_unknown' || (t.status === 'requires_human' && t.escalated);
        expect(mayReconcile(t)).toBe(durable);
      }),
    );
    expect(mayReconcile({ status: 'reconciling', escalated: false })).toBe(false);
    expect(mayReconcile({ status: 'committed', escalated: false })).toBe(false);
  });

  it('resolve: only an escalated outcome_unknown record', () => {
    fc.assert(
      fc.property(anyTransaction, (t) => {
        expect(mayResolve(t)).toBe(t.escalated && (t.status === 'outcome_unknown' || t.status === 'requires_human'));
      }),
    );
    // Resolving implies reconciling is allowed too: both act on the same parked record.
    fc.assert(fc.property(anyTransaction, (t) => !mayResolve(t) || mayReconcile(t)));
  });

  it('cancel: exactly the action statuses that are not terminal', () => {
    for (const status of ACTION_STATUSES) expect(mayCancel(status)).toBe(!TERMINAL_ACTION_STATUSES.includes(status));
  });

  it('names refusal codes the catalogue defines', () => {
    for (const rule of Object.values(OPERATOR_ACTION_RULES)) expect(Object.keys(ERROR_CATALOGUE)).toContain(rule.refusal);
  });
});
