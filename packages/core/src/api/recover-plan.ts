/**
 * What recovery does with each listed delivery, decided before any retry: skip those already
 * delivered, those the receiver's store holds as handled, those the sender is still delivering
 * (`pending`, `delivering`) and second records of an event already covered; retry the rest, oldest
 * first, so that an email's events reach the receiver in the order they happened (newest first,
 * with ordering on, every older one would arrive stale).
 */
import type { DedupStore } from '../store/types.js'
import type { WebhookDelivery } from './client.js'

/** Why a delivery was not retried although not expired: the store holds its event as done, the sender saw a 2xx, or another record of the same event is retried or still being delivered. */
export type AlreadyHandledReason = 'store' | 'delivered' | 'same_event'

/** One delivery in the report, with the request id of the call that decided it. */
export interface RecoveryItem {
  deliveryId: string
  eventId: string
  requestId: string | undefined
}

/** The decision for every listed delivery. */
export interface RecoveryPlan {
  /** To retry, oldest first. */
  toRetry: WebhookDelivery[]
  alreadyHandled: Array<RecoveryItem & { reason: AlreadyHandledReason }>
  /** The sender is delivering these itself (state `pending` or `delivering`): not retried again. */
  senderRetrying: Array<RecoveryItem & { state: string }>
}

/** Delivery states in which the sender still attempts the delivery by itself. */
const SENDER_RETRYING: ReadonlySet<string> = new Set(['pending', 'delivering'])

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

/**
 * Decides every delivery; `lookup` (when the store has one) is asked about the events not yet delivered.
 * @param deliveries The listed records, newest first.
 * @param store The receiver's store, or undefined.
 * @param namespace The receiver's dedup namespace.
 * @param requestId The list's request id, for the report.
 * @throws {DedupStoreError} when `lookup` fails.
 * @example
 * const { toRetry } = await planRecovery(deliveries, store, DEFAULT_NAMESPACE, requestId)
 */
export async function planRecovery(
  deliveries: readonly WebhookDelivery[],
  store: DedupStore | undefined,
  namespace: string,
  requestId: string,
): Promise<RecoveryPlan> {
  const plan: RecoveryPlan = { toRetry: [], alreadyHandled: [], senderRetrying: [] }
  const lookup = store?.lookup?.bind(store)
  const covered = new Set<string>()
  const open: WebhookDelivery[] = []
  for (const d of oldestFirst(deliveries)) {
    const item = { deliveryId: d.id, eventId: d.event_id, requestId }
    if (isSuccess(d.last_status)) {
      plan.alreadyHandled.push({ ...item, reason: 'delivered' })
      covered.add(d.event_id)
    } else if (lookup && (await lookup(`${namespace}:${d.event_id}`)) === 'done') plan.alreadyHandled.push({ ...item, reason: 'store' })
    else if (SENDER_RETRYING.has(d.state)) {
      plan.senderRetrying.push({ ...item, state: d.state })
      covered.add(d.event_id)
    } else open.push(d)
  }
  for (const d of open) {
    if (covered.has(d.event_id)) plan.alreadyHandled.push({ deliveryId: d.id, eventId: d.event_id, requestId, reason: 'same_event' })
    else {
      covered.add(d.event_id)
      plan.toRetry.push(d)
    }
  }
  return plan
}
