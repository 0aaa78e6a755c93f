/**
 * What a handler is told about an event's order (`ctx.order` once the receiver is wired): whether
 * an event newer than this one was already handled for the same key, and which. Pure functions.
 */
import type { OrderInput, OrderUnknownReason } from './key.js'
import { compareOrderPositions, type OrderMark, type OrderPosition } from './position.js'

/**
 * - `first`: no handled event with this key is remembered.
 * - `latest`: no handled event with this key is newer than this one (apply it).
 * - `stale`: a newer event with this key was already handled (`newestHandled` says which).
 * - `unknown`: the store does not support ordering or the event's fields are unusable (`reason`).
 */
export type OrderStatus = 'first' | 'latest' | 'stale' | 'unknown'

/** The order of one event relative to the events already handled with the same order key. */
export type EventOrder =
  | { status: 'first'; key: string; newestHandled: null }
  | { status: 'latest' | 'stale'; key: string; newestHandled: OrderMark }
  | { status: 'unknown'; key: string | null; newestHandled: null; reason: OrderUnknownReason }

/**
 * Compares an event's position with the store's mark for its key.
 *
 * @param key The order key.
 * @param position The event's position.
 * @param mark The newest handled event for the key, or `null` when none is remembered.
 * @returns `first` without a mark, `stale` when the mark is newer, else `latest` (also for the very event of the mark).
 * @example
 * orderStatusOf('email:1', { createdAtMs: 5, eventId: 'a' }, { createdAtMs: 9, eventId: 'b', type: 'email.submitted' }).status // 'stale'
 */
export function orderStatusOf(key: string, position: OrderPosition, mark: OrderMark | null): EventOrder {
  if (mark === null) return { status: 'first', key, newestHandled: null }
  return { status: compareOrderPositions(mark, position) > 0 ? 'stale' : 'latest', key, newestHandled: mark }
}

/**
 * Builds an `unknown` order.
 *
 * @param reason Why the order is unknown.
 * @param key The order key, when one was found.
 * @example
 * unknownOrder('store_without_ordering', 'email:1')
 */
export function unknownOrder(reason: OrderUnknownReason, key: string | null = null): EventOrder {
  return { status: 'unknown', key, newestHandled: null, reason }
}

/**
 * True when `value` is a well-formed {@link OrderMark}: a safe-integer `createdAtMs`, a non-empty
 * string `eventId` and a string `type`.
 *
 * @param value What a store returned.
 * @example
 * isOrderMark({ createdAtMs: 1, eventId: 'a', type: 'email.queued' }) // true
 */
export function isOrderMark(value: unknown): value is OrderMark {
  if (typeof value !== 'object' || value === null) return false
  const mark = value as Record<string, unknown>
  return (
    Number.isSafeInteger(mark.createdAtMs) && typeof mark.eventId === 'string' && mark.eventId.length > 0 && typeof mark.type === 'string'
  )
}

/**
 * The order a handler sees, from the event's {@link OrderInput} and the `order` field of an
 * `acquired` claim result. A missing `order` field means the store lacks the capability; a
 * malformed mark is reported, not trusted; a mark the store may have forgotten (`forgotten`) is
 * `unknown` (`mark_evicted`), not `first`. Never guesses, never throws.
 *
 * @param input The event's order input (`orderInputOf`).
 * @param claimOrder The `order` field of the acquired claim result (`undefined` when absent).
 * @example
 * const result = await store.claim(key, { leaseMs, retentionMs, order: { key: `${namespace}:${input.key}`, mark: input.mark } })
 * if (result.status === 'acquired') ctx.order = orderFromClaim(input, result.order)
 */
export function orderFromClaim(input: OrderInput, claimOrder: unknown): EventOrder {
  if (!input.ok) return unknownOrder(input.reason, input.key)
  if (typeof claimOrder !== 'object' || claimOrder === null || !('mark' in claimOrder)) {
    return unknownOrder('store_without_ordering', input.key)
  }
  const mark = (claimOrder as { mark: unknown }).mark
  if (mark === null) {
    if ((claimOrder as { forgotten?: unknown }).forgotten === true) return unknownOrder('mark_evicted', input.key)
    return orderStatusOf(input.key, input.mark, null)
  }
  if (!isOrderMark(mark)) return unknownOrder('store_mark_invalid', input.key)
  return orderStatusOf(input.key, input.mark, { createdAtMs: mark.createdAtMs, eventId: mark.eventId, type: mark.type })
}
