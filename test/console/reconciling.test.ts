/**
 * The operator console on a transaction in `reconciling`, in a real browser
 * against the local stack: a reconciliation is asking the provider, which
 * holds its answer (a latency fault released by the test, never a sleep).
 * The page says so, lists it under "Reconciling", and offers no operator
 * action: the API refuses reconcile (`runtime.reconcile_not_outcome_unknown`)
 * and resolve (`runtime.resolve_not_escalated`) in this state
 * (lib/transactions/operator-actions.ts), and the original action has
 * finished, so there is nothing to cancel. Once the provider answers, the
 * record is `reconciled`.
 *
 * The reconciliation is run by the test (`runtime.reconcile`, as the
 * reconcile consumer does, without a function's time budget) with a
 * capability timeout longer than any hang, so the record stays `reconciling`
 * exactly until the test releases the provider.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { LocalStack } from '../../dev/local/start.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { mayCancel, mayReconcile, mayResolve } from '../../lib/transactions/operator-actions.js';
import { charge, clientOf, consoleStack, devSignIn, launchBrowser, newPage, screenshot, uid } from './support.js';
import { HANG_MS } from '../support/wait.js';

const clock = new SteppedClock();
let stack: LocalStack;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  // Capability timeouts of ten minutes: a held lookup ends when the test releases it, not at a deadline. Neither the
  // schedules nor the sweeper fire on their own: the one reconciliation is the test's.
  [stack, browser] = await Promise.all([
    consoleStack('console-rcn', { clock, payments: { timeoutMs: 600_000 }, schedulerAutoFire: false, sweepIntervalMs: 0 }),
    launchBrowser(),
  ]);
  page = await newPage(browser);
  page.setDefaultTimeout(HANG_MS);
  await devSignIn(page, stack.consoleUrl as string, 'dev-operator');
});
afterAll(async () => {
  stack?.simulator.releaseDelays();
  await browser?.close();
  await stack?.stop();
});

/** A charge whose answer the provider's gateway loses after committing it: outcome_unknown, no operation checkpointed. */
async function uncertain() {
  const user = clientOf(stack, await stack.mintToken());
  stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
  const id = uid('charge');
  try {
    // The attempt runs in the submit (attempt_when_waited: inline, the local stack's default): it answers once settled.
    await user.submitAction(charge(id, 4_200, { mode: 'execute' }), { wait: 5 });
  } finally {
    stack.simulator.setFaults([]);
  }
  const state = await user.getAction(id);
  expect(state.transaction?.status).toBe('outcome_unknown');
  return state.transaction as NonNullable<typeof state.transaction>;
}

async function buttons(): Promise<{ reconcile: boolean; resolve: boolean; cancel: boolean }> {
  const group = page.getByRole('group', { name: 'Operator actions' });
  await page.locator('[role="group"][aria-label="Operator actions"]:not([data-action-status=""])').waitFor();
  const enabled = (name: string) => group.getByRole('button', { name }).isEnabled();
  return { reconcile: await enabled('Reconcile now'), resolve: await enabled('Resolve with evidence'), cancel: await enabled('Cancel action') };
}

describe('a transaction in reconciling', () => {
  it('is shown as reconciling, listed under Reconciling, with no operator action offered; then reconciled once the provider answers', async () => {
    const txn = await uncertain();
    const id = txn.transaction_id;
    const operator = clientOf(stack, await stack.mintToken());

    // The provider holds its answer to the reconciliation's lookup until the test releases it.
    stack.simulator.setFaults([
      { match: { method: 'GET', path: '/v1/operations*' }, fault: { type: 'latency', ms: 3_600_000, phase: 'before_commit' }, times: 1 },
    ]);
    const held = stack.simulator.waitForEvent((e) => e.type === 'fault_applied' && e.fault.type === 'latency');
    // Due now: the reconciliation the consumer would run, run here (its promise settles once the provider answers).
    clock.advance(20 * 60_000);
    const reconciled = stack.runtime.reconcile({ kind: 'reconcile', tenant_id: stack.tenant, transaction_id: id, reason: 'sweeper' });
    try {
      await held;
      const during = await operator.getTransaction({ transaction_id: id });
      expect(during.status).toBe('reconciling');
      // The table the console enables its buttons from says: nothing.
      expect(mayReconcile({ status: 'reconciling', escalated: false })).toBe(false);
      expect(mayResolve({ status: 'reconciling', escalated: false })).toBe(false);
      const action = await operator.getAction(txn.links?.action_id as string);
      expect(mayCancel(action.action_result.status)).toBe(false);

      // Listed under Reconciling.
      await page.goto(`${stack.consoleUrl}#/work/reconciling`);
      await page.locator('a.tab.active[data-view="reconciling"]').waitFor();
      await page.getByRole('button', { name: 'Refresh' }).click();
      const row = page.locator(`tr[data-transaction-id="${id}"]`);
      await row.waitFor();
      expect(await row.textContent()).toContain('reconciling');
      expect(await row.textContent()).toContain('payments.charge');

      // The transaction page: its status, what is going on, and no action offered.
      await row.locator('a').click();
      await page.getByTestId('transaction-id').filter({ hasText: id }).waitFor();
      await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
      expect(await page.getByTestId('transaction-status').textContent()).toBe('reconciling');
      expect(await buttons()).toEqual({ reconcile: false, resolve: false, cancel: false });
      const note = await page.getByTestId('reconciling-note').textContent();
      expect(note).toContain('A reconciliation is asking the provider now');
      expect(note).toContain('nothing to reconcile, resolve or cancel');
      // No next reconciliation is promised while one runs; nor is it escalated.
      expect(await page.getByText('Next reconcile').count()).toBe(0);
      expect(await page.locator('.badge.escalated').count()).toBe(0);
      await screenshot(page, 'transaction-reconciling');

      // What the disabled buttons stand for: the API refuses both operator routes in this state.
      const refusal = async (p: Promise<unknown>) =>
        p.then(
          () => undefined,
          (err: { code?: string }) => err.code,
        );
      expect(await refusal(operator.operatorReconcile(id, { reason: 'again' }))).toBe('runtime.reconcile_not_outcome_unknown');
      expect(await refusal(operator.operatorResolve(id, { effect: 'committed', reason: 'found it' }))).toBe('runtime.resolve_not_escalated');
    } finally {
      stack.simulator.releaseDelays();
    }

    // The provider answers: the reconciliation settles the record.
    expect((await reconciled).disposition).toBe('reconciled');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page
      .getByTestId('transaction-status')
      .filter({ hasText: /^reconciled$/ })
      .waitFor();
    expect(await page.getByTestId('reconciling-note').count()).toBe(0);
    expect(await buttons()).toEqual({ reconcile: false, resolve: false, cancel: false });
  });
});
