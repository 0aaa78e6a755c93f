/**
 * Where failures are seen: `onError` when given, else one log line per 5xx-class failure
 * (code, event type and id, the cause's message; never the secret, the signature or the body),
 * and counters for everything, readable with `stats()`. Refusals are only counted, except the
 * first `signature_mismatch`, which gets one warning: a wrong secret refuses every delivery, and a
 * silent server would leave its owner guessing until the sender disables the endpoint. The inbox
 * worker's failed attempts are said as attempts (`inbox attempt 2/3 failed … next try in 4 s`), not
 * as answers, and every dead letter is said: in full at most once a minute per event type, the
 * others folded into a count said at the end of that minute (or when the worker stops).
 */
import { PACKAGE, type WebhookHandlingError, type WebhookVerificationError } from '../errors.js'
import type { DeliveryOutcome } from '../telemetry/names.js'
import { unref } from '../timers.js'
import type { ErrorInfo, ReceiverStats, WebhookLogger } from './types.js'

type ReceiverError = WebhookVerificationError | WebhookHandlingError

/** Who tries a failed event again: the sender (an answer went back), or the inbox worker (the sender had its 200). */
export type RetriedBy = 'sender' | 'inbox worker'

/** Dead letters of one type since its last full line: how many were folded, and the last of them. */
interface FoldedDeadLetters {
  /** When the last full line of this type was written (ms). */
  at: number
  count: number
  last: { eventId: string | undefined; attempts: number; error: string } | undefined
  timer: ReturnType<typeof setTimeout> | undefined
}

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
  /** Dead letters by event type, for the rate limit of their lines. */
  readonly #deadByType = new Map<string, FoldedDeadLetters>()

  constructor(onError: ((error: ReceiverError, info: ErrorInfo) => void) | undefined, logger: WebhookLogger | undefined) {
    this.#onError = onError
    this.#logger = logger
  }

  /**
   * Counts and reports a refusal, a failure, or an acknowledged invalid envelope (`info.status` 200).
   * `retriedBy: 'inbox worker'`: a handler's failure is not logged as an answer here; the worker says it as an attempt ({@link inboxAttemptFailed}).
   */
  report(error: ReceiverError, info: ErrorInfo, retriedBy: RetriedBy = 'sender'): void {
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
    if (retriedBy === 'inbox worker' && (error.code === 'handler_failed' || error.code === 'handler_timeout')) return
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
      `${PACKAGE} 401 signature_mismatch: ${this.#mismatches} of ${total} deliveries since this receiver started failed the signature check while the others passed it, so the secret is right for most of them: either some bodies are changed on their way (a proxy or a body parser that re-encodes JSON: \\u escapes, key order, white space, a trailing newline) or some deliveries are signed with another secret (a second endpoint or sender pointing at this URL, a secret rotated on one side only). Capture a refused request and run \`email-webhooks verify\` on it: it names the re-encoding that matches, and none matching means another secret. (Said at most every ${MIXED_EVERY_MS / 60_000} minutes; all refusals are counted in stats().rejected.)`,
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
  recordRefused(info: ErrorInfo, tried: { tries: number; seconds: number; lastFailure: string | undefined }): void {
    const failure = tried.lastFailure === undefined ? '' : `; the last try that failed: ${tried.lastFailure}`
    this.#logger?.error(
      `${PACKAGE} could not record${about(info)} as done: its handler succeeded, but the dedup store was down until its lease (leaseMs) ended and another request (another instance, or this one after a restart) took it over, so its handler may run a second time. Keep handlers idempotent by event.id. (${tried.tries} more ${tried.tries === 1 ? 'try' : 'tries'} over ${tried.seconds} s${failure}.)`,
    )
  }

  /** The receiver stopped trying to complete an event (the store stayed down too long, or too many were pending). */
  recordAbandoned(info: ErrorInfo, afterSeconds: number, lastFailure?: string): void {
    this.#logger?.error(
      `${PACKAGE} gave up recording${about(info)} as done after ${afterSeconds} s: its handler succeeded, but the dedup store stayed down; a retry of it once the store is back runs the handler again.${lastFailure === undefined ? '' : ` The last try that failed: ${lastFailure}.`}`,
    )
  }

  /**
   * An inbox attempt failed and the entry waits for its next one: said as the worker's attempt (the
   * sender got its 200 when the event was queued, so nobody else retries it). Not said when
   * `onError` is given: it saw the failure.
   */
  inboxAttemptFailed(info: ErrorInfo, attempt: { number: number; of: number; retryInMs: number }, cause: unknown): void {
    if (this.#onError || !this.#logger) return
    this.#logger.error(
      `${PACKAGE} inbox attempt ${attempt.number}/${attempt.of} failed for${about(info)}: ${causeText(cause)}; next try in ${waitText(attempt.retryInMs)} (inbox.retryBaseMs doubling, until inbox.maxAttempts). The sender had its 200 when the event was queued: only the inbox worker tries it again.`,
    )
  }

  /**
   * The inbox worker gave an entry up: counted, and said. The first dead letter of a type is said in
   * full, with the \`inbox retry\` command; the next ones of that type within a minute are folded and
   * said as a count once the minute is over (or when {@link flushDeadLetters} is called), so a burst
   * cannot flood the log and none goes unsaid. `saidElsewhere`: an `onDeadLetter` observer says every
   * one, so no line is written.
   */
  deadLetter(info: ErrorInfo, attempts: number, lastError: string, saidElsewhere = false): void {
    this.dead++
    if (saidElsewhere || !this.#logger) return
    const type = info.type ?? '(no type)'
    const now = Date.now()
    const folded = this.#deadByType.get(type)
    if (folded !== undefined && now - folded.at < DEAD_LETTER_EVERY_MS) {
      folded.count++
      folded.last = { eventId: info.eventId, attempts, error: lastError }
      folded.timer ??= unref(setTimeout(() => this.#sayFolded(type), folded.at + DEAD_LETTER_EVERY_MS - now))
      return
    }
    this.#deadByType.set(type, { at: now, count: 0, last: undefined, timer: undefined })
    const retry = info.eventId === undefined ? 'email-webhooks inbox retry --dead' : `email-webhooks inbox retry ${info.eventId}`
    this.#logger.error(
      `${PACKAGE} dead letter${about(info)}: its handler failed ${attempts} times (last: ${lastError}), so the inbox keeps it as dead and stops retrying it. Fix the cause, then \`${retry}\` (or \`email-webhooks inbox retry --dead\` for every dead entry; store.inbox.retry() in code). More dead letters of ${type} within a minute are counted, and said together at its end (stats().dead counts them all).`,
    )
  }

  /** Says now the dead letters folded so far (the worker stops: a count waiting for its minute would be lost). */
  flushDeadLetters(): void {
    for (const type of this.#deadByType.keys()) this.#sayFolded(type)
  }

  #sayFolded(type: string): void {
    const folded = this.#deadByType.get(type)
    if (folded === undefined) return
    clearTimeout(folded.timer)
    folded.timer = undefined
    if (folded.count === 0 || folded.last === undefined) return
    const { count, last } = folded
    folded.count = 0
    folded.last = undefined
    // The next dead letter of this type is said in full again.
    folded.at = Number.NEGATIVE_INFINITY
    this.#logger?.error(
      `${PACKAGE} ${count} more dead ${count === 1 ? 'letter' : 'letters'} of ${type} since the last line (the last: ${last.eventId ?? 'an event'}, its handler failed ${last.attempts} times, last: ${last.error}). \`email-webhooks inbox list --state dead\` lists them; once the cause is fixed, \`email-webhooks inbox retry --dead\` retries them all.`,
    )
  }

  /**
   * Says once, when an inbox-mode receiver is built (through `logger.info`, when the logger has it),
   * that it answers once an event is recorded and who runs the handlers: its worker in this process,
   * a worker elsewhere (`inbox.worker: false`), or the consumers of the user's queue (`inbox.sink`).
   */
  inboxMode(how: {
    store: string
    sink: boolean
    worker: boolean
    concurrency: number
    maxAttempts: number
    inRequest: readonly string[]
  }): void {
    const where = how.sink ? 'handed to your queue (inbox.sink) and accepted there' : `recorded in the store's inbox (${how.store})`
    const who = how.sink
      ? "your queue's consumers run the handlers (createInboxProcessor)"
      : how.worker
        ? `the inbox worker runs the handlers in this process, after the answer (${how.concurrency} at a time, up to ${how.maxAttempts} attempts each; \`email-webhooks inbox stats\` shows the queue)`
        : 'the inbox worker does not run in this process (inbox.worker: false): run `email-webhooks inbox work` (or createInboxWorker) beside it, or the events wait in the inbox'
    const inRequest = how.inRequest.length > 0 ? ` ${how.inRequest.join(', ')} still run in the request (inbox.inRequest).` : ''
    this.#logger?.info?.(`${PACKAGE} inbox mode: each delivery is answered 200 once the event is ${where}; ${who}.${inRequest}`)
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
/** A dead letter is said in full at most this often per event type; the others in between are counted and said at its end. */
const DEAD_LETTER_EVERY_MS = 60 * 1000

/** A wait as people read it: `850 ms`, `4 s`, `2 min 5 s`. */
function waitText(ms: number): string {
  if (ms < 1000) return `${ms} ms`
  const seconds = Math.round(ms / 1000)
  if (seconds < 60) return `${seconds} s`
  const minutes = Math.floor(seconds / 60)
  return seconds % 60 === 0 ? `${minutes} min` : `${minutes} min ${seconds % 60} s`
}

/** A failure's cause in one line: `Error: CRM is down (at <first frame>)`, or its text. */
function causeText(cause: unknown): string {
  if (cause instanceof Error) return `${cause.name}: ${cause.message}${origin(cause)}`
  return String(cause)
}

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
