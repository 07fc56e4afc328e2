/**
 * A readable rendering of a conformance report: one line per rule (status,
 * stable name, and the reason: the violations, why it was skipped, or, with
 * `verbose`, what was exercised), the review item of every failed rule, and
 * a summary line.
 */
import type { ConformanceReport, ConformanceStatus } from './subject.js';

const MARK: Readonly<Record<ConformanceStatus, string>> = { passed: 'passed ', failed: 'FAILED ', skipped: 'skipped' };

export interface FormatReportOptions {
  /** Also print what each passed rule exercised (default: the rule's one-line check). */
  readonly verbose?: boolean;
}

export function formatReport(report: ConformanceReport, options: FormatReportOptions = {}): string {
  const width = Math.max(...report.results.map((r) => r.id.length));
  const lines = [`conformance: ${report.subject}`];
  for (const r of report.results) {
    const text = r.status === 'passed' && options.verbose !== true ? r.checks : r.reason;
    lines.push(`  ${MARK[r.status]}  ${r.id.padEnd(width)}  ${text}`);
    if (r.status === 'failed') lines.push(`  ${' '.repeat(7)}  ${' '.repeat(width)}  review item: “${r.review_item}”`);
  }
  const { passed, failed, skipped } = report.counts;
  lines.push(
    `${report.results.length} rules: ${passed} passed, ${failed} failed, ${skipped} skipped — ${report.passed ? 'CONFORMS (skipped rules were not checked)' : 'DOES NOT CONFORM'}`,
  );
  return `${lines.join('\n')}\n`;
}
