/**
 * Model test: random interleavings of plan, commit, execute, reconcile,
 * compensate, worker attempts (with crashes at random crash points), clock
 * moves and sweeps, against DynamoDB Local and fauxqs. Invariants:
 *
 * 1. at most one claim winner per plan;
 * 2. no execute while uncertain (neither admitted nor invoked), and no blind
 *    second provider call for a capability without retry support;
 * 3. no connector invocation without a durable record first (checked inside
 *    the connector, against DynamoDB, at call time);
 * 4. revisions only grow;
 * 5. every receipt chain verifies against its record's anchor.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import { CRASH_POINTS, type CrashPointName } from '../../../lib/runtime/crash-points.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
const violations: string[] = [];

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-model', config: { stall_after_ms: 60_000, reconcile: { max_attempts: 3 } } });
  // Invariant 3, checked by the connector itself at every call.
  provider.probe = async (call) => {
    const action = await h.stores.actions.get({ tenant_id: TENANT, action_id: call.action_id });
    if (action === undefined) {
      violations.push(`${call.method} ${call.action_id}: no action record`);
      return undefined;
    }
    if (call.method === 'plan') return { action: action.status };
    if (action.status !== 'running') violations.push(`${call.method} ${call.action_id}: action is ${action.status}, not running`);
    // The attempt start is the action's lease: it holds one, fenced, before any provider call.
    if (action.lease_owner === undefined || action.fence < 1) violations.push(`${call.method} ${call.action_id}: no lease held`);
    if (call.transaction_id !== undefined && call.mode !== 'rollback_not_supported') {
      const txn = await h.table.store.get({ tenant_id: TENANT, transaction_id: call.transaction_id });
      const expected =
        call.mode === 'reconcile' ? 'reconciling' : call.mode === 'compensate' ? 'compensating' : call.mode === 'commit' ? 'committing' : 'prepared';
      if (txn === undefined) violations.push(`${call.method} ${call.transaction_id}: no transaction record`);
      else {
        if (txn.status !== expected) violations.push(`${call.method} ${call.transaction_id}: record is ${txn.status}, expected ${expected}`);
        // Invariant 2 (invocation side): an execute never reaches the connector while the record is uncertain.
        if (call.mode === 'execute' && (txn.status === 'outcome_unknown' || txn.status === 'reconciling'))
          violations.push(`execute invoked while ${txn.status}`);
      }
    }
    return { action: action.status };
  };
});
afterAll(async () => h.destroy());

type Cmd =
  | { kind: 'plan'; slot: number }
  | { kind: 'commit'; slot: number; principal: number }
  | { kind: 'execute'; slot: number; sameAction: boolean; scenario: 'ok' | 'uncertain' | 'fail' }
  | { kind: 'reconcile'; slot: number; planned: boolean }
  | { kind: 'compensate'; slot: number }
  | { kind: 'drive'; crash: CrashPointName | null; recover: boolean }
  | { kind: 'advance'; ms: number }
  | { kind: 'sweep' };

const SLOTS = 2;
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({ kind: fc.constant('plan' as const), slot: fc.nat(SLOTS - 1) }),
  fc.record({ kind: fc.constant('commit' as const), slot: fc.nat(SLOTS - 1), principal: fc.nat(3) }),
  fc.record({
    kind: fc.constant('execute' as const),
    slot: fc.nat(SLOTS - 1),
    sameAction: fc.boolean(),
    scenario: fc.constantFrom('ok' as const, 'uncertain' as const, 'fail' as const),
  }),
  fc.record({ kind: fc.constant('reconcile' as const), slot: fc.nat(SLOTS - 1), planned: fc.boolean() }),
  fc.record({ kind: fc.constant('compensate' as const), slot: fc.nat(SLOTS - 1) }),
  fc.record({ kind: fc.constant('drive' as const), crash: fc.constantFrom(...CRASH_POINTS), recover: fc.boolean() }),
  fc.record({ kind: fc.constant('drive' as const), crash: fc.constant(null), recover: fc.constant(false) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.constantFrom(5_000, 40_000, 70_000) }),
  fc.record({ kind: fc.constant('sweep' as const) }),
);

let run = 0;

async function attempt<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; code: string }> {
  try {
    return { ok: true, value: await p };
  } catch (err) {
    if (isAipError(err)) return { ok: false, code: err.code };
    throw err;
  }
}

describe('runtime model (fast-check, DynamoDB Local + fauxqs)', () => {
  it('random interleavings of plan, commit, execute, reconcile, compensate and crash keep the invariants', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 6, maxLength: 14 }), async (cmds) => {
        run += 1;
        const planTx = (s: number) => `m${run}-p${s}`;
        const execTx = (s: number) => `m${run}-e${s}`;
        const execOwner = (s: number) => `m${run}-ea${s}`;
        const winners = new Map<string, string[]>();
        const revisions = new Map<string, number>();
        let n = 0;
        const fresh = (p: string) => `m${run}-${p}${n++}`;

        for (const c of cmds) {
          h.crash.disarm();
          switch (c.kind) {
            case 'plan':
              await attempt(h.runtime.submit(caller(), transfer(fresh('pa'), { transaction: { mode: 'plan', transaction_id: planTx(c.slot) } })));
              break;
            case 'commit': {
              const id = fresh('ca');
              const out = await attempt(
                h.runtime.submit(
                  caller(c.principal === 0 ? 'agent-2' : 'agent-1'),
                  transfer(id, { transaction: { mode: 'commit', plan_id: `plan:${planTx(c.slot)}` } }),
                ),
              );
              if (out.ok && out.value.disposition === 'accepted') winners.set(planTx(c.slot), [...(winners.get(planTx(c.slot)) ?? []), id]);
              break;
            }
            case 'execute': {
              const tx = execTx(c.slot);
              const before = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
              const id = c.sameAction ? execOwner(c.slot) : fresh('ex');
              const invokesBefore = provider.count('invoke', tx);
              const out = await attempt(
                h.runtime.submit(caller(), transfer(id, { transaction: { mode: 'execute', transaction_id: tx } }, { scenario: c.scenario })),
              );
              // Invariant 2 (admission side).
              if (before !== undefined && (before.status === 'outcome_unknown' || before.status === 'reconciling')) {
                if (out.ok && out.value.disposition === 'accepted') violations.push(`execute admitted while ${before.status}`);
                if (provider.count('invoke', tx) !== invokesBefore) violations.push('execute invoked during admission');
              }
              break;
            }
            case 'reconcile':
              await attempt(
                h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: c.planned ? planTx(c.slot) : execTx(c.slot), reason: 'schedule' }),
              );
              break;
            case 'compensate':
              await attempt(h.runtime.submit(caller(), transfer(fresh('k'), { transaction: { mode: 'compensate', compensation_for: execOwner(c.slot) } })));
              break;
            case 'drive':
              if (c.crash !== null) h.crash.arm(c.crash);
              await h.drain();
              if (c.recover) {
                // The crashed attempt's lease runs out; the redelivered message recovers.
                h.crash.disarm();
                h.clock.advance(40_001);
                await h.drain();
              }
              break;
            case 'advance':
              h.clock.advance(c.ms);
              break;
            case 'sweep':
              await h.runtime.sweep(h.clock.now());
              await h.receiveReconciles();
              break;
          }
          h.crash.disarm();

          // Invariants 1, 4, 5 after every step.
          for (let s = 0; s < SLOTS; s++) {
            for (const tx of [planTx(s), execTx(s)]) {
              const rec = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
              if (rec === undefined) continue;
              const prev = revisions.get(tx) ?? 0;
              if (rec.revision < prev) violations.push(`${tx}: revision went from ${prev} to ${rec.revision}`);
              revisions.set(tx, rec.revision);
              const chain = await h.verifyChain(tx);
              if (!chain.valid) violations.push(`${tx}: receipt chain ${chain.problem} at ${chain.at_seq}`);
              // No blind retry: pay.transfer does not declare retry, so one execute transaction reaches the provider at most once.
              if (tx === execTx(s) && provider.count('invoke', tx) > 1) violations.push(`${tx}: invoked ${provider.count('invoke', tx)} times`);
              const w = winners.get(tx) ?? [];
              if (w.length > 1) violations.push(`${tx}: ${w.length} claim winners`);
              if (w.length === 1 && rec.mode === 'plan' && rec.status !== 'planned' && rec.status !== 'failed' && rec.action_id !== w[0]) {
                violations.push(`${tx}: bound to ${rec.action_id}, winner ${w[0]}`);
              }
            }
          }
          expect(violations).toEqual([]);
        }
        // Let everything queued finish (no crash), then re-check the chains.
        h.clock.advance(70_000);
        await h.drain();
        for (let s = 0; s < SLOTS; s++) {
          for (const tx of [planTx(s), execTx(s)]) {
            const rec = await h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
            if (rec !== undefined) expect((await h.verifyChain(tx)).valid).toBe(true);
          }
        }
        expect(violations).toEqual([]);
      }),
      { numRuns: 8, endOnFailure: true },
    );
  });
});
