/**
 * What an MCP client sees of an action (docs/mcp.md, "Status mapping"):
 * the task status of its state, and its tool result.
 *
 * | action / transaction                                   | task             |
 * |--------------------------------------------------------|------------------|
 * | accepted, running                                      | working          |
 * | requires_human, waiting for an approval                | input_required   |
 * | failed with an uncertain outcome; the transaction is   | working          |
 * |   outcome_unknown or reconciling                       |                  |
 * | the same, escalated (transaction requires_human)       | input_required   |
 * | the same, reconciled                                   | completed        |
 * | completed                                              | completed        |
 * | failed (a definite failure)                            | failed           |
 * | cancelled                                              | cancelled        |
 *
 * Results carry `structuredContent` (the action's status and output or
 * error, the task status, the transaction's status and receipt head) and a
 * text summary. Everything comes from the runtime's own views (the same the
 * REST reads return, already redacted); errors are reduced to their problem
 * fields (code, title, detail, category, retryable, details).
 */
import type { CallToolResult, Task } from '@modelcontextprotocol/sdk/types.js';
import { toProblem } from '../../packages/connector-sdk/src/protocol/problem.js';
import type { ActionResult, TransactionResult } from '../../packages/connector-sdk/src/protocol/index.js';

/**
 * An action as the mapping needs it: its result and, when known, its
 * transaction (the full view after a read; its ID and status alone when a
 * refused resubmission named them).
 */
export interface ActionView {
  readonly action_result: ActionResult;
  readonly transaction?: Pick<TransactionResult, 'transaction_id' | 'status'> & Partial<TransactionResult>;
}

export type TaskStatus = Task['status'];

/** How long a client should wait between tasks/get polls, in ms. */
export const TASK_POLL_INTERVAL_MS = 1_000;

/** Transaction statuses of an uncertain outcome still being worked out. */
const RECONCILING: ReadonlySet<string> = new Set(['outcome_unknown', 'reconciling']);

export interface TaskView {
  readonly status: TaskStatus;
  readonly message: string;
}

export function taskViewOf(state: ActionView): TaskView {
  const r = state.action_result;
  const txn = state.transaction?.status;
  switch (r.status) {
    case 'accepted':
      return { status: 'working', message: 'accepted: queued for its connector' };
    case 'running':
      return { status: 'working', message: 'running' };
    case 'requires_human': {
      const approval = approvalIdOf(r);
      return {
        status: 'input_required',
        message:
          approval !== undefined
            ? `requires_human: waiting for approval ${approval} (an approver decides it with POST /v1/approvals/${approval}/decision)`
            : 'requires_human: waiting for a human decision',
      };
    }
    case 'completed':
      return { status: 'completed', message: r.replayed === true ? 'completed (replayed: an identical earlier call)' : 'completed' };
    case 'cancelled':
      return { status: 'cancelled', message: 'cancelled' };
    case 'failed':
      if (r.error?.uncertain_outcome === true || (txn !== undefined && (RECONCILING.has(txn) || txn === 'reconciled'))) {
        if (txn !== undefined && RECONCILING.has(txn))
          return { status: 'working', message: `${txn}: the provider's answer was lost; the runtime reconciles with the provider (no blind retry)` };
        if (txn === 'requires_human')
          return { status: 'input_required', message: 'requires_human: reconciliation was escalated to an operator, who resolves it with evidence' };
        if (txn === 'reconciled')
          return { status: 'completed', message: 'reconciled: the outcome was established from the provider after the answer was lost' };
      }
      return { status: 'failed', message: `failed: ${r.error?.code ?? 'unknown error'}` };
  }
}

function approvalIdOf(r: ActionResult): string | undefined {
  const id = (r.metadata as { approval_id?: unknown } | undefined)?.approval_id;
  return typeof id === 'string' ? id : undefined;
}

export function isTerminalTask(status: TaskStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/** The task of an action. `createdAt`/`lastUpdatedAt` are the action record's when known. */
export function taskOf(state: ActionView, times: { created_at: string; updated_at: string }, ttlMs: number | null): Task {
  const view = taskViewOf(state);
  return {
    taskId: state.action_result.action_id,
    status: view.status,
    statusMessage: view.message,
    createdAt: times.created_at,
    lastUpdatedAt: times.updated_at,
    ttl: ttlMs,
    pollInterval: TASK_POLL_INTERVAL_MS,
  };
}

function transactionSummary(t: NonNullable<ActionView['transaction']>): Record<string, unknown> {
  return {
    transaction_id: t.transaction_id,
    status: t.status,
    ...(t.plan_id !== undefined ? { plan_id: t.plan_id } : {}),
    ...(t.provider_operation !== undefined ? { provider_operation: t.provider_operation } : {}),
    ...(t.earliest_reconcile_at !== undefined ? { earliest_reconcile_at: t.earliest_reconcile_at } : {}),
    ...(t.receipt_count !== undefined ? { receipt_count: t.receipt_count } : {}),
    ...(t.receipt_head !== undefined ? { receipt_head: t.receipt_head } : {}),
  };
}

/** How to follow an action that is not finished. */
function followUp(action_id: string): Record<string, unknown> {
  return {
    task_id: action_id,
    tool: 'aip.get_action',
    arguments: { action_id },
    rest: `/v1/actions/${encodeURIComponent(action_id)}?wait=20`,
  };
}

/** The tool result of an action's state (terminal or not). */
export function toolResultOf(state: ActionView, extra: { disposition?: string; tenant_id: string }): CallToolResult {
  const r = state.action_result;
  const view = taskViewOf(state);
  const pending = !isTerminalTask(view.status);
  const structured: Record<string, unknown> = {
    action_id: r.action_id,
    tenant_id: extra.tenant_id,
    status: r.status,
    task_status: view.status,
    ...(extra.disposition !== undefined ? { disposition: extra.disposition } : {}),
    ...(r.replayed === true ? { replayed: true } : {}),
    ...(r.output !== undefined ? { output: r.output } : {}),
    ...(r.error !== undefined ? { error: r.error } : {}),
    ...(approvalIdOf(r) !== undefined ? { approval_id: approvalIdOf(r) } : {}),
    ...(state.transaction !== undefined ? { transaction: transactionSummary(state.transaction) } : {}),
    ...(pending ? { pending: true, follow: followUp(r.action_id) } : {}),
  };
  const lines = pending
    ? [
        `PENDING, NOT COMPLETED: action ${r.action_id} is ${view.message}.`,
        `Follow it with tasks/get (task ${r.action_id}) or the aip.get_action tool {"action_id":"${r.action_id}"}; calling this tool again with the same arguments returns this same action, never a second effect.`,
      ]
    : view.status === 'completed'
      ? [`Action ${r.action_id}: ${view.message}.`]
      : [`Action ${r.action_id}: ${view.message}.${r.error !== undefined ? ` ${r.error.code}: ${r.error.message}` : ''}`];
  return {
    content: [{ type: 'text', text: `${lines.join('\n')}\n${JSON.stringify(structured)}` }],
    structuredContent: structured,
    ...(view.status === 'failed' || view.status === 'cancelled' ? { isError: true } : {}),
  };
}

/** A typed error (AipError or anything else) as a tool error: its stable code and a readable message, as a problem says them. */
export function toolErrorOf(err: unknown): CallToolResult {
  const p = toProblem(err);
  const error = {
    code: p.code,
    title: p.title,
    message: p.detail,
    category: p.category,
    retryable: p.retryable,
    ...(p.retry_after_ms !== undefined ? { retry_after_ms: p.retry_after_ms } : {}),
    ...(p.details !== undefined ? { details: p.details } : {}),
  };
  return {
    content: [{ type: 'text', text: `${p.code}: ${p.detail}${p.details !== undefined ? ` ${JSON.stringify(p.details)}` : ''}` }],
    structuredContent: { error },
    isError: true,
  };
}

/** A read tool's answer. */
export function readResultOf(value: unknown): CallToolResult {
  const structured = (typeof value === 'object' && value !== null && !Array.isArray(value) ? value : { value }) as Record<string, unknown>;
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}
