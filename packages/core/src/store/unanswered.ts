/**
 * Claims a shared store sent that got no answer (a call past its deadline, a connection lost with
 * the statement on it). The server may have taken one all the same: its lease then holds the event,
 * with nobody to run it, until the lease ends (30 s by default), and every retry of the event meets
 * 409 in_flight meanwhile, a recovery's too. The store gives each back with its own `release`, fenced
 * by the claim's token (a random one only that call knew, so no handler holds it): in the background
 * once the store answers again (pauses from 200 ms, doubling, at most 5 s), and at once when a claim
 * of the same key, or of the same email with ordering, meets in_flight. A claim that was never taken
 * releases nothing. Kept until its lease would have ended, at most MAX_UNANSWERED (the oldest go).
 */
import type { Claim } from './types.js'

/** Claims kept to give back at once (an outage makes one per failed claim). */
const MAX_UNANSWERED = 10_000
const FIRST_PAUSE_MS = 200
const MAX_PAUSE_MS = 5_000

interface Unanswered {
  claim: Claim
  /** performance.now() past which its lease has ended anyway. */
  until: number
}

/** The claims of a store that got no answer, and their give-back. */
export class UnansweredClaims {
  readonly #release: (claim: Claim) => Promise<boolean>
  readonly #given: (count: number) => void
  readonly #pending: Unanswered[] = []
  #timer: ReturnType<typeof setTimeout> | undefined
  #pauseMs = FIRST_PAUSE_MS
  #running: Promise<void> | undefined
  #closed = false

  /**
   * @param release The store's release (fenced by the claim's token).
   * @param given Called after a round that gave back `count` claims the server had taken.
   */
  constructor(release: (claim: Claim) => Promise<boolean>, given: (count: number) => void) {
    this.#release = release
    this.#given = given
  }

  /** A claim sent with `leaseMs` that got no answer: given back once the store answers. */
  add(claim: Claim, leaseMs: number): void {
    if (this.#closed) return
    this.#pending.push({ claim, until: performance.now() + leaseMs })
    if (this.#pending.length > MAX_UNANSWERED) this.#pending.shift()
    this.#pauseMs = FIRST_PAUSE_MS
    this.#schedule()
  }

  /** Unanswered claims of `key` (or, with `orderKey`, of that email) are waiting to be given back. */
  has(key: string, orderKey?: string): boolean {
    return this.#pending.some(({ claim }) => claim.key === key || (orderKey !== undefined && claim.orderKey === orderKey))
  }

  /**
   * Gives back now the unanswered claims of `key` (or of email `orderKey`); true when one had been
   * taken (the caller may claim again). A failure leaves them to the background.
   */
  async giveBack(key: string, orderKey?: string): Promise<boolean> {
    return this.#run(({ claim }) => claim.key === key || (orderKey !== undefined && claim.orderKey === orderKey))
  }

  /** Stops the background give-back (the store closes; what is left lapses with its leases). */
  close(): void {
    this.#closed = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#pending.length = 0
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed || this.#pending.length === 0) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      void this.#run(() => true).then(() => {
        if (this.#pending.length > 0) {
          this.#pauseMs = Math.min(MAX_PAUSE_MS, this.#pauseMs * 2)
          this.#schedule()
        }
      })
    }, this.#pauseMs)
    // A process with nothing else to do need not stay up for it.
    ;(this.#timer as { unref?: () => void }).unref?.()
  }

  /** Releases the pending claims `which` selects, oldest first, until one call fails; true when one had been taken. */
  async #run(which: (entry: Unanswered) => boolean): Promise<boolean> {
    // One round at a time: a give-back at once waits for the background's round, then does its own.
    while (this.#running) await this.#running
    let taken = 0
    const round = (async () => {
      const now = performance.now()
      const remove = (entry: Unanswered) => {
        const at = this.#pending.indexOf(entry)
        if (at >= 0) this.#pending.splice(at, 1)
      }
      for (const entry of [...this.#pending]) {
        if (entry.until <= now) {
          remove(entry)
          continue
        }
        if (!which(entry)) continue
        try {
          if (await this.#release(entry.claim)) taken++
        } catch {
          return
        }
        remove(entry)
      }
    })()
    this.#running = round
    try {
      await round
    } finally {
      this.#running = undefined
    }
    if (taken > 0 && !this.#closed) this.#given(taken)
    return taken > 0
  }
}
