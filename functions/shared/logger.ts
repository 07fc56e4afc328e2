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

/** What is safe to log about an error: its class and code, and the stack without the message line. */
export function errorFacts(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error_type: typeof err };
  const facts: Record<string, unknown> = { error_name: err.name };
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
