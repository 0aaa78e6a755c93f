/**
 * Deliveries over time from a receiver in the same process: its counters (`stats().deliveries`,
 * by outcome since it started) sampled every 10 s on an unref'd timer and on every page view, the
 * last hour kept; the chart shows the differences per minute. Only what happened while the console
 * was mounted shows: the counters have no history before.
 */
import { unref } from '../timers.js'
import type { ConsoleReceiver } from './options.js'

/** How often the counters are read. */
const SAMPLE_EVERY_MS = 10_000
/** How long samples are kept. */
const KEEP_MS = 60 * 60_000
const MINUTE_MS = 60_000

interface Sample {
  at: number
  deliveries: Record<string, number>
}

/** One minute of deliveries, by outcome. */
export interface MinuteCounts {
  start: number
  counts: Record<string, number>
}

/** Samples a receiver's delivery counters. */
export class DeliverySampler {
  readonly #receiver: ConsoleReceiver
  readonly #samples: Sample[] = []
  #timer: ReturnType<typeof setInterval> | undefined

  constructor(receiver: ConsoleReceiver) {
    this.#receiver = receiver
    this.sample(Date.now())
    this.#timer = unref(setInterval(() => this.sample(Date.now()), SAMPLE_EVERY_MS))
  }

  /**
   * Reads the counters now, and forgets samples older than an hour. A sample less than a second
   * after the last one replaces it (page views come as often as they like), except the first: the
   * baseline the first differences are taken from.
   */
  sample(now: number): void {
    let deliveries: Record<string, number>
    try {
      deliveries = { ...(this.#receiver.stats().deliveries as Record<string, number>) }
    } catch {
      return
    }
    const last = this.#samples[this.#samples.length - 1]
    if (last !== undefined && this.#samples.length > 1 && now - last.at < 1_000) this.#samples.pop()
    this.#samples.push({ at: now, deliveries })
    while ((this.#samples[0]?.at ?? now) < now - KEEP_MS) this.#samples.shift()
  }

  /** When sampling began (the oldest sample kept). */
  since(): number | undefined {
    return this.#samples[0]?.at
  }

  /** Deliveries per minute over the last `minutes`, oldest first, by outcome (differences of consecutive samples). */
  minutes(now: number, minutes: number): MinuteCounts[] {
    const first = Math.floor(now / MINUTE_MS) * MINUTE_MS - (minutes - 1) * MINUTE_MS
    const buckets: MinuteCounts[] = Array.from({ length: minutes }, (_, i) => ({ start: first + i * MINUTE_MS, counts: {} }))
    for (let i = 1; i < this.#samples.length; i++) {
      const before = this.#samples[i - 1] as Sample
      const after = this.#samples[i] as Sample
      const bucket = buckets[Math.floor((after.at - first) / MINUTE_MS)]
      if (bucket === undefined) continue
      for (const [outcome, value] of Object.entries(after.deliveries)) {
        const delta = value - (before.deliveries[outcome] ?? 0)
        if (delta > 0) bucket.counts[outcome] = (bucket.counts[outcome] ?? 0) + delta
      }
    }
    return buckets
  }

  /** Stops the timer. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
  }
}
