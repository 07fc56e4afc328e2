/**
 * Request and response shapes of the HTTPS API, as the client sees them.
 * Protocol objects come from lib/protocol; the edge's own envelopes mirror
 * lib/http/schemas.ts. Response interfaces accept extra fields: a newer
 * server may add some, and the client passes them through.
 */
import type { Action, ActionResult, ActionStatus, Receipt, TransactionRequest, TransactionResult } from '../protocol/index.js';

export type { Action, ActionResult, ActionStatus, TransactionRequest, TransactionResult, Receipt };

/** Longest `Prefer: wait=N` / `?wait=N` the API honours, seconds. */
export const MAX_WAIT_SECONDS = 25;

export const SUBMIT_DISPOSITIONS = ['completed', 'accepted', 'requires_human', 'replayed', 'rejected'] as const;
export type SubmitDisposition = (typeof SUBMIT_DISPOSITIONS)[number];

/** The operator listings (`GET /v1/operator/transactions?view=`). */
export const OPERATOR_VIEWS = ['outcome_unknown', 'reconciling', 'stalled_committing', 'pending_approvals', 'requires_human'] as const;
export type OperatorView = (typeof OPERATOR_VIEWS)[number];

/** Action statuses an action never leaves. */
export const TERMINAL_STATUSES: readonly ActionStatus[] = ['completed', 'failed', 'cancelled'];

/** `POST /v1/actions` answer. */
export interface SubmitResponse {
  readonly action_id: string;
  readonly tenant_id: string;
  readonly disposition: SubmitDisposition;
  /** Where to poll the action (`GET`, optionally `?wait=`). */
  readonly status_url: string;
  readonly action_result: ActionResult;
  /** On the TransactionRequest path. */
  readonly transaction_result?: TransactionResult;
  readonly [key: string]: unknown;
}

/** `GET /v1/actions/{id}` answer. */
export interface ActionState {
  readonly action_result: ActionResult;
  readonly transaction?: TransactionResult;
  readonly [key: string]: unknown;
}

/** One page of a listing. */
export interface Page<T = Record<string, unknown>> {
  readonly items: T[];
  /** Absent on the last page. */
  readonly cursor?: string;
  readonly [key: string]: unknown;
}

export interface StreamChunkView {
  /** Stream-wide sequence number (pass it as `after` to continue). */
  readonly seq: number;
  readonly [key: string]: unknown;
}

export interface StreamPage {
  readonly items?: StreamChunkView[];
  readonly chunks?: StreamChunkView[];
  readonly cursor?: string;
  readonly [key: string]: unknown;
}

/** `GET /v1/health`: 200 whether every connector is ready (`ok`) or some are not (`degraded`). */
export interface HealthReport {
  readonly status: 'ok' | 'degraded';
  readonly [key: string]: unknown;
}

export type TransactionSelector = { readonly transaction_id: string } | { readonly plan_id: string } | { readonly action_id: string };

export type TransactionInclude = 'result' | 'receipts';

export type ApprovalDecision = 'approve' | 'deny';

/** Either body `POST /v1/actions` accepts. */
export type SubmitBody = Action | TransactionRequest;
