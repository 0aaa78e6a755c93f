/**
 * What `emails reconcile` prints: a line per event (or per email when it has none to show), with
 * its outcome and what to do; the summary; why a run stopped; the progress bar on a terminal; and
 * the exit code of a report. Never the secret or the API key.
 */
import type { EmailReconcileResult, ReconciledEvent, ReconcileReport } from '@email-webhooks/core/api'
import cliProgress from 'cli-progress'
import { EXIT } from './errors.js'
import { displayUrl } from './http.js'
import type { Output } from './output.js'
import { table } from './output.js'

/** What a dry run cannot know, said with its output. */
export const DRY_RUN_NOTE =
  "Dry run: nothing was sent. Every event listed would be sent; the receiver answers those it already handled as duplicates. A dry run cannot tell which beforehand: the receiver's facts (per email, type and time) are read only under an event's claim, so no store is consulted."

const EVENT_LABEL: Record<ReconciledEvent['outcome'], string> = {
  handled: 'handled',
  duplicate: 'already handled',
  refused: 'refused',
  failed: 'failed',
  too_old: 'too old to check',
  would_send: 'would send',
  not_sent: 'not sent',
}

const EMAIL_LABEL: Record<EmailReconcileResult['status'], string> = {
  reconciled: 'reconciled',
  incomplete: 'incomplete',
  dry_run: 'read (dry run)',
  not_found: 'not found',
  before_since: 'before --since',
  invalid_id: 'not an email id',
  failed: 'read failed',
  not_started: 'not started',
}

/** What a row says of a refusal or failure: its status and code, and what to do the first time they come (else where it was said). */
function problemDetail(e: ReconciledEvent, said: Set<string>, stoppedOn: string | undefined): string {
  const status = e.status === undefined ? '' : `${e.status === 0 ? 'no answer' : e.status} ${e.code ?? ''}`.trim()
  if (status !== '' && status === stoppedOn) return `${status}: the answer the run stopped on (what to do: below)`
  if (status !== '' && said.has(status)) return `${status}: as above`
  said.add(status)
  return [status, e.message].filter(Boolean).join(': ')
}

function eventDetail(e: ReconciledEvent, said: Set<string>, stoppedOn: string | undefined): string {
  if (e.outcome === 'handled') {
    if (e.queued) return 'recorded in its inbox (inbox mode): its handlers run after the answer'
    return e.skipped === 'stale' ? 'acknowledged without a handler (skipStale: a newer event was handled)' : ''
  }
  if (e.outcome === 'duplicate') return ''
  if (e.outcome === 'too_old') return "older than the receiver's retention: not sent"
  if (e.outcome === 'would_send') return ''
  if (e.outcome === 'refused' || e.outcome === 'failed') return problemDetail(e, said, stoppedOn)
  return e.message ?? ''
}

/** The label of an event's outcome: `queued` for what an inbox-mode receiver recorded without handling it yet. */
const eventLabel = (e: ReconciledEvent): string => (e.outcome === 'handled' && e.queued ? 'queued' : EVENT_LABEL[e.outcome])

/** The status and code the run stopped on, when the receiver stopped it (said once, on stderr, with what to do). */
function stoppedOnOf(report: ReconcileReport): string | undefined {
  const stopped = report.stopped
  return stopped?.by === 'receiver' ? `${stopped.status === 0 ? 'no answer' : stopped.status} ${stopped.code}` : undefined
}

function rows(report: ReconcileReport): string[][] {
  const out: string[][] = []
  const said = new Set<string>()
  const stoppedOn = stoppedOnOf(report)
  for (const email of report.emails) {
    for (const e of email.events) out.push([email.emailId, eventLabel(e), e.type, e.createdAt, eventDetail(e, said, stoppedOn)])
    for (const bad of email.invalidEntries) {
      out.push([email.emailId, `unusable entry #${bad.entry}`, bad.type ?? '—', bad.createdAt ?? '—', bad.problem.replaceAll('_', ' ')])
    }
    if (email.events.length === 0 && email.invalidEntries.length === 0) {
      const detail = email.error
        ? email.error.message.replace(/^\[[^\]]+\] /, '')
        : email.status === 'before_since'
          ? `created ${email.createdAt ?? '?'}`
          : email.status === 'not_started'
            ? 'the run stopped before this email'
            : 'no events listed'
      out.push([email.emailId, EMAIL_LABEL[email.status], '—', '—', detail])
    }
  }
  return out
}

/** Events an inbox-mode receiver recorded to handle after the answer (counted as `handled` in the report's totals). */
function queuedCount(report: ReconcileReport): number {
  return report.emails.reduce((n, email) => n + email.events.filter((e) => e.outcome === 'handled' && e.queued).length, 0)
}

/**
 * The summary line of a report.
 * @param report What reconcileEmails returned.
 * @example
 * out.line(summaryLine(report))
 */
export function summaryLine(report: ReconcileReport): string {
  const { emails, events, invalidEntries } = report.totals
  const emailParts = (Object.keys(EMAIL_LABEL) as EmailReconcileResult['status'][])
    .filter((status) => emails[status] > 0)
    .map((status) => `${emails[status]} ${EMAIL_LABEL[status]}`)
  const eventParts = report.dryRun
    ? [`${events.would_send} would be sent`, `${events.too_old} too old to check`]
    : [
        `${events.handled - queuedCount(report)} handled`,
        ...(queuedCount(report) > 0 ? [`${queuedCount(report)} queued (inbox mode: handled after the answer)`] : []),
        `${events.duplicate} already handled`,
        `${events.refused} refused`,
        `${events.failed} failed`,
        `${events.not_sent} not sent`,
        `${events.too_old} too old to check`,
      ]
  const bad = invalidEntries > 0 ? `; ${invalidEntries} unusable entries` : ''
  return `Summary: ${report.emails.length} emails (${emailParts.join(', ') || 'none'}); events: ${eventParts.join(', ')}${bad}`
}

/**
 * The exit code of a finished report: 1 when an event failed or was refused, a read failed, an id
 * was not a UUID, an entry was unusable, or the run stopped; 3 when nothing answered at all (no
 * read, or no POST); 0 otherwise (emails not found and events too old are reported, not failures).
 * @param report What reconcileEmails returned.
 * @example
 * state.exitCode = reconcileExitCode(report)
 */
export function reconcileExitCode(report: ReconcileReport): number {
  const { emails, events } = report.totals
  const reads = report.emails.filter((e) => e.status !== 'invalid_id' && e.status !== 'not_started')
  if (reads.length > 0 && reads.every((e) => e.status === 'failed' && e.error?.status === 0)) return EXIT.unreachable
  const sent = report.emails.flatMap((e) => e.events).filter((e) => e.status !== undefined)
  if (sent.length > 0 && sent.every((e) => e.status === 0)) return EXIT.unreachable
  const problems = emails.incomplete + emails.failed + emails.invalid_id + emails.not_started + events.refused + events.failed
  return problems > 0 || report.totals.invalidEntries > 0 || report.stopped ? EXIT.unexpected : EXIT.ok
}

/**
 * Prints a report: the table and summary (text) or the report object (`--json`); why it stopped, on stderr.
 * @param out Where to print.
 * @param report What reconcileEmails returned.
 * @example
 * printReconcile(out, report)
 */
export function printReconcile(out: Output, report: ReconcileReport): void {
  if (out.json) out.data({ ...report, receiverUrl: displayUrl(report.receiverUrl) })
  else {
    table(out, ['email', 'outcome', 'type', 'created_at', 'detail'], rows(report))
    out.line(summaryLine(report))
    if (report.dryRun) out.line(DRY_RUN_NOTE)
    if (report.totals.events.too_old > 0)
      out.line(
        `Events older than the receiver's retention (--retention) were not sent: it can no longer tell whether it handled them. Check those by hand if they matter.`,
      )
    if (report.totals.emails.not_found > 0)
      out.line(
        "Emails not found are outside the plan's log retention, or belong to another organization: the service keeps no events for them.",
      )
  }
  const looked = report.emails.filter((e) => e.status !== 'invalid_id' && e.status !== 'not_started')
  if (looked.length > 1 && looked.every((e) => e.status === 'not_found'))
    out.error(
      `warning: none of the ${looked.length} emails was found: check that EMAIL_API_URL (--api-url) is the service's API and that the key belongs to the organization that sent them.`,
    )
  if (report.stopped) {
    const { by, emailId, message } = report.stopped
    const rest = report.totals.emails.not_started
    // Said here once; the rows that got the same answer point here.
    out.error(
      `email-webhooks: stopped at email ${emailId}: ${stoppedOnOf(report) === undefined ? '' : `${stoppedOnOf(report)}: `}${message.replace(/^\[[^\]]+\] /, '')} (${by === 'api' ? 'the API' : 'the receiver'} would refuse the rest the same way; ${rest} ${rest === 1 ? 'email' : 'emails'} not started).`,
    )
  }
}

/**
 * A progress bar over the emails, on stderr, when it is a terminal.
 * @param out Where to print.
 * @param total The emails to reconcile.
 * @returns Its update function and stop, or undefined off a terminal.
 * @example
 * const bar = progressBar(out, ids.length)
 */
export function progressBar(
  out: Output,
  total: number,
): { update(done: number, report: EmailReconcileResult): void; stop(): void } | undefined {
  if (!out.interactive) return undefined
  const bar = new cliProgress.SingleBar(
    {
      format: ' {bar} {value}/{total} emails | handled {handled} | already handled {duplicate} | problems {problems}',
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  )
  const counts = { handled: 0, duplicate: 0, problems: 0 }
  bar.start(total, 0, counts)
  return {
    update(done, email) {
      for (const e of email.events) {
        if (e.outcome === 'handled') counts.handled++
        else if (e.outcome === 'duplicate') counts.duplicate++
        else if (e.outcome === 'refused' || e.outcome === 'failed') counts.problems++
      }
      if (email.status === 'failed' || email.status === 'invalid_id') counts.problems++
      bar.update(done, counts)
    },
    stop: () => bar.stop(),
  }
}
