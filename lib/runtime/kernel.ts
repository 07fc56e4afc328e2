/**
 * The kernel: dependencies, configuration and the small helpers every
 * runtime module shares.
 */
import { type AipError, isAipError } from '../../packages/connector-sdk/src/errors/aip-error.js';
import { toProtocolError } from '../../packages/connector-sdk/src/protocol/problem.js';
import { sha256Hex, type Action, type ActionResult, type JsonObject, type ProtocolError } from '../../packages/connector-sdk/src/protocol/index.js';
import type { Clock } from '../../packages/connector-sdk/src/ports/clock.js';
import type { InvokeMessage } from '../ports/messages.js';
import type { QueueSendOptions } from '../ports/queue.js';
import { commitOne, type CommitOutcome, type WriteIntent, type WrittenOf } from '../ports/unit-of-work.js';
import { Authority, authorityPolicy } from './authority.js';
import type { RuntimeSettings } from './config.js';
import { installCrashPoints, type CrashPointName, type CrashPoints } from './crash-points.js';
import { SILENT_LOGGER, defaultIds, type RuntimeDeps, type RuntimeLogger } from './deps.js';
import { TransactionJournal } from './journal.js';
import { retentionDays } from './retention.js';

export class Kernel {
  readonly deps: RuntimeDeps;
  readonly config: RuntimeSettings;
  readonly clock: Clock;
  readonly ids: () => string;
  readonly log: RuntimeLogger;
  readonly journal: TransactionJournal;
  /** The one authority rule (lib/runtime/authority.ts). */
  readonly authority: Authority;
  readonly #crash: CrashPoints;

  constructor(deps: RuntimeDeps) {
    this.deps = deps;
    this.config = deps.config;
    this.clock = deps.clock;
    this.ids = deps.ids ?? defaultIds;
    this.log = deps.logger ?? SILENT_LOGGER;
    this.journal = new TransactionJournal(deps.clock, deps.config.service_principal, (capability_id) => retentionDays(deps, capability_id));
    this.authority = new Authority(authorityPolicy(deps.config));
    this.#crash = installCrashPoints(deps.crashPoints, deps.config.test_mode === true);
  }

  now(): Date {
    return this.clock.now();
  }

  iso(): string {
    return this.clock.now().toISOString();
  }

  /** Test crash point (a no-op unless a hook was installed in test mode). */
  crash(name: CrashPointName): void {
    this.#crash.hit(name);
  }

  /** Commits the intents of one step: all written, or refused with every refusing intent named (lib/ports/unit-of-work.ts). */
  async commit<const I extends readonly WriteIntent[]>(intents: I): Promise<CommitOutcome<I>> {
    const out = await this.deps.uow.commit(intents);
    if (out.committed) this.#crash.afterCommit?.(intents.map((i) => i.kind));
    return out;
  }

  /** Commits one intent: what it wrote, or its refusal's typed error thrown. */
  async write<I extends WriteIntent>(intent: I): Promise<NonNullable<WrittenOf<I>>> {
    const written = await commitOne(this.deps.uow, intent);
    this.#crash.afterCommit?.([intent.kind]);
    return written;
  }

  async enqueueInvoke(message: InvokeMessage, options?: QueueSendOptions): Promise<void> {
    await (options !== undefined ? this.deps.invokeQueue.send(message, options) : this.deps.invokeQueue.send(message));
  }
}

/** The transaction ID the runtime generates when a mode needs one and the action has none (deterministic per action). */
export function deriveTransactionId(tenant_id: string, action_id: string): string {
  return `txn-${sha256Hex(JSON.stringify([tenant_id, action_id])).slice(0, 40)}`;
}

/** The approval ID of an action's approval (deterministic, so a resubmission finds it). */
export function deriveApprovalId(tenant_id: string, action_id: string): string {
  return `apr-${sha256Hex(JSON.stringify(['approval', tenant_id, action_id])).slice(0, 40)}`;
}

/** A failed ActionResult for an AipError. */
export function failedResult(action_id: string, err: AipError, at: Date, extras: Partial<ProtocolError> = {}): ActionResult {
  return { action_id, status: 'failed', error: { ...toProtocolError(err), ...extras }, completed_at: at.toISOString() };
}

/** Errors that are worth a resubmission: nothing durable decided the outcome. */
export function isTransientError(err: unknown): boolean {
  if (!isAipError(err)) return true;
  return (
    err.code === 'transaction.store_unavailable' ||
    err.code === 'runtime.crash_injected' ||
    err.code === 'internal.unexpected' ||
    err.code === 'queue.send_failed'
  );
}

/** Marks a stored result as replayed (no connector invocation). */
export function replayed(result: ActionResult, metadata?: JsonObject): ActionResult {
  return { ...result, replayed: true, ...(metadata !== undefined ? { metadata: { ...(result.metadata ?? {}), ...metadata } } : {}) };
}

/** The action with the given transaction ID filled in. */
export function withTransactionId(action: Action, transaction_id: string): Action {
  const tx = action.transaction;
  if (tx === undefined || tx.transaction_id === transaction_id) return action;
  return { ...action, transaction: { ...tx, transaction_id } };
}
