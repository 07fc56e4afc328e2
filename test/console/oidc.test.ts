/**
 * The console's deployed sign-in, in a real browser: OpenID Connect
 * authorization code with PKCE (S256) as a public client, against an
 * identity provider on loopback (./oidc-idp.ts). The console then calls the
 * API with the access token it got, and keeps it in sessionStorage only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { LocalStack } from '../../dev/local/start.js';
import { startLoopbackIdp, type LoopbackIdp } from './oidc-idp.js';
import { consoleStack, launchBrowser, newPage, screenshot } from './support.js';
import { HANG_MS } from '../support/wait.js';

const CLIENT_ID = 'aip-console';
let idp: LoopbackIdp;
let stack: LocalStack | undefined;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  let mint: (() => Promise<string>) | undefined;
  idp = await startLoopbackIdp({ clientId: CLIENT_ID, subject: 'oidc-operator', accessToken: () => (mint as () => Promise<string>)() });
  [stack, browser] = await Promise.all([
    consoleStack(
      'console-oidc',
      {},
      { mode: 'oidc', environment: 'test', tenant: 'demo', oidc: { issuer: idp.url, client_id: CLIENT_ID, scopes: ['openid', 'aip:operator'] } },
    ),
    launchBrowser(),
  ]);
  const s = stack;
  mint = () => s.mintToken({ sub: 'oidc-operator', scopes: ['aip:actions:read', 'aip:operator'] });
  page = await newPage(browser);
  page.setDefaultTimeout(HANG_MS);
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await idp?.stop();
});

describe('OIDC sign-in (authorization code + PKCE)', () => {
  it('signs in through the identity provider and calls the API with the access token', async () => {
    const consoleUrl = stack?.consoleUrl as string;
    await page.goto(consoleUrl);
    const button = page.getByRole('button', { name: 'Sign in with single sign-on' });
    await button.waitFor();
    expect(await page.getByRole('form', { name: 'Development sign-in' }).count()).toBe(0);
    await screenshot(page, 'sign-in-oidc');

    await button.click();
    await page.getByTestId('signed-in-as').filter({ hasText: 'oidc-operator' }).waitFor();

    // The authorization request: code flow, S256 challenge, state and nonce, back to the console's own URL.
    expect(idp.authorizeRequests).toHaveLength(1);
    const auth = idp.authorizeRequests[0]?.params ?? {};
    expect(auth).toMatchObject({
      client_id: CLIENT_ID,
      response_type: 'code',
      code_challenge_method: 'S256',
      redirect_uri: consoleUrl,
      scope: 'openid aip:operator',
    });
    expect(auth.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(auth.state).toBeTruthy();
    expect(auth.nonce).toBeTruthy();
    // The code was redeemed once, with the matching verifier and no client secret.
    expect(idp.tokenRequests.map((t) => t.verified)).toEqual([true]);
    expect(idp.tokenRequests[0]?.params.client_secret).toBeUndefined();

    // The code left the address bar; the session is in sessionStorage, nothing in localStorage.
    expect(page.url()).not.toContain('code=');
    expect(await page.evaluate("[sessionStorage.getItem('aip-console.session') !== null, localStorage.length]")).toEqual([true, 0]);

    // The API accepted the token: the work page loaded its views.
    await page.locator('table.items').waitFor();
    expect(await page.getByTestId('count-outcome_unknown').textContent()).toMatch(/^\d+\+?$/);
  });
});
