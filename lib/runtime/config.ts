/**
 * The Runtime's settings (`RuntimeSettings`, the `AIP_RUNTIME_SETTINGS`
 * variable): one zod schema with defaults, plus the production schema that
 * forbids test mode (and therefore the crash-point hook). Not the
 * deployment's run-time configuration (`DeploymentRuntimeConfig` in
 * lib/config/deployment.ts, the `AIP_RUNTIME_CONFIG` variable).
 *
 * See docs/runtime.md.
 */
import * as z from 'zod';
import { joinIssuePath } from '../common/issues.js';
import { OPERATOR_SCOPE } from '../auth/scopes.js';
import { AipError } from '../errors/aip-error.js';
import { IdSchema, PrincipalSchema, ScopeSchema, TRANSACTION_MODES } from '../protocol/index.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_SECONDS } from '../ports/idempotency-store.js';

/** A tenant approval policy: which capabilities and modes need an approval. */
export const TenantApprovalPolicySchema = z.strictObject({
  policy_id: IdSchema,
  /** Capability IDs it selects; `*` selects all. */
  capabilities: z
    .array(z.union([IdSchema, z.literal('*')]))
    .min(1)
    .max(1000),
  /** Modes it applies to; `none` is a plain invocation. Default: every mutating mode. */
  modes: z.array(z.enum([...TRANSACTION_MODES, 'none'])).optional(),
  /** Holding ONE of these scopes makes a principal an approver (default: `approvals.default_approver_scopes`). */
  approver_scopes: z.array(ScopeSchema).max(64).optional(),
  allow_self_approval: z.boolean().optional(),
  /** Distinct approvers needed before the action runs (default 1); any one denial ends the approval. */
  min_approvals: z.int().min(1).max(10).optional(),
  /** A pending approval under this policy expires after this long (default: `approvals.ttl_ms`). */
  ttl_ms: z
    .int()
    .min(1_000)
    .max(30 * 86_400_000)
    .optional(),
});
export type TenantApprovalPolicy = z.infer<typeof TenantApprovalPolicySchema>;

/** A tenant selector: a tenant ID, or `*` (every tenant, configured or not). */
export const TenantSelectorSchema = z.union([IdSchema, z.literal('*')]);

/**
 * A runtime-wide approval policy (`approval_policies`): a tenant policy plus
 * the tenants it applies to. The deployment's approval policies
 * (lib/config/deployment.ts `approvalPolicies`) become these.
 */
export const GlobalApprovalPolicySchema = z.strictObject({
  ...TenantApprovalPolicySchema.shape,
  /** Tenants it applies to; `*` (the default) is every tenant, including tenants named nowhere in the configuration. */
  tenants: z.array(TenantSelectorSchema).min(1).max(1000).default(['*']),
});
export type GlobalApprovalPolicy = z.output<typeof GlobalApprovalPolicySchema>;

/** One tenant's settings (`tenants[t]`): its approval policies, compensators and resolution rule. */
export const TenantSettingsSchema = z.strictObject({
  /** Policies that put matching actions behind an approval. */
  approvals: z.array(TenantApprovalPolicySchema).max(100).optional(),
  /** The default tenant-policy approval (used when a compensation contract forces approval). */
  default_approval_policy_id: IdSchema.optional(),
  /**
   * Scopes that let a principal compensate another principal's action in
   * this tenant (lib/runtime/authority.ts, role `compensator`). Default: the
   * operator scope.
   */
  compensator_scopes: z.array(ScopeSchema).max(64).optional(),
  /** Overrides the deployment-wide `resolution` rule for this tenant. */
  resolution: z.strictObject({ four_eyes: z.boolean().optional() }).optional(),
});
export type TenantSettings = z.infer<typeof TenantSettingsSchema>;

const RuntimeSettingsShape = {
  /** The runtime's own service principal: reconcile actions run as it. */
  service_principal: PrincipalSchema.default({ id: 'aip-runtime', kind: 'service' }),
  /** Issuer recorded in the actor context of attempts. */
  issuer: z.string().min(1).max(2048).default('aip-runtime'),
  /** Attempt lease = effective timeout + this margin. */
  lease_margin_ms: z.int().min(1_000).max(600_000).default(30_000),
  /** Attempt timeout when the capability declares none. */
  default_attempt_timeout_ms: z.int().min(1_000).max(900_000).default(60_000),
  approvals: z
    .strictObject({
      ttl_ms: z
        .int()
        .min(1_000)
        .max(30 * 86_400_000)
        .default(24 * 3_600_000),
      /** Scopes an approver needs when the policy names none. */
      default_approver_scopes: z.array(ScopeSchema).max(64).default(['aip:approve']),
    })
    .prefault({}),
  idempotency: z
    .strictObject({
      retention_seconds: z
        .int()
        .min(60)
        .max(30 * 86_400)
        .default(DEFAULT_IDEMPOTENCY_RETENTION_SECONDS),
    })
    .prefault({}),
  reconcile: z
    .strictObject({
      /** Reconciliation attempts before escalating to a human (`requires_human`). */
      max_attempts: z.int().min(1).max(100).default(5),
      base_delay_ms: z.int().min(1_000).max(3_600_000).default(5_000),
      max_delay_ms: z
        .int()
        .min(1_000)
        .max(86_400_000)
        .default(15 * 60_000),
    })
    .prefault({}),
  /**
   * Operator resolutions of escalated transactions (POST
   * /v1/operator/transactions/{id}/resolve): with `four_eyes`, a second
   * operator must approve a resolution before it applies (a tenant's
   * `resolution.four_eyes` overrides it). `approval_ttl_ms`: how long that
   * approval waits.
   */
  resolution: z
    .strictObject({
      four_eyes: z.boolean().default(false),
      approval_ttl_ms: z
        .int()
        .min(60_000)
        .max(30 * 86_400_000)
        .default(24 * 3_600_000),
    })
    .prefault({}),
  /** How often a running attempt checks its action for a client's cancellation request (one GetItem each time). */
  cancel_poll_ms: z.int().min(10).max(60_000).default(1_000),
  /** Bound on one connector health check (health()); a slower check reports the connector not ready. */
  health_timeout_ms: z.int().min(10).max(25_000).default(2_000),
  /** A committing/prepared/compensating record older than this is "stalled" (operator view, sweeper). */
  stall_after_ms: z
    .int()
    .min(1_000)
    .max(86_400_000)
    .default(5 * 60_000),
  /** Scope that grants the operator views. Default: the scope the edge requires on the operator routes. */
  operator_scope: ScopeSchema.default(OPERATOR_SCOPE),
  /** Scopes the service principal holds for its own reconcile actions (besides the capability's). */
  service_scopes: z.array(ScopeSchema).max(64).default([]),
  /** Revision of the policy set, pinned by route assignments. */
  policy_revision: z.string().min(1).max(128).default('1'),
  tenants: z.record(IdSchema, TenantSettingsSchema).default({}),
  /**
   * Runtime-wide approval policies, each with its tenant selector. Evaluated
   * after the capability's own policy and the tenant's own
   * `tenants[t].approvals`, in order (lib/runtime/pipeline/approval-policy.ts).
   */
  approval_policies: z.array(GlobalApprovalPolicySchema).max(100).default([]),
  /** Retention of terminal action records, seconds (0 keeps them). */
  action_retention_seconds: z
    .int()
    .min(0)
    .max(10 * 365 * 86_400)
    .default(0),
  /**
   * Test mode: the only way to install the crash-point hook. The production
   * schema rejects it.
   */
  test_mode: z.boolean().default(false),
};

export const RuntimeSettingsSchema = z.strictObject(RuntimeSettingsShape);
export type RuntimeSettings = z.output<typeof RuntimeSettingsSchema>;
export type RuntimeSettingsInput = z.input<typeof RuntimeSettingsSchema>;

/** Production: identical, except that test_mode may only be absent or false. */
export const ProductionRuntimeSettingsSchema = z.strictObject({
  ...RuntimeSettingsShape,
  test_mode: z.literal(false).default(false),
});

/**
 * Parses the Runtime's settings (defaults applied); throws
 * `runtime.config_invalid`. `environment` other than `test`/`local` uses the
 * production schema, so test mode can never be switched on there.
 */
export function parseRuntimeSettingsInput(raw: unknown, environment = 'production'): RuntimeSettings {
  const schema = environment === 'test' || environment === 'local' ? RuntimeSettingsSchema : ProductionRuntimeSettingsSchema;
  const parsed = schema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw new AipError('runtime.config_invalid', undefined, {
      details: { issues: parsed.error.issues.slice(0, 20).map((i) => ({ path: joinIssuePath(i.path, '.'), code: i.code })) },
    });
  }
  return parsed.data;
}

/** Exponential reconciliation backoff after `attempts` completed attempts (1-based). */
export function reconcileBackoffMs(config: RuntimeSettings, attempts: number): number {
  const exp = Math.min(30, Math.max(0, attempts - 1));
  return Math.min(config.reconcile.max_delay_ms, config.reconcile.base_delay_ms * 2 ** exp);
}
