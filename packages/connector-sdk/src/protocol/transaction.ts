import * as z from '../common/zod.js';
import { ActionResultSchema, ActionSchema, ActionStatusSchema } from './action.js';
import { CompensationContractSchema, DataContractSchema, DryRunFidelitySchema, ExecutionContractSchema, IdempotencyContractSchema } from './capability.js';
import { IdentityContextSchema, PrincipalSchema } from './identity.js';
import { JsonObjectSchema, JsonValueSchema } from './json.js';
import { IdSchema, IdempotencyKeySchema, Rfc3339Schema, ScopeSchema, Sha256HexSchema, TextSchema, TransactionIdSchema } from './primitives.js';
import { ProviderOperationRefSchema, ReconciliationCursorSchema } from './provider.js';

/** The twelve durable transaction statuses, exactly as the AIP transactions page names them. */
export const DURABLE_TRANSACTION_STATUSES = [
  'dry_run_completed',
  'planned',
  'prepared',
  'committing',
  'committed',
  'compensating',
  'compensated',
  'failed',
  'outcome_unknown',
  'reconciling',
  'reconciled',
  'rollback_not_supported',
] as const;

/**
 * The two wire-only statuses: projected from the surrounding action result,
 * never stored as a durable status.
 */
export const WIRE_ONLY_STATUSES = ['requires_human', 'cancelled'] as const;
/** @public */
export type WireOnlyStatus = (typeof WIRE_ONLY_STATUSES)[number];

export const TRANSACTION_PROTOCOL_STATUSES = [...DURABLE_TRANSACTION_STATUSES, ...WIRE_ONLY_STATUSES] as const;

/** The wire status: the twelve durable statuses plus `requires_human` and `cancelled`. */
export const TransactionProtocolStatusSchema = z.enum(TRANSACTION_PROTOCOL_STATUSES);
export type TransactionProtocolStatus = z.infer<typeof TransactionProtocolStatusSchema>;

/** The durable record status (never `requires_human` or `cancelled`). */
export const TransactionStatusSchema = z.enum(DURABLE_TRANSACTION_STATUSES);
export type TransactionStatus = z.infer<typeof TransactionStatusSchema>;

/**
 * First-class transaction request: wraps an action with a required
 * transaction ID and requester. Structural only; `validateTransactionRequest`
 * adds the public rules (commit needs plan_id, matching transaction IDs, ...).
 */
export const TransactionRequestSchema = z.deferred(() =>
  z.strictObject({
    action: ActionSchema,
    transaction_id: TransactionIdSchema,
    requested_by: PrincipalSchema,
    reason: z.optional(TextSchema(2048)),
    metadata: z.optional(JsonObjectSchema),
    provider_operation: z.optional(ProviderOperationRefSchema),
    reconciliation_cursor: z.optional(ReconciliationCursorSchema),
  }),
);
export type TransactionRequest = z.infer<typeof TransactionRequestSchema>;

/** Input snapshot retained by a plan: only the hash when the data contract requires redaction. */
export const InputSnapshotSchema = z.deferred(() =>
  z.discriminatedUnion('redacted', [
    z.strictObject({ redacted: z.literal(true), hash: Sha256HexSchema }),
    z.strictObject({ redacted: z.literal(false), hash: Sha256HexSchema, value: JsonObjectSchema }),
  ]),
);
export type InputSnapshot = z.infer<typeof InputSnapshotSchema>;

/** The approval policy applicable to a planned mutation (recorded, not an approval). */
export const ApprovalPolicyRefSchema = z.deferred(() =>
  z.strictObject({
    policy_id: IdSchema,
    /** Where the policy came from: the capability, a tenant default, or a compensation contract. */
    source: z.enum(['capability', 'tenant_default', 'compensation']),
    approver_scopes: z.optional(z.array(ScopeSchema).check(z.maxLength(64))),
    allow_self_approval: z.optional(z.boolean()),
  }),
);
export type ApprovalPolicyRef = z.infer<typeof ApprovalPolicyRefSchema>;

export const PlanIdempotencyMetadataSchema = z.deferred(() =>
  z.strictObject({
    idempotency_key: z.optional(IdempotencyKeySchema),
    contract: z.optional(IdempotencyContractSchema),
  }),
);

/** Result of downstream plan validation (downstream_validation / full_simulation only). */
export const DownstreamValidationSchema = z.deferred(() =>
  z.strictObject({
    fidelity: DryRunFidelitySchema,
    status: ActionStatusSchema,
    output: z.optional(JsonValueSchema),
    validated_at: Rfc3339Schema,
  }),
);
export type DownstreamValidation = z.infer<typeof DownstreamValidationSchema>;

/** Default plan lifetime: 15 minutes. */
export const PLAN_TTL_MS = 15 * 60 * 1000;

/** What a durable plan retains (spec README, list 4). */
export const TransactionPlanSchema = z.deferred(() =>
  z.strictObject({
    plan_id: IdSchema,
    transaction_id: TransactionIdSchema,
    capability_id: IdSchema,
    /** The planning principal (ID and kind). */
    planned_by: PrincipalSchema,
    planning_action_id: IdSchema,
    /** sha256 over canonical JSON of {capability_id, input}; see planInputHash. */
    input_hash: Sha256HexSchema,
    input_snapshot: InputSnapshotSchema,
    /** Absent when the planning action carried no identity context (presence is compared at commit). */
    identity_snapshot: z.optional(IdentityContextSchema),
    approval_required: z.boolean(),
    approval_policy: z.optional(ApprovalPolicyRefSchema),
    compensation: z.optional(CompensationContractSchema),
    data: z.optional(DataContractSchema),
    idempotency: z.optional(PlanIdempotencyMetadataSchema),
    /** Service-level metadata: the execution declarations in force when planned. */
    service_level: z.optional(ExecutionContractSchema),
    downstream_validation: z.optional(DownstreamValidationSchema),
    created_at: Rfc3339Schema,
    expires_at: Rfc3339Schema,
  }),
);
export type TransactionPlan = z.infer<typeof TransactionPlanSchema>;

/** All-zero digest used as `prev_hash` of the first receipt in a chain. */
export const GENESIS_RECEIPT_HASH = '0'.repeat(64);

/** The receipt format this runtime writes (see lib/protocol/receipt-chain.ts). */
export const RECEIPT_VERSION = 2;

/**
 * One link of a transaction's receipt chain. `hash` is sha256 over the
 * canonical JSON of every other field (receiptHashInput in
 * receipt-chain.ts); `prev_hash` is the previous receipt's hash
 * (GENESIS_RECEIPT_HASH for seq 0).
 *
 * Version 2 (`v: 2`) receipts carry, inside the hash, the durable status the
 * write left (never the wire-only `requires_human`), who acted (`actor`), the
 * redacted evidence and, when the write recorded an action result, its
 * digest (`result_digest`: sha256 of the result's canonical JSON). Receipts
 * without `v` are the earlier format, hashed over the first seven fields
 * only; they still verify.
 */
export const ReceiptSchema = z.deferred(() =>
  z.strictObject({
    v: z.optional(z.literal(RECEIPT_VERSION)),
    seq: z.int().check(z.gte(0)),
    transaction_id: TransactionIdSchema,
    status: TransactionProtocolStatusSchema,
    revision: z.int().check(z.gte(0)),
    at: Rfc3339Schema,
    prev_hash: Sha256HexSchema,
    hash: Sha256HexSchema,
    /** Event name, e.g. `transaction.planned`. */
    event: z.string().check(z.minLength(1), z.maxLength(128), z.regex(/^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$/, { message: 'invalid event name' })),
    /** Who acted: the principal on whose authority the write happened (the runtime's service principal for its own). */
    actor: z.optional(PrincipalSchema),
    /** Redacted evidence of the write (provider operation, reasons, an operator's findings). */
    evidence: z.optional(JsonValueSchema),
    /** sha256 of the canonical JSON of the action result this write recorded. */
    result_digest: z.optional(Sha256HexSchema),
  }),
);
export type Receipt = z.infer<typeof ReceiptSchema>;

export const TransactionResultSchema = z.deferred(() =>
  z.strictObject({
    transaction_id: TransactionIdSchema,
    plan_id: z.optional(IdSchema),
    status: TransactionProtocolStatusSchema,
    action_result: z.optional(ActionResultSchema),
    plan: z.optional(TransactionPlanSchema),
    provider_operation: z.optional(ProviderOperationRefSchema),
    reconciliation_cursor: z.optional(ReconciliationCursorSchema),
    earliest_reconcile_at: z.optional(Rfc3339Schema),
    receipts: z.optional(z.array(ReceiptSchema)),
    /** How many receipts the chain holds: a listing with fewer was truncated. */
    receipt_count: z.optional(z.int().check(z.gte(0))),
    /** The hash of the last receipt (the chain's anchor). */
    receipt_head: z.optional(Sha256HexSchema),
    /** The actions connected to this transaction (for a timeline). */
    links: z.optional(
      z.strictObject({
        /** The action the record is bound to (the commit action once a plan is claimed). */
        action_id: IdSchema,
        /** The action that planned it. */
        planning_action_id: z.optional(IdSchema),
        /** A compensation: the action it compensates. */
        compensation_for: z.optional(IdSchema),
        /** The governed reconcile action of the current or last reconciliation. */
        reconcile_action_id: z.optional(IdSchema),
      }),
    ),
    /** Parked for a human (wire status requires_human): when and why. */
    escalated: z.optional(z.strictObject({ at: Rfc3339Schema, reason: z.optional(z.string().check(z.maxLength(256))) })),
    /** Reconciliation attempts so far (toward the bound). */
    reconcile_attempts: z.optional(z.int().check(z.gte(0))),
  }),
);
export type TransactionResult = z.infer<typeof TransactionResultSchema>;
