/**
 * Which stale events `skipStale` may acknowledge without a handler. Only a message-state event
 * (queued, submitted, deferred, uncertain) is replaced by a newer event, and only by a newer event
 * that sets the message state too. Facts are never replaced: a bounce, a complaint, a rejection,
 * every recipient event (about one recipient; a newer event about another says nothing of it) and
 * `submission_recovered` (evidence about an uncertain submission) always run their handler.
 */
import { EVENT_EFFECTS } from './email-state.js'

/** The email event types `skipStale` accepts: message-state events that a newer message-state event replaces. */
export const STALE_SKIPPABLE_TYPES = ['email.queued', 'email.submitted', 'email.deferred', 'email.uncertain'] as const

/** One of {@link STALE_SKIPPABLE_TYPES}. */
export type StaleSkippableType = (typeof STALE_SKIPPABLE_TYPES)[number]

/**
 * True for the types `skipStale` accepts.
 * @param type An event type.
 * @example
 * isStaleSkippableType('email.bounced') // false: a bounce is a fact no later event replaces
 */
export function isStaleSkippableType(type: string): type is StaleSkippableType {
  return (STALE_SKIPPABLE_TYPES as readonly string[]).includes(type)
}

/**
 * True when a stale event of `type` is replaced by the newer handled event of `newerType`: `type`
 * is a message-state event and `newerType` sets the message state (e.g. a late `email.deferred`
 * after `email.submitted`). A newer recipient event replaces nothing: the late event still runs.
 *
 * @param type The stale event's type.
 * @param newerType The type of the newest handled event (`ctx.order.newestHandled.type`).
 * @example
 * isReplacedBy('email.deferred', 'email.submitted') // true
 * isReplacedBy('email.submitted', 'email.recipient_accepted') // false
 */
export function isReplacedBy(type: string, newerType: string): boolean {
  return isStaleSkippableType(type) && Object.hasOwn(EVENT_EFFECTS, newerType) && EVENT_EFFECTS[newerType]?.message !== undefined
}
