/**
 * Port: the current time. Everything that computes deadlines, expiry or
 * "remaining time" takes a Clock so tests can control time without sleeping.
 */
export interface Clock {
  now(): Date;
}

/** The wall clock (reads `Date` at call time, so fake timers apply). */
export const systemClock: Clock = {
  now: () => new Date(),
};

/** A clock that tests move by hand. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date | number = 0) {
    this.#ms = typeof start === 'number' ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(at: Date | number): void {
    this.#ms = typeof at === 'number' ? at : at.getTime();
  }
}

/**
 * The wall clock plus an offset that only grows (until `reset`): the Runtime's
 * clock in the local-stack tests and the benchmark. They move it to a due time
 * or past a lease, expiry or window instead of sleeping.
 */
export class SteppedClock implements Clock {
  #offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.#offsetMs);
  }

  advance(ms: number): void {
    if (ms < 0) throw new RangeError('the clock only moves forward');
    this.#offsetMs += ms;
  }

  /** Moves forward to `at` (no-op when it is already later). */
  advanceTo(at: Date | number): void {
    const ahead = (typeof at === 'number' ? at : at.getTime()) - this.now().getTime();
    if (ahead > 0) this.#offsetMs += ahead;
  }

  /** Back to the wall clock (a test that moved past an expiry hands the stack back as it found it). */
  reset(): void {
    this.#offsetMs = 0;
  }
}
