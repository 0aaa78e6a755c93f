/**
 * recoverEndpoint(): the sender's documented recovery in one call. Re-enable the endpoint if
 * it is disabled, list its deliveries, skip the events the dedup store already holds as
 * handled, retry the rest with bounded concurrency and spacing, and report each outcome.
 */
import type { DedupStore } from '../store/types.js'
import type { WebhookDelivery, WebhooksClient } from './client.js'
import { EmailApiError } from './errors.js'

/** Default retries in flight at once. */
export const DEFAULT_RECOVER_CONCURRENCY = 4
/** Default gap between the starts of two retries, in ms (keeps clear of the rate limit). */
export const DEFAULT_RECOVER_SPACING_MS = 100
/** The most delivery records the service lists for an endpoint. */
export const DELIVERIES_LIST_CAP = 100

/** Options of {@link recoverEndpoint}. */
export interface RecoverEndpointOptions {
  client: WebhooksClient
  endpointId: string
  /** The dedup store the receiver uses; with `lookup`, events it holds as done are skipped. */
  store?: DedupStore | undefined
  /** The receiver's dedup namespace; default `'default'`. */
  namespace?: string
  /** Report what would be done without PATCH or retry; default false. */
  dryRun?: boolean
  /** Retries in flight at once; default 4. */
  concurrency?: number
  /** Minimum ms between the starts of two retries; default 100. */
  spacingMs?: number
  /** Aborts the recovery between requests. */
  signal?: AbortSignal
}

/** One delivery in the report, with the request id of the call that decided it. */
export interface RecoveryItem {
  deliveryId: string
  eventId: string
  requestId: string | undefined
}

/** Why a delivery was not retried although not expired: the store holds its event as done, the sender saw a 2xx, or an earlier record of the same event is being retried. */
export type AlreadyHandledReason = 'store' | 'delivered' | 'same_event'

/** What {@link recoverEndpoint} did (or, with `dryRun`, would do). */
export interface RecoveryReport {
  endpointId: string
  dryRun: boolean
  /** `already`: it was enabled; `reenabled`: PATCHed now; `would_reenable`: dry run on a disabled endpoint. */
  enable: 'already' | 'reenabled' | 'would_reenable'
  /** Request id of the PATCH, when one was made. */
  enableRequestId: string | undefined
  /** Request id of the deliveries list. */
  listRequestId: string
  /** True when the list held the service's maximum (100): older deliveries may exist that it does not show. */
  listMayBeTruncated: boolean
  /** Requeued (or, in a dry run, would be). */
  retried: RecoveryItem[]
  alreadyHandled: Array<RecoveryItem & { reason: AlreadyHandledReason }>
  /** 404 `delivery_expired`: the payload is gone; these events cannot be recovered through the sender. */
  expired: RecoveryItem[]
  failed: Array<RecoveryItem & { status: number; code: string; message: string }>
}

const isSuccess = (status: number | null): boolean => typeof status === 'number' && status >= 200 && status < 300

async function classify(
  deliveries: WebhookDelivery[],
  store: RecoverEndpointOptions['store'],
  namespace: string,
  requestId: string,
): Promise<{ toRetry: WebhookDelivery[]; handled: RecoveryReport['alreadyHandled'] }> {
  const toRetry: WebhookDelivery[] = []
  const handled: RecoveryReport['alreadyHandled'] = []
  const chosen = new Set<string>()
  const lookup = store?.lookup?.bind(store)
  for (const d of deliveries) {
    const item = { deliveryId: d.id, eventId: d.event_id, requestId }
    if (isSuccess(d.last_status)) handled.push({ ...item, reason: 'delivered' })
    else if (lookup && (await lookup(`${namespace}:${d.event_id}`)) === 'done') handled.push({ ...item, reason: 'store' })
    else if (chosen.has(d.event_id)) handled.push({ ...item, reason: 'same_event' })
    else {
      chosen.add(d.event_id)
      toRetry.push(d)
    }
  }
  return { toRetry, handled }
}

function wait(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve()
}

/**
 * Brings a disabled (or lossy) endpoint back: re-enables it, retries every delivery whose event
 * is not yet handled, and reports retried, already handled, expired and failed deliveries.
 *
 * @param options.client A client from `createWebhooksClient`.
 * @param options.endpointId The endpoint to recover.
 * @param options.store The receiver's dedup store; its optional `lookup` lets handled events be skipped.
 * @param options.namespace The receiver's dedup namespace; default `'default'`.
 * @param options.dryRun Only report; default false.
 * @param options.concurrency Retries at once; default 4.
 * @param options.spacingMs Gap between retry starts; default 100 ms.
 * @throws {DedupStoreError} when the store's `lookup` fails.
 * @throws {EmailApiError} when listing, enabling or listing deliveries fails (404 `not_found` for an unknown endpoint); a single retry's failure goes to the report instead.
 * @example
 * const report = await recoverEndpoint({ client, endpointId, store: new SqliteDedupStore({ path }) })
 * console.log(report.retried.length, 'requeued;', report.expired.length, 'expired')
 */
export async function recoverEndpoint(options: RecoverEndpointOptions): Promise<RecoveryReport> {
  const { client, endpointId, store, namespace = 'default', dryRun = false, signal } = options
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_RECOVER_CONCURRENCY))
  const spacingMs = Math.max(0, options.spacingMs ?? DEFAULT_RECOVER_SPACING_MS)
  const { endpoints, requestId: listEndpointsId } = await client.listEndpoints({ ...(signal ? { signal } : {}) })
  const endpoint = endpoints.find((e) => e.id === endpointId)
  if (!endpoint) {
    throw new EmailApiError({
      status: 404,
      code: 'not_found',
      message: `[@email-webhooks/core/api] no webhook endpoint with id ${endpointId} in the API key's organization (${endpoints.length} endpoints listed). List the endpoints to find the right id (request id ${listEndpointsId}).`,
      requestId: listEndpointsId || undefined,
      attempts: 1,
    })
  }
  let enable: RecoveryReport['enable'] = 'already'
  let enableRequestId: string | undefined
  if (!endpoint.enabled) {
    if (dryRun) enable = 'would_reenable'
    else {
      enableRequestId = (await client.enableEndpoint(endpointId, { ...(signal ? { signal } : {}) })).requestId
      enable = 'reenabled'
    }
  }
  const { deliveries, requestId: listRequestId } = await client.listDeliveries(endpointId, { ...(signal ? { signal } : {}) })
  const { toRetry, handled } = await classify(deliveries, store, namespace, listRequestId)
  const report: RecoveryReport = {
    endpointId,
    dryRun,
    enable,
    enableRequestId,
    listRequestId,
    listMayBeTruncated: deliveries.length >= DELIVERIES_LIST_CAP,
    retried: [],
    alreadyHandled: handled,
    expired: [],
    failed: [],
  }
  if (dryRun) {
    report.retried = toRetry.map((d) => ({ deliveryId: d.id, eventId: d.event_id, requestId: listRequestId }))
    return report
  }
  let next = 0
  let lastStart = Number.NEGATIVE_INFINITY
  let gate: Promise<void> = Promise.resolve()
  // Starts are serialised through `gate` so that consecutive retries are at least spacingMs apart.
  const reserveStart = (): Promise<void> => {
    const mine = gate.then(async () => {
      // Timers may fire a little early: wait until the gap has really passed.
      for (let left = lastStart + spacingMs - performance.now(); left > 0; left = lastStart + spacingMs - performance.now())
        await wait(Math.ceil(left))
      lastStart = performance.now()
    })
    gate = mine
    return mine
  }
  const worker = async (): Promise<void> => {
    while (next < toRetry.length) {
      const d = toRetry[next++] as WebhookDelivery
      if (signal?.aborted) throw signal.reason
      await reserveStart()
      try {
        const { requestId } = await client.retryDelivery(endpointId, d.id, { ...(signal ? { signal } : {}) })
        report.retried.push({ deliveryId: d.id, eventId: d.event_id, requestId })
      } catch (error) {
        if (!(error instanceof EmailApiError)) throw error
        const item = { deliveryId: d.id, eventId: d.event_id, requestId: error.requestId }
        if (error.code === 'delivery_expired') report.expired.push(item)
        else report.failed.push({ ...item, status: error.status, code: error.code, message: error.message })
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, toRetry.length) }, worker))
  return report
}
