/**
 * Events whose handler succeeded but whose `complete` failed (the store down, the disk full, a
 * store past `storeTimeoutMs`). Such an event is never released: the answer is 503, and its
 * complete is tried again in the background, with backoff (50 ms doubling to 2 s), until it lands,
 * until the store refuses it (the lease ended and another request took the event over), or for at
 * most `RECORD_TRIES_MS`. Meanwhile the sender's retries meet the live lease (409 `in_flight`, and
 * each such retry makes the next try start at once); once the complete lands they are duplicates.
 * A retry that acquires the event here after its lease ended (the store came back late) is
 * recorded with its own claim, without running the handler again. So a second run needs the store
 * to stay down past the lease AND the retry to reach another instance (or this process to restart).
 */
import type { WebhookEvent } from '../events.js'
import type { Claim, CompleteOptions, DedupStore } from '../store/types.js'
import { unref, withTimeout } from '../timers.js'
import { attempt } from './deadline.js'
import type { Reporter } from './report.js'

/** How long the complete of one event is tried again before the receiver gives up on it (then logged). */
export const RECORD_TRIES_MS: number = 60 * 60 * 1000
/** Events kept at most; past it, the oldest is given up (logged). */
const MAX_PENDING = 10_000
const FIRST_PAUSE_MS = 50
const MAX_PAUSE_MS = 2_000

/** What the recorder needs of one receiver. */
export interface RecorderHost {
  store: DedupStore
  reporter: Reporter
  /** The longest wait for one complete. */
  storeTimeoutMs: number
  /** How long a claim holds: within it, a key found done was done by this claim. */
  leaseMs: number
}

/** Leave this much of the lease unused before trusting that no one else could have taken the key over. */
const LEASE_MARGIN_MS = 1_000

/**
 * Whether a complete the store answered `false` was in fact recorded by this same claim: an
 * earlier try landed and its answer was lost (a dropped or timed-out connection), or the driver
 * sent the command again after reconnecting and the resend found the key done. A store with
 * `completedBy` tells while the record lasts. Otherwise `lookup` can: within the claim's own lease no one else
 * can have taken the key over, so a key that is done then was done by this claim; past the lease
 * it can no longer be told (false).
 * @param claimedAt When the claim was sent (performance.now()): the lease started at or after it.
 * @returns true: recorded by this claim; false: not, or no longer known; undefined: the store did
 * not answer in time, so nothing is known yet (ask again).
 */
export async function recordedByThisClaim(
  host: RecorderHost,
  claim: Claim,
  claimedAt: number,
  retentionMs: number,
): Promise<boolean | undefined> {
  const { store, leaseMs, storeTimeoutMs } = host
  const within = <T>(call: () => Promise<T>) => withTimeout(attempt(call), storeTimeoutMs).catch(() => undefined)
  // Past the record's retention (or the hour a lapsed lease is remembered) the key may have been
  // claimed afresh, its claims numbered from 1 again: the answer would no longer be this claim's.
  if (store.completedBy !== undefined && performance.now() - claimedAt < Math.min(retentionMs, RECORD_TRIES_MS)) {
    const completedBy = store.completedBy.bind(store)
    return within(() => completedBy(claim))
  }
  const inLease = () => performance.now() - claimedAt < leaseMs - LEASE_MARGIN_MS
  if (store.lookup === undefined || !inLease()) return false
  const lookup = store.lookup.bind(store)
  const state = await within(() => lookup(claim.key))
  if (!inLease()) return false
  return state === undefined ? undefined : state === 'done'
}

interface Pending {
  claim: Claim
  options: CompleteOptions
  event: WebhookEvent | undefined
  /** Ends the current pause so that the next try starts at once. */
  wake: (() => void) | undefined
  /** Set when the key was recorded another way (a retry acquired it here): the loop stops. */
  stopped: boolean
  /** Frees what the claim holds in this process (its email, with ordering on) once settled. */
  settle: (() => void) | undefined
  /** When the claim was sent (performance.now()). */
  claimedAt: number
}

/** The events of one receiver whose complete is being tried again in the background. */
export class Recorder {
  readonly #pending = new Map<string, Pending>()
  readonly #host: RecorderHost

  constructor(host: RecorderHost) {
    this.#host = host
  }

  /** Events whose complete has not landed yet. */
  get size(): number {
    return this.#pending.size
  }

  /**
   * Keeps trying to complete `claim` after a failed or timed-out complete (`first`, still running
   * when it timed out). `settle` runs once the loop ends, whatever the end.
   */
  start(
    claim: Claim,
    options: CompleteOptions,
    event: WebhookEvent | undefined,
    first: Promise<boolean>,
    settle: (() => void) | undefined,
    claimedAt: number,
  ): void {
    if (this.#pending.size >= MAX_PENDING) this.#giveUpOldest()
    const pending: Pending = { claim, options, event, wake: undefined, stopped: false, settle, claimedAt }
    this.#pending.set(claim.key, pending)
    void this.#run(pending, first)
  }

  /** A retry of `key` met its live lease: try the complete now instead of after the pause. */
  nudge(key: string): void {
    this.#pending.get(key)?.wake?.()
  }

  /**
   * A retry acquired `key` here while its earlier complete was still pending (the lease ended
   * while the store was down): its handler already succeeded. Stops the background loop and
   * returns the complete options to record the event with the new claim; undefined when `key` is
   * not pending.
   */
  take(key: string): { options: CompleteOptions; event: WebhookEvent | undefined } | undefined {
    const pending = this.#pending.get(key)
    if (pending === undefined) return undefined
    this.#end(pending)
    return { options: pending.options, event: pending.event }
  }

  async #run(pending: Pending, first: Promise<boolean>): Promise<void> {
    const { store, reporter, storeTimeoutMs } = this.#host
    const started = performance.now()
    let tries = 0
    // A try that timed out may still land: then a later try finds the key no longer its own, and
    // the loop, woken, stops. The first try is never awaited alone: it already had its deadline,
    // and one that hangs (a stalled connection) must not stop the tries that follow.
    let landed = false
    const watch = (attempt: Promise<boolean>) => {
      attempt.then(
        (done) => {
          if (!done) return
          landed = true
          pending.wake?.()
        },
        () => {},
      )
      return attempt
    }
    watch(first)
    let outcome: boolean | undefined
    /** Why the last try that failed did (said if the loop ends without the record). */
    let lastFailure: string | undefined
    for (let pause = FIRST_PAUSE_MS; !pending.stopped; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
      if (performance.now() - started >= RECORD_TRIES_MS) break
      // A microtask first, so that a first try that has already settled is seen before any pause.
      await Promise.resolve()
      if (!landed) {
        await new Promise<void>((resolve) => {
          const timer = unref(setTimeout(resolve, pause))
          pending.wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        pending.wake = undefined
      }
      if (pending.stopped) return
      if (landed) {
        outcome = true
        break
      }
      tries++
      // Each try has its own deadline; while it runs, a nudge or an earlier try that lands only
      // marks `landed`, which the next turn reads.
      outcome = await withTimeout(watch(attempt(() => store.complete(pending.claim, pending.options))), storeTimeoutMs).then(
        (done) => {
          if (done === undefined) lastFailure = `no answer within storeTimeoutMs (${storeTimeoutMs} ms)`
          return done
        },
        (error: unknown) => {
          lastFailure = error instanceof Error ? error.message : String(error)
          return undefined
        },
      )
      // False: recorded already (by this claim, its answer lost) or taken over. A store that does
      // not answer which is asked again on the next turn, never taken for a refusal.
      if (outcome === false) {
        outcome = landed || (await recordedByThisClaim(this.#host, pending.claim, pending.claimedAt, pending.options.retentionMs))
        if (outcome === undefined) lastFailure = 'the store answered false, then did not say whether this claim had recorded it'
      }
      if (outcome !== undefined) break
    }
    if (pending.stopped) return
    this.#end(pending)
    const info = { status: 503, eventId: pending.event?.id, type: pending.event?.type }
    const seconds = Math.round((performance.now() - started) / 100) / 10
    if (outcome === true) reporter.recordedLate(info, tries)
    else if (outcome === false) reporter.recordRefused(info, { tries, seconds, lastFailure })
    else reporter.recordAbandoned(info, Math.round(seconds), lastFailure)
  }

  #end(pending: Pending): void {
    pending.stopped = true
    pending.wake?.()
    if (this.#pending.get(pending.claim.key) === pending) this.#pending.delete(pending.claim.key)
    pending.settle?.()
    pending.settle = undefined
  }

  #giveUpOldest(): void {
    const oldest = this.#pending.values().next().value
    if (oldest === undefined) return
    this.#end(oldest)
    this.#host.reporter.recordAbandoned({ status: 503, eventId: oldest.event?.id, type: oldest.event?.type }, 0)
  }
}
