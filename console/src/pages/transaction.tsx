/**
 * One transaction: status, the verdict of its receipt chain (verified here,
 * in the browser), the provider operation, the escalation, the connected
 * actions (plan, commit, compensation, reconciliations) and the timeline of
 * receipts with their evidence, newest first, a page at a time; and what an
 * operator can do: reconcile now, resolve with evidence, cancel its action.
 * Each button is enabled exactly in the states the API accepts it
 * (lib/transactions/operator-actions.ts, the table the routes check).
 */
import { useEffect, useState } from 'preact/hooks';
import type { Ctx } from '../ctx.js';
import { asProblem, isRouteMissing, type ApiProblem, type ResolveInput, type TransactionView } from '../api.js';
import { verifyTransaction, type ReceiptChainVerdict } from '../verify.js';
import { mayCancel, mayReconcile, mayResolve } from '../../../lib/transactions/operator-actions.js';
import { Age, ConfirmDialog, Field, Json, ProblemView, short, StatusBadge } from '../ui.js';

type Dialog = 'reconcile' | 'resolve' | 'cancel';

/** Receipts per page of the timeline. */
const TIMELINE_PAGE = 20;

export function TransactionPage({ ctx, id }: { ctx: Ctx; id: string }) {
  const [txn, setTxn] = useState<TransactionView>();
  const [verdict, setVerdict] = useState<ReceiptChainVerdict | { error: string }>();
  const [problem, setProblem] = useState<ApiProblem>();
  const [dialog, setDialog] = useState<Dialog>();
  const [notice, setNotice] = useState<string>();
  const [reload, setReload] = useState(0);
  /** The status of the transaction's current action (the cancel button's state), read with the transaction. */
  const [actionStatus, setActionStatus] = useState<string>();

  useEffect(() => {
    let live = true;
    ctx.api
      .transaction({ transaction_id: id })
      .then(async (t) => {
        if (!live) return;
        setTxn(t);
        setProblem(undefined);
        const current = t.links?.action_id ?? t.action_result?.action_id;
        if (current !== undefined)
          ctx.api.action(current).then(
            (a) => live && setActionStatus(a.action_result.status),
            () => live && setActionStatus(undefined),
          );
        const v = await verifyTransaction(t).catch((err: unknown) => ({ error: err instanceof Error ? err.message : String(err) }));
        if (live) setVerdict(v);
      })
      .catch((err: unknown) => live && setProblem(asProblem(err)));
    return () => {
      live = false;
    };
  }, [id, reload]);

  const refresh = () => setReload((n) => n + 1);
  const done = (text: string) => {
    setDialog(undefined);
    setNotice(text);
    refresh();
  };
  /** Shows `text`, refreshes, then follows the work `follow` waits for (long polls, no timers) and refreshes again. */
  const watch = (text: string, follow: () => Promise<string>) => {
    done(text);
    follow().then(done, (err: unknown) => setProblem(asProblem(err)));
  };

  if (!txn) {
    return (
      <section class="transaction">
        <h1>
          Transaction <code>{id}</code>
        </h1>
        {problem ? <ProblemView problem={problem} /> : <p class="loading">Loading…</p>}
      </section>
    );
  }

  const actionId = txn.links?.action_id ?? txn.action_result?.action_id;
  const facts = { status: txn.status, escalated: txn.escalated !== undefined };
  return (
    <section class="transaction">
      <div class="title">
        <h1>
          Transaction <code data-testid="transaction-id">{txn.transaction_id}</code>
        </h1>
        <span data-testid="transaction-status">
          <StatusBadge status={txn.status} />
        </span>
        {txn.escalated && <span class="badge escalated">escalated</span>}
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>

      <Verdict verdict={verdict} />

      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {problem && <ProblemView problem={problem} onDismiss={() => setProblem(undefined)} />}

      {/* biome-ignore lint/a11y/useSemanticElements: a row of buttons, not a form section; a <fieldset> would bring its own border, padding and form semantics */}
      <div class="operations" role="group" aria-label="Operator actions" data-action-status={actionStatus ?? ''}>
        <button type="button" class="primary" disabled={!mayReconcile(facts)} onClick={() => setDialog('reconcile')}>
          Reconcile now
        </button>
        <button type="button" disabled={!mayResolve(facts)} onClick={() => setDialog('resolve')}>
          Resolve with evidence
        </button>
        <button
          type="button"
          class="danger"
          disabled={actionId === undefined || actionStatus === undefined || !mayCancel(actionStatus)}
          onClick={() => setDialog('cancel')}
        >
          Cancel action
        </button>
      </div>

      {txn.status === 'reconciling' && (
        <p class="muted" data-testid="reconciling-note">
          A reconciliation is asking the provider now
          {txn.links?.reconcile_action_id ? (
            <>
              {' '}
              (action <a href={`#/actions/${encodeURIComponent(txn.links.reconcile_action_id)}`}>{short(txn.links.reconcile_action_id, 24)}</a>)
            </>
          ) : null}
          : nothing to reconcile, resolve or cancel until it answers. Refresh to follow it.
        </p>
      )}

      <div class="panels">
        <section class="panel" aria-label="Summary">
          <h2>Summary</h2>
          <dl class="facts">
            <Field label="Status">{txn.status}</Field>
            {txn.plan && <Field label="Capability">{txn.plan.capability_id}</Field>}
            {txn.action_result && <Field label="Action status">{txn.action_result.status}</Field>}
            {txn.earliest_reconcile_at && !txn.escalated && (
              <Field label="Next reconcile">
                <time dateTime={txn.earliest_reconcile_at}>{txn.earliest_reconcile_at}</time>
              </Field>
            )}
            <Field label="Receipts">{txn.receipt_count ?? txn.receipts?.length ?? 0}</Field>
          </dl>
        </section>

        <section class="panel" aria-label="Provider operation">
          <h2>Provider operation</h2>
          {txn.provider_operation ? (
            <dl class="facts" data-testid="provider-operation">
              <Field label="Provider">{txn.provider_operation.provider}</Field>
              <Field label="Operation">
                <code>{txn.provider_operation.operation_id}</code>
              </Field>
              {txn.provider_operation.request_id && (
                <Field label="Request">
                  <code>{txn.provider_operation.request_id}</code>
                </Field>
              )}
            </dl>
          ) : (
            <p class="muted">None checkpointed: the provider never confirmed an operation for this transaction.</p>
          )}
        </section>

        <section class="panel" aria-label="Escalation">
          <h2>Escalation</h2>
          {txn.escalated ? (
            <p class="escalation">
              Escalated <Age at={txn.escalated.at} />
              {txn.escalated.reason ? `: ${txn.escalated.reason}` : ''}
            </p>
          ) : (
            <p class="muted">Not escalated.</p>
          )}
          <p class="muted">Evidence is shown once, with the receipt that recorded it, in the timeline below.</p>
        </section>

        <section class="panel" aria-label="Connected actions">
          <h2>Connected actions</h2>
          <ConnectedActions txn={txn} />
        </section>
      </div>

      <Timeline txn={txn} verdict={verdict} />

      {txn.action_result && (
        <section aria-label="Action result">
          <h2>Action result</h2>
          <Json value={txn.action_result} label={`${txn.action_result.action_id}: ${txn.action_result.status}`} />
        </section>
      )}

      {dialog === 'reconcile' && <ReconcileDialog ctx={ctx} txn={txn} onClose={() => setDialog(undefined)} onWatch={watch} />}
      {dialog === 'resolve' && <ResolveDialog ctx={ctx} txn={txn} onClose={() => setDialog(undefined)} onDone={done} />}
      {dialog === 'cancel' && actionId !== undefined && <CancelDialog ctx={ctx} actionId={actionId} onClose={() => setDialog(undefined)} onDone={done} />}
    </section>
  );
}

function Verdict({ verdict }: { verdict: ReceiptChainVerdict | { error: string } | undefined }) {
  if (verdict === undefined)
    return (
      <p class="verdict pending" data-testid="verdict" data-verdict="pending">
        Verifying the receipt chain…
      </p>
    );
  if ('error' in verdict)
    return (
      <p class="verdict invalid" role="alert" data-testid="verdict" data-verdict="error">
        Could not verify the receipt chain: {verdict.error}
      </p>
    );
  if (verdict.valid)
    return (
      <p class="verdict valid" data-testid="verdict" data-verdict="valid">
        ✔ Receipt chain verified in this browser: {verdict.count} receipt{verdict.count === 1 ? '' : 's'}
        {verdict.head && (
          <>
            , head <code title={verdict.head}>{short(verdict.head, 16)}</code>
          </>
        )}
      </p>
    );
  return (
    <p class="verdict invalid" role="alert" data-testid="verdict" data-verdict="invalid">
      ✘ Receipt chain does NOT verify: <strong>{verdict.problem}</strong> at seq {verdict.at_seq}
    </p>
  );
}

/**
 * The receipts, newest first, TIMELINE_PAGE at a time ("Show older" adds a page), each with its evidence (collapsed).
 * The chain is verified over every receipt whatever is shown; a receipt that breaks it is shown and marked.
 */
function Timeline({ txn, verdict }: { txn: TransactionView; verdict: ReceiptChainVerdict | { error: string } | undefined }) {
  const [shown, setShown] = useState(TIMELINE_PAGE);
  const all = [...(txn.receipts ?? [])].reverse();
  const badSeq = verdict && 'valid' in verdict && !verdict.valid ? verdict.at_seq : undefined;
  const visible = all.filter((r, i) => i < shown || r.seq === badSeq);
  return (
    <section aria-label="Receipts">
      <h2>
        Timeline <span class="muted">({all.length === 0 ? 'no receipts' : `newest first, ${Math.min(shown, all.length)} of ${all.length}`})</span>
      </h2>
      <ol class="timeline" data-testid="timeline">
        {visible.map((r) => (
          <li key={r.seq} data-seq={r.seq} data-event={r.event} class={r.seq === badSeq ? 'receipt bad' : 'receipt'}>
            <div class="receipt-head">
              <span class="seq">#{r.seq}</span>
              <strong class="event">{r.event}</strong>
              <StatusBadge status={r.status} />
              <time dateTime={r.at}>{r.at}</time>
              {r.actor && (
                <span class="actor">
                  by {r.actor.id} ({r.actor.kind})
                </span>
              )}
            </div>
            <div class="receipt-hash muted">
              hash <code title={r.hash}>{short(r.hash, 16)}</code> ← <code title={r.prev_hash}>{short(r.prev_hash, 16)}</code>
              {r.result_digest && (
                <>
                  {' '}
                  · result <code title={r.result_digest}>{short(r.result_digest, 12)}</code>
                </>
              )}
            </div>
            {r.evidence !== undefined && <Json value={r.evidence} label="evidence" />}
          </li>
        ))}
      </ol>
      {all.length > shown && (
        <button type="button" data-testid="timeline-older" onClick={() => setShown((n) => n + TIMELINE_PAGE)}>
          Show older ({all.length - shown} more)
        </button>
      )}
    </section>
  );
}

function ActionLink({ id }: { id: string }) {
  return (
    <a href={`#/actions/${encodeURIComponent(id)}`}>
      <code>{id}</code>
    </a>
  );
}

function ConnectedActions({ txn }: { txn: TransactionView }) {
  const l = txn.links ?? {};
  const actionId = l.action_id ?? txn.action_result?.action_id;
  const planning = l.planning_action_id ?? txn.plan?.planning_action_id;
  const rows: [string, string[]][] = [
    ['Action', actionId ? [actionId] : []],
    ['Planning action', planning && planning !== actionId ? [planning] : []],
    ['Compensates', l.compensation_for ? [l.compensation_for] : []],
    ['Compensations', [...(l.compensation_action_ids ?? [])]],
    ['Reconciliations', [...new Set([...(l.reconcile_action_ids ?? []), ...(l.reconcile_action_id ? [l.reconcile_action_id] : [])])]],
  ];
  const planId = l.plan_id ?? txn.plan_id;
  return (
    <dl class="facts" data-testid="connected-actions">
      {planId && (
        <Field label="Plan">
          <code>{planId}</code>
        </Field>
      )}
      {rows
        .filter(([, ids]) => ids.length > 0)
        .map(([label, ids]) => (
          <Field label={label} key={label}>
            {ids.map((id) => (
              <div key={id}>
                <ActionLink id={id} />
              </div>
            ))}
          </Field>
        ))}
    </dl>
  );
}

function missingRoute(err: unknown, what: string): ApiProblem {
  const p = asProblem(err);
  if (isRouteMissing(err)) return Object.assign(p, { detail: `This runtime does not offer ${what} yet (${p.detail ?? p.code}).` });
  return p;
}

function ReconcileDialog({
  ctx,
  txn,
  onClose,
  onWatch,
}: {
  ctx: Ctx;
  txn: TransactionView;
  onClose: () => void;
  onWatch: (s: string, follow: () => Promise<string>) => void;
}) {
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState<ApiProblem>();
  return (
    <ConfirmDialog
      title="Reconcile now?"
      confirmLabel="Confirm reconcile"
      problem={problem}
      onClose={onClose}
      onConfirm={async () => {
        try {
          const out = await ctx.api.reconcile(txn.transaction_id, reason.trim() || undefined);
          const actionId = out.action_id;
          onWatch(`Reconciliation requested; the transaction is ${out.transaction.status}. Following it…`, async () => {
            // With the reconcile action's ID, long-poll it; otherwise watch the transaction until the reconcile consumer ran.
            if (actionId !== undefined) await ctx.api.settled(actionId);
            const after =
              actionId !== undefined ? await ctx.api.transaction({ transaction_id: txn.transaction_id }) : await ctx.api.reconciled(out.transaction);
            return `Reconciliation finished: the transaction is ${after.escalated && after.status === 'outcome_unknown' ? 'escalated to a human' : after.status}.`;
          });
        } catch (err) {
          setProblem(missingRoute(err, 'reconcile now'));
        }
      }}
    >
      <p>
        Asks the provider about operation <code>{txn.provider_operation?.operation_id ?? '(none checkpointed)'}</code> now, instead of waiting for the schedule.
      </p>
      <label>
        Reason
        <textarea name="reason" rows={2} value={reason} onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)} />
      </label>
    </ConfirmDialog>
  );
}

function ResolveDialog({ ctx, txn, onClose, onDone }: { ctx: Ctx; txn: TransactionView; onClose: () => void; onDone: (s: string) => void }) {
  const [effect, setEffect] = useState<ResolveInput['effect']>('committed');
  const [provider, setProvider] = useState(txn.provider_operation?.provider ?? '');
  const [operationId, setOperationId] = useState(txn.provider_operation?.operation_id ?? '');
  const [reason, setReason] = useState('');
  const [uri, setUri] = useState('');
  const [description, setDescription] = useState('');
  const [sha256, setSha256] = useState('');
  const [override, setOverride] = useState(false);
  const [overrideReason, setOverrideReason] = useState('');
  const [problem, setProblem] = useState<ApiProblem>();
  /** The provider's answer, once it contradicted this resolution (the runtime asked the provider before recording it). */
  const contradiction = problem?.code === CONTRADICTS_PROVIDER ? contradictionOf(problem) : undefined;
  return (
    <ConfirmDialog
      title="Resolve with evidence?"
      confirmLabel={override ? 'Confirm resolution against the provider' : 'Confirm resolution'}
      danger
      canConfirm={reason.trim().length > 0 && (!override || overrideReason.trim().length > 0)}
      problem={problem}
      onClose={onClose}
      onConfirm={async () => {
        const input: ResolveInput = {
          effect,
          reason: reason.trim(),
          ...(provider.trim() && operationId.trim() ? { provider_operation: { provider: provider.trim(), operation_id: operationId.trim() } } : {}),
          ...(uri.trim()
            ? {
                attachments: [
                  { uri: uri.trim(), ...(description.trim() ? { description: description.trim() } : {}), ...(sha256.trim() ? { sha256: sha256.trim() } : {}) },
                ],
              }
            : {}),
          ...(override ? { provider_override: { reason: overrideReason.trim() } } : {}),
        };
        try {
          const out = await ctx.api.resolve(txn.transaction_id, input);
          if ('transaction' in out) onDone(`Resolved: the transaction is ${out.transaction.status}.`);
          else onDone(`A second operator must approve this resolution: approval ${out.approval.approval_id} is pending.`);
        } catch (err) {
          setProblem(missingRoute(err, 'resolution'));
        }
      }}
    >
      <p>
        Records what you established at the provider. The runtime asks the provider too before recording it: its answer goes into the receipt beside yours, and
        a resolution it contradicts is refused unless you override it with a reason.
      </p>
      <fieldset>
        <legend>Effect at the provider</legend>
        <label class="check">
          <input type="radio" name="effect" value="committed" checked={effect === 'committed'} onChange={() => setEffect('committed')} /> committed (the effect
          happened)
        </label>
        <label class="check">
          <input type="radio" name="effect" value="not_committed" checked={effect === 'not_committed'} onChange={() => setEffect('not_committed')} /> not
          committed (it did not happen)
        </label>
      </fieldset>
      <div class="row">
        <label>
          Provider
          <input name="provider" value={provider} onInput={(e) => setProvider((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Operation ID
          <input name="operation_id" value={operationId} onInput={(e) => setOperationId((e.target as HTMLInputElement).value)} />
        </label>
      </div>
      <label>
        Reason (required)
        <textarea name="reason" rows={3} required value={reason} onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)} />
      </label>
      <fieldset>
        <legend>Attachment (optional)</legend>
        <label>
          URI
          <input name="attachment_uri" type="url" value={uri} onInput={(e) => setUri((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Description
          <input name="attachment_description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          SHA-256
          <input name="attachment_sha256" pattern="[0-9a-f]{64}" value={sha256} onInput={(e) => setSha256((e.target as HTMLInputElement).value)} />
        </label>
      </fieldset>
      {contradiction && (
        <fieldset class="contradiction" data-testid="provider-contradiction">
          <legend>The provider answered otherwise</legend>
          <p>
            The provider says <strong>{contradiction.provider}</strong>
            {contradiction.operation ? (
              <>
                {' '}
                (operation <code>{contradiction.operation}</code>)
              </>
            ) : null}
            ; this resolution says <strong>{contradiction.resolution}</strong>. Check again, or record it against the provider’s answer.
          </p>
          <label class="check">
            <input type="checkbox" name="provider_override" checked={override} onChange={(e) => setOverride((e.target as HTMLInputElement).checked)} /> Override
            the provider’s answer
          </label>
          {override && (
            <label>
              Why the provider’s answer is wrong (required)
              <textarea
                name="provider_override_reason"
                rows={2}
                required
                value={overrideReason}
                onInput={(e) => setOverrideReason((e.target as HTMLTextAreaElement).value)}
              />
            </label>
          )}
        </fieldset>
      )}
    </ConfirmDialog>
  );
}

/** The refusal of a resolution the provider's answer contradicts (lib/runtime/provider-lookup.ts). */
const CONTRADICTS_PROVIDER = 'operator.resolution_contradicts_provider';

/** What the provider answered and what the resolution said, from the refusal's details. */
function contradictionOf(problem: ApiProblem): { provider: string; operation?: string; resolution: string } {
  const d = (problem.problem?.details ?? {}) as {
    provider_answer?: { effect?: string; provider_operation?: { provider?: string; operation_id?: string } };
    resolution?: { effect?: string };
  };
  const op = d.provider_answer?.provider_operation;
  return {
    provider: d.provider_answer?.effect ?? 'something else',
    ...(op?.operation_id !== undefined ? { operation: `${op.provider ?? '?'}/${op.operation_id}` } : {}),
    resolution: d.resolution?.effect ?? '?',
  };
}

export function CancelDialog({ ctx, actionId, onClose, onDone }: { ctx: Ctx; actionId: string; onClose: () => void; onDone: (s: string) => void }) {
  const [problem, setProblem] = useState<ApiProblem>();
  return (
    <ConfirmDialog
      title="Cancel this action?"
      confirmLabel="Confirm cancel"
      danger
      problem={problem}
      onClose={onClose}
      onConfirm={async () => {
        try {
          const out = await ctx.api.cancel(actionId);
          const status = (out as { action_result?: { status?: string } }).action_result?.status ?? (out as { status?: string }).status;
          onDone(`Cancellation requested for ${actionId}${status ? `: ${status}` : ''}.`);
        } catch (err) {
          setProblem(asProblem(err));
        }
      }}
    >
      <p>
        Action <code>{actionId}</code>. Before an attempt starts it ends cancelled; a running or settled action refuses.
      </p>
    </ConfirmDialog>
  );
}
