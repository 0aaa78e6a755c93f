/**
 * Dispatch step: the typed handler (or onUnknown) under the handler deadline, with `ctx.signal`.
 * At the deadline the answer is 503 at once, but the key stays claimed until the handler's own
 * promise settles: then it is completed (it finished late; the retry gets a duplicate 2xx) or
 * released (it failed; the retry runs it again). So no second run overlaps a first one.
 */
import { WebhookHandlingError } from '../errors.js'
import { isEmailEventType, type WebhookEvent } from '../events.js'
import type { EventOrder } from '../ordering/status.js'
import { SEE_CAUSE } from './answers.js'
import { type Claimed, holdEmailUntilLeaseEnd } from './claim.js'
import { attempt } from './deadline.js'
import type { EventSource } from './facts.js'
import type { Pipeline } from './pipeline.js'
import { completeLate } from './settle.js'
import type { HandlerContext, ReceiverResponse } from './types.js'

/**
 * An AbortController made only when a handler reads `ctx.signal` (most never do, and one costs
 * more than the rest of a small event's dispatch). Aborting before it exists is kept.
 */
class LazyAbort {
  #controller: AbortController | undefined
  #aborted = false
  #reason: unknown

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  abort(reason: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    this.#controller?.abort(reason)
  }
}

/**
 * The handler context: `signal` is a getter on the prototype, so building one is a plain object
 * allocation (an object literal with an accessor takes V8's slow path, ~2 µs per request).
 */
class Context {
  readonly #abort: LazyAbort
  readonly attempt: number
  readonly timestamp: number
  readonly order: EventOrder
  readonly source: EventSource

  constructor(abort: LazyAbort, attempt: number, timestamp: number, order: EventOrder, source: EventSource) {
    this.#abort = abort
    this.attempt = attempt
    this.timestamp = timestamp
    this.order = order
    this.source = source
  }

  get signal(): AbortSignal {
    return this.#abort.signal
  }
}

async function runHandlers<Ctx>(p: Pipeline<Ctx>, event: WebhookEvent, ctx: Ctx): Promise<boolean> {
  if (p.onEvent) await p.onEvent(event, ctx)
  if (isEmailEventType(event.type)) {
    const handler = p.handlers[event.type]
    if (handler) await handler(event, ctx)
    return true
  }
  if (p.onUnknown) await p.onUnknown(event, ctx)
  return false
}

/** Runs the handlers; resolves `true` (known type) / `false` (unknown type), or the failure answer. */
export async function dispatchEvent<Extra>(
  p: Pipeline<HandlerContext & Extra>,
  event: WebhookEvent,
  claimed: Claimed,
  timestamp: number,
  extra: Extra | undefined,
  source: EventSource,
): Promise<boolean | ReceiverResponse> {
  const controller = new LazyAbort()
  const ctx = Object.assign(new Context(controller, claimed.claim.attempt, timestamp, claimed.order, source), extra) as HandlerContext &
    Extra
  const { trace } = claimed
  const running = trace === undefined ? runHandlers(p, event, ctx) : trace.handler(event.type, source, () => runHandlers(p, event, ctx))
  let timeout: WebhookHandlingError | undefined
  try {
    return await p.deadlines.within(running, claimed.startedAt + p.handlerTimeoutMs, () => {
      timeout = new WebhookHandlingError(
        'handler_timeout',
        `The handler for ${event.type} did not finish within handlerTimeoutMs (${p.handlerTimeoutMs} ms); ctx.signal was aborted and the answer is 503. The event stays claimed until the handler returns: recorded as done if it then succeeds, released for the retry if it fails. Make the handler faster or move slow work to a queue.`,
      )
      controller.abort(timeout)
      trace?.timedOut()
      return timeout
    })
  } catch (cause) {
    if (timeout !== undefined && cause === timeout) {
      settleLate(p, claimed, event, running)
      return p.fail(timeout, event)
    }
    controller.abort(cause)
    // A release that throws or hangs (a custom store) must not change the 500; it is logged.
    const releasing = attempt(() => p.store.release(claimed.claim))
    const released = await p.deadlines
      .within(
        trace === undefined ? releasing : trace.store('release', releasing),
        p.storeMayHang ? performance.now() + p.storeTimeoutMs : undefined,
        () => new Error(`store release took longer than ${p.storeTimeoutMs} ms`),
      )
      .then(
        () => true,
        (error: unknown) => {
          p.reporter.storeStepFailed('release', { status: 500, eventId: event.id, type: event.type }, error)
          return false
        },
      )
    const error = new WebhookHandlingError(
      'handler_failed',
      `The handler for ${event.type} threw; ${afterFailure(p, released)}.${SEE_CAUSE}`,
      {
        cause,
      },
    )
    return p.fail(error, event)
  }
}

/** What happens to an event whose handler threw, once it was released (or not): who tries it again, and when. */
function afterFailure<Ctx>(p: Pipeline<Ctx>, released: boolean): string {
  if (p.retriedBy === 'sender') {
    return released
      ? 'the event was released and the sender will retry it'
      : `releasing the event failed too, so the sender's retries are answered 409 in_flight until its lease ends (leaseMs, ${p.leaseMs} ms), then it runs again`
  }
  return released
    ? 'the inbox worker tries it again after a backoff, until inbox.maxAttempts'
    : `releasing the event failed too, so it runs again once its lease ends (inbox.leaseMs, ${p.leaseMs} ms)`
}

/**
 * A handler past its deadline (answered 503) settles when it ends: recorded as done if it then
 * succeeds (through the same path as any complete: the store deadline, then the background
 * recorder), released for the retry if it fails. Its late settle frees the event's email in this
 * process, and at the latest when the claim's lease ends.
 */
function settleLate<Ctx>(p: Pipeline<Ctx>, claimed: Claimed, event: WebhookEvent, running: Promise<unknown>): void {
  const { settle } = claimed
  claimed.settle = undefined
  holdEmailUntilLeaseEnd(p, claimed)
  running.then(
    () => {
      claimed.settle = settle
      return completeLate(p, claimed, event)
    },
    () => {
      const releasing = attempt(() => p.store.release(claimed.claim))
      return p.deadlines
        .within(releasing, p.storeMayHang ? performance.now() + p.storeTimeoutMs : undefined, () => {
          return new Error(`store release took longer than ${p.storeTimeoutMs} ms`)
        })
        .catch((error: unknown) => p.reporter.storeStepFailed('release', { status: 503, eventId: event.id, type: event.type }, error))
        .finally(settle)
    },
  )
}
