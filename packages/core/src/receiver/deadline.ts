/**
 * The one timer a receiver needs. Each request registers the deadline of its current step
 * (claim, handler or complete) in a list; one timer per receiver, ticking at a fixed period while
 * any deadline is pending, fires the expired ones. A request costs no timer of its own and no
 * `Promise.race`: the step's promise is wrapped once, and the wrap settles with the step or at its
 * deadline (at most one tick late). A fixed period keeps Node's timer lists stable: re-arming a
 * timer for each new deadline (a new duration each time) cost more than the rest of the pipeline.
 */

/** A pending deadline: a node of the receiver's list of watches. */
interface Watch {
  expiresAt: number
  expire: (() => void) | undefined
  prev: Watch | undefined
  next: Watch | undefined
}

/**
 * One receiver's deadlines, served by one timer. The watches form a doubly linked list that each
 * removal unlinks completely (both neighbours' and its own links cleared), not a `Set`: a Set
 * whose size swings with the load replaces its backing store over and over, and a replaced store
 * that had reached the old generation kept every request it pointed at alive through each
 * scavenge until the next full collection. With the SQLite store that promoted about a sixth of all
 * request garbage (1.7 MB per scavenge, 5–16 ms pauses; bench/RESULTS.md).
 */
export class Deadlines {
  #first: Watch | undefined
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
      const watch: Watch = { expiresAt, expire: () => reject(onExpire()), prev: undefined, next: this.#first }
      if (this.#first) this.#first.prev = watch
      this.#first = watch
      this.#timer ??= setTimeout(this.#fire, this.#tickMs)
      promise.then(
        (value) => {
          this.#remove(watch)
          resolve(value)
        },
        (error: unknown) => {
          this.#remove(watch)
          reject(error)
        },
      )
    })
  }

  /** Takes `watch` out of the list (once) and clears its links and its callback. */
  #remove(watch: Watch): void {
    if (watch.expire === undefined) return
    const { prev, next } = watch
    if (prev) prev.next = next
    else this.#first = next
    if (next) next.prev = prev
    watch.prev = undefined
    watch.next = undefined
    watch.expire = undefined
  }

  readonly #fire = (): void => {
    this.#timer = undefined
    if (this.#first === undefined) return
    const now = performance.now()
    for (let watch: Watch | undefined = this.#first; watch !== undefined; ) {
      const next: Watch | undefined = watch.next
      const expire = watch.expire
      if (watch.expiresAt <= now && expire) {
        this.#remove(watch)
        expire()
      }
      watch = next
    }
    if (this.#first !== undefined) this.#timer = setTimeout(this.#fire, this.#tickMs)
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
