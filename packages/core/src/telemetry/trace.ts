/**
 * One delivery's (or one inbox entry's) trace: the root span, its child spans for verify, the
 * store steps and the handler, and the metrics they feed. Built by `Telemetry` only when
 * telemetry is on; every method is cheap when no SDK records (the spans are then the API's
 * non-recording ones, and child spans are skipped).
 */

import type { Instruments } from './instruments.js'
import { ATTR, type DeliveryOutcome, SPAN_HANDLER, SPAN_VERIFY, type StoreStep, spanOfStep } from './names.js'
import { type Attributes, type OtelApi, type OtelContext, type OtelSpan, type OtelTracer, SPAN_KIND, STATUS_ERROR } from './otel.js'

/** What the trace needs of an answer (a `ReceiverResponse`). */
export interface TracedAnswer {
  status: number
  outcome: string
  code?: string
  event?: { id: string; type: string }
}

/** The outcome name of an answer, as metrics, spans and `stats().deliveries` use it. */
export function outcomeOf(answer: TracedAnswer): DeliveryOutcome {
  switch (answer.outcome) {
    case 'unknown_type':
      return 'ignored'
    case 'retry':
      return answer.code === 'in_flight' ? 'in_flight' : 'failed'
    case 'handled':
    case 'queued':
    case 'duplicate':
    case 'skipped':
    case 'ignored':
    case 'rejected':
      return answer.outcome
    default:
      return 'failed'
  }
}

/** The reason of an answer: its error code, or `unknown_type` for an acknowledged type this version does not know. */
export function reasonOf(answer: TracedAnswer): string | undefined {
  return answer.code ?? (answer.outcome === 'unknown_type' ? 'unknown_type' : undefined)
}

function errorName(error: unknown): string {
  if (error instanceof Error)
    return (error as { code?: unknown }).code === undefined ? error.name : String((error as { code?: unknown }).code)
  return typeof error
}

/** The root span of a delivery, when an SDK traces: the span, and the context its children and the handler run in. */
export interface RootSpan {
  span: OtelSpan
  context: OtelContext
}

/**
 * The trace of one delivery or inbox entry: its spans when an SDK traces (`root`), its metrics when
 * an SDK meters (`instruments`); at least one of them is there, or there is no trace at all.
 */
export class DeliveryTrace {
  readonly #api: OtelApi
  readonly #tracer: OtelTracer
  readonly #instruments: Instruments | undefined
  readonly #root: RootSpan | undefined
  /** Whether the root span records: child spans are made only then. */
  readonly #recording: boolean
  readonly #store: string
  #timedOut = false
  #ended = false

  constructor(api: OtelApi, tracer: OtelTracer, instruments: Instruments | undefined, root: RootSpan | undefined, store: string) {
    this.#api = api
    this.#tracer = tracer
    this.#instruments = instruments
    this.#root = root
    this.#recording = root?.span.isRecording() === true
    this.#store = store
  }

  #child(name: string, attributes?: Attributes): OtelSpan | undefined {
    if (!this.#recording) return undefined
    return this.#tracer.startSpan(name, { kind: SPAN_KIND.INTERNAL, attributes }, (this.#root as RootSpan).context)
  }

  /** Times the signature check: call the returned function when it is over (with its error, if any). */
  verify(): ((error?: unknown) => void) | undefined {
    const span = this.#child(SPAN_VERIFY)
    if (span === undefined) return undefined
    return (error) => {
      if (error !== undefined) span.setAttribute(ATTR.errorType, errorName(error))
      span.end()
    }
  }

  /** Times a store step until `pending` settles (its span, and `email_webhooks.store.duration`); returns `pending`. */
  store<T>(step: StoreStep, pending: Promise<T>): Promise<T> {
    const span = this.#child(spanOfStep(step), { [ATTR.store]: this.#store })
    const instruments = this.#instruments
    if (span === undefined && instruments === undefined) return pending
    const started = performance.now()
    const done = (error?: unknown) => {
      if (instruments !== undefined) {
        const attributes: Attributes = { [ATTR.step]: step, [ATTR.store]: this.#store }
        if (error !== undefined) attributes[ATTR.errorType] = errorName(error)
        instruments.storeDuration.record((performance.now() - started) / 1000, attributes)
      }
      if (span === undefined) return
      if (error !== undefined) {
        span.setAttribute(ATTR.errorType, errorName(error))
        span.setStatus({ code: STATUS_ERROR, message: errorName(error) })
      }
      span.end()
    }
    pending.then(
      () => done(),
      (error: unknown) => done(error),
    )
    return pending
  }

  /**
   * Runs the handlers inside the handler span's context (the user's own spans nest under it),
   * counting them in `email_webhooks.handlers.active` and timing them in `email_webhooks.handler.duration`.
   */
  handler<T>(type: string, source: string, run: () => Promise<T>): Promise<T> {
    const span = this.#child(SPAN_HANDLER, { [ATTR.eventType]: type, [ATTR.source]: source })
    const instruments = this.#instruments
    const started = performance.now()
    instruments?.handlersActive.add(1)
    const finish = (error?: unknown) => {
      const result = error === undefined ? (this.#timedOut ? 'late' : 'ok') : this.#timedOut ? 'timeout' : 'error'
      if (instruments !== undefined) {
        instruments.handlersActive.add(-1)
        instruments.handlerDuration.record((performance.now() - started) / 1000, { [ATTR.eventType]: type, [ATTR.handlerResult]: result })
      }
      if (span === undefined) return
      span.setAttribute(ATTR.handlerResult, result)
      if (error !== undefined) {
        span.recordException(error instanceof Error ? error : String(error))
        span.setStatus({ code: STATUS_ERROR, message: errorName(error) })
      }
      span.end()
    }
    let running: Promise<T>
    try {
      // A root span that does not record still carries the sampling decision to the app's own spans.
      const context = span !== undefined ? this.#api.trace.setSpan((this.#root as RootSpan).context, span) : this.#root?.context
      running = context === undefined ? run() : this.#api.context.with(context, run)
    } catch (error) {
      finish(error)
      throw error
    }
    running.then(
      () => finish(),
      (error: unknown) => finish(error),
    )
    return running
  }

  /** The handler deadline passed before the handler finished. */
  timedOut(): void {
    this.#timedOut = true
  }

  /** What the claim told: the attempt and `ctx.order.status`. */
  claimed(attempt: number, orderStatus: string): void {
    if (!this.#recording) return
    const { span } = this.#root as RootSpan
    span.setAttribute(ATTR.attempt, attempt)
    span.setAttribute(ATTR.orderStatus, orderStatus)
  }

  /** Ends the root span with the answer. */
  end(answer: TracedAnswer, outcome: DeliveryOutcome, reason: string | undefined): void {
    if (this.#ended) return
    this.#ended = true
    if (this.#root === undefined) return
    const { span } = this.#root
    if (this.#recording) {
      span.setAttribute(ATTR.outcome, outcome)
      span.setAttribute(ATTR.httpStatus, answer.status)
      if (reason !== undefined) span.setAttribute(ATTR.reason, reason)
      setEvent(span, answer.event)
      if (answer.status >= 500) {
        span.setAttribute(ATTR.errorType, answer.code ?? String(answer.status))
        span.setStatus({ code: STATUS_ERROR, message: answer.code })
      }
    }
    span.end()
  }

  /** Ends an inbox entry's span with what the worker did, and counts it. */
  endEntry(result: string, answer: TracedAnswer | undefined): void {
    if (this.#ended) return
    this.#ended = true
    this.#instruments?.inboxProcessed.add(1, { [ATTR.outcome]: result })
    if (this.#root === undefined) return
    const { span } = this.#root
    if (this.#recording) {
      span.setAttribute(ATTR.outcome, result)
      if (answer?.code !== undefined) span.setAttribute(ATTR.reason, answer.code)
      setEvent(span, answer?.event)
      if (result === 'retry' || result === 'dead') span.setStatus({ code: STATUS_ERROR, message: answer?.code ?? result })
    }
    span.end()
  }
}

/** The verified event's type and id on a span (never before verification: the answer has no event then). */
function setEvent(span: OtelSpan, event: { id: string; type: string } | undefined): void {
  if (event === undefined) return
  span.setAttribute(ATTR.eventType, event.type)
  span.setAttribute(ATTR.eventId, event.id)
  span.setAttribute(ATTR.messagingId, event.id)
}
