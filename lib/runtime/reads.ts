/**
 * Reads and operator views, scoped to the caller's tenant and ownership:
 * the submitting principal sees its own actions and transactions, an
 * operator (the configured operator scope) sees the tenant's. Anything else
 * reads as not found (existence is not disclosed).
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { ActionResult, TransactionResult } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ActionRecord } from '../ports/action-store.js';
import type { ApprovalRecord } from '../ports/approval-store.js';
import type { StoredStreamChunk } from '../ports/stream-store.js';
import type { TransactionRecord, TransactionSelector } from '../ports/transaction-store.js';
import { doomOf } from './approval-withdrawal.js';
import { assertCallerCurrent, assertTenantMember, type CallerIdentity } from './identity.js';
import { cursorSealerOf, type CursorBinding } from './cursor.js';
import type { Kernel } from './kernel.js';
import { actionResultOf } from './pipeline/action-record.js';
import { asSettled } from './settled-outcome.js';
import type { PageOf } from './types.js';
import { missingTarget, type AuthorityTarget } from './authority.js';
import { transactionTarget } from './pipeline/targets.js';
import { readReceipts, toTransactionResult, withStoredResult } from './view.js';

function isOperator(k: Kernel, caller: CallerIdentity): boolean {
  return caller.scopes.includes(k.config.operator_scope);
}

/** The action as an authority target (undefined when it does not exist). */
function actionTarget(tenant_id: string, action_id: string, record: ActionRecord | undefined): AuthorityTarget {
  return { kind: 'action', tenant_id, id: action_id, ...(record !== undefined ? { owner: record.principal } : {}) };
}

/** An action the caller may read (authority rule `read`; `cancel` for a cancellation), else action.not_found. */
export async function visibleAction(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  action_id: string,
  operation: 'read' | 'cancel' = 'read',
): Promise<ActionRecord> {
  assertCallerCurrent(caller, k.now());
  assertTenantMember(caller, tenant_id);
  const record = await k.deps.actions.get({ tenant_id, action_id });
  k.authority.require(caller, operation, record === undefined ? missingTarget('action', tenant_id, action_id) : actionTarget(tenant_id, action_id, record));
  return record as ActionRecord;
}

/**
 * The wire view of a transaction record, with the status of the action it is
 * bound to. `known` is an action record the caller read in this request; it
 * is used when it is that bound action (else the bound action is read).
 * A record still in its attempt status whose bound action settled first is
 * shown as its pending settlement writes it (./settled-outcome.ts asSettled);
 * its receipts are the chain as stored.
 */
async function viewOf(k: Kernel, txn: TransactionRecord, include: { result?: boolean; receipts?: boolean }, known?: ActionRecord): Promise<TransactionResult> {
  const bound =
    known !== undefined && known.tenant_id === txn.tenant_id && known.action_id === txn.action_id
      ? known
      : await k.deps.actions.get({ tenant_id: txn.tenant_id, action_id: txn.action_id });
  const action_result: ActionResult | undefined = include.result === true ? ((await withStoredResult(k, txn, bound)).result ?? bound?.result) : undefined;
  const receipts = include.receipts === true ? await readReceipts(k, txn) : undefined;
  // A record whose bound action settled first, read before its own settlement is written (a few milliseconds, or
  // until a crashed attempt's record is finished): shown as that settlement writes it, which the action decides.
  return toTransactionResult(asSettled(txn, bound), {
    ...(bound !== undefined ? { action_status: bound.status } : {}),
    ...(action_result !== undefined ? { action_result } : {}),
    ...(receipts !== undefined ? { receipts } : {}),
  });
}

export async function getAction(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  action_id: string,
): Promise<{ action_result: ActionResult; transaction?: TransactionResult }> {
  return stateOf(k, caller, tenant_id, await visibleAction(k, caller, tenant_id, action_id));
}

/**
 * getAction with the action record's creation and last-update times (the
 * same reads): what an MCP task (functions/mcp) reports as its createdAt and
 * lastUpdatedAt.
 */
export async function getActionTimed(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  action_id: string,
): Promise<{ action_result: ActionResult; transaction?: TransactionResult; created_at: string; updated_at: string }> {
  const record = await visibleAction(k, caller, tenant_id, action_id);
  return { ...(await stateOf(k, caller, tenant_id, record)), created_at: record.created_at, updated_at: record.updated_at };
}

async function stateOf(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  record: ActionRecord,
): Promise<{ action_result: ActionResult; transaction?: TransactionResult }> {
  const action_result = actionResultOf(record);
  if (record.transaction_id === undefined) return { action_result };
  const txn = await k.deps.transactions.get({ tenant_id, transaction_id: record.transaction_id });
  // The transaction view only when the caller may read that transaction too (an action is never a window on another's record).
  if (txn === undefined || k.authority.allows(caller, 'read', transactionTarget(txn, tenant_id, txn.transaction_id)) === undefined) return { action_result };
  return { action_result, transaction: await viewOf(k, txn, {}, record) };
}

/**
 * The action's result alone: one read of the action record, with the same
 * authorization as getAction. What a `Prefer: wait` loop polls until the
 * action settles, before it asks for the full view once.
 */
export async function getActionResult(k: Kernel, caller: CallerIdentity, tenant_id: string, action_id: string): Promise<ActionResult> {
  return actionResultOf(await visibleAction(k, caller, tenant_id, action_id));
}

/** What a wait's poll answers: the action's result, and the full state when the poll asked for it. */
export interface ActionPoll {
  readonly action_result: ActionResult;
  /** getAction's answer, built from the same read of the action record: only when its status is one the poll named. */
  readonly state?: { action_result: ActionResult; transaction?: TransactionResult };
}

/**
 * One poll of a wait (functions/http/actions.ts): getActionResult's one read
 * of the action record, with the same authorization; and, when the status it
 * read is in `full` (the statuses that end the wait), getAction's full state
 * built from that same record, so the poll that sees the action settle needs
 * no second read of it (a bound transaction is the only further read).
 */
export async function pollAction(
  k: Kernel,
  caller: CallerIdentity,
  tenant_id: string,
  action_id: string,
  full: ReadonlySet<ActionResult['status']>,
): Promise<ActionPoll> {
  const record = await visibleAction(k, caller, tenant_id, action_id);
  if (!full.has(record.status)) return { action_result: actionResultOf(record) };
  const state = await stateOf(k, caller, tenant_id, record);
  return { action_result: state.action_result, state };
}

/** The transaction selected by exactly one of transaction_id, plan_id or action_id. */
export async function getTransaction(
  k: Kernel,
  caller: CallerIdentity,
  selector: TransactionSelector,
  include: { result?: boolean; receipts?: boolean } = {},
): Promise<TransactionResult> {
  assertCallerCurrent(caller, k.now());
  if (selector === null || typeof selector !== 'object' || typeof selector.tenant_id !== 'string') {
    throw new AipError('transaction.invalid_selector');
  }
  assertTenantMember(caller, selector.tenant_id);
  const given = (['transaction_id', 'plan_id', 'action_id'] as const).filter((f) => selector[f] !== undefined);
  if (given.length !== 1) throw new AipError('transaction.invalid_selector', undefined, { details: { given } });
  const txn = await k.deps.transactions.get(selector);
  if (txn === undefined) throw new AipError('transaction.not_found');
  // Selected by plan or action ID, the refusal must not name the transaction: the target carries no ID.
  k.authority.require(caller, 'read', { kind: 'transaction', tenant_id: selector.tenant_id, owner: txn.principal });
  return viewOf(k, txn, include);
}

export type OperatorView = 'outcome_unknown' | 'reconciling' | 'stalled_committing' | 'pending_approvals' | 'requires_human';

export interface OperatorQuery {
  readonly view: OperatorView;
  readonly tenant_id?: string;
  readonly cursor?: string;
  readonly limit?: number;
}

export type OperatorItem =
  | {
      readonly kind: 'transaction';
      readonly transaction: TransactionResult;
      /** The capability the transaction runs (the wire TransactionResult names it only in a plan). */
      readonly capability_id: string;
      readonly updated_at: string;
      readonly reconcile_attempts: number;
    }
  | { readonly kind: 'approval'; readonly approval: ApprovalRecord };

/**
 * What is stuck: outcome_unknown, reconciling, stalled committing, pending approvals, escalated (requires_human).
 *
 * Cursors are sealed (lib/runtime/cursor.ts): the store's cursor, which may
 * name another tenant's record (the status index is global per status), never
 * leaves the runtime, and a cursor opens only for the same principal, tenant
 * scope (the selected tenant, else all of the caller's) and view; anything
 * else is `runtime.cursor_invalid`.
 */
export async function listOperator(k: Kernel, caller: CallerIdentity, query: OperatorQuery): Promise<PageOf<OperatorItem>> {
  assertCallerCurrent(caller, k.now());
  if (!isOperator(k, caller)) throw new AipError('runtime.operator_forbidden');
  if (query.tenant_id !== undefined) assertTenantMember(caller, query.tenant_id);
  const views = {
    outcome_unknown: { status: 'outcome_unknown' as const },
    reconciling: { status: 'reconciling' as const },
    stalled_committing: { status: 'committing' as const, until: new Date(k.now().getTime() - k.config.stall_after_ms).toISOString() },
    requires_human: { status: 'outcome_unknown' as const, escalated: true },
    pending_approvals: undefined,
  };
  if (typeof query.view !== 'string' || !Object.hasOwn(views, query.view))
    throw new AipError('runtime.invalid_query', undefined, { details: { field: 'view' } });
  const byView = views[query.view];
  const approvalsTenant = query.tenant_id ?? (caller.tenants.length === 1 ? caller.tenants[0] : undefined);
  if (byView === undefined && approvalsTenant === undefined) throw new AipError('runtime.tenant_required');
  const sealer = cursorSealerOf(k.deps);
  const binding: CursorBinding = {
    listing: 'operator',
    tenants: query.tenant_id !== undefined ? [query.tenant_id] : caller.tenants,
    principal: caller.principal,
    query: { view: query.view },
  };
  const cursor = query.cursor !== undefined ? await sealer.open(query.cursor, binding) : undefined;
  const page = { ...(query.limit !== undefined ? { limit: query.limit } : {}), ...(cursor !== undefined ? { cursor } : {}) };
  const sealed = async (next: string | undefined) => (next !== undefined ? { cursor: await sealer.seal(next, binding) } : {});
  if (byView === undefined) {
    const out = await k.deps.approvals.listPending({ tenant_id: approvalsTenant as string, ...page });
    // An approval whose action can no longer succeed is not listed (the approvers' listing withdraws it).
    const doomed = await Promise.all(out.items.map((approval) => doomOf(k, approval)));
    const items = out.items.filter((_, i) => doomed[i] === undefined).map((approval) => ({ kind: 'approval' as const, approval }));
    return { items, ...(await sealed(out.cursor)) };
  }
  // The status index is shared by every tenant per status (sharded by record, docs/table-design.md): the store fills the page
  // with the records of the caller's tenant scope only, reading on past other tenants' entries, so a page is short only at
  // the end and the number of pages follows the scope's own records (docs/runtime.md, "Listings and cursors").
  const out = await k.deps.transactions.listByStatus({
    ...byView,
    tenants: binding.tenants,
    ...(page.limit !== undefined ? { limit: page.limit } : {}),
    ...(page.cursor !== undefined ? { cursor: page.cursor } : {}),
  });
  const items: OperatorItem[] = out.items.map((r) => ({
    kind: 'transaction',
    transaction: toTransactionResult(r, { action_status: query.view === 'requires_human' ? 'requires_human' : undefined }),
    capability_id: r.capability_id,
    updated_at: r.updated_at,
    reconcile_attempts: r.reconcile_attempts,
  }));
  return { items, ...(await sealed(out.cursor)) };
}

export async function readStream(k: Kernel, caller: CallerIdentity, tenant_id: string, action_id: string, after?: number): Promise<PageOf<StoredStreamChunk>> {
  await visibleAction(k, caller, tenant_id, action_id);
  const out = await k.deps.streams.list({ tenant_id, action_id, ...(after !== undefined ? { after } : {}) });
  return { items: out.items, ...(out.cursor !== undefined ? { cursor: out.cursor } : {}) };
}

/** One operator list in the overview. */
export interface OverviewEntry {
  readonly view: OperatorView;
  /** Items on the first page (at most OVERVIEW_SAMPLE). */
  readonly count: number;
  /** More than the first page. */
  readonly more: boolean;
  /** When the oldest item entered its state (the record's last write, or the approval's creation). */
  readonly oldest_at?: string;
  readonly oldest_age_seconds?: number;
}

export const OVERVIEW_SAMPLE = 100;

const VIEWS: readonly OperatorView[] = ['outcome_unknown', 'requires_human', 'reconciling', 'stalled_committing', 'pending_approvals'];

function ageOf(k: Kernel, at: string | undefined): { oldest_at?: string; oldest_age_seconds?: number } {
  if (at === undefined) return {};
  return { oldest_at: at, oldest_age_seconds: Math.max(0, Math.floor((k.now().getTime() - Date.parse(at)) / 1000)) };
}

/** The transaction views of the overview and their listings (the pending approvals are listed per tenant). */
function overviewQuery(k: Kernel, view: Exclude<OperatorView, 'pending_approvals'>) {
  switch (view) {
    case 'outcome_unknown':
      return { status: 'outcome_unknown' as const };
    case 'requires_human':
      return { status: 'outcome_unknown' as const, escalated: true };
    case 'reconciling':
      return { status: 'reconciling' as const };
    case 'stalled_committing':
      return { status: 'committing' as const, until: new Date(k.now().getTime() - k.config.stall_after_ms).toISOString() };
  }
}

/**
 * The operator lists at a glance: size of the first page and the oldest item's age, per list. The transaction
 * views' listings are read together, so a store reads what two of them read alike once
 * (`TransactionStore.listByStatuses`; docs/table-design.md, "The overview's listings read together"); the pending
 * approvals (one Query per tenant) meanwhile.
 */
export async function overview(k: Kernel, caller: CallerIdentity, tenant_id?: string): Promise<{ tenant_id?: string; views: OverviewEntry[] }> {
  assertCallerCurrent(caller, k.now());
  k.authority.require(caller, 'list_operator', { kind: 'tenant', tenant_id: tenant_id ?? caller.tenants[0] ?? '' });
  if (tenant_id !== undefined) assertTenantMember(caller, tenant_id);
  const tenants = tenant_id !== undefined ? [tenant_id] : caller.tenants;
  const listed = VIEWS.filter((v): v is Exclude<OperatorView, 'pending_approvals'> => v !== 'pending_approvals');
  // The caller's tenants only: the count and `more` follow their records alone.
  const [pages, approvals] = await Promise.all([
    k.deps.transactions.listByStatuses(listed.map((view) => ({ ...overviewQuery(k, view), limit: OVERVIEW_SAMPLE, tenants }))),
    Promise.all(tenants.map((t) => k.deps.approvals.listPending({ tenant_id: t, limit: OVERVIEW_SAMPLE }))),
  ]);
  const entries = VIEWS.map((view): OverviewEntry => {
    if (view === 'pending_approvals') {
      let count = 0;
      let more = false;
      let oldest: string | undefined;
      for (const page of approvals) {
        const live = page.items.filter((a) => Date.parse(a.expires_at) > k.now().getTime());
        count += live.length;
        more ||= page.cursor !== undefined;
        for (const a of live) if (oldest === undefined || a.created_at < oldest) oldest = a.created_at;
      }
      return { view, count, more, ...ageOf(k, oldest) };
    }
    const page = pages[listed.indexOf(view)] as { items: readonly { updated_at: string }[]; cursor?: string };
    let oldest: string | undefined;
    for (const r of page.items) if (oldest === undefined || r.updated_at < oldest) oldest = r.updated_at;
    return { view, count: page.items.length, more: page.cursor !== undefined, ...ageOf(k, oldest) };
  });
  return { ...(tenant_id !== undefined ? { tenant_id } : {}), views: entries };
}
