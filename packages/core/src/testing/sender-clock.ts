/**
 * The faithful sender's clock: the time it stamps on events and signatures, the waits of its
 * backoff, and the delays that reorder first attempts. An email's events get strictly increasing
 * `created_at` times, even when emitted within one millisecond (as the service's own events of an
 * email are ordered), so ordering tests never depend on a tie.
 */

/** Emails remembered before those whose last event time is past are forgotten (a past time can no longer tie). */
const REMEMBERED_EMAILS = 10_000

/** What the clock needs from the sender's options. */
export interface SenderClockOptions {
  now: () => number
  random: () => number
  timeScale: number
  initialBackoffMs: number
  maxBackoffMs: number
  reorderWindowMs: number
}

/** Time as the sender sees it. */
export class SenderClock {
  readonly #options: SenderClockOptions
  /** Email id → the `created_at` (ms) of its newest event. */
  readonly #lastEventAt = new Map<string, number>()
  /** Size at which the next walk forgets past times; doubles when little could be forgotten, so walks stay linear overall. */
  #forgetAt = REMEMBERED_EMAILS

  constructor(options: SenderClockOptions) {
    this.#options = options
  }

  /** The current time in ms (the `now` option). */
  now(): number {
    return this.#options.now()
  }

  /** The `created_at` of a new event of `emailId`: now, or 1 ms after the email's previous event when that is not earlier. */
  eventTime(emailId: unknown): number {
    const now = this.now()
    if (typeof emailId !== 'string') return now
    const previous = this.#lastEventAt.get(emailId)
    const at = previous === undefined ? now : Math.max(now, previous + 1)
    if (this.#lastEventAt.size >= this.#forgetAt) this.#forgetPast(now)
    this.#lastEventAt.set(emailId, at)
    return at
  }

  /** The wait after the n-th failed attempt of a round: `initialBackoffMs × 2ⁿ⁻¹`, at most `maxBackoffMs`, time-scaled. No jitter, as the contract promises none. */
  backoffMs(failedAttempts: number): number {
    const { initialBackoffMs, maxBackoffMs, timeScale } = this.#options
    return Math.min(maxBackoffMs, initialBackoffMs * 2 ** (failedAttempts - 1)) * timeScale
  }

  /** The wait before a first attempt: random in [0, reorderWindowMs) real ms, so that events arrive out of order. */
  firstAttemptDelayMs(): number {
    return Math.floor(this.#options.random() * this.#options.reorderWindowMs)
  }

  #forgetPast(now: number): void {
    for (const [email, at] of this.#lastEventAt) if (at < now) this.#lastEventAt.delete(email)
    this.#forgetAt = Math.max(REMEMBERED_EMAILS, 2 * this.#lastEventAt.size)
  }
}
