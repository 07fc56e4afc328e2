/**
 * The console's runtime configuration, fetched from `config.json` beside
 * index.html. The local stack serves a development one (mode `dev`); the
 * deployed console function builds one from the deployment configuration
 * (mode `oidc`). See functions/console/serve.ts (`ConsoleConfig`).
 */
import type { ConsoleConfig } from './config-types.js';

export type { ConsoleConfig } from './config-types.js';

export async function loadConfig(): Promise<ConsoleConfig> {
  const res = await fetch(new URL('config.json', document.baseURI), { cache: 'no-store' });
  if (!res.ok) throw new Error(`config.json: HTTP ${res.status}`);
  return (await res.json()) as ConsoleConfig;
}

/** The API base URL, without a trailing slash. */
export function apiBase(config: ConsoleConfig): string {
  return new URL(config.api_base_url ?? '../', document.baseURI).href.replace(/\/+$/, '');
}

/** The console's own URL (the OIDC redirect URI): where index.html is served, without query or fragment. */
export function consoleUrl(): string {
  const u = new URL(document.baseURI);
  u.search = '';
  u.hash = '';
  return u.href;
}
