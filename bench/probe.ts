import { createHarness, startEmulators, uid, TENANT } from './lib/harness.js';
import { summarize, traceLine } from './lib/meter.js';
Error.stackTraceLimit = 60;
const em = await startEmulators();
const T0=performance.now();
try {
  const h = await createHarness(em);
  h.meter.captureSites = true;
  const show = async (label: string, fn: () => Promise<unknown>) => {
    const m = h.meter.mark();
    const r = await fn();
    console.log(label, JSON.stringify(r).slice(0, 300));
    for (const c of h.meter.since(m)) console.log('  ', traceLine(c));
  };
  const key = uid('k');
  em.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges', idempotency_key: undefined as any }, fault: 'drop_after_commit', times: 1 } as any]);
  const a = { id: uid('act'), capability_id: 'payments.charge', input: { amount: 1250, currency: 'eur' }, idempotency_key: key, transaction: { mode: 'execute' } };
  await show('submit', () => h.runtime.submit(h.caller, a));
  await show('attempt', () => h.drain());
  const txId = (await h.transactions.get({ tenant_id: TENANT, action_id: a.id }))!.transaction_id;
  const rec = await h.transactions.get({ tenant_id: TENANT, transaction_id: txId });
  console.log('status', rec?.status, rec?.provider_operation, rec?.next_reconcile_at);
  h.clock.advance(10_000);
  await show('reconcile', () => h.runtime.reconcile({ kind: 'reconcile', tenant_id: TENANT, transaction_id: txId, reason: 'schedule' }));
  // compensate
  const a2 = { id: uid('act'), capability_id: 'payments.charge', input: { amount: 1250, currency: 'eur' }, idempotency_key: uid('k'), transaction: { mode: 'execute' } };
  await h.runtime.submit(h.caller, a2); const o2 = await h.drain();
  const charge_id = (o2[0]!.action_result as any).output.charge_id;
  const c = { id: uid('cmp'), capability_id: 'payments.charge', input: { charge_id }, idempotency_key: uid('k'), transaction: { mode: 'compensate', compensation_for: a2.id } };
  await show('compensate submit', () => h.runtime.submit(h.caller, c));
  await show('compensate attempt', () => h.drain());
  // plan / commit
  const p = { id: uid('pln'), capability_id: 'payments.charge', input: { amount: 900, currency: 'eur' }, transaction: { mode: 'plan' } };
  let planOut: any;
  await show('plan', async () => (planOut = await h.runtime.submit(h.caller, p)));
  const plan_id = planOut.action_result.output.plan_id;
  const cm = { id: uid('cmt'), capability_id: 'payments.charge', input: { amount: 900, currency: 'eur' }, idempotency_key: uid('k'), transaction: { mode: 'commit', plan_id } };
  await show('commit submit', () => h.runtime.submit(h.caller, cm));
  await show('commit attempt', () => h.drain());
  const d = { id: uid('dry'), capability_id: 'payments.charge', input: { amount: 900, currency: 'eur' }, transaction: { mode: 'dry_run' } };
  await show('dry_run', () => h.runtime.submit(h.caller, d));
  await show('replay new id', () => h.runtime.submit(h.caller, { ...a, id: uid('rep') }));
  await show('replay same id', () => h.runtime.submit(h.caller, a));
  await show('get txn receipts', () => h.runtime.getTransaction(h.caller, { tenant_id: TENANT, transaction_id: txId }, { receipts: true, result: true }));
  await show('getAction', () => h.runtime.getAction(h.caller, TENANT, a.id));
  console.log('elapsed', performance.now()-T0);
  await h.destroy();
} finally { await em.stop(); }
