/**
 * Stuck work: one tab per operator view with its count and the age of its
 * oldest item, then the view's items, filtered and paged (opaque cursors).
 * Pending approvals are decided here (approve or deny, with a reason).
 */
import { useEffect, useState } from 'preact/hooks';
import type { Ctx } from '../ctx.js';
import {
  asProblem,
  isRouteMissing,
  OPERATOR_VIEWS,
  type ApiProblem,
  type ApprovalFacts,
  type ApprovalRecord,
  type OperatorItem,
  type OperatorView,
  type ProposalProviderCheck,
  type OverviewView,
} from '../api.js';
import { Age, ageOf, ConfirmDialog, formatAge, ProblemView, short, StatusBadge } from '../ui.js';

export const VIEW_LABELS: Record<OperatorView, string> = {
  outcome_unknown: 'Outcome unknown',
  reconciling: 'Reconciling',
  requires_human: 'Requires human',
  pending_approvals: 'Pending approvals',
  stalled_committing: 'Stalled committing',
};

function itemAt(item: OperatorItem): string {
  return item.kind === 'transaction' ? item.updated_at : item.approval.created_at;
}

/** The overview: from the API, or (older runtimes without the route) from each view's first page. */
async function loadOverview(ctx: Ctx): Promise<{ views: OverviewView[]; approximate: boolean; unavailable?: string }> {
  let unavailable: string | undefined;
  try {
    return { ...(await ctx.api.overview()), approximate: false };
  } catch (err) {
    // No overview route (an older runtime), or it failed: the lists still work, so count their first pages.
    if (!isRouteMissing(err)) unavailable = asProblem(err).code;
  }
  const now = Date.now();
  const views = await Promise.all(
    OPERATOR_VIEWS.map(async (view): Promise<OverviewView> => {
      const page = await ctx.api.listOperator(view, undefined, 100);
      const oldest = page.items.map(itemAt).sort()[0];
      return {
        view,
        count: page.items.length,
        more: page.cursor !== undefined,
        ...(oldest ? { oldest_at: oldest, oldest_age_seconds: ageOf(oldest, now) ?? 0 } : {}),
      };
    }),
  );
  return { views, approximate: true, ...(unavailable !== undefined ? { unavailable } : {}) };
}

export function WorkPage({ ctx, view }: { ctx: Ctx; view: OperatorView }) {
  const [overview, setOverview] = useState<{ views: OverviewView[]; approximate: boolean; unavailable?: string }>();
  const [page, setPage] = useState<{ items: OperatorItem[]; cursor?: string }>();
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [limit, setLimit] = useState(25);
  const [filter, setFilter] = useState('');
  const [problem, setProblem] = useState<ApiProblem>();
  const [deciding, setDeciding] = useState<{ approval: ApprovalRecord; decision: 'approve' | 'deny' }>();
  const [notice, setNotice] = useState<string>();
  const [reload, setReload] = useState(0);

  const cursor = cursors[cursors.length - 1];
  useEffect(() => {
    let live = true;
    setPage(undefined);
    Promise.all([loadOverview(ctx), ctx.api.listOperator(view, cursor, limit)])
      .then(([o, p]) => {
        if (!live) return;
        setOverview(o);
        setPage(p);
        setProblem(undefined);
      })
      .catch((err: unknown) => live && setProblem(asProblem(err)));
    return () => {
      live = false;
    };
  }, [view, cursor, limit, reload]);

  const needle = filter.trim().toLowerCase();
  const items = (page?.items ?? []).filter((item) => needle === '' || JSON.stringify(item).toLowerCase().includes(needle));

  return (
    <section class="work">
      <nav class="tabs" aria-label="Views">
        {OPERATOR_VIEWS.map((v) => {
          const o = overview?.views.find((x) => x.view === v);
          return (
            <a href={`#/work/${v}`} class={v === view ? 'tab active' : 'tab'} aria-current={v === view ? 'page' : undefined} data-view={v} key={v}>
              <span class="tab-label">{VIEW_LABELS[v]}</span>
              <span class="tab-count" data-testid={`count-${v}`}>
                {o ? `${o.count}${o.more ? '+' : ''}` : '…'}
              </span>
              <span class="tab-oldest" data-testid={`oldest-${v}`}>
                {o?.oldest_age_seconds !== undefined ? `oldest ${formatAge(o.oldest_age_seconds)}` : o ? 'none' : ''}
              </span>
            </a>
          );
        })}
      </nav>
      {overview?.approximate && (
        <p class="muted small">
          Counts from each view's first page ({overview.unavailable ? `the overview answered ${overview.unavailable}` : 'this runtime has no overview route'}).
        </p>
      )}

      <div class="toolbar">
        <h1>{VIEW_LABELS[view]}</h1>
        <input
          type="search"
          aria-label="Filter"
          placeholder="Filter by ID, capability, principal…"
          value={filter}
          onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
        />
        <label>
          Per page{' '}
          <select
            value={limit}
            onChange={(e) => {
              setLimit(Number((e.target as HTMLSelectElement).value));
              setCursors([undefined]);
            }}
          >
            {[10, 25, 50, 100].map((n) => (
              <option value={n} key={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setReload((n) => n + 1)}>
          Refresh
        </button>
      </div>

      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {problem && <ProblemView problem={problem} onDismiss={() => setProblem(undefined)} />}
      {!page && !problem && <p class="loading">Loading…</p>}
      {page && (
        <table class="items" aria-label={VIEW_LABELS[view]}>
          <thead>
            {view === 'pending_approvals' ? (
              <tr>
                <th>Approval</th>
                <th>Capability</th>
                <th>Requested by</th>
                <th>Action</th>
                <th>Waiting</th>
                <th>Expires</th>
                <th />
              </tr>
            ) : (
              <tr>
                <th>Transaction</th>
                <th>Status</th>
                <th>Capability</th>
                <th>Provider operation</th>
                <th>Reconcile tries</th>
                <th>Last change</th>
              </tr>
            )}
          </thead>
          <tbody>
            {items.length === 0 && (
              <tr>
                <td colSpan={7} class="empty">
                  {needle ? 'Nothing matches the filter on this page.' : 'Nothing here.'}
                </td>
              </tr>
            )}
            {items.map((item) =>
              item.kind === 'approval' ? (
                <tr key={item.approval.approval_id} data-approval-id={item.approval.approval_id}>
                  <td>
                    <code title={item.approval.approval_id}>{short(item.approval.approval_id, 18)}</code>
                  </td>
                  <td>{item.approval.capability_id}</td>
                  <td>{item.approval.requested_by.id}</td>
                  <td>
                    <a href={`#/actions/${encodeURIComponent(item.approval.action_id)}`}>{short(item.approval.action_id, 18)}</a>
                  </td>
                  <td>
                    <Age at={item.approval.created_at} />
                  </td>
                  <td>
                    <time dateTime={item.approval.expires_at}>{item.approval.expires_at}</time>
                  </td>
                  <td class="row-actions">
                    <button type="button" class="primary" onClick={() => setDeciding({ approval: item.approval, decision: 'approve' })}>
                      Approve
                    </button>
                    <button type="button" class="danger" onClick={() => setDeciding({ approval: item.approval, decision: 'deny' })}>
                      Deny
                    </button>
                  </td>
                </tr>
              ) : (
                <tr key={item.transaction.transaction_id} data-transaction-id={item.transaction.transaction_id}>
                  <td>
                    <a href={`#/transactions/${encodeURIComponent(item.transaction.transaction_id)}`}>{short(item.transaction.transaction_id, 24)}</a>
                    {item.transaction.escalated && (
                      <span class="badge escalated" title={item.transaction.escalated.reason}>
                        escalated
                      </span>
                    )}
                  </td>
                  <td>
                    <StatusBadge status={item.transaction.status} />
                  </td>
                  <td>{item.capability_id ?? item.transaction.plan?.capability_id ?? '—'}</td>
                  <td>
                    {item.transaction.provider_operation ? (
                      <code>{item.transaction.provider_operation.operation_id}</code>
                    ) : (
                      <span class="muted">none checkpointed</span>
                    )}
                  </td>
                  <td>{item.reconcile_attempts}</td>
                  <td>
                    <Age at={item.updated_at} />
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      )}
      <div class="pager">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
          Previous page
        </button>
        <span class="muted">page {cursors.length}</span>
        <button type="button" disabled={!page?.cursor} onClick={() => page?.cursor && setCursors((c) => [...c, page.cursor])}>
          Next page
        </button>
      </div>

      {deciding && (
        <DecisionDialog
          ctx={ctx}
          approval={deciding.approval}
          decision={deciding.decision}
          onClose={() => setDeciding(undefined)}
          onDone={(text) => {
            setDeciding(undefined);
            setNotice(text);
            setReload((n) => n + 1);
          }}
        />
      )}
    </section>
  );
}

const VERDICTS: Readonly<Record<ProposalProviderCheck['verdict'], string>> = {
  agrees: 'agrees with the resolution',
  overridden: 'contradicts it: the proposer overrode it with a reason',
  no_answer: 'did not answer: the resolution stands on the operator’s word',
};

/** What the provider said when the resolution was proposed, as one sentence. */
function providerCheckText(check: ProposalProviderCheck | undefined): string {
  if (check === undefined) return 'Not recorded with this proposal.';
  const a = check.answer;
  const op = a.provider_operation !== undefined ? ` (operation ${a.provider_operation.provider}/${a.provider_operation.operation_id})` : '';
  const said = a.obtained ? `The provider answered ${a.effect ?? '?'}${op}` : `No answer (${a.reason ?? '?'}${a.code !== undefined ? `, ${a.code}` : ''})`;
  return `${said} at ${a.looked_up_at}; ${VERDICTS[check.verdict] ?? check.verdict}.`;
}

export function DecisionDialog(props: {
  ctx: Ctx;
  approval: ApprovalRecord;
  decision: 'approve' | 'deny';
  onClose: () => void;
  onDone: (notice: string) => void;
}) {
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState<ApiProblem>();
  const [facts, setFacts] = useState<ApprovalFacts>();
  const [factsProblem, setFactsProblem] = useState<ApiProblem>();
  const { approval, decision } = props;
  // What the approval approves: the input, the plan's preview and its fidelity (GET /v1/approvals/{id}).
  useEffect(() => {
    let live = true;
    props.ctx.api.approval(approval.approval_id).then(
      (out) => live && setFacts(out.facts),
      (err: unknown) => live && setFactsProblem(asProblem(err)),
    );
    return () => {
      live = false;
    };
  }, [approval.approval_id, props.ctx.api]);
  return (
    <ConfirmDialog
      title={`${decision === 'approve' ? 'Approve' : 'Deny'} ${approval.capability_id}?`}
      confirmLabel={decision === 'approve' ? 'Confirm approval' : 'Confirm denial'}
      danger={decision === 'deny'}
      problem={problem}
      onClose={props.onClose}
      onConfirm={async () => {
        try {
          const out = await props.ctx.api.decide(approval.approval_id, decision, reason.trim() || undefined);
          props.onDone(
            `Approval ${approval.approval_id} ${out.approval.status}${out.action_result ? `; action ${out.action_result.action_id} is ${out.action_result.status}` : ''}.`,
          );
        } catch (err) {
          setProblem(asProblem(err));
        }
      }}
    >
      <dl class="facts">
        <dt>Approval</dt>
        <dd>
          <code>{approval.approval_id}</code>
        </dd>
        <dt>Action</dt>
        <dd>
          <code>{approval.action_id}</code>
        </dd>
        <dt>Requested by</dt>
        <dd>{approval.requested_by.id}</dd>
        <dt>Policy</dt>
        <dd>
          {approval.policy.policy_id} ({approval.decisions.length}/{approval.policy.min_approvals} approvals)
        </dd>
        {approval.subject?.compensation_for && (
          <>
            <dt>Compensates</dt>
            <dd>
              {approval.subject.compensation_for.action_id} (owner {approval.subject.compensation_for.owner.id})
            </dd>
          </>
        )}
        {facts && (
          <>
            <dt>Mode</dt>
            <dd data-fact="mode">{facts.mode}</dd>
            <dt>Requested at</dt>
            <dd>
              <time dateTime={facts.requested_at}>{facts.requested_at}</time>
            </dd>
            {facts.input !== undefined && (
              <>
                <dt>Input</dt>
                <dd>
                  <pre data-fact="input">{JSON.stringify(facts.input, null, 2)}</pre>
                </dd>
              </>
            )}
            {facts.plan && (
              <>
                <dt>Plan</dt>
                <dd>
                  <code>{facts.plan.plan_id}</code> ({facts.plan.status}
                  {facts.plan.expires_at ? `, expires ${facts.plan.expires_at}` : ''})
                </dd>
                <dt>Preview</dt>
                <dd>
                  fidelity <strong data-fact="fidelity">{facts.plan.fidelity ?? 'unknown'}</strong>
                  {facts.plan.preview !== undefined && <pre data-fact="preview">{JSON.stringify(facts.plan.preview, null, 2)}</pre>}
                </dd>
              </>
            )}
            {facts.resolution && (
              <>
                <dt>Resolution</dt>
                <dd>
                  <pre data-fact="resolution">{JSON.stringify(facts.resolution.proposal, null, 2)}</pre>
                </dd>
                <dt>Provider at proposal</dt>
                <dd data-fact="provider-at-proposal" data-verdict={facts.resolution.provider_check_at_proposal?.verdict ?? 'unknown'}>
                  {providerCheckText(facts.resolution.provider_check_at_proposal)}
                  {decision === 'approve' && <p class="muted">Approving asks the provider again; an answer that now contradicts the resolution is refused.</p>}
                </dd>
              </>
            )}
          </>
        )}
      </dl>
      {factsProblem && <ProblemView problem={factsProblem} />}
      <label>
        Reason
        <textarea name="reason" rows={3} value={reason} onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)} />
      </label>
    </ConfirmDialog>
  );
}
