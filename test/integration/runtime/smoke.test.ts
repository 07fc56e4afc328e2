import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestProvider, testConnector, transfer } from './connectors.js';
import { TENANT, caller, createHarness, type Harness } from './support.js';

let h: Harness;
const provider = new TestProvider();

beforeAll(async () => {
  h = await createHarness({ connectors: [testConnector(provider)] });
});
afterAll(async () => h.destroy());

describe('vertical slice', () => {
  it('execute: submit admits and enqueues, the worker settles committed', async () => {
    const out = await h.runtime.submit(caller(), transfer('a-1', { transaction: { mode: 'execute', transaction_id: 'tx-1' } }));
    expect(out.disposition).toBe('accepted');
    const attempts = await h.drain();
    expect(attempts.map((a) => a.disposition)).toEqual(['settled']);
    const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, transaction_id: 'tx-1' }, { result: true, receipts: true });
    expect(view.status).toBe('committed');
    expect(view.receipts?.length).toBeGreaterThan(2);
    expect((await h.verifyChain('tx-1')).valid).toBe(true);
  });

  it('plan then commit', async () => {
    const planned = await h.runtime.submit(caller(), transfer('p-1', { transaction: { mode: 'plan', transaction_id: 'tx-2' } }));
    expect(planned.disposition).toBe('completed');
    const commit = await h.runtime.submit(caller(), transfer('c-1', { transaction: { mode: 'commit', plan_id: 'plan:tx-2' } }));
    expect(commit.disposition).toBe('accepted');
    await h.drain();
    const view = await h.runtime.getTransaction(caller(), { tenant_id: TENANT, plan_id: 'plan:tx-2' });
    expect(view.status).toBe('committed');
  });
});
