/**
 * Ordering step of the receiver: the event's order input, computed once, turned into the store's
 * `order` option for claim and complete, and into `ctx.order` from the claim's answer. Events
 * without a usable order (bad `created_at`, no key) and stores without the capability cost no mark
 * read or write: their order is `unknown` with the reason.
 */
import { isEmailEventType, type WebhookEvent } from '../events.js'
import { type OrderInput, orderInputOf } from '../ordering/key.js'
import { type EventOrder, orderFromClaim, unknownOrder } from '../ordering/status.js'
import type { ClaimOptions, ClaimResult, CompleteOptions } from '../store/types.js'
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
  const order = { key: `${p.namespace}:${input.key}`, mark: input.mark }
  return {
    claimOptions: { leaseMs: p.leaseMs, retentionMs: p.retentionMs, order },
    completeOptions: { retentionMs: p.retentionMs, order },
    input,
  }
}

/** `ctx.order` from the event's input and the acquired claim's result; never throws, never guesses. */
export function eventOrderOf<Ctx>(p: Pipeline<Ctx>, ordering: EventOrdering, result: ClaimResult): EventOrder {
  if (ordering.input === undefined) return p.ordering === 'off' ? ORDERING_OFF : WITHOUT_ORDERING
  return orderFromClaim(ordering.input, result.status === 'acquired' ? result.order : undefined)
}

/**
 * The receiver's ordering mode from its options; `skipStale`, `onStale` and `orderKey` need `ordering: true`.
 * @throws {TypeError} when `ordering` is not a boolean, or one of those is given without `ordering: true`.
 */
export function orderingMode(
  options: { ordering?: unknown; skipStale?: unknown; onStale?: unknown; orderKey?: unknown },
  storeKeepsMarks: boolean,
  prefix: string,
): OrderingMode {
  const { ordering } = options
  if (ordering !== undefined && typeof ordering !== 'boolean') throw new TypeError(`${prefix} ordering must be true or false.`)
  if (ordering !== true) {
    const needs = (['skipStale', 'onStale', 'orderKey'] as const).find((name) => options[name] !== undefined && options[name] !== false)
    if (needs) throw new TypeError(`${prefix} ${needs} needs ordering: true (ctx.order and the store's marks are off by default).`)
    return 'off'
  }
  return storeKeepsMarks ? 'on' : 'store_without_ordering'
}

/**
 * Builds the `skipStale` test once: `true` skips every stale event, a list only stale events of
 * those types, nothing skips none.
 * @throws {TypeError} when `skipStale` is not `true`, `false`, or an array of email event types.
 */
export function skipStaleTest(skipStale: unknown, prefix: string): ((type: string) => boolean) | undefined {
  if (skipStale === undefined || skipStale === false) return undefined
  if (skipStale === true) return () => true
  if (!Array.isArray(skipStale) || skipStale.some((type) => typeof type !== 'string' || !isEmailEventType(type))) {
    throw new TypeError(
      `${prefix} skipStale must be true (skip every stale event) or an array of email event types such as ['email.deferred', 'email.queued'].`,
    )
  }
  const types = new Set<string>(skipStale)
  return (type) => types.has(type)
}
