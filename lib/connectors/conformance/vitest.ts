/**
 * describeConformance: the conformance kit as a vitest suite, one test per
 * rule. For test code only (it imports vitest).
 *
 *     describeConformance('my connector', () => mySubject());
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CONFORMANCE_RULES } from './rules.js';
import { runConformance, type RunConformanceOptions } from './run.js';
import type { ConformanceReport, ConformanceSubject } from './subject.js';

export function describeConformance(name: string, subjectFactory: () => ConformanceSubject | Promise<ConformanceSubject>, options: RunConformanceOptions = {}): void {
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
    for (const { id, rule } of CONFORMANCE_RULES) {
      it(rule, () => {
        if (failure !== undefined) throw failure;
        const result = report?.results.find((r) => r.id === id);
        expect(result, `no result for rule ${rule}`).toBeDefined();
        expect(result?.passed, result?.message).toBe(true);
      });
    }
  });
}
