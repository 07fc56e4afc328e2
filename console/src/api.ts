/**
 * The console's calls to the AIP HTTPS API: bearer token, `X-AIP-Tenant`,
 * JSON in and out, and every refusal as a {@link ApiProblem} carrying the
 * RFC 9457 problem (code, title, detail) the API sent. Problem parsing is the
 * typed client's (lib/client/errors.ts), so both read problems alike.
 */
import { AipClientError, CLIENT_ERROR_CODES, errorFromResponse, type ProblemBody } from '../../lib/client/errors.js';
import type { ActionResult } from '../../packages/connector-sdk/src/protocol/action.js';
import type { Receipt, TransactionResult } from '../../packages/connector-sdk/src/protocol/transaction.js';

export type { ActionResult, ProblemBody, Receipt };

interface PrincipalRef {
  readonly id: string;
  readonly kind: string;
}

/** A pending approval as the API lists it (lib/ports/approval-store.ts ApprovalRecord on the wire). */
export interface ApprovalRecord {
  readonly tenant_id: string;
  readonly approval_id: string;
  readonly action_id: string;
  readonly transaction_id?: string;
  readonly capability_id: string;
  readonly requested_by: PrincipalRef;
  readonly policy: { readonly policy_id: string; readonly approver_scopes: readonly string[]; readonly min_approvals: number };
  readonly status: 'pending' | 'approved' | 'denied' | 'expired' | 'withdrawn';
  readonly decisions: readonly { readonly decided_by: PrincipalRef; readonly decision: string; readonly reason?: string; readonly decided_at: string }[];
  readonly subject?: { readonly compensation_for?: { readonly action_id: string; readonly transaction_id?: string; readonly owner: PrincipalRef } };
  readonly expires_at: string;
  readonly created_at: string;
}

/** What an approval approves (GET /v1/approvals/{id} `facts`, lib/runtime/approval-facts.ts). */
export interface ApprovalFacts {
  readonly capability_id: string;
  readonly mode: string;
  readonly action_id: string;
  readonly input?: unknown;
  readonly requested_by: PrincipalRef;
  readonly requested_at: string;
  readonly plan?: { readonly plan_id: string; readonly status: string; readonly expires_at?: string; readonly fidelity?: string; readonly preview?: unknown };
  readonly approvals: { readonly so_far: number; readonly needed: number; readonly approved_by: readonly PrincipalRef[] };
  readonly resolution?: {
    readonly proposal: unknown;
    readonly transaction_status: string;
    /** What the provider answered when the resolution was proposed (lib/runtime/provider-lookup.ts), and the verdict. */
    readonly provider_check_at_proposal?: ProposalProviderCheck;
  };
}

/** The provider's answer recorded with a four-eyes resolution proposal. */
export interface ProposalProviderCheck {
  readonly verdict: 'agrees' | 'overridden' | 'no_answer';
  readonly answer: {
    readonly obtained: boolean;
    readonly looked_up_at: string;
    readonly capability_id?: string;
    readonly effect?: 'committed' | 'not_committed';
    readonly provider_operation?: { readonly provider: string; readonly operation_id: string };
    readonly reason?: string;
    readonly code?: string;
    readonly evidence?: unknown;
  };
}

export const OPERATOR_VIEWS = ['outcome_unknown', 'reconciling', 'requires_human', 'pending_approvals', 'stalled_committing'] as const;
export type OperatorView = (typeof OPERATOR_VIEWS)[number];

/** `TransactionResult` with the fields the runtime adds for operators (links, receipt anchor, escalation). */
export interface TransactionView extends Omit<TransactionResult, 'receipts' | 'links' | 'escalated' | 'receipt_count' | 'receipt_head'> {
  readonly receipts?: readonly Receipt[];
  readonly receipt_count?: number;
  readonly receipt_head?: string;
  readonly links?: {
    readonly action_id?: string;
    readonly plan_id?: string;
    readonly planning_action_id?: string;
    readonly compensation_for?: string;
    readonly compensation_action_ids?: readonly string[];
    readonly reconcile_action_ids?: readonly string[];
    /** The reconcile action of the current or last reconciliation. */
    readonly reconcile_action_id?: string;
  };
  readonly escalated?: { readonly at: string; readonly reason?: string };
}

export type OperatorItem =
  | {
      readonly kind: 'transaction';
      readonly transaction: TransactionView;
      /** Absent from runtimes older than the field: the plan's capability, when there is a plan, stands in. */
      readonly capability_id?: string;
      readonly updated_at: string;
      readonly reconcile_attempts: number;
    }
  | { readonly kind: 'approval'; readonly approval: ApprovalRecord };

export interface Page<T> {
  readonly items: T[];
  readonly cursor?: string;
}

export interface OverviewView {
  readonly view: OperatorView;
  readonly count: number;
  readonly more: boolean;
  readonly oldest_at?: string;
  readonly oldest_age_seconds?: number;
}

export interface ResolveInput {
  readonly effect: 'committed' | 'not_committed';
  readonly provider_operation?: { readonly provider: string; readonly operation_id: string };
  readonly reason: string;
  readonly attachments?: readonly { readonly uri: string; readonly description?: string; readonly sha256?: string }[];
  /** Record the resolution although the provider's answer contradicts it, and why. */
  readonly provider_override?: { readonly reason: string };
}

export type ResolveOutcome = { readonly transaction: TransactionView } | { readonly approval: ApprovalRecord; readonly status: 'requires_human' };

/** A refused or failed call: the problem the API answered with, or a client-side code. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail: string | undefined,
    readonly problem: ProblemBody | undefined,
  ) {
    super(`${code}: ${detail ?? title}`);
    this.name = 'ApiProblem';
  }

  static from(err: AipClientError): ApiProblem {
    return new ApiProblem(err.status, err.code, err.problem?.title ?? err.code, err.problem?.detail ?? (err.problem ? undefined : err.message), err.problem);
  }
}

export function isRouteMissing(err: unknown): boolean {
  return err instanceof ApiProblem && err.status === 404 && err.code === 'request.route_not_found';
}

export interface ApiOptions {
  readonly baseUrl: string;
  readonly token: () => string | undefined;
  readonly tenant: () => string | undefined;
  /** Called on a 401: the session is over. */
  readonly onUnauthenticated?: () => void;
}

export class ConsoleApi {
  constructor(private readonly options: ApiOptions) {}

  async request<T>(
    method: 'GET' | 'POST',
    path: string,
    init: { query?: Record<string, string | number | undefined>; body?: unknown } = {},
  ): Promise<{ status: number; body: T }> {
    const url = new URL(`${this.options.baseUrl}${path}`);
    for (const [k, v] of Object.entries(init.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
    const token = this.options.token();
    if (token) headers.authorization = `Bearer ${token}`;
    const tenant = this.options.tenant();
    if (tenant) headers['X-AIP-Tenant'] = tenant;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const label = `${method} ${path}`;
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { method, headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}), cache: 'no-store' });
      text = await res.text();
    } catch (err) {
      throw new ApiProblem(0, CLIENT_ERROR_CODES.network, 'The API could not be reached', err instanceof Error ? err.message : undefined, undefined);
    }
    if (!res.ok) {
      const problem = ApiProblem.from(errorFromResponse(res.status, res.headers.get('content-type') ?? '', text, label, res.headers.get('retry-after')));
      if (res.status === 401) this.options.onUnauthenticated?.();
      throw problem;
    }
    try {
      return { status: res.status, body: (text.length === 0 ? {} : JSON.parse(text)) as T };
    } catch {
      throw new ApiProblem(res.status, CLIENT_ERROR_CODES.badResponse, 'The API answered with a body that is not JSON', label, undefined);
    }
  }

  overview(): Promise<{ views: OverviewView[] }> {
    return this.request<{ views: OverviewView[] }>('GET', '/v1/operator/overview').then((r) => r.body);
  }

  listOperator(view: OperatorView, cursor?: string, limit?: number): Promise<Page<OperatorItem>> {
    return this.request<Page<OperatorItem>>('GET', '/v1/operator/transactions', { query: { view, cursor, limit } }).then((r) => r.body);
  }

  transaction(selector: { transaction_id: string } | { action_id: string } | { plan_id: string }): Promise<TransactionView> {
    return this.request<TransactionView>('GET', '/v1/transactions', { query: { ...selector, include: 'result,receipts' } }).then((r) => r.body);
  }

  /** `GET /v1/actions/{id}`; with `wait`, long-polls up to that many seconds for the action to settle. */
  action(id: string, wait?: number): Promise<{ action_result: ActionResult; transaction?: TransactionView }> {
    return this.request<{ action_result: ActionResult; transaction?: TransactionView }>('GET', `/v1/actions/${encodeURIComponent(id)}`, {
      query: { wait },
    }).then((r) => r.body);
  }

  /**
   * Follows a requested reconciliation until the reconcile consumer has run
   * it: the transaction left outcome_unknown/reconciling, or another attempt
   * was counted, or it was escalated. Polls every `everyMs`, at most `rounds` times.
   */
  async reconciled(requested: TransactionView, everyMs = 1_500, rounds = 60): Promise<TransactionView> {
    const attempts = requested.reconcile_attempts ?? 0;
    let last = requested;
    for (let i = 0; i < rounds; i++) {
      await new Promise((resolve) => setTimeout(resolve, everyMs));
      last = await this.transaction({ transaction_id: requested.transaction_id });
      const running = last.status === 'outcome_unknown' || last.status === 'reconciling';
      if (!running || (last.reconcile_attempts ?? 0) > attempts || last.escalated !== undefined) return last;
    }
    return last;
  }

  /** Follows an action until it is terminal or waits for a human (repeated long polls, at most `rounds`). */
  async settled(id: string, rounds = 6): Promise<ActionResult> {
    let last = (await this.action(id, 20)).action_result;
    for (let i = 1; i < rounds && !['completed', 'failed', 'cancelled', 'requires_human'].includes(last.status); i++)
      last = (await this.action(id, 20)).action_result;
    return last;
  }

  cancel(actionId: string): Promise<Record<string, unknown>> {
    return this.request<Record<string, unknown>>('POST', `/v1/actions/${encodeURIComponent(actionId)}/cancel`, { body: {} }).then((r) => r.body);
  }

  /** One approval with what it approves. */
  approval(approvalId: string): Promise<ApprovalRecord & { readonly facts: ApprovalFacts }> {
    return this.request<ApprovalRecord & { readonly facts: ApprovalFacts }>('GET', `/v1/approvals/${encodeURIComponent(approvalId)}`).then((r) => r.body);
  }

  decide(approvalId: string, decision: 'approve' | 'deny', reason?: string): Promise<{ approval: ApprovalRecord; action_result?: ActionResult }> {
    return this.request<{ approval: ApprovalRecord; action_result?: ActionResult }>('POST', `/v1/approvals/${encodeURIComponent(approvalId)}/decision`, {
      body: { decision, ...(reason ? { reason } : {}) },
    }).then((r) => r.body);
  }

  reconcile(transactionId: string, reason?: string): Promise<{ action_id?: string; transaction: TransactionView }> {
    return this.request<{ action_id?: string; transaction: TransactionView }>(
      'POST',
      `/v1/operator/transactions/${encodeURIComponent(transactionId)}/reconcile`,
      {
        body: reason ? { reason } : {},
      },
    ).then((r) => r.body);
  }

  resolve(transactionId: string, input: ResolveInput): Promise<ResolveOutcome> {
    return this.request<ResolveOutcome>('POST', `/v1/operator/transactions/${encodeURIComponent(transactionId)}/resolve`, { body: input }).then((r) => r.body);
  }
}

/** Any error as an ApiProblem (a bug in the page shows as one too, rather than vanishing). */
export function asProblem(err: unknown): ApiProblem {
  if (err instanceof ApiProblem) return err;
  if (err instanceof AipClientError) return ApiProblem.from(err);
  return new ApiProblem(0, 'client.unexpected', 'Unexpected error in the console', err instanceof Error ? err.message : String(err), undefined);
}
