/**
 * The logging surface the edge uses. Powertools' Logger satisfies it; tests
 * and the local server may pass anything with the same four methods.
 *
 * Rule: log identifiers, statuses, codes and durations. Never a token, a
 * request body, query values or an error message from outside our code.
 */
export interface LoggerLike {
  debug(message: string, ...extra: Record<string, unknown>[]): void;
  info(message: string, ...extra: Record<string, unknown>[]): void;
  warn(message: string, ...extra: Record<string, unknown>[]): void;
  error(message: string, ...extra: Record<string, unknown>[]): void;
}

export const SILENT_LOGGER: LoggerLike = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/**
 * Configuration errors whose message our code writes from variable names,
 * field paths and fixed text, never from a value: the composition root's
 * (`BootstrapConfigError`, functions/shared/settings.ts), the deployment
 * configuration's (`InfraConfigError`, lib/config/deployment.ts) and the authorizer's
 * (`AuthConfigError`, lib/auth/config.ts). A function started with a bad
 * environment must say which variable is wrong, so their message is logged;
 * any other error's message could carry input or secrets and is not. Matched
 * by name, so this module (in every bundle, the authorizer's included)
 * imports none of them.
 */
export const CONFIGURATION_ERROR_NAMES: ReadonlySet<string> = new Set(['BootstrapConfigError', 'InfraConfigError', 'AuthConfigError']);

export function isConfigurationError(err: unknown): err is Error {
  return err instanceof Error && CONFIGURATION_ERROR_NAMES.has(err.name);
}

/**
 * What is safe to log about an error: its class and code, and the stack
 * without the message line; for a configuration error
 * ({@link CONFIGURATION_ERROR_NAMES}) also its message, which names the
 * variable to fix.
 */
export function errorFacts(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error_type: typeof err };
  const facts: Record<string, unknown> = { error_name: err.name };
  if (isConfigurationError(err)) facts.error_message = err.message;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') facts.error_code = code;
  if (typeof err.stack === 'string') {
    facts.error_stack = err.stack
      .split('\n')
      .filter((line) => /^\s+at /.test(line))
      .slice(0, 15)
      .join('\n');
  }
  return facts;
}
