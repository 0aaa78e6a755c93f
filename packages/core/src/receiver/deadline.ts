/**
 * The one timer a receiver needs. Each request registers its current deadline (claim, handler
 * or complete) in a set; a single timer per receiver, armed for the earliest deadline while any
 * is pending, fires the expired ones. So a request costs no timer of its own and no `Promise.race`: the
 * step's promise is wrapped once, and the wrap settles with the step or at its deadline.
 */

/** A deadline that can be moved from step to step of one request. */
export interface Watch {
  expiresAt: number
  expire: (() => void) | undefined
}

/** One receiver's deadlines, served by one timer. */
export class Deadlines {
  readonly #watches = new Set<Watch>()
  #timer: ReturnType<typeof setTimeout> | undefined
  #armedFor = Number.POSITIVE_INFINITY

  /**
   * Settles with `promise`, or rejects with `onExpire()` if `expiresAt` (performance.now() ms)
   * passes first. `onExpire` runs once; after it `promise` may still settle, unobserved.
   */
  within<T>(promise: Promise<T>, expiresAt: number, onExpire: () => unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const watch: Watch = {
        expiresAt,
        expire: () => reject(onExpire()),
      }
      this.#add(watch)
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

  #add(watch: Watch): void {
    this.#watches.add(watch)
    if (watch.expiresAt < this.#armedFor) this.#arm(watch.expiresAt)
  }

  #remove(watch: Watch): void {
    this.#watches.delete(watch)
    // Nothing pending: no timer left to keep the process awake.
    if (this.#watches.size === 0 && this.#timer !== undefined) {
      clearTimeout(this.#timer)
      this.#timer = undefined
      this.#armedFor = Number.POSITIVE_INFINITY
    }
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#armedFor = at
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, Math.ceil(at - performance.now())))
  }

  #fire(): void {
    this.#timer = undefined
    this.#armedFor = Number.POSITIVE_INFINITY
    const now = performance.now()
    let next = Number.POSITIVE_INFINITY
    for (const watch of this.#watches) {
      if (watch.expiresAt <= now) {
        this.#watches.delete(watch)
        watch.expire?.()
        watch.expire = undefined
      } else if (watch.expiresAt < next) next = watch.expiresAt
    }
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next)
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
