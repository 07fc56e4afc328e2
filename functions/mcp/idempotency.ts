/**
 * The action a tools/call submits, and why a retried call is a replay
 * (docs/mcp.md, "Idempotency").
 *
 * The action ID and the idempotency key are derived from what the call
 * means, never from the JSON-RPC message ID (clients restart their ID
 * counters on every connection, and a retry is a new message):
 *
 *   digest = sha256(JCS({ v, tenant, issuer, principal, tool, capability, mode,
 *                         input, plan_id, compensation_for, key }))
 *   action_id        = `mcp-` + first 32 hex digits of digest
 *   idempotency_key  = `mcp:` + digest           (effectful modes only)
 *
 * The same caller calling the same tool with the same arguments in the same
 * tenant gets the same action: the runtime answers a resubmission of an
 * action ID with its stored state (a replay of the result, the pending
 * approval, or the transaction still being reconciled), so a retry never
 * makes a second effect. A caller that wants a second, separate effect with
 * the same input passes a new `idempotency_key` argument. Two principals or
 * two tenants never share an action: both are part of the digest.
 */
import { sha256Hex } from '../../packages/connector-sdk/src/protocol/canonical.js';
import { canonicalJson } from '../../packages/connector-sdk/src/protocol/jcs.js';
import type { Action, JsonObject } from '../../packages/connector-sdk/src/protocol/index.js';
import type { CallerIdentity } from '../shared/runtime-api.js';
import type { CapabilityTool } from './tools.js';

/** Version of the derivation: changing what is hashed changes it, so old and new IDs never collide. */
const DERIVATION_VERSION = 1;

export interface ToolCallArguments {
  readonly input: JsonObject;
  readonly plan_id?: string;
  readonly compensation_for?: string;
  readonly idempotency_key?: string;
}

export function deriveAction(caller: CallerIdentity, tenant_id: string, tool: CapabilityTool, args: ToolCallArguments): Action {
  const digest = sha256Hex(
    canonicalJson({
      v: DERIVATION_VERSION,
      tenant: tenant_id,
      issuer: caller.issuer ?? null,
      principal: caller.principal.id,
      tool: tool.name,
      capability: tool.capability_id,
      mode: tool.mode ?? null,
      input: args.input,
      plan_id: args.plan_id ?? null,
      compensation_for: args.compensation_for ?? null,
      key: args.idempotency_key ?? null,
    }),
  );
  const preview = tool.mode === 'dry_run' || tool.mode === 'plan';
  const transaction: Action['transaction'] =
    tool.mode === undefined
      ? undefined
      : {
          mode: tool.mode,
          ...(args.plan_id !== undefined ? { plan_id: args.plan_id } : {}),
          ...(args.compensation_for !== undefined ? { compensation_for: args.compensation_for } : {}),
        };
  return {
    id: `mcp-${digest.slice(0, 32)}`,
    capability_id: tool.capability_id,
    input: args.input,
    ...(preview ? {} : { idempotency_key: `mcp:${digest}` }),
    ...(transaction !== undefined ? { transaction } : {}),
  };
}
