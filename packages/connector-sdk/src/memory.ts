/**
 * Runtime memory context: attempt-scoped facts the runtime hands to a
 * connector beside the action, e.g. for an alternate compensation capability
 * the original result and the compensation coordinates.
 *
 * It is bound to the attempt's ActionExecutionContext (a WeakMap key), so it
 * is as non-serializable and attempt-scoped as the context itself, and it
 * never appears in the public action payload.
 */
import type { ActionExecutionContext } from './context.js';
import type { ActionResult, JsonObject } from './protocol/index.js';

export interface CompensationMemory {
  /** The action being compensated (compensation_for). */
  readonly original_action_id: string;
  /** Its transaction, when it had a record. */
  readonly original_transaction_id?: string;
  /** The original terminal result (completed, or the partial-side-effect failure). */
  readonly original_result?: ActionResult;
  /** The capability the public compensate action named. */
  readonly requested_capability_id: string;
  /** The capability the connector-facing action was rewritten to. */
  readonly compensation_capability_id: string;
  /** The governed compensation request (public action ID). */
  readonly compensation_action_id: string;
}

export interface RuntimeMemory {
  readonly compensation?: CompensationMemory;
  readonly extra?: JsonObject;
}

const memories = new WeakMap<ActionExecutionContext, RuntimeMemory>();

/** Runtime use: attach memory to an attempt's context. */
export function bindRuntimeMemory(ctx: ActionExecutionContext, memory: RuntimeMemory): void {
  memories.set(ctx, Object.freeze({ ...memory }));
}

/** Connector use: the runtime memory of this attempt (undefined when the runtime supplied none). */
export function runtimeMemory(ctx: ActionExecutionContext): RuntimeMemory | undefined {
  return memories.get(ctx);
}
