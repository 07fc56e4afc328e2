/**
 * The approvers' reads: the approvals listing and one approval with what it
 * approves (./approval-facts.ts), served from the read kernel (no connectors,
 * no admission pipeline: lib/runtime/runtime.ts).
 *
 * They are not pure reads: an overdue pending approval is expired on the way
 * and one whose action can no longer succeed is withdrawn (terminal writes of
 * their actions, which apply the capability's data contract), and the facts
 * show the input as that data contract lets them (the capability registry).
 * Those needs are {@link ApprovalWriteSide}'s, which the Runtime loads on the
 * first one: a listing with nothing overdue or doomed and no stored input to
 * show reads only; an overdue or doomed approval is expired or withdrawn by
 * the same functions as everywhere else (./approvals.ts `expireApproval`,
 * ./approval-withdrawal.ts `withdraw`), on the full kernel.
 */
import type { Capability } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ApprovalRecord } from '../ports/approval-store.js';
import { assertCallerCurrent, assertTenantMember, type CallerIdentity } from './identity.js';
import { missingTarget, type AuthorityTarget } from './authority.js';
import { cursorSealerOf, type CursorBinding } from './cursor.js';
import type { Kernel } from './kernel.js';
import { withFacts, type ApprovalWithFacts } from './approval-facts.js';
import { doomOf, type Doom } from './approval-withdrawal.js';
import type { PageOf } from './types.js';

/** What the approvers' reads need beyond the read kernel, each loaded on its first use (lib/runtime/runtime.ts). */
export interface ApprovalWriteSide {
  /** ./approvals.ts `expireApproval` on the full kernel. */
  expire(approval: ApprovalRecord): Promise<void>;
  /** ./approval-withdrawal.ts `withdraw` of a doomed approval (its doom as `doomOf` found it) on the full kernel. */
  withdraw(approval: ApprovalRecord, doom: Doom): Promise<ApprovalRecord>;
  /** The registered capability (its data contract, for the facts' input), from the full kernel's registry. */
  capability(capability_id: string): Promise<Pick<Capability, 'data'> | undefined>;
}

/** The approval as the authority rule sees it (lib/runtime/authority.ts, operations `approve` and `read_approval`). */
export function approvalTarget(approval: ApprovalRecord): AuthorityTarget {
  return {
    kind: 'approval',
    tenant_id: approval.tenant_id,
    id: approval.approval_id,
    approver_scopes: approval.policy.approver_scopes,
    allow_self_approval: approval.policy.allow_self_approval,
    requested_by: approval.requested_by,
  };
}

/** The approval withdrawn when its action can no longer succeed (./approval-withdrawal.ts `withdrawIfDoomed`, its doom read here). */
async function withdrawnIfDoomed(k: Kernel, writes: ApprovalWriteSide, approval: ApprovalRecord): Promise<ApprovalRecord> {
  if (approval.status !== 'pending') return approval;
  const doom = await doomOf(k, approval);
  return doom === undefined ? approval : writes.withdraw(approval, doom);
}

/**
 * Pending approvals of a tenant that the caller may see (expired ones are
 * expired on the way): the authority rule's `read_approval` (lib/runtime/authority.ts),
 * so an approver (one of the policy's approver scopes) or an operator sees
 * every one, and anyone else only those requested for them. A page may hold
 * fewer items than its limit and still have a cursor.
 *
 * Cursors are sealed (lib/runtime/cursor.ts), bound to this listing, the
 * tenant and the principal; anything else is `runtime.cursor_invalid`.
 */
export async function listApprovals(
  k: Kernel,
  writes: ApprovalWriteSide,
  caller: CallerIdentity,
  tenant_id: string,
  page: { cursor?: string; limit?: number } = {},
): Promise<PageOf<ApprovalWithFacts>> {
  assertCallerCurrent(caller, k.now());
  assertTenantMember(caller, tenant_id);
  const sealer = cursorSealerOf(k.deps);
  const binding: CursorBinding = { listing: 'approvals', tenants: [tenant_id], principal: caller.principal };
  const cursor = page.cursor !== undefined ? await sealer.open(page.cursor, binding) : undefined;
  const out = await k.deps.approvals.listPending({
    tenant_id,
    ...(page.limit !== undefined ? { limit: page.limit } : {}),
    ...(cursor !== undefined ? { cursor } : {}),
  });
  const now = k.now().getTime();
  const items: ApprovalWithFacts[] = [];
  for (const a of out.items) {
    if (Date.parse(a.expires_at) <= now) {
      await writes.expire(a);
      continue;
    }
    if (k.authority.allows(caller, 'read_approval', approvalTarget(a)) === undefined) continue;
    // An approval whose action can no longer succeed is withdrawn on the way and not listed.
    if ((await withdrawnIfDoomed(k, writes, a)).status === 'pending') items.push(await withFacts(k, a, writes.capability));
  }
  return out.cursor !== undefined ? { items, cursor: await sealer.seal(out.cursor, binding) } : { items };
}

/**
 * One approval with what it approves (./approval-facts.ts), whatever its
 * status: the authority rule's `read_approval` for a pending one (an
 * approver, an operator, the requester); a decided, expired or withdrawn one
 * to an operator, the requester, or an approver of its policy. A caller who
 * may not read it is told it does not exist. An overdue pending approval is
 * expired on the way, a doomed one withdrawn.
 */
export async function getApproval(
  k: Kernel,
  writes: ApprovalWriteSide,
  caller: CallerIdentity,
  tenant_id: string,
  approval_id: string,
): Promise<ApprovalWithFacts> {
  assertCallerCurrent(caller, k.now());
  assertTenantMember(caller, tenant_id);
  let approval = await k.deps.approvals.get({ tenant_id, approval_id });
  const target = approval !== undefined ? approvalTarget(approval) : missingTarget('approval', tenant_id, approval_id);
  if (!k.authority.mayRead(caller, target)) throw k.authority.refusal(caller, 'read_approval', target);
  approval = approval as ApprovalRecord;
  if (approval.status === 'pending' && Date.parse(approval.expires_at) <= k.now().getTime()) {
    await writes.expire(approval);
    approval = (await k.deps.approvals.get({ tenant_id, approval_id })) ?? approval;
  } else {
    approval = await withdrawnIfDoomed(k, writes, approval);
  }
  return withFacts(k, approval, writes.capability);
}
