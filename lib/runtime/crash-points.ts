/**
 * Test-only crash injection. A CrashPoints object is consulted at named
 * points of an attempt; `hit(name)` may throw to simulate the process dying
 * there. The runtime refuses the hook unless `config.test_mode` is true, and
 * the production configuration schema forbids test mode, so it cannot be
 * enabled in production.
 */
import { AipError } from '../../packages/connector-sdk/src/errors/aip-error.js';

export const CRASH_POINTS = [
  'after_admission_before_enqueue',
  'after_receive_before_lease',
  'after_lease_before_provider_call',
  'after_provider_accept_before_checkpoint',
  'after_checkpoint_before_response',
  'after_response_before_settlement',
  'after_action_settled_before_record',
  'during_settlement',
  'during_schedule_creation',
] as const;
export type CrashPointName = (typeof CRASH_POINTS)[number];

export interface CrashPoints {
  /** Called at each named point; throwing simulates a crash there. */
  hit(name: CrashPointName): void;
  /**
   * Called after every unit of work the runtime commits (lib/ports/unit-of-work.ts), with the kinds of its
   * intents; throwing simulates the process dying between two units of work.
   */
  afterCommit?(kinds: readonly string[]): void;
}

/** The hook used when none is installed. */
export const NO_CRASH_POINTS: CrashPoints = Object.freeze({ hit: () => undefined });

/** Validates that the hook may be installed. */
export function installCrashPoints(hook: CrashPoints | undefined, testMode: boolean): CrashPoints {
  if (hook === undefined) return NO_CRASH_POINTS;
  if (!testMode) {
    throw new AipError('runtime.config_invalid', 'crash points can only be installed in test mode', { details: { field: 'crashPoints' } });
  }
  return hook;
}

/** An error thrown by a test crash point (never by production code). */
export function crashError(name: CrashPointName): AipError {
  return new AipError('runtime.crash_injected', `crash point ${name}`, { details: { crash_point: name } });
}

/** A simple armed hook for tests: crashes once at `name` (or at each listed point once). */
export class ArmedCrashPoints implements CrashPoints {
  readonly #armed = new Set<CrashPointName>();
  readonly fired: CrashPointName[] = [];
  /** The intent kinds of every unit of work committed since the last `countCommits()`. */
  readonly commits: (readonly string[])[] = [];
  #crashAtCommit = 0;

  /** Starts counting commits afresh. */
  countCommits(): this {
    this.commits.length = 0;
    this.#crashAtCommit = 0;
    return this;
  }

  /** Crashes right after the `n`th unit of work committed from now (1 = the next one). */
  armAfterCommit(n: number): this {
    this.countCommits();
    this.#crashAtCommit = n;
    return this;
  }

  afterCommit(kinds: readonly string[]): void {
    this.commits.push(kinds);
    if (this.#crashAtCommit === this.commits.length) {
      this.#crashAtCommit = 0;
      throw new AipError('runtime.crash_injected', `crash after commit ${this.commits.length} (${kinds.join(', ')})`, {
        details: { crash_point: 'after_commit', commit: this.commits.length },
      });
    }
  }

  arm(...names: CrashPointName[]): this {
    for (const n of names) this.#armed.add(n);
    return this;
  }
  disarm(): void {
    this.#armed.clear();
    this.#crashAtCommit = 0;
  }
  hit(name: CrashPointName): void {
    if (this.#armed.delete(name)) {
      this.fired.push(name);
      throw crashError(name);
    }
  }
}
