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
