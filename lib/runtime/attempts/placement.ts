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

/**
 * What the remote requests of one attempt were answered (runtime only, written
 * by the proxy): how many requests were sent, and the signed refusal of the
 * first when the host certified it did no work because the connector was at
 * its concurrency limit (`connector.remote_capacity_exhausted`).
 */
export interface RemoteAnswers {
  sent: number;
  capacity_refusal?: { readonly retry_after_ms: number };
}

const answers = new WeakMap<ActionExecutionContext, RemoteAnswers>();

/** Proxy only: counts a request of this attempt about to be sent. */
export function noteRemoteRequest(ctx: ActionExecutionContext): void {
  const a = answers.get(ctx);
  if (a === undefined) answers.set(ctx, { sent: 1 });
  else a.sent += 1;
}

/** Proxy only: the host's verified, signed capacity refusal of this attempt's request. */
export function noteCapacityRefusal(ctx: ActionExecutionContext, retry_after_ms: number): void {
  const a = answers.get(ctx);
  if (a !== undefined) a.capacity_refusal = { retry_after_ms };
}

/**
 * The certified capacity refusal of an attempt: its ONE remote request was
 * refused, signed by the pinned host, for capacity, so the connector was not
 * called. Anything else (no request, several, an answered one) is undefined.
 */
export function certifiedCapacityRefusal(ctx: ActionExecutionContext): { readonly retry_after_ms: number } | undefined {
  const a = answers.get(ctx);
  return a !== undefined && a.sent === 1 ? a.capacity_refusal : undefined;
}
