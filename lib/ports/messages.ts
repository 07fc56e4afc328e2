/**
 * The messages the runtime puts on its queues.
 *
 * A message names work; it never carries it. It holds identifiers and fence
 * tokens, never the action input, provider payloads, credentials or any other
 * secret. The worker reloads everything else from the durable records.
 *
 * One exception, and only on the invoke message a fresh admission sends:
 * `admitted`, the images of the items that admission itself just wrote (the
 * action item without its input, the transaction record, a compensation's
 * memory), exactly as stored, so that the first delivery starts from them
 * instead of reading them again (docs/runtime.md, "The worker's first read";
 * docs/table-design.md, "The attempt start"). What they hold is what the table
 * holds, minus the action's input: the stored plan and results are redacted
 * as stored, and the input (the only raw caller data an in-flight action keeps)
 * never travels. The sweeper, a deferral, a redelivery and an operator send
 * IDs only.
 *
 * The same holds for the reconcile message a schedule fires (`scheduled`): the
 * transaction record exactly as the write that moved it to `outcome_unknown`
 * (a settlement, a refused or rescheduled reconciliation) returned it, so that
 * the consumer starts from it instead of reading it (docs/runtime.md, "The
 * reconcile consumer's first read"). A transaction record holds no action
 * input; the original action (whose input the reconcile action needs) is not
 * carried, and is read.
 *
 * The schemas are strict: an unknown field (for example `input`, `secret` or
 * `credentials`) is rejected on both the sending and the receiving side, and
 * so is an image that is not the fresh admission's shape, names another
 * action or transaction, or is incomplete: an image is refused with its
 * message, never trusted in part.
 *
 * Each side parses a message once. What this module built and validated from
 * a fresh JSON tree (the sender's message with images, the receiver's decoded
 * message) is deep-frozen, and a second validation of that same object (the
 * queue's send, the Runtime's entry points) returns it as it is. An
 * execute's invoke message was parsed twice by the submit and twice by the
 * worker; sending and receiving one now takes a third fewer instructions
 * (docs/bench/analysis.md, "Issue 22: the first execute counted").
 */
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { deepFreeze } from '../../packages/connector-sdk/src/common/deep-freeze.js';
import { joinIssuePath } from '../../packages/connector-sdk/src/common/issues.js';
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { ActionMetadataSchema, ActionResultSchema, TransactionContextSchema, TransactionModeSchema } from '../../packages/connector-sdk/src/protocol/action.js';
import { IdentityContextSchema, PrincipalSchema } from '../../packages/connector-sdk/src/protocol/identity.js';
import { JsonObjectSchema } from '../../packages/connector-sdk/src/protocol/json.js';
import { ProtocolErrorSchema } from '../../packages/connector-sdk/src/protocol/error.js';
import { ProviderOperationRefSchema, ReconciliationCursorSchema } from '../../packages/connector-sdk/src/protocol/provider.js';
import { IdempotencyKeySchema, IdSchema, Rfc3339Schema, TransactionIdSchema } from '../../packages/connector-sdk/src/protocol/primitives.js';
import { TransactionPlanSchema } from '../../packages/connector-sdk/src/protocol/transaction.js';
import type { TransactionRecord } from './transaction-store.js';

/**
 * A fence token: a non-negative safe integer that only ever grows. A worker
 * presents it on every conditional write, so a zombie attempt holding an older
 * token cannot settle over a newer one.
 */
export const FenceTokenSchema = z.int().check(z.gte(0));

/**
 * The action item a fresh admission wrote, without its input (`ActionRecord`
 * of lib/ports/action-store.ts less `action.input`): `accepted`, never
 * leased (fence 0, attempt 0), no lease, route, result or cancellation
 * request. Any other shape is refused.
 */
const admittedActionImage = () =>
  z.strictObject({
    tenant_id: IdSchema,
    action_id: IdSchema,
    principal: PrincipalSchema,
    capability_id: IdSchema,
    mode: z.optional(TransactionModeSchema),
    transaction_id: z.optional(TransactionIdSchema),
    status: z.literal('accepted'),
    revision: z.int().check(z.gte(1)),
    // The envelope as stored, less `input` (ActionSchema's other fields).
    action: z.strictObject({
      id: IdSchema,
      capability_id: IdSchema,
      idempotency_key: z.optional(IdempotencyKeySchema),
      identity: z.optional(IdentityContextSchema),
      metadata: z.optional(ActionMetadataSchema),
      transaction: z.optional(TransactionContextSchema),
    }),
    input_hash: z.string().check(z.minLength(1), z.maxLength(128)),
    approval_id: z.optional(IdSchema),
    idempotency_key: z.optional(IdempotencyKeySchema),
    actor: z.optional(
      z.strictObject({
        scheme: z.string().check(z.minLength(1), z.maxLength(64)),
        issuer: z.optional(z.string().check(z.maxLength(2048))),
        scopes: z.array(z.string().check(z.maxLength(256))).check(z.maxLength(256)),
        issued_at: z.optional(Rfc3339Schema),
        expires_at: z.optional(Rfc3339Schema),
      }),
    ),
    fence: z.literal(0),
    attempt: z.literal(0),
    created_at: Rfc3339Schema,
    updated_at: Rfc3339Schema,
  });

/**
 * What every record image on a queue or schedule holds alike (`TransactionRecord` of lib/transactions/record.ts): its
 * identity, the action and plan it is bound to, and the chain's tip with its times. Each image adds the status and
 * the recovery state it may have.
 */
const recordImageIdentity = () => ({
  tenant_id: IdSchema,
  transaction_id: TransactionIdSchema,
  revision: z.int().check(z.gte(1)),
  capability_id: IdSchema,
  action_id: IdSchema,
  plan_id: z.optional(IdSchema),
  plan: z.optional(TransactionPlanSchema),
  principal: PrincipalSchema,
  identity: z.optional(IdentityContextSchema),
  compensation_for: z.optional(IdSchema),
});
const recordImageTip = () => ({
  // The ttl its other items were written with, under a retention (lib/runtime/retention.ts).
  items_ttl: z.optional(z.int().check(z.gte(1))),
  receipt_count: z.int().check(z.gte(1)),
  receipt_head: z.string().check(z.minLength(1), z.maxLength(128)),
  created_at: Rfc3339Schema,
  updated_at: Rfc3339Schema,
  data: JsonObjectSchema,
});

/**
 * The transaction record a fresh admission wrote (`TransactionRecord` of
 * lib/transactions/record.ts): in an attempt status, never leased, without a
 * provider operation, cursor, error or reconciliation state (a claimed plan
 * keeps its preview's result).
 */
const admittedTransactionImage = () =>
  z.strictObject({
    ...recordImageIdentity(),
    status: z.enum(['prepared', 'committing', 'compensating']),
    // A commit's record keeps the mode of the action that created it (`plan`).
    mode: z.enum(['execute', 'plan', 'commit', 'compensate']),
    // A claimed plan's record keeps the plan preview's result (stored redacted, as every result).
    result: z.optional(ActionResultSchema),
    reconcile_attempts: z.literal(0),
    fence: z.literal(0),
    ...recordImageTip(),
  });

/** What a compensation's attempt hands its connector (CompensationMemory of the connector SDK), as the admission built it. */
const admittedCompensation = () =>
  z.strictObject({
    original_action_id: IdSchema,
    original_transaction_id: z.optional(TransactionIdSchema),
    original_result: z.optional(ActionResultSchema),
    requested_capability_id: IdSchema,
    compensation_capability_id: IdSchema,
    compensation_action_id: IdSchema,
  });

/** The images a fresh admission's invoke message carries (see the module comment). */
export const AdmittedImagesSchema = z.deferred(() =>
  z.strictObject({
    action: admittedActionImage(),
    transaction: z.optional(admittedTransactionImage()),
    compensation: z.optional(admittedCompensation()),
  }),
);
export type AdmittedImages = z.infer<typeof AdmittedImagesSchema>;

/** Connector invocation: run (or re-drive) attempt `attempt` of action `action_id`. */
export const InvokeMessageSchema = z.deferred(() =>
  z
    .strictObject({
      kind: z.literal('invoke'),
      tenant_id: IdSchema,
      action_id: IdSchema,
      transaction_id: z.optional(TransactionIdSchema),
      fence: FenceTokenSchema,
      attempt: z.int().check(z.gte(1), z.lte(1_000_000)),
      /** The fresh admission's images: only on the admission's own message, which is its first attempt (fence 0, attempt 1). */
      admitted: z.optional(AdmittedImagesSchema),
    })
    .check(
      z.superRefine((m, ctx) => {
        const images = m.admitted;
        if (images === undefined) return;
        const wrong = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: ['admitted', ...path.split('.')], message });
        if (m.fence !== 0 || m.attempt !== 1) wrong('action', 'images travel only on a first attempt (fence 0, attempt 1)');
        const a = images.action;
        if (a.tenant_id !== m.tenant_id || a.action_id !== m.action_id || a.action.id !== m.action_id || a.capability_id !== a.action.capability_id)
          wrong('action', 'the action image is not the action the message names');
        if (a.transaction_id !== m.transaction_id) wrong('action.transaction_id', "the action image is not bound to the message's transaction");
        const t = images.transaction;
        if (t !== undefined && (t.tenant_id !== m.tenant_id || t.transaction_id !== m.transaction_id || t.action_id !== m.action_id))
          wrong('transaction', 'the transaction image is not the one the message names, bound to its action');
        const c = images.compensation;
        if (c !== undefined && (c.compensation_action_id !== m.action_id || t?.mode !== 'compensate' || t.compensation_for !== c.original_action_id))
          wrong('compensation', "the compensation memory is not this compensation's");
      }),
    ),
);
export type InvokeMessage = z.infer<typeof InvokeMessageSchema>;

/** Why a reconciliation was enqueued: its Scheduler schedule fired, the sweeper found it overdue, or an operator asked. */
export const RECONCILE_REASONS = ['schedule', 'sweeper', 'operator'] as const;

/**
 * The `outcome_unknown` record a schedule was created for (`TransactionRecord` of lib/transactions/record.ts), as
 * the write that made it so returned it: not escalated (an escalated record has no schedule). Any other shape is
 * refused.
 */
const scheduledTransactionImage = () =>
  z.strictObject({
    ...recordImageIdentity(),
    status: z.literal('outcome_unknown'),
    mode: TransactionModeSchema,
    provider_operation: z.optional(ProviderOperationRefSchema),
    reconciliation_cursor: z.optional(ReconciliationCursorSchema),
    error: z.optional(ProtocolErrorSchema),
    result: z.optional(ActionResultSchema),
    result_ref: z.optional(IdSchema),
    next_reconcile_at: z.optional(Rfc3339Schema),
    reconcile_attempts: z.int().check(z.gte(0)),
    lease_owner: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
    lease_expires_at: z.optional(Rfc3339Schema),
    fence: FenceTokenSchema,
    ...recordImageTip(),
  });

/** The images a schedule's reconcile message carries (see the module comment). */
const ScheduledImagesSchema = z.deferred(() => z.strictObject({ transaction: scheduledTransactionImage() }));

/** Reconciliation job for one `outcome_unknown` transaction. */
export const ReconcileMessageSchema = z.deferred(() =>
  z
    .strictObject({
      kind: z.literal('reconcile'),
      tenant_id: IdSchema,
      transaction_id: TransactionIdSchema,
      reason: z.enum(RECONCILE_REASONS),
      /** The record the schedule was created for: only on a schedule's message, naming the message's transaction. */
      scheduled: z.optional(ScheduledImagesSchema),
    })
    .check(
      z.superRefine((m, ctx) => {
        const t = m.scheduled?.transaction;
        if (t === undefined) return;
        if (m.reason !== 'schedule') ctx.addIssue({ code: 'custom', path: ['scheduled'], message: 'images travel only on a schedule’s message' });
        if (t.tenant_id !== m.tenant_id || t.transaction_id !== m.transaction_id)
          ctx.addIssue({ code: 'custom', path: ['scheduled', 'transaction'], message: 'the transaction image is not the one the message names' });
      }),
    ),
);
export type ReconcileMessage = z.infer<typeof ReconcileMessageSchema>;

export const QueueMessageSchema = z.deferred(() => z.discriminatedUnion('kind', [InvokeMessageSchema, ReconcileMessageSchema]));
export type QueueMessage = z.infer<typeof QueueMessageSchema>;
export type QueueMessageKind = QueueMessage['kind'];

/**
 * Upper bound for an encoded message. A message of IDs is a few hundred bytes; one with a fresh admission's images
 * (`admitted`) 0.7 to 3.4 KB (a plain invocation; an execute; a compensate with the original result; a commit with its
 * plan). The
 * bound is a quarter of the 64 KiB chunk SQS bills a request by, so a message with images costs the same one request
 * as a message of IDs, and it bounds what the worker parses per record. An admission whose images would not fit sends
 * IDs only ({@link invokeWithImages}). EventBridge Scheduler carries reconcile messages only, as its target's
 * `Input`, whose own limit is 256 KB (the `Input` field of `Target`, @aws-sdk/client-scheduler); a schedule's message
 * with its record image is bounded the same way ({@link reconcileWithImages}).
 */
export const QUEUE_MESSAGE_MAX_BYTES = 16_384;

function invalid(reason: string, issues?: z.core.$ZodIssue[]): AipError {
  // Only paths and issue codes go into details: never the offending values,
  // which could be exactly the raw input or secret this schema keeps out.
  const details: Record<string, unknown> = { reason };
  if (issues) {
    details.issues = issues.map((i) => ({
      path: joinIssuePath(i.path, '.'),
      code: i.code,
      ...(i.code === 'unrecognized_keys' ? { keys: (i as { keys: string[] }).keys } : {}),
    }));
  }
  return new AipError('queue.message_invalid', undefined, { details });
}

/**
 * The schema of a message of kind `kind`: its own for `invoke` and `reconcile`, the union's otherwise (which then
 * reports the unknown discriminator). The union runs the option of the message's kind, so a message of a known kind
 * gets the same result and issues from that option alone, and a process that only sends invoke messages (the submit)
 * never builds the reconcile message's schemas (they are `z.deferred`).
 */
function schemaOf(value: unknown): typeof InvokeMessageSchema | typeof ReconcileMessageSchema | typeof QueueMessageSchema {
  const kind = typeof value === 'object' && value !== null ? (value as { kind?: unknown }).kind : undefined;
  return kind === 'invoke' ? InvokeMessageSchema : kind === 'reconcile' ? ReconcileMessageSchema : QueueMessageSchema;
}

/**
 * The messages this module built from a fresh JSON tree and validated ({@link invokeWithImages},
 * {@link reconcileWithImages}, {@link decodeQueueMessage}), each deep-frozen, so none can have changed since. The
 * next validation of the same object (the queue's send of an admission's message, the Runtime's of a message the
 * worker decoded) answers it without parsing it a second time. Objects a caller built are never entered: freezing
 * them would freeze what the caller still holds.
 */
const VALIDATED = new WeakSet<object>();

/** `message`, validated from a tree no one else holds: frozen and entered in {@link VALIDATED}. */
function sealed<M extends QueueMessage>(message: M): M {
  deepFreeze(message);
  VALIDATED.add(message);
  return message;
}

/** Validates a message; throws `queue.message_invalid` on anything else. */
export function validateQueueMessage(value: unknown): QueueMessage {
  if (typeof value === 'object' && value !== null && VALIDATED.has(value)) return value as QueueMessage;
  const parsed = schemaOf(value).safeParse(value);
  if (!parsed.success) throw invalid('schema', parsed.error.issues);
  return parsed.data;
}

/** Serialises a message {@link validateQueueMessage} returned; throws `queue.message_invalid` when it is too large. */
export function encodeValidQueueMessage(valid: QueueMessage): string {
  const body = JSON.stringify(valid);
  if (Buffer.byteLength(body, 'utf8') > QUEUE_MESSAGE_MAX_BYTES) throw invalid('too_large');
  return body;
}

/** Validates and serialises a message into a queue message body. */
export function encodeQueueMessage(message: QueueMessage): string {
  return encodeValidQueueMessage(validateQueueMessage(message));
}

/**
 * The admission's invoke message with its images when they are valid and the encoded message fits
 * {@link QUEUE_MESSAGE_MAX_BYTES}; otherwise the message of IDs alone (the worker then reads, as for any message).
 */
export function invokeWithImages(message: InvokeMessage, admitted: AdmittedImages): InvokeMessage {
  // As it would travel: the JSON form (absent optional fields dropped), checked by the receiving side's schema.
  const candidate: unknown = JSON.parse(JSON.stringify({ ...message, admitted }));
  const parsed = InvokeMessageSchema.safeParse(candidate);
  if (!parsed.success) return message;
  return Buffer.byteLength(JSON.stringify(parsed.data), 'utf8') <= QUEUE_MESSAGE_MAX_BYTES ? sealed(parsed.data) : message;
}

/**
 * A schedule's reconcile message with the record image when it is valid and the encoded message fits
 * {@link QUEUE_MESSAGE_MAX_BYTES}; otherwise the message of IDs alone (the consumer then reads, as for any message).
 */
export function reconcileWithImages(message: ReconcileMessage, transaction: TransactionRecord): ReconcileMessage {
  const candidate: unknown = JSON.parse(JSON.stringify({ ...message, scheduled: { transaction } }));
  const parsed = ReconcileMessageSchema.safeParse(candidate);
  if (!parsed.success) return message;
  return Buffer.byteLength(JSON.stringify(parsed.data), 'utf8') <= QUEUE_MESSAGE_MAX_BYTES ? sealed(parsed.data) : message;
}

/** Parses and validates a queue message body; throws `queue.message_invalid`. */
export function decodeQueueMessage(body: string): QueueMessage {
  if (Buffer.byteLength(body, 'utf8') > QUEUE_MESSAGE_MAX_BYTES) throw invalid('too_large');
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw invalid('malformed_json');
  }
  return sealed(validateQueueMessage(value));
}
