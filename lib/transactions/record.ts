/**
 * The durable transaction record and its receipts, as stored by any
 * TransactionStore backend. Field names are snake_case, like the protocol.
 *
 * Protocol shapes are imported as types only: the record stores them as given
 * (they were validated at the envelope), so this file has no runtime
 * dependency on lib/protocol.
 */
import type {
  ActionResult,
  IdentityContext,
  JsonObject,
  JsonValue,
  Principal,
  ProtocolError,
  ProviderOperationRef,
  Receipt,
  TransactionPlan,
} from '../../packages/connector-sdk/src/protocol/index.js';
import type { TransactionMode, TransactionStatus } from './status.js';

export type { ProviderOperationRef, Receipt };

export interface TransactionRecord {
  readonly tenant_id: string;
  readonly transaction_id: string;
  readonly status: TransactionStatus;
  /** Compare-and-set revision: 1 after creation, +1 on every write. */
  readonly revision: number;
  /** The mode of the action that created the record. */
  readonly mode: TransactionMode;
  readonly capability_id: string;
  /**
   * The action currently bound to the record: the creating action, replaced by
   * the commit action ID on `claim_plan`. (The planning action ID stays in
   * `plan.planning_action_id`.)
   */
  readonly action_id: string;
  readonly plan_id?: string;
  readonly plan?: TransactionPlan;
  /** The principal that created the record (planning principal for plans). */
  readonly principal: Principal;
  /** Identity snapshot; absent when the action carried no identity context (presence is compared at commit). */
  readonly identity?: IdentityContext;
  /** For a compensating record: the action ID it compensates. */
  readonly compensation_for?: string;
  readonly provider_operation?: ProviderOperationRef;
  /** Opaque connector-defined reconciliation cursor. */
  readonly reconciliation_cursor?: string;
  /** Redacted error of the last settled attempt. */
  readonly error?: ProtocolError;
  /** Terminal action result (replayed by the replay gate). Absent when `result_ref` names the action that holds it. */
  readonly result?: ActionResult;
  /**
   * The result stored once: the ID of the action whose item holds this record's result (the action whose atomic
   * settlement settled the record, retained at least as long as it). Readers resolve it through that action
   * (lib/runtime/view.ts `withStoredResult`); a record without it carries its own `result` (docs/table-design.md).
   */
  readonly result_ref?: string;
  /** Earliest reconciliation time (RFC 3339), set while `outcome_unknown`. */
  readonly next_reconcile_at?: string;
  /** Number of `begin_reconcile` transitions so far. */
  readonly reconcile_attempts: number;
  /** Set when reconciliation was escalated to a human (wire status `requires_human`). */
  readonly escalated_at?: string;
  /** The fenced attempt lease, while one is held: its owner and its expiry (RFC 3339, UTC, millisecond precision). */
  readonly lease_owner?: string;
  readonly lease_expires_at?: string;
  /** Lease grants so far (0 = never leased). A zombie attempt holds an older fence and an older revision. */
  readonly fence: number;
  /**
   * Epoch seconds: every other item of the record (its receipt items, its plan-ID item) holds a ttl at or after
   * this (lib/runtime/retention.ts). Absent: they hold none until a terminal write stamps them.
   */
  readonly items_ttl?: number;
  /** Number of receipts in the chain (next receipt's `seq`). */
  readonly receipt_count: number;
  /** Hash of the last receipt; absent while the chain is empty. */
  readonly receipt_head?: string;
  readonly created_at: string;
  readonly updated_at: string;
  /** Opaque runtime extras (small, redacted JSON). Merged key by key on writes. */
  readonly data: JsonObject;
}

/** A stored receipt: the protocol receipt plus the revision it was appended with and its tenant. */
export interface StoredReceipt {
  readonly tenant_id: string;
  readonly receipt: Receipt;
  /** Optional redacted payload the runtime chose to keep with the link (not part of the hash unless the runtime put it there). */
  readonly evidence?: JsonValue;
}

/** A receipt to append atomically with a write. */
export interface ReceiptAppend {
  /**
   * The protocol receipt. `seq` must equal the record's `receipt_count`,
   * `prev_hash` the record's `receipt_head` (GENESIS_RECEIPT_HASH for the
   * first), `revision` the revision this write produces, and `hash` must be
   * receiptHash(the other fields).
   */
  readonly receipt: Receipt;
  readonly evidence?: JsonValue;
}
