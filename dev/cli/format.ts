/**
 * Human-readable rendering for the `aip` CLI. `--json` bypasses all of it.
 */
import type { ActionState, Page, SubmitResult, TransactionResult } from '../../lib/client/index.js';
import type { ActionResult, ProtocolError } from '../../packages/connector-sdk/src/protocol/index.js';

function indent(text: string, by = '  '): string {
  return text
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

function formatError(e: ProtocolError): string {
  const lines = [`error:   ${e.code}: ${e.message}`, `         category ${e.category}, ${e.retryable ? 'retryable' : 'not retryable'}`];
  if (e.uncertain_outcome) lines.push('         outcome uncertain: reconciliation decides what happened');
  if (e.provider_operation) lines.push(`         provider operation ${e.provider_operation.provider}/${e.provider_operation.operation_id}`);
  return lines.join('\n');
}

export function formatResult(result: ActionResult): string {
  const lines = [`status:  ${result.status}${result.replayed ? ' (replayed)' : ''}`];
  if (result.completed_at) lines.push(`at:      ${result.completed_at}`);
  if (result.error) lines.push(formatError(result.error));
  if (result.output !== undefined) lines.push('output:', indent(json(result.output)));
  return lines.join('\n');
}

function formatTransaction(t: TransactionResult): string {
  const lines = [`transaction ${t.transaction_id}: ${t.status}`];
  if (t.plan_id) lines.push(`  plan:      ${t.plan_id}`);
  if (t.provider_operation) lines.push(`  provider:  ${t.provider_operation.provider}/${t.provider_operation.operation_id}`);
  if (t.earliest_reconcile_at) lines.push(`  reconcile: not before ${t.earliest_reconcile_at}`);
  if (t.plan) lines.push(`  plan expires ${t.plan.expires_at}${t.plan.approval_required ? ', approval required' : ''}`);
  if (t.action_result) lines.push(indent(formatResult(t.action_result)));
  if (t.receipts?.length) {
    lines.push('  receipts:');
    for (const r of t.receipts) lines.push(`    #${r.seq} ${r.at} ${r.event} -> ${r.status} (rev ${r.revision}) ${r.hash.slice(0, 12)}…`);
  }
  return lines.join('\n');
}

export function formatSubmit(res: SubmitResult): string {
  const lines = [`action ${res.action_id} (tenant ${res.tenant_id}): ${res.disposition}, HTTP ${res.http_status}`, formatResult(res.action_result)];
  if (res.transaction_result) lines.push(formatTransaction(res.transaction_result));
  if (res.disposition === 'accepted' && !['completed', 'failed', 'cancelled'].includes(res.action_result.status)) {
    lines.push(`follow:  aip wait ${res.action_id}`);
  }
  if (res.action_result.status === 'requires_human') lines.push('next:    an approver decides with `aip approvals` and `aip approve <approval-id>`');
  return lines.join('\n');
}

export function formatState(state: ActionState): string {
  const lines = [`action ${state.action_result.action_id}`, formatResult(state.action_result)];
  if (state.transaction) lines.push(formatTransaction(state.transaction));
  return lines.join('\n');
}

export { formatTransaction };

const COLUMNS = [
  'tenant_id',
  'transaction_id',
  'approval_id',
  'action_id',
  'capability_id',
  'status',
  'proposed_effect',
  'provider_at_proposal',
  'expires_at',
  'next_reconcile_at',
  'updated_at',
];

/** A page of records as an aligned table of the well-known columns they have. */
export function formatPage(page: Page, empty: string): string {
  const items = page.items ?? [];
  if (items.length === 0) return empty;
  const cols = COLUMNS.filter((c) => items.some((i) => typeof i[c] === 'string' || typeof i[c] === 'number'));
  if (cols.length === 0) return items.map((i) => json(i)).join('\n');
  const cell = (i: Record<string, unknown>, c: string) => (i[c] === undefined || i[c] === null ? '-' : String(i[c]));
  const widths = cols.map((c) => Math.max(c.length, ...items.map((i) => cell(i, c).length)));
  const row = (values: string[]) =>
    values
      .map((v, k) => v.padEnd(widths[k] ?? 0))
      .join('  ')
      .trimEnd();
  const lines = [row(cols), ...items.map((i) => row(cols.map((c) => cell(i, c))))];
  if (page.cursor) lines.push(`(more: --cursor ${page.cursor})`);
  return lines.join('\n');
}

export function formatJson(value: unknown): string {
  return json(value);
}

/** `aip approvals show`: what the approval approves (GET /v1/approvals/{id}, lib/runtime/approval-facts.ts). */
export function formatApproval(approval: Record<string, unknown>): string {
  const a = approval as {
    approval_id?: string;
    status?: string;
    expires_at?: string;
    withdrawal?: { reason?: string };
    facts?: {
      capability_id?: string;
      mode?: string;
      action_id?: string;
      input?: unknown;
      requested_by?: { id?: string; kind?: string };
      requested_at?: string;
      plan?: { plan_id?: string; status?: string; fidelity?: string; expires_at?: string; preview?: unknown };
      policy?: { policy_id?: string; approver_scopes?: readonly string[]; allow_self_approval?: boolean };
      approvals?: { so_far?: number; needed?: number; approved_by?: readonly { id?: string; kind?: string }[] };
      compensation_for?: { action_id?: string; owner?: { id?: string; kind?: string } };
      resolution?: { proposal?: unknown; transaction_status?: string; provider_check_at_proposal?: ProviderCheck };
    };
  };
  const f = a.facts ?? {};
  const who = (p: { id?: string; kind?: string } | undefined) => (p === undefined ? '-' : `${p.kind ?? '?'}:${p.id ?? '?'}`);
  const lines = [`approval ${a.approval_id ?? '?'}: ${a.status ?? '?'}${a.withdrawal?.reason ? ` (withdrawn: ${a.withdrawal.reason})` : ''}`];
  lines.push(`  capability: ${f.capability_id ?? '?'} (mode ${f.mode ?? '?'}), action ${f.action_id ?? '?'}`);
  lines.push(`  asked by:   ${who(f.requested_by)} at ${f.requested_at ?? '?'}; expires ${a.expires_at ?? '?'}`);
  const approvers = (f.approvals?.approved_by ?? []).map(who).join(', ');
  lines.push(
    `  policy:     ${f.policy?.policy_id ?? '?'} (approver scopes ${(f.policy?.approver_scopes ?? []).join(', ')}${f.policy?.allow_self_approval ? '; self-approval allowed' : ''})`,
  );
  lines.push(`  approvals:  ${f.approvals?.so_far ?? 0} of ${f.approvals?.needed ?? '?'}${approvers ? ` (${approvers})` : ''}`);
  if (f.compensation_for) lines.push(`  compensates: action ${f.compensation_for.action_id ?? '?'} of ${who(f.compensation_for.owner)}`);
  if (f.input !== undefined) lines.push('  input:', indent(json(f.input), '    '));
  if (f.plan) {
    lines.push(`  plan:       ${f.plan.plan_id ?? '?'} (${f.plan.status ?? '?'}${f.plan.expires_at ? `, expires ${f.plan.expires_at}` : ''})`);
    lines.push(`  preview:    fidelity ${f.plan.fidelity ?? 'unknown'}`);
    if (f.plan.preview !== undefined) lines.push(indent(json(f.plan.preview), '    '));
  }
  if (f.resolution) {
    lines.push(`  resolution of a transaction now ${f.resolution.transaction_status ?? '?'}:`);
    lines.push(indent(json(f.resolution.proposal), '    '));
    lines.push(`  provider at proposal: ${providerCheckLine(f.resolution.provider_check_at_proposal)}`);
    if (a.status === 'pending') lines.push('  approving asks the provider again; an answer that now contradicts the resolution is refused');
  }
  return lines.join('\n');
}

/** The provider's answer a four-eyes resolution proposal carries (lib/runtime/approval-facts.ts). */
interface ProviderCheck {
  verdict?: string;
  answer?: {
    obtained?: boolean;
    looked_up_at?: string;
    effect?: string;
    reason?: string;
    code?: string;
    provider_operation?: { provider?: string; operation_id?: string };
  };
}

/** One line: what the provider answered when the resolution was proposed, and the verdict on the proposal. */
export function providerCheckLine(check: ProviderCheck | undefined): string {
  if (check?.answer === undefined) return 'not recorded';
  const a = check.answer;
  const op = a.provider_operation?.operation_id !== undefined ? ` (operation ${a.provider_operation.provider}/${a.provider_operation.operation_id})` : '';
  const said = a.obtained === true ? `${a.effect ?? '?'}${op}` : `no answer (${a.reason ?? '?'}${a.code !== undefined ? `, ${a.code}` : ''})`;
  return `${said}, verdict ${check.verdict ?? '?'}, at ${a.looked_up_at ?? '?'}`;
}

/**
 * `aip operator approvals`: one row per pending approval; a four-eyes resolution shows the effect it proposes and
 * what the provider answered when it was proposed, so the second operator sees it before `aip approvals show` and `aip approve`.
 */
export function operatorApprovalRows(page: Page): Page {
  const items = (page.items ?? []).map((item) => {
    const approval = (item.approval ?? item) as {
      approval_id?: string;
      capability_id?: string;
      status?: string;
      expires_at?: string;
      transaction_id?: string;
      subject?: { resolution?: { effect?: string; transaction_id?: string }; provider_check?: ProviderCheck };
    };
    const resolution = approval.subject?.resolution;
    const check = approval.subject?.provider_check;
    return {
      approval_id: approval.approval_id,
      capability_id: approval.capability_id,
      status: approval.status,
      ...(resolution !== undefined ? { transaction_id: resolution.transaction_id, proposed_effect: resolution.effect } : {}),
      ...(check !== undefined
        ? { provider_at_proposal: `${check.answer?.obtained === true ? check.answer.effect : 'no answer'} (${check.verdict ?? '?'})` }
        : {}),
      expires_at: approval.expires_at,
    };
  });
  return { ...page, items };
}
