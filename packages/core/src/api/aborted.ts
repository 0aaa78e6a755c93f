/**
 * The errors of an aborted run: `RecoveryAbortedError` (`recoverEndpoint`) and
 * `ReconcileAbortedError` (`reconcileEmails`), each with the report of what was done.
 */
import { PREFIX } from './errors.js'
import type { ReconcileReport } from './reconcile-types.js'
import type { RecoveryReport } from './recover-report.js'

/**
 * `recoverEndpoint` was aborted (its `signal`): no request started after the abort. `report` says
 * what was done until then (`undefined` when the abort came while the endpoints were being listed,
 * before anything changed); running the recovery again finishes it, skipping what was delivered.
 *
 * @example
 * try { await recoverEndpoint({ client, endpointId, signal }) }
 * catch (error) { if (error instanceof RecoveryAbortedError) console.log(error.report?.retried.length ?? 0, 'requeued before the abort') }
 */
export class RecoveryAbortedError extends Error {
  override readonly name = 'RecoveryAbortedError'
  readonly code = 'recovery_aborted' as const
  /** What was done before the abort; undefined when nothing had been changed or listed. */
  readonly report: RecoveryReport | undefined

  constructor(report: RecoveryReport | undefined, reason: unknown) {
    const done = report
      ? `${report.enable === 'reenabled' ? 'the endpoint was re-enabled, ' : report.enable === 'interrupted' ? 'the PATCH that re-enables the endpoint was interrupted (list the endpoint to see whether it took effect), ' : ''}${report.retried.length} deliveries requeued, ${report.notStarted.length} not started, ${report.interrupted.length} interrupted in flight (the service may have requeued those)`
      : 'nothing was changed'
    super(
      `${PREFIX} the recovery of endpoint ${report?.endpointId ?? '(not found yet)'} was aborted: ${done}. Run it again to finish; deliveries already delivered or handled are skipped.`,
      { cause: reason },
    )
    this.report = report
  }
}

/**
 * `reconcileEmails` was aborted (its `signal`): no email or event started after the abort. `report`
 * says what was done until then; running reconcile again finishes it (what the receiver handled is
 * answered as a duplicate).
 *
 * @example
 * try { await reconcileEmails({ client, emailIds, receiverUrl, secret, signal }) }
 * catch (error) { if (error instanceof ReconcileAbortedError) console.log(error.report.totals.events.handled, 'handled before the abort') }
 */
export class ReconcileAbortedError extends Error {
  override readonly name = 'ReconcileAbortedError'
  readonly code = 'reconcile_aborted' as const
  /** What was done before the abort. */
  readonly report: ReconcileReport

  constructor(report: ReconcileReport, reason: unknown) {
    const { emails, events } = report.totals
    const started = report.emails.length - emails.not_started
    super(
      `${PREFIX} reconcile was aborted: ${started} of ${report.emails.length} emails started, ${events.handled} events handled, ${events.duplicate} already handled, ${events.not_sent} not sent. Run it again to finish; what the receiver already handled is answered as a duplicate.`,
      { cause: reason },
    )
    this.report = report
  }
}
