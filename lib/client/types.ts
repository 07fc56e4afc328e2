/**
 * Request and response shapes of the HTTPS API, as the client sees them.
 * Protocol objects come from lib/protocol; the edge's own envelopes are the
 * types of the edge schemas (lib/http/schemas.ts), imported as types only so
 * that the client does not load zod; its fixed values come from
 * lib/http/constants.ts. Responses accept extra fields: a newer server may
 * add some, and the client passes them through.
 */
import type {
  ActionState as EdgeActionState,
  HealthReport as EdgeHealthReport,
  OperatorView,
  SubmitDisposition,
  SubmitResponse as EdgeSubmitResponse,
} from '../http/schemas.js';
import type { APPROVAL_DECISIONS, TRANSACTION_INCLUDES } from '../http/constants.js';
import type { Action, ActionResult, ActionStatus, Receipt, TransactionRequest, TransactionResult } from '../../packages/connector-sdk/src/protocol/index.js';

/** @public */
export type { Action, ActionResult, ActionStatus, TransactionRequest, TransactionResult, Receipt };
/** @public */
export type { OperatorView, SubmitDisposition };
/** @public */
export { MAX_WAIT_SECONDS, OPERATOR_VIEWS, SUBMIT_DISPOSITIONS } from '../http/constants.js';

/** A response as the client reads it: the edge's shape, read-only, with room for fields a newer server adds. */
type Open<T> = Readonly<T> & { readonly [key: string]: unknown };

/** Action statuses an action never leaves. */
export const TERMINAL_STATUSES: readonly ActionStatus[] = ['completed', 'failed', 'cancelled'];

/** `POST /v1/actions` answer; `transaction_result` on the TransactionRequest path. */
export type SubmitResponse = Open<EdgeSubmitResponse>;

/** `GET /v1/actions/{id}` answer. */
export type ActionState = Open<EdgeActionState>;

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
export type HealthReport = Open<EdgeHealthReport>;

export type TransactionSelector = { readonly transaction_id: string } | { readonly plan_id: string } | { readonly action_id: string };

export type TransactionInclude = (typeof TRANSACTION_INCLUDES)[number];

export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];

/** Either body `POST /v1/actions` accepts. */
export type SubmitBody = Action | TransactionRequest;
