/**
 * What recovery does with each listed delivery, decided before any retry, from what the contract
 * documents of a delivery record: `last_status` (a 2xx means delivered), and the receiver's own
 * store (its `lookup`: handled). Everything else is retried, oldest first, so that an email's events
 * reach the receiver in the order they happened (newest first, with ordering on, every older one
 * would arrive stale), one record per event. The record's `state` is not read: the contract does
 * not document its values (only `pending` appears in the service's example), and a sender that
 * reports an exhausted delivery as `pending` would otherwise never see it retried. A retry that
 * meets an event already handled costs a duplicate answer (the receiver deduplicates); a skipped
 * event is lost. `attempts` and `next_attempt_at` only tell the report that the sender may also
 * deliver the event itself (an attempt left of its budget of 10, due at that time).
 */
import type { DedupStore } from '../store/types.js'
import type { WebhookDelivery } from './client.js'

/** Why a delivery was not retried: the store holds its event as done, the sender saw a 2xx, or another record of the same event is retried or was delivered. */
export type AlreadyHandledReason = 'store' | 'delivered' | 'same_event'

/** One delivery in the report, with the request id of the call that decided it. */
export interface RecoveryItem {
  deliveryId: string
  eventId: string
  requestId: string | undefined
}

/**
 * The sender's own next attempt of a delivery, as its documented fields show it (`attempts` below
 * the contract's budget of 10, `next_attempt_at` to come): it may deliver the event itself too,
 * and the receiver answers the later of the two as a duplicate.
 */
export interface SenderNextAttempt {
  /** The attempt number it will be (attempts so far + 1). */
  attempt: number
  /** `next_attempt_at` as the sender gave it. */
  at: string
}

/** A delivery to retry, and the sender's own next attempt of it when the record shows one. */
export interface RetryItem {
  delivery: WebhookDelivery
  senderNext: SenderNextAttempt | undefined
}

/** The decision for every listed delivery. */
export interface RecoveryPlan {
  /** To retry, oldest first. */
  toRetry: RetryItem[]
  alreadyHandled: Array<RecoveryItem & { reason: AlreadyHandledReason }>
}

/** The contract's attempt budget of one delivery. */
export const DELIVERY_ATTEMPT_BUDGET = 10

const isSuccess = (status: number | null): boolean => typeof status === 'number' && status >= 200 && status < 300

/** The record's `created_at` in ms (not documented by the service; used when every record has one), else undefined. */
function timeOf(d: WebhookDelivery): number | undefined {
  const ms = typeof d.created_at === 'string' ? Date.parse(d.created_at) : Number.NaN
  return Number.isNaN(ms) ? undefined : ms
}

/**
 * The deliveries oldest first: by `created_at` when every record has one, else the list reversed
 * (the service lists newest first). Ties keep the reversed list's order.
 * @param deliveries The list as the service gave it (newest first).
 * @throws Never.
 * @example
 * oldestFirst((await client.listDeliveries(endpointId)).deliveries)
 */
export function oldestFirst(deliveries: readonly WebhookDelivery[]): WebhookDelivery[] {
  const reversed = [...deliveries].reverse()
  const times = reversed.map(timeOf)
  if (times.some((t) => t === undefined)) return reversed
  return reversed
    .map((d, i) => ({ d, t: times[i] as number, i }))
    .sort((a, b) => a.t - b.t || a.i - b.i)
    .map((x) => x.d)
}

/** The sender's next attempt of `d` when its documented fields show one still to come at `now` (ms), else undefined. */
export function senderNextAttempt(d: WebhookDelivery, now: number): SenderNextAttempt | undefined {
  if (!Number.isSafeInteger(d.attempts) || d.attempts >= DELIVERY_ATTEMPT_BUDGET) return undefined
  if (typeof d.next_attempt_at !== 'string') return undefined
  const at = Date.parse(d.next_attempt_at)
  if (Number.isNaN(at) || at <= now) return undefined
  return { attempt: d.attempts + 1, at: d.next_attempt_at }
}

/**
 * Decides every delivery: delivered (a 2xx `last_status`) or handled (the store's `lookup`, when it
 * has one) are skipped; every other event is retried once (its oldest record), whatever the
 * record's undocumented `state` says.
 * @param deliveries The listed records, newest first.
 * @param store The receiver's store, or undefined.
 * @param namespace The receiver's dedup namespace.
 * @param requestId The list's request id, for the report.
 * @param now The time the sender's next attempts are compared with (ms); default `Date.now()`.
 * @throws {DedupStoreError} when `lookup` fails.
 * @example
 * const { toRetry } = await planRecovery(deliveries, store, DEFAULT_NAMESPACE, requestId)
 */
export async function planRecovery(
  deliveries: readonly WebhookDelivery[],
  store: DedupStore | undefined,
  namespace: string,
  requestId: string,
  now: number = Date.now(),
): Promise<RecoveryPlan> {
  const plan: RecoveryPlan = { toRetry: [], alreadyHandled: [] }
  const lookup = store?.lookup?.bind(store)
  const covered = new Set<string>()
  const open: WebhookDelivery[] = []
  for (const d of oldestFirst(deliveries)) {
    const item = { deliveryId: d.id, eventId: d.event_id, requestId }
    if (isSuccess(d.last_status)) {
      plan.alreadyHandled.push({ ...item, reason: 'delivered' })
      covered.add(d.event_id)
    } else if (lookup && (await lookup(`${namespace}:${d.event_id}`)) === 'done') plan.alreadyHandled.push({ ...item, reason: 'store' })
    else open.push(d)
  }
  for (const d of open) {
    if (covered.has(d.event_id)) plan.alreadyHandled.push({ deliveryId: d.id, eventId: d.event_id, requestId, reason: 'same_event' })
    else {
      covered.add(d.event_id)
      plan.toRetry.push({ delivery: d, senderNext: senderNextAttempt(d, now) })
    }
  }
  return plan
}
