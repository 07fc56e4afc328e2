/**
 * What a run found, per rule: violations (the rule failed), notes (what was
 * exercised and held) and skip reasons (what could not be run against the
 * subject). A rule nothing exercised is `skipped`, never `passed`.
 */
import { CONFORMANCE_RULES, type ConformanceRuleId } from './rules.js';
import type { ConformanceReport, ConformanceResult, ConformanceStatus } from './subject.js';

export class RuleLedger {
  readonly #violations = new Map<ConformanceRuleId, string[]>();
  readonly #notes = new Map<ConformanceRuleId, string[]>();
  readonly #skips = new Map<ConformanceRuleId, string[]>();

  static #add(map: Map<ConformanceRuleId, string[]>, id: ConformanceRuleId, message: string): void {
    const list = map.get(id) ?? [];
    if (!list.includes(message)) list.push(message);
    map.set(id, list);
  }

  /** A violation: the rule fails. */
  fail(id: ConformanceRuleId, message: string): void {
    RuleLedger.#add(this.#violations, id, message);
  }
  /** Something the rule checked and found in order. */
  note(id: ConformanceRuleId, message: string): void {
    RuleLedger.#add(this.#notes, id, message);
  }
  /** Why (part of) the rule could not be run against this subject. */
  skip(id: ConformanceRuleId, reason: string): void {
    RuleLedger.#add(this.#skips, id, reason);
  }
  /** Records `reason` for a rule nothing has exercised or failed so far. */
  skipIfSilent(id: ConformanceRuleId, reason: string): void {
    if ((this.#violations.get(id)?.length ?? 0) === 0 && (this.#notes.get(id)?.length ?? 0) === 0 && (this.#skips.get(id)?.length ?? 0) === 0)
      this.skip(id, reason);
  }
  failed(id: ConformanceRuleId): boolean {
    return (this.#violations.get(id)?.length ?? 0) > 0;
  }

  results(): ConformanceResult[] {
    return CONFORMANCE_RULES.map(({ id, checks, review_item }) => {
      const violations = this.#violations.get(id) ?? [];
      const notes = this.#notes.get(id) ?? [];
      const skips = this.#skips.get(id) ?? [];
      let status: ConformanceStatus;
      let reason: string;
      if (violations.length > 0) {
        status = 'failed';
        reason = violations.join('; ');
      } else if (notes.length > 0) {
        status = 'passed';
        reason = notes.join('; ') + (skips.length > 0 ? `; not exercised: ${skips.join('; ')}` : '');
      } else {
        status = 'skipped';
        reason = skips.length > 0 ? skips.join('; ') : 'nothing in this subject exercises it';
      }
      return { id, checks, review_item, status, passed: status === 'passed', skipped: status === 'skipped', reason, message: `[${id}] ${status}: ${reason}` };
    });
  }
}

/** Builds the report from per-rule results. */
export function reportOf(subject: string, results: readonly ConformanceResult[]): ConformanceReport {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const r of results) counts[r.status] += 1;
  return { subject, passed: counts.failed === 0, counts, results };
}
