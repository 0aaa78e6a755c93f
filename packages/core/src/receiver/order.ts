/**
 * Ordering step of the receiver: the event's order input, computed once, turned into the store's
 * `order` option for claim and complete, and into `ctx.order` from the claim's answer. Events
 * without a usable order (bad `created_at`, no key) and stores without the capability cost no mark
 * read or write: their order is `unknown` with the reason.
 */
import { isEmailEventType, type WebhookEvent } from '../events.js'
import { supportsOrdering } from '../ordering/contract.js'
import { EMAIL_ORDER_KEY_PREFIX, type OrderInput, orderInputOf } from '../ordering/key.js'
import { isReplacedBy, isStaleSkippableType, STALE_SKIPPABLE_TYPES } from '../ordering/skip.js'
import { type EventOrder, orderFromClaim, unknownOrder } from '../ordering/status.js'
import type { ClaimOptions, ClaimResult, CompleteOptions, DedupStore, StoreOrderInput } from '../store/types.js'
import type { Pipeline } from './pipeline.js'

/** What the claim and the complete of one event pass to the store, and how to read the claim's order. */
export interface EventOrdering {
  claimOptions: ClaimOptions
  completeOptions: CompleteOptions
  /** The event's order input when the store keeps marks; undefined otherwise. */
  input: OrderInput | undefined
}

const ORDERING_OFF: EventOrder = Object.freeze(unknownOrder('ordering_off'))
const WITHOUT_ORDERING: EventOrder = Object.freeze(unknownOrder('store_without_ordering'))

/** How a receiver orders events: off (the default), on with a store that keeps marks, or on with one that does not. */
export type OrderingMode = 'off' | 'on' | 'store_without_ordering'

/** The one `EventOrdering` of every event that passes no `order` to the store (built once per receiver). */
export function plainOrdering(claimOptions: ClaimOptions, completeOptions: CompleteOptions): EventOrdering {
  return Object.freeze({ claimOptions, completeOptions, input: undefined })
}

/** The store options of one event: with `order` only when ordering is on, the store keeps marks and the event has a usable order key and time. */
export function orderingOf<Ctx>(p: Pipeline<Ctx>, event: WebhookEvent | undefined): EventOrdering {
  if (p.ordering !== 'on' || event === undefined) return p.plainOrdering
  const input = orderInputOf(event, p.orderInputOptions)
  if (!input.ok) return { claimOptions: p.claimOptions, completeOptions: p.completeOptions, input }
  const key = `${p.namespace}:${input.key}`
  // Email events also count their fact (type and millisecond), for reconcile (facts.ts).
  const order: StoreOrderInput = input.key.startsWith(EMAIL_ORDER_KEY_PREFIX)
    ? { key, mark: input.mark, fact: `${event.type}|${input.mark.createdAtMs}` }
    : { key, mark: input.mark }
  return {
    claimOptions: { leaseMs: p.leaseMs, retentionMs: p.retentionMs, order },
    completeOptions: { retentionMs: p.retentionMs, order },
    input,
  }
}

/**
 * `ctx.order` from the event's input and the acquired claim's result; never throws, never guesses.
 * An ordered claim that comes back without a mark (a store whose mark tables went missing) is
 * reported once, and again once marks come back.
 */
export function eventOrderOf<Ctx>(p: Pipeline<Ctx>, ordering: EventOrdering, result: ClaimResult): EventOrder {
  if (ordering.input === undefined) return p.ordering === 'off' ? ORDERING_OFF : WITHOUT_ORDERING
  const claimOrder = result.status === 'acquired' ? result.order : undefined
  if (ordering.claimOptions.order) p.reporter.marksKept(claimOrder !== undefined, p.store)
  return orderFromClaim(ordering.input, claimOrder)
}

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
