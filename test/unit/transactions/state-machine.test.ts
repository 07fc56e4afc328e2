import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import {
  ATTEMPT_STATUSES,
  INITIAL_STATUSES,
  TERMINAL_STATUSES,
  TRANSACTION_OPERATIONS,
  TRANSITION_TABLE,
  allowedFrom,
  allowedTargets,
  apply,
  applyOrThrow,
  assertTransitionAllowed,
  isAllowedTransition,
  isTerminalStatus,
  projectProtocolStatus,
  type OperationRequest,
  type StateMachineRecord,
} from '../../../lib/transactions/state-machine.js';
import { DURABLE_TRANSACTION_STATUSES, TRANSACTION_PROTOCOL_STATUSES, type TransactionStatus } from '../../../lib/transactions/status.js';

const status = fc.constantFrom(...DURABLE_TRANSACTION_STATUSES);
const operation = fc.constantFrom(...TRANSACTION_OPERATIONS);
const request: fc.Arbitrary<OperationRequest> = fc.record({ operation, to: fc.option(status, { nil: undefined }) }, { requiredKeys: ['operation'] });

describe('transition table', () => {
  it('lists only durable statuses and known operations, without duplicates', () => {
    const seen = new Set<string>();
    for (const r of TRANSITION_TABLE) {
      expect(TRANSACTION_OPERATIONS).toContain(r.operation);
      if (r.from !== null) expect(DURABLE_TRANSACTION_STATUSES).toContain(r.from);
      expect(DURABLE_TRANSACTION_STATUSES).toContain(r.to);
      const key = `${r.operation}|${r.from}|${r.to}`;
      expect(seen.has(key)).toBe(false);
      seen.add(key);
    }
  });

  it('never leaves a terminal status', () => {
    for (const t of TERMINAL_STATUSES) expect(TRANSITION_TABLE.filter((r) => r.from === t)).toEqual([]);
    expect([...TERMINAL_STATUSES].sort()).toEqual(['committed', 'compensated', 'dry_run_completed', 'failed', 'reconciled', 'rollback_not_supported'].sort());
  });

  it('every non-terminal status has a way out, and every status is reachable', () => {
    for (const s of DURABLE_TRANSACTION_STATUSES) {
      if (!isTerminalStatus(s)) expect(TRANSITION_TABLE.some((r) => r.from === s && r.to !== s)).toBe(true);
      expect(TRANSITION_TABLE.some((r) => r.to === s)).toBe(true);
    }
  });

  it('has the named operations of the spec', () => {
    expect(allowedTargets('claim_plan', 'planned')).toEqual(['committing']);
    expect(allowedTargets('claim_direct_commit', null)).toEqual(['committing']);
    expect(allowedTargets('begin_reconcile', 'outcome_unknown')).toEqual(['reconciling']);
    expect(allowedTargets('expire_plan', 'planned')).toEqual(['failed']);
    expect(allowedTargets('create', null).sort()).toEqual([...INITIAL_STATUSES].sort());
    expect(allowedTargets('create', null)).not.toContain('committing');
    expect(allowedTargets('settle', 'prepared').sort()).toEqual(['committed', 'failed', 'outcome_unknown']);
    expect(allowedTargets('settle', 'committing').sort()).toEqual(['committed', 'failed', 'outcome_unknown']);
    expect(allowedTargets('settle', 'reconciling').sort()).toEqual(['outcome_unknown', 'reconciled']);
    expect(allowedTargets('settle', 'compensating').sort()).toEqual(['compensated', 'failed', 'outcome_unknown']);
    for (const op of ['checkpoint', 'lease'] as const) {
      expect(
        TRANSITION_TABLE.filter((r) => r.operation === op)
          .map((r) => r.from)
          .sort(),
      ).toEqual([...ATTEMPT_STATUSES].sort());
      for (const s of ATTEMPT_STATUSES) expect(allowedTargets(op, s)).toEqual([s]);
    }
    expect(allowedFrom('settle', 'failed').sort()).toEqual(['committing', 'compensating', 'prepared']);
  });

  it('never rewrites reconciled as committed or compensated; reconciled is entered only from a reconciliation or an operator resolution', () => {
    expect(
      TRANSITION_TABLE.filter((r) => r.to === 'reconciled')
        .map((r) => `${r.operation}:${r.from}`)
        .sort(),
    ).toEqual(['resolve:outcome_unknown', 'settle:reconciling']);
    expect(TRANSITION_TABLE.some((r) => r.from === 'reconciled')).toBe(false);
    expect(TRANSITION_TABLE.some((r) => r.from === 'reconciling' && (r.to === 'committed' || r.to === 'compensated'))).toBe(false);
  });

  it('checkpoints only while prepared, committing, compensating or reconciling', () => {
    for (const s of DURABLE_TRANSACTION_STATUSES) {
      expect(isAllowedTransition('checkpoint', s, s)).toBe((ATTEMPT_STATUSES as readonly string[]).includes(s));
    }
  });
});

describe('apply', () => {
  it('creates at revision 1 and raises the revision by one', () => {
    const created = applyOrThrow(undefined, { operation: 'create', to: 'planned' });
    expect(created).toEqual({ status: 'planned', revision: 1 });
    const claimed = applyOrThrow(created, { operation: 'claim_plan' });
    expect(claimed).toEqual({ status: 'committing', revision: 2 });
    expect(applyOrThrow(claimed, { operation: 'checkpoint' })).toEqual({ status: 'committing', revision: 3 });
  });

  it('returns a typed error for a transition outside the table', () => {
    const r = apply({ status: 'committed', revision: 4 }, { operation: 'settle', to: 'failed' });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(isAipError(r.error, 'transaction.invalid_transition')).toBe(true);
      expect(r.error.details).toMatchObject({ operation: 'settle', from: 'committed', to: 'failed' });
      expect(r.error.httpStatus).toBe(409);
    }
    expect(() => applyOrThrow({ status: 'planned', revision: 1 }, { operation: 'create', to: 'planned' })).toThrow(/not in the transition table/);
    expect(apply(undefined, { operation: 'claim_plan' }).ok).toBe(false);
    // Ambiguous target: settle from committing needs `to`.
    expect(apply({ status: 'committing', revision: 2 }, { operation: 'settle' }).ok).toBe(false);
  });

  it('assertTransitionAllowed rejects any named current status the table does not allow', () => {
    expect(() => assertTransitionAllowed('settle', ['committing', 'prepared'], 'committed')).not.toThrow();
    expect(() => assertTransitionAllowed('settle', ['committing', 'reconciling'], 'committed')).toThrow(/reconciling/);
    expect(() => assertTransitionAllowed('settle', [], 'committed')).toThrow();
  });

  it('property: no sequence of operations leaves the table; terminal stays terminal; revision +1 per applied transition', () => {
    fc.assert(
      fc.property(fc.array(request, { minLength: 1, maxLength: 40 }), (ops) => {
        let current: StateMachineRecord | undefined;
        let terminalSeen = false;
        for (const op of ops) {
          const before = current;
          const r = apply(current, op);
          if (r.ok) {
            // The applied triple is a row of the table.
            expect(isAllowedTransition(op.operation, before?.status ?? null, r.status)).toBe(true);
            expect(r.rule).toEqual({ operation: op.operation, from: before?.status ?? null, to: r.status });
            // Exactly one more revision.
            expect(r.revision).toBe((before?.revision ?? 0) + 1);
            // Nothing leaves a terminal status.
            expect(before !== undefined && isTerminalStatus(before.status)).toBe(false);
            current = { status: r.status, revision: r.revision };
          } else {
            expect(isAipError(r.error, 'transaction.invalid_transition')).toBe(true);
          }
          if (current && isTerminalStatus(current.status)) terminalSeen = true;
          if (terminalSeen) expect(isTerminalStatus(current!.status)).toBe(true);
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it('property: from any record state, applied operations reach only statuses listed for that operation', () => {
    fc.assert(
      fc.property(status, fc.integer({ min: 1, max: 1_000_000 }), request, (s, revision, op) => {
        const r = apply({ status: s, revision }, op);
        if (isTerminalStatus(s)) expect(r.ok).toBe(false);
        if (r.ok) {
          expect(allowedTargets(op.operation, s)).toContain(r.status);
          expect(r.revision).toBe(revision + 1);
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it('property: walks driven only by table rows never get stuck outside the table', () => {
    // Random walks that pick a row applicable to the current status: each step is accepted.
    fc.assert(
      fc.property(fc.array(fc.nat(), { minLength: 1, maxLength: 30 }), (choices) => {
        let current: StateMachineRecord | undefined;
        for (const c of choices) {
          const rows = TRANSITION_TABLE.filter((r) => r.from === (current?.status ?? null));
          if (rows.length === 0) {
            expect(current && isTerminalStatus(current.status)).toBe(true);
            break;
          }
          const row = rows[c % rows.length]!;
          const r = apply(current, { operation: row.operation, to: row.to });
          expect(r.ok).toBe(true);
          if (r.ok) current = { status: r.status, revision: r.revision };
        }
      }),
      { numRuns: 1_000 },
    );
  });
});

describe('wire projection', () => {
  it('projects every durable status to itself without action facts', () => {
    for (const s of DURABLE_TRANSACTION_STATUSES) expect(projectProtocolStatus(s)).toBe(s);
  });

  it('projects requires_human from the action or an escalation, never over a terminal status', () => {
    expect(projectProtocolStatus('planned', { action_status: 'requires_human' })).toBe('requires_human');
    expect(projectProtocolStatus('outcome_unknown', { escalated: true })).toBe('requires_human');
    expect(projectProtocolStatus('committed', { action_status: 'requires_human' })).toBe('committed');
    expect(projectProtocolStatus('reconciled', { escalated: true })).toBe('reconciled');
  });

  it('projects cancelled only where no provider effect can be in doubt', () => {
    expect(projectProtocolStatus('planned', { action_status: 'cancelled' })).toBe('cancelled');
    expect(projectProtocolStatus('failed', { action_status: 'cancelled' })).toBe('cancelled');
    for (const s of ['prepared', 'committing', 'outcome_unknown', 'reconciling', 'committed', 'compensating'] as TransactionStatus[]) {
      expect(projectProtocolStatus(s, { action_status: 'cancelled' })).toBe(s);
    }
  });

  it('property: the projection is always a wire status and keeps terminal outcomes except a cancelled failure', () => {
    fc.assert(
      fc.property(
        status,
        fc.option(fc.constantFrom('accepted', 'running', 'requires_human', 'completed', 'failed', 'cancelled'), { nil: undefined }),
        fc.option(fc.boolean(), { nil: undefined }),
        (s, action_status, escalated) => {
          const p = projectProtocolStatus(s, { action_status, escalated });
          expect(TRANSACTION_PROTOCOL_STATUSES).toContain(p);
          if (isTerminalStatus(s) && p !== s) expect(s === 'failed' && p === 'cancelled').toBe(true);
        },
      ),
    );
  });
});
