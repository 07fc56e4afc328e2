/**
 * The Runtime's settings (`RuntimeSettings`, the `AIP_RUNTIME_SETTINGS`
 * variable): one zod schema with defaults, plus the production schema that
 * forbids test mode (and therefore the crash-point hook). Not the
 * deployment's run-time configuration (`DeploymentRuntimeConfig` in
 * lib/config/deployment.ts, the `AIP_RUNTIME_CONFIG` variable).
 *
 * See docs/runtime.md.
 */
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { joinIssuePath } from '../../packages/connector-sdk/src/common/issues.js';
import { OPERATOR_SCOPE } from '../auth/scopes.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { IdSchema, PrincipalSchema, ScopeSchema, TRANSACTION_MODES } from '../../packages/connector-sdk/src/protocol/index.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_SECONDS } from '../ports/idempotency-store.js';

/**
 * A setting with its default. zod answers an absent setting with the default without running its schema, so the
 * schema is built only when a configuration sets the value: a cold start builds the settings it parses
 * (docs/bench/analysis.md, "Cold start and bundles").
 */
function setting<T extends z.ZodMiniType>(build: () => T, value: z.output<T> & {}): z.ZodMiniDefault<T> {
  return z._default(z.deferred(build), value as never);
}

/** A tenant approval policy: which capabilities and modes need an approval. */
export const TenantApprovalPolicySchema = z.deferred(() =>
  z.strictObject({
    policy_id: IdSchema,
    /** Capability IDs it selects; `*` selects all. */
    capabilities: z.array(z.union([IdSchema, z.literal('*')])).check(z.minLength(1), z.maxLength(1000)),
    /** Modes it applies to; `none` is a plain invocation. Default: every mutating mode. */
    modes: z.optional(z.array(z.enum([...TRANSACTION_MODES, 'none']))),
    /** Holding ONE of these scopes makes a principal an approver (default: `approvals.default_approver_scopes`). */
    approver_scopes: z.optional(z.array(ScopeSchema).check(z.maxLength(64))),
    allow_self_approval: z.optional(z.boolean()),
    /** Distinct approvers needed before the action runs (default 1); any one denial ends the approval. */
    min_approvals: z.optional(z.int().check(z.gte(1), z.lte(10))),
    /** A pending approval under this policy expires after this long (default: `approvals.ttl_ms`). */
    ttl_ms: z.optional(z.int().check(z.gte(1_000), z.lte(30 * 86_400_000))),
  }),
);
export type TenantApprovalPolicy = z.infer<typeof TenantApprovalPolicySchema>;

/** A tenant selector: a tenant ID, or `*` (every tenant, configured or not). */
export const TenantSelectorSchema = z.deferred(() => z.union([IdSchema, z.literal('*')]));

/**
 * A runtime-wide approval policy (`approval_policies`): a tenant policy plus
 * the tenants it applies to. The deployment's approval policies
 * (lib/config/deployment.ts `approvalPolicies`) become these.
 */
export const GlobalApprovalPolicySchema = z.deferred(() =>
  z.strictObject({
    ...TenantApprovalPolicySchema.shape,
    /** Tenants it applies to; `*` (the default) is every tenant, including tenants named nowhere in the configuration. */
    tenants: setting(() => z.array(TenantSelectorSchema).check(z.minLength(1), z.maxLength(1000)), ['*']),
  }),
);
export type GlobalApprovalPolicy = z.output<typeof GlobalApprovalPolicySchema>;

/** One tenant's settings (`tenants[t]`): its approval policies, compensators and resolution rule. */
export const TenantSettingsSchema = z.deferred(() =>
  z.strictObject({
    /** Policies that put matching actions behind an approval. */
    approvals: z.optional(z.array(TenantApprovalPolicySchema).check(z.maxLength(100))),
    /** The default tenant-policy approval (used when a compensation contract forces approval). */
    default_approval_policy_id: z.optional(IdSchema),
    /**
     * Scopes that let a principal compensate another principal's action in
     * this tenant (lib/runtime/authority.ts, role `compensator`). Default: the
     * operator scope.
     */
    compensator_scopes: z.optional(z.array(ScopeSchema).check(z.maxLength(64))),
    /** Overrides the deployment-wide `resolution` rule for this tenant. */
    resolution: z.optional(z.strictObject({ four_eyes: z.optional(z.boolean()) })),
  }),
);
export type TenantSettings = z.infer<typeof TenantSettingsSchema>;

/** The settings' fields, shared by the two schemas below; built with the first of them. */
const runtimeSettingsShape = z.lazySchema(() => ({
  /** The runtime's own service principal: reconcile actions run as it. */
  service_principal: z._default(PrincipalSchema, { id: 'aip-runtime', kind: 'service' }),
  /** Issuer recorded in the actor context of attempts. */
  issuer: setting(() => z.string().check(z.minLength(1), z.maxLength(2048)), 'aip-runtime'),
  /** Attempt lease = effective timeout + this margin. */
  lease_margin_ms: setting(() => z.int().check(z.gte(1_000), z.lte(600_000)), 30_000),
  /** Attempt timeout when the capability declares none. */
  default_attempt_timeout_ms: setting(() => z.int().check(z.gte(1_000), z.lte(900_000)), 60_000),
  approvals: z.prefault(
    z.strictObject({
      ttl_ms: setting(() => z.int().check(z.gte(1_000), z.lte(30 * 86_400_000)), 24 * 3_600_000),
      /** Scopes an approver needs when the policy names none. */
      default_approver_scopes: setting(() => z.array(ScopeSchema).check(z.maxLength(64)), ['aip:approve']),
    }),
    {},
  ),
  idempotency: z.prefault(
    z.strictObject({
      retention_seconds: setting(() => z.int().check(z.gte(60), z.lte(30 * 86_400)), DEFAULT_IDEMPOTENCY_RETENTION_SECONDS),
    }),
    {},
  ),
  reconcile: z.prefault(
    z.strictObject({
      /** Reconciliation attempts before escalating to a human (`requires_human`). */
      max_attempts: setting(() => z.int().check(z.gte(1), z.lte(100)), 5),
      base_delay_ms: setting(() => z.int().check(z.gte(1_000), z.lte(3_600_000)), 5_000),
      max_delay_ms: setting(() => z.int().check(z.gte(1_000), z.lte(86_400_000)), 15 * 60_000),
    }),
    {},
  ),
  /**
   * A remote host's certified capacity refusal (`connector.remote_capacity_exhausted`:
   * signed, the connector was not called) defers the attempt instead of failing
   * the action: the lease is given back and the message redelivered after
   * Retry-After plus a jittered exponential backoff (capacityDeferralDelayMs).
   * The bound: at most `max_deferrals` deferrals of one action (counted durably
   * on the action record; none either once the message's own receive count
   * exceeds it) and none that would redeliver it later than
   * `max_age_ms` after its creation; past either, the attempt settles `failed`
   * with the refusal, as without deferral. The invoke queue caps the bound
   * too: `queue_max_receive_count` is its redrive policy's maxReceiveCount
   * (the stack sets it on the functions, AIP_INVOKE_QUEUE_MAX_RECEIVE_COUNT;
   * the composition puts it here), and no deferral may spend the queue's last
   * delivery ({@link capacityDeferralBound}), so the message never reaches
   * the DLQ before a delivery settles it (docs/workers.md).
   */
  capacity_deferral: z.prefault(
    z.strictObject({
      max_deferrals: setting(() => z.int().check(z.gte(0), z.lte(100)), 3),
      base_delay_ms: setting(() => z.int().check(z.gte(0), z.lte(900_000)), 1_000),
      max_delay_ms: setting(() => z.int().check(z.gte(0), z.lte(900_000)), 60_000),
      max_age_ms: setting(() => z.int().check(z.gte(0), z.lte(86_400_000)), 15 * 60_000),
      /** The invoke queue's maxReceiveCount (SQS allows 1-1000). Absent: unknown, `max_deferrals` alone bounds. */
      queue_max_receive_count: z.optional(z.int().check(z.gte(1), z.lte(1000))),
    }),
    {},
  ),
  /**
   * Operator resolutions of escalated transactions (POST
   * /v1/operator/transactions/{id}/resolve): with `four_eyes`, a second
   * operator must approve a resolution before it applies (a tenant's
   * `resolution.four_eyes` overrides it). `approval_ttl_ms`: how long that
   * approval waits. `provider_lookup_timeout_ms`: how long the runtime asks
   * the provider about the operation before a resolution is recorded
   * (lib/runtime/provider-lookup.ts; also capped by the capability's own
   * timeout), so the operator route answers within its function timeout.
   */
  resolution: z.prefault(
    z.strictObject({
      four_eyes: setting(() => z.boolean(), false),
      approval_ttl_ms: setting(() => z.int().check(z.gte(60_000), z.lte(30 * 86_400_000)), 24 * 3_600_000),
      provider_lookup_timeout_ms: setting(() => z.int().check(z.gte(100), z.lte(15_000)), 5_000),
    }),
    {},
  ),
  /**
   * Where the FIRST attempt of a fresh admission runs when its client waits for the settlement (`Prefer: wait` on
   * POST /v1/actions; the edge says so with the submit's `wait` option): `inline`, in the submit function itself,
   * through the worker's own attempt code (lib/runtime/attempts/worker.ts `runAttempt`), when the capability's attempt
   * timeout plus the settlement margin fits the function's remaining time and the client's wait; `queue`, through the
   * invoke queue as every other invocation. Every invocation nobody waits on, every retry, redelivery, resumed
   * admission, approval and sweeper re-drive goes through the queue either way (docs/runtime.md, "The attempt inside
   * the submit when the client waits").
   */
  attempt_when_waited: setting(() => z.enum(['inline', 'queue']), 'inline'),
  /** How often a running attempt checks its action for a client's cancellation request (one GetItem each time). */
  cancel_poll_ms: setting(() => z.int().check(z.gte(10), z.lte(60_000)), 1_000),
  /** Bound on one connector health check (health()); a slower check reports the connector not ready. */
  health_timeout_ms: setting(() => z.int().check(z.gte(10), z.lte(25_000)), 2_000),
  /** A committing/prepared/compensating record older than this is "stalled" (operator view, sweeper). */
  stall_after_ms: setting(() => z.int().check(z.gte(1_000), z.lte(86_400_000)), 5 * 60_000),
  /** Scope that grants the operator views. Default: the scope the edge requires on the operator routes. */
  operator_scope: z._default(ScopeSchema, OPERATOR_SCOPE),
  /** Scopes the service principal holds for its own reconcile actions (besides the capability's). */
  service_scopes: setting(() => z.array(ScopeSchema).check(z.maxLength(64)), []),
  /** Revision of the policy set, pinned by route assignments. */
  policy_revision: setting(() => z.string().check(z.minLength(1), z.maxLength(128)), '1'),
  tenants: setting(() => z.record(IdSchema, TenantSettingsSchema), {}),
  /**
   * Runtime-wide approval policies, each with its tenant selector. Evaluated
   * after the capability's own policy and the tenant's own
   * `tenants[t].approvals`, in order (lib/runtime/pipeline/approval-policy.ts).
   */
  approval_policies: setting(() => z.array(GlobalApprovalPolicySchema).check(z.maxLength(100)), []),
  /** Retention of terminal action records, seconds (0 keeps them). */
  action_retention_seconds: setting(() => z.int().check(z.gte(0), z.lte(10 * 365 * 86_400)), 0),
  /**
   * Retention of terminal transactions with their receipt chains and plan
   * items, days, where the capability's data contract sets no
   * `retention_days` (lib/runtime/retention.ts; 0 keeps them). A deployed
   * configuration defaults it ({@link DEPLOYED_DEFAULTS}).
   */
  transaction_retention_days: setting(() => z.int().check(z.gte(0), z.lte(3650)), 0),
  /**
   * Test mode: the only way to install the crash-point hook. The production
   * schema rejects it.
   */
  test_mode: setting(() => z.boolean(), false),
}));

export const RuntimeSettingsSchema = z.deferred(() => z.strictObject(runtimeSettingsShape()));
export type RuntimeSettings = z.output<typeof RuntimeSettingsSchema>;
export type RuntimeSettingsInput = z.input<typeof RuntimeSettingsSchema>;

/** Production: identical, except that test_mode may only be absent or false. */
export const ProductionRuntimeSettingsSchema = z.deferred(() =>
  z.strictObject({
    ...runtimeSettingsShape(),
    test_mode: setting(() => z.literal(false), false),
  }),
);

/**
 * What a deployed configuration (an environment other than `local` and
 * `test`) gets where its settings say nothing: four eyes on operator
 * resolutions (a second operator approves), and a retention for terminal
 * transactions and their receipts (and, unless set, terminal action
 * records) of 400 days, so nothing is kept forever by default. The schema
 * defaults (off, kept) are the local stack's and the tests'.
 */
export const DEPLOYED_DEFAULTS = {
  four_eyes: true,
  transaction_retention_days: 400,
  action_retention_seconds: 400 * 86_400,
} as const;

/** Whether an environment name is a deployed one (not `local` or `test`). */
export function isDeployedEnvironment(environment: string): boolean {
  return environment !== 'test' && environment !== 'local';
}

/** The settings as given, with {@link DEPLOYED_DEFAULTS} filled in where a deployed environment's settings say nothing. */
export function withDeployedDefaults(raw: unknown, environment: string): unknown {
  if (!isDeployedEnvironment(environment)) return raw;
  const given = raw ?? {};
  if (given === null || typeof given !== 'object' || Array.isArray(given)) return raw; // the schema names what is wrong
  const settings = given as Record<string, unknown>;
  const resolution = settings.resolution ?? {};
  return {
    ...settings,
    transaction_retention_days: settings.transaction_retention_days ?? DEPLOYED_DEFAULTS.transaction_retention_days,
    action_retention_seconds: settings.action_retention_seconds ?? DEPLOYED_DEFAULTS.action_retention_seconds,
    resolution:
      resolution !== null && typeof resolution === 'object' && !Array.isArray(resolution)
        ? { ...resolution, four_eyes: (resolution as { four_eyes?: unknown }).four_eyes ?? DEPLOYED_DEFAULTS.four_eyes }
        : resolution,
  };
}

/**
 * Parses the Runtime's settings (defaults applied; {@link DEPLOYED_DEFAULTS} in a deployed environment); throws
 * `runtime.config_invalid`. `environment` other than `test`/`local` uses the
 * production schema, so test mode can never be switched on there.
 */
export function parseRuntimeSettingsInput(raw: unknown, environment = 'production'): RuntimeSettings {
  const schema = isDeployedEnvironment(environment) ? ProductionRuntimeSettingsSchema : RuntimeSettingsSchema;
  const parsed = schema.safeParse(withDeployedDefaults(raw ?? {}, environment));
  if (!parsed.success) {
    throw new AipError('runtime.config_invalid', undefined, {
      details: { issues: parsed.error.issues.slice(0, 20).map((i) => ({ path: joinIssuePath(i.path, '.'), code: i.code })) },
    });
  }
  return parsed.data;
}

/**
 * The redelivery delay of an attempt deferred for capacity, after `deferrals`
 * earlier deferrals of its action: never before the host's Retry-After, plus
 * an exponential backoff with full jitter (`random` in [0, 1)), so refused
 * attempts of a burst do not come back together; at most `max_delay_ms`
 * beyond Retry-After.
 */
export function capacityDeferralDelayMs(config: RuntimeSettings, retryAfterMs: number, deferrals: number, random: number): number {
  const { base_delay_ms, max_delay_ms } = config.capacity_deferral;
  const window = Math.min(max_delay_ms, base_delay_ms * 2 ** Math.min(30, Math.max(0, deferrals)));
  return Math.max(0, retryAfterMs) + Math.floor(Math.max(0, Math.min(1, random)) * window);
}

/**
 * How many capacity deferrals one action may have, and on which delivery of
 * its message the last may happen: min(`max_deferrals`, maxReceiveCount − 1)
 * when the invoke queue's maxReceiveCount is known. SQS delivers a message at
 * most maxReceiveCount times, so receive r may defer only while r + 1 (the
 * redelivery the deferral asks for) is still a delivery, not a move to the
 * DLQ: r ≤ maxReceiveCount − 1. The queue's last receive therefore always
 * settles (with the refusal, `failed`). Earlier deliveries that crashed or
 * lost a lease race are counted by the receive count, so no spare receive is
 * needed for them.
 */
export function capacityDeferralBound(config: RuntimeSettings): number {
  const { max_deferrals, queue_max_receive_count } = config.capacity_deferral;
  return queue_max_receive_count === undefined ? max_deferrals : Math.min(max_deferrals, queue_max_receive_count - 1);
}

/**
 * Whether an attempt refused for capacity may be deferred once more: the
 * action has had fewer than {@link capacityDeferralBound} deferrals (its
 * durable count) and the message's receive count (1 on its first delivery;
 * undefined when the consumer did not say) does not exceed that bound. The
 * redelivery's age (`max_age_ms`) is checked by the caller, which knows the
 * delay.
 */
export function mayDeferForCapacity(config: RuntimeSettings, deferrals: number, receiveCount: number | undefined): boolean {
  const bound = capacityDeferralBound(config);
  if (deferrals >= bound) return false;
  return receiveCount === undefined || receiveCount <= bound;
}

/** Exponential reconciliation backoff after `attempts` completed attempts (1-based). */
export function reconcileBackoffMs(config: RuntimeSettings, attempts: number): number {
  const exp = Math.min(30, Math.max(0, attempts - 1));
  return Math.min(config.reconcile.max_delay_ms, config.reconcile.base_delay_ms * 2 ** exp);
}
