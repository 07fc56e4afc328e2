/**
 * What an operator may do to a transaction or an action, by state: the one
 * table that the runtime's routes check (reconcile now, resolve with
 * evidence, cancel) and that the operator console enables its buttons from.
 * A button is enabled exactly when the API would accept the request, so an
 * operator never meets a 409 the page could have known about.
 *
 * Pure data and predicates, no imports at run time: the console bundles it.
 */

/** The facts a decision needs: a durable record (status + `escalated_at`) or its wire view (status + `escalated`). */
export interface TransactionFacts {
  /** Durable status, or the wire status (`requires_human` is an escalated `outcome_unknown`). */
  readonly status: string;
  readonly escalated: boolean;
}

export const OPERATOR_ACTION_RULES = {
  /** `POST /v1/operator/transactions/{id}/reconcile`: an `outcome_unknown` record, escalated or not (not while `reconciling`, never a terminal one). */
  reconcile: { transaction_statuses: ['outcome_unknown'], escalated: 'either', refusal: 'runtime.reconcile_not_outcome_unknown' },
  /** `POST /v1/operator/transactions/{id}/resolve`: only a record escalated to a human (wire `requires_human`). */
  resolve: { transaction_statuses: ['outcome_unknown'], escalated: 'required', refusal: 'runtime.resolve_not_escalated' },
  /**
   * `POST /v1/actions/{id}/cancel`: an action that has not finished. A cancelled action answers with its result and
   * changes nothing (no button: there is nothing to do); a completed or failed one is refused.
   */
  cancel: { action_statuses: ['accepted', 'requires_human', 'running'], refusal: 'runtime.cancel_not_allowed' },
} as const;

/** The durable status behind a wire or durable status. */
function durableStatus(t: TransactionFacts): string {
  return t.status === 'requires_human' && t.escalated ? 'outcome_unknown' : t.status;
}

export function mayReconcile(t: TransactionFacts): boolean {
  return (OPERATOR_ACTION_RULES.reconcile.transaction_statuses as readonly string[]).includes(durableStatus(t));
}

export function mayResolve(t: TransactionFacts): boolean {
  return (OPERATOR_ACTION_RULES.resolve.transaction_statuses as readonly string[]).includes(durableStatus(t)) && t.escalated;
}

export function mayCancel(action_status: string): boolean {
  return (OPERATOR_ACTION_RULES.cancel.action_statuses as readonly string[]).includes(action_status);
}
