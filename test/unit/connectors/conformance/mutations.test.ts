/**
 * The conformance kit's own mutation test. Every module in
 * test/fixtures/broken-connectors/ (besides the baseline and the provider
 * fake) is the baseline ledger connector with ONE defect and exports
 * `violates`, the stable name of the rule it breaks: the kit must fail
 * exactly that rule and no other. The baseline passes every rule, none
 * skipped; every rule of the kit is the target of at least one mutant.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CONFORMANCE_RULE_IDS,
  conformanceRule,
  isConformanceRuleId,
  runConformance,
  subjectsFromModule,
  type ConformanceRuleId,
} from '../../../../packages/connector-sdk/src/conformance/index.js';

const DIR = new URL('../../../fixtures/broken-connectors/', import.meta.url);
const SUPPORT = new Set(['baseline.ts', 'fake-ledger.ts']);
const MUTANTS = readdirSync(DIR)
  .filter((f) => f.endsWith('.ts') && !SUPPORT.has(f))
  .sort();

async function load(file: string): Promise<{ violates: unknown; subject: Awaited<ReturnType<typeof subjectsFromModule>>[number] }> {
  const mod = (await import(new URL(file, DIR).href)) as Record<string, unknown>;
  const [subject] = await subjectsFromModule(mod);
  if (subject === undefined) throw new Error(`${file} exports no subject`);
  return { violates: mod.violates, subject };
}

describe('conformance kit: mutation suite (test/fixtures/broken-connectors)', () => {
  it('has at least 20 broken connectors, each naming one rule, and every rule is the target of one', async () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(20);
    const targeted = new Set<ConformanceRuleId>();
    for (const file of MUTANTS) {
      const { violates } = await load(file);
      expect(isConformanceRuleId(violates), `${file}: violates = ${String(violates)}`).toBe(true);
      targeted.add(violates as ConformanceRuleId);
    }
    expect(CONFORMANCE_RULE_IDS.filter((id) => !targeted.has(id))).toEqual([]);
  });

  it('the baseline passes every rule, none skipped', async () => {
    const { violates, subject } = await load('baseline.ts');
    expect(violates).toBeUndefined();
    const report = await runConformance(subject);
    expect(report.results.filter((r) => r.status !== 'passed').map((r) => r.message)).toEqual([]);
    expect(report.counts).toEqual({ passed: CONFORMANCE_RULE_IDS.length, failed: 0, skipped: 0 });
  });

  it.each(MUTANTS)('%s is rejected with exactly the rule it violates', async (file) => {
    const { violates, subject } = await load(file);
    const secret = `csk_mutation_${file.replace(/\W/g, '_')}_0123456789`;
    const report = await runConformance(subject, { secret });
    const failed = report.results.filter((r) => r.status === 'failed');
    expect(
      failed.map((r) => r.id),
      failed.map((r) => r.message).join('\n'),
    ).toEqual([violates]);
    const result = failed[0];
    expect(result?.review_item).toBe(conformanceRule(violates as ConformanceRuleId).review_item);
    expect(result?.message.startsWith(`[${String(violates)}] failed: `)).toBe(true);
    expect(report.passed).toBe(false);
    for (const r of report.results) expect(r.message).not.toContain(secret);
  });
});
