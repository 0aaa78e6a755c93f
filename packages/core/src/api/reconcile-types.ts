/**
 * The shapes of reconcile: its options, what came of each event and each email, why a run stopped,
 * and the report with its totals.
 */
import type { WebhooksClient } from './client.js'
import type { InvalidEntry } from './reconcile-plan.js'

/** Options of `reconcileEmails`. */
export interface ReconcileEmailsOptions {
  /** A client from `createWebhooksClient` whose key has the scope `emails:read` (only `getEmail` is used). */
  client: Pick<WebhooksClient, 'getEmail'>
  /**
   * The emails to reconcile (an iterable or async iterable of strings): the ids `POST /emails`
   * returned. Repeats are reconciled once.
   */
  emailIds: Iterable<string> | AsyncIterable<string>
  /** Where the sender delivers: the receiver's URL (`http://` or `https://`). */
  receiverUrl: string
  /** The endpoint secret the receiver verifies with (one string); not needed with `dryRun`. */
  secret?: string | undefined
  /**
   * The receiver's `retentionMs` (`DEFAULT_RECONCILE_RETENTION_MS` equals core's
   * `DEFAULT_RETENTION_MS`). Older events are not sent: reported `too_old`.
   * @defaultValue 7 days
   */
  retentionMs?: number
  /**
   * Skip emails whose `created_at` is before this (a `Date` or ms since the epoch): reported
   * `before_since`.
   */
  since?: Date | number | undefined
  /**
   * Read every email and report what would be sent, sending nothing.
   * @defaultValue `false`
   */
  dryRun?: boolean
  /**
   * Emails at once (each email's events go one at a time).
   * @defaultValue `4`
   */
  concurrency?: number
  /**
   * Time one POST may take, whole ms (the sender's own).
   * @defaultValue `10000`
   */
  timeoutMs?: number
  /**
   * Attempts per event, on no answer, 5xx, 429 and 409 `in_flight`.
   * @defaultValue `4`
   */
  maxAttempts?: number
  /**
   * First backoff cap between attempts, whole ms, doubling, with full jitter.
   * @defaultValue `500`
   */
  backoffBaseMs?: number
  /**
   * Largest backoff cap, whole ms.
   * @defaultValue `8000`
   */
  backoffMaxMs?: number
  /**
   * Longest `Retry-After` of the receiver that is waited, whole ms.
   * @defaultValue `30000`
   */
  maxRetryAfterMs?: number
  /**
   * The `fetch` for the POSTs to the receiver.
   * @defaultValue `globalThis.fetch`
   */
  fetch?: typeof fetch
  /**
   * Clock in milliseconds (signatures, retention).
   * @defaultValue `Date.now`
   */
  now?: () => number
  /**
   * Jitter source in [0, 1).
   * @defaultValue `Math.random`
   */
  random?: () => number
  /** Stops it: nothing starts after the abort; rejects with `ReconcileAbortedError` and the report so far. */
  signal?: AbortSignal
  /**
   * `(result, { done, total })`, once per email when it is done (for progress); what it throws is
   * ignored.
   */
  onEmail?: (result: EmailReconcileResult, progress: { done: number; total: number }) => void
}

/** What came of one event of an email's list. */
export type ReconcileEventOutcome =
  /**
   * Sent, and the receiver ran its handlers (`{"ok":true}`; `skipped: 'stale'` when its `skipStale`
   * acknowledged it without), or, in inbox mode, recorded it to run them after the answer (`queued: true`).
   */
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
  /**
   * `true`: the receiver is in inbox mode and answered `{"ok":true,"queued":true}`: the event is
   * recorded and its handlers run after the answer (an event it had handled is then skipped by its
   * worker as a duplicate; a failure shows in its inbox, not here).
   */
  queued?: true
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

/** What `reconcileEmails` did (or, with `dryRun`, would do; or, in a `ReconcileAbortedError`, did before the abort). */
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
