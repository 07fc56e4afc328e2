/**
 * The console's operator actions on the runtime's operator routes
 * (`POST /v1/operator/transactions/{id}/reconcile` and `.../resolve`), in a
 * real browser against the local stack: "Reconcile now" on an
 * outcome_unknown charge, followed to `reconciled` by the page itself (it
 * long-polls the reconcile action); and "Resolve with evidence" on a record
 * escalated to a human, after which the timeline shows the resolution's
 * receipt with the operator's evidence and the chain still verifies.
 *
 * In every state these tests reach, the page's three buttons are enabled
 * exactly when the API accepts the request (lib/transactions/operator-actions.ts):
 * outcome_unknown, escalated, terminal; an action waiting for approval and a
 * cancelled one. Also: the stuck list's capability column, `#/work/approvals`,
 * the timeline (newest first, evidence shown once).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { LocalStack } from '../../dev/local/start.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { charge, clientOf, consoleStack, devSignIn, escalateCharge, launchBrowser, newPage, screenshot, uid, uncertainCharge } from './support.js';
import { HANG_MS } from '../support/wait.js';

const clock = new SteppedClock();
let stack: LocalStack;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  // One reconciliation attempt before a record escalates to a human (the resolve test needs an escalated record).
  [stack, browser] = await Promise.all([consoleStack('console-ops', { clock, runtimeSettings: { reconcile: { max_attempts: 1 } } }), launchBrowser()]);
  page = await newPage(browser);
  page.setDefaultTimeout(HANG_MS);
  await devSignIn(page, stack.consoleUrl as string, 'dev-operator');
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** A charge whose answer the provider's gateway loses after committing (test/console/support.ts). */
const uncertain = (probeFails: boolean) => uncertainCharge(stack, probeFails);
/** An uncertain charge whose operation cannot be found, escalated to a human (test/console/support.ts). */
const escalatedCharge = () => escalateCharge(stack, clock);

/** Which of the transaction page's operator buttons are enabled, once the action's status has been read. */
async function buttons(): Promise<{ reconcile: boolean; resolve: boolean; cancel: boolean }> {
  const group = page.getByRole('group', { name: 'Operator actions' });
  // The cancel button's state needs the action's status, read after the transaction.
  await page.locator('[role="group"][aria-label="Operator actions"]:not([data-action-status=""])').waitFor();
  const enabled = (name: string) => group.getByRole('button', { name }).isEnabled();
  return { reconcile: await enabled('Reconcile now'), resolve: await enabled('Resolve with evidence'), cancel: await enabled('Cancel action') };
}

/** The transaction with its receipts, as an operator reads it. */
async function view(txId: string) {
  return clientOf(stack, await stack.mintToken()).getTransaction({ transaction_id: txId }, { include: ['receipts'] });
}

async function openTransaction(txId: string): Promise<void> {
  await page.goto(`${stack.consoleUrl}#/transactions/${encodeURIComponent(txId)}`);
  await page.getByTestId('transaction-id').filter({ hasText: txId }).waitFor();
  await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
}

describe('operator actions', () => {
  it('reconciles now from the transaction page and follows it to reconciled', async () => {
    const txn = await uncertain(false);
    await openTransaction(txn.transaction_id);
    // outcome_unknown, not escalated: reconcile only (the action itself settled when its answer was lost).
    expect(await buttons()).toEqual({ reconcile: true, resolve: false, cancel: false });
    await page.getByText('Next reconcile').waitFor();
    // The timeline: newest first, and each receipt's evidence appears once (no second evidence list).
    const seqs = await page.locator('ol.timeline li').evaluateAll((lis) => lis.map((li) => Number(li.getAttribute('data-seq'))));
    expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
    expect(await page.locator('section[aria-label="Evidence"]').count()).toBe(0);
    await page.getByRole('button', { name: 'Reconcile now' }).click();
    const dialog = page.getByRole('dialog', { name: 'Reconcile now?' });
    await dialog.getByLabel('Reason').fill('customer asked; provider status page is green');
    await dialog.getByRole('button', { name: 'Confirm reconcile' }).click();
    await page.getByRole('status').filter({ hasText: 'Reconciliation finished: the transaction is reconciled.' }).waitFor();
    await page
      .getByTestId('transaction-status')
      .filter({ hasText: /^reconciled$/ })
      .waitFor();
    await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
    expect(await page.getByTestId('provider-operation').textContent()).toContain(txn.provider_operation?.operation_id as string);
    // Terminal: nothing left to do.
    expect(await buttons()).toEqual({ reconcile: false, resolve: false, cancel: false });
    await screenshot(page, 'reconcile-now');
  });

  it('resolves an escalated record with evidence, and shows the resolution receipt', async () => {
    const { txn, found } = await escalatedCharge();

    await page.goto(`${stack.consoleUrl}#/work/requires_human`);
    await page.getByRole('button', { name: 'Refresh' }).click();
    // The stuck list names the capability.
    expect(await page.locator(`tr[data-transaction-id="${txn.transaction_id}"]`).textContent()).toContain('payments.charge');
    await page.locator(`tr[data-transaction-id="${txn.transaction_id}"] a`).click();
    await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
    // Escalated: reconcile and resolve; no next reconciliation is shown (nothing is scheduled for a parked record).
    expect(await buttons()).toEqual({ reconcile: true, resolve: true, cancel: false });
    expect(await page.getByText('Next reconcile').count()).toBe(0);

    await page.getByRole('button', { name: 'Resolve with evidence' }).click();
    const dialog = page.getByRole('dialog', { name: 'Resolve with evidence?' });
    await dialog.getByLabel('committed (the effect happened)').check();
    await dialog.getByLabel('Provider', { exact: true }).fill('payments-simulator');
    await dialog.getByLabel('Operation ID').fill(found.operation_id);
    await dialog.getByLabel('Reason (required)').fill('charge found in the provider dashboard');
    await dialog.getByLabel('URI').fill(`https://dashboard.example.com/operations/${found.operation_id}`);
    await dialog.getByLabel('Description').fill('dashboard export');
    await screenshot(page, 'resolve-with-evidence');
    await dialog.getByRole('button', { name: 'Confirm resolution' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^(Resolved: the transaction is|A second operator must approve)/ })
      .waitFor();

    await page.locator('ol.timeline li').filter({ hasText: 'charge found in the provider dashboard' }).first().waitFor({ state: 'attached' });
    await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
    await screenshot(page, 'transaction-resolved');
  });

  it('a resolution the provider contradicts: the dialog shows the provider’s answer, and records it only overridden with a reason', async () => {
    const { txn, found } = await escalatedCharge();
    await openTransaction(txn.transaction_id);
    expect(await buttons()).toEqual({ reconcile: true, resolve: true, cancel: false });
    await page.getByRole('button', { name: 'Resolve with evidence' }).click();
    const dialog = page.getByRole('dialog', { name: 'Resolve with evidence?' });
    await dialog.getByLabel('not committed (it did not happen)').check();
    await dialog.getByLabel('Reason (required)').fill('the customer sees no debit');
    await dialog.getByRole('button', { name: 'Confirm resolution' }).click();
    // Refused: the provider (asked by the runtime) says the charge happened.
    const contradiction = dialog.getByTestId('provider-contradiction');
    await contradiction.waitFor();
    expect(await dialog.getByTestId('problem').getAttribute('data-code')).toBe('operator.resolution_contradicts_provider');
    const said = await contradiction.textContent();
    expect(said).toContain('The provider says committed');
    expect(said).toContain(found.operation_id);
    expect(said).toContain('this resolution says not_committed');
    expect((await view(txn.transaction_id)).status).toBe('requires_human');
    // Overriding needs a reason of its own before it can be confirmed.
    await contradiction.getByLabel('Override the provider’s answer').check();
    const confirm = dialog.getByRole('button', { name: 'Confirm resolution against the provider' });
    expect(await confirm.isEnabled()).toBe(false);
    await contradiction.getByLabel('Why the provider’s answer is wrong (required)').fill('charge reversed by hand in INC-7; the provider ledger lags');
    expect(await confirm.isEnabled()).toBe(true);
    await screenshot(page, 'resolve-contradicted');
    await confirm.click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Resolved: the transaction is reconciled/ })
      .waitFor();
    await page.locator('ol.timeline li').filter({ hasText: 'charge reversed by hand in INC-7' }).first().waitFor({ state: 'attached' });
    await page.locator('[data-testid="verdict"][data-verdict="valid"]').waitFor();
    const after = await view(txn.transaction_id);
    expect(after.status).toBe('reconciled');
    expect(after.receipts?.at(-1)).toMatchObject({ evidence: { provider_verdict: 'overridden', provider_answer: { obtained: true, effect: 'committed' } } });
  });

  it('enables cancel on an action waiting for approval and not once it is cancelled; #/work/approvals opens the pending approvals', async () => {
    const user = clientOf(stack, await stack.mintToken());
    const plan = await user.submitAction(charge(uid('plan'), 1_700, { mode: 'plan' }));
    const { plan_id } = plan.action_result.output as { plan_id: string };
    const commitId = uid('commit');
    const sub = await user.submitAction(charge(commitId, 1_700, { mode: 'commit', plan_id }));
    expect(sub.disposition).toBe('requires_human');
    const approvalId = (sub.action_result.metadata as { approval_id: string }).approval_id;

    await page.goto(`${stack.consoleUrl}#/work/approvals`);
    await page.locator('a.tab.active[data-view="pending_approvals"]').waitFor();
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator(`tr[data-approval-id="${approvalId}"]`).waitFor();

    await page.goto(`${stack.consoleUrl}#/actions/${encodeURIComponent(commitId)}`);
    await page
      .getByTestId('action-status')
      .filter({ hasText: /^requires_human$/ })
      .waitFor();
    const cancel = page.getByRole('button', { name: 'Cancel action' });
    expect(await cancel.isEnabled()).toBe(true);
    await cancel.click();
    await page.getByRole('dialog', { name: 'Cancel this action?' }).getByRole('button', { name: 'Confirm cancel' }).click();
    await page
      .getByTestId('action-status')
      .filter({ hasText: /^cancelled$/ })
      .waitFor();
    expect(await cancel.isEnabled()).toBe(false);
  });
});
