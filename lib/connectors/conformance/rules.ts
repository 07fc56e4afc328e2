/**
 * The rules the conformance kit checks: the connector page's "Review an
 * implementation" list, quoted exactly (rule names are the page's words).
 */
export const CONFORMANCE_RULES = [
  {
    id: 'manifest',
    rule: 'the manifest describes only implemented operations and schemas',
  },
  {
    id: 'support_record',
    rule: 'every callable capability has an exact nine-flag support record',
  },
  {
    id: 'explicit_unsupported',
    rule: 'streaming, cancellation, planning, commit, compensation, and reconciliation are either implemented or explicitly unsupported',
  },
  {
    id: 'checkpoint_before_wait',
    rule: 'provider operation IDs are checkpointed before an uncertain commit wait',
  },
  {
    id: 'effect_checkpoint',
    rule: 'provider-visible durable effects publish the effect checkpoint at the documented boundary',
  },
  {
    id: 'recovery_evidence',
    rule: 'failures preserve redacted recovery evidence and identify uncertain outcomes',
  },
  {
    id: 'secrets',
    rule: 'secret material is resolved at the provider edge and excluded from durable output',
  },
  {
    id: 'retry_identity',
    rule: 'retries use the original mutation identity and match the provider’s idempotency behavior',
  },
] as const;

export type ConformanceRuleId = (typeof CONFORMANCE_RULES)[number]['id'];
export type ConformanceRuleName = (typeof CONFORMANCE_RULES)[number]['rule'];

export const CONFORMANCE_RULE_NAMES: Readonly<Record<ConformanceRuleId, ConformanceRuleName>> = Object.fromEntries(CONFORMANCE_RULES.map((r) => [r.id, r.rule])) as Record<
  ConformanceRuleId,
  ConformanceRuleName
>;
