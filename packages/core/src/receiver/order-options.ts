/**
 * The ordering options of a receiver, checked once when it is built: `ordering`, `skipStale`,
 * `onStale` and `orderKey` together, against the store's capability.
 */
import { isEmailEventType } from '../events.js'
import { supportsOrdering } from '../ordering/contract.js'
import { isReplacedBy, isStaleSkippableType, STALE_SKIPPABLE_TYPES } from '../ordering/skip.js'
import type { DedupStore } from '../store/types.js'

/** How a receiver orders events: off (the default), on with a store that keeps marks, or on with one that does not. */
export type OrderingMode = 'off' | 'on' | 'store_without_ordering'

/**
 * The receiver's ordering mode from its options, checked once: `skipStale`, `onStale` and
 * `orderKey` need `ordering: true`; `onStale` needs `skipStale` (it sees what that skips); and
 * `skipStale` needs a store that keeps marks (it would skip nothing without).
 * @throws {TypeError} naming the option and what to do.
 */
export function orderingMode(
  options: { ordering?: unknown; skipStale?: unknown; onStale?: unknown; orderKey?: unknown },
  store: DedupStore,
  prefix: string,
): OrderingMode {
  const { ordering } = options
  if (ordering !== undefined && typeof ordering !== 'boolean') throw new TypeError(`${prefix} ordering must be true or false.`)
  const given = (name: 'skipStale' | 'onStale' | 'orderKey') => options[name] !== undefined && options[name] !== false
  if (ordering !== true) {
    const needs = (['skipStale', 'onStale', 'orderKey'] as const).find(given)
    if (needs) throw new TypeError(`${prefix} ${needs} needs ordering: true (ctx.order and the store's marks are off by default).`)
    return 'off'
  }
  if (given('onStale') && !given('skipStale')) {
    throw new TypeError(
      `${prefix} onStale sees the stale events that skipStale acknowledges without a handler, and skipStale is not set, so it would never be called. Pass skipStale too, or read ctx.order.status in your handlers.`,
    )
  }
  if (supportsOrdering(store)) return 'on'
  if (given('skipStale')) {
    throw new TypeError(
      `${prefix} skipStale needs a store that keeps order marks, and this store (${storeName(store)}) does not declare the ordering capability (ordering: true), so nothing would be skipped. Use one of the built-in stores (memory, SQLite, PostgreSQL, Redis without Cluster), or add the capability to your store (see OrderingDedupStore and orderingConformance).`,
    )
  }
  return 'store_without_ordering'
}

/** The store's class name for messages (never its options). */
export function storeName(store: DedupStore): string {
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name
  return typeof name === 'string' && name.length > 0 && name !== 'Object' ? name : 'a custom store'
}

/**
 * Builds the `skipStale` test once: `true` skips every stale event of the types that may be
 * skipped (STALE_SKIPPABLE_TYPES), a list only those; and only when the newer handled event
 * replaces it (`isReplacedBy`).
 * @throws {TypeError} when `skipStale` is not `true`, `false`, or an array of those types (a fact such as `email.bounced` is refused, with why).
 */
export function skipStaleTest(skipStale: unknown, prefix: string): ((type: string, newerType: string) => boolean) | undefined {
  if (skipStale === undefined || skipStale === false) return undefined
  if (skipStale === true) return isReplacedBy
  const list = `${STALE_SKIPPABLE_TYPES.map((type) => `'${type}'`).join(', ')}`
  if (!Array.isArray(skipStale) || skipStale.some((type) => typeof type !== 'string' || !isEmailEventType(type))) {
    throw new TypeError(`${prefix} skipStale must be true (every type that may be skipped) or an array of some of ${list}.`)
  }
  const fact = skipStale.find((type) => !isStaleSkippableType(type))
  if (fact !== undefined) {
    throw new TypeError(
      `${prefix} skipStale cannot skip ${fact}: it is a fact that no later event replaces (a bounce, a complaint, a rejection, a recipient's event or a recovered submission), so a late one must still run its handler. skipStale takes ${list}.`,
    )
  }
  const types = new Set<string>(skipStale)
  return (type, newerType) => types.has(type) && isReplacedBy(type, newerType)
}
