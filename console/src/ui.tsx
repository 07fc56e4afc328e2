/** Small building blocks shared by the pages. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiProblem } from './api.js';

/** `3m 12s`, `2h 5m`, `4d 1h`. */
export function formatAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

export function ageOf(at: string | undefined, now = Date.now()): number | undefined {
  if (at === undefined) return undefined;
  const t = Date.parse(at);
  return Number.isNaN(t) ? undefined : (now - t) / 1000;
}

export function Age({ at }: { at: string | undefined }) {
  const age = ageOf(at);
  return age === undefined ? (
    <span class="muted">—</span>
  ) : (
    <time dateTime={at} title={at}>
      {formatAge(age)} ago
    </time>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return (
    <span class={`badge status-${status}`} data-status={status}>
      {status}
    </span>
  );
}

/** An RFC 9457 problem as the API sent it: code, title, detail. */
export function ProblemView({ problem, onDismiss }: { problem: ApiProblem; onDismiss?: () => void }) {
  return (
    <div class="problem" role="alert" data-testid="problem" data-code={problem.code}>
      <div class="problem-head">
        <strong class="problem-title">{problem.title}</strong>
        {problem.status > 0 && <span class="problem-status">HTTP {problem.status}</span>}
        {onDismiss && (
          <button type="button" class="link" onClick={onDismiss} aria-label="Dismiss">
            ×
          </button>
        )}
      </div>
      <code class="problem-code">{problem.code}</code>
      {problem.detail !== undefined && <p class="problem-detail">{problem.detail}</p>}
      {problem.problem?.details !== undefined && <Json value={problem.problem.details} label="details" />}
    </div>
  );
}

export function Json({ value, label }: { value: unknown; label?: string }) {
  return (
    <details class="json">
      <summary>{label ?? 'JSON'}</summary>
      <pre>{JSON.stringify(value, null, 2)}</pre>
    </details>
  );
}

export function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

export function short(id: string | undefined, n = 12): string {
  if (id === undefined) return '';
  return id.length > n + 1 ? `${id.slice(0, n)}…` : id;
}

/**
 * A modal confirmation (HTML <dialog>): the question, optional form fields,
 * Confirm and Back. `onConfirm` runs while the dialog shows "Working…"; a
 * refusal it throws is shown in the dialog, which stays open.
 */
export function ConfirmDialog(props: {
  title: string;
  children?: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  canConfirm?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  problem?: ApiProblem | undefined;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog ref={ref} class="confirm" aria-label={props.title} onClose={props.onClose}>
      <form
        method="dialog"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          try {
            await props.onConfirm();
          } finally {
            setBusy(false);
          }
        }}
      >
        <h2>{props.title}</h2>
        {props.children}
        {props.problem && <ProblemView problem={props.problem} />}
        <div class="buttons">
          <button type="button" onClick={() => ref.current?.close()} disabled={busy}>
            Back
          </button>
          <button type="submit" class={props.danger ? 'danger' : 'primary'} disabled={busy || props.canConfirm === false}>
            {busy ? 'Working…' : props.confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}
