/**
 * Helpers of the end-to-end suite (test/e2e): a clock the tests move, a
 * fetch that checks the media type of every answer, and problem assertions.
 */
import { expect } from 'vitest';
import { AipClient, AipClientError, type ProblemBody } from '../../lib/client/index.js';
import { ProblemSchema, type Problem } from '../../packages/connector-sdk/src/protocol/problem.js';

/** The Runtime's clock in the end-to-end stack (moved to a due time or past a window instead of sleeping). */
export { SteppedClock } from '../../packages/connector-sdk/src/ports/clock.js';

/**
 * A fetch for the AipClient that checks every answer the API gives:
 * - an error status carries `application/problem+json` with an RFC 9457
 *   body of the catalogue's shape, whose `status` equals the HTTP status and
 *   whose `type` names the code;
 * - a success carries `application/json`.
 * Violations are collected (a test ends by asserting there are none).
 */
export function checkingFetch(violations: string[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const where = `${init?.method ?? 'GET'} ${typeof input === 'string' ? input : input instanceof URL ? input.pathname : input.url} → ${res.status}`;
    const type = res.headers.get('content-type') ?? '';
    if (res.status >= 400) {
      if (type !== 'application/problem+json') violations.push(`${where}: content-type ${type}`);
      const parsed = ProblemSchema.safeParse(
        await res
          .clone()
          .json()
          .catch(() => undefined),
      );
      if (!parsed.success) violations.push(`${where}: not a problem body (${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.code}`).join(', ')})`);
      else if (parsed.data.status !== res.status || parsed.data.type !== `urn:aip:error:${parsed.data.code}`)
        violations.push(`${where}: problem status/type mismatch`);
    } else if (!type.startsWith('application/json')) {
      violations.push(`${where}: content-type ${type}`);
    }
    return res;
  };
}

/** A client for one token; `violations` collects badly shaped answers. */
export function clientFor(baseUrl: string, token: string, violations: string[], tenant?: string): AipClient {
  return new AipClient({ baseUrl, token, fetch: checkingFetch(violations), ...(tenant !== undefined ? { tenant } : {}) });
}

/**
 * Awaits a call that must fail with an RFC 9457 problem of this status and
 * catalogued code; returns the validated problem.
 */
export async function problemOf(call: Promise<unknown>, status: number, code: string): Promise<Problem> {
  let caught: unknown;
  try {
    await call;
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected a ${status} ${code} problem`).toBeInstanceOf(AipClientError);
  const err = caught as AipClientError;
  expect({ status: err.status, code: err.code }).toEqual({ status, code });
  const problem = ProblemSchema.parse(err.problem as ProblemBody);
  expect(problem.status).toBe(status);
  return problem;
}
