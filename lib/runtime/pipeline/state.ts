/**
 * What flows through the admission pipeline once steps 1-4 passed.
 */
import type { Action, Principal, TransactionRequest } from '../../../packages/connector-sdk/src/protocol/index.js';
import type { ActionRecord, CreationLease } from '../../ports/action-store.js';
import type { ApprovalRecord } from '../../ports/approval-store.js';
import type { TransactionRecord } from '../../ports/transaction-store.js';
import type { CallerIdentity } from '../identity.js';
import type { RegisteredCapability } from '../registry.js';
import type { WaitingClient } from '../types.js';

export interface Admission {
  readonly caller: CallerIdentity;
  /** The submitting principal (the verified caller; never read from the body). */
  readonly principal: Principal;
  /** The verified tenant. */
  readonly tenant_id: string;
  /** The canonical action: wrapper transaction ID copied in, generated or recovered ID filled in. */
  readonly action: Action;
  readonly reg: RegisteredCapability;
  /** The first-class TransactionRequest, when the wrapper path was used. */
  readonly request?: TransactionRequest;
  /** The approved approval this admission resumes from. */
  readonly approval?: ApprovalRecord;
  /** True when the runtime itself submits (governed reconcile as the service principal). */
  readonly internal?: boolean;
  /** Trusted direct-commit branch (never reachable from a public envelope). */
  readonly trusted_direct_commit?: boolean;
  /**
   * A transaction record this request already read (strongly consistent): the
   * planned record a commit's plan ID resolved to in `prepare`, or the
   * `outcome_unknown` record the reconcile consumer examined. The mode's
   * admission starts from it instead of reading it again. Safe because the
   * admission write is conditional on that record's status and revision; a
   * lost compare-and-set falls back to a fresh read and the same checks.
   */
  readonly known_transaction?: TransactionRecord;
  /**
   * `known_transaction` was not read in this request but carried by the message (a schedule's image): a lost
   * compare-and-set from it is the caller's to decide again from a read (it throws `transaction.state_conflict`),
   * since the caller's own decisions were taken from that image too.
   */
  readonly known_transaction_unread?: boolean;
  /**
   * Internal admissions whose attempt the caller runs inline (the reconcile
   * consumer): filled with the records exactly as this admission's own
   * conditional writes left them (the action record it created; the
   * transaction record its begin_reconcile write returned), so the attempt
   * need not read them again. Nothing is put here from a read.
   */
  readonly written?: { action?: ActionRecord; transaction?: TransactionRecord };
  /**
   * The lease the action is created with, when the caller runs its attempt inline and resolved its route already
   * (the reconcile consumer: lib/runtime/attempts/worker.ts `creationLease`). The creation is then the attempt's
   * lease, and the attempt writes none (docs/table-design.md, "The reconcile action created leased"). An action
   * created for an approval is never leased.
   */
  readonly lease?: CreationLease;
  /**
   * A compensate's target as `prepare` found it, after the authority rule
   * allowed this caller to compensate it: the approval request shows its
   * owner, and compensate admission starts from it.
   */
  readonly compensation_target?: CompensationTargetRef;
  /**
   * The client waits for the settlement (the edge's `Prefer: wait`): with `attempt_when_waited: inline`, a fresh
   * admission's first attempt may run in this request (../admit.ts `dispatch`, ./inline-attempt.ts).
   */
  readonly waiting?: WaitingClient;
}

/** The action a compensate names (compensation_for), with its recorded owner. */
export interface CompensationTargetRef {
  readonly action_id: string;
  readonly transaction_id?: string;
  readonly owner: Principal;
  /**
   * The target's transaction record and action as `prepare` read them (strongly consistent, before the authority
   * rule). The compensate admission reuses them only when terminal: a terminal record or action is never rewritten
   * (lib/transactions/state-machine.ts), so a second read in the same request would answer the same.
   */
  readonly record?: TransactionRecord;
  readonly target_action?: ActionRecord;
}

export interface AdmittedAction extends Admission {
  readonly record: ActionRecord;
  /** True when this submission created the action record. */
  readonly created: boolean;
}
