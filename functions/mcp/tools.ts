/**
 * MCP tools from the capability registry (docs/mcp.md, "Tools").
 *
 * One tool per (capability, transaction mode) the capability's contract
 * allows a caller to ask for: `<capability_id>.<mode>` (`dry_run`, `plan`,
 * `execute`, `commit`, `compensate`); a capability without a transaction
 * contract is one tool named by its ID (a plain invocation). `reconcile` is
 * the runtime's own action and `rollback_not_supported` a declaration, so
 * neither is a tool. Three fixed tools read state: `aip.get_action`,
 * `aip.get_transaction`, `aip.list_pending_approvals`.
 *
 * Arguments wrap the capability's input (`input`) beside the transaction
 * context the mode needs (`plan_id`, `compensation_for`) and an optional
 * `idempotency_key`. The annotations follow the contract: previews are
 * read-only; an effect is destructive unless the contract says it can be
 * compensated (or needs no compensation); every capability tool is
 * idempotent, because a repeated call with the same arguments is the same
 * action (./idempotency.ts).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { SCOPES } from '../../lib/http/routes.js';
import type { JsonObject, TransactionMode } from '../../packages/connector-sdk/src/protocol/index.js';
import type { CapabilityList, CapabilitySummary } from '../../lib/runtime/types.js';

/** The modes a caller may ask for through MCP, in the order tools are listed. */
export const TOOL_MODES = ['dry_run', 'plan', 'execute', 'commit', 'compensate'] as const satisfies readonly TransactionMode[];
export type ToolMode = (typeof TOOL_MODES)[number];

/** The state-reading tools. */
export const READ_TOOLS = {
  getAction: 'aip.get_action',
  getTransaction: 'aip.get_transaction',
  listApprovals: 'aip.list_pending_approvals',
} as const;

/** A capability tool: what a tools/call of it submits. */
export interface CapabilityTool {
  readonly kind: 'capability';
  readonly name: string;
  readonly capability_id: string;
  /** Undefined: a plain invocation (the capability has no transaction contract). */
  readonly mode: ToolMode | undefined;
  readonly tool: Tool;
}

export interface ReadTool {
  readonly kind: 'read';
  readonly name: (typeof READ_TOOLS)[keyof typeof READ_TOOLS];
  readonly tool: Tool;
}

export type AipTool = CapabilityTool | ReadTool;

const ID_PROPERTY = { type: 'string', minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9._:@/-]+$' } as const;

const IDEMPOTENCY_KEY_PROPERTY = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  pattern: '^[\\x21-\\x7e]+$',
  description:
    'Optional. A repeated call with the same arguments is the same action (a replay, never a second effect). ' +
    'To ask for a second, separate effect with the same input, give a new key.',
} as const;

function modeTitle(mode: ToolMode | undefined): string {
  switch (mode) {
    case 'dry_run':
      return 'dry run (no effect)';
    case 'plan':
      return 'plan (no effect; commit it later)';
    case 'execute':
      return 'execute';
    case 'commit':
      return 'commit a plan';
    case 'compensate':
      return 'compensate an earlier action';
    case undefined:
      return 'invoke';
  }
}

function modeDescription(mode: ToolMode | undefined): string {
  switch (mode) {
    case 'dry_run':
      return 'Validates the input against the capability contract without any effect.';
    case 'plan':
      return 'Plans the action without any effect: the result names a plan_id to commit with the .commit tool.';
    case 'execute':
      return 'Performs the action now through its connector.';
    case 'commit':
      return 'Commits a plan (plan_id from the .plan tool). May wait for a human approval: the call then returns a pending task.';
    case 'compensate':
      return 'Undoes an earlier action (compensation_for: its action ID) with a new governed action. May wait for an approval.';
    case undefined:
      return 'Invokes the capability.';
  }
}

/** The capability whose input a compensating action takes (the compensation capability's, when it is registered). */
function compensationInput(cap: CapabilitySummary, all: ReadonlyMap<string, CapabilitySummary>): JsonObject {
  const id = cap.compensation?.compensation_capability_id;
  const target = id !== undefined ? all.get(id) : undefined;
  return target?.input_schema ?? { type: 'object' };
}

function inputSchemaFor(cap: CapabilitySummary, mode: ToolMode | undefined, all: ReadonlyMap<string, CapabilitySummary>): Tool['inputSchema'] {
  const properties: Record<string, object> = {};
  const required: string[] = [];
  if (mode === 'commit') {
    properties.plan_id = { ...ID_PROPERTY, description: 'The plan to commit (plan_id of the .plan tool’s result).' };
    required.push('plan_id');
  }
  if (mode === 'compensate') {
    properties.compensation_for = { ...ID_PROPERTY, description: 'The action ID of the action to compensate.' };
    required.push('compensation_for');
  }
  properties.input = mode === 'compensate' ? compensationInput(cap, all) : cap.input_schema;
  required.push('input');
  properties.idempotency_key = IDEMPOTENCY_KEY_PROPERTY;
  return { type: 'object', properties, required, additionalProperties: false };
}

/** A compensable effect is not destructive in MCP's sense: the contract offers its undo as a governed action. */
function destructive(cap: CapabilitySummary, mode: ToolMode | undefined): boolean {
  if (mode === 'compensate') return true;
  const m = cap.compensation?.mode;
  return m !== 'supported' && m !== 'not_required';
}

function capabilityTool(cap: CapabilitySummary, mode: ToolMode | undefined, all: ReadonlyMap<string, CapabilitySummary>): CapabilityTool {
  const name = mode === undefined ? cap.id : `${cap.id}.${mode}`;
  const preview = mode === 'dry_run' || mode === 'plan';
  const approval = cap.approval?.required === true || (cap.tenant_approval_policies ?? []).some((p) => p.modes.includes(mode ?? 'none'));
  const description = [
    cap.description ?? `The ${cap.id} capability.`,
    modeDescription(mode),
    ...(approval && !preview ? ['Needs a human approval in this tenant: the call returns a task that waits (input_required) until it is decided.'] : []),
  ].join(' ');
  const tool: Tool = {
    name,
    title: `${cap.id}: ${modeTitle(mode)}`,
    description: description.slice(0, 4096),
    inputSchema: inputSchemaFor(cap, mode, all),
    annotations: {
      title: `${cap.id}: ${modeTitle(mode)}`,
      readOnlyHint: preview,
      destructiveHint: !preview && destructive(cap, mode),
      idempotentHint: true,
      // A preview at schema or policy fidelity never reaches the provider.
      openWorldHint: !preview || cap.transaction?.dry_run_fidelity === 'downstream_validation' || cap.transaction?.dry_run_fidelity === 'full_simulation',
    },
    execution: { taskSupport: 'optional' },
    _meta: {
      'aip/capability_id': cap.id,
      ...(mode !== undefined ? { 'aip/mode': mode } : {}),
      'aip/approval_required': approval && !preview,
      ...(cap.compensation !== undefined ? { 'aip/compensation': cap.compensation.mode } : {}),
    },
  };
  return { kind: 'capability', name, capability_id: cap.id, mode, tool };
}

const READ_TOOL_DEFS: readonly ReadTool[] = [
  {
    kind: 'read',
    name: READ_TOOLS.getAction,
    tool: {
      name: READ_TOOLS.getAction,
      title: 'Get an action',
      description: 'The status and result of one of your actions (the task ID of a pending tool call is its action ID), with its transaction.',
      inputSchema: { type: 'object', properties: { action_id: ID_PROPERTY }, required: ['action_id'], additionalProperties: false },
      annotations: { title: 'Get an action', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
  },
  {
    kind: 'read',
    name: READ_TOOLS.getTransaction,
    tool: {
      name: READ_TOOLS.getTransaction,
      title: 'Get a transaction and its receipts',
      description:
        'A transaction selected by exactly one of transaction_id, plan_id or action_id: its status, provider operation and, with receipts: true, its hash-chained receipts.',
      inputSchema: {
        type: 'object',
        properties: { transaction_id: ID_PROPERTY, plan_id: ID_PROPERTY, action_id: ID_PROPERTY, receipts: { type: 'boolean' } },
        additionalProperties: false,
      },
      annotations: { title: 'Get a transaction', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
  },
  {
    kind: 'read',
    name: READ_TOOLS.listApprovals,
    tool: {
      name: READ_TOOLS.listApprovals,
      title: 'Pending approvals',
      description: 'Pending approvals you may see in this tenant (those requested for your actions; an approver sees all), oldest expiry first.',
      inputSchema: {
        type: 'object',
        properties: { cursor: { type: 'string', minLength: 1, maxLength: 4096 }, limit: { type: 'integer', minimum: 1, maximum: 100 } },
        additionalProperties: false,
      },
      annotations: { title: 'Pending approvals', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
  },
];

/** Whether the caller holds one of these scopes. */
function holds(scopes: readonly string[], anyOf: readonly string[]): boolean {
  return anyOf.some((s) => scopes.includes(s));
}

/**
 * The tools a caller may use: capability tools need the submit route's scope
 * (and the capability's own scopes, which the runtime's capability listing
 * already applied); the reads need what their REST routes need.
 */
export function toolsFor(scopes: readonly string[], capabilities: CapabilityList): AipTool[] {
  const out: AipTool[] = [];
  if (holds(scopes, [SCOPES.actionsWrite])) {
    const all = new Map(capabilities.items.map((c) => [c.id, c]));
    for (const cap of capabilities.items) {
      if (cap.transaction === undefined) {
        out.push(capabilityTool(cap, undefined, all));
        continue;
      }
      for (const mode of TOOL_MODES) if (cap.transaction.modes.includes(mode)) out.push(capabilityTool(cap, mode, all));
    }
  }
  for (const read of READ_TOOL_DEFS) {
    if (read.name === READ_TOOLS.getAction && !holds(scopes, [SCOPES.actionsRead, SCOPES.actionsWrite])) continue;
    if (read.name === READ_TOOLS.getTransaction && !holds(scopes, [SCOPES.actionsRead, SCOPES.actionsWrite, SCOPES.operator])) continue;
    out.push(read);
  }
  return out;
}
