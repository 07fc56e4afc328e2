/**
 * The placement facts of one attempt, bound to its execution context by the
 * runtime (lib/runtime/attempts/invoke.ts) and read by the remote proxy
 * (./proxy.ts): the action-scoped route assignment the attempt resolved and
 * the lease it holds. Attempt-scoped and non-serializable like the context
 * itself (a WeakMap keyed by the context, as lib/runtime/memory.ts does).
 */
import type { ActionExecutionContext } from '../../../packages/connector-sdk/src/context.js';
import type { RouteAssignment } from '../../ports/route-store.js';

export interface AttemptLease {
  readonly attempt_id: string;
  /** The action fence this attempt holds. */
  readonly fence: number;
  readonly expires_at: Date;
}

export interface AttemptPlacement {
  /** The immutable route assignment of the action ID, as stored. */
  readonly route: RouteAssignment;
  readonly lease: AttemptLease;
}

const placements = new WeakMap<ActionExecutionContext, AttemptPlacement>();

/** Runtime only: binds the attempt's route and lease to its context (once). */
export function bindAttemptPlacement(ctx: ActionExecutionContext, placement: AttemptPlacement): void {
  if (placements.has(ctx)) return;
  placements.set(
    ctx,
    Object.freeze({
      route: Object.freeze({ ...placement.route }),
      lease: Object.freeze({ ...placement.lease, expires_at: new Date(placement.lease.expires_at.getTime()) }),
    }),
  );
}

/** The attempt's placement facts, when the runtime bound them. */
export function attemptPlacement(ctx: ActionExecutionContext): AttemptPlacement | undefined {
  return placements.get(ctx);
}
