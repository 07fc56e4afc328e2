/**
 * The governed action runtime: the API the Lambda handlers call.
 *
 * Execution model (docs/runtime.md): `submit` admits an action through the
 * pipeline and enqueues an InvokeMessage (IDs and a fence; a fresh admission's also its images), or, when the
 * client waits, may run that first attempt itself (./pipeline/inline-attempt.ts); the SQS
 * worker's `runAttempt` leases, dispatches and settles; `reconcile` (the
 * reconcile consumer) runs a governed reconcile action as the runtime's own
 * service principal; `sweep` is the safety net.
 *
 * Per-route composition: a Runtime built with {@link ConnectorParts} to load
 * on first need serves the reads (getAction, getActionResult, pollAction, getTransaction,
 * listOperator, readStream, operatorOverview; listApprovals and getApproval,
 * which load the parts only for what they write or show: ./approval-listing.ts) from a kernel without
 * connectors, whose registry and connector host refuse any use, so a read
 * path that starts to need them fails its tests instead of silently loading
 * them. Every other method loads the parts once, with the code of the
 * operations it runs (the submit's, the attempt's, the listing's, or
 * ./operations.ts for the rest), then runs; so does a Runtime built with its
 * connectors, for the code.
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import type { Action, ActionResult, TransactionResult } from '../../packages/connector-sdk/src/protocol/index.js';
import type { ApprovalWithFacts } from './approval-facts.js';
import { getApproval, listApprovals, type ApprovalWriteSide } from './approval-listing.js';
import { withdraw } from './approval-withdrawal.js';
import { validateQueueMessage, type InvokeMessage, type ReconcileMessage } from '../ports/messages.js';
import type { StoredStreamChunk } from '../ports/stream-store.js';
import type { TransactionSelector } from '../ports/transaction-store.js';
import type { ApprovalDecisionInput } from './approvals.js';
import { withAttemptBudget, type AttemptBudget } from './attempt-budget.js';
import type { ConnectorParts, ReadDeps, RuntimeDeps } from './deps.js';
import type { CallerIdentity } from './identity.js';
import { Kernel } from './kernel.js';
import { parseSubmission } from './pipeline/envelope.js';
import { validateAction } from '../../packages/connector-sdk/src/protocol/index.js';
import {
  getAction,
  getActionResult,
  getActionTimed,
  getTransaction,
  listOperator,
  overview,
  pollAction,
  readStream,
  type ActionPoll,
  type OperatorItem,
  type OperatorQuery,
} from './reads.js';
import type {
  AttemptOutcome,
  CapabilityList,
  WaitingClient,
  DecisionOutcome,
  PageOf,
  ReconcileOutcome,
  HealthReport,
  SubmitOutcome,
  SweepOutcome,
} from './types.js';

/**
 * The operations beyond the reads, imported on first need, by what a method
 * runs: a submit the admission pipeline (./pipeline/admit.ts, with the modes),
 * the invoke worker the attempt (./attempts/worker.ts), the capabilities
 * listing and readiness ./meta.ts, every other method ./operations.ts (all of
 * them). A function that serves one of the first three never loads the others'
 * code (docs/bench/analysis.md, "Issue 22: the routes that load the
 * connectors").
 */
const SUBMIT = () => import('./pipeline/admit.js');
const ATTEMPT = () => import('./attempts/worker.js');
const META = () => import('./meta.js');
const OPERATIONS = () => import('./operations.js');

/** What a method beyond the reads runs with: the full kernel and the operations it needs. */
interface Full<M> {
  readonly k: Kernel;
  readonly ops: M;
}

/** A registry or connector host that a read kernel must never touch. */
function notOnReads<T extends object>(part: string): T {
  return new Proxy({} as T, {
    get(_target, property) {
      throw new AipError('internal.unexpected', `the ${part} is not composed for reads (used: ${String(property)})`);
    },
  });
}

export class Runtime {
  /** The kernel of the reads (the full kernel when the Runtime was built with its connectors). */
  readonly #reads: Kernel;
  readonly #kernel: () => Promise<Kernel>;

  /** A Runtime with its connectors, or with the parts that {@link ConnectorParts} loads on the first method that is not a read. */
  constructor(deps: RuntimeDeps);
  constructor(deps: ReadDeps, connectorParts: () => Promise<ConnectorParts>);
  constructor(deps: RuntimeDeps | ReadDeps, connectorParts?: () => Promise<ConnectorParts>) {
    if (connectorParts === undefined) {
      const kernel = new Kernel(deps as RuntimeDeps);
      this.#reads = kernel;
      this.#kernel = async () => kernel;
      return;
    }
    this.#reads = new Kernel({ ...deps, registry: notOnReads('capability registry'), connectors: notOnReads('connector host') });
    // Built once; concurrent first calls share the build; a failed build is not kept (the next call tries again).
    let pending: Promise<Kernel> | undefined;
    this.#kernel = () => {
      if (pending === undefined) {
        const build = connectorParts().then((parts) => new Kernel({ ...deps, ...parts }));
        pending = build;
        build.catch(() => {
          if (pending === build) pending = undefined;
        });
      }
      return pending;
    };
  }

  /** What the approvers' reads need beyond the read kernel, loaded on its first need (./approval-listing.ts). */
  readonly #approvalWrites: ApprovalWriteSide = {
    expire: async (approval) => {
      const { k, ops } = await this.#full(OPERATIONS);
      await ops.expireApproval(k, approval);
    },
    withdraw: async (approval, doom) => withdraw(await this.#kernel(), approval, doom.reason, doom.details, doom.action),
    capability: async (capability_id) => (await this.#kernel()).deps.registry.find(capability_id)?.capability,
  };

  /** The full kernel and the operations module `load` imports, in parallel (each once: the module cache keeps them). */
  async #full<M>(load: () => Promise<M>): Promise<Full<M>> {
    const [k, ops] = await Promise.all([this.#kernel(), load()]);
    return { k, ops };
  }

  /**
   * Admits a native Action or a TransactionRequest. `opts.tenant_id` selects
   * one of the caller's tenants when the action names none. The body never
   * supplies identity: the tenant must be one of the caller's memberships.
   * `opts.waiting`: the client waits for the settlement (the edge's `Prefer: wait`); with `attempt_when_waited:
   * inline` a fresh admission's first attempt may run in this call, and the outcome then carries the settled state
   * (`SubmitOutcome.settled`; ./pipeline/inline-attempt.ts).
   */
  async submit(caller: CallerIdentity, body: unknown, opts: { tenant_id?: string; trusted?: false; waiting?: WaitingClient } = {}): Promise<SubmitOutcome> {
    // 1. core envelope validation; 2. TransactionRequest checks
    const parsed = parseSubmission(caller, body);
    const { k, ops } = await this.#full(SUBMIT);
    const adm = await ops.prepare(k, caller, parsed.action, {
      ...(opts.tenant_id !== undefined ? { tenant_id: opts.tenant_id } : {}),
      ...(parsed.request !== undefined ? { request: parsed.request } : {}),
      ...(opts.waiting !== undefined ? { waiting: opts.waiting } : {}),
    });
    return ops.admit(k, adm);
  }

  /**
   * The only route to claim_direct_commit: a trusted in-process call that
   * bypasses the public envelope's plan_id rule (the rest of the pipeline
   * still applies). Needs requires_plan_before_commit = false.
   */
  async trustedDirectCommit(caller: CallerIdentity, action: Action): Promise<SubmitOutcome> {
    if (action?.transaction?.mode !== 'commit')
      throw new AipError('runtime.mode_unsupported', 'trustedDirectCommit takes a commit action', { details: { mode: action?.transaction?.mode ?? null } });
    const { transaction, ...rest } = action;
    // The core validator's commit rule does not apply on this branch: validate the envelope without it, then restore the context.
    const checked = validateAction({ ...rest, transaction: { ...transaction, mode: 'execute' } });
    const restored: Action = { ...checked, transaction: { ...(checked.transaction as NonNullable<Action['transaction']>), mode: 'commit' } };
    const { k, ops } = await this.#full(SUBMIT);
    const adm = await ops.prepare(k, caller, restored, { trusted_direct_commit: true });
    return ops.admit(k, adm);
  }

  /**
   * The SQS worker: one crash-safe attempt. `retry: true` means "let the
   * message be redelivered". `budget.remaining_ms` (the Lambda's remaining
   * time) caps the connector attempt's deadline, so its timeout path runs
   * before the function is stopped (./attempt-budget.ts).
   */
  async runAttempt(message: InvokeMessage, budget?: AttemptBudget): Promise<AttemptOutcome> {
    const m = validateQueueMessage(message);
    if (m.kind !== 'invoke') throw new AipError('queue.message_invalid', undefined, { details: { reason: 'kind_not_accepted:reconcile' } });
    const { k, ops } = await this.#full(ATTEMPT);
    return withAttemptBudget(budget, () => ops.runAttempt(k, m));
  }

  /**
   * The worker's side of a deferred attempt (`retry: true` with
   * `retry_after_ms`): the received invoke message comes back after that
   * delay instead of the queue's visibility timeout (the invoke queue's
   * `redeliverAfter`; a queue without it leaves the timeout as it is).
   */
  async redeliverInvokeAfter(receiptHandle: string, delayMs: number): Promise<void> {
    await this.#reads.deps.invokeQueue.redeliverAfter?.(receiptHandle, Math.ceil(Math.max(0, delayMs) / 1_000));
  }

  /** The reconcile consumer. `budget` bounds its inline reconcile attempt as in {@link runAttempt}. */
  async reconcile(message: ReconcileMessage, budget?: AttemptBudget): Promise<ReconcileOutcome> {
    const m = validateQueueMessage(message);
    if (m.kind !== 'reconcile') throw new AipError('queue.message_invalid', undefined, { details: { reason: 'kind_not_accepted:invoke' } });
    const { k, ops } = await this.#full(OPERATIONS);
    return withAttemptBudget(budget, () => ops.reconcileMessage(k, m));
  }

  /**
   * The safety net: overdue outcome_unknown records, stalled attempts, expired
   * plans and approvals. Also reports the age of the oldest outcome_unknown
   * record (the sweeper publishes it as a metric).
   */
  async sweep(now?: Date): Promise<SweepOutcome> {
    const { k, ops } = await this.#full(OPERATIONS);
    return ops.sweep(k, now);
  }

  /** The registered capabilities the caller may invoke (with the tenant's approval policies when a tenant is given). */
  async capabilities(caller: CallerIdentity, tenant_id?: string): Promise<CapabilityList> {
    const { k, ops } = await this.#full(META);
    return ops.listCapabilities(k, caller, tenant_id);
  }

  /** Readiness of every hosted connector, each check bounded by config.health_timeout_ms. */
  async health(caller?: CallerIdentity): Promise<HealthReport> {
    const { k, ops } = await this.#full(META);
    return ops.connectorHealth(k, caller);
  }

  async decideApproval(caller: CallerIdentity, tenant_id: string, approval_id: string, decision: ApprovalDecisionInput): Promise<DecisionOutcome> {
    const { k, ops } = await this.#full(OPERATIONS);
    return ops.decideApproval(k, caller, tenant_id, approval_id, decision);
  }

  /**
   * Served from the read kernel: an overdue pending approval is expired on the way and a doomed one withdrawn
   * (terminal writes of their actions), and the facts show stored input as the capability's data contract lets
   * them; those load the connector parts (and, to expire, ./operations.ts) on their first need only
   * (./approval-listing.ts).
   */
  async listApprovals(caller: CallerIdentity, tenant_id: string, page?: { cursor?: string; limit?: number }): Promise<PageOf<ApprovalWithFacts>> {
    return listApprovals(this.#reads, this.#approvalWrites, caller, tenant_id, page);
  }

  /** One approval with what it approves (lib/runtime/approval-facts.ts), as listApprovals serves it. */
  async getApproval(caller: CallerIdentity, tenant_id: string, approval_id: string): Promise<ApprovalWithFacts> {
    return getApproval(this.#reads, this.#approvalWrites, caller, tenant_id, approval_id);
  }

  async getAction(caller: CallerIdentity, tenant_id: string, action_id: string) {
    return getAction(this.#reads, caller, tenant_id, action_id);
  }

  /** getAction with the action record's creation and last-update times (the same reads): an MCP task's view. */
  async getActionTimed(caller: CallerIdentity, tenant_id: string, action_id: string) {
    return getActionTimed(this.#reads, caller, tenant_id, action_id);
  }

  /** The action's result only (one read; same authorization as getAction): what a wait loop polls. */
  async getActionResult(caller: CallerIdentity, tenant_id: string, action_id: string): Promise<ActionResult> {
    return getActionResult(this.#reads, caller, tenant_id, action_id);
  }

  /** One poll of a wait: the result (one read) and, when its status is in `full`, getAction's state from the same read (lib/runtime/reads.ts). */
  async pollAction(caller: CallerIdentity, tenant_id: string, action_id: string, full: ReadonlySet<ActionResult['status']>): Promise<ActionPoll> {
    return pollAction(this.#reads, caller, tenant_id, action_id, full);
  }

  async cancel(caller: CallerIdentity, tenant_id: string, action_id: string) {
    const { k, ops } = await this.#full(OPERATIONS);
    return ops.cancel(k, caller, tenant_id, action_id);
  }

  async getTransaction(caller: CallerIdentity, selector: TransactionSelector, include?: { result?: boolean; receipts?: boolean }): Promise<TransactionResult> {
    return getTransaction(this.#reads, caller, selector, include);
  }

  async listOperator(caller: CallerIdentity, query: OperatorQuery): Promise<PageOf<OperatorItem>> {
    return listOperator(this.#reads, caller, query);
  }

  async readStream(caller: CallerIdentity, tenant_id: string, action_id: string, after?: number): Promise<PageOf<StoredStreamChunk>> {
    return readStream(this.#reads, caller, tenant_id, action_id, after);
  }

  /** The operator lists at a glance: the first page's size and the oldest item's age, per list. */
  async operatorOverview(caller: CallerIdentity, tenant_id?: string) {
    return overview(this.#reads, caller, tenant_id);
  }

  /** Reconcile now (an operator): resets the attempt bound once, with a receipt naming the operator. */
  async requestReconcile(caller: CallerIdentity, tenant_id: string, transaction_id: string, input: { reason?: string } = {}) {
    const { k, ops } = await this.#full(OPERATIONS);
    return ops.requestReconcile(k, caller, tenant_id, transaction_id, input);
  }

  /** An operator's resolution of an escalated transaction (applied, or proposed to a second operator). */
  async resolve(caller: CallerIdentity, tenant_id: string, transaction_id: string, resolution: unknown) {
    const { k, ops } = await this.#full(OPERATIONS);
    return ops.resolve(k, caller, tenant_id, transaction_id, resolution);
  }
}
