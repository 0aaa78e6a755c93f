/**
 * Facts, for reconcile: with ordering on, the store counts per email, type and `created_at`
 * millisecond how many events were handled (and how many of those came from reconcile and were not
 * yet matched by the sender's own delivery), read with the claim and changed with the complete, under
 * the email's lock. So an event is handled once whichever path brings it first:
 *
 * - a reconciled event (its envelope carries `email_webhooks_reconcile: { index }`, its position
 *   among the email's events of that type and millisecond) runs only when fewer than `index + 1`
 *   of them were handled; it adds one handled and one reconciled;
 * - the sender's own event runs only when no reconciled one is left to match; matching one takes it
 *   off (no handler runs), else it adds one handled.
 */
import type { WebhookEvent } from '../events.js'
import type { FactCounts } from '../store/types.js'

/** The envelope field reconcile adds (ours, not the sender's): `{ index }`. */
export const RECONCILE_FIELD = 'email_webhooks_reconcile'

/** Where an event came from, as handlers see it (`ctx.source`). */
export type EventSource = 'sender' | 'reconcile'

/** What to do with a claimed email event, given its fact's counts. */
export type FactDecision =
  /** Run the handlers; then complete with `change`. */
  | { run: true; change: FactCounts | undefined }
  /** Handled already (by the other path): complete with `change`, no handler, answer as a duplicate. */
  | { run: false; change: FactCounts | undefined }
  /** A reconciled event this receiver cannot place: give the claim back and refuse it, saying `why`. */
  | { refuse: string }

const SENDER_NEW: FactCounts = Object.freeze({ handled: 1, reconciled: 0 })
const SENDER_MATCHED: FactCounts = Object.freeze({ handled: 0, reconciled: -1 })
const RECONCILED_NEW: FactCounts = Object.freeze({ handled: 1, reconciled: 1 })

/** The event's reconcile index; undefined for the sender's events; `'malformed'` for a field that is not `{ index: n ≥ 0 }`. */
export function reconcileIndexOf(event: WebhookEvent): number | undefined | 'malformed' {
  const field = (event as Record<string, unknown>)[RECONCILE_FIELD]
  if (field === undefined) return undefined
  const index = typeof field === 'object' && field !== null ? (field as { index?: unknown }).index : undefined
  return Number.isSafeInteger(index) && (index as number) >= 0 ? (index as number) : 'malformed'
}

/**
 * Decides from the claimed fact's counts (`undefined` when the store keeps none, or ordering is
 * off) whether the event runs, and how its complete changes the counts.
 */
export function decideFact(fact: FactCounts | undefined, index: number | undefined | 'malformed'): FactDecision {
  if (index === 'malformed') return { refuse: `its ${RECONCILE_FIELD} field is not { index: a whole number ≥ 0 }` }
  if (index !== undefined) {
    if (fact === undefined) {
      return {
        refuse:
          'this receiver keeps no facts to recognise it by (it needs ordering: true and a store that keeps facts: every built-in store does)',
      }
    }
    return fact.handled > index ? { run: false, change: undefined } : { run: true, change: RECONCILED_NEW }
  }
  if (fact === undefined) return { run: true, change: undefined }
  return fact.reconciled > 0 ? { run: false, change: SENDER_MATCHED } : { run: true, change: SENDER_NEW }
}
