import * as z from '../common/zod.js';
import { JsonObjectSchema } from './json.js';
import { IdSchema, JsonPointerSchema, ScopeSchema, TextSchema } from './primitives.js';
import { TransactionModeSchema } from './action.js';

/** The four dry-run fidelity levels, weakest first (spec README, list 3). */
export const DRY_RUN_FIDELITIES = ['schema_only', 'policy_and_schema', 'downstream_validation', 'full_simulation'] as const;
export const DryRunFidelitySchema = z.enum(DRY_RUN_FIDELITIES);
export type DryRunFidelity = z.infer<typeof DryRunFidelitySchema>;

/** True for the two levels where the runtime calls the connector's plan_typed. */
export function fidelityInvokesHandler(f: DryRunFidelity): boolean {
  return f === 'downstream_validation' || f === 'full_simulation';
}

function unique<T>(xs: readonly T[]): boolean {
  return new Set(xs).size === xs.length;
}

/** TransactionContract: exactly three declarations (spec README, list 2). */
export const TransactionContractSchema = z.deferred(() =>
  z.strictObject({
    modes: z.array(TransactionModeSchema).check(z.minLength(1), z.maxLength(7), z.refine(unique, { message: 'modes must be unique' })),
    dry_run_fidelity: DryRunFidelitySchema,
    requires_plan_before_commit: z.boolean(),
  }),
);
export type TransactionContract = z.infer<typeof TransactionContractSchema>;

export const COMPENSATION_MODES = ['not_required', 'supported', 'best_effort', 'rollback_not_supported'] as const;
export const CompensationModeSchema = z.enum(COMPENSATION_MODES);
/** @public */
export type CompensationMode = z.infer<typeof CompensationModeSchema>;

/**
 * CompensationContract. The optional window is `window_ms`, milliseconds,
 * measured from the target transaction record's last update (or from the
 * caller-carried `original_completed_at` when no record exists).
 */
export const CompensationContractSchema = z.deferred(() =>
  z.strictObject({
    mode: CompensationModeSchema,
    compensation_capability_id: z.optional(IdSchema),
    window_ms: z.optional(z.int().check(z.positive(), z.lte(366 * 86_400_000))),
    approval_required: z.boolean(),
  }),
);
export type CompensationContract = z.infer<typeof CompensationContractSchema>;

export const DataContractSchema = z.deferred(() =>
  z.strictObject({
    /** When true, plans keep only `{redacted: true, hash}` as the input snapshot. */
    redaction_required: z.boolean(),
    /** RFC 6901 pointers into input/output to redact in records and logs. */
    redact_pointers: z.optional(z.array(JsonPointerSchema).check(z.maxLength(256))),
    retention_days: z.optional(z.int().check(z.positive(), z.lte(36_500))),
  }),
);
/** @public */
export type DataContract = z.infer<typeof DataContractSchema>;

/** Execution declarations: cancel, streaming, retry, timeout. */
export const ExecutionContractSchema = z.deferred(() =>
  z.strictObject({
    supports_cancel: z.boolean(),
    supports_streaming: z.boolean(),
    supports_retry: z.boolean(),
    timeout_ms: z.int().check(z.positive(), z.lte(86_400_000)),
  }),
);
export type ExecutionContract = z.infer<typeof ExecutionContractSchema>;

export const ApprovalRequirementSchema = z.deferred(() =>
  z.strictObject({
    required: z.boolean(),
    policy_id: z.optional(IdSchema),
    approver_scopes: z.optional(z.array(ScopeSchema).check(z.maxLength(64))),
    allow_self_approval: z.optional(z.boolean()),
  }),
);
export type ApprovalRequirement = z.infer<typeof ApprovalRequirementSchema>;

export const CredentialRequirementSchema = z.deferred(() =>
  z.strictObject({
    required: z.boolean(),
    /** Credential kind, e.g. `api_key`, `oauth2`, `basic` (a name, never material). */
    kind: z.optional(z.string().check(z.minLength(1), z.maxLength(64), z.regex(/^[a-z][a-z0-9_]*$/, { message: 'invalid credential kind' }))),
    scopes: z.optional(z.array(ScopeSchema).check(z.maxLength(64))),
  }),
);
/** @public */
export type CredentialRequirement = z.infer<typeof CredentialRequirementSchema>;

export const IdempotencyContractSchema = z.deferred(() =>
  z.strictObject({
    /** The action must carry an idempotency_key. */
    required: z.boolean(),
    /** The downstream provider deduplicates on the forwarded idempotency identity. */
    downstream_idempotent: z.optional(z.boolean()),
  }),
);
export type IdempotencyContract = z.infer<typeof IdempotencyContractSchema>;

export const AuthorizationRequirementSchema = z.deferred(() =>
  z.strictObject({
    scopes: z.array(ScopeSchema).check(z.maxLength(64)),
  }),
);
/** @public */
export type AuthorizationRequirement = z.infer<typeof AuthorizationRequirementSchema>;

export const CAPABILITY_KINDS = ['tool', 'resource'] as const;
export const CapabilityKindSchema = z.enum(CAPABILITY_KINDS);

/** The contract a capability advertises, every part optional (also the HTTP connector's `contract` block). */
export const CAPABILITY_CONTRACT_SHAPE = {
  transaction: z.optional(TransactionContractSchema),
  compensation: z.optional(CompensationContractSchema),
  data: z.optional(DataContractSchema),
  execution: z.optional(ExecutionContractSchema),
  approval: z.optional(ApprovalRequirementSchema),
  credentials: z.optional(CredentialRequirementSchema),
  idempotency: z.optional(IdempotencyContractSchema),
  authorization: z.optional(AuthorizationRequirementSchema),
};

export const CapabilitySchema = z.deferred(() =>
  z.strictObject({
    id: IdSchema,
    kind: CapabilityKindSchema,
    description: z.optional(TextSchema(4096)),
    /** JSON Schema for the action input (compiled with ajv by the runtime). */
    input_schema: JsonObjectSchema,
    output_schema: z.optional(JsonObjectSchema),
    ...CAPABILITY_CONTRACT_SHAPE,
  }),
);
export type Capability = z.infer<typeof CapabilitySchema>;
