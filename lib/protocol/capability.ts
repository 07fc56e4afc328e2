import * as z from 'zod';
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
export const TransactionContractSchema = z.strictObject({
  modes: z.array(TransactionModeSchema).min(1).max(7).refine(unique, { message: 'modes must be unique' }),
  dry_run_fidelity: DryRunFidelitySchema,
  requires_plan_before_commit: z.boolean(),
});
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
export const CompensationContractSchema = z.strictObject({
  mode: CompensationModeSchema,
  compensation_capability_id: IdSchema.optional(),
  window_ms: z
    .number()
    .int()
    .positive()
    .max(366 * 86_400_000)
    .optional(),
  approval_required: z.boolean(),
});
export type CompensationContract = z.infer<typeof CompensationContractSchema>;

export const DataContractSchema = z.strictObject({
  /** When true, plans keep only `{redacted: true, hash}` as the input snapshot. */
  redaction_required: z.boolean(),
  /** RFC 6901 pointers into input/output to redact in records and logs. */
  redact_pointers: z.array(JsonPointerSchema).max(256).optional(),
  retention_days: z.number().int().positive().max(36_500).optional(),
});
/** @public */
export type DataContract = z.infer<typeof DataContractSchema>;

/** Execution declarations: cancel, streaming, retry, timeout. */
export const ExecutionContractSchema = z.strictObject({
  supports_cancel: z.boolean(),
  supports_streaming: z.boolean(),
  supports_retry: z.boolean(),
  timeout_ms: z.number().int().positive().max(86_400_000),
});
export type ExecutionContract = z.infer<typeof ExecutionContractSchema>;

export const ApprovalRequirementSchema = z.strictObject({
  required: z.boolean(),
  policy_id: IdSchema.optional(),
  approver_scopes: z.array(ScopeSchema).max(64).optional(),
  allow_self_approval: z.boolean().optional(),
});
export type ApprovalRequirement = z.infer<typeof ApprovalRequirementSchema>;

export const CredentialRequirementSchema = z.strictObject({
  required: z.boolean(),
  /** Credential kind, e.g. `api_key`, `oauth2`, `basic` (a name, never material). */
  kind: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z][a-z0-9_]*$/, { message: 'invalid credential kind' })
    .optional(),
  scopes: z.array(ScopeSchema).max(64).optional(),
});
/** @public */
export type CredentialRequirement = z.infer<typeof CredentialRequirementSchema>;

export const IdempotencyContractSchema = z.strictObject({
  /** The action must carry an idempotency_key. */
  required: z.boolean(),
  /** The downstream provider deduplicates on the forwarded idempotency identity. */
  downstream_idempotent: z.boolean().optional(),
});
export type IdempotencyContract = z.infer<typeof IdempotencyContractSchema>;

export const AuthorizationRequirementSchema = z.strictObject({
  scopes: z.array(ScopeSchema).max(64),
});
/** @public */
export type AuthorizationRequirement = z.infer<typeof AuthorizationRequirementSchema>;

export const CAPABILITY_KINDS = ['tool', 'resource'] as const;
export const CapabilityKindSchema = z.enum(CAPABILITY_KINDS);

export const CapabilitySchema = z.strictObject({
  id: IdSchema,
  kind: CapabilityKindSchema,
  description: TextSchema(4096).optional(),
  /** JSON Schema for the action input (compiled with ajv by the runtime). */
  input_schema: JsonObjectSchema,
  output_schema: JsonObjectSchema.optional(),
  transaction: TransactionContractSchema.optional(),
  compensation: CompensationContractSchema.optional(),
  data: DataContractSchema.optional(),
  execution: ExecutionContractSchema.optional(),
  approval: ApprovalRequirementSchema.optional(),
  credentials: CredentialRequirementSchema.optional(),
  idempotency: IdempotencyContractSchema.optional(),
  authorization: AuthorizationRequirementSchema.optional(),
});
export type Capability = z.infer<typeof CapabilitySchema>;
