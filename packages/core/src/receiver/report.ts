/**
 * Where failures are seen: `onError` when given, else one log line per 5xx-class failure
 * (code, event type and id, the cause's message; never the secret, the signature or the body),
 * and counters for everything, readable with `stats()`. Refusals are only counted, except the
 * first `signature_mismatch`, which gets one warning: a wrong secret refuses every delivery, and a
 * silent server would leave its owner guessing until the sender disables the endpoint.
 */
import { PACKAGE, type WebhookHandlingError, type WebhookVerificationError } from '../errors.js'
import type { DeliveryOutcome } from '../telemetry/names.js'
import type { ErrorInfo, ReceiverStats, WebhookLogger } from './types.js'

type ReceiverError = WebhookVerificationError | WebhookHandlingError

/** The counters and the reporting of one receiver. */
export class Reporter {
  handled = 0
  acknowledged = 0
  duplicates = 0
  ignored = 0
  skipped = 0
  queued = 0
  dead = 0
  /** Every delivery by outcome (the names of the `email_webhooks.deliveries` metric). */
  readonly #deliveries: Partial<Record<DeliveryOutcome, number>> = {}
  readonly #rejected: Record<string, number> = {}
  readonly #failed: Record<string, number> = {}
  readonly #onError: ((error: ReceiverError, info: ErrorInfo) => void) | undefined
  readonly #logger: WebhookLogger | undefined
  #warnedMismatch = false
  #warnedSkew = false
  /** Deliveries that passed the signature check, and those refused for it (for the mixed warning). */
  #verified = 0
  #mismatches = 0
  /** When the last warning of some deliveries verifying and others not was written (ms), or never. */
  #mixedAt = Number.NEGATIVE_INFINITY
  #rawBodyAt = Number.NEGATIVE_INFINITY
  /** An ordered claim came back without a mark, and no later one with a mark yet. */
  #marksMissing = false

  constructor(onError: ((error: ReceiverError, info: ErrorInfo) => void) | undefined, logger: WebhookLogger | undefined) {
    this.#onError = onError
    this.#logger = logger
  }

  /** Counts and reports a refusal, a failure, or an acknowledged invalid envelope (`info.status` 200). */
  report(error: ReceiverError, info: ErrorInfo): void {
    if (info.status < 300) this.ignored++
    else if (info.status < 409 || info.status === 413) this.#rejected[error.code] = (this.#rejected[error.code] ?? 0) + 1
    else this.#failed[error.code] = (this.#failed[error.code] ?? 0) + 1
    if (this.#onError) {
      try {
        this.#onError(error, info)
      } catch {
        // onError only observes; a failure inside it must not change the answer.
      }
      return
    }
    if (!this.#logger) return
    if (error.code === 'raw_body_unavailable') this.#rawBodyGone(error, info)
    else if (info.status >= 500 || error.code === 'lease_lost') this.#logger.error(logLine(error, info))
    else if (info.status < 300) this.#logger.warn(logLine(error, info))
    else if (error.code === 'signature_mismatch') this.#mismatch(error, info)
    else if ((error as { skewSeconds?: number }).skewSeconds !== undefined && !this.#warnedSkew) {
      this.#warnedSkew = true
      this.#logger.warn(`${logLine(error, info)} ${skewAdvice(error)}`)
    }
  }

  /** Counts a delivery's outcome. */
  delivered(outcome: DeliveryOutcome): void {
    this.#deliveries[outcome] = (this.#deliveries[outcome] ?? 0) + 1
  }

  /** A delivery passed the signature check (counted for the warning of some verifying and others not). */
  verified(): void {
    this.#verified++
    if (this.#mismatches !== 0 && this.#verified === 1) this.#warnMixed()
  }

  #mismatch(error: ReceiverError, info: ErrorInfo): void {
    this.#mismatches++
    if (this.#verified !== 0) this.#warnMixed()
    else if (!this.#warnedMismatch) {
      this.#warnedMismatch = true
      this.#logger?.warn(`${logLine(error, info)} ${FIRST_MISMATCH}`)
    }
  }

  /**
   * A body parser took the body before the route (a set-up mistake, the same for every request):
   * said at most once every MIXED_EVERY_MS, so that unsigned requests cannot flood the log.
   */
  #rawBodyGone(error: ReceiverError, info: ErrorInfo): void {
    const now = Date.now()
    if (now - this.#rawBodyAt < MIXED_EVERY_MS) return
    this.#rawBodyAt = now
    this.#logger?.error(
      `${logLine(error, info)} (Said at most every ${MIXED_EVERY_MS / 60_000} minutes; all are counted in stats().failed.)`,
    )
  }

  /** Some deliveries verify and others do not: at most once every MIXED_EVERY_MS. */
  #warnMixed(): void {
    const now = Date.now()
    if (now - this.#mixedAt < MIXED_EVERY_MS) return
    this.#mixedAt = now
    this.#warnedMismatch = true
    const total = this.#mismatches + this.#verified
    this.#logger?.warn(
      `${PACKAGE} 401 signature_mismatch: ${this.#mismatches} of ${total} deliveries since this receiver started failed the signature check while the others passed it, so the secret is right and some bodies are changed on their way: a proxy or a body parser that re-encodes JSON (\\u escapes, key order, white space, a trailing newline) is the likely cause. Capture a refused request and run \`email-webhooks verify\` on it: it names the re-encoding that matches. (Said at most every ${MIXED_EVERY_MS / 60_000} minutes; all refusals are counted in stats().rejected.)`,
    )
  }

  /**
   * A store step whose failure does not change the answer (the late complete or release of a
   * handler past its deadline, or the release after a handler threw): only logged, not counted
   * (the answer is), since the key then stays claimed until its lease ends.
   */
  storeStepFailed(step: 'complete' | 'release', info: ErrorInfo, cause: unknown): void {
    if (!this.#logger) return
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : cause === false ? 'the lease had already ended' : String(cause)
    const next =
      step === 'complete' && cause !== false
        ? 'the handler succeeded, and the receiver keeps trying to record it in the background; retries get 409 in_flight until it lands, then a duplicate 200'
        : 'the event stays claimed until its lease ends (leaseMs), and retries get 409 in_flight until then'
    this.#logger.error(
      `${PACKAGE} ${info.status} ${step} failed${info.type !== undefined ? ` ${info.type}` : ''}${info.eventId !== undefined ? ` ${info.eventId}` : ''}: ${next}. cause: ${why}`,
    )
  }

  /**
   * Whether an ordered claim came back with a mark: a store that stops keeping marks (its mark
   * tables gone) is said once, with its `orderingIssue`; its return is said once too.
   */
  marksKept(kept: boolean, store: { orderingIssue?: string | undefined }): void {
    if (kept === !this.#marksMissing) return
    this.#marksMissing = !kept
    if (!kept) {
      this.#logger?.warn(
        `${PACKAGE} ordering: true, but the store answered a claim without an order mark, so ctx.order is unknown (store_without_ordering) and skipStale skips nothing until it keeps marks again.${store.orderingIssue ? ` ${store.orderingIssue}` : ''}`,
      )
    } else this.#logger?.warn(`${PACKAGE} the store keeps order marks again: ctx.order and skipStale work as configured.`)
  }

  /** A complete tried again in the background landed: the event is recorded, its retries are duplicates. */
  recordedLate(info: ErrorInfo, tries: number): void {
    this.#logger?.warn(
      `${PACKAGE} recorded${about(info)} as done after ${tries} more ${tries === 1 ? 'try' : 'tries'}: the store is back, and the sender's retries of it are answered as duplicates (its handler is not run again).`,
    )
  }

  /** A queued job that can never be processed (`createInboxProcessor`): said every time, with what to fix. */
  unprocessable(error: Error & { code: string }): void {
    const message = error.message.startsWith(`${PACKAGE} `) ? error.message.slice(PACKAGE.length + 1) : error.message
    this.#logger?.error(`${PACKAGE} ${error.code}: ${message}`)
  }

  /** The store refused a complete tried again: the lease had ended and another request took the event over. */
  recordRefused(info: ErrorInfo): void {
    this.#logger?.error(
      `${PACKAGE} could not record${about(info)} as done: its handler succeeded, but the dedup store was down until its lease (leaseMs) ended and another request (another instance, or this one after a restart) took it over, so its handler may run a second time. Keep handlers idempotent by event.id.`,
    )
  }

  /** The receiver stopped trying to complete an event (the store stayed down too long, or too many were pending). */
  recordAbandoned(info: ErrorInfo, afterSeconds: number): void {
    this.#logger?.error(
      `${PACKAGE} gave up recording${about(info)} as done after ${afterSeconds} s: its handler succeeded, but the dedup store stayed down; a retry of it once the store is back runs the handler again.`,
    )
  }

  /**
   * The inbox worker gave an entry up: counted, and the first one of this receiver is said (later
   * ones are counted only: stats().dead, `email-webhooks inbox list --state dead`). `saidElsewhere`:
   * an `onDeadLetter` observer says every one, so no line is written.
   */
  deadLetter(info: ErrorInfo, attempts: number, lastError: string, saidElsewhere = false): void {
    this.dead++
    if (this.dead > 1 || saidElsewhere) return
    this.#logger?.error(
      `${PACKAGE} dead letter${about(info)}: its handler failed ${attempts} times (last: ${lastError}), so the inbox keeps it as dead and stops retrying it. Fix the cause, then \`email-webhooks inbox retry --dead\` (or store.inbox.retry('dead') in code); later dead letters are only counted (stats().dead).`,
    )
  }

  /** The inbox worker could not take from the store: said once, until a take works again. */
  inboxPaused(cause: unknown): void {
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)
    this.#logger?.error(
      `${PACKAGE} inbox worker: the store failed to hand out an entry, so the worker pauses and tries again (inbox.pollMs); queued events wait in the inbox, nothing is lost. cause: ${why}`,
    )
  }

  /** The inbox worker takes entries again after a store failure. */
  inboxResumed(): void {
    this.#logger?.warn(`${PACKAGE} inbox worker: the store answers again; the worker goes on with the queued events.`)
  }

  stats(): ReceiverStats {
    return {
      handled: this.handled,
      acknowledged: this.acknowledged,
      duplicates: this.duplicates,
      ignored: this.ignored,
      skipped: this.skipped,
      queued: this.queued,
      dead: this.dead,
      rejected: { ...this.#rejected },
      failed: { ...this.#failed },
      deliveries: { ...this.#deliveries },
    }
  }
}

const FIRST_MISMATCH =
  'This is the first delivery this receiver refused for its signature; later ones are only counted (stats().rejected). If every delivery is refused, the secret is likely wrong (the sender disables an endpoint after repeated failures); if only some are, a proxy or body parser changes some bodies, and this receiver says so once it has seen both.'
/** The warning of some deliveries verifying and others not comes at most this often. */
const MIXED_EVERY_MS = 10 * 60 * 1000

/** What the first refusal for the timestamp says about this server's clock, with the measured offset. */
function skewAdvice(error: ReceiverError): string {
  const skew = (error as { skewSeconds?: number }).skewSeconds ?? 0
  const offset = `The delivery's timestamp was ${Math.abs(skew)} s ${skew > 0 ? "behind this server's clock (this clock may be fast)" : "ahead of this server's clock (this clock may be slow)"}. `
  return `${offset}If this server's clock is off, every delivery is refused and the sender disables the endpoint: check NTP (timedatectl, chronyc tracking). Said once; later refusals are only counted (stats().rejected).`
}

/** ` <type> <id>` of an event, as far as they are known. */
function about(info: ErrorInfo): string {
  return `${info.type !== undefined ? ` ${info.type}` : ''}${info.eventId !== undefined ? ` ${info.eventId}` : ' an event'}`
}

/** One line: status, code, event type and id, what happened, and the cause's message. */
function logLine(error: ReceiverError, info: ErrorInfo): string {
  const about = info.type !== undefined ? ` ${info.type}` : ''
  const id = info.eventId !== undefined ? ` ${info.eventId}` : ''
  const cause = (error as { cause?: unknown }).cause
  const why =
    cause instanceof Error
      ? ` cause: ${cause.name}: ${cause.message}${origin(cause)}`
      : cause !== undefined
        ? ` cause: ${String(cause)}`
        : ''
  const acknowledged = info.status < 300 ? ' Acknowledged and recorded as done; no handler ran.' : ''
  return `${PACKAGE} ${info.status} ${error.code}${about}${id}: ${error.message}${acknowledged}${why}`
}

/** Where an error was thrown: ` (at <first stack frame>)`, or nothing when its stack has no frame. */
function origin(error: Error): string {
  const frame = typeof error.stack === 'string' ? /\n\s+at (\S.*)/.exec(error.stack)?.[1] : undefined
  return frame === undefined ? '' : ` (at ${frame})`
}
