/** What every page gets from the shell (./app.tsx): the configuration, the API client, the session and the tenant. */
import type { ConsoleApi } from './api.js';
import type { ConsoleConfig } from './config.js';
import type { Session } from './auth.js';

export interface Ctx {
  readonly config: ConsoleConfig;
  readonly api: ConsoleApi;
  readonly session: Session;
  readonly tenant: string | undefined;
}
