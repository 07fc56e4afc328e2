/**
 * The operator console in a real browser (Debian's Chromium, driven by
 * playwright-core) against the local stack, over loopback: development
 * sign-in; an outcome_unknown charge (the provider's gateway answers 504
 * after committing) found in its list and followed to `reconciled` when its
 * schedule fires; a refused approval showing its RFC 9457 problem; and an
 * approver approving the pending commit of a plan, which commits.
 *
 * The tests synchronise on page state (Playwright's waiting locators) and on
 * the stack's queues (`stack.handled`); nothing sleeps. Each page is
 * photographed into docs/console/ (linked from the README).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { LocalStack } from '../../dev/local/start.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { charge, clientOf, consoleStack, devSignIn, launchBrowser, newPage, screenshot, uid } from './support.js';
import { HANG_MS } from '../support/wait.js';

const clock = new SteppedClock();
let stack: LocalStack;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [stack, browser] = await Promise.all([consoleStack('console', { clock }), launchBrowser()]);
  page = await newPage(browser);
  page.setDefaultTimeout(HANG_MS);
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** The signed-in user's view of the work list, refreshed. */
async function openView(view: string): Promise<void> {
  await page.locator(`a.tab[data-view="${view}"]`).click();
  await page.locator(`a.tab.active[data-view="${view}"]`).waitFor();
  await page.getByRole('button', { name: 'Refresh' }).click();
}

function workerDone(action_id: string) {
  return stack.handled('invoke', (m) => m.kind === 'invoke' && m.action_id === action_id);
}

describe('operator console', () => {
  it('offers the development sign-in and signs in', async () => {
    await page.goto(stack.consoleUrl as string);
    const form = page.getByRole('form', { name: 'Development sign-in' });
    await form.waitFor();
    await screenshot(page, 'sign-in');
    // An operator without the approver scope (the refused approval below needs one).
    await devSignIn(page, stack.consoleUrl as string, 'dev-operator', { drop: ['aip:approve'] });
    expect(await page.getByTestId('signed-in-as').textContent()).toBe('dev-operator');
    // The token is in sessionStorage only.
    expect(await page.evaluate("[sessionStorage.getItem('aip-console.session') !== null, localStorage.length]")).toEqual([true, 0]);
    await page.locator('a.tab.active[data-view="outcome_unknown"]').waitFor();
  });

  it('lists an outcome_unknown charge with the age of the oldest item, verifies its receipts, and shows it reconciled after its schedule fires', async () => {
    const user = clientOf(stack, await stack.mintToken());
    stack.simulator.setFaults([{ match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 }]);
    const id = uid('unknown');
    try {
      // The attempt runs in the submit (attempt_when_waited: inline, the local stack's default): it answers once settled.
      await user.submitAction(charge(id, 1_250, { mode: 'execute' }), { wait: 5 });
    } finally {
      stack.simulator.setFaults([]);
    }
    const state = await user.getAction(id);
    expect(state.transaction?.status).toBe('outcome_unknown');
    const txId = state.transaction?.transaction_id as string;
    const op = state.transaction?.provider_operation?.operation_id as string;

    await openView('outcome_unknown');
    const row = page.locator(`tr[data-transaction-id="${txId}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain(op);
    expect(Number((await page.getByTestId('count-outcome_unknown').textContent())?.replace('+', ''))).toBeGreaterThanOrEqual(1);
    expect(await page.getByTestId('oldest-outcome_unknown').textContent()).toMatch(/^oldest \d+(s|m \d+s)$/);
    await screenshot(page, 'stuck-work');

    await row.getByRole('link').click();
    await page.getByTestId('transaction-id').filter({ hasText: txId }).waitFor();
    await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
    expect(await page.getByTestId('transaction-status').textContent()).toBe('outcome_unknown');
    expect(await page.getByTestId('provider-operation').textContent()).toContain(op);
    expect(await page.getByTestId('connected-actions').textContent()).toContain(id);
    await screenshot(page, 'transaction-outcome-unknown');

    // Its one-time schedule fires (the Runtime's clock moved to its time): the reconcile consumer looks the operation up.
    const schedule = stack.scheduler.list().find((s) => (JSON.parse(s.target.Input as string) as { transaction_id?: string }).transaction_id === txId);
    expect(schedule).toBeDefined();
    const at = schedule?.at as Date;
    clock.advanceTo(at);
    const reconciled = stack.handled('reconcile', (m) => m.kind === 'reconcile' && m.transaction_id === txId);
    await stack.scheduler.fireDue(at);
    await reconciled;

    await page.getByRole('button', { name: 'Refresh' }).click();
    await page
      .getByTestId('transaction-status')
      .filter({ hasText: /^reconciled$/ })
      .waitFor();
    await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
    expect(await page.locator('ol.timeline li .badge').allTextContents()).toEqual(expect.arrayContaining(['outcome_unknown', 'reconciling', 'reconciled']));
    await screenshot(page, 'transaction-reconciled');
  });

  it('shows the typed problem when an approval is refused, then an approver approves the pending commit, which commits', async () => {
    const user = clientOf(stack, await stack.mintToken());
    const plan = await user.submitAction(charge(uid('plan'), 4_200, { mode: 'plan' }));
    const { plan_id } = plan.action_result.output as { plan_id: string };
    const commitId = uid('commit');
    const sub = await user.submitAction(charge(commitId, 4_200, { mode: 'commit', plan_id }));
    expect(sub.disposition).toBe('requires_human');
    const approvalId = (sub.action_result.metadata as { approval_id: string }).approval_id;

    // The operator without aip:approve: refused, and the page shows the problem's code, title and detail.
    await page.goto(`${stack.consoleUrl}#/work/pending_approvals`);
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.locator(`tr[data-approval-id="${approvalId}"]`);
    await row.getByRole('button', { name: 'Approve' }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve payments.charge?' });
    await dialog.getByLabel('Reason').fill('amount checked');
    await dialog.getByRole('button', { name: 'Confirm approval' }).click();
    const problem = dialog.locator('[data-testid="problem"][data-code="runtime.approver_forbidden"]');
    await problem.waitFor();
    expect(await problem.locator('.problem-code').textContent()).toBe('runtime.approver_forbidden');
    expect(await problem.locator('.problem-title').textContent()).not.toBe('');
    expect(await problem.locator('.problem-status').textContent()).toBe('HTTP 403');
    await screenshot(page, 'approval-refused');
    await dialog.getByRole('button', { name: 'Back' }).click();
    await dialog.waitFor({ state: 'hidden' });

    // An approver signs in (a new session) and approves.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await devSignIn(page, `${stack.consoleUrl}#/work/pending_approvals`, 'dev-approver');
    await page.locator('a.tab.active[data-view="pending_approvals"]').waitFor();
    await row.waitFor();
    await screenshot(page, 'pending-approvals');
    const committed = workerDone(commitId);
    await row.getByRole('button', { name: 'Approve' }).click();
    // The approver sees what the approval approves: the mode, the input and the plan's preview with its fidelity.
    await dialog.locator('[data-fact="mode"]').filter({ hasText: 'commit' }).waitFor();
    expect(await dialog.locator('[data-fact="input"]').textContent()).toContain('4200');
    expect(await dialog.locator('[data-fact="fidelity"]').textContent()).not.toBe('unknown');
    await dialog.getByLabel('Reason').fill('amount checked');
    await dialog.getByRole('button', { name: 'Confirm approval' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Approval ${approvalId} approved` })
      .waitFor();
    await row.waitFor({ state: 'detached' });
    await committed;

    await page.goto(`${stack.consoleUrl}#/actions/${encodeURIComponent(commitId)}`);
    await page
      .getByTestId('action-status')
      .filter({ hasText: /^completed$/ })
      .waitFor();
    await page.locator('dl.facts a').click();
    await page
      .getByTestId('transaction-status')
      .filter({ hasText: /^committed$/ })
      .waitFor();
    await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
    const events = await page.locator('ol.timeline li').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-event')));
    expect(events).toEqual(expect.arrayContaining(['transaction.planned', 'transaction.plan_claimed', 'transaction.settled.committed']));
    expect(await page.getByTestId('connected-actions').textContent()).toContain(commitId);
    await screenshot(page, 'transaction-committed');
  });
});
