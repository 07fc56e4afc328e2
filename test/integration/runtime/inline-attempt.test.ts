/**
 * The first attempt inside the submit when the client waits (lib/runtime/pipeline/inline-attempt.ts,
 * docs/runtime.md "The attempt inside the submit when the client waits"): a waited fresh admission whose attempt
 * fits the function's remaining time runs it in the submit, through the worker's own code, and sends no invoke
 * message; everything else goes through the queue, and so does every retry. A submit that dies inside the attempt
 * leaves a record the sweeper re-drives through the queue to exactly one settlement.
 *
 * Real parts: every record on DynamoDB Local, the invoke queue on fauxqs (the harness, ./support.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AipError } from '../../../packages/connector-sdk/src/errors/aip-error.js';
import type { UnitOfWork } from '../../../lib/ports/unit-of-work.js';
import { Runtime } from '../../../lib/runtime/runtime.js';
import type { WaitingClient } from '../../../lib/runtime/types.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, codeOf, createHarness, type Harness } from './support.js';

const provider = new TestProvider();
let h: Harness;
let queued: Harness;
const LEASE = 10_000 + 30_000; // pay.transfer's timeout + the lease margin
const STALL = 60_000;

beforeAll(async () => {
  [h, queued] = await Promise.all([
    createHarness({ connectors: [testConnector(provider)], prefix: 'rt-inline', config: { stall_after_ms: STALL } }),
    createHarness({ connectors: [testConnector(provider)], prefix: 'rt-inline-off', config: { attempt_when_waited: 'queue' } }),
  ]);
});
afterAll(async () => Promise.all([h.destroy(), queued.destroy()]));

/** A client waiting 5 s in a function with `remaining` ms left (the API function's 29 s, about, by default). */
const waiting = (remaining = 28_000): WaitingClient => ({ wait_ms: 5_000, remaining_ms: () => remaining });

function execute(input: Record<string, unknown> = {}) {
  const a = uid('a');
  const tx = uid('tx');
  return { a, tx, body: transfer(a, { transaction: { mode: 'execute', transaction_id: tx } }, input) };
}

const record = (x: Harness, tx: string) => x.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const action = (x: Harness, a: string) => x.stores.actions.get({ tenant_id: TENANT, action_id: a });

describe('the first attempt inside the submit when the client waits', () => {
  it('a waited execute settles in the submit: no invoke message, one provider call, the settled state as getAction shows it', async () => {
    const { a, tx, body } = execute();
    const out = await h.runtime.submit(caller(), body, { waiting: waiting() });
    expect(out.disposition).toBe('accepted');
    expect(out.settled?.action_result.status).toBe('completed');
    expect(out.settled?.transaction?.status).toBe('committed');
    // The answer is the one a wait's poll would have read.
    expect(out.settled).toEqual(await h.runtime.getAction(caller(), TENANT, a));
    expect(await h.receiveInvokes()).toEqual([]);
    expect(provider.count('invoke', tx)).toBe(1);
    expect((await record(h, tx))?.status).toBe('committed');
    expect((await action(h, a))?.fence).toBe(1);
    expect((await h.verifyChain(tx)).valid).toBe(true);
  });

  it('an uncertain answer settles outcome_unknown in the submit and schedules the reconciliation, as the worker does', async () => {
    const { a, tx, body } = execute({ scenario: 'uncertain' });
    const out = await h.runtime.submit(caller(), body, { waiting: waiting() });
    expect(out.settled?.transaction?.status).toBe('outcome_unknown');
    expect(out.settled).toEqual(await h.runtime.getAction(caller(), TENANT, a));
    expect(await h.receiveInvokes()).toEqual([]);
    expect(h.scheduler.for(tx)).toHaveLength(1);
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('an execute nobody waits on is enqueued as before, with the admission images', async () => {
    const { tx, body } = execute();
    const out = await h.runtime.submit(caller(), body);
    expect(out.settled).toBeUndefined();
    const messages = await h.receiveInvokes();
    expect(messages.map((m) => m.message.transaction_id)).toEqual([tx]);
    expect(messages[0]?.message.admitted).toBeDefined();
    expect(provider.count('invoke', tx)).toBe(0);
    await h.runtime.runAttempt(messages[0]!.message);
    expect((await record(h, tx))?.status).toBe('committed');
  });

  it('a capability whose attempt does not fit the function time left is enqueued even when waited', async () => {
    const { tx, body } = execute();
    // 10 s attempt timeout + 10 s settlement margin > 19 s left.
    const out = await h.runtime.submit(caller(), body, { waiting: waiting(19_000) });
    expect(out.settled).toBeUndefined();
    const messages = await h.receiveInvokes();
    expect(messages.map((m) => m.message.transaction_id)).toEqual([tx]);
    expect(provider.count('invoke', tx)).toBe(0);
    expect((await record(h, tx))?.status).toBe('prepared');
    await h.runtime.runAttempt(messages[0]!.message);
    expect((await record(h, tx))?.status).toBe('committed');
  });

  it('an inline attempt that ends without a settlement (a store error at its lease) sends the invoke message: the retry runs in the worker', async () => {
    let failed = false;
    const uow: UnitOfWork = {
      commit: async (intents) => {
        if (!failed && intents.some((i) => i.kind === 'action.lease')) {
          failed = true;
          throw new AipError('transaction.store_unavailable');
        }
        return h.readDeps.uow.commit(intents);
      },
    };
    const flaky = new Runtime({ ...h.readDeps, uow, registry: h.registry, connectors: h.connectors });
    const { a, tx, body } = execute();
    const out = await flaky.submit(caller(), body, { waiting: waiting() });
    expect(failed).toBe(true);
    expect(out.disposition).toBe('accepted');
    expect(out.settled).toBeUndefined();
    expect(provider.count('invoke', tx)).toBe(0);
    const messages = await h.receiveInvokes();
    expect(messages.map((m) => m.message.action_id)).toEqual([a]);
    // IDs only: the worker reads the records.
    expect(messages[0]?.message.admitted).toBeUndefined();
    expect((await h.runtime.runAttempt(messages[0]!.message)).disposition).toBe('settled');
    expect((await record(h, tx))?.status).toBe('committed');
    expect(provider.count('invoke', tx)).toBe(1);
  });

  it('a submit that dies inside the attempt before its lease: the sweeper re-drives the record through the queue to one settlement', async () => {
    const { a, tx, body } = execute();
    h.crash.arm('after_receive_before_lease');
    expect(await codeOf(h.runtime.submit(caller(), body, { waiting: waiting() }))).toBe('runtime.crash_injected');
    expect(await h.receiveInvokes()).toEqual([]);
    expect((await record(h, tx))?.status).toBe('prepared');
    expect((await action(h, a))?.status).toBe('accepted');
    h.clock.advance(STALL + 1);
    await h.runtime.sweep(h.clock.now());
    expect((await h.drain()).map((o) => o.disposition)).toEqual(['settled']);
    expect((await record(h, tx))?.status).toBe('committed');
    expect(provider.count('invoke', tx)).toBe(1);
    expect(await h.drain()).toEqual([]);
  });

  it('a submit that dies after the provider call: once the lease expires the sweeper re-drives it, and the worker settles outcome_unknown without calling again', async () => {
    const { a, tx, body } = execute();
    h.crash.arm('after_response_before_settlement');
    expect(await codeOf(h.runtime.submit(caller(), body, { waiting: waiting() }))).toBe('runtime.crash_injected');
    expect(await h.receiveInvokes()).toEqual([]);
    expect(provider.count('invoke', tx)).toBe(1);
    expect((await action(h, a))?.status).toBe('running');
    // The lease is live: the sweeper leaves the action alone until it expires.
    h.clock.advance(LEASE - 1_000);
    await h.runtime.sweep(h.clock.now());
    expect(await h.receiveInvokes()).toEqual([]);
    h.clock.advance(STALL);
    await h.runtime.sweep(h.clock.now());
    expect((await h.drain()).map((o) => o.disposition)).toEqual(['recovered_outcome_unknown']);
    expect((await record(h, tx))?.status).toBe('outcome_unknown');
    expect(provider.count('invoke', tx)).toBe(1);
    expect(h.scheduler.for(tx)).toHaveLength(1);
    expect(await h.drain()).toEqual([]);
  });

  it('a plain invocation (no transaction mode) is enqueued even when waited', async () => {
    const a = uid('a');
    const out = await h.runtime.submit(caller(), { ...transfer(a), capability_id: 'pay.echo' }, { waiting: waiting() });
    expect(out.settled).toBeUndefined();
    const messages = await h.receiveInvokes();
    expect(messages.map((m) => m.message.action_id)).toEqual([a]);
    await h.runtime.runAttempt(messages[0]!.message);
  });

  it("with attempt_when_waited 'queue' a waited execute is enqueued, as before", async () => {
    const { tx, body } = execute();
    const out = await queued.runtime.submit(caller(), body, { waiting: waiting() });
    expect(out.settled).toBeUndefined();
    expect((await queued.receiveInvokes()).map((m) => m.message.transaction_id)).toEqual([tx]);
    expect(provider.count('invoke', tx)).toBe(0);
  });
});
