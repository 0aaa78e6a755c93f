/**
 * Ordering step of the receiver: the event's order input, computed once, turned into the store's
 * `order` option for claim and complete, and into `ctx.order` from the claim's answer. Events
 * without a usable order (bad `created_at`, no key) and stores without the capability cost no mark
 * read or write: their order is `unknown` with the reason.
 */
import type { WebhookEvent } from '../events.js'
import { EMAIL_ORDER_KEY_PREFIX, type OrderInput, type OrderInputOptions, orderInputOf } from '../ordering/key.js'
import { type EventOrder, orderFromClaim, unknownOrder } from '../ordering/status.js'
import type { ClaimOptions, ClaimResult, CompleteOptions, DedupStore, StoreOrderInput } from '../store/types.js'
import type { OrderingMode } from './order-options.js'
import type { Reporter } from './report.js'

/** What the ordering step reads of its receiver (the pipeline has it all). */
export interface OrderingHost {
  ordering: OrderingMode
  orderInputOptions: OrderInputOptions
  namespace: string
  leaseMs: number
  retentionMs: number
  claimOptions: ClaimOptions
  completeOptions: CompleteOptions
  /** The one `EventOrdering` of every event that passes no `order` to the store. */
  plainOrdering: EventOrdering
  reporter: Reporter
  store: DedupStore
}

/** What the claim and the complete of one event pass to the store, and how to read the claim's order. */
export interface EventOrdering {
  claimOptions: ClaimOptions
  completeOptions: CompleteOptions
  /** The event's order input when the store keeps marks; undefined otherwise. */
  input: OrderInput | undefined
}

const ORDERING_OFF: EventOrder = Object.freeze(unknownOrder('ordering_off'))
const WITHOUT_ORDERING: EventOrder = Object.freeze(unknownOrder('store_without_ordering'))

/** The one `EventOrdering` of every event that passes no `order` to the store (built once per receiver). */
export function plainOrdering(claimOptions: ClaimOptions, completeOptions: CompleteOptions): EventOrdering {
  return Object.freeze({ claimOptions, completeOptions, input: undefined })
}

/** The store options of one event: with `order` only when ordering is on, the store keeps marks and the event has a usable order key and time. */
export function orderingOf(p: OrderingHost, event: WebhookEvent | undefined): EventOrdering {
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
export function eventOrderOf(p: OrderingHost, ordering: EventOrdering, result: ClaimResult): EventOrder {
  if (ordering.input === undefined) return p.ordering === 'off' ? ORDERING_OFF : WITHOUT_ORDERING
  const claimOrder = result.status === 'acquired' ? result.order : undefined
  if (ordering.claimOptions.order) p.reporter.marksKept(claimOrder !== undefined, p.store)
  return orderFromClaim(ordering.input, claimOrder)
}
