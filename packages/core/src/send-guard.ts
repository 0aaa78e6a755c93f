/**
 * The framework response that adapters hand to handlers (`ctx.res`, `ctx.reply`), with its sending
 * methods made to throw: the adapter answers after the event is recorded as done, and a 2xx a
 * handler sent earlier would be lost on a crash.
 */

/**
 * Builds a wrapper for response objects: reads and header changes pass through, while the named
 * sending methods call `refuse` (which throws) instead. Chained calls (`reply.code(200).send()`)
 * stay guarded. The proxy handler is made once here, not per request.
 *
 * @param sending Names of the methods that would send an answer.
 * @param refuse Called with the method's name; throws the adapter's error.
 * @returns A function that wraps one response, typed as that response.
 * @example
 * const guard = sendGuard(new Set(['end', 'send']), (name) => { throw new TypeError(`ctx.res.${name}() …`) })
 * const res = guard(rawRes)
 */
export function sendGuard(sending: ReadonlySet<PropertyKey>, refuse: (name: string) => never): <T extends object>(target: T) => T {
  const handler: ProxyHandler<object> = {
    get(object, property, guarded) {
      if (sending.has(property)) return () => refuse(String(property))
      const value = Reflect.get(object, property, object)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const result = value.apply(object, args)
        return result === object ? guarded : result
      }
    },
  }
  return <T extends object>(target: T): T => new Proxy(target, handler) as T
}
