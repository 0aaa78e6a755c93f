/**
 * Reconcile of one email: check its id, read it (a 404, a failed read or an answer for another
 * email is its result, never thrown), skip it before `since`, plan its events, then send them one
 * at a time, oldest first, stopping the email at the first that is not handled (its later events
 * would move it past the gap), and the whole run at a refusal every event would get.
 */
import type { CallOptions, WebhooksClient } from './client.js'
import { type EmailStatus, isUuid } from './emails.js'
import { EmailApiError } from './errors.js'
import { type EmailPlan, type PlannedEvent, planEmail } from './reconcile-plan.js'
import { type SendOutcome, type SendSettings, sendReconciled } from './reconcile-send.js'
import type { EmailReconcileResult, ReconciledEvent, ReconcileEventOutcome, ReconcileReport } from './reconcile-types.js'

/** API statuses that would refuse every email the same way (key, billing, scope): reconcile stops. */
const STOPPING_API_STATUSES: ReadonlySet<number> = new Set([401, 402, 403])

/** One run: the client, how to send, the receiver's retention, `since`, and the report every email writes to. */
export interface Run {
  client: Pick<WebhooksClient, 'getEmail'>
  send: SendSettings
  retentionMs: number
  sinceMs: number | undefined
  dryRun: boolean
  signal: AbortSignal | undefined
  report: ReconcileReport
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
  if (sent.outcome === 'handled' && sent.queued) event.queued = true
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

/**
 * Reconciles one email into `result` (its id, status, events and problems).
 * @param run The run.
 * @param result The email's result, `emailId` set.
 * @throws The abort reason when the run's signal aborts during the read; what is not an `EmailApiError` nor the abort.
 * @example
 * await reconcileEmail(run, { emailId, status: 'not_started', events: [], invalidEntries: [] })
 */
export async function reconcileEmail(run: Run, result: EmailReconcileResult): Promise<void> {
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
