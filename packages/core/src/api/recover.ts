/**
 * recoverEndpoint(): the sender's documented recovery in one call. Re-enable the endpoint if
 * it is disabled, list its deliveries, skip those already delivered (a 2xx `last_status`) or
 * handled (the dedup store's `lookup`), retry the rest oldest first with bounded concurrency and
 * spacing, and report each outcome. It decides from documented fields only (recover-plan.ts). It can only reach what the service lists:
 * at most 100 records, and none for events emitted while the endpoint was disabled.
 */
import { DEFAULT_NAMESPACE } from '../defaults.js'
import type { DedupStore } from '../store/types.js'
import { RecoveryAbortedError } from './aborted.js'
import type { CallOptions, WebhookEndpoint, WebhooksClient } from './client.js'
import { EmailApiError } from './errors.js'
import { planRecovery } from './recover-plan.js'
import type { RecoveryReport } from './recover-report.js'
import { runRetries } from './recover-run.js'

export type { AlreadyHandledReason, RecoveryItem, SenderNextAttempt } from './recover-plan.js'
export type { RecoveryReport } from './recover-report.js'

/** Default retries in flight at once. */
export const DEFAULT_RECOVER_CONCURRENCY = 4
/** Default gap between the starts of two retries, in ms (keeps clear of the rate limit). */
export const DEFAULT_RECOVER_SPACING_MS = 100
/** The most delivery records the service lists for an endpoint. */
export const DELIVERIES_LIST_CAP = 100

/** Options of {@link recoverEndpoint}. */
export interface RecoverEndpointOptions {
  /** A client from `createWebhooksClient`. */
  client: WebhooksClient
  /** The endpoint to recover; an unknown id throws `EmailApiError` 404 `not_found` that says so. */
  endpointId: string
  /**
   * The receiver's `DedupStore`; with `lookup`, events it holds as done are skipped. Open SQLite
   * with `readOnly` beside a running receiver.
   */
  store?: DedupStore | undefined
  /**
   * The receiver's dedup namespace.
   * @defaultValue `DEFAULT_NAMESPACE` (`'default'`)
   */
  namespace?: string
  /**
   * Report what would be done (`enable: 'would_reenable'`, `retried`) without any PATCH or retry.
   * @defaultValue `false`
   */
  dryRun?: boolean
  /**
   * Retries in flight at once.
   * @defaultValue `4`
   */
  concurrency?: number
  /**
   * Minimum time between the starts of two retries, whole ms.
   * @defaultValue `100`
   */
  spacingMs?: number
  /**
   * Stops the recovery: nothing starts after the abort; the call rejects with
   * `RecoveryAbortedError` and the report so far.
   */
  signal?: AbortSignal
}

function emptyReport(endpointId: string, dryRun: boolean): RecoveryReport {
  return {
    endpointId,
    dryRun,
    aborted: false,
    enable: 'already',
    enableRequestId: undefined,
    listRequestId: undefined,
    listMayBeTruncated: false,
    retried: [],
    alreadyHandled: [],
    expired: [],
    failed: [],
    notStarted: [],
    interrupted: [],
  }
}

/** The error to throw for `error`: a RecoveryAbortedError with the report so far when `signal` aborted, else `error` itself. */
function abortedOr(error: unknown, signal: AbortSignal | undefined, report: RecoveryReport | undefined): unknown {
  if (!signal?.aborted) return error
  if (report) report.aborted = true
  return new RecoveryAbortedError(report, signal.reason)
}

async function findEndpoint(client: WebhooksClient, endpointId: string, call: CallOptions): Promise<WebhookEndpoint> {
  const { endpoints, requestId } = await client.listEndpoints(call)
  const endpoint = endpoints.find((e) => e.id === endpointId)
  if (endpoint) return endpoint
  throw new EmailApiError({
    status: 404,
    code: 'not_found',
    message: `[@email-webhooks/core/api] no webhook endpoint with id ${endpointId} in the API key's organization (${endpoints.length} endpoints listed). List the endpoints to find the right id (request id ${requestId}).`,
    requestId: requestId || undefined,
    attempts: 1,
  })
}

/**
 * Brings a disabled (or lossy) endpoint back: re-enables it, retries, oldest first, every listed
 * delivery whose event is neither delivered nor handled, and reports retried, already handled,
 * expired and failed deliveries.
 *
 * @param options.client A client from `createWebhooksClient`.
 * @param options.endpointId The endpoint to recover.
 * @param options.store The receiver's dedup store; its optional `lookup` lets handled events be skipped.
 * @param options.namespace The receiver's dedup namespace; default `DEFAULT_NAMESPACE` (`'default'`).
 * @param options.dryRun Only report; default false.
 * @param options.concurrency Retries at once; default 4.
 * @param options.spacingMs Gap between retry starts; default 100 ms.
 * @param options.signal Stops it: nothing new starts, retries in flight are abandoned.
 * @throws {RecoveryAbortedError} `recovery_aborted` when `signal` aborts; its `report` says what was done.
 * @throws {DedupStoreError} when the store's `lookup` fails.
 * @throws {EmailApiError} when listing, enabling or listing deliveries fails (404 `not_found` for an unknown endpoint); a single retry's failure goes to the report instead.
 * @example
 * const report = await recoverEndpoint({ client, endpointId, store: new SqliteDedupStore({ path, readOnly: true }) })
 * console.log(report.retried.length, 'requeued;', report.expired.length, 'expired')
 */
export async function recoverEndpoint(options: RecoverEndpointOptions): Promise<RecoveryReport> {
  const { client, endpointId, store, namespace = DEFAULT_NAMESPACE, dryRun = false, signal } = options
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_RECOVER_CONCURRENCY))
  const spacingMs = Math.max(0, options.spacingMs ?? DEFAULT_RECOVER_SPACING_MS)
  const call: CallOptions = signal ? { signal } : {}
  let report: RecoveryReport | undefined
  try {
    const endpoint = await findEndpoint(client, endpointId, call)
    report = emptyReport(endpointId, dryRun)
    if (!endpoint.enabled && dryRun) report.enable = 'would_reenable'
    else if (!endpoint.enabled) {
      signal?.throwIfAborted()
      report.enable = 'interrupted'
      report.enableRequestId = (await client.enableEndpoint(endpointId, call)).requestId
      report.enable = 'reenabled'
    }
    const { deliveries, requestId } = await client.listDeliveries(endpointId, call)
    report.listRequestId = requestId
    report.listMayBeTruncated = deliveries.length >= DELIVERIES_LIST_CAP
    const plan = await planRecovery(deliveries, store, namespace, requestId)
    report.alreadyHandled = plan.alreadyHandled
    if (dryRun) {
      report.retried = plan.toRetry.map(({ delivery: d, senderNext }) =>
        senderNext === undefined
          ? { deliveryId: d.id, eventId: d.event_id, requestId }
          : { deliveryId: d.id, eventId: d.event_id, requestId, senderNext },
      )
    } else await runRetries({ client, endpointId, concurrency, spacingMs, signal }, plan.toRetry, report)
  } catch (error) {
    throw abortedOr(error, signal, report)
  }
  if (signal?.aborted) throw abortedOr(signal.reason, signal, report)
  return report
}
