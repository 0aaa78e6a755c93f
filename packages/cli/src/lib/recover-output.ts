/**
 * What `endpoint recover` prints: the summary line, the store it consulted, a row per delivery,
 * and what recover cannot bring back (events emitted while the endpoint was disabled, deliveries
 * past the service's 100-record list, expired payloads), with how to reconcile those. Also the
 * exit code of a report.
 */
import { DELIVERIES_LIST_CAP, type RecoveryAbortedError, type RecoveryReport } from '@email-webhooks/core/api'
import { EXIT } from './errors.js'
import { type Output, table } from './output.js'
import type { RecoveryStore } from './recover-store.js'

/**
 * How the events recover cannot reach are brought back: from each email's own event list
 * (`GET /emails/{id}`), with `emails reconcile` (core's `reconcileEmails`). Every message that
 * points there uses this.
 */
export const RECONCILE_HINT =
  "bring them back from each email's own event list with `email-webhooks emails reconcile <receiver-url> --ids <file of email ids>` (reconcileEmails() in @email-webhooks/core/api; key scope emails:read, the receiver needs ordering: true)"

/** Printed after every text report: the contract makes no delivery record for these. */
export const NOT_LISTED_NOTE: string = `Note: events emitted while the endpoint was disabled are not listed (the service makes no delivery record for them), so recover cannot retry them; ${RECONCILE_HINT}.`

/** Printed when some deliveries could not be retried because their payload expired. */
export const EXPIRED_NOTE = (count: number): string =>
  `${count} ${count === 1 ? 'delivery' : 'deliveries'} expired (404 delivery_expired): the service can no longer send ${count === 1 ? 'it' : 'them'}; ${RECONCILE_HINT}.`

/** Printed when the list held the service's maximum. */
export const TRUNCATED_WARNING: string = `warning: the service listed ${DELIVERIES_LIST_CAP} deliveries, its maximum: older ones were not shown and were not retried, and running recover again lists the same ones (a retry requeues the same record). For the events not listed, ${RECONCILE_HINT}.`

const ENABLE_TEXT: Record<RecoveryReport['enable'], string> = {
  already: 'endpoint was enabled',
  reenabled: 'endpoint re-enabled',
  would_reenable: 'would re-enable the endpoint',
  interrupted: 'the re-enable (PATCH) was interrupted: list the endpoint to see whether it is enabled',
}

/** Retried deliveries whose record shows an attempt of the sender's own still to come. */
const ALSO_DUE_NOTE = (count: number, dryRun: boolean): string =>
  `${count} of the deliveries ${dryRun ? 'to retry' : 'retried'} also ${count === 1 ? 'has' : 'have'} an attempt of the sender's own due (attempts below the contract's 10, next_attempt_at ahead): whichever arrives second is answered as a duplicate. Deliveries are retried whatever their state says: the contract does not document its values.`

function rows(report: RecoveryReport): string[][] {
  const verb = report.dryRun ? 'would retry' : 'retried'
  const row = (outcome: string, i: { deliveryId: string; eventId: string; requestId: string | undefined }) => [
    outcome,
    i.deliveryId,
    i.eventId,
    i.requestId ?? '',
  ]
  return [
    ...report.retried.map((i) =>
      row(i.senderNext ? `${verb} (the sender's attempt ${i.senderNext.attempt} of 10 is due ${i.senderNext.at} too)` : verb, i),
    ),
    ...report.alreadyHandled.map((i) => row(`handled (${i.reason})`, i)),
    ...report.expired.map((i) => row('expired', i)),
    ...report.failed.map((i) => row(`failed ${i.status} ${i.code}`, i)),
    ...report.interrupted.map((i) => row('interrupted', i)),
    ...report.notStarted.map((i) => row('not started', i)),
  ]
}

/**
 * The exit code of a finished report: 1 when a retry failed or the list may hide older deliveries.
 * @param report What recoverEndpoint returned.
 * @example
 * state.exitCode = recoveryExitCode(report)
 */
export function recoveryExitCode(report: RecoveryReport): number {
  return report.failed.length > 0 || report.listMayBeTruncated ? EXIT.unexpected : EXIT.ok
}

/**
 * Prints a report (text or `--json`) and the store line; warnings go to stderr.
 * @param out Where to print.
 * @param report What recoverEndpoint returned.
 * @param source The store consulted (or none).
 * @example
 * printRecovery(out, report, source)
 */
export function printRecovery(out: Output, report: RecoveryReport, source: RecoveryStore): void {
  if (out.json) {
    out.data({ ...report, store: source.consulted, notListed: NOT_LISTED_NOTE })
  } else {
    const verb = report.dryRun ? 'would retry' : 'retried'
    out.line(
      `${report.dryRun ? 'Dry run: ' : ''}${ENABLE_TEXT[report.enable]}; ${report.retried.length} ${verb}, ${report.alreadyHandled.length} already handled, ${report.expired.length} expired, ${report.failed.length} failed`,
    )
    const alsoDue = report.retried.filter((i) => i.senderNext !== undefined).length
    if (alsoDue > 0) out.line(ALSO_DUE_NOTE(alsoDue, report.dryRun))
    out.line(`Dedup store ${source.consulted ? 'consulted' : 'not consulted'}: ${source.description}`)
    table(out, ['outcome', 'delivery', 'event', 'request id'], rows(report))
    if (report.expired.length > 0) out.line(EXPIRED_NOTE(report.expired.length))
    out.line(NOT_LISTED_NOTE)
  }
  if (report.listMayBeTruncated) out.error(TRUNCATED_WARNING)
}

/**
 * Prints what an interrupted recovery did (Ctrl-C).
 * @param out Where to print.
 * @param error The abort, with its report (undefined when nothing was changed).
 * @param source The store consulted (or none).
 * @param endpointId The endpoint, for the JSON output when there is no report.
 * @example
 * printAborted(out, error, source, endpointId)
 */
export function printAborted(out: Output, error: RecoveryAbortedError, source: RecoveryStore, endpointId: string): void {
  const report = error.report
  if (out.json) out.data(report ? { ...report, store: source.consulted } : { endpointId, aborted: true, store: source.consulted })
  else if (report) {
    out.line(
      `Interrupted: ${ENABLE_TEXT[report.enable]}; ${report.retried.length} retried, ${report.interrupted.length} interrupted in flight (the service may have requeued them), ${report.notStarted.length} not started`,
    )
    table(out, ['outcome', 'delivery', 'event', 'request id'], rows(report))
  } else out.line('Interrupted before anything was changed.')
  out.error('email-webhooks: interrupted; run recover again to finish (deliveries already delivered or handled are skipped).')
}
