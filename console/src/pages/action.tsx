/** One action: its result, its transaction, and cancel (enabled only while the API accepts it: lib/transactions/operator-actions.ts). */
import { useEffect, useState } from 'preact/hooks';
import type { Ctx } from '../ctx.js';
import { asProblem, type ActionResult, type ApiProblem, type TransactionView } from '../api.js';
import { mayCancel } from '../../../lib/transactions/operator-actions.js';
import { Field, Json, ProblemView, StatusBadge } from '../ui.js';
import { CancelDialog } from './transaction.js';

export function ActionPage({ ctx, id }: { ctx: Ctx; id: string }) {
  const [state, setState] = useState<{ action_result: ActionResult; transaction?: TransactionView }>();
  const [problem, setProblem] = useState<ApiProblem>();
  const [cancelling, setCancelling] = useState(false);
  const [notice, setNotice] = useState<string>();
  const [reload, setReload] = useState(0);

  useEffect(() => {
    let live = true;
    ctx.api
      .action(id)
      .then((s) => {
        if (!live) return;
        setState(s);
        setProblem(undefined);
      })
      .catch((err: unknown) => {
        if (live) setProblem(asProblem(err));
      });
    return () => {
      live = false;
    };
  }, [id, reload]);

  const r = state?.action_result;
  return (
    <section class="action">
      <div class="title">
        <h1>
          Action <code>{id}</code>
        </h1>
        {r && (
          <span data-testid="action-status">
            <StatusBadge status={r.status} />
          </span>
        )}
        <button type="button" onClick={() => setReload((n) => n + 1)}>
          Refresh
        </button>
        <button type="button" class="danger" disabled={!r || !mayCancel(r.status)} onClick={() => setCancelling(true)}>
          Cancel action
        </button>
      </div>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {problem && <ProblemView problem={problem} onDismiss={() => setProblem(undefined)} />}
      {r && (
        <dl class="facts">
          <Field label="Status">{r.status}</Field>
          {r.completed_at && <Field label="Completed">{r.completed_at}</Field>}
          {r.error && (
            <Field label="Error">
              <code>{r.error.code}</code> {r.error.message}
            </Field>
          )}
          {state?.transaction && (
            <Field label="Transaction">
              <a href={`#/transactions/${encodeURIComponent(state.transaction.transaction_id)}`}>
                <code>{state.transaction.transaction_id}</code>
              </a>{' '}
              <StatusBadge status={state.transaction.status} />
            </Field>
          )}
        </dl>
      )}
      {r && <Json value={r} label="Action result" />}
      {cancelling && (
        <CancelDialog
          ctx={ctx}
          actionId={id}
          onClose={() => setCancelling(false)}
          onDone={(text) => {
            setCancelling(false);
            setNotice(text);
            setReload((n) => n + 1);
          }}
        />
      )}
    </section>
  );
}
