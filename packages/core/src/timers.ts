/** Timers of core that must never keep a Node process alive on their own. */

/** `timer`, unreferenced where the runtime can (Node); returned for chaining. */
export function unref<T>(timer: T): T {
  ;(timer as { unref?: () => void }).unref?.()
  return timer
}

/** `promise`, or undefined once `ms` passed (the promise may still settle, unobserved; a rejection passes through). */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const timer = unref(setTimeout(() => resolve(undefined), ms))
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}
