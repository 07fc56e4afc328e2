/**
 * Port: idempotency reservations.
 *
 * A reservation is scoped to (tenant, principal, idempotency key) and carries
 * the request fingerprint (see `idempotencyFingerprint`) and its owner: the
 * action ID and that action's attempt fence. Rules:
 *
 * - `reserve` is ONE conditional put: it succeeds when no reservation exists
 *   or the existing one has expired (expiry is checked inside the condition,
 *   so an expired item that TTL has not deleted yet counts as absent).
 *   Otherwise the existing reservation decides the outcome (from the failed
 *   write's ALL_OLD image, not a second read):
 *   - a different fingerprint → AipError `idempotency.fingerprint_mismatch` (409);
 *   - `in_flight` → `{ outcome: 'in_flight', retry_after_ms }` (the caller
 *     answers `idempotency.in_flight`, see `idempotencyInFlightError`);
 *   - `completed` → `{ outcome: 'completed', result }` (the caller marks it
 *     `replayed: true`; the store returns it as stored);
 *   - `uncertain` → `{ outcome: 'uncertain' }`: the first request's outcome is
 *     unknown and reconciliation is required (`idempotency.outcome_unknown`).
 * - `complete`, `markUncertain` and `adopt` are conditional on the owner
 *   (action ID + fence): a zombie attempt with an older fence cannot write.
 * - There is NO delete operation. A reservation is never removed on an
 *   error path; an ambiguous error marks it `uncertain`, which also removes
 *   its expiry (kept until reconciliation completes it).
 * - Retention: TTL attribute `ttl`, 24 h by default (configurable). The
 *   runtime reserves for the retention plus
 *   {@link IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS}; a settlement within the
 *   allowance leaves the reservation `in_flight` (its settled action answers
 *   for it), a later one completes it, which restarts the retention.
 *
 * Errors (all AipError): `idempotency.fingerprint_mismatch`,
 * `idempotency.not_owner` (complete/markUncertain/adopt by a non-owner, a
 * stale fence, or on a missing/expired reservation; details name the current
 * owner and status), `idempotency.invalid_request`,
 * `transaction.store_unavailable`, `transaction.record_too_large`.
 *
 * The DynamoDB adapter is lib/aws/dynamo/idempotency-store.ts.
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import {
  hashJson,
  sha256Hex,
  type ActionResult,
  type IdentityContext,
  type JsonObject,
  type TransactionContext,
} from '../../packages/connector-sdk/src/protocol/index.js';

/** Default retention of a reservation: 24 hours. */
export const DEFAULT_IDEMPOTENCY_RETENTION_SECONDS = 24 * 3600;
/**
 * How long after its action's creation a settlement is expected. The admission
 * writes the reservation with the retention plus this allowance, so an action
 * that settles within it keeps its key answering its result for the whole
 * retention counted from the settlement without the reservation being
 * rewritten: a held `in_flight` key whose action has settled answers the
 * action's result. A later settlement (an approval-gated action, a recovered
 * attempt) completes the reservation in its own write, restarting the
 * retention (docs/table-design.md, "idempotency").
 */
export const IDEMPOTENCY_SETTLEMENT_ALLOWANCE_SECONDS = 3_600;
/** Default retry hint for an in-flight reservation. */
export const DEFAULT_IDEMPOTENCY_RETRY_AFTER_MS = 1_000;
/** Version tag hashed into every fingerprint (bump when the covered fields change). */
export const IDEMPOTENCY_FINGERPRINT_VERSION = 1;

export type IdempotencyStatus = 'in_flight' | 'completed' | 'uncertain';

export interface IdempotencyScope {
  readonly tenant_id: string;
  /** The runtime principal ID (the submitting principal). */
  readonly principal_id: string;
  /** The raw idempotency key (stored only as its sha256 hex). */
  readonly key: string;
}

export interface IdempotencyReservation {
  readonly tenant_id: string;
  readonly principal_id: string;
  /** sha256 hex of the idempotency key: the raw key is never stored. */
  readonly key_hash: string;
  readonly fingerprint: string;
  readonly status: IdempotencyStatus;
  /** The owning action. */
  readonly action_id: string;
  /** The owning attempt's fence (the action's lease fence). */
  readonly fence: number;
  readonly transaction_id?: string;
  /** The stored result, once completed (absent on a completion by reference, below). */
  readonly result?: ActionResult;
  /**
   * Set when a reconciliation (the reconcile action's ID) or an operator's resolution (`operator:<id>`) completed the
   * uncertain reservation. Without `result`, the answer is not copied onto the item: it is the owning action's result
   * annotated with its transaction's reconciliation, resolved by the reader (lib/runtime/pipeline/idempotency.ts
   * heldKey; docs/table-design.md, "idempotency").
   */
  readonly reconciled_by?: string;
  readonly revision: number;
  readonly created_at: string;
  readonly updated_at: string;
  /** RFC 3339; absent while uncertain (kept until resolved). */
  readonly expires_at?: string;
  /** Epoch seconds (DynamoDB TTL); absent while uncertain. */
  readonly ttl?: number;
}

export interface ReserveInput extends IdempotencyScope {
  /** From idempotencyFingerprint(). */
  readonly fingerprint: string;
  readonly action_id: string;
  /** The owning attempt's fence (0 before the first lease). */
  readonly fence: number;
  readonly transaction_id?: string;
  /** Override the store's retention for this reservation. */
  readonly retention_seconds?: number;
}

export type ReserveOutcome =
  | { readonly outcome: 'reserved'; readonly reservation: IdempotencyReservation }
  | { readonly outcome: 'in_flight'; readonly retry_after_ms: number; readonly reservation: IdempotencyReservation }
  | { readonly outcome: 'completed'; readonly result: ActionResult; readonly reservation: IdempotencyReservation }
  | { readonly outcome: 'uncertain'; readonly reservation: IdempotencyReservation }
  /** Completed by reference (`reconciled_by` without `result`): the caller resolves the answer from the action and its transaction. */
  | { readonly outcome: 'reconciled'; readonly reservation: IdempotencyReservation };

export interface OwnerInput extends IdempotencyScope {
  readonly action_id: string;
  /** The fence the caller holds; must equal the stored owner fence. */
  readonly fence: number;
}

/**
 * A completion stores `result`, or, with `reconciled_by` alone, a reference to the action's reconciled answer. With
 * `reconciled_by` the write completes only an `uncertain` reservation (the outcome a reconciliation resolves).
 */
export type CompleteInput = OwnerInput & { readonly retention_seconds?: number } & (
    | { readonly result: ActionResult; readonly reconciled_by?: string }
    | { readonly result?: undefined; readonly reconciled_by: string }
  );

export interface AdoptInput extends IdempotencyScope {
  readonly action_id: string;
  /** The new attempt's fence; must be greater than the stored one. */
  readonly fence: number;
}

export interface IdempotencyStore {
  /** Strongly consistent read; an expired reservation reads as undefined. */
  get(scope: IdempotencyScope): Promise<IdempotencyReservation | undefined>;
}

export interface FingerprintInput {
  readonly capability_id: string;
  readonly input: JsonObject;
  /** Action.transaction AS SUBMITTED (before the runtime copies or generates a transaction ID). */
  readonly transaction?: TransactionContext;
  /** Action.identity: only tenant_id and external_account_id are covered. */
  readonly identity?: IdentityContext;
}

/**
 * The request fingerprint: sha256 hex over canonical JSON (RFC 8785) of
 *
 *   { v: 1, capability_id, input,
 *     transaction: { mode, transaction_id|null, plan_id|null, compensation_for|null } | null,
 *     account: { tenant_id|null, external_account_id|null } | null }
 *
 * It covers what makes two submissions "the same request": the capability,
 * the input, the transaction intent as the caller sent it, and the account the
 * effect lands on. It excludes the action ID (a retry may carry a new one),
 * metadata (trace IDs differ per retry), the idempotency key itself and the
 * principal (both are the reservation's scope).
 */
export function idempotencyFingerprint(f: FingerprintInput): string {
  const t = f.transaction;
  const i = f.identity;
  return hashJson({
    v: IDEMPOTENCY_FINGERPRINT_VERSION,
    capability_id: f.capability_id,
    input: f.input,
    transaction:
      t === undefined
        ? null
        : { mode: t.mode, transaction_id: t.transaction_id ?? null, plan_id: t.plan_id ?? null, compensation_for: t.compensation_for ?? null },
    account: i === undefined ? null : { tenant_id: i.tenant_id ?? null, external_account_id: i.external_account_id ?? null },
  });
}

// The reservation identity is derived where downstream idempotency keys are: the connector SDK.
export { reservationIdentity } from '../../packages/connector-sdk/src/idempotency.js';

/** sha256 hex of an idempotency key (the stored key component). */
export function idempotencyKeyHash(key: string): string {
  return sha256Hex(key);
}

/** The 409 answer for an in-flight reservation. */
export function idempotencyInFlightError(outcome: { retry_after_ms: number; reservation: Pick<IdempotencyReservation, 'action_id'> }): AipError {
  return new AipError('idempotency.in_flight', 'A request with this idempotency key is still in flight', {
    details: { action_id: outcome.reservation.action_id, retry_after_ms: outcome.retry_after_ms },
    retryAfterMs: outcome.retry_after_ms,
  });
}

/** The 409 answer for a reservation whose first request has an unknown outcome. */
export function idempotencyOutcomeUnknownError(outcome: { reservation: Pick<IdempotencyReservation, 'action_id' | 'transaction_id'> }): AipError {
  const r = outcome.reservation;
  return new AipError('idempotency.outcome_unknown', 'The earlier request with this idempotency key has an unknown outcome; reconciliation is required', {
    details: { action_id: r.action_id, ...(r.transaction_id !== undefined ? { transaction_id: r.transaction_id } : {}) },
  });
}
