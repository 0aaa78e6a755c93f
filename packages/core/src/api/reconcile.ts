/**
 * reconcileEmails(): brings a receiver every event it missed, from the source of truth. For each
 * email id it reads `GET /emails/{id}` and sends each entry of the email's `events` list through
 * the receiver's normal path, signed as the sender signs, with a deterministic event id and the
 * envelope field `email_webhooks_reconcile: { index }`. The receiver (ordering on) runs an entry's
 * handlers only when it has not handled that event yet, from either path, and answers a duplicate
 * otherwise: so reconcile needs no access to the store, and running it twice handles nothing the
 * second time. One email's events go one at a time, oldest first; emails go a few at a time.
 */
import { assertValidSecrets } from '../secret.js'
import type { CallOptions, WebhooksClient } from './client.js'
import type { EmailStatus } from './emails.js'
import { isUuid } from './emails.js'
import { EmailApiError, ReconcileAbortedError } from './errors.js'
import { type EmailPlan, type InvalidEntry, type PlannedEvent, planEmail } from './reconcile-plan.js'
import { type SendOutcome, type SendSettings, sendReconciled } from './reconcile-send.js'

export type { EntryProblem, InvalidEntry } from './reconcile-plan.js'

/**
 * The receiver's default `retentionMs` (7 days, `DEFAULT_RETENTION_MS` of `@email-webhooks/core`):
 * events older than this (less 5 minutes of clock margin) are not sent.
 */
export const DEFAULT_RECONCILE_RETENTION_MS: number = 7 * 24 * 3_600_000
/** Default emails reconciled at once (each email's events go one at a time). */
export const DEFAULT_RECONCILE_CONCURRENCY = 4
/** Default time one POST to the receiver may take: the sender's own 10 s. */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 10_000
/** Default attempts per event: on no answer, 5xx, 429 and 409 `in_flight`. */
export const DEFAULT_RECONCILE_MAX_ATTEMPTS = 4

/** API statuses that would refuse every email the same way (key, billing, scope): reconcile stops. */
const STOPPING_API_STATUSES: ReadonlySet<number> = new Set([401, 402, 403])

/** Options of {@link reconcileEmails}. */
export interface ReconcileEmailsOptions {
  /** A client from `createWebhooksClient` whose key has the scope `emails:read` (only `getEmail` is used). */
  client: Pick<WebhooksClient, 'getEmail'>
  /** The emails to reconcile: the ids `POST /emails` returned. Repeats are reconciled once. */
  emailIds: Iterable<string> | AsyncIterable<string>
  /** The receiver's URL (http or https), where the sender delivers. */
  receiverUrl: string
  /** The endpoint secret the receiver verifies with. Not needed for a dry run. */
  secret?: string | undefined
  /** The receiver's `retentionMs`; default 7 days. Older events are not sent: reported `too_old`. */
  retentionMs?: number
  /** Skip emails whose `created_at` is before this (a `Date` or ms since the epoch). */
  since?: Date | number | undefined
  /** Read every email and report what would be sent, sending nothing; default false. */
  dryRun?: boolean
  /** Emails at once; default 4. */
  concurrency?: number
  /** Milliseconds one POST may take; default 10 000. */
  timeoutMs?: number
  /** Attempts per event; default 4. */
  maxAttempts?: number
  /** First backoff cap between attempts, full jitter, doubling; default 500 ms. */
  backoffBaseMs?: number
  /** Largest backoff cap; default 8 000 ms. */
  backoffMaxMs?: number
  /** Longest receiver `Retry-After` waited; default 30 000 ms. */
  maxRetryAfterMs?: number
  /** `fetch` for the POSTs to the receiver; default `globalThis.fetch`. */
  fetch?: typeof fetch
  /** Clock in ms (signatures, retention); default `Date.now`. */
  now?: () => number
  /** Jitter source in [0, 1); default `Math.random`. */
  random?: () => number
  /** Stops it: nothing starts after the abort; rejects with {@link ReconcileAbortedError} and the report so far. */
  signal?: AbortSignal
  /** Called once per email when it is done (for progress). */
  onEmail?: (result: EmailReconcileResult, progress: { done: number; total: number }) => void
}

/** What came of one event of an email's list. */
export type ReconcileEventOutcome =
  /** Sent, and the receiver ran its handlers (`{"ok":true}`; `skipped: 'stale'` when its `skipStale` acknowledged it without). */
  | 'handled'
  /** Sent, and the receiver had handled it already, from the sender or an earlier reconcile (`"duplicate": true`). */
  | 'duplicate'
  /** Sent, and refused with a status no retry changes (`status`, `code`, `message` say what to do). */
  | 'refused'
  /** No answer, or 5xx / 429 / 409 `in_flight` after every attempt. */
  | 'failed'
  /** Older than the receiver's retention: it cannot tell any more whether it was handled, so it was not sent. */
  | 'too_old'
  /** Dry run: would be sent (the receiver answers a duplicate for one it already handled). */
  | 'would_send'
  /** Not sent: an earlier event of the email failed or was refused (sending it would move the email past the gap), or the run stopped. */
  | 'not_sent'

/** One event of an email, as reconcile built it and what came of it. */
export interface ReconciledEvent {
  /** The deterministic event id (`webhook-id`). */
  eventId: string
  type: string
  createdAt: string
  /** Its index among the email's events of that type and millisecond (`email_webhooks_reconcile.index`). */
  index: number
  outcome: ReconcileEventOutcome
  /** The receiver's last status (0: no answer), when it was sent. */
  status?: number
  /** The receiver's error code (or `timeout`, `network_error`), for `refused` and `failed`. */
  code?: string
  /** What happened and what to do, for `refused`, `failed`, `too_old` and `not_sent`. */
  message?: string
  /** POSTs made. */
  attempts?: number
  /** `'stale'`: the receiver's `skipStale` acknowledged it without running a handler (a newer event was handled). */
  skipped?: 'stale'
}

/** What came of one email. */
export type EmailReconcileStatus =
  /** Read, and every event was handled, a duplicate, or too old. */
  | 'reconciled'
  /** Read, but an event failed, was refused or not sent, or an entry of its list was unusable. */
  | 'incomplete'
  /** Dry run: read, nothing sent. */
  | 'dry_run'
  /** 404: outside the plan's log-retention window, or another organization's email (the service answers both alike). */
  | 'not_found'
  /** Created before `since`: skipped. */
  | 'before_since'
  /** Not a UUID: never asked for. */
  | 'invalid_id'
  /** The read failed (429 after the client's retries, 5xx, no answer, an unexpected answer): see `error`. */
  | 'failed'
  /** The run stopped (abort, or a refusal that would refuse every email) before this email started. */
  | 'not_started'

/** One email's result. */
export interface EmailReconcileResult {
  /** The id as given. */
  emailId: string
  status: EmailReconcileStatus
  /** Request id of the read, when the service answered. */
  requestId?: string
  /** The email's state, as the service gave it. */
  state?: string
  /** The email's `created_at`, as the service gave it. */
  createdAt?: string
  /** Why the read failed, or the id was refused. */
  error?: { status: number; code: string; message: string }
  /** Its events oldest first (each with its outcome), then those too old. */
  events: ReconciledEvent[]
  /** Entries of its `events` list that could not be used (never guessed at). */
  invalidEntries: InvalidEntry[]
}

/** Why a run stopped before the end: a refusal that every further email or event would get too. */
export interface ReconcileStop {
  /** `receiver`: it refused an event (wrong secret, ordering off, wrong URL); `api`: the key was refused (401, 402, 403). */
  by: 'receiver' | 'api'
  emailId: string
  status: number
  code: string
  message: string
}

/** Counts of a report. */
export interface ReconcileTotals {
  emails: Record<EmailReconcileStatus, number>
  events: Record<ReconcileEventOutcome, number>
  invalidEntries: number
}

/** What {@link reconcileEmails} did (or, with `dryRun`, would do; or, in a {@link ReconcileAbortedError}, did before the abort). */
export interface ReconcileReport {
  receiverUrl: string
  dryRun: boolean
  aborted: boolean
  /** Set when a refusal stopped the run; the emails after it are `not_started`. */
  stopped: ReconcileStop | undefined
  retentionMs: number
  /** `since` as an ISO date-time, when given. */
  since: string | undefined
  /** Ids given more than once (each email is reconciled once). */
  repeatedIds: number
  /** One per distinct id, in the order given. */
  emails: EmailReconcileResult[]
  totals: ReconcileTotals
}

interface Run {
  client: Pick<WebhooksClient, 'getEmail'>
  send: SendSettings
  retentionMs: number
  sinceMs: number | undefined
  dryRun: boolean
  signal: AbortSignal | undefined
  report: ReconcileReport
}

const EMAIL_STATUSES: readonly EmailReconcileStatus[] = [
  'reconciled',
  'incomplete',
  'dry_run',
  'not_found',
  'before_since',
  'invalid_id',
  'failed',
  'not_started',
]
const EVENT_OUTCOMES: readonly ReconcileEventOutcome[] = ['handled', 'duplicate', 'refused', 'failed', 'too_old', 'would_send', 'not_sent']

/**
 * Counts a report's emails by status and events by outcome.
 * @param emails The results.
 * @throws Never.
 * @example
 * const { events } = reconcileTotals(report.emails)
 */
export function reconcileTotals(emails: readonly EmailReconcileResult[]): ReconcileTotals {
  const totals: ReconcileTotals = {
    emails: Object.fromEntries(EMAIL_STATUSES.map((s) => [s, 0])) as Record<EmailReconcileStatus, number>,
    events: Object.fromEntries(EVENT_OUTCOMES.map((o) => [o, 0])) as Record<ReconcileEventOutcome, number>,
    invalidEntries: 0,
  }
  for (const email of emails) {
    totals.emails[email.status]++
    totals.invalidEntries += email.invalidEntries.length
    for (const event of email.events) totals.events[event.outcome]++
  }
  return totals
}

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

/** A duration as people read it: `7 d`, `36 h`, `90 min`, `1500 ms`. */
function humanDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['min', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`
  }
  return `${ms} ms`
}

const TOO_OLD = (retentionMs: number): string =>
  `older than the receiver's retention (${humanDuration(retentionMs)}, less 5 min for clocks): it can no longer tell whether it handled this event, so it was not sent; check it by hand if it matters.`

function eventOf(e: PlannedEvent, outcome: ReconcileEventOutcome): ReconciledEvent {
  return { eventId: e.eventId, type: e.type, createdAt: e.createdAt, index: e.index, outcome }
}

function fromOutcome(e: PlannedEvent, sent: SendOutcome): ReconciledEvent {
  const event: ReconciledEvent = { ...eventOf(e, sent.outcome), status: sent.status, attempts: sent.attempts }
  if (sent.outcome === 'refused' || sent.outcome === 'failed') Object.assign(event, { code: sent.code, message: sent.message })
  if (sent.outcome === 'handled' && sent.skipped) event.skipped = sent.skipped
  return event
}

/** Reads one email; the result when the read did not give an email to reconcile. */
async function read(run: Run, result: EmailReconcileResult): Promise<EmailStatus | undefined> {
  const call: CallOptions = run.signal ? { signal: run.signal } : {}
  let answer: Awaited<ReturnType<WebhooksClient['getEmail']>>
  try {
    answer = await run.client.getEmail(result.emailId, call)
  } catch (error) {
    if (!(error instanceof EmailApiError)) throw error
    result.status = 'failed'
    result.error = { status: error.status, code: error.code, message: error.message }
    if (error.requestId) result.requestId = error.requestId
    if (STOPPING_API_STATUSES.has(error.status) && run.report.stopped === undefined) {
      run.report.stopped = { by: 'api', emailId: result.emailId, status: error.status, code: error.code, message: error.message }
    }
    return undefined
  }
  if (!answer.found) {
    result.status = 'not_found'
    if (answer.requestId) result.requestId = answer.requestId
    result.error = {
      status: 404,
      code: answer.code,
      message: `the service has no email ${result.emailId} for this key (404 ${answer.code}): it is outside the plan's log-retention window, or another organization's email.`,
    }
    return undefined
  }
  const email = answer.email
  result.requestId = answer.requestId
  if (typeof email.state === 'string') result.state = email.state
  if (typeof email.created_at === 'string') result.createdAt = email.created_at
  if (email.id.toLowerCase() !== result.emailId.toLowerCase()) {
    result.status = 'failed'
    result.error = {
      status: 200,
      code: 'invalid_response',
      message: `the service answered the read of email ${result.emailId} with email ${email.id.slice(0, 80)}; nothing was sent. Check that the API URL points at the service.`,
    }
    return undefined
  }
  return email
}

/** Whether the email was created before `since`; an unreadable `created_at` is reported, never guessed. */
function beforeSince(run: Run, email: EmailStatus, result: EmailReconcileResult): boolean {
  if (run.sinceMs === undefined) return false
  const created = typeof email.created_at === 'string' ? Date.parse(email.created_at) : Number.NaN
  if (Number.isNaN(created)) {
    result.status = 'failed'
    result.error = {
      status: 200,
      code: 'invalid_response',
      message: `the email's created_at (${JSON.stringify(email.created_at)?.slice(0, 60)}) is not a date, so it cannot be compared with since; nothing was sent.`,
    }
    return true
  }
  if (created >= run.sinceMs) return false
  result.status = 'before_since'
  return true
}

/** Sends the planned events one at a time; stops the email at the first that is not handled. */
async function sendEvents(run: Run, email: EmailStatus, plan: EmailPlan, result: EmailReconcileResult): Promise<void> {
  let gap: string | undefined
  for (const planned of plan.toSend) {
    if (gap === undefined && run.report.stopped) gap = 'not sent: the run stopped (see stopped).'
    if (gap === undefined && run.signal?.aborted) gap = 'not sent: the run was aborted.'
    if (gap !== undefined) {
      result.events.push({ ...eventOf(planned, 'not_sent'), message: gap })
      continue
    }
    let sent: SendOutcome
    try {
      sent = await sendReconciled(run.send, email.id, planned)
    } catch (error) {
      if (!run.signal?.aborted) throw error
      gap = 'not sent: the run was aborted (it may have reached the receiver; run reconcile again).'
      result.events.push({ ...eventOf(planned, 'not_sent'), message: gap })
      continue
    }
    result.events.push(fromOutcome(planned, sent))
    if (sent.outcome === 'refused' && sent.stopsRun && run.report.stopped === undefined) {
      run.report.stopped = { by: 'receiver', emailId: result.emailId, status: sent.status, code: sent.code, message: sent.message }
    }
    if (sent.outcome === 'refused' || sent.outcome === 'failed')
      gap = `not sent: an earlier event of this email was ${sent.outcome}; run reconcile again once that is fixed.`
  }
}

async function reconcileOne(run: Run, result: EmailReconcileResult): Promise<void> {
  if (!isUuid(result.emailId)) {
    result.status = 'invalid_id'
    result.error = {
      status: 0,
      code: 'invalid_id',
      message: `${JSON.stringify(result.emailId.slice(0, 80))} is not an email id (a UUID, as POST /emails returned it); it was not looked up.`,
    }
    return
  }
  const email = await read(run, result)
  if (email === undefined || beforeSince(run, email, result)) return
  const plan = await planEmail(email, run.send.now(), run.retentionMs)
  result.invalidEntries = plan.invalid
  if (run.dryRun) {
    result.status = 'dry_run'
    result.events = plan.toSend.map((e) => eventOf(e, 'would_send'))
  } else await sendEvents(run, email, plan, result)
  for (const old of plan.tooOld) result.events.push({ ...eventOf(old, 'too_old'), message: TOO_OLD(run.retentionMs) })
  if (!run.dryRun) {
    const clean = plan.invalid.length === 0 && result.events.every((e) => ['handled', 'duplicate', 'too_old'].includes(e.outcome))
    result.status = clean ? 'reconciled' : 'incomplete'
  }
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
        await reconcileOne(run, result)
      } catch (error) {
        if (!signal?.aborted) throw error
        // Aborted during the read: nothing of this email was sent.
        result.status = 'not_started'
        return
      }
      options.onEmail?.(result, { done: ++done, total: report.emails.length })
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
