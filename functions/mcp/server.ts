/**
 * The MCP server of one request (docs/mcp.md): ./protocol.ts's `McpServer`
 * with the handlers of this endpoint, bound to the caller the authorizer
 * verified and the tenant the edge selected. Stateless: a new server per
 * HTTP request, nothing kept between requests; the runtime's durable
 * records are the only state (a task is an action).
 *
 * - tools/list: ./tools.ts from the runtime's capability listing (no table read);
 * - tools/call: a capability tool submits the derived action (./idempotency.ts)
 *   through `RuntimeApi.submit`, the function POST /v1/actions calls; a read
 *   tool calls the REST reads' runtime functions;
 * - tasks/get, tasks/result, tasks/cancel: the action's state, its result
 *   (waiting within the request's budget), the runtime's cancel.
 *
 * A task-augmented tools/call gets its task at once. A call without task
 * support waits for the action like `Prefer: wait` (bounded by the request's
 * budget) and then answers its result, or a result that says plainly that
 * the action is pending, with its ID and how to follow it.
 */
import type { CallToolResult, Task } from '@modelcontextprotocol/sdk/types.js';
import { AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { toProblem } from '../../packages/connector-sdk/src/protocol/problem.js';
import { ID_MAX_LENGTH, ID_PATTERN } from '../../packages/connector-sdk/src/protocol/primitives.js';
import { isJsonObject, type JsonObject } from '../../packages/connector-sdk/src/protocol/json.js';
import type { TransactionProtocolStatus } from '../../packages/connector-sdk/src/protocol/index.js';
import type { CapabilityList } from '../../lib/runtime/types.js';
import type { ActionState, CallerIdentity, RuntimeApi } from '../shared/runtime-api.js';
import { actionPoll, pollDelays, pollSchedule, pollUntil, SETTLED_STATUSES, type WaitClock, type WaitPollOptions } from '../shared/wait.js';
import { deriveAction, type ToolCallArguments } from './idempotency.js';
import { ERROR_CODE, McpError, McpServer, method, PARAMS } from './protocol.js';
import { isTerminalTask, readResultOf, taskOf, taskViewOf, toolErrorOf, toolResultOf, type ActionView } from './results.js';
import { READ_TOOLS, toolsFor, type AipTool, type CapabilityTool, type ReadTool } from './tools.js';

export const MCP_SERVER_INFO = { name: 'aip-runtime', version: '0.1.0' } as const;

const INSTRUCTIONS =
  'Every tool call is a governed action of the AIP runtime. A call that does not finish at once (it waits for a human approval, ' +
  'runs longer than the wait, or its outcome is unknown and being reconciled) returns a task whose ID is the action ID: it is ' +
  'NOT completed until tasks/get (or aip.get_action) says so. Calling a tool again with the same arguments returns the same ' +
  'action (a replay), never a second effect; pass a new idempotency_key for a deliberate second effect.';

export interface McpRequestContext {
  readonly runtime: RuntimeApi;
  readonly caller: CallerIdentity;
  readonly tenant_id: string;
  readonly clock: WaitClock;
  /** How long this request may wait for an action, in ms (0: answer at once). */
  readonly waitBudgetMs: number;
  /** The `Prefer: wait` schedule (functions/shared/wait.ts); an MCP wait polls at once, then on it. */
  readonly poll?: WaitPollOptions;
}

/** Keep-alive of a task's result: the runtime keeps action records far longer; MCP clients need no expiry. */
const TASK_TTL: number | null = null;

/** The runtime's refusals of a resubmitted action ID that mean "this same action is still under way". */
const RESUBMISSION_REFUSALS = ['runtime.action_in_flight', 'runtime.attempt_in_flight', 'runtime.reconciliation_required'] as const;

function invalidParams(message: string, data?: Record<string, unknown>): McpError {
  return new McpError(ERROR_CODE.InvalidParams, message, data);
}

/** A typed error as a JSON-RPC error (where the protocol leaves no room for a tool result): its problem in `data`. */
function protocolError(err: unknown): McpError {
  const p = toProblem(err);
  return invalidParams(`${p.code}: ${p.detail}`, { code: p.code, status: p.status, ...(p.details !== undefined ? { details: p.details } : {}) });
}

function isId(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= ID_MAX_LENGTH && ID_PATTERN.test(v);
}

function badArgument(path: string, message: string): AipError {
  return new AipError('request.invalid', message, { details: { location: 'arguments', path } });
}

/** The wrapper arguments of a capability tool (the capability's own input schema is the runtime's to check). */
export function parseToolArguments(tool: CapabilityTool, raw: unknown): ToolCallArguments {
  const args = raw ?? {};
  if (!isJsonObject(args)) throw badArgument('/', 'The arguments must be an object');
  const allowed = new Set([
    'input',
    'idempotency_key',
    ...(tool.mode === 'commit' ? ['plan_id'] : []),
    ...(tool.mode === 'compensate' ? ['compensation_for'] : []),
  ]);
  for (const key of Object.keys(args)) if (!allowed.has(key)) throw badArgument(`/${key}`, `Unknown argument ${JSON.stringify(key)}`);
  if (!isJsonObject(args.input)) throw badArgument('/input', 'input must be an object (the capability’s input)');
  const out: { input: JsonObject; plan_id?: string; compensation_for?: string; idempotency_key?: string } = { input: args.input };
  if (tool.mode === 'commit') {
    if (!isId(args.plan_id)) throw badArgument('/plan_id', 'plan_id must be the plan ID of a .plan result');
    out.plan_id = args.plan_id;
  }
  if (tool.mode === 'compensate') {
    if (!isId(args.compensation_for)) throw badArgument('/compensation_for', 'compensation_for must be the action ID to compensate');
    out.compensation_for = args.compensation_for;
  }
  if (args.idempotency_key !== undefined) {
    const key = args.idempotency_key;
    if (typeof key !== 'string' || key.length === 0 || key.length > 200 || !/^[\x21-\x7e]+$/.test(key))
      throw badArgument('/idempotency_key', 'idempotency_key must be 1-200 printable ASCII characters without spaces');
    out.idempotency_key = key;
  }
  return out;
}

function stringArg(args: JsonObject, name: string): string | undefined {
  const v = args[name];
  if (v === undefined) return undefined;
  if (!isId(v)) throw badArgument(`/${name}`, `${name} must be an ID`);
  return v;
}

/** What initialize answers besides the negotiated version. */
export const MCP_SERVER_OPTIONS = {
  serverInfo: MCP_SERVER_INFO,
  capabilities: { tools: { listChanged: false }, tasks: { cancel: {}, requests: { tools: { call: {} } } } },
  instructions: INSTRUCTIONS,
} as const;

/** The endpoint's methods besides initialize and ping (./protocol.ts has those), bound to one request's caller and tenant. */
export function mcpMethods(ctx: McpRequestContext) {
  const { runtime: rt, caller, tenant_id } = ctx;

  let listed: Promise<AipTool[]> | undefined;
  const tools = () => {
    listed ??= rt.capabilities(caller, tenant_id).then((list) => toolsFor(caller.scopes, list as CapabilityList));
    return listed;
  };

  /** The action's state with its record times; a missing (or foreign) action is the task-not-found error. */
  const readTask = async (action_id: string) => {
    try {
      return await rt.getActionTimed(caller, tenant_id, action_id);
    } catch (err) {
      if (isAipError(err, 'action.not_found')) throw invalidParams(`Task not found: ${action_id}`, { code: 'action.not_found' });
      throw protocolError(err);
    }
  };

  /**
   * A tools/call's wait, as `Prefer: wait` does it: polls the action (one read per poll, ../shared/wait.ts
   * `actionPoll`) until it settles by itself (terminal, or waiting for a person), the poll that sees it settled
   * carrying the full state; when the budget is spent first, reads the full state once.
   */
  const waitSettled = async (action_id: string): Promise<ActionState> => {
    const deadline = ctx.clock.now() + ctx.waitBudgetMs;
    const out = await pollUntil(actionPoll(rt, caller, tenant_id, action_id), (r) => SETTLED_STATUSES.has(r.status), {
      deadline,
      clock: ctx.clock,
      delays: pollDelays(pollSchedule(ctx.poll ?? {}, 0)),
    });
    return out.value.state ?? rt.getAction(caller, tenant_id, action_id);
  };

  /** tasks/result's wait: until the task is terminal (a reconciliation included) or the budget is spent. */
  const waitTerminal = async (action_id: string) => {
    const deadline = ctx.clock.now() + ctx.waitBudgetMs;
    const done = (s: ActionState) => isTerminalTask(taskViewOf(s).status);
    const out = await pollUntil(() => rt.getActionTimed(caller, tenant_id, action_id), done, {
      deadline,
      clock: ctx.clock,
      delays: pollDelays(pollSchedule(ctx.poll ?? {}, 0)),
    });
    return out.value;
  };

  const runRead = async (tool: ReadTool, raw: unknown): Promise<CallToolResult> => {
    try {
      const args = raw ?? {};
      if (!isJsonObject(args)) throw badArgument('/', 'The arguments must be an object');
      switch (tool.name) {
        case READ_TOOLS.getAction: {
          const id = stringArg(args, 'action_id');
          if (id === undefined) throw badArgument('/action_id', 'action_id is required');
          const state = await rt.getAction(caller, tenant_id, id);
          return readResultOf({ ...state, task_status: taskViewOf(state).status });
        }
        case READ_TOOLS.getTransaction: {
          const selector = {
            tenant_id,
            ...(stringArg(args, 'transaction_id') !== undefined ? { transaction_id: stringArg(args, 'transaction_id') } : {}),
            ...(stringArg(args, 'plan_id') !== undefined ? { plan_id: stringArg(args, 'plan_id') } : {}),
            ...(stringArg(args, 'action_id') !== undefined ? { action_id: stringArg(args, 'action_id') } : {}),
          };
          if (args.receipts !== undefined && typeof args.receipts !== 'boolean') throw badArgument('/receipts', 'receipts must be a boolean');
          return readResultOf(await rt.getTransaction(caller, selector, { result: true, receipts: args.receipts === true }));
        }
        case READ_TOOLS.listApprovals: {
          const limit = args.limit;
          if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 100))
            throw badArgument('/limit', 'limit must be an integer from 1 to 100');
          const cursor = args.cursor;
          if (cursor !== undefined && (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 4096))
            throw badArgument('/cursor', 'cursor must be a string');
          return readResultOf(
            await rt.listApprovals(caller, tenant_id, { ...(limit !== undefined ? { limit } : {}), ...(cursor !== undefined ? { cursor } : {}) }),
          );
        }
      }
    } catch (err) {
      return toolErrorOf(err);
    }
  };

  const listTools = method(PARAMS.paginated, async () => {
    try {
      return { tools: (await tools()).map((t) => t.tool) };
    } catch (err) {
      throw protocolError(err);
    }
  });

  const callTool = method(PARAMS.toolCall, async (params): Promise<CallToolResult | { task: Task }> => {
    const { name, arguments: raw, task: taskRequested } = params;
    const tool = (await tools().catch((err: unknown) => Promise.reject(protocolError(err)))).find((t) => t.name === name);
    if (tool === undefined) throw invalidParams(`Unknown tool: ${name}`, { code: 'mcp.unknown_tool' });
    if (tool.kind === 'read') {
      if (taskRequested !== undefined) throw invalidParams(`Tool ${name} does not run as a task`, { code: 'request.invalid' });
      return runRead(tool, raw);
    }
    // Before an action exists, a typed error is a tool error; a task-augmented call has no room for one (the SDK wants a task).
    const fail = (err: unknown) => {
      if (taskRequested !== undefined) throw protocolError(err);
      return toolErrorOf(err);
    };
    let action: ReturnType<typeof deriveAction>;
    try {
      action = deriveAction(caller, tenant_id, tool, parseToolArguments(tool, raw));
    } catch (err) {
      return fail(err);
    }

    let state: ActionView;
    let disposition: string | undefined;
    try {
      const outcome = await rt.submit(caller, action, { tenant_id });
      state = { action_result: outcome.action_result, ...(outcome.transaction_result !== undefined ? { transaction: outcome.transaction_result } : {}) };
      disposition = outcome.disposition;
    } catch (err) {
      // A resubmission of this derived action while it is in flight or its outcome is being reconciled: the same
      // action, followed, never a second one. Its result is one read; the refusal names the transaction and its status.
      if (!RESUBMISSION_REFUSALS.some((code) => isAipError(err, code))) return fail(err);
      const named = (err as AipError).details as { transaction_id?: unknown; status?: unknown } | undefined;
      state = {
        action_result: await rt.getActionResult(caller, tenant_id, action.id),
        ...(typeof named?.transaction_id === 'string' && typeof named.status === 'string'
          ? { transaction: { transaction_id: named.transaction_id, status: named.status as TransactionProtocolStatus } }
          : {}),
      };
      disposition = 'resubmitted';
    }

    if (taskRequested !== undefined) {
      const now = new Date(ctx.clock.now()).toISOString();
      return { task: taskOf(state, { created_at: now, updated_at: now }, TASK_TTL) };
    }
    if (!SETTLED_STATUSES.has(state.action_result.status) && ctx.waitBudgetMs > 0) {
      try {
        state = await waitSettled(action.id);
      } catch {
        // The action WAS admitted: a failed status read must not turn that into an error (its pending answer says how to follow it).
      }
    }
    return toolResultOf(state, { tenant_id, ...(disposition !== undefined ? { disposition } : {}) });
  });

  const getTask = method(PARAMS.task, async (params): Promise<Task> => {
    const s = await readTask(params.taskId);
    return taskOf(s, s, TASK_TTL);
  });

  const getTaskResult = method(PARAMS.task, async (params): Promise<CallToolResult> => {
    const id = params.taskId;
    let s = await readTask(id);
    if (!isTerminalTask(taskViewOf(s).status) && ctx.waitBudgetMs > 0) s = await waitTerminal(id).catch((err: unknown) => Promise.reject(protocolError(err)));
    const view = taskViewOf(s);
    if (!isTerminalTask(view.status)) {
      // A serverless request cannot block until a person decides: say so, and let the client ask again.
      throw new McpError(ERROR_CODE.RequestTimeout, `Task ${id} is still ${view.status} (${view.message}); poll tasks/get and ask for the result again`, {
        taskId: id,
        status: view.status,
      });
    }
    return { ...toolResultOf(s, { tenant_id }), _meta: { 'io.modelcontextprotocol/related-task': { taskId: id } } };
  });

  const cancelTask = method(PARAMS.task, async (params): Promise<Task> => {
    const id = params.taskId;
    const before = await readTask(id);
    if (isTerminalTask(taskViewOf(before).status)) throw invalidParams(`Cannot cancel task in terminal status: ${taskViewOf(before).status}`, { taskId: id });
    try {
      await rt.cancel(caller, tenant_id, id);
    } catch (err) {
      throw protocolError(err);
    }
    const after = await readTask(id);
    return taskOf(after, after, TASK_TTL);
  });

  return { 'tools/list': listTools, 'tools/call': callTool, 'tasks/get': getTask, 'tasks/result': getTaskResult, 'tasks/cancel': cancelTask };
}

export function createMcpServer(ctx: McpRequestContext): McpServer {
  return new McpServer(MCP_SERVER_OPTIONS, mcpMethods(ctx));
}
