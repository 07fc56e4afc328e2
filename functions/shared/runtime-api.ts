/**
 * The part of the runtime (lib/runtime/runtime.ts) the HTTP edge calls.
 *
 * The handlers depend on this interface only. Methods are declared with
 * method syntax and pass-through results as `unknown`, so the real runtime
 * object is assignable to it as long as its parameters match; where they do
 * not, the production wiring (./production-runtime.ts) adapts.
 *
 * Every call gets the caller identity the authorizer verified (never anything
 * from the body) and, where the route is tenant-scoped, the tenant the edge
 * selected (see docs/http-api.md, "Tenant selection"). Domain failures are
 * thrown as AipError and become problem responses with the catalogue's status.
 */
import type { CallerIdentity } from '../../lib/auth/identity.js';
import type { HealthReport, OperatorView, SubmitDisposition } from '../../lib/http/schemas.js';
import type { ActionResult, TransactionResult } from '../../packages/connector-sdk/src/protocol/index.js';

export type { CallerIdentity };

export interface SubmitOutcome {
  disposition: SubmitDisposition;
  /** The status the runtime wants for its answer (202 for `accepted`). */
  http_status: number;
  action_id: string;
  tenant_id: string;
  action_result: ActionResult;
  transaction_result?: TransactionResult;
  /** The settled state, when the runtime ran the first attempt in this submit because the client waits (no poll needed). */
  settled?: ActionState;
}

/** What the edge tells the runtime of a client that waits (`Prefer: wait`): lib/runtime/types.ts `WaitingClient`. */
export interface WaitingClient {
  /** How long the client waits from now, ms (already capped by the function's remaining time). */
  wait_ms: number;
  /** The function's remaining time, ms (Lambda's context); undefined: unknown. */
  remaining_ms(): number | undefined;
}

export interface ActionState {
  action_result: ActionResult;
  transaction?: TransactionResult;
}

/** What a wait's poll answers (RuntimeApi.pollAction). */
export interface ActionPoll {
  action_result: ActionResult;
  /** The full state, from the same read: only when the status is one the poll named. */
  state?: ActionState;
}

export interface TransactionSelector {
  tenant_id: string;
  transaction_id?: string;
  plan_id?: string;
  action_id?: string;
}

export interface TransactionInclude {
  result?: boolean;
  receipts?: boolean;
}

export interface OperatorListQuery {
  view: OperatorView;
  /** Absent: every tenant the caller belongs to (the runtime restricts). */
  tenant_id?: string;
  cursor?: string;
  limit?: number;
}

export interface PageRequest {
  cursor?: string;
  limit?: number;
}

export interface ApprovalDecisionRequest {
  decision: 'approve' | 'deny';
  reason?: string;
}

/** One hosted connector's readiness; `detail` is operator-safe. */
export interface RuntimeApi {
  /** Admits an Action or TransactionRequest (the parsed, edge-validated JSON body). */
  /** `opts.waiting`: the client waits for the settlement; the runtime may then run the first attempt here (`settled`). */
  submit(caller: CallerIdentity, body: unknown, opts?: { tenant_id?: string; waiting?: WaitingClient }): Promise<SubmitOutcome>;
  getAction(caller: CallerIdentity, tenant_id: string, action_id: string): Promise<ActionState>;
  /** getAction with the action record's creation and last-update times (the same reads): an MCP task's view. */
  getActionTimed(caller: CallerIdentity, tenant_id: string, action_id: string): Promise<ActionState & { created_at: string; updated_at: string }>;
  /** The action's result alone (one read, same authorization as getAction): what a wait polls before reading the full state once. */
  getActionResult(caller: CallerIdentity, tenant_id: string, action_id: string): Promise<ActionResult>;
  /**
   * One poll of a wait: getActionResult's read and, when the status it read is in `full`, getAction's state built from that
   * same read, so the poll that sees the action settle spares the full read a second read of the action record. Optional: a
   * runtime without it (a test double, an adapter) is polled with getActionResult, then read once with getAction.
   */
  pollAction?(caller: CallerIdentity, tenant_id: string, action_id: string, full: ReadonlySet<ActionResult['status']>): Promise<ActionPoll>;
  cancel(caller: CallerIdentity, tenant_id: string, action_id: string): Promise<unknown>;
  /** Persisted stream chunks with a sequence number greater than `after`. */
  readStream(caller: CallerIdentity, tenant_id: string, action_id: string, after?: number): Promise<unknown>;
  getTransaction(caller: CallerIdentity, selector: TransactionSelector, include?: TransactionInclude): Promise<unknown>;
  listOperator(caller: CallerIdentity, query: OperatorListQuery): Promise<unknown>;
  listApprovals(caller: CallerIdentity, tenant_id: string, page?: PageRequest): Promise<unknown>;
  /** One approval with what it approves. */
  getApproval(caller: CallerIdentity, tenant_id: string, approval_id: string): Promise<unknown>;
  decideApproval(caller: CallerIdentity, tenant_id: string, approval_id: string, decision: ApprovalDecisionRequest): Promise<unknown>;
  /** The capability registry visible to the caller (in the tenant, when one is selected). */
  capabilities(caller: CallerIdentity, tenant_id?: string): Promise<unknown>;
  /** Connector readiness (each hosted connector's health check, bounded in time). */
  health(caller: CallerIdentity): Promise<HealthReport>;
  /** The operator lists at a glance. */
  operatorOverview(caller: CallerIdentity, tenant_id?: string): Promise<unknown>;
  /** Reconcile now: resets the attempt bound once. */
  requestReconcile(caller: CallerIdentity, tenant_id: string, transaction_id: string, input?: { reason?: string }): Promise<unknown>;
  /** An operator's resolution of an escalated transaction. */
  resolve(
    caller: CallerIdentity,
    tenant_id: string,
    transaction_id: string,
    resolution: unknown,
  ): Promise<{ transaction: unknown } | { approval: unknown; status: 'requires_human' }>;
}

/** How handlers get the runtime: an instance, or a (memoised) async factory. */
export type RuntimeProvider = RuntimeApi | (() => RuntimeApi | Promise<RuntimeApi>);

export async function resolveRuntime(provider: RuntimeProvider): Promise<RuntimeApi> {
  return typeof provider === 'function' ? provider() : provider;
}
