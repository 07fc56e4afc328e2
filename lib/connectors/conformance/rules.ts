/**
 * The rules the conformance kit checks. Each rule has a stable name (`id`,
 * what reports, tests and the mutation suite match on), says in one line what
 * a run observes (`checks`), and cites the item of the connector page's
 * "Review an implementation" list it enforces (`review_item`, quoted
 * exactly). Several rules can enforce one item; every item a run can observe
 * has at least one rule.
 */

/** The page's "Review an implementation" list, in its order and words. */
export const REVIEW_ITEMS = [
  'the manifest describes only implemented operations and schemas',
  'every callable capability has an exact nine-flag support record',
  'the connector uses only trusted actor, tenant, credential, approval, transaction, and idempotency context',
  'secret material is resolved at the provider edge and excluded from durable output',
  'retries use the original mutation identity and match the provider’s idempotency behavior',
  'streaming, cancellation, planning, commit, compensation, and reconciliation are either implemented or explicitly unsupported',
  'provider operation IDs are checkpointed before an uncertain commit wait',
  'provider-visible durable effects publish the effect checkpoint at the documented boundary',
  'failures preserve redacted recovery evidence and identify uncertain outcomes',
  'local or remote placement retains the same capability and lifecycle meaning',
] as const;
export type ReviewItem = (typeof REVIEW_ITEMS)[number];

const [MANIFEST, SUPPORT, TRUSTED, SECRETS, RETRIES, LIFECYCLE, CHECKPOINT, EFFECT, FAILURES, PLACEMENT] = REVIEW_ITEMS;

export const CONFORMANCE_RULES = [
  {
    id: 'manifest',
    review_item: MANIFEST,
    checks:
      'admission of the discovered manifest; every claimed method is implemented and every implemented method is claimed; samples and outputs match the manifest schemas',
  },
  {
    id: 'support_record',
    review_item: SUPPORT,
    checks: 'implementation_support(id) is exactly the nine boolean flags for every callable capability and equals the manifest record',
  },
  {
    id: 'trusted_context',
    review_item: TRUSTED,
    checks:
      'with decoy tenant, account, credential, approval, transaction, operation and idempotency values in every action body (identity, labels, and every string input field the schema admits, one field at a time), only the trusted context reaches credential resolution, checkpoints, recovery results and the provider',
  },
  {
    id: 'context_attempt_scoped',
    review_item: TRUSTED,
    checks: 'a context kept after its attempt ended is dead: no credential resolution, checkpoint, effect publication or stream write goes through it',
  },
  {
    id: 'secrets',
    review_item: SECRETS,
    checks:
      'every planted secret (before and after rotation) is absent from outputs, failures, checkpoints, cursors, stream chunks, manifest, health, map_error, logs and console; claimed credentials are resolved through the provider and every resolved secret is disposed',
  },
  {
    id: 'credentials_per_attempt',
    review_item: SECRETS,
    checks:
      'every attempt that reached the provider resolved its own credential during the attempt; after the secret is rotated between scenarios the connector authenticates with the new one',
  },
  {
    id: 'retry_identity',
    review_item: RETRIES,
    checks: 'a second attempt of the same action completes and the provider holds one effect',
  },
  {
    id: 'no_raw_idempotency_key',
    review_item: RETRIES,
    checks:
      "the provider is never presented with the caller's raw idempotency key (action.idempotency_key, ctx.idempotency.key); a key derived from the reservation is fine",
  },
  {
    id: 'timeout_not_retryable',
    review_item: RETRIES,
    checks: 'a commit or execute whose wait is lost to the deadline (and any sla.timeout_exceeded of a commit or execute) fails with retryable=false',
  },
  {
    id: 'explicit_unsupported',
    review_item: LIFECYCLE,
    checks:
      'unclaimed methods, emit_typed and ingest_typed reject with the typed connector.operation_unsupported (permanent, not retryable, certain, naming the operation)',
  },
  {
    id: 'streaming',
    review_item: LIFECYCLE,
    checks: 'a capability that claims streaming publishes its chunks through ctx.stream (the runtime-owned publisher) and still returns its terminal result',
  },
  {
    id: 'plan_no_effect',
    review_item: LIFECYCLE,
    checks: 'plan_typed in plan and dry_run mode leaves no provider effect (also after the provider settles) and publishes no effect checkpoint',
  },
  {
    id: 'cancelled_call_no_effect',
    review_item: LIFECYCLE,
    checks:
      'a call whose attempt is already cancelled, or whose deadline is already lost, leaves no provider effect, neither at once nor after the provider settles',
  },
  {
    id: 'deadline_bounds_wait',
    review_item: LIFECYCLE,
    checks: 'a commit or execute whose deadline has passed returns on its own, without the attempt being aborted: every wait is bounded by ctx.deadline',
  },
  {
    id: 'cancel_verified',
    review_item: LIFECYCLE,
    checks:
      'when cancel_typed answers accepted for the operation of a lost commit, what the kit can observe confirms it: the provider holds no new effect once it settled, and a later reconcile does not report the commit completed',
  },
  {
    id: 'checkpoint_before_wait',
    review_item: CHECKPOINT,
    checks: 'when the provider holds the response of an accepted commit, the provider operation is already checkpointed',
  },
  {
    id: 'effect_checkpoint',
    review_item: EFFECT,
    checks:
      'provider_effect_committed is published once the provider holds the effect and before the method returns, never for a request rejected before commit',
  },
  {
    id: 'recovery_evidence',
    review_item: FAILURES,
    checks:
      'failures are typed twelve-field ConnectorFailures; a lost commit or response is uncertain and keeps the checkpointed operation and request ID; the operation reconciles; a declared reconcile by idempotency key finds the effect',
  },
  {
    id: 'reconcile_pending_not_terminal',
    review_item: FAILURES,
    checks: 'a reconcile while the provider still holds the operation pending answers terminal=false',
  },
  {
    id: 'placement',
    review_item: PLACEMENT,
    checks: 'every other placement the subject declares has the same manifest, support records and implemented methods',
  },
] as const;

export type ConformanceRuleId = (typeof CONFORMANCE_RULES)[number]['id'];
export type ConformanceRule = (typeof CONFORMANCE_RULES)[number];

export const CONFORMANCE_RULE_IDS: readonly ConformanceRuleId[] = CONFORMANCE_RULES.map((r) => r.id);

/** The rule with this stable name. */
export function conformanceRule(id: ConformanceRuleId): ConformanceRule {
  return CONFORMANCE_RULES.find((r) => r.id === id) as ConformanceRule;
}

export function isConformanceRuleId(value: unknown): value is ConformanceRuleId {
  return typeof value === 'string' && (CONFORMANCE_RULE_IDS as readonly string[]).includes(value);
}
