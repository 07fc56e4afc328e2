/**
 * Port: durable approvals.
 *
 * An approval is created `pending` with an expiry. Each decision is ONE
 * conditional write on `status = pending AND revision = expected AND
 * expires_at > now`, so of any number of concurrent deciders at one revision
 * exactly one wins. Every decision is kept (`decisions`, in order). An
 * approval stays `pending` until `policy.min_approvals` DISTINCT approvers
 * have approved (the write that records the last one moves it to
 * `approved`); any denial moves it to `denied`. The same approver approving
 * twice is refused inside the write (`approval.already_approved_by_caller`).
 * `expire` moves a pending approval whose expiry has passed to `expired`
 * (also conditional); `withdraw` moves a pending approval whose action can no
 * longer succeed to `withdrawn` with a typed reason (conditional on status
 * and revision: a decision that landed first wins, and the withdrawal loses). Approval state is separate from transaction state: an
 * approved action can still fail to claim a plan.
 *
 * Pending approvals are listed per tenant through the sparse `byStatus` index
 * (GSI3PK `APPROVAL#pending#<tenant>`, GSI3SK `<expires_at>#<approval_id>`):
 * only pending approvals carry the index keys, so the listing is exactly the
 * open work, oldest expiry first.
 *
 * Errors (all AipError):
 * - `approval.already_exists` (create).
 * - `approval.not_found`.
 * - `approval.already_decided`: the approval is no longer pending (details:
 *   approval_id, current_status, current_revision, decision?).
 * - `approval.expired`: decide after expires_at (details expires_at).
 * - `approval.not_expired`: expire before expires_at.
 * - `approval.state_conflict`: pending but at another revision (lost race).
 * - `approval.already_approved_by_caller` (409): this principal's approval is
 *   already among the decisions of the pending approval (details
 *   approval_id, current_status, current_revision, approvals, min_approvals).
 * - `approval.self_approval_forbidden` (403): the requester tried to APPROVE
 *   while policy.allow_self_approval is false (checked inside the write;
 *   the requester may always deny, i.e. withdraw, their own request).
 * - `approval.invalid_record`, `approval.invalid_listing`,
 *   `transaction.store_unavailable`, `transaction.record_too_large`.
 *
 * The DynamoDB adapter is lib/aws/dynamo/approval-store.ts.
 */
import * as z from '../../packages/connector-sdk/src/common/zod.js';
import { ProviderOperationRefSchema, Sha256HexSchema, TextSchema, type JsonObject, type Principal } from '../../packages/connector-sdk/src/protocol/index.js';
import type { Page } from './transaction-store.js';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'withdrawn';

/**
 * Why the runtime closed a pending approval whose action can no longer
 * succeed (nobody decided it): the plan of a commit was claimed by another
 * commit or is no longer planned; the action was cancelled; the action ended
 * otherwise; the escalated transaction an operator's resolution was proposed
 * for is no longer escalated (the resolution would be refused).
 */
export const APPROVAL_WITHDRAWAL_REASONS = ['plan_claimed', 'action_cancelled', 'action_ended', 'resolution_refused'] as const;
export type ApprovalWithdrawalReason = (typeof APPROVAL_WITHDRAWAL_REASONS)[number];

export interface ApprovalWithdrawal {
  readonly reason: ApprovalWithdrawalReason;
  /** RFC 3339 (UTC, ms). */
  readonly withdrawn_at: string;
  /** What the runtime found (the plan's or transaction's status, the action's status): operator-safe facts. */
  readonly details?: Readonly<Record<string, string>>;
}
export type ApprovalDecisionValue = 'approved' | 'denied';

export interface ApprovalPolicySnapshot {
  readonly policy_id: string;
  /** sha256 hex of the canonical policy (evidence passed to the connector context). */
  readonly policy_hash: string;
  /** Holding ONE of these scopes makes a principal an approver (lib/runtime/authority.ts). */
  readonly approver_scopes: readonly string[];
  readonly allow_self_approval: boolean;
  /** Distinct approvers needed (1-10; records written before it existed read as 1). */
  readonly min_approvals: number;
  /** The policy's own approval lifetime, when it sets one (else the runtime's `approvals.ttl_ms`). */
  readonly ttl_ms?: number;
}

/** Attachments of an operator's resolution: references to evidence kept elsewhere (tickets, provider consoles, files). */
export const ResolutionAttachmentSchema = z.deferred(() =>
  z.strictObject({
    /** Where the evidence is (https:, s3:, a ticket URN ...). */
    uri: z.string().check(z.minLength(1), z.maxLength(2048), z.regex(/^[a-z][a-z0-9+.-]*:\S+$/, { message: 'must be an absolute URI' })),
    description: z.optional(TextSchema(512)),
    /** sha256 hex of the referenced content, when known. */
    sha256: z.optional(Sha256HexSchema),
  }),
);

/**
 * What an operator found at the provider for an escalated transaction
 * (POST /v1/operator/transactions/{id}/resolve): whether the original effect
 * happened, the provider operation if one was found, a reason and
 * references to the evidence.
 */
export const ResolutionSchema = z.deferred(() =>
  z.strictObject({
    effect: z.enum(['committed', 'not_committed']),
    provider_operation: z.optional(ProviderOperationRefSchema),
    reason: z.pipe(TextSchema(2048), z.string().check(z.minLength(1))),
    attachments: z.optional(z.array(ResolutionAttachmentSchema).check(z.maxLength(20))),
    /**
     * The operator records this resolution although the provider's answer
     * contradicts it (lib/runtime/provider-lookup.ts), and says why. Without
     * it, a contradicted resolution is refused (`operator.resolution_contradicts_provider`).
     */
    provider_override: z.optional(z.strictObject({ reason: z.pipe(TextSchema(2048), z.string().check(z.minLength(1))) })),
  }),
);
export type Resolution = z.infer<typeof ResolutionSchema>;

/** What an approval is about, beyond the action: shown to approvers. */
export interface ApprovalSubject {
  /** A compensate: the action it compensates, with that action's recorded owner. */
  readonly compensation_for?: {
    readonly action_id: string;
    readonly transaction_id?: string;
    readonly owner: Principal;
  };
  /** An operator's resolution of an escalated transaction, waiting for a second operator (four eyes). */
  readonly resolution?: Resolution & { readonly transaction_id: string };
  /**
   * With `resolution`: what the provider answered when the resolution was
   * proposed, and the verdict on it (lib/runtime/provider-lookup.ts), shown to
   * the second operator before they decide. Approving asks the provider again.
   */
  readonly provider_check?: ProposalProviderCheck;
}

/** The provider's answer to a proposed resolution as recorded at proposal time (the runtime's `ProviderAnswer`, as JSON). */
export interface ProposalProviderCheck {
  /** `{obtained: true, looked_up_at, capability_id, effect, provider_operation?, evidence?}` or `{obtained: false, looked_up_at, capability_id, reason, code?}`. */
  readonly answer: JsonObject;
  /** `agrees`, `overridden` (the proposal carries `provider_override`) or `no_answer`. */
  readonly verdict: ProposalProviderVerdict;
}

export const PROPOSAL_PROVIDER_VERDICTS = ['agrees', 'overridden', 'no_answer'] as const;
export type ProposalProviderVerdict = (typeof PROPOSAL_PROVIDER_VERDICTS)[number];

export interface ApprovalDecision {
  readonly decision_id: string;
  readonly decided_by: Principal;
  readonly decision: ApprovalDecisionValue;
  /** Operator-safe text. */
  readonly reason?: string;
  readonly decided_at: string;
}

export interface ApprovalRecord {
  readonly tenant_id: string;
  readonly approval_id: string;
  readonly action_id: string;
  readonly transaction_id?: string;
  readonly capability_id: string;
  readonly requested_by: Principal;
  readonly policy: ApprovalPolicySnapshot;
  readonly status: ApprovalStatus;
  /** The decision that ended it (the last approval, or the denial); absent while pending. */
  readonly decision?: ApprovalDecision;
  /** Every decision recorded, oldest first (partial approvals included). */
  readonly decisions: readonly ApprovalDecision[];
  readonly subject?: ApprovalSubject;
  /** Present once the runtime withdrew it (status `withdrawn`). */
  readonly withdrawal?: ApprovalWithdrawal;
  /** RFC 3339 (UTC, ms). */
  readonly expires_at: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly revision: number;
}

export interface ApprovalRef {
  readonly tenant_id: string;
  readonly approval_id: string;
}

export interface CreateApprovalInput extends ApprovalRef {
  readonly action_id: string;
  readonly transaction_id?: string;
  readonly capability_id: string;
  readonly requested_by: Principal;
  readonly policy: ApprovalPolicySnapshot;
  /** RFC 3339; must be in the future. */
  readonly expires_at: string;
  readonly subject?: ApprovalSubject;
}

export interface DecideApprovalInput extends ApprovalRef {
  readonly expected_revision: number;
  readonly decision_id: string;
  readonly decided_by: Principal;
  readonly decision: ApprovalDecisionValue;
  readonly reason?: string;
  /**
   * The record at `expected_revision` the caller already read (strongly
   * consistent): the store then does not read it again. The write stays
   * conditional on everything it relies on (revision, approvals so far,
   * min_approvals), so a stale or wrong record only loses the write.
   */
  readonly current?: ApprovalRecord;
}

export interface ExpireApprovalInput extends ApprovalRef {
  readonly expected_revision: number;
}

export interface WithdrawApprovalInput extends ApprovalRef {
  readonly expected_revision: number;
  readonly reason: ApprovalWithdrawalReason;
  readonly details?: Readonly<Record<string, string>>;
}

export interface ListPendingApprovalsQuery {
  readonly tenant_id: string;
  /** Only approvals whose expires_at <= this (RFC 3339): the expiry sweep. */
  readonly expires_before?: string;
  /** 1 .. 100, default 25. */
  readonly limit?: number;
  readonly cursor?: string;
}

/** Pending approvals of every tenant expiring at or before a time (the expiry sweep). */
export interface ListExpiringApprovalsQuery {
  /** RFC 3339. */
  readonly expires_before: string;
  /** 1 .. 100, default 25. */
  readonly limit?: number;
  readonly cursor?: string;
}

export interface ApprovalStore {
  /** Strongly consistent read. */
  get(ref: ApprovalRef): Promise<ApprovalRecord | undefined>;
  /** Pending approvals of a tenant, oldest expiry first (sparse index, then consistent reads). */
  listPending(query: ListPendingApprovalsQuery): Promise<Page<ApprovalRecord>>;
  /** Pending approvals of every tenant expiring at or before `expires_before`, oldest first (the sparse byExpiry index). */
  listExpiring(query: ListExpiringApprovalsQuery): Promise<Page<ApprovalRecord>>;
}
