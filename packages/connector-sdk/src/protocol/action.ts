import * as z from '../common/zod.js';
import { IdentityContextSchema } from './identity.js';
import { JsonObjectSchema, JsonValueSchema } from './json.js';
import { IdSchema, IdempotencyKeySchema, LabelsSchema, Rfc3339Schema, TransactionIdSchema } from './primitives.js';
import { ProtocolErrorSchema } from './error.js';

/** The seven transaction modes (spec README, list 1). */
export const TRANSACTION_MODES = ['dry_run', 'plan', 'execute', 'commit', 'compensate', 'reconcile', 'rollback_not_supported'] as const;
export const TransactionModeSchema = z.enum(TRANSACTION_MODES);
export type TransactionMode = z.infer<typeof TransactionModeSchema>;

/**
 * `Action.transaction`: the canonical semantic transaction context. The
 * structural schema does not apply the commit/compensate rules; the core
 * envelope validator (`validateAction`) does.
 */
export const TransactionContextSchema = z.deferred(() =>
  z.strictObject({
    mode: TransactionModeSchema,
    transaction_id: z.optional(TransactionIdSchema),
    plan_id: z.optional(IdSchema),
    /** The action ID this compensating action compensates. */
    compensation_for: z.optional(IdSchema),
  }),
);
export type TransactionContext = z.infer<typeof TransactionContextSchema>;

export const ObservabilityMetadataSchema = z.deferred(() =>
  z.strictObject({
    trace_id: z.optional(z.string().check(z.minLength(1), z.maxLength(128), z.regex(/^[A-Za-z0-9._:-]+$/))),
    span_id: z.optional(z.string().check(z.minLength(1), z.maxLength(128), z.regex(/^[A-Za-z0-9._:-]+$/))),
    parent_span_id: z.optional(z.string().check(z.minLength(1), z.maxLength(128), z.regex(/^[A-Za-z0-9._:-]+$/))),
    correlation_id: z.optional(IdSchema),
    /**
     * Caller-carried completion time of the original action, the compensation
     * window fallback when no transaction record exists. Not equivalent to a
     * durable completion timestamp.
     */
    original_completed_at: z.optional(Rfc3339Schema),
  }),
);
/** @public */
export type ObservabilityMetadata = z.infer<typeof ObservabilityMetadataSchema>;

export const ActionMetadataSchema = z.deferred(() =>
  z.strictObject({
    observability: z.optional(ObservabilityMetadataSchema),
    labels: z.optional(LabelsSchema),
  }),
);
/** @public */
export type ActionMetadata = z.infer<typeof ActionMetadataSchema>;

/** The governed action envelope. Strict: unknown fields are rejected. */
export const ActionSchema = z.deferred(() =>
  z.strictObject({
    id: IdSchema,
    capability_id: IdSchema,
    input: JsonObjectSchema,
    idempotency_key: z.optional(IdempotencyKeySchema),
    identity: z.optional(IdentityContextSchema),
    metadata: z.optional(ActionMetadataSchema),
    transaction: z.optional(TransactionContextSchema),
  }),
);
export type Action = z.infer<typeof ActionSchema>;

export const ACTION_STATUSES = ['accepted', 'running', 'requires_human', 'completed', 'failed', 'cancelled'] as const;
export const ActionStatusSchema = z.enum(ACTION_STATUSES);
export type ActionStatus = z.infer<typeof ActionStatusSchema>;
export const TERMINAL_ACTION_STATUSES: readonly ActionStatus[] = ['completed', 'failed', 'cancelled'];

/**
 * The result of an action. A `failed` result carries an error; a
 * `completed` result carries none.
 */
export const ActionResultSchema = z.deferred(() =>
  z
    .strictObject({
      action_id: IdSchema,
      status: ActionStatusSchema,
      output: z.optional(JsonValueSchema),
      error: z.optional(ProtocolErrorSchema),
      /** True when this result is a stored terminal result replayed without invoking the connector. */
      replayed: z.optional(z.boolean()),
      completed_at: z.optional(Rfc3339Schema),
      metadata: z.optional(JsonObjectSchema),
    })
    .check(
      z.superRefine((r, ctx) => {
        if (r.status === 'failed' && r.error === undefined) {
          ctx.addIssue({ code: 'custom', path: ['error'], message: 'a failed result needs an error' });
        }
        if (r.status === 'completed' && r.error !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['error'], message: 'a completed result carries no error' });
        }
      }),
    ),
);
export type ActionResult = z.infer<typeof ActionResultSchema>;
