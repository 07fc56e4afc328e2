/**
 * Zod schemas of the HTTPS API's edge: path parameters, query strings,
 * headers, edge-level bodies and response bodies. The protocol objects
 * (Action, TransactionRequest, ActionResult, TransactionResult, Problem) come
 * from lib/protocol and lib/errors; these schemas only wrap them.
 *
 * Query values arrive as strings (or arrays of strings when a name repeats),
 * so numeric parameters are parsed from strings. Every object is strict:
 * an unknown path/query field or body field is a 400.
 *
 * The OpenAPI document (functions/shared/openapi.ts) is generated from these.
 */
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { ActionResultSchema, ActionSchema } from '../../packages/connector-sdk/src/protocol/action.js';
import {
  ApprovalRequirementSchema,
  CapabilityKindSchema,
  CompensationContractSchema,
  ExecutionContractSchema,
  IdempotencyContractSchema,
  TransactionContractSchema,
} from '../../packages/connector-sdk/src/protocol/capability.js';
import { JsonObjectSchema } from '../../packages/connector-sdk/src/protocol/json.js';
import { IdSchema, ScopeSchema, TextSchema, TransactionIdSchema } from '../../packages/connector-sdk/src/protocol/primitives.js';
import { ResolutionSchema } from '../ports/approval-store.js';
import { TRANSACTION_MODES } from '../../packages/connector-sdk/src/protocol/action.js';
import { TransactionRequestSchema, TransactionResultSchema } from '../../packages/connector-sdk/src/protocol/transaction.js';
import { APPROVAL_DECISIONS, MAX_PAGE_LIMIT, MAX_WAIT_SECONDS, OPERATOR_VIEWS, SUBMIT_DISPOSITIONS, TRANSACTION_INCLUDES } from './constants.js';

export { MAX_WAIT_SECONDS, TENANT_HEADER } from './constants.js';

const intString = (min: number, max: number, what: string) =>
  z.pipe(
    z.pipe(z.string().check(z.regex(/^\d{1,9}$/, { message: `expected a non-negative integer (${what})` })), z.transform(Number)),
    z.int().check(z.gte(min), z.lte(max)),
  );

/**
 * Opaque pagination cursor: printable ASCII, bounded. The listings' cursors
 * are sealed (`c1.` + base64url of AES-256-GCM output, lib/runtime/cursor.ts,
 * `MAX_SEALED_CURSOR_LENGTH`); the runtime refuses any other cursor with
 * `runtime.cursor_invalid`.
 */
export const CursorSchema = z.deferred(() =>
  z
    .string()
    .check(z.minLength(1), z.maxLength(4096), z.regex(/^[\x21-\x7e]+$/, { message: 'invalid cursor' }))
    .check(z.meta({ description: 'Opaque cursor from the previous page' })),
);

export const WaitQuerySchema = z.deferred(() =>
  intString(0, MAX_WAIT_SECONDS, 'seconds').check(
    z.meta({
      description: `Long-poll for up to this many seconds (at most ${MAX_WAIT_SECONDS}) until the action reaches a terminal status or requires_human`,
    }),
  ),
);

export const LimitQuerySchema = z.deferred(() => intString(1, MAX_PAGE_LIMIT, 'page size').check(z.meta({ description: `Page size, 1-${MAX_PAGE_LIMIT}` })));

// --- path parameters --------------------------------------------------------

export const ActionPathSchema = z.deferred(() => z.strictObject({ id: IdSchema.check(z.meta({ description: 'Action ID' })) }));
export const ApprovalPathSchema = z.deferred(() => z.strictObject({ id: IdSchema.check(z.meta({ description: 'Approval ID' })) }));
export const TransactionPathSchema = z.deferred(() => z.strictObject({ id: TransactionIdSchema.check(z.meta({ description: 'Transaction ID' })) }));

// --- query strings ---------------------------------------------------------------

export const GetActionQuerySchema = z.deferred(() => z.strictObject({ wait: z.optional(WaitQuerySchema) }));

export const StreamQuerySchema = z.deferred(() =>
  z.strictObject({
    after: z.optional(
      intString(0, Number.MAX_SAFE_INTEGER, 'sequence number').check(z.meta({ description: 'Return only chunks with a sequence number greater than this' })),
    ),
  }),
);

/** `include=result,receipts` (comma-separated, or the parameter repeated). */
export const IncludeQuerySchema = z.deferred(() =>
  z
    .pipe(
      z.union([z.string(), z.array(z.string()).check(z.maxLength(8))]),
      z.transform((v, ctx) => {
        const parts = (Array.isArray(v) ? v : [v])
          .flatMap((s) => s.split(','))
          .map((s) => s.trim())
          .filter((s) => s.length > 0);
        const out = { result: false, receipts: false };
        for (const p of parts) {
          if (p === 'result' || p === 'receipts') out[p] = true;
          else {
            // zod/mini's transform context has no addIssue: the issue goes on the payload, as classic zod's addIssue put it.
            ctx.issues.push({ code: 'custom', message: `include accepts only ${TRANSACTION_INCLUDES.join(', ')}`, input: v });
            return z.NEVER;
          }
        }
        return out;
      }),
    )
    .check(z.meta({ description: 'Comma-separated: result, receipts' })),
);

export const GetTransactionQuerySchema = z.deferred(() =>
  z
    .strictObject({
      transaction_id: z.optional(IdSchema),
      plan_id: z.optional(IdSchema),
      action_id: z.optional(IdSchema),
      include: z.optional(IncludeQuerySchema),
    })
    .check(
      z.superRefine((q, ctx) => {
        const n = [q.transaction_id, q.plan_id, q.action_id].filter((v) => v !== undefined).length;
        if (n !== 1) ctx.addIssue({ code: 'custom', path: [], message: 'give exactly one of transaction_id, plan_id or action_id' });
      }),
    ),
);

export const OperatorViewSchema = z.enum(OPERATOR_VIEWS);
export type OperatorView = z.infer<typeof OperatorViewSchema>;

export const OperatorQuerySchema = z.deferred(() =>
  z.strictObject({
    view: OperatorViewSchema,
    cursor: z.optional(CursorSchema),
    limit: z.optional(LimitQuerySchema),
  }),
);

export const PageQuerySchema = z.deferred(() =>
  z.strictObject({
    cursor: z.optional(CursorSchema),
    limit: z.optional(LimitQuerySchema),
  }),
);

export const EmptyQuerySchema = z.deferred(() => z.strictObject({}));

// --- bodies --------------------------------------------------------------------

/** `POST /v1/actions`: a native action envelope, or a TransactionRequest wrapping one. */
export const SubmitBodySchema = z.deferred(() =>
  z.union([ActionSchema, TransactionRequestSchema]).check(
    z.meta({
      description: 'An action envelope, or a TransactionRequest (an object with `action`, `transaction_id` and `requested_by`)',
    }),
  ),
);

export const CancelBodySchema = z.deferred(() => z.strictObject({}).check(z.meta({ description: 'Empty object (the body may also be omitted)' })));

export const DecisionBodySchema = z.deferred(() =>
  z.strictObject({
    decision: z.enum(APPROVAL_DECISIONS),
    reason: z.optional(TextSchema(2048)),
  }),
);

/** POST /v1/operator/transactions/{id}/reconcile (the body may also be omitted). */
export const OperatorReconcileBodySchema = z.deferred(() => z.strictObject({ reason: z.optional(TextSchema(2048)) }));

/** POST /v1/operator/transactions/{id}/resolve. */
export const ResolveBodySchema = ResolutionSchema;

// --- responses -------------------------------------------------------------------

/**
 * - `completed`: a terminal result was reached synchronously (dry run, plan);
 * - `accepted`: admitted and enqueued for the worker;
 * - `requires_human`: waiting for an approval;
 * - `replayed`: a stored terminal result, no connector invocation;
 * - `rejected`: admission recorded a terminal failure (a failed downstream plan validation, a denial).
 */
export const SubmitDispositionSchema = z.enum(SUBMIT_DISPOSITIONS);
export type SubmitDisposition = z.infer<typeof SubmitDispositionSchema>;

export const SubmitResponseSchema = z.deferred(() =>
  z
    .strictObject({
      action_id: IdSchema,
      tenant_id: IdSchema,
      disposition: SubmitDispositionSchema,
      /** Where to poll the action: `GET` it, optionally with `?wait=`. */
      status_url: z.string(),
      action_result: ActionResultSchema,
      transaction_result: z.optional(TransactionResultSchema),
    })
    .check(z.meta({ description: 'How the runtime admitted the action, and its result so far' })),
);
export type SubmitResponse = z.infer<typeof SubmitResponseSchema>;

export const ActionStateSchema = z.deferred(() =>
  z
    .looseObject({
      action_result: ActionResultSchema,
      transaction: z.optional(TransactionResultSchema),
    })
    .check(z.meta({ description: 'The action result and, when the action is transactional, its transaction' })),
);
export type ActionState = z.infer<typeof ActionStateSchema>;

/** Bodies the runtime defines and the edge passes through unchanged. */
export const RuntimeObjectSchema = z.deferred(() => z.looseObject({}).check(z.meta({ description: 'As returned by the runtime' })));

/** GET /v1/capabilities (the Runtime's CapabilityList, lib/runtime/types.ts). */
export const TenantApprovalSummarySchema = z.deferred(() =>
  z
    .strictObject({
      policy_id: IdSchema,
      modes: z.array(z.enum([...TRANSACTION_MODES, 'none'])).check(z.meta({ description: 'Modes the policy applies to; `none` is a plain invocation' })),
      approver_scopes: z.array(ScopeSchema),
      allow_self_approval: z.boolean(),
    })
    .check(z.meta({ description: 'A tenant approval policy that selects the capability' })),
);

export const CapabilitySummarySchema = z.deferred(() =>
  z
    .strictObject({
      id: IdSchema,
      kind: CapabilityKindSchema,
      description: z.optional(z.string()),
      connector_id: IdSchema,
      connector_version: z.string(),
      /** JSON Schema of the action input. */
      input_schema: JsonObjectSchema,
      /** JSON Schema of the output, when the capability declares one. */
      output_schema: z.optional(JsonObjectSchema),
      transaction: z.optional(TransactionContractSchema),
      compensation: z.optional(CompensationContractSchema),
      execution: z.optional(ExecutionContractSchema),
      approval: z.optional(ApprovalRequirementSchema.check(z.meta({ description: 'The capability’s own approval requirement' }))),
      idempotency: z.optional(IdempotencyContractSchema),
      tenant_approval_policies: z.optional(
        z
          .array(TenantApprovalSummarySchema)
          .check(z.meta({ description: 'Only with a selected tenant: its approval policies that select this capability, in evaluation order' })),
      ),
    })
    .check(z.meta({ description: 'A registered capability the caller may invoke, with its schemas and contracts' })),
);

export const CapabilityListSchema = z.deferred(() =>
  z
    .strictObject({
      tenant_id: z.optional(IdSchema.check(z.meta({ description: 'The selected tenant, when one was' }))),
      items: z.array(CapabilitySummarySchema),
    })
    .check(z.meta({ description: 'The registered capabilities the caller’s scopes allow it to invoke, sorted by ID' })),
);

export const ConnectorReadinessSchema = z.deferred(() =>
  z
    .strictObject({
      id: IdSchema,
      ready: z.boolean(),
      detail: z.optional(z.string().check(z.maxLength(256), z.meta({ description: 'Operator-safe reason' }))),
    })
    .check(z.meta({ description: 'One hosted connector’s readiness' })),
);
export type ConnectorReadiness = z.infer<typeof ConnectorReadinessSchema>;

export const HealthSchema = z.deferred(() =>
  z
    .strictObject({
      status: z.enum(['ok', 'degraded']).check(z.meta({ description: '`ok` when every hosted connector is ready, else `degraded`' })),
      connectors: z.array(ConnectorReadinessSchema),
    })
    .check(z.meta({ description: 'Connector readiness: each hosted connector’s health check, bounded in time' })),
);
/**
 * `GET /v1/health`: `ok` when every hosted connector is ready (also when none
 * is hosted), else `degraded` (both 200). `connectors` is sorted by ID; each
 * `detail` is operator-safe (the connector contract), bounded and single-line.
 */
export type HealthReport = z.infer<typeof HealthSchema>;

export { ActionResultSchema, ActionSchema, TransactionRequestSchema, TransactionResultSchema };
