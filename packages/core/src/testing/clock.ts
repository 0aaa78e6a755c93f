/** A clock that moves only when told to, for the timestamp window and store expiry. */

/** A controllable clock; pass `clock.now` wherever an option takes `now`. */
export interface TestClock {
  /** Current time in milliseconds since the epoch (bound: safe to pass as a callback). */
  readonly now: () => number
  /** Current time in whole seconds, as the `webhook-timestamp` header carries it. */
  nowSeconds(): number
  /** Moves the clock forward (or back, with a negative number) by `ms`. */
  advance(ms: number): void
  /** Sets the clock to `ms` since the epoch. */
  set(ms: number): void
}

/**
 * Creates a controllable clock.
 * @param startMs Initial time in milliseconds; default `Date.now()`.
 * @example
 * const clock = createTestClock()
 * const receiver = createReceiver({ secret, handlers, now: clock.now })
 * clock.advance(301_000) // the next delivery signed earlier is now stale
 */
export function createTestClock(startMs: number = Date.now()): TestClock {
  let current = startMs
  return {
    now: () => current,
    nowSeconds: () => Math.floor(current / 1000),
    advance(ms: number) {
      current += ms
    },
    set(ms: number) {
      current = ms
    },
  }
}
