/**
 * Sign-in. Two ways, chosen by config.json:
 *
 * - `dev` (the local stack only): the page asks the stack's `/_local/token`
 *   endpoint for a development token for a principal and scopes.
 * - `oidc` (deployed): OpenID Connect authorization code flow with PKCE
 *   (S256) against the configured issuer, as a public client, with
 *   oauth4webapi (discovery, state, nonce, ID token validation).
 *
 * The session (the access token and what the page shows of it) lives in
 * sessionStorage: it survives the redirect to the identity provider and
 * reloads of the tab, ends with the tab, and is never written to
 * localStorage. The API verifies the token; the claims read here only label
 * the page (who is signed in, which tenants to offer).
 */
import * as oauth from 'oauth4webapi';
import { consoleUrl, type ConsoleConfig } from './config.js';

export interface Session {
  readonly access_token: string;
  /** Epoch ms. */
  readonly expires_at: number;
  readonly subject: string;
  readonly tenants: readonly string[];
  readonly scopes: readonly string[];
  readonly via: 'dev' | 'oidc';
}

const SESSION_KEY = 'aip-console.session';
const PENDING_KEY = 'aip-console.oidc-pending';

export function loadSession(): Session | undefined {
  const raw = sessionStorage.getItem(SESSION_KEY);
  if (raw === null) return undefined;
  try {
    const s = JSON.parse(raw) as Session;
    if (typeof s.access_token !== 'string' || s.expires_at <= Date.now()) {
      sessionStorage.removeItem(SESSION_KEY);
      return undefined;
    }
    return s;
  } catch {
    sessionStorage.removeItem(SESSION_KEY);
    return undefined;
  }
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
}

export function clearSession(): void {
  sessionStorage.removeItem(SESSION_KEY);
  sessionStorage.removeItem(PENDING_KEY);
}

/** The JWT payload, unverified (labels only; the API verifies). */
export function jwtClaims(token: string): Record<string, unknown> {
  const part = token.split('.')[1];
  if (part === undefined) return {};
  try {
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/');
    const json = new TextDecoder().decode(Uint8Array.from(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0)));
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function listClaim(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  if (typeof value === 'string') return value.split(/[\s,]+/).filter((v) => v.length > 0);
  return [];
}

/** Builds the session from an access token, reading the claim names of the presets (lib/auth/claims.ts). */
export function sessionFromToken(token: string, via: Session['via'], expiresInSeconds?: number): Session {
  const claims = jwtClaims(token);
  const tenantClaim = Object.keys(claims).find((k) => /(^|[:/])tenants$/.test(k));
  const exp = typeof claims.exp === 'number' ? claims.exp * 1000 : Date.now() + (expiresInSeconds ?? 3600) * 1000;
  return {
    access_token: token,
    expires_at: exp,
    subject: typeof claims.sub === 'string' ? claims.sub : 'unknown',
    tenants: tenantClaim !== undefined ? listClaim(claims[tenantClaim]) : [],
    scopes: [...listClaim(claims.scope), ...listClaim(claims.scp), ...listClaim(claims.permissions)],
    via,
  };
}

// --- development sign-in (local stack) --------------------------------------------

export async function devSignIn(config: ConsoleConfig, subject: string, scopes: readonly string[]): Promise<Session> {
  if (config.mode !== 'dev' || config.dev === undefined) throw new Error('development sign-in is not offered here');
  const res = await fetch(new URL(config.dev.token_endpoint, document.baseURI), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ sub: subject, scopes }),
  });
  const body = (await res.json().catch(() => ({}))) as { access_token?: string; expires_in?: number; detail?: string };
  if (!res.ok || typeof body.access_token !== 'string') throw new Error(`development sign-in failed: ${body.detail ?? `HTTP ${res.status}`}`);
  const session = sessionFromToken(body.access_token, 'dev', body.expires_in);
  saveSession(session);
  return session;
}

// --- OIDC authorization code + PKCE ----------------------------------------------

interface Pending {
  readonly code_verifier: string;
  readonly state: string;
  readonly nonce: string;
}

/** Plain http only for an identity provider on loopback (development and tests); https everywhere else. */
function transport(issuer: URL): { [oauth.allowInsecureRequests]?: boolean } {
  const loopback = issuer.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname);
  return loopback ? { [oauth.allowInsecureRequests]: true } : {};
}

async function authorizationServer(
  config: ConsoleConfig,
): Promise<{ as: oauth.AuthorizationServer; client: oauth.Client; options: ReturnType<typeof transport> }> {
  if (config.oidc === undefined) throw new Error('OIDC is not configured');
  const issuer = new URL(config.oidc.issuer);
  const options = transport(issuer);
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...options }));
  return { as, client: { client_id: config.oidc.client_id }, options };
}

/** Sends the browser to the identity provider. */
export async function startOidcSignIn(config: ConsoleConfig): Promise<void> {
  const { as } = await authorizationServer(config);
  const oidc = config.oidc as NonNullable<ConsoleConfig['oidc']>;
  if (as.authorization_endpoint === undefined) throw new Error('the issuer publishes no authorization endpoint');
  const pending: Pending = { code_verifier: oauth.generateRandomCodeVerifier(), state: oauth.generateRandomState(), nonce: oauth.generateRandomNonce() };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(as.authorization_endpoint);
  url.searchParams.set('client_id', oidc.client_id);
  url.searchParams.set('redirect_uri', consoleUrl());
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', oidc.scopes.join(' '));
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(pending.code_verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', pending.state);
  url.searchParams.set('nonce', pending.nonce);
  if (oidc.audience !== undefined) url.searchParams.set('audience', oidc.audience);
  window.location.assign(url.href);
}

/** True when the page was opened by the identity provider's redirect (code or error in the query). */
export function isOidcCallback(): boolean {
  const q = new URLSearchParams(window.location.search);
  return sessionStorage.getItem(PENDING_KEY) !== null && (q.has('code') || q.has('error'));
}

/** Completes the code flow: validates state, redeems the code with the PKCE verifier, validates the ID token. */
export async function completeOidcSignIn(config: ConsoleConfig): Promise<Session> {
  const raw = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (raw === null) throw new Error('no sign-in in progress in this tab');
  const pending = JSON.parse(raw) as Pending;
  const { as, client, options } = await authorizationServer(config);
  const current = new URL(window.location.href);
  // Take the code out of the address bar (and history) whatever happens next.
  window.history.replaceState(null, '', consoleUrl() + current.hash);
  const params = oauth.validateAuthResponse(as, client, current, pending.state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, consoleUrl(), pending.code_verifier, options);
  const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: pending.nonce, requireIdToken: true });
  const session = sessionFromToken(result.access_token, 'oidc', result.expires_in);
  saveSession(session);
  return session;
}
