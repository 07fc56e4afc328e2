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
  'during_settlement',
  'during_schedule_creation',
] as const;
export type CrashPointName = (typeof CRASH_POINTS)[number];

export interface CrashPoints {
  /** Called at each named point; throwing simulates a crash there. */
  hit(name: CrashPointName): void;
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
  arm(...names: CrashPointName[]): this {
    for (const n of names) this.#armed.add(n);
    return this;
  }
  disarm(): void {
    this.#armed.clear();
  }
  hit(name: CrashPointName): void {
    if (this.#armed.delete(name)) {
      this.fired.push(name);
      throw crashError(name);
    }
  }
}
