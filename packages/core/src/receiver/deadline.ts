/**
 * The one timer a receiver needs. Each request registers the deadline of its current step
 * (claim, handler or complete) in a set; one timer per receiver, ticking at a fixed period while
 * any deadline is pending, fires the expired ones. A request costs no timer of its own and no
 * `Promise.race`: the step's promise is wrapped once, and the wrap settles with the step or at its
 * deadline (at most one tick late). A fixed period keeps Node's timer lists stable: re-arming a
 * timer for each new deadline (a new duration each time) cost more than the rest of the pipeline.
 */

interface Watch {
  expiresAt: number
  expire: () => void
}

/** One receiver's deadlines, served by one timer. */
export class Deadlines {
  readonly #watches = new Set<Watch>()
  readonly #tickMs: number
  #timer: ReturnType<typeof setTimeout> | undefined

  /** @param shortestMs The shortest deadline in use; the tick is a twentieth of it, between 5 and 100 ms. */
  constructor(shortestMs: number) {
    this.#tickMs = Math.min(100, Math.max(5, Math.floor(shortestMs / 20)))
  }

  /**
   * Settles with `promise`, or rejects with `onExpire()` once `expiresAt` (performance.now() ms)
   * has passed. `onExpire` runs at most once; after it `promise` may still settle, unobserved.
   * Without `expiresAt` (a step that cannot hang) it is `promise` itself: no wrap, no watch.
   */
  within<T>(promise: Promise<T>, expiresAt: number | undefined, onExpire: () => unknown): Promise<T> {
    if (expiresAt === undefined) return promise
    return new Promise<T>((resolve, reject) => {
      const watch: Watch = { expiresAt, expire: () => reject(onExpire()) }
      this.#watches.add(watch)
      this.#timer ??= setTimeout(this.#fire, this.#tickMs)
      promise.then(
        (value) => {
          this.#watches.delete(watch)
          resolve(value)
        },
        (error: unknown) => {
          this.#watches.delete(watch)
          reject(error)
        },
      )
    })
  }

  readonly #fire = (): void => {
    this.#timer = undefined
    if (this.#watches.size === 0) return
    const now = performance.now()
    for (const watch of this.#watches) {
      if (watch.expiresAt > now) continue
      this.#watches.delete(watch)
      watch.expire()
    }
    if (this.#watches.size > 0) this.#timer = setTimeout(this.#fire, this.#tickMs)
  }
}

/** `fn()` as a promise, with a synchronous throw (a custom store's) turned into a rejection. */
export function attempt<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn()
  } catch (error) {
    return Promise.reject(error)
  }
}
