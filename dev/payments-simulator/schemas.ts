/**
 * Request, fault and view shapes of the payments provider simulator.
 *
 * The simulator plays an *external* payment provider, so its wire vocabulary is
 * its own (Stripe-like, snake_case) and deliberately not the AIP error catalogue:
 * a connector has to map it, exactly as it would map a real provider.
 */
import * as z from 'zod';

// --- public API requests ------------------------------------------------------

/** Largest amount accepted, in minor units (keeps every sum a safe integer). */
export const MAX_AMOUNT = 99_999_999;

const amount = z.int().min(1).max(MAX_AMOUNT);

/** Three ASCII letters, any case; the simulator stores and returns upper case. */
const currency = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 code')
  .transform((c) => c.toUpperCase());

const metadata = z.record(z.string().min(1).max(40), z.string().max(500)).refine((m) => Object.keys(m).length <= 50, 'at most 50 metadata keys');

export const CreateChargeBody = z.strictObject({
  amount,
  currency,
  customer: z.string().min(1).max(255).optional(),
  description: z.string().max(1000).optional(),
  metadata: metadata.optional(),
});
export type CreateChargeBody = z.output<typeof CreateChargeBody>;

export const CreateRefundBody = z.strictObject({
  charge_id: z.string().min(1).max(64),
  amount: amount.optional(),
  metadata: metadata.optional(),
});
export type CreateRefundBody = z.output<typeof CreateRefundBody>;

/** `POST /v1/operations/{id}/cancel` takes an empty body or `{}`. */
export const CancelBody = z.strictObject({});

/** Printable ASCII without spaces, 1..255 characters. */
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

export const OperationIdParam = z.string().regex(/^op_[A-Za-z0-9]{1,64}$/, 'must look like op_…');
export const ResourceIdParam = z.string().regex(/^(ch|re)_[A-Za-z0-9]{1,64}$/);

// --- provider vocabulary -------------------------------------------------------

export const OPERATION_KINDS = ['charge', 'refund'] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];

/** Operation and resource status. `canceled` uses the provider's (US) spelling. */
export const OPERATION_STATUSES = ['pending', 'succeeded', 'failed', 'canceled'] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

/** `POST /_sim/operations/{id}/resolve` */
export const ResolveBody = z.strictObject({
  status: z.enum(['succeeded', 'failed']),
  failure_code: z.string().min(1).max(64).optional(),
});
export type ResolveBody = z.output<typeof ResolveBody>;

// --- faults ---------------------------------------------------------------------

const errorStatus = z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504)]);

export const Fault = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('latency'),
    /** Delay in ms; a test can end it early with `releaseDelays()`. */
    ms: z.int().min(0).max(3_600_000),
    /** `after_commit` (default): the effect commits, then the response waits. */
    phase: z.enum(['before_commit', 'after_commit']).default('after_commit'),
  }),
  z.strictObject({ type: z.literal('drop_after_commit') }),
  z.strictObject({ type: z.literal('error_before_commit'), status: errorStatus.default(503) }),
  z.strictObject({ type: z.literal('error_after_commit'), status: errorStatus.default(503) }),
  /** Charges and refunds only: accepted, left `pending` until resolved or canceled. */
  z.strictObject({ type: z.literal('pending') }),
  /** Charges and refunds only: the operation is recorded as `failed` (HTTP 402). */
  z.strictObject({ type: z.literal('decline'), code: z.string().min(1).max(64).default('generic_decline') }),
]);
export type Fault = z.output<typeof Fault>;

/** A bare fault name is shorthand for `{ type: name }`. */
const FaultOrName = z.preprocess((v) => (typeof v === 'string' ? { type: v } : v), Fault);

export const FaultMatch = z.strictObject({
  /** HTTP method; defaults to POST (mutations). */
  method: z.enum(['GET', 'POST']).default('POST'),
  /** Exact path, or a prefix ending in `*` (e.g. `/v1/operations/*`). Omitted: any /v1 path. */
  path: z.string().min(1).max(300).optional(),
  idempotency_key: IdempotencyKey.optional(),
  /**
   * The `customer` of a `POST /v1/charges` body (exact). A request without one,
   * and every other route, does not match. Lets a run make one customer's
   * charges slow or failing while others are not (e.g. one tenant's traffic).
   */
  customer: z.string().min(1).max(255).optional(),
});
export type FaultMatch = z.output<typeof FaultMatch>;

export const FaultRule = z.strictObject({
  id: z.string().min(1).max(64).optional(),
  match: FaultMatch.default({ method: 'POST' }),
  fault: FaultOrName,
  /** How many requests this rule hits before it is used up (default 1), or `always`. */
  times: z.union([z.int().min(1).max(1_000_000), z.literal('always')]).default(1),
  /** Chance that a matching request is hit, drawn from the seeded RNG (default 1). */
  probability: z.number().min(0).max(1).default(1),
});
/** A fault rule as written by a test or sent to `POST /_sim/faults`. */
export type FaultRuleInput = z.input<typeof FaultRule>;
export type FaultRuleParsed = z.output<typeof FaultRule>;

export const FaultRuleList = z.array(FaultRule).max(1000);

// --- views ----------------------------------------------------------------------

export interface ChargeView {
  id: string;
  object: 'charge';
  operation_id: string;
  status: OperationStatus;
  amount: number;
  amount_refunded: number;
  currency: string;
  customer: string | null;
  description: string | null;
  metadata: Record<string, string>;
  failure_code: string | null;
  created_at: string;
}

export interface RefundView {
  id: string;
  object: 'refund';
  operation_id: string;
  charge_id: string;
  status: OperationStatus;
  amount: number;
  currency: string;
  metadata: Record<string, string>;
  failure_code: string | null;
  created_at: string;
}

export interface OperationView {
  object: 'operation';
  operation_id: string;
  kind: OperationKind;
  status: OperationStatus;
  resource_id: string;
  /** The refunded charge, for refunds; null for charges. */
  charge_id: string | null;
  amount: number;
  currency: string;
  idempotency_key: string;
  failure_code: string | null;
  created_at: string;
  updated_at: string;
}

/** One committed money movement. Failed, pending and canceled operations have none. */
export interface LedgerEntry {
  /** 1-based position in the ledger. */
  seq: number;
  kind: OperationKind;
  operation_id: string;
  resource_id: string;
  charge_id: string;
  idempotency_key: string;
  amount: number;
  currency: string;
  committed_at: string;
}
