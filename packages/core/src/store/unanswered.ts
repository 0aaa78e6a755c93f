/**
 * Claims a shared store sent that got no answer (a call past its deadline, a connection lost with
 * the statement on it). The server may have taken one all the same: its lease then holds the event,
 * with nobody to run it, until the lease ends (30 s by default), and every retry of the event meets
 * 409 in_flight meanwhile, a recovery's too. The store gives each back with its own `release`, fenced
 * by the claim's token (a random one only that call knew, so no handler holds it): in the background
 * once the store answers again (pauses from 200 ms, doubling, at most 5 s), and at once when a claim
 * of the same key, or of the same email with ordering, meets in_flight. A claim that was never taken
 * releases nothing; one whose release found nothing is tried again twice more (it may still be on
 * its way, behind a lock). Kept until its lease would have ended, at most MAX_UNANSWERED (the oldest go).
 */
import { unref } from '../timers.js'
import type { Claim, ClaimResult } from './types.js'

/** Claims kept to give back at once (an outage makes one per failed claim). */
const MAX_UNANSWERED = 10_000
const FIRST_PAUSE_MS = 200
const MAX_PAUSE_MS = 5_000
/** Releases of one claim that find nothing before it is let go (a claim behind a lock may take hold after the first). */
const TRIES = 3
/** How long a give-back is remembered for a claim that met its lease just before it. */
const GIVEN_MEMORY_MS = 60_000
const MAX_GIVEN = 1_000

interface Unanswered {
  claim: Claim
  /** performance.now() past which its lease has ended anyway. */
  until: number
  /** Releases that were answered and found nothing. */
  tries: number
  /** The release under way, shared by whoever asks for it meanwhile. */
  releasing?: Promise<boolean>
}

/** The claims of a store that got no answer, and their give-back. */
export class UnansweredClaims {
  readonly #release: (claim: Claim) => Promise<boolean>
  readonly #given: (claim: Claim) => void
  readonly #pending: Unanswered[] = []
  /** When a claim of a key (or `o:` + an order key) was last given back, having been taken. */
  readonly #gaveBack = new Map<string, number>()
  #timer: ReturnType<typeof setTimeout> | undefined
  #pauseMs = FIRST_PAUSE_MS
  #closed = false

  /**
   * @param release The store's release (fenced by the claim's token).
   * @param given Called for each claim given back that the server had taken.
   */
  constructor(release: (claim: Claim) => Promise<boolean>, given: (claim: Claim) => void) {
    this.#release = release
    this.#given = given
  }

  /**
   * Runs `send`, a claim's statement with `claim`'s token; when it fails in a way `mayHaveRun` says
   * the server may have applied (default: {@link answerLost}), keeps the claim to give back.
   */
  async send<T>(
    claim: { key: string; token: string; orderKey?: string | undefined },
    leaseMs: number,
    send: () => Promise<T>,
    mayHaveRun: (error: unknown) => boolean = answerLost,
  ): Promise<T> {
    try {
      return await send()
    } catch (error) {
      if (mayHaveRun(error)) {
        const { key, token, orderKey } = claim
        this.add(orderKey === undefined ? { key, token, attempt: 0 } : { key, token, attempt: 0, orderKey }, leaseMs)
      }
      throw error
    }
  }

  /** A claim sent with `leaseMs` that got no answer: given back once the store answers. */
  add(claim: Claim, leaseMs: number): void {
    if (this.#closed) return
    this.#pending.push({ claim, until: performance.now() + leaseMs, tries: 0 })
    if (this.#pending.length > MAX_UNANSWERED) this.#pending.shift()
    this.#pauseMs = FIRST_PAUSE_MS
    this.#schedule()
  }

  /**
   * For a claim of `key` (email `orderKey`) that met in_flight, having started at `since`: gives back
   * now the unanswered claims of that key or email (sharing a release already under way), and
   * answers true when one had been taken, now or since `since` (the caller may claim again).
   */
  async giveBack(key: string, orderKey: string | undefined, since: number): Promise<boolean> {
    const recent = (name: string) => (this.#gaveBack.get(name) ?? Number.NEGATIVE_INFINITY) >= since
    let taken = recent(key) || (orderKey !== undefined && recent(`o:${orderKey}`))
    const now = performance.now()
    const mine = this.#pending.filter(
      ({ claim, until }) => until > now && (claim.key === key || (orderKey !== undefined && claim.orderKey === orderKey)),
    )
    for (const entry of mine) {
      try {
        if (await this.#releaseOf(entry)) taken = true
      } catch {
        break
      }
    }
    return taken
  }

  /**
   * Runs `once` (a claim's statements); when it meets in_flight and a claim of this store's that got
   * no answer held the event (or its email, `orderKey`), gives that back and runs `once` again.
   */
  async claim(key: string, orderKey: string | undefined, once: () => Promise<ClaimResult>): Promise<ClaimResult> {
    const started = performance.now()
    const result = await once()
    if (result.status === 'in_flight' && (await this.giveBack(key, orderKey, started))) return once()
    return result
  }

  /** Stops the background give-back (the store closes; what is left lapses with its leases). */
  close(): void {
    this.#closed = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#pending.length = 0
  }

  /** The release of `entry` (the one under way, or a new one); settles its place in the list. */
  #releaseOf(entry: Unanswered): Promise<boolean> {
    entry.releasing ??= this.#release(entry.claim).then(
      (taken) => {
        entry.releasing = undefined
        entry.tries++
        if (taken || entry.tries >= TRIES) this.#drop(entry)
        if (taken) {
          this.#remember(entry.claim)
          if (!this.#closed) this.#given(entry.claim)
        }
        return taken
      },
      (error: unknown) => {
        entry.releasing = undefined
        throw error
      },
    )
    return entry.releasing
  }

  #drop(entry: Unanswered): void {
    const at = this.#pending.indexOf(entry)
    if (at >= 0) this.#pending.splice(at, 1)
  }

  #remember(claim: Claim): void {
    const now = performance.now()
    if (this.#gaveBack.size >= MAX_GIVEN) {
      for (const [name, at] of this.#gaveBack)
        if (now - at > GIVEN_MEMORY_MS || this.#gaveBack.size >= MAX_GIVEN) this.#gaveBack.delete(name)
    }
    this.#gaveBack.set(claim.key, now)
    if (claim.orderKey !== undefined) this.#gaveBack.set(`o:${claim.orderKey}`, now)
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed || this.#pending.length === 0) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      void this.#round().then(() => {
        if (this.#pending.length > 0) {
          this.#pauseMs = Math.min(MAX_PAUSE_MS, this.#pauseMs * 2)
          this.#schedule()
        }
      })
    }, this.#pauseMs)
    // A process with nothing else to do need not stay up for it.
    unref(this.#timer)
  }

  /** One background round: every pending claim, oldest first, until a release fails (the store is not back). */
  async #round(): Promise<void> {
    const now = performance.now()
    for (const entry of [...this.#pending]) {
      if (this.#closed) return
      if (entry.until <= now) {
        this.#drop(entry)
        continue
      }
      try {
        await this.#releaseOf(entry)
      } catch {
        break
      }
    }
  }
}

/** The warning of a store (`prefix`: its package name, `store`: its class) that gave back the claim of `key`. */
export function gaveBackLine(prefix: string, store: string, key: string): string {
  return `${prefix} ${store}: gave back the claim of ${key}, which the server had taken while its answer was lost (a timeout or a dropped connection), so that the event's retries need not wait for its lease (leaseMs) to end.`
}

/**
 * Whether a store call's failure may have left its statement applied: the store's `timeout` (past
 * its deadline) or `connection_failed` (a connection that dropped, perhaps with the statement on
 * it). By name and code, not `instanceof`: this module is bundled into each store's subpath, and
 * importing the class here would bundle a second copy of it.
 */
export function answerLost(error: unknown): boolean {
  const e = error as { name?: unknown; code?: unknown } | null
  return e?.name === 'DedupStoreError' && (e.code === 'timeout' || e.code === 'connection_failed')
}
