/**
 * Transactions page: "Action context carries the transaction intent" and the
 * admission pipeline order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveTransactionId } from '../../../lib/runtime/kernel.js';
import { uid } from '../../support/transaction-fixtures.js';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { OTHER_TENANT, TENANT, caller, codeOf, createHarness, errorOf, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();
beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)], prefix: 'rt-adm' });
});
afterAll(async () => h.destroy());

const record = (tx: string) => h.table.store.get({ tenant_id: TENANT, transaction_id: tx });
const request = (action: Record<string, unknown>, tx: string, extra: Record<string, unknown> = {}) => ({
  action,
  transaction_id: tx,
  requested_by: caller().principal,
  ...extra,
});

describe('Action context carries the transaction intent', () => {
  it('the native request path checks that the requested_by ID matches the runtime principal ID', async () => {
    const tx = uid('tx');
    const err = await errorOf(
      h.runtime.submit(
        caller(),
        request(transfer(uid('a'), { transaction: { mode: 'execute' } }), tx, { requested_by: { id: 'someone-else', kind: 'agent' } }),
      ),
    );
    expect(err.code).toBe('runtime.requester_mismatch');
    expect(err.httpStatus).toBe(403);
    expect(await record(tx)).toBeUndefined();
  });

  it('the wrapper transaction ID must match the action transaction ID when both are present', async () => {
    const tx = uid('tx');
    expect(await codeOf(h.runtime.submit(caller(), request(transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: uid('other') } }), tx)))).toBe(
      'envelope.transaction_id_mismatch',
    );
    expect(await record(tx)).toBeUndefined();
  });

  it('if the action omits the ID, the runtime copies the wrapper value into the action', async () => {
    const tx = uid('tx');
    const a = uid('a');
    const out = await h.runtime.submit(caller(), request(transfer(a, { transaction: { mode: 'execute' } }), tx));
    expect(out.transaction_result?.transaction_id).toBe(tx);
    expect((await h.stores.actions.get({ tenant_id: TENANT, action_id: a }))?.action.transaction?.transaction_id).toBe(tx);
    await h.drain();
    expect((await record(tx))?.status).toBe('committed');
  });

  it('the ordinary action path creates a transaction ID when a mode needs one', async () => {
    const a = uid('a');
    await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute' } }));
    const generated = deriveTransactionId(TENANT, a);
    expect((await record(generated))?.action_id).toBe(a);
    await h.drain();
  });

  it('a commit can recover the transaction ID from the referenced plan', async () => {
    const tx = uid('tx');
    await h.runtime.submit(caller(), transfer(uid('p'), { transaction: { mode: 'plan', transaction_id: tx } }));
    const c = uid('c');
    await h.runtime.submit(caller(), transfer(c, { transaction: { mode: 'commit', plan_id: `plan:${tx}` } }));
    expect((await h.stores.actions.get({ tenant_id: TENANT, action_id: c }))?.transaction_id).toBe(tx);
    await h.drain();
  });

  it('the wrapper and the ordinary path share capability lookup, schema checks, authorization, approval, idempotency, transaction admission and handler execution', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [transfer(uid('a'), { capability_id: 'pay.none', transaction: { mode: 'execute' } }), 'capability.not_found'],
      [transfer(uid('a'), { transaction: { mode: 'execute' } }, { amount: -1 }), 'runtime.input_invalid'],
    ];
    for (const [action, code] of cases) {
      expect(await codeOf(h.runtime.submit(caller(), action))).toBe(code);
      expect(await codeOf(h.runtime.submit(caller(), request(action, uid('tx'))))).toBe(code);
    }
    const noScope = { ...caller(), scopes: [] };
    expect(await codeOf(h.runtime.submit(noScope, transfer(uid('a'), { transaction: { mode: 'execute' } })))).toBe('runtime.scope_missing');
    expect(await codeOf(h.runtime.submit(noScope, request(transfer(uid('a'), { transaction: { mode: 'execute' } }), uid('tx'))))).toBe('runtime.scope_missing');
    const approvalNative = await h.runtime.submit(caller(), { ...transfer(uid('a'), { transaction: { mode: 'execute' } }), capability_id: 'pay.approved' });
    const approvalWrapped = await h.runtime.submit(
      caller(),
      request({ ...transfer(uid('a'), { transaction: { mode: 'execute' } }), capability_id: 'pay.approved' }, uid('tx')),
    );
    expect([approvalNative.disposition, approvalWrapped.disposition]).toEqual(['requires_human', 'requires_human']);
  });

  it('the wrapper adds a TransactionResult and the receipt chain; it is not a second transaction engine', async () => {
    const txNative = uid('tx');
    const txWrapped = uid('tx');
    const native = await h.runtime.submit(caller(), transfer(uid('a'), { transaction: { mode: 'execute', transaction_id: txNative } }));
    const wrapped = await h.runtime.submit(caller(), request(transfer(uid('a'), { transaction: { mode: 'execute' } }), txWrapped));
    expect(native.transaction_result).toBeUndefined();
    expect(wrapped.transaction_result).toMatchObject({ transaction_id: txWrapped, status: 'prepared' });
    await h.drain();
    const [r1, r2] = [await record(txNative), await record(txWrapped)];
    expect(r1?.status).toBe(r2?.status);
    expect(r1?.receipt_count).toBe(r2?.receipt_count); // both paths append the same receipts
    expect((await h.verifyChain(txNative)).valid).toBe(true);
  });

  it('public envelopes first pass the core message validator', async () => {
    expect(await codeOf(h.runtime.submit(caller(), { id: 'x', capability_id: 'pay.transfer' }))).toBe('envelope.invalid');
    expect(await codeOf(h.runtime.submit(caller(), { ...transfer(uid('a')), surprise: true }))).toBe('envelope.invalid');
    expect(await codeOf(h.runtime.submit(caller(), JSON.parse('{"id":"a","capability_id":"c","input":{"__proto__":{}}}')))).toBe('envelope.forbidden_key');
  });
});

describe('Identity comes from the verified caller, never from the body', () => {
  it('the action tenant must be one of the caller memberships', async () => {
    const a = uid('a');
    expect(await codeOf(h.runtime.submit(caller(), { ...transfer(a), identity: { tenant_id: OTHER_TENANT } }))).toBe('runtime.tenant_forbidden');
    expect(await h.stores.actions.get({ tenant_id: OTHER_TENANT, action_id: a })).toBeUndefined();
  });

  it('identity.user_id must name the verified caller: another user is runtime.identity_mismatch and nothing is written', async () => {
    for (const mode of [undefined, 'execute', 'plan'] as const) {
      const a = uid('a');
      const action = { ...transfer(a, mode !== undefined ? { transaction: { mode } } : {}), identity: { tenant_id: TENANT, user_id: 'someone-else' } };
      expect(await codeOf(h.runtime.submit(caller(), action))).toBe('runtime.identity_mismatch');
      expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: a })).toBeUndefined();
    }
    // The caller's own ID is accepted, whichever kind its token claims.
    const own = uid('a');
    const out = await h.runtime.submit(
      { ...caller(), principal: { id: 'agent-1', kind: 'user' } },
      {
        ...transfer(own, { transaction: { mode: 'dry_run' } }),
        identity: { tenant_id: TENANT, user_id: 'agent-1' },
      },
    );
    expect(out.action_result.status).toBe('completed');
  });

  it('a caller in several tenants must name one', async () => {
    const multi = caller('agent-1', { tenants: [TENANT, OTHER_TENANT] });
    const { identity: _i, ...noIdentity } = transfer(uid('a'));
    expect(await codeOf(h.runtime.submit(multi, noIdentity))).toBe('runtime.tenant_required');
    expect((await h.runtime.submit(multi, noIdentity, { tenant_id: TENANT })).tenant_id).toBe(TENANT);
    await h.drain();
  });

  it('an expired caller identity is rejected', async () => {
    const expired = caller('agent-1', { expires_at: new Date(Date.parse(h.clock.iso()) - 1).toISOString() });
    expect(await codeOf(h.runtime.submit(expired, transfer(uid('a'))))).toBe('runtime.caller_expired');
  });

  it('the recorded principal is the verified caller', async () => {
    const a = uid('a');
    await h.runtime.submit(caller('agent-7'), { ...transfer(a), capability_id: 'pay.echo' });
    expect((await h.stores.actions.get({ tenant_id: TENANT, action_id: a }))?.principal).toEqual({ id: 'agent-7', kind: 'agent' });
    await h.drain();
  });

  it('bad input gets a typed 4xx and no partial writes', async () => {
    const a = uid('a');
    const err = await errorOf(h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'execute' } }, { to: '' })));
    expect(err.httpStatus).toBeLessThan(500);
    expect(await h.stores.actions.get({ tenant_id: TENANT, action_id: a })).toBeUndefined();
    expect(await record(deriveTransactionId(TENANT, a))).toBeUndefined();
  });

  it('a resubmission with the same action ID but another action is a conflict naming the fields', async () => {
    const a = uid('a');
    await h.runtime.submit(caller(), { ...transfer(a), capability_id: 'pay.echo' });
    const err = await errorOf(h.runtime.submit(caller(), { ...transfer(a, {}, { amount: 5 }), capability_id: 'pay.echo' }));
    expect(err.code).toBe('runtime.action_conflict');
    expect(err.details.fields).toEqual(['input']);
    await h.drain();
  });
});

describe('rollback_not_supported', () => {
  it('runs through invoke_typed and leaves a durable rollback_not_supported record', async () => {
    const tx = uid('tx');
    const a = uid('a');
    const out = await h.runtime.submit(caller(), transfer(a, { transaction: { mode: 'rollback_not_supported', transaction_id: tx } }));
    expect(out.disposition).toBe('accepted');
    expect((await record(tx))?.status).toBe('rollback_not_supported');
    await h.drain();
    expect(provider.calls.find((c) => c.action_id === a)?.method).toBe('invoke');
    expect((await h.runtime.getAction(caller(), TENANT, a)).action_result.status).toBe('completed');
    expect((await record(tx))?.status).toBe('rollback_not_supported');
  });
});
