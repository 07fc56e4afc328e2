/**
 * Helpers of the console's browser tests (test/console): the console build
 * (once per test run: a content-addressed folder under .vitest-tmp, so the
 * files of one run share it), the local stack serving it, Debian's Chromium
 * driven by playwright-core, and screenshots under docs/console/.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect, inject } from 'vitest';
import { buildConsole } from '../../console/build.js';
import { PROJECT_ROOT, startLocalStack, type LocalStack, type LocalStackOptions } from '../../dev/local/start.js';
import { AipClient } from '../../lib/client/index.js';
import type { ConsoleConfig } from '../../functions/console/serve.js';
import type { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';
import { eventually } from '../support/wait.js';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it). Override with AIP_CHROMIUM. */
export const CHROMIUM = process.env.AIP_CHROMIUM ?? '/usr/bin/chromium';

/** The flags this machine needs: no sandbox as root, no GPU, and no background traffic to the (closed) network. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/**
 * Where the screenshots go: docs/console/ (committed, linked from the README) when
 * `AIP_SCREENSHOTS=docs` (`npm run docs:screenshots`), otherwise a scratch folder, so
 * that `npm test` leaves the work tree as it found it (a PNG is never byte-identical twice).
 */
export const SCREENSHOTS_DIR =
  process.env.AIP_SCREENSHOTS === 'docs' ? join(PROJECT_ROOT, 'docs', 'console') : join(PROJECT_ROOT, '.vitest-tmp', 'console-screenshots');

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

/** Hash of everything the build reads: the console's sources and the shared modules it imports. */
function sourceHash(): string {
  const h = createHash('sha256');
  const roots = [
    join(PROJECT_ROOT, 'console'),
    join(PROJECT_ROOT, 'packages', 'connector-sdk', 'src', 'protocol'),
    join(PROJECT_ROOT, 'lib', 'client'),
    join(PROJECT_ROOT, 'packages', 'connector-sdk', 'src', 'errors'),
  ];
  for (const file of roots.flatMap(filesUnder).sort()) {
    h.update(relative(PROJECT_ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

/**
 * The console build for the current sources: built once, then reused by
 * every test file (and run) while the sources do not change.
 */
export async function consoleBuild(): Promise<string> {
  const base = join(PROJECT_ROOT, '.vitest-tmp', 'console');
  const dir = join(base, sourceHash());
  if (existsSync(join(dir, 'index.html'))) return dir;
  mkdirSync(base, { recursive: true });
  const tmp = `${dir}.tmp-${randomUUID().slice(0, 8)}`;
  await buildConsole(tmp);
  try {
    renameSync(tmp, dir);
  } catch {
    // Another test file built the same sources first: use theirs.
    rmSync(tmp, { recursive: true, force: true });
  }
  // Builds of earlier sources are never used again.
  for (const name of readdirSync(base)) {
    if (/^[0-9a-f]{16}$/.test(name) && join(base, name) !== dir) rmSync(join(base, name), { recursive: true, force: true });
  }
  return dir;
}

/** The local stack on the test run's DynamoDB Local and fauxqs, serving the console. */
export async function consoleStack(prefix: string, options: Partial<LocalStackOptions> = {}, config?: ConsoleConfig): Promise<LocalStack> {
  const assetsDir = await consoleBuild();
  return startLocalStack({
    dynamoEndpoint: inject('dynamoEndpoint'),
    sqsEndpoint: inject('sqsEndpoint'),
    namePrefix: `${prefix}-${randomUUID().slice(0, 8)}`,
    inMemory: true,
    schedulerAutoFire: false,
    sweepIntervalMs: 0,
    console: { assetsDir, ...(config !== undefined ? { config } : {}) },
    ...options,
  });
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/** A page of a fresh context (its own sessionStorage), with a fixed viewport for stable screenshots. */
export async function newPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, deviceScaleFactor: 1, colorScheme: 'light', reducedMotion: 'reduce' });
  const page = await context.newPage();
  // The console talks only to its own origin on loopback: anything else is a bug (and would leave the machine).
  await context.route(/^(?!http:\/\/127\.0\.0\.1[:/]).*/, (route) => route.abort('blockedbyclient'));
  return page;
}

/** Writes <name>.png into {@link SCREENSHOTS_DIR}. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS_DIR, `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });
}

/** Signs in through the page's development sign-in. */
export async function devSignIn(page: Page, consoleUrl: string, subject: string, scopes: { drop?: readonly string[] } = {}): Promise<void> {
  await page.goto(consoleUrl);
  const form = page.getByRole('form', { name: 'Development sign-in' });
  await form.getByLabel('Principal').fill(subject);
  for (const scope of scopes.drop ?? []) await form.getByLabel(scope).uncheck();
  await form.getByRole('button', { name: 'Sign in (development)' }).click();
  await page.getByTestId('signed-in-as').filter({ hasText: subject }).waitFor();
}

export function uid(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

export function clientOf(stack: LocalStack, token: string): AipClient {
  return new AipClient({ baseUrl: stack.url, token, tenant: stack.tenant });
}

export function charge(id: string, amount: number, transaction: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { id, capability_id: 'payments.charge', input: { amount, currency: 'eur', customer: 'cus_console' }, transaction, ...extra } as never;
}

/** The provider's operation lookup answers 503 (nothing can be found). */
const LOOKUP_FAILS = { match: { method: 'GET' as const, path: '/v1/operations' }, fault: { type: 'error_before_commit' as const, status: 503 as const } };

/** A charge whose answer the provider's gateway loses after committing; `probeFails`: nor can the operation be found. */
export async function uncertainCharge(stack: LocalStack, probeFails: boolean) {
  const user = clientOf(stack, await stack.mintToken());
  stack.simulator.setFaults([
    { match: { method: 'POST', path: '/v1/charges' }, fault: { type: 'error_after_commit', status: 504 }, times: 1 },
    ...(probeFails ? [LOOKUP_FAILS] : []),
  ]);
  const id = uid('charge');
  try {
    // The attempt runs in the submit (attempt_when_waited: inline, the local stack's default): it answers once settled.
    await user.submitAction(charge(id, 3_300, { mode: 'execute' }), { wait: 5 });
  } finally {
    stack.simulator.setFaults([]);
  }
  const state = await user.getAction(id);
  expect(state.transaction?.status).toBe('outcome_unknown');
  return state.transaction as NonNullable<typeof state.transaction>;
}

/**
 * An uncertain charge whose operation cannot be found, escalated to a human (the stack runs one reconciliation
 * attempt: `reconcile.max_attempts: 1`); `found`: the operation the provider committed.
 */
export async function escalateCharge(stack: LocalStack, clock: SteppedClock) {
  const txn = await uncertainCharge(stack, true);
  expect(txn.provider_operation).toBeUndefined();
  // The provider cannot be asked: once its attempts are used up, the reconciliation escalates it to a human.
  stack.simulator.setFaults([LOOKUP_FAILS]);
  try {
    // Round by round until the record is escalated (`requires_human`: the stack's own consumer got there first).
    await eventually(
      async () => {
        clock.advance(20 * 60_000);
        const { disposition } = await stack.runtime.reconcile({
          kind: 'reconcile',
          tenant_id: stack.tenant,
          transaction_id: txn.transaction_id,
          reason: 'sweeper',
        });
        return disposition === 'escalated' || disposition === 'requires_human' ? disposition : undefined;
      },
      { what: `transaction ${txn.transaction_id} escalated`, intervalMs: 0 },
    );
  } finally {
    stack.simulator.setFaults([]);
  }
  const found = stack.simulator.ledger().at(-1) as { operation_id: string };
  return { txn, found };
}
