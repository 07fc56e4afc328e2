/**
 * What an approval approves, as approvers see it (the approvals listing, a
 * decision's answer, `aip approvals show`): an approver decides with the
 * facts in front of them.
 *
 * - the capability and mode of the waiting action;
 * - its input, as the capability's data contract lets it be shown
 *   (lib/runtime/redaction.ts): `redaction_required` shows only
 *   `{redacted: true, hash}`, `redact_pointers` replace the values they point
 *   at; the hash is the recorded input hash either way;
 * - for a commit, the plan it would commit (from the planned transaction):
 *   its ID, status and expiry, the preview and its fidelity (only
 *   `downstream_validation` and `full_simulation` previews came from the
 *   connector; `schema_only` and `policy_and_schema` say what the runtime
 *   checked itself);
 * - who asked, and when; the policy, and the approvals so far against the
 *   approvals needed;
 * - for an operator's resolution (four eyes), the proposal, the
 *   escalated transaction's status and the provider's answer when it was
 *   proposed (with the verdict: agrees, overridden, no_answer).
 *
 * Reads only. Values come from the durable records, never from a request.
 */
import type { Capability, JsonObject, JsonValue, Principal } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ApprovalRecord } from '../ports/approval-store.js';
import type { Kernel } from './kernel.js';
import { withStoredResultOf } from './view.js';
import { dataPolicyOf, redactPointers } from './redaction.js';

export interface ApprovalFacts {
  readonly capability_id: string;
  /** The waiting action's transaction mode (`none` for a plain invocation; `resolve` for a four-eyes resolution). */
  readonly mode: string;
  readonly action_id: string;
  /** The input as the data contract lets it be shown; absent when it was already dropped. */
  readonly input?: JsonObject | { readonly redacted: true; readonly hash: string };
  readonly input_hash?: string;
  readonly requested_by: Principal;
  readonly requested_at: string;
  readonly plan?: {
    readonly plan_id: string;
    readonly transaction_id: string;
    readonly status: string;
    readonly expires_at?: string;
    readonly fidelity?: string;
    /** The preview the plan recorded (`result.output.preview`). */
    readonly preview?: JsonValue;
  };
  readonly policy: ApprovalRecord['policy'];
  readonly approvals: { readonly so_far: number; readonly needed: number; readonly approved_by: readonly Principal[] };
  readonly compensation_for?: NonNullable<ApprovalRecord['subject']>['compensation_for'];
  readonly resolution?: {
    readonly proposal: NonNullable<NonNullable<ApprovalRecord['subject']>['resolution']>;
    readonly transaction_status: string;
    /**
     * What the provider answered when the resolution was proposed, and the verdict on it (absent on proposals
     * recorded before it was kept). Approving asks the provider again.
     */
    readonly provider_check_at_proposal?: NonNullable<NonNullable<ApprovalRecord['subject']>['provider_check']>;
  };
  /** Present on a withdrawn approval. */
  readonly withdrawal?: ApprovalRecord['withdrawal'];
}

export type ApprovalWithFacts = ApprovalRecord & { readonly facts: ApprovalFacts };

function asObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/**
 * The approval with what it approves (see the file comment). `capability` finds the registered capability whose
 * data contract shows the input (lib/runtime/approval-listing.ts: from the registry, composed on this first need); asked
 * only when the action's input is still stored.
 */
export async function withFacts(
  k: Kernel,
  approval: ApprovalRecord,
  capability: (capability_id: string) => Promise<Pick<Capability, 'data'> | undefined>,
): Promise<ApprovalWithFacts> {
  const approved = approval.decisions.filter((d) => d.decision === 'approved').map((d) => ({ ...d.decided_by }));
  const common = {
    capability_id: approval.capability_id,
    action_id: approval.action_id,
    requested_by: { ...approval.requested_by },
    requested_at: approval.created_at,
    policy: approval.policy,
    approvals: { so_far: approved.length, needed: approval.policy.min_approvals, approved_by: approved },
    ...(approval.subject?.compensation_for !== undefined ? { compensation_for: approval.subject.compensation_for } : {}),
    ...(approval.withdrawal !== undefined ? { withdrawal: approval.withdrawal } : {}),
  };
  const proposal = approval.subject?.resolution;
  if (proposal !== undefined) {
    const record = await k.deps.transactions.get({ tenant_id: approval.tenant_id, transaction_id: proposal.transaction_id });
    const check = approval.subject?.provider_check;
    return {
      ...approval,
      facts: {
        ...common,
        mode: 'resolve',
        resolution: { proposal, transaction_status: record?.status ?? 'not_found', ...(check !== undefined ? { provider_check_at_proposal: check } : {}) },
      },
    };
  }
  const action = await k.deps.actions.get({ tenant_id: approval.tenant_id, action_id: approval.action_id });
  const mode = action?.action.transaction?.mode ?? 'none';
  let input: ApprovalFacts['input'];
  if (action !== undefined && action.input_redacted !== true) {
    const policy = dataPolicyOf(await capability(approval.capability_id));
    input = policy.redaction_required ? { redacted: true, hash: action.input_hash } : redactPointers(action.action.input, policy.pointers);
  }
  let plan: ApprovalFacts['plan'];
  const tx = action?.action.transaction;
  if (mode === 'commit' && tx?.plan_id !== undefined && tx.transaction_id !== undefined) {
    const record = await withStoredResultOf(k, await k.deps.transactions.get({ tenant_id: approval.tenant_id, transaction_id: tx.transaction_id }), action);
    const preview = asObject(asObject(record?.result?.output)?.preview);
    plan = {
      plan_id: tx.plan_id,
      transaction_id: tx.transaction_id,
      status: record?.status ?? 'not_found',
      ...(record?.plan?.expires_at !== undefined ? { expires_at: record.plan.expires_at } : {}),
      ...(typeof preview?.fidelity === 'string' ? { fidelity: preview.fidelity } : {}),
      ...(preview !== undefined ? { preview: preview as JsonObject } : {}),
    };
  }
  return {
    ...approval,
    facts: {
      ...common,
      mode,
      ...(input !== undefined ? { input } : {}),
      ...(action !== undefined ? { input_hash: action.input_hash } : {}),
      ...(plan !== undefined ? { plan } : {}),
    },
  };
}
