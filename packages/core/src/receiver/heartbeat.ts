/**
 * A lease renewed while its work runs: the inbox worker renews its entry's lease and its event's
 * dedup claim every third of the lease, so a short lease holds for as long as the handler runs in a
 * living worker, and a dead worker's entry is taken again after one short lease. A renewal the
 * store refuses (the lease lapsed or was taken over) stops the beat; one that fails or hangs (the
 * store down or stalled) is given up at its deadline, and the next beat tries again. The beat stops
 * by itself at `untilMs`, so a handler that never returns holds its lease no longer than it did
 * before there were heartbeats (its deadline and a minute).
 */

import { unref } from '../timers.js'
import type { Claimed } from './claim.js'
import { attempt } from './deadline.js'
import type { Pipeline } from './pipeline.js'

/** Ends a heartbeat (idempotent). */
export type StopBeat = () => void

/** Options of {@link startHeartbeat}. */
export interface HeartbeatOptions {
  /** Between two renewals, ms. */
  everyMs: number
  /** Stops beating at this performance.now() time. */
  untilMs: number
  /** The longest wait for one renewal, ms. */
  timeoutMs: number
  /** Renews the lease; false when the store refused (the lease is not this holder's any more). */
  renew: () => Promise<boolean>
}

/**
 * Renews a lease every `everyMs` until stopped, refused or `untilMs`.
 * @returns The function that stops it.
 */
export function startHeartbeat({ everyMs, untilMs, timeoutMs, renew }: HeartbeatOptions): StopBeat {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const schedule = (): void => {
    if (stopped || performance.now() + everyMs > untilMs) return
    timer = unref(setTimeout(beat, everyMs))
  }
  const beat = (): void => {
    timer = undefined
    if (stopped) return
    const renewal = attempt(renew)
    let settled = false
    const deadline = setTimeout(() => {
      if (settled) return
      settled = true
      schedule()
    }, timeoutMs)
    unref(deadline)
    renewal.then(
      (renewed) => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        if (renewed) schedule()
        else stopped = true
      },
      () => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        schedule()
      },
    )
  }
  schedule()
  return () => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
  }
}

/**
 * Renews the event's dedup claim (`store.extend`, and the order key it holds) every third of the
 * pipeline's lease until the claim is settled (by the handler's end, or later by a late settle:
 * a handler past its deadline, a complete tried again), or until `untilMs`.
 */
export function renewClaimWhileHeld<Ctx>(p: Pipeline<Ctx>, claimed: Claimed, untilMs: number): void {
  const { store } = p
  const extend = store.extend
  if (extend === undefined) return
  const stop = startHeartbeat({
    everyMs: Math.floor(p.leaseMs / 3),
    untilMs,
    timeoutMs: p.storeTimeoutMs,
    renew: () => extend.call(store, claimed.claim, { leaseMs: p.leaseMs }),
  })
  const settle = claimed.settle
  claimed.settle = () => {
    stop()
    settle?.()
  }
}
