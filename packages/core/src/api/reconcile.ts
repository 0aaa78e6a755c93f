/**
 * reconcileEmails(): brings a receiver every event it missed, from the source of truth. For each
 * email id it reads `GET /emails/{id}` and sends each entry of the email's `events` list through
 * the receiver's normal path, signed as the sender signs, with a deterministic event id and the
 * envelope field `email_webhooks_reconcile: { index }`. The receiver (ordering on) runs an entry's
 * handlers only when it has not handled that event yet, from either path, and answers a duplicate
 * otherwise: so reconcile needs no access to the store, and running it twice handles nothing the
 * second time. One email's events go one at a time, oldest first; emails go a few at a time.
 */
import { DEFAULT_RETENTION_MS } from '../defaults.js'
import { assertValidSecrets } from '../secret.js'
import { ReconcileAbortedError } from './aborted.js'
import { isUuid } from './emails.js'
import { type Run, reconcileEmail } from './reconcile-email.js'
import type { SendSettings } from './reconcile-send.js'
import { type EmailReconcileResult, type ReconcileEmailsOptions, type ReconcileReport, reconcileTotals } from './reconcile-types.js'

export type { EntryProblem, InvalidEntry } from './reconcile-plan.js'
export {
  type EmailReconcileResult,
  type EmailReconcileStatus,
  type ReconciledEvent,
  type ReconcileEmailsOptions,
  type ReconcileEventOutcome,
  type ReconcileReport,
  type ReconcileStop,
  type ReconcileTotals,
  reconcileTotals,
} from './reconcile-types.js'

/**
 * The receiver's default `retentionMs` (7 days, `DEFAULT_RETENTION_MS` of `@email-webhooks/core`):
 * events older than this (less 5 minutes of clock margin) are not sent.
 */
export const DEFAULT_RECONCILE_RETENTION_MS: number = DEFAULT_RETENTION_MS
/** Default emails reconciled at once (each email's events go one at a time). */
export const DEFAULT_RECONCILE_CONCURRENCY = 4
/** Default time one POST to the receiver may take: the sender's own 10 s. */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 10_000
/** Default attempts per event: on no answer, 5xx, 429 and 409 `in_flight`. */
export const DEFAULT_RECONCILE_MAX_ATTEMPTS = 4

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`[@email-webhooks/core/api] ${name} must be a non-negative number.`)
  return value
}

function checkReceiverUrl(raw: unknown): string {
  let url: URL | undefined
  try {
    url = typeof raw === 'string' ? new URL(raw) : undefined
  } catch {
    url = undefined
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new TypeError('[@email-webhooks/core/api] receiverUrl must be an absolute http:// or https:// URL: where the sender delivers.')
  return url.href
}

function sinceOf(since: Date | number | undefined): number | undefined {
  if (since === undefined) return undefined
  const ms = since instanceof Date ? since.getTime() : since
  if (typeof ms !== 'number' || !Number.isFinite(ms))
    throw new TypeError('[@email-webhooks/core/api] since must be a valid Date or ms since the epoch.')
  return ms
}

async function distinct(ids: Iterable<string> | AsyncIterable<string>): Promise<{ ids: string[]; repeated: number }> {
  const seen = new Set<string>()
  const out: string[] = []
  let repeated = 0
  for await (const raw of ids as AsyncIterable<string>) {
    const id = String(raw)
    const key = isUuid(id) ? id.toLowerCase() : id
    if (seen.has(key)) repeated++
    else {
      seen.add(key)
      out.push(id)
    }
  }
  return { ids: out, repeated }
}

function resolveSend(options: ReconcileEmailsOptions, dryRun: boolean): SendSettings {
  const url = checkReceiverUrl(options.receiverUrl)
  if (!dryRun) {
    if (typeof options.secret !== 'string')
      throw new TypeError(
        '[@email-webhooks/core/api] reconcileEmails needs secret: the endpoint secret the receiver verifies with (one string), to sign the events it sends.',
      )
    assertValidSecrets(options.secret)
  }
  return {
    url,
    secret: options.secret ?? '',
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    timeoutMs: nonNegative('timeoutMs', options.timeoutMs, DEFAULT_RECONCILE_TIMEOUT_MS),
    maxAttempts: Math.max(1, Math.floor(nonNegative('maxAttempts', options.maxAttempts, DEFAULT_RECONCILE_MAX_ATTEMPTS))),
    backoffBaseMs: nonNegative('backoffBaseMs', options.backoffBaseMs, 500),
    backoffMaxMs: nonNegative('backoffMaxMs', options.backoffMaxMs, 8_000),
    maxRetryAfterMs: nonNegative('maxRetryAfterMs', options.maxRetryAfterMs, 30_000),
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
    signal: options.signal,
  }
}

/**
 * Reconciles emails from their own event lists (`GET /emails/{id}`): every event the receiver has
 * not handled, also those emitted while the endpoint was disabled, past the 100-record delivery
 * list, or whose payload expired, goes through the receiver's normal path once. Needs a receiver
 * with `ordering: true` (a reconciled event elsewhere is refused with 409 `reconcile_unsupported`)
 * and an API key with the scope `emails:read`. Per-email problems (not a UUID, 404, 429 after the
 * client's retries, unusable entries) are reported, never thrown.
 *
 * @param options.client A client from `createWebhooksClient` (key with `emails:read`).
 * @param options.emailIds The email ids (from `POST /emails`).
 * @param options.receiverUrl The receiver's URL.
 * @param options.secret The endpoint secret (not needed with `dryRun`).
 * @param options.retentionMs The receiver's `retentionMs`; default 7 days: older events are reported `too_old`, not sent.
 * @param options.since Skip emails created before it.
 * @param options.dryRun Read and report what would be sent; default false.
 * @param options.concurrency Emails at once; default 4.
 * @param options.signal Stops it; rejects with `ReconcileAbortedError` and the report so far.
 * @throws {TypeError} when the receiver URL, the secret or a number option is not usable.
 * @throws {ReconcileAbortedError} `reconcile_aborted` when `signal` aborts; its `report` says what was done.
 * @example
 * const client = createWebhooksClient({ apiKey: process.env.EMAIL_API_KEY!, baseUrl: process.env.EMAIL_API_URL! })
 * const report = await reconcileEmails({ client, emailIds, receiverUrl: 'https://example.com/hooks', secret })
 * console.log(report.totals.events.handled, 'handled now;', report.totals.events.duplicate, 'already handled')
 */
export async function reconcileEmails(options: ReconcileEmailsOptions): Promise<ReconcileReport> {
  const dryRun = options.dryRun === true
  const send = resolveSend(options, dryRun)
  const retentionMs = nonNegative('retentionMs', options.retentionMs, DEFAULT_RECONCILE_RETENTION_MS)
  const sinceMs = sinceOf(options.since)
  const concurrency = Math.max(1, Math.floor(nonNegative('concurrency', options.concurrency, DEFAULT_RECONCILE_CONCURRENCY)))
  const { signal } = options
  const { ids, repeated } = await distinct(options.emailIds)
  const report: ReconcileReport = {
    receiverUrl: send.url,
    dryRun,
    aborted: false,
    stopped: undefined,
    retentionMs,
    since: sinceMs === undefined ? undefined : new Date(sinceMs).toISOString(),
    repeatedIds: repeated,
    emails: ids.map((emailId) => ({ emailId, status: 'not_started', events: [], invalidEntries: [] })),
    totals: reconcileTotals([]),
  }
  const run: Run = { client: options.client, send, retentionMs, sinceMs, dryRun, signal, report }
  let next = 0
  let done = 0
  const worker = async (): Promise<void> => {
    while (next < report.emails.length && !signal?.aborted && report.stopped === undefined) {
      const result = report.emails[next++] as EmailReconcileResult
      try {
        await reconcileEmail(run, result)
      } catch (error) {
        if (!signal?.aborted) throw error
        // Aborted during the read: nothing of this email was sent.
        result.status = 'not_started'
        return
      }
      try {
        options.onEmail?.(result, { done: ++done, total: report.emails.length })
      } catch {
        // An observer (progress): what it throws does not stop the run.
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, report.emails.length) }, worker))
  report.totals = reconcileTotals(report.emails)
  if (signal?.aborted) {
    report.aborted = true
    throw new ReconcileAbortedError(report, signal.reason)
  }
  return report
}
