/**
 * One event per order key at a time in this process: a request that holds an email's order key
 * keeps it from its claim until its claim is settled (completed or released, also late, after a
 * handler deadline); the next request of the same email waits in line, first come first served,
 * for a bounded time. Across processes the store's order lock does the same (claim.ts); this line
 * spares a request the polling of the store when the holder is in this process.
 */

interface Waiter {
  resolve: (entered: boolean) => void
  timer: ReturnType<typeof setTimeout>
}

/** The order keys held in this process, each with the requests waiting for it. */
export class OrderGate {
  /** A key is held while it is in the map; its array is the line of waiters. */
  readonly #lines = new Map<string, Waiter[]>()

  /**
   * Takes `key`: `true` at once when it is free, else a promise that resolves `true` when the
   * holder hands it over, or `false` after `waitMs` (the waiter then left the line).
   */
  enter(key: string, waitMs: number): true | Promise<boolean> {
    const line = this.#lines.get(key)
    if (line === undefined) {
      this.#lines.set(key, [])
      return true
    }
    if (waitMs <= 0) return Promise.resolve(false)
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => {
          // Synchronous with `leave`: a waiter is either handed the key or leaves the line, never both.
          line.splice(line.indexOf(waiter), 1)
          resolve(false)
        }, waitMs),
      }
      line.push(waiter)
    })
  }

  /** Hands `key` to the first waiter in line, or frees it. */
  leave(key: string): void {
    const line = this.#lines.get(key)
    const next = line?.shift()
    if (next === undefined) {
      this.#lines.delete(key)
      return
    }
    clearTimeout(next.timer)
    next.resolve(true)
  }
}
