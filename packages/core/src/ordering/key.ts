/**
 * The order key and position of one event: which high-water mark it belongs to (`email:<data.id>`
 * for email events, a user-chosen key for the others) and where it sits. Pure: no I/O, never throws.
 */
import type { WebhookEvent } from '../events.js'
import { type CreatedAtProblem, type OrderMark, parseCreatedAt } from './position.js'

/** Longest order key (in UTF-16 code units) a store must accept; longer keys are reported unusable. */
export const MAX_ORDER_KEY_LENGTH = 1024
/** Prefix of the order key of an email event: `email:` + `data.id`. */
export const EMAIL_ORDER_KEY_PREFIX = 'email:'

/**
 * Chooses the order key of an event that is not an email event (e.g. `organization.*`): events with
 * the same key are ordered against each other. Return `null` or `undefined` for "not ordered".
 */
export type OrderKeyFunction = (event: WebhookEvent) => string | null | undefined

/** Why an event has no usable order (its `ctx.order` is then `'unknown'`, never guessed). */
export type OrderUnknownReason =
  | CreatedAtProblem
  /** An `email.*` event whose `data.id` is not a non-empty string. */
  | 'email_id_not_string'
  /** The event's `id` is not a non-empty string. */
  | 'event_id_invalid'
  /** Not an email event, and no `orderKey` function, or it returned `null`/`undefined`. */
  | 'no_order_key'
  /** The `orderKey` function returned something other than a string of 1 to {@link MAX_ORDER_KEY_LENGTH} characters. */
  | 'order_key_invalid'
  /** The `orderKey` function threw. */
  | 'order_key_failed'
  /** The store does not implement the ordering capability (see `supportsOrdering`). */
  | 'store_without_ordering'
  /** The receiver was built without `ordering: true`: no mark is read or written. */
  | 'ordering_off'
  /** The store answered with a mark that is not an {@link OrderMark}. */
  | 'store_mark_invalid'
  /** The store may have forgotten this key's mark before its retention ended (a full `MemoryDedupStore`). */
  | 'mark_evicted'

/** Options of {@link orderInputOf}. */
export interface OrderInputOptions {
  /** Order key for events that are not email events; default none (those events are not ordered). */
  orderKey?: OrderKeyFunction
}

/** The ordering facts of one event: its mark key and the mark it would leave, or why it has none. */
export type OrderInput = { ok: true; key: string; mark: OrderMark } | { ok: false; reason: OrderUnknownReason; key: string | null }

function keyOf(event: WebhookEvent, options: OrderInputOptions): { key: string } | { reason: OrderUnknownReason } {
  const data = event.data as unknown
  if (typeof event.type === 'string' && event.type.startsWith('email.')) {
    const id = typeof data === 'object' && data !== null ? (data as { id?: unknown }).id : undefined
    if (typeof id !== 'string' || id.length === 0) return { reason: 'email_id_not_string' }
    const key = EMAIL_ORDER_KEY_PREFIX + id
    return key.length <= MAX_ORDER_KEY_LENGTH ? { key } : { reason: 'order_key_invalid' }
  }
  if (!options.orderKey) return { reason: 'no_order_key' }
  let key: unknown
  try {
    key = options.orderKey(event)
  } catch {
    return { reason: 'order_key_failed' }
  }
  if (key === null || key === undefined) return { reason: 'no_order_key' }
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_ORDER_KEY_LENGTH) return { reason: 'order_key_invalid' }
  return { key }
}

/**
 * Finds an event's order key and position. Email events (`email.*`, known or future) are keyed by
 * `email:` + `data.id`; other events by `options.orderKey`, or not at all. Bad input (no usable
 * key, a missing or unparseable `created_at`, an id that is not a string) gives `ok: false` with a
 * reason; it never throws, even when `orderKey` does.
 *
 * @param event The parsed envelope.
 * @param options `orderKey` for non-email events; default none.
 * @returns `{ ok: true, key, mark }` or `{ ok: false, reason, key }` (`key` when it was found).
 * @example
 * const input = orderInputOf(event)
 * if (input.ok) await store.claim(dedupKey, { leaseMs, retentionMs, order: { key: `${namespace}:${input.key}`, mark: input.mark } })
 */
export function orderInputOf(event: WebhookEvent, options: OrderInputOptions = {}): OrderInput {
  const found = keyOf(event, options)
  if ('reason' in found) return { ok: false, reason: found.reason, key: null }
  if (typeof event.id !== 'string' || event.id.length === 0) return { ok: false, reason: 'event_id_invalid', key: found.key }
  const time = parseCreatedAt(event.created_at)
  if (!time.ok) return { ok: false, reason: time.reason, key: found.key }
  return { ok: true, key: found.key, mark: { createdAtMs: time.ms, eventId: event.id, type: event.type } }
}
