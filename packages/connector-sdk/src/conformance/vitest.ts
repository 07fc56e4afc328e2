/**
 * describeConformance: the conformance kit as a vitest suite, one test per
 * rule, named by the rule's stable name. A failed rule fails its test with
 * the violations; a rule that cannot be run against the subject is reported
 * as a skipped test with the reason (never as a passed one). For test code
 * only (it imports vitest): `aip-runtime/conformance/vitest`.
 *
 *     describeConformance('my connector', () => mySubject());
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CONFORMANCE_RULES } from './rules.js';
import { runConformance, type RunConformanceOptions } from './run.js';
import type { ConformanceReport, ConformanceSubject } from './subject.js';

export function describeConformance(
  name: string,
  subjectFactory: () => ConformanceSubject | Promise<ConformanceSubject>,
  options: RunConformanceOptions = {},
): void {
  describe(name, () => {
    let report: ConformanceReport | undefined;
    let failure: unknown;
    beforeAll(async () => {
      try {
        report = await runConformance(await subjectFactory(), options);
      } catch (err) {
        failure = err;
      }
    });
    for (const { id, checks } of CONFORMANCE_RULES) {
      it(`${id}: ${checks}`, (ctx) => {
        if (failure !== undefined) throw failure;
        const result = report?.results.find((r) => r.id === id);
        expect(result, `no result for rule ${id}`).toBeDefined();
        if (result?.status === 'skipped') ctx.skip(result.reason);
        expect(result?.status, result?.message).toBe('passed');
      });
    }
  });
}
