/**
 * A four-eyes resolution in the console (`resolution.four_eyes`), in a real
 * browser against the local stack: one operator proposes the resolution of
 * an escalated charge (the runtime asks the provider and records its answer
 * with the proposal); the second operator opens the proposal from the
 * pending approvals and, before approving, sees what the provider answered
 * when it was proposed, and the verdict. Approving asks the provider again
 * and applies the resolution.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { LocalStack } from '../../dev/local/start.js';
import { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { clientOf, consoleStack, devSignIn, escalateCharge, launchBrowser, newPage, screenshot } from './support.js';
import { HANG_MS } from '../support/wait.js';

const clock = new SteppedClock();
let stack: LocalStack;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [stack, browser] = await Promise.all([
    consoleStack('console-4eyes', { clock, runtimeSettings: { reconcile: { max_attempts: 1 }, resolution: { four_eyes: true } } }),
    launchBrowser(),
  ]);
  page = await newPage(browser);
  page.setDefaultTimeout(HANG_MS);
  await devSignIn(page, stack.consoleUrl as string, 'dev-operator');
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe('four eyes', () => {
  it("the second operator sees the provider's answer at proposal time before approving; approving applies the resolution", async () => {
    const { txn, found } = await escalateCharge(stack, clock);
    const first = clientOf(stack, await stack.mintToken({ sub: 'ops-first' }));
    const proposed = (await first.operatorResolve(txn.transaction_id, {
      effect: 'committed',
      reason: 'charge found in the provider dashboard',
      provider_operation: { provider: 'payments-simulator', operation_id: found.operation_id },
    })) as { status: string; approval: { approval_id: string } };
    expect(proposed.status).toBe('requires_human');
    const approvalId = proposed.approval.approval_id;

    await page.goto(`${stack.consoleUrl}#/work/pending_approvals`);
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.locator(`tr[data-approval-id="${approvalId}"]`);
    await row.getByRole('button', { name: 'Approve' }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve payments.charge?' });
    await dialog.locator('[data-fact="mode"]').filter({ hasText: 'resolve' }).waitFor();
    const atProposal = dialog.locator('[data-fact="provider-at-proposal"]');
    await atProposal.waitFor();
    expect(await atProposal.getAttribute('data-verdict')).toBe('agrees');
    const text = (await atProposal.textContent()) ?? '';
    expect(text).toContain(`The provider answered committed (operation payments-simulator/${found.operation_id})`);
    expect(text).toContain('agrees with the resolution');
    expect(text).toContain('Approving asks the provider again');
    expect(await dialog.locator('[data-fact="resolution"]').textContent()).toContain('charge found in the provider dashboard');
    await screenshot(page, 'four-eyes-provider-at-proposal');

    await dialog.getByLabel('Reason').fill('checked the ledger export too');
    await dialog.getByRole('button', { name: 'Confirm approval' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Approval ${approvalId} approved` })
      .waitFor();
    const after = await clientOf(stack, await stack.mintToken()).getTransaction({ transaction_id: txn.transaction_id }, { include: ['receipts'] });
    expect(after.status).toBe('reconciled');
    expect(after.receipts?.at(-1)?.evidence).toMatchObject({
      approved_by: [{ id: 'dev-operator' }],
      provider_verdict: 'agrees',
      provider_check_at_proposal: { verdict: 'agrees', answer: { obtained: true, effect: 'committed' } },
    });
  });
});
